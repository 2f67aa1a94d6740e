"""JAX: arrays are immutable, so they are inputs only (the C++ call path reads them through the
buffer protocol where it serves them, else ``__dlpack__``). Outputs are allocated by pytvmbridge,
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
import numpy as np

from ._base import Framework

_KDLCPU = 1
_fast: Any = False


def _fast_import() -> Any:
    """(convert, is_canonical, cpu_device) for JAX's own DLPack import, or None.

    ``jax.dlpack.from_dlpack`` spends about 50 of its 57 µs on Python-level work (stream
    lookup, ``jnp.asarray`` re-canonicalising the dtype) that a CPU buffer of a canonical dtype
    does not need; the C++ function under it takes 7 µs. Used when this JAX has it (checked
    once), else the public function is used.
    """
    global _fast
    if _fast is False:
        try:
            from jax._src import dtypes, xla_bridge
            from jax._src.lib import _jax, jaxlib_extension_version

            if jaxlib_extension_version < 467:
                raise ImportError("an older dlpack_managed_tensor_to_buffer")
            device = xla_bridge.get_backend("cpu").device_from_local_hardware_id(0)
            convert = _jax.dlpack_managed_tensor_to_buffer

            def is_canonical(dtype: str) -> bool:
                want = np.dtype(dtype) if dtype != "bfloat16" else dtypes.bfloat16
                return dtypes.canonicalize_dtype(want) == want

            _fast = (convert, is_canonical, device)
        except Exception:  # any other JAX: the public function
            _fast = None
    return _fast


class JaxFramework(Framework):
    """jax.Array: read through ``__dlpack__``; never written."""

    name = "jax"
    immutable = True

    def dtype(self, x: Any) -> str:
        return x.dtype.name

    def shape(self, x: Any) -> tuple[int, ...]:
        return tuple(x.shape)

    def as_input(self, x: Any, what: str) -> Any:
        # A read-only NumPy view through the buffer protocol: a CPU array's own memory, three
        # times cheaper than JAX's __dlpack__ (about 2 µs against 6). Arrays the protocol does
        # not serve (bfloat16, other devices) go through __dlpack__.
        try:
            return np.asarray(memoryview(x))
        except (BufferError, TypeError, ValueError):
            return x

    def wrap(self, buffer: Any) -> Any:
        fast = _fast_import()
        if fast is not None and fast[1](buffer.dtype):
            return fast[0](buffer.__dlpack__(), fast[2], None, None, _KDLCPU)
        _warn_if_narrowed(buffer.dtype)
        return jax.dlpack.from_dlpack(buffer)


_narrowed_warned: set[str] = set()


def _warn_if_narrowed(dtype: str) -> None:
    """Warns once per dtype when JAX will narrow a kernel's 64-bit output (int64 to int32,
    float64 to float32) because ``jax_enable_x64`` is off: JAX itself does so silently."""
    if dtype in _narrowed_warned or dtype not in ("int64", "uint64", "float64"):
        return
    if jax.config.read("jax_enable_x64"):
        return
    _narrowed_warned.add(dtype)
    import warnings

    narrow = {"int64": "int32", "uint64": "uint32", "float64": "float32"}[dtype]
    warnings.warn(
        f"a kernel output of dtype {dtype} becomes {narrow} in JAX, whose 64-bit types are off; "
        "call jax.config.update('jax_enable_x64', True) before using JAX to keep 64 bits",
        UserWarning,
        stacklevel=3,
    )


FRAMEWORK = JaxFramework()
