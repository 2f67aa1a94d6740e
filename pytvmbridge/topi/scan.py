"""Cumulative sums and products along an axis (TVM's ``topi.cumsum``/``topi.cumprod``).

The automatic schedule cannot place a ``te.scan`` stage that another compute reads (it tries to
inline it), so the prefix is written with reductions only, as a blocked scan: element ``j`` is
the combined total of the blocks of ``BLOCK`` elements before its own (the scan of the block
totals, one level up) and the masked prefix of its own block. Each level costs ``BLOCK`` terms
per element (a prefix summed element by element costs ``n``); levels stop when the axis fits in
one block, or after ``_LEVELS`` levels on a symbolic axis (the top one then quadratic in
``n / BLOCK**4``). The prefixes within the blocks are laid out ``[..., position in block,
block, ...]``, so that their reduction runs in vectors across blocks. Sizes may be symbolic.

float16/bfloat16 accumulate in float32 (:func:`.utils.accumulate_dtype`) and are rounded back
once per element; other dtypes accumulate in their own.

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> A = tvm.placeholder((2, tvm.var("n")), name="A")
    >>> C = topi.cumsum(A, axis=1)
    >>> f = tvm.build(tvm.create_schedule(C.op), [A, C])
    >>> a = np.arange(10, dtype="float32").reshape(2, 5); c = np.empty_like(a)
    >>> f(a, c); c.tolist()
    [[0.0, 1.0, 3.0, 6.0, 10.0], [5.0, 11.0, 18.0, 26.0, 35.0]]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import te
from . import tag
from .transform import reshape
from .utils import (
    Tensor,
    accumulate_dtype,
    cast_to,
    check_tensor,
    const_int,
    is_float,
    normalize_axis,
    prod,
)

# Terms per element and level (a power of two: the block arithmetic is shifts and masks); 16
# measured faster than 8 or 32.
BLOCK = 16
_LEVELS = 4


def _replace(index: tuple, axis: int, value: Any) -> tuple:
    return (*index[:axis], value, *index[axis + 1 :])


def _inclusive(
    data: Tensor, axis: int, reducer: Callable[..., te.Expr], combine: Callable, level: int = 0
) -> Tensor:
    """The inclusive scan of ``data`` along ``axis`` (in data's dtype)."""
    n = data.shape[axis]
    length = const_int(n)
    name = f"{data.name}_scan{level}"
    blocks = (n + BLOCK - 1) // BLOCK
    last = n - 1

    def element(i: tuple, position: Any) -> Any:
        # clamped: the read stays inside the axis where the mask leaves it out
        return data[_replace(i, axis, te.min(position, last))]

    if (length is not None and length <= BLOCK) or level == _LEVELS:
        # Whole blocks, the prefix masked: a reduction whose innermost extent is not a
        # multiple of the vector width has a tail, and the automatic schedule's loop
        # partitioning then drops the masked terms of every row but the last (a where or a
        # select on k <= i alike).
        ko = te.reduce_axis((0, blocks), name="ko")
        ki = te.reduce_axis((0, BLOCK), name="ki")

        def direct(*i: Any) -> Any:
            position = ko * BLOCK + ki
            return reducer(element(i, position), axis=[ko, ki], where=position <= i[axis])

        return te.compute(data.shape, direct, name=name, tag=tag.COMM_REDUCE)
    # The prefixes within each block, laid out [..., position in block, block, ...]: a block's
    # total is their last row (no reduction of its own), and the reduction's output rows are
    # whole blocks. With 32-element blocks in the natural layout and the totals reduced apart,
    # a float64 cumsum along the last axis of (64, 4096) took 8 ms (eager: 0.13 ms); so 0.4.
    k = te.reduce_axis((0, BLOCK), name="k")

    def within(*i: Any) -> Any:
        j, b = i[axis], i[axis + 1]
        outer = (*i[:axis], 0, *i[axis + 2 :])
        position = b * BLOCK + k
        return reducer(element(outer, position), axis=k, where=(k <= j) & (position < n))

    grid = (*data.shape[:axis], BLOCK, blocks, *data.shape[axis + 1 :])
    partial = te.compute(grid, within, name=f"{name}_within", tag=tag.COMM_REDUCE)
    totals = te.compute(
        _replace(tuple(data.shape), axis, blocks),
        lambda *i: partial[(*i[:axis], BLOCK - 1, *i[axis:])],
        name=f"{data.name}_blocks{level}",
        tag=tag.INJECTIVE,
    )
    before = _inclusive(totals, axis, reducer, combine, level + 1)

    def total(*i: Any) -> Any:
        block = i[axis] // BLOCK
        mine = partial[(*i[:axis], i[axis] % BLOCK, block, *i[axis + 1 :])]
        earlier = before[_replace(i, axis, te.max(block - 1, 0))]
        return te.if_then_else(block > 0, combine(earlier, mine), mine)

    return te.compute(data.shape, total, name=name, tag=tag.INJECTIVE)


def _cumulative(
    data: Tensor,
    axis: int | None,
    dtype: str | None,
    exclusive: bool,
    reducer: Callable[..., te.Expr],
    combine: Callable,
    identity: float,
    what: str,
) -> Tensor:
    check_tensor(data, f"data of {what}")
    if axis is None:  # NumPy's rule: the flattened tensor
        data, axis = reshape(data, [prod(data.shape)]), 0
    if data.ndim == 0:
        data, axis = te.compute((1,), lambda _: data[()], name=f"{data.name}_1d"), 0
        scalar = True
    else:
        axis, scalar = normalize_axis(axis, data.ndim, what), False
    dtype = dtype or data.dtype
    acc = accumulate_dtype(dtype)
    wide = te.compute(
        data.shape, lambda *i: cast_to(data[i], acc), name=f"{data.name}_{acc}", tag=tag.ELEMWISE
    )
    scanned = _inclusive(wide, axis, reducer, combine)

    def result(*i: Any) -> Any:
        if not exclusive:
            return cast_to(scanned[i], dtype)
        j = i[axis]
        earlier = scanned[_replace(i, axis, te.max(j - 1, 0))]
        first = te.const(identity if is_float(acc) else int(identity), acc)
        return cast_to(te.if_then_else(j > 0, earlier, first), dtype)

    out = te.compute(data.shape, result, name=f"{data.name}_{what}", tag=tag.INJECTIVE)
    if scalar:
        return te.compute((), lambda: out[0], name=f"{data.name}_{what}_0d", tag=tag.INJECTIVE)
    return out


def cumsum(
    data: Tensor, axis: int | None = None, dtype: str | None = None, exclusive: bool = False
) -> Tensor:
    """The cumulative sum along ``axis`` (of the flattened tensor when None), in ``dtype``
    (default: data's); ``exclusive`` leaves each element out of its own sum (the first is 0).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.cumsum(tvm.placeholder((3, 4)), axis=0).shape
        (3, 4)
    """
    return _cumulative(data, axis, dtype, exclusive, te.sum, lambda a, b: a + b, 0.0, "cumsum")


def cumprod(
    data: Tensor, axis: int | None = None, dtype: str | None = None, exclusive: bool = False
) -> Tensor:
    """The cumulative product along ``axis`` (of the flattened tensor when None), in ``dtype``
    (default: data's); ``exclusive`` leaves each element out of its own product (the first
    is 1).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.cumprod(tvm.placeholder((6,))).shape
        (6,)
    """
    return _cumulative(data, axis, dtype, exclusive, te.prod, lambda a, b: a * b, 1.0, "cumprod")


__all__ = ["BLOCK", "cumprod", "cumsum"]
