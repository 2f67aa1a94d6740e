"""Reductions over axes: ``sum mean max min prod argmax argmin any all``, NumPy's
``axis``/``keepdims``.

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
from ..error import TVMTypeError, TVMValueError
from . import tag
from .utils import (
    Tensor,
    accumulate_dtype,
    cast_to,
    check_tensor,
    const_int,
    get_const_int,
    normalize_axes,
    require_float,
    with_nonempty_reads,
)
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
    dtype: str | None = None,
) -> Tensor:
    """The reduction of ``data`` over ``axis``, its values read as ``dtype`` (default: data's
    own; no cast then)."""
    axes, shape = _plan(data, axis, keepdims, name)
    dtype = dtype or data.dtype
    if not axes:  # nothing to reduce: NumPy returns the data itself
        return te.compute(
            shape, lambda *i: cast_to(data[i], dtype), name=f"{data.name}_{name}", tag=tag.INJECTIVE
        )
    rvs = [te.reduce_axis((0, data.shape[d]), name=f"k{d}") for d in axes]
    return te.compute(
        shape,
        lambda *i: reducer(
            cast_to(data[_full_index(data, axes, keepdims, i, rvs)], dtype), axis=rvs
        ),
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
    return _accumulated(data, axis, keepdims, te.sum, "sum")


def _accumulated(
    data: Tensor, axis: AxisArg, keepdims: bool, reducer: Callable[..., te.Expr], name: str
) -> Tensor:
    """A sum or product, float16/bfloat16 data accumulated in float32 and rounded back once
    (PyTorch's CPU sum does so; a float16 accumulator overflows at 65504 and drops the small
    terms of a long row)."""
    check_tensor(data, f"data of {name}")
    acc = accumulate_dtype(data.dtype)
    if acc == data.dtype:
        return _reduce(data, axis, keepdims, reducer, name)
    total = _reduce(data, axis, keepdims, reducer, name, acc)
    return te.compute(
        total.shape,
        lambda *i: cast_to(total[i], data.dtype),
        name=f"{data.name}_{name}_{data.dtype}",
        tag=tag.ELEMWISE,
    )


def prod(data: Tensor, axis: AxisArg = None, keepdims: bool = False) -> Tensor:
    """The product over ``axis``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.prod(tvm.placeholder((2, 3)), axis=1, keepdims=True).shape
        (2, 1)
    """
    return _accumulated(data, axis, keepdims, te.prod, "prod")


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


def _truth(data: Tensor, axis: AxisArg, keepdims: bool, reducer: Callable, name: str) -> Tensor:
    """Whether any/all elements over ``axis`` are true (nonzero; NaN counts as true, as in
    NumPy and PyTorch), as a bool tensor. The flags are reduced as int8 and compared with 0
    after: the identities (-128 for the maximum, 127 for the minimum) then give False for any
    and True for all of an empty axis."""
    check_tensor(data, f"data of {name}")
    if data.dtype == "bool":
        flag = te.compute(
            data.shape, lambda *i: data[i].astype("int8"), name=f"{data.name}_flag",
            tag=tag.ELEMWISE,
        )  # fmt: skip
    else:
        zero = te.const(0.0 if data.dtype.startswith(("float", "bfloat")) else 0, data.dtype)
        flag = te.compute(
            data.shape, lambda *i: (data[i] != zero).astype("int8"), name=f"{data.name}_flag",
            tag=tag.ELEMWISE,
        )  # fmt: skip
    reduced = _reduce(flag, axis, keepdims, reducer, name)
    return te.compute(
        reduced.shape,
        lambda *i: reduced[i] > te.const(0, "int8"),
        name=f"{data.name}_{name}",
        tag=tag.ELEMWISE,
    )


def any(data: Tensor, axis: AxisArg = None, keepdims: bool = False) -> Tensor:
    """Whether any element over ``axis`` is true (nonzero), as a bool tensor.

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> A = tvm.placeholder((2, 3), name="A")
        >>> B = topi.reduction.any(A, axis=1)
        >>> f = tvm.build(tvm.create_schedule(B.op), [A, B])
        >>> b = np.empty(2, "bool"); f(np.array([[0, 0, 2], [0, 0, 0]], "float32"), b)
        >>> b.tolist()
        [True, False]
    """
    return _truth(data, axis, keepdims, te.max, "any")


def all(data: Tensor, axis: AxisArg = None, keepdims: bool = False) -> Tensor:
    """Whether every element over ``axis`` is true (nonzero), as a bool tensor.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.reduction.all(tvm.placeholder((2, 3), "bool"), axis=0).dtype
        'bool'
    """
    return _truth(data, axis, keepdims, te.min, "all")


def mean(data: Tensor, axis: AxisArg = None, keepdims: bool = False) -> Tensor:
    """The mean over ``axis`` of a float tensor: the sum, then a division by the count. float16
    and bfloat16 are summed and divided in float32 (:func:`.utils.accumulate_dtype`), then
    rounded back: a float16 sum overflows long before the mean does.

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
    acc = accumulate_dtype(data.dtype)
    total = _reduce(data, axis, keepdims, te.sum, "sum", acc)
    count = _product([data.shape[d] for d in axes])
    count_expr = te.const(count, acc) if isinstance(count, int) else count.astype(acc)
    return te.compute(
        total.shape,
        lambda *i: cast_to(total[i] / count_expr, data.dtype),
        name=f"{data.name}_mean",
        tag=tag.ELEMWISE,
    )


