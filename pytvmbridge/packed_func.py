"""Packed functions: Python functions registered by name (TVM's ``register_func``) that compiled
kernels call, through ``te.extern`` stages and ``call_packed``, with DLPack arrays.

Tensors reach the function as :class:`pytvmbridge.nd.NDArray` views of the kernel's memory,
valid during the call only (``x.numpy()`` is a NumPy view; ``np.from_dlpack(x)`` works too);
scalars as Python ints and floats. An exception raised by the function is raised by the kernel
call, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _core
from .error import TVMTypeError, TVMValueError

_FUNCS: dict[str, Callable[..., Any]] = {}


def register_func(
    func_name: str | Callable[..., Any], f: Callable[..., Any] | None = None, override: bool = False
) -> Any:
    """Registers ``f`` under ``func_name`` so compiled code can call it; as TVM's, usable as
    ``register_func(name, f)``, as a decorator ``@register_func("name")`` or ``@register_func``
    (the function's own name). Returns ``f``. A name already taken raises ``ValueError`` unless
    ``override=True``.

    Example:
        >>> import pytvmbridge as tvm
        >>> @tvm.register_func("doc.add_one", override=True)
        ... def add_one(x, y):
        ...     y.numpy()[:] = x.numpy() + 1
        >>> tvm.get_global_func("doc.add_one") is add_one
        True
    """
    if callable(func_name) and f is None:
        fn = func_name
        return register_func(fn.__name__, fn, override)
    if not isinstance(func_name, str):
        raise TVMTypeError(f"register_func() needs a function name (str), got {func_name!r}")
    name = func_name

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(fn):
            raise TVMTypeError(f"register_func({name!r}) needs a callable, got {fn!r}")
        _core.register_packed(name, fn, override)
        _FUNCS[name] = fn
        return fn

    return register(f) if f is not None else register


def get_global_func(name: str, allow_missing: bool = False) -> Callable[..., Any] | None:
    """The function registered as ``name``; ``None`` when missing and ``allow_missing``, else
    ``ValueError``.

    Example:
        >>> import pytvmbridge as tvm
        >>> tvm.get_global_func("no.such.function", allow_missing=True) is None
        True
    """
    fn = _FUNCS.get(name)
    if fn is None and not allow_missing:
        raise TVMValueError(f"Cannot find global function {name!r}; register it with register_func")
    return fn


def list_global_func_names() -> list[str]:
    """The names of the registered functions, sorted."""
    return sorted(_core.packed_names())


def remove_global_func(name: str) -> None:
    """Unregisters ``name``; ``ValueError`` when it is not registered."""
    if not _core.remove_packed(name):
        raise TVMValueError(f"no global function named {name!r} is registered")
    _FUNCS.pop(name, None)


__all__ = ["get_global_func", "list_global_func_names", "register_func", "remove_global_func"]
