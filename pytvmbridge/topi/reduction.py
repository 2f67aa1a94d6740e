"""Reductions over axes: ``sum mean max min prod argmax argmin``, NumPy's ``axis``/``keepdims``.

``axis`` is None (all axes), an int or a sequence of ints (negative counts from the end).
Reduced sizes may be symbolic. Integer sums and products keep the input dtype (TVM's rule, not
NumPy's widening); ``mean`` needs a float tensor. ``argmax``/``argmin`` return int32 indices
(the first occurrence, or the last with ``select_last_index=True``); with ``axis=None`` the
index is into the flattened tensor, as ``np.argmax`` gives.

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> A = tvm.placeholder((tvm.var("n"), 4), name="A")
    >>> S = topi.sum(A, axis=1, keepdims=True)
    >>> S.shape, S.op.tag
    ((n, 1), 'comm_reduce')
    >>> f = tvm.build(tvm.create_schedule(S.op), [A, S])
    >>> a = np.arange(8, dtype="float32").reshape(2, 4); s = np.empty((2, 1), "float32")
    >>> f(a, s); s.ravel().tolist()
    [6.0, 22.0]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import te
from ..error import TVMTypeError
from . import tag
from .utils import Tensor, check_tensor, normalize_axes, require_float
from .utils import prod as _product

AxisArg = int | Sequence[int] | None


def _plan(data: Tensor, axis: AxisArg, keepdims: bool, what: str) -> tuple[list[int], list]:
    check_tensor(data, f"data of {what}")
    axes = normalize_axes(axis, data.ndim, what)
    if keepdims:
        shape = [1 if d in axes else data.shape[d] for d in range(data.ndim)]
    else:
        shape = [data.shape[d] for d in range(data.ndim) if d not in axes]
    return axes, shape


def _full_index(
    data: Tensor,
    axes: list[int],
    keepdims: bool,
    out_index: Sequence[Any],
    rvs: Sequence[te.IterVar],
) -> list:
    """The index into ``data`` from an output index and the reduce axes."""
    index, rv_iter, out_iter = [], iter(rvs), iter(out_index)
    for d in range(data.ndim):
        if d in axes:
            index.append(next(rv_iter))
            if keepdims:
                next(out_iter)
        else:
            index.append(next(out_iter))
    return index


def _reduce(
    data: Tensor,
    axis: AxisArg,
    keepdims: bool,
    reducer: Callable[..., te.Expr],
    name: str,
) -> Tensor:
    axes, shape = _plan(data, axis, keepdims, name)
    if not axes:  # nothing to reduce: NumPy returns the data itself
        return te.compute(shape, lambda *i: data[i], name=f"{data.name}_{name}", tag=tag.INJECTIVE)
    rvs = [te.reduce_axis((0, data.shape[d]), name=f"k{d}") for d in axes]
    return te.compute(
        shape,
        lambda *i: reducer(data[_full_index(data, axes, keepdims, i, rvs)], axis=rvs),
        name=f"{data.name}_{name}",
        tag=tag.COMM_REDUCE,
        attrs={"axis": axes, "keepdims": int(keepdims)},
    )


def sum(data: Tensor, axis: AxisArg = None, keepdims: bool = False) -> Tensor:
    """The sum over ``axis``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.sum(tvm.placeholder((2, 3, 4)), axis=(0, 2)).shape
        (3,)
    """
    return _reduce(data, axis, keepdims, te.sum, "sum")


def prod(data: Tensor, axis: AxisArg = None, keepdims: bool = False) -> Tensor:
    """The product over ``axis``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.prod(tvm.placeholder((2, 3)), axis=1, keepdims=True).shape
        (2, 1)
    """
    return _reduce(data, axis, keepdims, te.prod, "prod")


def max(data: Tensor, axis: AxisArg = None, keepdims: bool = False) -> Tensor:
    """The maximum over ``axis``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.max(tvm.placeholder((2, 3), "int8")).shape
        ()
    """
    return _reduce(data, axis, keepdims, te.max, "max")


def min(data: Tensor, axis: AxisArg = None, keepdims: bool = False) -> Tensor:
    """The minimum over ``axis``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.min(tvm.placeholder((2, 3)), axis=-1).shape
        (2,)
    """
    return _reduce(data, axis, keepdims, te.min, "min")


def mean(data: Tensor, axis: AxisArg = None, keepdims: bool = False) -> Tensor:
    """The mean over ``axis`` of a float tensor: the sum, then a division by the count.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> M = topi.mean(tvm.placeholder((tvm.var("n"), 8), name="A"), axis=1)
        >>> M.op.body
        [(A_sum[i0] / 8.0)]
    """
    check_tensor(data, "data of mean")
    require_float(data, "mean")
    axes = normalize_axes(axis, data.ndim, "mean")
    total = sum(data, axis, keepdims)
    count = _product([data.shape[d] for d in axes])
    count_expr = te.const(count, data.dtype) if isinstance(count, int) else count.astype(data.dtype)
    return te.compute(
        total.shape, lambda *i: total[i] / count_expr, name=f"{data.name}_mean", tag=tag.ELEMWISE
    )


def _arg_reduce(
    data: Tensor, axis: AxisArg, keepdims: bool, select_last_index: bool, is_max: bool
) -> Tensor:
    name = "argmax" if is_max else "argmin"
    if axis is not None and not isinstance(axis, int):
        raise TVMTypeError(f"axis of {name} must be an int or None, found {axis!r}")
    axes, shape = _plan(data, axis, keepdims, name)
    if data.dtype == "bool":
        raise TVMTypeError(f"{name} needs a numeric tensor, found bool tensor {data.name!r}")
    # First the extreme value, then the smallest (or largest) flat index where it occurs: two
    # plain reductions, so no tuple reducer is needed.
    extreme = _reduce(data, axis, True, te.max if is_max else te.min, f"{name}_value")
    rvs = [te.reduce_axis((0, data.shape[d]), name=f"k{d}") for d in axes]

    def flat(rv: Sequence[te.IterVar]) -> te.Expr:
        out: Any = te.const(0, "int32")
        for d, r in zip(axes, rv, strict=True):
            out = out * data.shape[d] + r
        return out

    def fcompute(*i: Any) -> te.Expr:
        index = _full_index(data, axes, keepdims, i, rvs)
        value_index = [0 if d in axes else index[d] for d in range(data.ndim)]
        x, m = data[index], extreme[value_index]
        hit = x == m
        if data.dtype.startswith(("float", "bfloat")):
            # NumPy's index of the first NaN: a NaN anywhere makes the extreme NaN (max and
            # min propagate it), which equals nothing; then the NaNs are the hits. And a row
            # of -inf only (+inf for argmin) has the reduction's identity, the lowest finite
            # value, as its maximum: then the first element at or beyond it is the hit (NumPy
            # would take a -FLT_MAX after a -inf; this takes the -inf). Both conditions are
            # the row's, so LLVM takes them out of the loop over the row.
            limit = te.min_value(data.dtype) if is_max else te.max_value(data.dtype)
            beyond = x <= m if is_max else x >= m
            hit = te.if_then_else(
                te.isnan(m), te.isnan(x), te.if_then_else(m == limit, beyond, hit)
            )
        if select_last_index:
            return te.max(te.select(hit, flat(rvs), te.const(-1, "int32")), axis=rvs)
        return te.min(te.select(hit, flat(rvs), te.max_value("int32")), axis=rvs)

    return te.compute(
        shape,
        fcompute,
        name=f"{data.name}_{name}",
        tag=tag.COMM_REDUCE_IDX,
        attrs={"axis": axes, "keepdims": int(keepdims)},
    )


def argmax(
    data: Tensor, axis: int | None = None, keepdims: bool = False, select_last_index: bool = False
) -> Tensor:
    """The int32 index of the maximum along ``axis`` (of the flattened tensor when None).

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> A = tvm.placeholder((2, 3), name="A")
        >>> I = topi.argmax(A, axis=1)
        >>> f = tvm.build(tvm.create_schedule(I.op), [A, I])
        >>> i = np.empty(2, "int32"); f(np.array([[1, 3, 3], [5, 0, 2]], "float32"), i)
        >>> i.tolist()
        [1, 0]
    """
    return _arg_reduce(data, axis, keepdims, select_last_index, True)


def argmin(
    data: Tensor, axis: int | None = None, keepdims: bool = False, select_last_index: bool = False
) -> Tensor:
    """The int32 index of the minimum along ``axis`` (of the flattened tensor when None).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.argmin(tvm.placeholder((2, 3)), keepdims=True).shape
        (1, 1)
    """
    return _arg_reduce(data, axis, keepdims, select_last_index, False)