def _arg_reduce(
    data: Tensor, axis: AxisArg, keepdims: bool, select_last_index: bool, is_max: bool
) -> Tensor:
    name = "argmax" if is_max else "argmin"
    if axis is not None:
        if const_int(axis) is None:
            raise TVMTypeError(f"axis of {name} must be an int or None, found {axis!r}")
        axis = const_int(axis)
    check_tensor(data, f"data of {name}")
    if data.dtype == "bool":
        raise TVMTypeError(f"{name} needs a numeric tensor, found bool tensor {data.name!r}")
    if data.ndim == 0:
        # NumPy and PyTorch take a 0-d array as one element (axis None, 0 or -1): its index is 0.
        # A reduction over no axes cannot express that, so the answer is a constant.
        if axis not in (None, 0, -1):
            raise TVMValueError(f"axis {axis} of {name} is out of range for a 0-d tensor")
        return te.compute(
            (), lambda *i: te.const(0, "int32"), name=f"{data.name}_{name}", tag=tag.ELEMWISE
        )
    axes, shape = _plan(data, axis, keepdims, name)
    # NumPy and PyTorch refuse the index of an extreme of nothing (there is no index to give)
    empty = [d for d in axes if const_int(data.shape[d]) == 0]
    if empty:
        raise TVMValueError(
            f"{name} of an empty axis: dimension {empty[0]} of {tuple(data.shape)} has size 0"
        )
    lane_steps = _lane_width(data, axes) if not select_last_index else 0
    if lane_steps:
        return _arg_reduce_lanes(data, axes[0], keepdims, is_max, lane_steps, name)
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
            # min propagate it), which equals nothing; then the NaNs are the hits. (A row of
            # -inf has the maximum -inf, the reduction's identity, which its first element
            # equals.) The condition is the row's, so LLVM takes it out of the loop over it.
            hit = te.if_then_else(te.isnan(m), te.isnan(x), hit)
        if select_last_index:
            return te.max(te.select(hit, flat(rvs), te.const(-1, "int32")), axis=rvs)
        return te.min(te.select(hit, flat(rvs), te.max_value("int32")), axis=rvs)

    def make(attrs: dict[str, Any]) -> Tensor:
        return te.compute(
            shape,
            fcompute,
            name=f"{data.name}_{name}",
            tag=tag.COMM_REDUCE_IDX,
            attrs={"axis": axes, "keepdims": int(keepdims), **attrs},
        )

    # an axis empty at call time is refused then (its reduction gave 2147483647, an index out
    # of range)
    return with_nonempty_reads(make, data, axes)


# Lanes of topi's one-pass argmax: four vectors of 16 floats (AVX-512), a multiple of narrower
# vector widths; rows at least two steps of it long.
_LANES = (64, 32, 16)


def _lane_width(data: Tensor, axes: list[int]) -> int:
    """The lane width of the one-pass form over ``data``'s last axis, or 0 where it does not
    apply (another axis, a symbolic or indivisible length, a dtype other than float32/int32)."""
    if len(axes) != 1 or axes[0] != data.ndim - 1 or data.ndim < 2:
        return 0
    if data.dtype not in ("float32", "int32"):
        return 0
    n = const_int(data.shape[-1])
    if n is None:
        return 0
    return next((w for w in _LANES if n % w == 0 and n >= 2 * w), 0)


