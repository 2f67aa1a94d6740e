"""2-d convolution in NCHW layout: plain, grouped and depthwise.

The input is padded by a separate ``"injective,pad"`` stage (skipped when there is no padding;
automatic schedules inline it), then one reduction compute over input channels and the kernel
window, tagged ``"conv2d_nchw"``, ``"group_conv2d_nchw"`` or ``"depthwise_conv2d_nchw"``, with
``attrs`` giving strides, padding, dilation and groups. Batch, channels and spatial sizes may be
symbolic; the kernel size must be constant.

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> X = tvm.placeholder((tvm.var("n"), 2, 5, 5), name="X")
    >>> W = tvm.placeholder((4, 2, 3, 3), name="W")
    >>> Y = topi.nn.conv2d(X, W, strides=2, padding=1)
    >>> Y.shape, Y.op.tag
    ((n, 4, 3, 3), 'conv2d_nchw')
    >>> f = tvm.build(tvm.create_schedule(Y.op), [X, W, Y])
    >>> y = np.empty((1, 4, 3, 3), "float32")
    >>> f(np.ones((1, 2, 5, 5), "float32"), np.ones((4, 2, 3, 3), "float32"), y)
    >>> y[0, 0].tolist()
    [[8.0, 12.0, 8.0], [12.0, 18.0, 12.0], [8.0, 12.0, 8.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import te
from ...error import TVMTypeError, TVMValueError
from .. import tag
from ..utils import (
    Tensor,
    cast_to,
    check_int,
    check_ndim,
    check_tensor,
    const_int,
    get_const_int,
    positive_pair,
    same_dim,
)
from .pad import PaddingArg, get_pad_tuple, pad

IntPair = int | Sequence[int]


def conv_output_size(
    size: Any, kernel: int, stride: int, dilation: int, before: int, after: int
) -> Any:
    """The output size of a convolution or pooling window along one dimension.

    Example:
        >>> from pytvmbridge.topi.nn.conv2d import conv_output_size
        >>> conv_output_size(224, 7, 2, 1, 3, 3)
        112
    """
    span = dilation * (kernel - 1) + 1
    c = const_int(size)
    if c is not None:
        out = (c + before + after - span) // stride + 1
        if out < 1:
            raise TVMValueError(
                f"the window ({span} with dilation) does not fit the padded input "
                f"({c} + {before} + {after})"
            )
        return out
    if stride == 1:
        # size + offset, without floordiv(..., 1) + 1: a "same" convolution's output is the
        # input's own size variable, so x + conv(x) broadcasts (with floordiv it could not be
        # shown equal: dynamic sizes sent a residual block back to PyTorch)
        offset = before + after - span + 1
        return size if offset == 0 else size + offset
    return te.floordiv(size + (before + after - span), stride) + 1


def _padded(data: Tensor, pads: tuple[int, int, int, int], value: float = 0.0) -> Tensor:
    top, left, bottom, right = pads
    if not any(pads):
        return data
    return pad(data, [0, 0, top, left], [0, 0, bottom, right], value, name="pad_temp")


def _conv2d_nchw(
    data: Tensor,
    kernel: Tensor,
    strides: IntPair,
    padding: PaddingArg,
    dilation: IntPair,
    groups: int,
    out_dtype: str | None,
    what: str,
) -> Tensor:
    check_tensor(data, f"data of {what}")
    check_tensor(kernel, f"kernel of {what}")
    check_ndim(data, 4, f"data of {what}", "NCHW")
    check_ndim(kernel, 4, f"kernel of {what}", "OIHW")
    if data.dtype != kernel.dtype:
        raise TVMTypeError(f"{what}: data is {data.dtype} and kernel is {kernel.dtype}; cast one")
    sh, sw = positive_pair(strides, f"strides of {what}")
    dh, dw = positive_pair(dilation, f"dilation of {what}")
    groups = check_int(groups, f"groups of {what}")
    if groups < 1:
        raise TVMValueError(f"groups of {what} must be an int >= 1, found {groups!r}")
    batch, in_c, in_h, in_w = data.shape
    out_c = kernel.shape[0]
    kh = get_const_int(kernel.shape[2], f"the kernel height of {what}")
    kw = get_const_int(kernel.shape[3], f"the kernel width of {what}")
    pads = get_pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1))
    group_in = kernel.shape[1]  # input channels per group
    if groups == 1:
        if not same_dim(in_c, group_in):
            raise TVMValueError(
                f"{what}: data has {in_c} channels but the kernel expects {group_in} "
                f"(kernel shape {tuple(kernel.shape)}, OIHW)"
            )
    else:
        oc, ic, gi = const_int(out_c), const_int(in_c), const_int(group_in)
        if oc is not None and oc % groups:
            raise TVMValueError(f"{what}: {oc} output channels do not divide into {groups} groups")
        if ic is not None and gi is not None and ic != gi * groups:
            raise TVMValueError(
                f"{what}: data has {ic} channels but the kernel expects {gi} per group x "
                f"{groups} groups = {gi * groups}"
            )
    out_h = conv_output_size(in_h, kh, sh, dh, pads[0], pads[2])
    out_w = conv_output_size(in_w, kw, sw, dw, pads[1], pads[3])
    out_dtype = out_dtype or data.dtype
    padded = _padded(data, pads)
    rc = te.reduce_axis((0, group_in), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    if groups == 1:
        op_tag = tag.CONV2D_NCHW
    elif const_int(group_in) == 1:
        op_tag = tag.DEPTHWISE_CONV2D_NCHW
    else:
        op_tag = tag.GROUP_CONV2D_NCHW
    group_out = (
        te.floordiv(out_c, groups) if const_int(out_c) is None else const_int(out_c) // groups
    )

    def fcompute(n: Any, o: Any, y: Any, x: Any) -> te.Expr:
        if groups == 1:
            c = rc
        elif const_int(group_in) == 1:
            c = te.floordiv(o, group_out) if const_int(group_out) != 1 else o
        else:
            c = te.floordiv(o, group_out) * group_in + rc
        value = padded[n, c, y * sh + ry * dh, x * sw + rx * dw]
        weight = kernel[o, rc, ry, rx]
        axes = [ry, rx] if op_tag == tag.DEPTHWISE_CONV2D_NCHW else [rc, ry, rx]
        if op_tag == tag.DEPTHWISE_CONV2D_NCHW:
            weight = kernel[o, 0, ry, rx]
        return te.sum(cast_to(value, out_dtype) * cast_to(weight, out_dtype), axis=axes)

    return te.compute(
        (batch, out_c, out_h, out_w),
        fcompute,
        name=f"T_{op_tag}",
        tag=op_tag,
        attrs={
            "layout": "NCHW",
            "strides": [sh, sw],
            "padding": list(pads),
            "dilation": [dh, dw],
            "groups": groups,
        },
    )


def conv2d(
    input: Tensor,
    filter: Tensor,
    strides: IntPair = 1,
    padding: PaddingArg = 0,
    dilation: IntPair = 1,
    data_layout: str = "NCHW",
    kernel_layout: str = "",
    out_dtype: str | None = None,
    groups: int = 1,
    layout: str | None = None,
) -> Tensor:
    """2-d convolution (cross-correlation, as in PyTorch) of NCHW ``input`` with an OIHW
    ``filter`` of shape (out_channels, in_channels // groups, kh, kw).

    ``padding`` is an int, a pair (h, w), a 4-tuple (top, left, bottom, right), ``"SAME"`` or
    ``"VALID"``; ``strides`` and ``dilation`` an int or a pair. ``groups`` splits the channels
    (``groups == in_channels`` is a depthwise convolution). ``layout`` is classic TVM's name for
    ``data_layout``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X = tvm.placeholder((1, 8, 9, 9), name="X")
        >>> W = tvm.placeholder((8, 1, 3, 3), name="W")
        >>> Y = topi.nn.conv2d(X, W, padding=(1, 1), groups=8)
        >>> Y.shape, Y.op.tag
        ((1, 8, 9, 9), 'depthwise_conv2d_nchw')
    """
    if layout is not None:
        data_layout = layout
    if data_layout != "NCHW" or kernel_layout not in ("", "OIHW"):
        raise TVMValueError(
            f"conv2d supports data_layout 'NCHW' with kernel_layout 'OIHW', found "
            f"{data_layout!r}/{kernel_layout!r}; use conv2d_NCHWc for the blocked layout"
        )
    return _conv2d_nchw(input, filter, strides, padding, dilation, groups, out_dtype, "conv2d")


def conv2d_nchw(
    Input: Tensor,
    Filter: Tensor,
    stride: IntPair,
    padding: PaddingArg,
    dilation: IntPair,
    out_dtype: str | None = None,
) -> Tensor:
    """:func:`conv2d` in NCHW/OIHW with TVM's positional signature.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X = tvm.placeholder((1, 3, 7, 7)); W = tvm.placeholder((2, 3, 3, 3))
        >>> topi.nn.conv2d_nchw(X, W, 1, 0, 1).shape
        (1, 2, 5, 5)
    """
    return _conv2d_nchw(Input, Filter, stride, padding, dilation, 1, out_dtype, "conv2d_nchw")


def group_conv2d_nchw(
    Input: Tensor,
    Filter: Tensor,
    stride: IntPair,
    padding: PaddingArg,
    dilation: IntPair,
    groups: int,
    out_dtype: str | None = None,
) -> Tensor:
    """Grouped :func:`conv2d`: Filter is (out_channels, in_channels // groups, kh, kw).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X = tvm.placeholder((1, 4, 5, 5)); W = tvm.placeholder((6, 2, 3, 3))
        >>> topi.nn.group_conv2d_nchw(X, W, 1, 1, 1, groups=2).op.tag
        'group_conv2d_nchw'
    """
    return _conv2d_nchw(
        Input, Filter, stride, padding, dilation, groups, out_dtype, "group_conv2d_nchw"
    )


def depthwise_conv2d_nchw(
    Input: Tensor,
    Filter: Tensor,
    stride: IntPair,
    padding: PaddingArg,
    dilation: IntPair,
    out_dtype: str | None = None,
) -> Tensor:
    """Depthwise convolution, TVM's layout: Filter is (in_channels, channel_multiplier, kh, kw);
    output channel ``c * multiplier + m`` convolves input channel ``c`` with ``Filter[c, m]``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X = tvm.placeholder((1, 3, 5, 5)); W = tvm.placeholder((3, 2, 3, 3))
        >>> topi.nn.depthwise_conv2d_nchw(X, W, 1, 1, 1).shape
        (1, 6, 5, 5)
    """
    check_tensor(Filter, "Filter of depthwise_conv2d_nchw")
    check_ndim(Filter, 4, "Filter of depthwise_conv2d_nchw", "C, multiplier, kh, kw")
    check_tensor(Input, "Input of depthwise_conv2d_nchw")
    check_ndim(Input, 4, "Input of depthwise_conv2d_nchw", "NCHW")
    channels, multiplier = Filter.shape[0], Filter.shape[1]
    if not same_dim(channels, Input.shape[1]):
        raise TVMValueError(
            f"depthwise_conv2d_nchw: Input has {Input.shape[1]} channels, Filter {channels}"
        )
    groups = get_const_int(channels, "the channel count of depthwise_conv2d_nchw")
    # The same computation as a grouped convolution with one input channel per group.
    oihw = te.compute(
        (channels * multiplier, 1, Filter.shape[2], Filter.shape[3]),
        lambda o, i, y, x: Filter[te.floordiv(o, multiplier), te.floormod(o, multiplier), y, x],
        name="Filter_oihw",
        tag=tag.INJECTIVE,
    )
    return _conv2d_nchw(
        Input, oihw, stride, padding, dilation, groups, out_dtype, "depthwise_conv2d_nchw"
    )
