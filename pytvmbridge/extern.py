"""Extern stages (TVM's ``te.extern``): outputs computed by a registered packed function instead
of a loop nest, with ``call_packed`` naming the function and its arguments."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

from . import _core
from .error import TVMNotImplementedError, TVMTypeError, TVMValueError


class ExternBuffer:
    """An input or output of an extern stage as ``fcompute`` sees it (TVM's ``Buffer``): its
    ``name``, ``shape``, ``dtype`` and ``ndim``; pass it to :func:`call_packed`."""

    def __init__(self, kind: str, index: int, name: str, shape: Sequence[Any], dtype: str):
        self._ref = (kind, index)
        self.name = name
        self.shape = tuple(shape)
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def data(self) -> BufferData:
        """TVM's data pointer of the buffer: passed to :func:`call_packed`, the function receives
        the address of the first element as a ``ctypes.c_void_p`` (as TVM passes a handle)."""
        return BufferData(self)

    #: TVM's buffer layout fields: compact (no explicit strides), no element offset.
    strides: tuple[Any, ...] = ()
    elem_offset = 0
    offset_factor = 0

    def scope(self) -> str:
        """The memory scope: always ``"global"`` on a CPU."""
        return "global"

    def vload(self, *args: Any, **kwargs: Any) -> Any:
        raise TVMNotImplementedError(
            f"buffer {self.name!r}: vload/vstore build TVM ir_builder bodies, which extern "
            "stages do not support; return call_packed(name, ...) from fcompute instead"
        )

    vstore = vload

    def __repr__(self) -> str:
        return f"ExternBuffer({self.name!r}, shape={self.shape}, dtype={self.dtype!r})"


class BufferData:
    """``buffer.data``: the buffer's data pointer as an argument of :func:`call_packed`."""

    def __init__(self, buffer: ExternBuffer):
        self.buffer = buffer
        self.dtype = "handle"
        self.name = f"{buffer.name}.data"

    def __repr__(self) -> str:
        return self.name


class PackedCall:
    """A call of a registered packed function, made by :func:`call_packed`; an extern stage's
    ``fcompute`` returns one."""

    def __init__(self, name: str, args: Sequence[Any]):
        self.name = name
        self.args = list(args)

    def __repr__(self) -> str:
        return f"call_packed({self.name!r}, {', '.join(map(repr, self.args))})"


def call_packed(*args: Any) -> PackedCall:
    """A call of the packed function named by the first argument with the other arguments (the
    extern stage's buffers, or numbers and scalar expressions), as TVM's ``call_packed``. It is
    only meaningful as what an extern stage's ``fcompute`` returns.

    Example:
        >>> from pytvmbridge import te
        >>> te.call_packed("my.func", 1.5)
        call_packed('my.func', 1.5)
    """
    if not args or not isinstance(args[0], str):
        raise TVMTypeError("call_packed() takes the function's name (a str) first")
    return PackedCall(args[0], args[1:])


_trampolines: dict[tuple[str, tuple[int, ...]], str] = {}


def _pointer_trampoline(target: str, positions: Sequence[int]) -> str:
    """The name of a packed function that calls ``target`` (looked up when called, so it may be
    registered after the extern is made) with the arguments at ``positions`` given as their data
    pointers (``ctypes.c_void_p``), as TVM passes ``buffer.data``."""
    key = (target, tuple(positions))
    if key in _trampolines:
        return _trampolines[key]
    from .packed_func import get_global_func, register_func

    name = f"__pytvmbridge.data_pointers.{len(_trampolines)}.{target}"

    def call_with_pointers(*arrays: Any) -> Any:
        args = list(arrays)
        for pos in positions:
            args[pos] = ctypes.c_void_p(args[pos].data_ptr)
        return get_global_func(target)(*args)

    register_func(name, call_with_pointers, override=True)
    _trampolines[key] = name
    return name


def _is_shape(obj: Any) -> bool:
    return not isinstance(obj, (list, tuple)) or not any(isinstance(d, (list, tuple)) for d in obj)


def extern(
    shape: Any,
    inputs: Sequence[Any],
    fcompute: Callable[[list[ExternBuffer], list[ExternBuffer]], Any],
    name: str = "extern",
    dtype: Any = None,
    in_buffers: Any = None,
    out_buffers: Any = None,
    tag: str = "",
    attrs: dict[str, Any] | None = None,
) -> Any:
    """Tensors computed by a packed function, as TVM's ``te.extern``.

    ``shape`` is one output shape or a list of them; ``dtype`` the outputs' dtype (or a list;
    the first input's by default). ``fcompute(ins, outs)`` receives buffers for the inputs and
    outputs and returns :func:`call_packed` of a function registered with ``register_func``; the
    kernel calls it when this stage runs. Returns the output tensor, or a list for several.
    ``in_buffers``, ``out_buffers``, ``tag`` and ``attrs`` are accepted and ignored (buffers
    may have any strides: the function receives them).

    Example:
        >>> import numpy as np
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import te
        >>> @tvm.register_func("doc.cumsum", override=True)
        ... def cumsum(x, y):
        ...     np.cumsum(x.numpy(), out=y.numpy())
        >>> A = te.placeholder((5,), name="A")
        >>> body = lambda ins, outs: te.call_packed("doc.cumsum", ins[0], outs[0])
        >>> B = te.extern((5,), [A], body, name="B")
        >>> C = te.compute((5,), lambda i: B[i] * 2.0, name="C")
        >>> f = tvm.build(tvm.create_schedule(C.op), [A, C])
        >>> c = np.zeros(5, "float32"); f(np.arange(5, dtype="float32"), c); c
        array([ 0.,  2.,  6., 12., 20.], dtype=float32)
    """
    del in_buffers, out_buffers, tag, attrs
    inputs = list(inputs)
    for k, t in enumerate(inputs):
        if not isinstance(t, _core.Tensor):
            raise TVMTypeError(f"input {k} of extern {name!r} must be a Tensor, got {t!r}")
    shapes = [shape] if _is_shape(shape) else list(shape)
    shapes = [list(s) if isinstance(s, (list, tuple)) else [s] for s in shapes]
    if dtype is None:
        dtypes = [inputs[0].dtype if inputs else "float32"] * len(shapes)
    elif isinstance(dtype, (list, tuple)):
        dtypes = list(dtype)
    else:
        dtypes = [dtype] * len(shapes)
    ins = [ExternBuffer("in", k, t.name, t.shape, t.dtype) for k, t in enumerate(inputs)]
    outs = [
        ExternBuffer("out", k, f"{name}.v{k}" if len(shapes) > 1 else name, s, str(d))
        for k, (s, d) in enumerate(zip(shapes, dtypes, strict=True))
    ]
    call = fcompute(ins, outs)
    if not isinstance(call, PackedCall):
        raise TVMNotImplementedError(
            f"fcompute of extern {name!r} returned {type(call).__name__}; only "
            "call_packed(name, ...) is supported as an extern stage's body"
        )
    args: list[tuple[str, Any]] = []
    pointer_args = []
    for pos, a in enumerate(call.args):
        if isinstance(a, BufferData):
            pointer_args.append(pos)
            a = a.buffer
        if isinstance(a, ExternBuffer):
            args.append(a._ref)
        elif isinstance(a, _core.Tensor):
            matches = [k for k, t in enumerate(inputs) if t == a]
            if not matches:
                raise TVMValueError(
                    f"call_packed in extern {name!r} passes a tensor it does not take"
                )
            args.append(("in", matches[0]))
        else:
            args.append(("scalar", a))
    func_name = call.name
    if pointer_args:
        func_name = _pointer_trampoline(call.name, pointer_args)
    tensors = _core.extern_op(name, inputs, shapes, dtypes, func_name, args)
    return tensors[0] if len(tensors) == 1 else tensors


__all__ = ["BufferData", "ExternBuffer", "PackedCall", "call_packed", "extern"]
