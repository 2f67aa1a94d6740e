"""The Framework interface, with the behaviour of a generic DLPack producer as its default.

Example:
    >>> import numpy as np
    >>> from pytvmbridge.frameworks import get
    >>> get("dlpack").shape(np.zeros((2, 3)))
    (2, 3)
"""

from __future__ import annotations

from typing import Any

from .. import _core
from ..error import TVMTypeError


class Framework:
    """How kernels meet one framework's arrays; subclasses override what their framework needs.

    The C++ call path (csrc/python/call_args.cc) reads and allocates the arrays of the
    frameworks it knows (nd, torch, numpy, jax) through their fastest routes, asking this class
    only for JAX's ``wrap``. For the others it uses ``as_input``/``as_output`` (what the kernel
    is called with, for frameworks that are not ``native``), and ``empty``, ``writable`` and
    ``wrap`` to allocate an output, hand it to the kernel, and turn it into the framework's
    array without copying.

    Example:
        >>> from pytvmbridge.frameworks import get
        >>> fw = get("nd")
        >>> buf = fw.empty((2,), "float32")
        >>> fw.wrap(buf) is buf, fw.shape(buf)
        (True, (2,))
    """

    name = "dlpack"
    #: Arrays that cannot be written: never outputs; outputs are allocated by pytvmbridge.
    immutable = False
    #: Whether kernels take the arrays as they are (through ``__dlpack__`` or the C exchange
    #: table); if not, every array goes through as_input/as_output first.
    native = True

    def view(self, x: Any) -> Any:
        """A pytvmbridge NDArray viewing ``x`` (no copy)."""
        return _core.from_dlpack(x)

    def dtype(self, x: Any) -> str:
        """The dtype name of ``x`` (``"float32"``...)."""
        return str(self.view(x).dtype)

    def shape(self, x: Any) -> tuple[int, ...]:
        """The shape of ``x`` as a tuple of ints."""
        return tuple(self.view(x).shape)

    def as_input(self, x: Any, what: str) -> Any:
        """What the kernel is given to read ``x`` (``what`` names it in errors)."""
        return _core.from_dlpack(x, what)

    def as_output(self, x: Any, what: str) -> Any:
        """What the kernel is given to write ``x``; raises if ``x`` may not be written."""
        if self.immutable:
            raise TVMTypeError(
                f"{what}: {self.name} arrays are immutable and cannot be outputs; call with the "
                "inputs only and the outputs are allocated and returned"
            )
        return self.view(x)

    def empty(self, shape: tuple[int, ...], dtype: str) -> Any:
        """A new writable buffer for an output (wrap() makes it this framework's array)."""
        from .. import nd

        return nd.empty(shape, dtype)

    def writable(self, buffer: Any) -> Any:
        """What the kernel is given to write a buffer from empty()."""
        return buffer

    def wrap(self, buffer: Any) -> Any:
        """This framework's array for a buffer from empty(), sharing its memory."""
        return buffer

    def __repr__(self) -> str:
        return f"<pytvmbridge framework {self.name!r}>"
