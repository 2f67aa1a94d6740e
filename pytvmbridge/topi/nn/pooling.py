"""2-d pooling in NCHW: ``max_pool2d``, ``avg_pool2d``, ``adaptive_avg_pool2d`` (and max).

``max_pool2d``/``avg_pool2d`` follow PyTorch's ``max_pool2d``/``avg_pool2d``: ``strides``
defaults to the window; ``ceil_mode`` rounds the output size up, dropping a last window that
would start inside the bottom/right padding; ``count_include_pad`` divides by the window size
clipped to the padded input (True) or by the number of real elements (False). Padding takes
TVM's forms (int, pair, or ``(top, left, bottom, right)``). ``pool2d`` is TVM's entry point.

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> X = tvm.placeholder((1, 1, 4, 4), name="X")
    >>> Y = topi.nn.max_pool2d(X, 2)
    >>> Y.shape, Y.op.tag
    ((1, 1, 2, 2), 'pool_max')
    >>> f = tvm.build(tvm.create_schedule(Y.op), [X, Y])
    >>> y = np.empty((1, 1, 2, 2), "float32")
    >>> f(np.arange(16, dtype="float32").reshape(1, 1, 4, 4), y); y.ravel().tolist()
    [5.0, 7.0, 13.0, 15.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import te
from ...error import TVMTypeError, TVMValueError
from .. import tag
from ..utils import (
    Tensor,
    accumulate_dtype,
    cast_to,
    check_ndim,
    check_tensor,
    const_int,
    is_float,
    positive_pair,
)
from .pad import PaddingArg, get_pad_tuple, pad

IntPair = int | Sequence[int]


def _pooled_size(size: Any, k: int, s: int, d: int, before: int, after: int, ceil: bool) -> Any:
    span = d * (k - 1) + 1
    c = const_int(size)
    if c is not None:
        # PyTorch's pooling_output_shape: floor division (ceil_mode rounds up first), so with
        # ceil_mode a window may be larger than the padded input and still make one output.
        out = (c + before + after - span + (s - 1 if ceil else 0)) // s + 1
        # PyTorch's rule: the last window must start inside the input or the top/left padding.
        if ceil and (out - 1) * s >= c + before:
            out -= 1
        if out < 1:
            raise TVMValueError(
                f"the pooling window ({span}) is larger than the padded input "
                f"({c} + {before} + {after})"
            )
        return out
    if s == 1 and (not ceil or after < span):  # (see conv_output_size: a "same" window
        # keeps the size variable; ceil_mode's clamp below cannot bind then)
        offset = before + after - span + 1
        return size if offset == 0 else size + offset
    out = te.floordiv(size + (before + after - span + (s - 1 if ceil else 0)), s) + 1
    if ceil:  # at most one window per start inside the input or the top/left padding
        out = te.min(out, te.floordiv(size + (before - 1), s) + 1)
    return out


def _separable(kh: int, kw: int, sw: int, padded: bool, out_w: Any) -> bool:
    """Whether a max pool is computed as column maxima, then maxima across the columns.

    Where it was measured faster (one thread): it pays where the single-stage form's taps are
    dear: a padded window (a select per tap), a stride of 3 or more, or 16 or more window
    elements, on output rows of 5 columns or more. The strided taps of the row buffer share
    its vectors (strided_groups.h in the code generator), which stay in registers: 3x3 s2 p1
    is 1.2-3.3x faster than one stage for output rows of 5 to 150 columns ((1, 512, 10, 10)
    17.6 against 34.3 us, (1, 128, 28, 28) 24.9 against 30.9, (1, 32, 112, 112) 39 against
    76, (1, 16, 224, 224) 137 against 163), slower for 4 columns ((1, 256, 7, 7) 12.3
    against 10.3); 5x5 s2 p2 and 3x3 s3 2.8-4.3x faster; unpadded 2x2 s2 about 0.5x and
    unpadded 3x3 s2 the same, so they stay one stage. Stride 1 stays one stage: its forward
    pass is faster separable on rows of 28 columns or more (3x3 s1 p1 (1, 64, 56, 56) 51
    against 77 us, (1, 32, 112, 112) 100-102 against 169; slower on 14 and 7), but te.gradient
    of that form is slower ((1, 64, 56, 56) 997-1027 against 810-835 us), more than the
    forward saves in training.
    """
    w = const_int(out_w)
    if sw < 2 or kh < 2 or kw < 2 or w is None or w < 5:
        return False
    return padded or sw >= 3 or kh * kw >= 16


def _rows_clamp(h: Any, out_h: Any, kh: int, sh: int, dh: int, top: Any) -> bool:
    """Whether every window of rows (dilation 1, constant sizes) holds at least one input row, so
    that a padded row can be read as the nearest input row without changing the maximum."""
    hc, oh, t = const_int(h), const_int(out_h), const_int(top)
    if dh != 1 or hc is None or oh is None or t is None:
        return False
    return t <= kh - 1 and (oh - 1) * sh - t <= hc - 1


def _max_chain(values: list[Any]) -> Any:
    """The maximum of ``values`` as a chain of element-wise maxima (no reduction identity)."""
    out = values[0]
    for v in values[1:]:
        out = te.max(out, v)
    return out


def _sum_chain(values: list[Any]) -> Any:
    """The sum of ``values``, left to right."""
    out = values[0]
    for v in values[1:]:
        out = out + v
    return out


def pool2d(
    data: Tensor,
    kernel: IntPair,
    stride: IntPair,
    dilation: IntPair,
    padding: PaddingArg,
    pool_type: str,
    ceil_mode: bool = False,
    layout: str = "NCHW",
    count_include_pad: bool = True,
) -> Tensor:
    """Max or average pooling over the last two (H, W) dimensions, TVM's signature.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X = tvm.placeholder((1, 3, 7, 7))
        >>> topi.nn.pool2d(X, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "avg").shape
        (1, 3, 4, 4)
    """
    check_tensor(data, "data of pool2d")
    if layout != "NCHW":
        raise TVMValueError(f"pool2d supports layout 'NCHW', found {layout!r}")
    check_ndim(data, 4, "data of pool2d", "NCHW")
    if pool_type not in ("max", "avg"):
        raise TVMValueError(f"pool_type must be 'max' or 'avg', found {pool_type!r}")
    kh, kw = positive_pair(kernel, "the pool kernel")
    sh, sw = positive_pair(stride, "the pool stride")
    dh, dw = positive_pair(dilation, "the pool dilation")
    top, left, bottom, right = get_pad_tuple(padding, (kh, kw))
    if pool_type == "avg" and not is_float(data.dtype):
        raise TVMTypeError(f"avg pooling needs a float tensor, found {data.dtype}; cast it first")
    n, c, h, w = data.shape
    out_h = _pooled_size(h, kh, sh, dh, top, bottom, ceil_mode)
    out_w = _pooled_size(w, kw, sw, dw, left, right, ceil_mode)
    # In ceil mode a last window may reach past the bottom/right padding: pad far enough that
    # every read is in bounds (the extra elements never count).
    extra_h = (out_h - 1) * sh + dh * (kh - 1) + 1 - h - top if ceil_mode else bottom
    extra_w = (out_w - 1) * sw + dw * (kw - 1) + 1 - w - left if ceil_mode else right
    if const_int(extra_h) is not None:
        extra_h = max(const_int(extra_h), bottom)
    else:
        extra_h = te.max(extra_h, bottom)
    if const_int(extra_w) is not None:
        extra_w = max(const_int(extra_w), right)
    else:
        extra_w = te.max(extra_w, right)
    fill = te.const(0, data.dtype)
    if pool_type == "max":
        # Padding never wins: -inf for floats (PyTorch's), the lowest value for integers.
        float_fill = is_float(data.dtype)
        fill = te.const(float("-inf"), data.dtype) if float_fill else te.min_value(data.dtype)
    padded = data
    if any(const_int(p) != 0 for p in (top, left, extra_h, extra_w)):
        padded = pad(data, [0, 0, top, left], [0, 0, extra_h, extra_w], fill, name="pad_temp")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    attrs = {
        "layout": "NCHW",
        "kernel": [kh, kw],
        "strides": [sh, sw],
        "dilation": [dh, dw],
        "padding": [top, left, bottom, right],
        "ceil_mode": int(ceil_mode),
        "count_include_pad": int(count_include_pad),
    }
    if pool_type == "max" and _separable(kh, kw, sw, padded is not data, out_w):
        # Separable: the maximum down each column of the window's rows (whole contiguous input
        # rows, one vector per 16 columns), then across the columns at the stride. The
        # automatic schedule computes the column maxima for one output row into a row buffer
        # (rule_row_attach.cc, "window_rows"), so each strided tap is read from that buffer
        # once per window column instead of once per window element: a 3x3 stride-2 pool did
        # nine strided taps (two loads and a permute each) per 16 outputs, now three. The
        # maximum of a set does not depend on the order (NaN in any element gives NaN). Both
        # stages are chains of binary maxima, not reductions: a reduction starts from the
        # dtype's lowest finite value, one more maximum per element (three vector instructions
        # with NaN handling) and a window of only -inf would come out as -FLT_MAX.
        width = (out_w - 1) * sw + dw * (kw - 1) + 1

        def column_max(b: Any, ch: Any, y: Any, x: Any) -> te.Expr:
            return _max_chain([padded[b, ch, y * sh + r * dh, x] for r in range(kh)])

        if _rows_clamp(h, out_h, kh, sh, dh, top):
            # Every window holds an input row: a row of the top/bottom padding read as the
            # nearest input row instead (already in the window, so the maximum is the same), one
            # scalar index per output row. Only the columns' padding remains a select, one per
            # vector, and each maximum takes a plain load (two vector instructions with NaN
            # handling, not three).
            def column_max(b: Any, ch: Any, y: Any, x: Any) -> te.Expr:
                last = h - 1
                taps = [
                    data[b, ch, te.min(te.max(y * sh + (r - top), 0), last), x - left]
                    for r in range(kh)
                ]
                if left == 0 and const_int(extra_w) == 0:
                    return _max_chain(taps)
                inside = te.all(x >= left, x < w + left)
                return te.if_then_else(inside, _max_chain(taps), fill)

        rows = te.compute(
            (n, c, out_h, width),
            column_max,
            name="pool_max_rows",
            tag=tag.WINDOW_ROWS,
        )
        return te.compute(
            (n, c, out_h, out_w),
            lambda b, ch, y, x: _max_chain([rows[b, ch, y, x * sw + r * dw] for r in range(kw)]),
            name="pool_max",
            tag=tag.POOL_MAX,
            attrs=attrs,
        )
    if pool_type == "max" and kh * kw <= 16:
        # A small window as a chain of element-wise maxima, like the separable form: a window of
        # only -inf gives -inf, te.gradient sends a tie's gradient to one element (PyTorch's),
        # and no maximum with the reduction's identity. One thread, same values: 3x3 s2 p1 on
        # (1, 128, 28, 28) 30.7 -> 27.6 us, 3x3 s1 p1 on (1, 64, 56, 56) 94 -> 79 us, 2x2 s2 and
        # unpadded 3x3 s2 unchanged. Larger windows stay reductions (a loop, not unrolled code).
        return te.compute(
            (n, c, out_h, out_w),
            lambda b, ch, y, x: _max_chain(
                [
                    padded[b, ch, y * sh + i * dh, x * sw + j * dw]
                    for i in range(kh)
                    for j in range(kw)
                ]
            ),
            name="pool_max",
            tag=tag.POOL_MAX,
            attrs=attrs,
        )
    if pool_type == "max":
        return te.compute(
            (n, c, out_h, out_w),
            lambda b, ch, y, x: te.max(
                padded[b, ch, y * sh + ry * dh, x * sw + rx * dw], axis=[ry, rx]
            ),
            name="pool_max",
            tag=tag.POOL_MAX,
            attrs=attrs,
        )
    # float16/bfloat16 windows are summed and divided in float32, rounded back once (as
    # PyTorch's CPU pools): a float16 sum of a large window loses its small taps.
    acc = accumulate_dtype(data.dtype)
    if kh * kw <= 16:
        # A small window as one sum of its taps, each window column summed down its rows
        # first: taps of one row at neighbouring columns (x * s + j) then read the same
        # vectors (strided_groups.h in the code generator), and the column sums are added as
        # whole vectors before their elements are picked apart (a 2x2 stride-2 pool: 4 loads,
        # 2 shuffles and 3 adds per 16 outputs, against 8 loads, 4 shuffles and 4 adds of a
        # reduction from 0). The sum's order differs from PyTorch's (row by row) by rounding.
        def window_sum(b: Any, ch: Any, y: Any, x: Any) -> Any:
            columns = []
            for j in range(kw):
                rows = [
                    cast_to(padded[b, ch, y * sh + i * dh, x * sw + j * dw], acc) for i in range(kh)
                ]
                columns.append(_sum_chain(rows))
            return _sum_chain(columns)

        total = te.compute((n, c, out_h, out_w), window_sum, name="pool_sum", tag=tag.INJECTIVE)
    else:
        total = te.compute(
            (n, c, out_h, out_w),
            lambda b, ch, y, x: te.sum(
                cast_to(padded[b, ch, y * sh + ry * dh, x * sw + rx * dw], acc), axis=[ry, rx]
            ),
            name="pool_sum",
            tag=tag.COMM_REDUCE,
        )

    def taps(start: Any, k: int, d: int, lo: Any, hi: Any) -> Any:
        # How many of the window's taps start + r*d (0 <= r < k) fall in [lo, hi).
        first = te.max(te.floordiv(lo - start + d - 1, d), 0)
        last = te.min(te.floordiv(hi - start + d - 1, d), k)
        return te.max(last - first, 0)

    def divisor(y: Any, x: Any) -> te.Expr:
        ys, xs = y * sh - top, x * sw - left
        if count_include_pad:
            count = taps(ys, kh, dh, -top, h + bottom) * taps(xs, kw, dw, -left, w + right)
        else:
            count = taps(ys, kh, dh, 0, h) * taps(xs, kw, dw, 0, w)
        return cast_to(te.max(count, 1), acc)

    return te.compute(
        (n, c, out_h, out_w),
        lambda b, ch, y, x: cast_to(total[b, ch, y, x] / divisor(y, x), data.dtype),
        name="pool_avg",
        tag=tag.POOL_AVG,
        attrs=attrs,
    )


def pool(
    data: Tensor,
    kernel: IntPair,
    stride: IntPair,
    padding: PaddingArg,
    pool_type: str,
    ceil_mode: bool = False,
    layout: str = "NCHW",
    count_include_pad: bool = True,
) -> Tensor:
    """Classic TVM's ``topi.nn.pool``: :func:`pool2d` without dilation.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.pool(tvm.placeholder((1, 1, 6, 6)), (2, 2), (2, 2), (0, 0), "max").shape
        (1, 1, 3, 3)
    """
    return pool2d(data, kernel, stride, 1, padding, pool_type, ceil_mode, layout, count_include_pad)


def max_pool2d(
    data: Tensor,
    pool_size: IntPair,
    strides: IntPair | None = None,
    padding: PaddingArg = 0,
    dilation: IntPair = 1,
    ceil_mode: bool = False,
    layout: str = "NCHW",
) -> Tensor:
    """Max pooling (``torch.nn.functional.max_pool2d``); padded elements never win.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.max_pool2d(tvm.placeholder((1, 1, 5, 5)), 2, ceil_mode=True).shape
        (1, 1, 3, 3)
    """
    strides = pool_size if strides is None else strides
    return pool2d(data, pool_size, strides, dilation, padding, "max", ceil_mode, layout)


def avg_pool2d(
    data: Tensor,
    pool_size: IntPair,
    strides: IntPair | None = None,
    padding: PaddingArg = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    layout: str = "NCHW",
    dilation: IntPair = 1,
) -> Tensor:
    """Average pooling (``torch.nn.functional.avg_pool2d``).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.avg_pool2d(tvm.placeholder((1, 1, 5, 5)), 3, 2, 1).op.tag
        'pool_avg'
    """
    strides = pool_size if strides is None else strides
    return pool2d(
        data, pool_size, strides, dilation, padding, "avg", ceil_mode, layout, count_include_pad
    )


def _adaptive_pool2d(data: Tensor, output_size: IntPair, pool_type: str) -> Tensor:
    what = f"adaptive_{pool_type}_pool2d"
    check_tensor(data, f"data of {what}")
    check_ndim(data, 4, f"data of {what}", "NCHW")
    if pool_type == "avg" and not is_float(data.dtype):
        raise TVMTypeError(f"{what} needs a float tensor, found {data.dtype}; cast it first")
    oh, ow = positive_pair(output_size, f"output_size of {what}")
    n, c, h, w = data.shape

    def window(i: Any, size: Any, out: int) -> tuple[Any, Any]:
        # PyTorch's windows: [floor(i*size/out), ceil((i+1)*size/out)).
        start = te.floordiv(i * size, out)
        end = te.floordiv((i + 1) * size + out - 1, out)
        return start, end

    def max_window(size: Any, out: int) -> Any:
        c = const_int(size)
        if c is not None:
            return max(-(-((i + 1) * c) // out) - (i * c) // out for i in range(out))
        return te.floordiv(size + out - 1, out) + 1

    ry = te.reduce_axis((0, max_window(h, oh)), name="ry")
    rx = te.reduce_axis((0, max_window(w, ow)), name="rx")
    # What the padded lanes and out-of-window taps read: what never changes the result. For a
    # float max that is -inf, not the lowest finite value (a window of -inf has maximum -inf,
    # as in PyTorch; the max reduction itself starts from -inf).
    # An average of float16/bfloat16 is summed and divided in float32 (a global pool sums
    # thousands of taps), rounded back once.
    acc = accumulate_dtype(data.dtype) if pool_type == "avg" else data.dtype
    fill = te.const(0, acc)
    if pool_type == "max":
        float_fill = is_float(data.dtype)
        fill = te.const(float("-inf"), data.dtype) if float_fill else te.min_value(data.dtype)
    reducer = te.max if pool_type == "max" else te.sum

    def at(*index: Any) -> te.Expr:
        return cast_to(data[index], acc)

    def fcompute(b: Any, ch: Any, y: Any, x: Any) -> te.Expr:
        if oh == 1 and ow == 1:
            # A global pool: one window, the whole image, read directly (no window bounds or
            # guard), so the scheduler sees each image row as a contiguous run it adds as one
            # vector (rule_reduction.cc).
            gy = te.reduce_axis((0, h), name="ry")
            cw, chh = const_int(w), const_int(h)
            if cw is not None and chh is not None and cw % 2 == 1 and 3 <= cw < 16:
                size = chh * cw
                if 40 < size <= 256:
                    # Odd rows of an image of 41-256 elements (a 7x7 one): read as one
                    # run of h * w elements padded to the next power of two with the
                    # reducer's identity (masked-off lanes of the last load), a few
                    # full-width loads and one lane tree instead of a short masked load per
                    # row (7x7: 1.82 -> 1.57 us for 512 channels, 9x9 -25%). The index is
                    # int64 before its // and %: on a compact input the simplifier folds
                    # (k // w) * w + k % w back to k, a contiguous load (in int32 the
                    # widened vector index stays a cast and the load a gather, 3x slower).
                    # Smaller images (5x5, 5x7) were 9-14% slower so (larger ones not measured):
                    # rows, as below.
                    k = te.reduce_axis((0, 1 << (size - 1).bit_length()), name="rk")
                    k64 = cast_to(k, "int64")
                    flat = at(b, ch, te.floordiv(k64, cw), te.floormod(k64, cw))
                    return reducer(te.if_then_else(k < size, flat, fill), axis=[k])
                # An odd row: padded to the next power of two with the reducer's identity, so
                # its lanes end in a tree of log2 steps instead of a chain of w scalar ones;
                # the pad is a masked-off lane of the row's one load.
                gx = te.reduce_axis((0, 1 << (cw - 1).bit_length()), name="rx")
                row = te.if_then_else(gx < cw, at(b, ch, gy, gx), fill)
                return reducer(row, axis=[gy, gx])
            gx = te.reduce_axis((0, w), name="rx")
            return reducer(at(b, ch, gy, gx), axis=[gy, gx])
        ys, ye = window(y, h, oh)
        xs, xe = window(x, w, ow)
        inside = te.all(ry < ye - ys, rx < xe - xs)
        value = te.if_then_else(inside, at(b, ch, ys + ry, xs + rx), fill)
        return reducer(value, axis=[ry, rx])

    attrs = {"layout": "NCHW", "output_size": [oh, ow]}
    pooled = te.compute(
        (n, c, oh, ow),
        fcompute,
        name=f"adaptive_pool_{pool_type}",
        tag=tag.ADAPTIVE_POOL_MAX if pool_type == "max" else tag.COMM_REDUCE,
        attrs=attrs,
    )
    if pool_type == "max":
        return pooled

    def mean(b: Any, ch: Any, y: Any, x: Any) -> te.Expr:
        ys, ye = window(y, h, oh)
        xs, xe = window(x, w, ow)
        return cast_to(pooled[b, ch, y, x] / cast_to((ye - ys) * (xe - xs), acc), data.dtype)

    return te.compute(
        (n, c, oh, ow), mean, name="adaptive_pool_avg", tag=tag.ADAPTIVE_POOL_AVG, attrs=attrs
    )


def adaptive_avg_pool2d(data: Tensor, output_size: IntPair) -> Tensor:
    """Average over PyTorch's adaptive windows, giving an (oh, ow) output whatever the input
    size (``torch.nn.functional.adaptive_avg_pool2d``); ``output_size=1`` is a global pool.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.adaptive_avg_pool2d(tvm.placeholder((1, 8, 7, 7)), 1).shape
        (1, 8, 1, 1)
    """
    return _adaptive_pool2d(data, output_size, "avg")


def adaptive_max_pool2d(data: Tensor, output_size: IntPair) -> Tensor:
    """Maximum over PyTorch's adaptive windows (``torch.nn.functional.adaptive_max_pool2d``).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.adaptive_max_pool2d(tvm.placeholder((1, 2, 5, 5)), (2, 3)).shape
        (1, 2, 2, 3)
    """
    return _adaptive_pool2d(data, output_size, "max")


def adaptive_pool(
    data: Tensor, output_size: IntPair, pool_type: str, layout: str = "NCHW"
) -> Tensor:
    """TVM's entry point for :func:`adaptive_avg_pool2d` / :func:`adaptive_max_pool2d`.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.adaptive_pool(tvm.placeholder((1, 2, 9, 9)), (3, 3), "max").op.tag
        'adaptive_pool_max'
    """
    if layout != "NCHW":
        raise TVMValueError(f"adaptive_pool supports layout 'NCHW', found {layout!r}")
    if pool_type not in ("max", "avg"):
        raise TVMValueError(f"pool_type must be 'max' or 'avg', found {pool_type!r}")
    return _adaptive_pool2d(data, output_size, pool_type)


def global_pool(data: Tensor, pool_type: str, layout: str = "NCHW") -> Tensor:
    """Max or average over all of H and W, keeping them as size-1 dimensions (TVM's).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.global_pool(tvm.placeholder((2, 4, 3, 3)), "avg").shape
        (2, 4, 1, 1)
    """
    if layout != "NCHW":
        raise TVMValueError(f"global_pool supports layout 'NCHW', found {layout!r}")
    if pool_type not in ("max", "avg"):
        raise TVMValueError(f"pool_type must be 'max' or 'avg', found {pool_type!r}")
    return _adaptive_pool2d(data, 1, pool_type)
