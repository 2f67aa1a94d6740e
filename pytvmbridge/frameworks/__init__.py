"""What pytvmbridge knows about each framework: one module per framework, and the dispatch.

The runtime sees DLPack tensors only. The little it must know about a framework lives here: how
to read an array's dtype and shape, how to hand an array to a kernel as an input or as an output
(with the framework's own rules: PyTorch's autograd, JAX's immutability, MXNet's old DLPack
functions), and how to allocate an output that the framework then owns without a copy.

``framework_of(array)`` finds the framework of an array by its type (looked up once per type).
Arrays of unknown types that speak DLPack belong to the generic ``"dlpack"`` framework, whose
outputs are pytvmbridge ``NDArray``s.

Example:
    >>> import numpy as np
    >>> from pytvmbridge import frameworks
    >>> fw = frameworks.framework_of(np.zeros(3, "float32"))
    >>> fw.name, fw.dtype(np.zeros(3, "float32"))
    ('numpy', 'float32')
    >>> out = frameworks.allocate(fw, (2, 3), "int32")
    >>> type(out).__name__, out.shape, str(out.dtype)
    ('ndarray', (2, 3), 'int32')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import _core
from ..error import TVMTypeError, TVMValueError
from ._base import Framework

__all__ = ["Framework", "allocate", "framework_of", "get", "names"]

# The root module of a type -> the name of its framework module in this package.
_ROOTS = {
    "torch": "torch",
    "numpy": "numpy",
    "jax": "jax",
    "jaxlib": "jax",
    "mxnet": "mxnet",
    "pytvmbridge": "nd",
}

_by_name: dict[str, Framework] = {}
_by_type: dict[type, Framework] = {}


def get(name: str) -> Framework:
    """The framework called ``name``: ``"torch"``, ``"numpy"``, ``"jax"``, ``"mxnet"``, ``"nd"``
    (pytvmbridge's own NDArray) or ``"dlpack"`` (any other DLPack producer).

    Importing the framework itself is deferred to the first use that needs it.

    Example:
        >>> from pytvmbridge import frameworks
        >>> frameworks.get("torch").name
        'torch'
    """
    fw = _by_name.get(name)
    if fw is None:
        if name not in (*_ROOTS.values(), "dlpack"):
            raise TVMValueError(
                f"unknown framework {name!r}; expected one of "
                f"{', '.join(sorted({*_ROOTS.values(), 'dlpack'}))}"
            )
        import importlib

        fw = importlib.import_module(f"{__name__}.{name}").FRAMEWORK
        _by_name[name] = fw
    return fw


def names() -> list[str]:
    """The names of the frameworks pytvmbridge knows.

    Example:
        >>> from pytvmbridge import frameworks
        >>> "jax" in frameworks.names()
        True
    """
    return sorted({*_ROOTS.values(), "dlpack"})


def framework_of(array: Any) -> Framework:
    """The framework an array belongs to, found from its type (once per type, then cached).

    Raises ``TypeError`` for an object that is no array (no ``__dlpack__``, not a DLPack capsule,
    not an MXNet or pytvmbridge array).

    Example:
        >>> import torch
        >>> from pytvmbridge import frameworks
        >>> frameworks.framework_of(torch.zeros(2)).name
        'torch'
    """
    tp = type(array)
    fw = _by_type.get(tp)
    if fw is not None:
        return fw
    for cls in tp.__mro__:
        root = (getattr(cls, "__module__", None) or "").partition(".")[0]
        if root in _ROOTS:
            fw = get(_ROOTS[root])
            break
    else:
        if hasattr(array, "__dlpack__") or tp.__name__ == "PyCapsule":
            fw = get("dlpack")
        else:
            raise TVMTypeError(
                f"expected an array (a PyTorch, NumPy, JAX or MXNet array, a pytvmbridge NDArray, "
                f"anything with __dlpack__, or a DLPack capsule), got an object of type "
                f"'{tp.__module__}.{tp.__qualname__}'"
            )
    if tp.__name__ != "PyCapsule":  # a capsule is one use only: never worth caching by type
        _by_type[tp] = fw
    return fw


def allocate(framework: Framework | str, shape: Sequence[int], dtype: str) -> Any:
    """A new uninitialised array of ``framework`` that a kernel may write.

    For frameworks whose arrays are immutable (JAX) this is a pytvmbridge buffer: pass it to the
    kernel, then ``framework.wrap(buffer)`` hands it to the framework without a copy. For the
    others ``wrap`` returns the array itself.

    Example:
        >>> from pytvmbridge import frameworks
        >>> t = frameworks.allocate("torch", (2, 2), "float64")
        >>> t.shape, t.dtype
        (torch.Size([2, 2]), torch.float64)
    """
    fw = get(framework) if isinstance(framework, str) else framework
    return fw.empty(tuple(shape), dtype)


# The C++ call path asks this once per new array type (csrc/python/call_args.cc).
_core._set_framework_resolver(framework_of)
