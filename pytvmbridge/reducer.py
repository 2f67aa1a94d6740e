"""User-defined commutative reducers (TVM's ``te.comm_reducer``), including tuple reducers such
as argmax that reduce several values together and give one output per value."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import _core
from .error import TVMNotImplementedError, TVMTypeError, TVMValueError


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


class CommReducer:
    """A reducer made by :func:`comm_reducer`; call it as ``reducer(expr, axis=k, where=None)``,
    with a tuple of expressions for a tuple reducer (one Reduce expression per value is then
    returned, for ``compute`` to give one output each)."""

    def __init__(self, fcombine: Callable[..., Any], fidentity: Callable[..., Any], name: str):
        self.fcombine = fcombine
        self.fidentity = fidentity
        self.name = name

    def __call__(self, expr: Any, axis: Any = None, where: Any = None, init: Any = None) -> Any:
        if init is not None:
            raise TVMNotImplementedError(f"{self.name}(): init= is not supported")
        if axis is None:
            raise TVMTypeError(f"{self.name}() needs axis=: a reduce_axis or a list of them")
        if isinstance(expr, _core.Tensor):
            raise TVMNotImplementedError(
                f"{self.name}() of a whole tensor is not supported; reduce an expression "
                "inside compute(), e.g. compute((n,), lambda i: r(A[i, k], axis=k))"
            )
        is_tuple = isinstance(expr, (tuple, list))
        values = [_core.convert(v) for v in _as_tuple(expr)]
        if not values:
            raise TVMValueError(f"{self.name}() of an empty tuple")
        dtypes = [v.dtype for v in values]
        lhs = [_core.var(f"x{k}" if is_tuple else "x", t) for k, t in enumerate(dtypes)]
        rhs = [_core.var(f"y{k}" if is_tuple else "y", t) for k, t in enumerate(dtypes)]
        if is_tuple:
            result = self.fcombine(tuple(lhs), tuple(rhs))
            identity = self.fidentity(*dtypes)
        else:
            result = self.fcombine(lhs[0], rhs[0])
            identity = self.fidentity(dtypes[0])
        result, identity = _as_tuple(result), _as_tuple(identity)
        for what, got in (("fcombine", result), ("fidentity", identity)):
            if len(got) != len(values):
                raise TVMValueError(
                    f"{what} of reducer {self.name!r} returned {len(got)} value(s) for "
                    f"{len(values)} reduced value(s)"
                )
        outs = _core.comm_reduce(
            self.name, lhs, rhs, list(result), list(identity), values, axis, where
        )
        return tuple(outs) if is_tuple else outs[0]

    def __repr__(self) -> str:
        return f"<comm_reducer {self.name}>"


def comm_reducer(
    fcombine: Callable[..., Any], fidentity: Callable[..., Any], name: str = "reduce"
) -> CommReducer:
    """A commutative reducer from a combiner and an identity, as TVM's ``te.comm_reducer``.

    ``fcombine(x, y)`` combines an accumulator ``x`` with a new value ``y`` (tuples of
    expressions for a tuple reducer); ``fidentity(dtype, ...)`` gives the start value for the
    reduced dtypes. The combiner must be commutative and associative: reduction loops may be
    reordered, split and rfactored.

    Example:
        >>> import numpy as np
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import te
        >>> def fcombine(x, y):  # argmax over (index, value) pairs
        ...     keep = x[1] >= y[1]
        ...     return te.select(keep, x[0], y[0]), te.select(keep, x[1], y[1])
        >>> argmax = te.comm_reducer(fcombine, lambda ti, tv: (te.const(-1, ti), te.min_value(tv)))
        >>> A = te.placeholder((2, 3), name="A")
        >>> k = te.reduce_axis((0, 3), name="k")
        >>> idx, val = te.compute((2,), lambda i: argmax((k.var, A[i, k]), axis=k), name="T")
        >>> f = tvm.build(tvm.create_schedule(idx.op), [A, idx, val])
        >>> a = np.array([[1, 5, 2], [7, 0, 7]], "float32")
        >>> i, v = np.zeros(2, "int32"), np.zeros(2, "float32")
        >>> f(a, i, v); i, v
        (array([1, 0], dtype=int32), array([5., 7.], dtype=float32))
    """
    if not callable(fcombine) or not callable(fidentity):
        raise TVMTypeError("comm_reducer(fcombine, fidentity) takes two callables")
    return CommReducer(fcombine, fidentity, name)


__all__: Sequence[str] = ["CommReducer", "comm_reducer"]