def _arg_combiners(dtype: str, is_max: bool) -> tuple[Any, Any]:
    """The two combiners of the one-pass form: ``ordered`` for a lane's steps over (step,
    value, count) triples, the steps in increasing order (the later element wins only when it
    is beyond the running value and that is not NaN: two compares per vector, the first NaN and
    the first of equals kept), and ``full``, NumPy's rule over (index, value) pairs for the
    lanes in any order (a NaN beats everything, then the extreme value, then the smaller
    index).

    ``ordered`` takes its step from its own running count (one per combine: the step itself,
    since every schedule of the steps applies them once each, in order), not from the
    element's step: that one is the loop counter, which LLVM broadcasts into each vector's
    masked update (a vpbroadcastd from a general register, on port 5 with both compares); the
    count is a vector register, one vpsubd per vector and a masked move on either port.
    Argmax over (1, 128, 768), one thread: 7.2-7.5 -> 6.6 us."""
    is_float = dtype.startswith("float")
    no = te.const(False, "bool")

    def beyond(w: Any, v: Any) -> Any:
        return w > v if is_max else w < v

    def ordered(x: Any, y: Any) -> tuple[Any, Any, Any]:
        (i, v, c), (_, w, _) = x, y
        if is_float:
            # Not (v at or beyond w), unordered included: w beyond v, or w NaN; v not NaN.
            at_or_beyond = v >= w if is_max else v <= w
            take = (at_or_beyond == no) & (te.isnan(v) == no)
        else:
            take = beyond(w, v)
        return te.select(take, c, i), te.select(take, w, v), c + te.const(1, "int32")

    def full(x: Any, y: Any) -> tuple[Any, Any]:
        # Written as when the running pair stays (it beats the new one), not when the new one
        # wins: against the identity (INT_MAX, -inf) every clause is then a comparison with a
        # constant that is false (nothing is below -inf or beyond INT_MAX), so LLVM drops the
        # combines of each tree level with its identity. The same rule: with distinct indices,
        # exactly one of the two pairs beats the other.
        (i, v), (j, w) = x, y
        first = i < j
        keep = beyond(v, w) | ((v == w) & first)
        if is_float:
            keep = keep | (te.isnan(v) & ((te.isnan(w) == no) | first))
        return te.select(keep, i, j), te.select(keep, v, w)

    def identity(ti: str, tv: str) -> tuple[Any, Any]:
        if is_float:
            worst = te.const(float("-inf") if is_max else float("inf"), tv)
        else:
            worst = te.min_value(tv) if is_max else te.max_value(tv)
        return te.max_value(ti), worst

    def steps_identity(ti: str, tv: str, tc: str) -> tuple[Any, Any, Any]:
        return (*identity(ti, tv), te.const(0, tc))

    name = "argmax" if is_max else "argmin"
    return (
        te.comm_reducer(ordered, steps_identity, f"{name}_steps"),
        te.comm_reducer(full, identity, name),
    )


def _arg_reduce_lanes(
    data: Tensor, axis: int, keepdims: bool, is_max: bool, lanes: int, name: str
) -> Tensor:
    """argmax/argmin over the last axis in one pass: per lane of ``lanes`` a running (step,
    value) over the row's steps of ``lanes`` elements, then the lanes; the automatic scheduler
    computes the steps per row, in vectors, inside the loop over the lanes
    (rule_tuple_reduction.cc)."""
    ordered, full = _arg_combiners(data.dtype, is_max)
    n = get_const_int(data.shape[-1])
    rows = list(data.shape[:-1])
    ko = te.reduce_axis((0, n // lanes), name="ko")
    step_index, step_value, _ = te.compute(
        [*rows, lanes],
        lambda *i: ordered((ko.var, data[(*i[:-1], ko * lanes + i[-1])], ko.var), axis=ko),
        name=f"{data.name}_{name}_steps",
    )
    kl = te.reduce_axis((0, lanes), name="kl")
    # The steps keep the step (a vector count, no index arithmetic per vector), the lanes
    # make it an index; their third value, the count itself, is read by nothing. A lane whose
    # every element is the identity (-inf rows for argmax) kept the identity's step: its first
    # element, the lane's own index, is the answer there.
    none = te.max_value("int32")

    def lane_index(i: Any) -> Any:
        step = step_index[(*i, kl)]
        return te.select(step == none, kl, step * lanes + kl)

    index, _ = te.compute(
        rows,
        lambda *i: full((lane_index(i), step_value[(*i, kl)]), axis=kl),
        name=f"{data.name}_{name}_lanes",
    )
    shape = [*rows, 1] if keepdims else rows
    return te.compute(
        shape,
        lambda *i: index[i[: len(rows)]],
        name=f"{data.name}_{name}",
        tag=tag.COMM_REDUCE_IDX,
        attrs={"axis": [axis], "keepdims": int(keepdims)},
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
