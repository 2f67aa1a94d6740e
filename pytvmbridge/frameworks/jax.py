"""JAX: arrays are immutable, so they are inputs only. Outputs are allocated by pytvmbridge,
written by the kernel, then handed to JAX with ``jax.dlpack.from_dlpack`` (no copy: the JAX
array's buffer is the pytvmbridge allocation, kept alive by JAX).

Example:
    >>> import jax.numpy as jnp
    >>> from pytvmbridge.frameworks import get
    >>> fw = get("jax")
    >>> fw.dtype(jnp.zeros(3, "float32")), fw.immutable
    ('float32', True)
"""

from __future__ import annotations

from typing import Any

import jax
import jax.dlpack

from ._base import Framework


class JaxFramework(Framework):
    """jax.Array: read through ``__dlpack__``; never written."""

    name = "jax"
    immutable = True
    checks_outputs = True

    def dtype(self, x: Any) -> str:
        return x.dtype.name

    def shape(self, x: Any) -> tuple[int, ...]:
        return tuple(x.shape)

    def as_input(self, x: Any, what: str) -> Any:
        return x

    def wrap(self, buffer: Any) -> Any:
        return jax.dlpack.from_dlpack(buffer)

    def diagnose(self, x: Any, what: str) -> str | None:
        if not isinstance(x, jax.Array):
            return None
        platforms = {d.platform for d in x.devices()}
        if platforms != {"cpu"}:
            return (
                f"{what} is a JAX array on {', '.join(sorted(platforms))}; pytvmbridge kernels run "
                "on the CPU: move it with jax.device_put(x, jax.devices('cpu')[0])"
            )
        return None


FRAMEWORK = JaxFramework()
