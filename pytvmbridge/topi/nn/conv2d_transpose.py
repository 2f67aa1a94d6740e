"""Transposed 2-d convolution (the gradient of conv2d with respect to its input), NCHW.

Computed as TVM does: the input is dilated by the stride (zeros between elements) and padded by
``dilation * (k - 1) - padding`` (plus ``output_padding`` at the bottom/right) in one
``"injective,pad"`` stage, then convolved with the spatially flipped kernel, whose input and
output channel roles are swapped (tag ``"conv2d_transpose_nchw"``).

Example:
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> X = tvm.placeholder((tvm.var("n"), 4, 5, 5), name="X")
    >>> W = tvm.placeholder((4, 3, 3, 3), name="W")  # (in_channels, out_channels, kh, kw)
    >>> Y = topi.nn.conv2d_transpose_nchw(X, W, 2, 1, "float32", output_padding=1)
    >>> Y.shape, Y.op.tag
    ((n, 3, 10, 10), 'conv2d_transpose_nchw')
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
    pair,
    positive_pair,
    same_dim,
)
from .pad import PaddingArg, get_pad_tuple

IntPair = int | Sequence[int]


def conv2d_transpose_nchw(
    Input: Tensor,
    Filter: Tensor,
    strides: IntPair,
    padding: PaddingArg,
    out_dtype: str | None = None,
    output_padding: IntPair = 0,
    dilation: IntPair = 1,
    groups: int = 1,
) -> Tensor:
    """``torch.nn.functional.conv_transpose2d`` of NCHW ``Input`` with ``Filter`` of shape
    (in_channels, out_channels // groups, kh, kw) (TVM's IOHW). The output size is
    ``(H - 1) * stride - pad_top - pad_bottom + dilation * (kh - 1) + 1 + output_padding``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X = tvm.placeholder((1, 4, 3, 3)); W = tvm.placeholder((4, 2, 2, 2))
        >>> topi.nn.conv2d_transpose_nchw(X, W, 2, 0, groups=2).shape
        (1, 4, 6, 6)
    """
    what = "conv2d_transpose_nchw"
    check_tensor(Input, f"Input of {what}")
    check_tensor(Filter, f"Filter of {what}")
    check_ndim(Input, 4, f"Input of {what}", "NCHW")
    check_ndim(Filter, 4, f"Filter of {what}", "IOHW")
    if Input.dtype != Filter.dtype:
        raise TVMTypeError(f"{what}: Input is {Input.dtype} and Filter is {Filter.dtype}; cast one")
    sh, sw = positive_pair(strides, f"strides of {what}")
    dh, dw = positive_pair(dilation, f"dilation of {what}")
    oph, opw = pair(output_padding, f"output_padding of {what}")
    if not (0 <= oph < max(sh, dh) and 0 <= opw < max(sw, dw)):
        raise TVMValueError(
            f"output_padding of {what} must be smaller than the stride or the dilation, found "
            f"{output_padding!r}"
        )
    groups = check_int(groups, f"groups of {what}")
    if groups < 1:
        raise TVMValueError(f"groups of {what} must be an int >= 1, found {groups!r}")
    n, in_c, in_h, in_w = Input.shape
    if not same_dim(Filter.shape[0], in_c):
        raise TVMValueError(
            f"{what}: Input has {in_c} channels but Filter {tuple(Filter.shape)} expects "
            f"{Filter.shape[0]} (layout IOHW)"
        )
    ic = const_int(in_c)
    if groups > 1 and (ic is None or ic % groups):
        raise TVMValueError(f"{what}: {in_c} input channels do not divide into {groups} groups")
    kh = get_const_int(Filter.shape[2], f"the kernel height of {what}")
    kw = get_const_int(Filter.shape[3], f"the kernel width of {what}")
    top, left, bottom, right = get_pad_tuple(padding, (kh, kw))
    group_out = Filter.shape[1]
    out_c = group_out * groups if const_int(group_out) is None else const_int(group_out) * groups
    # Padding of the dilated input, so that a plain convolution gives the transposed one.
    bt, bl = dh * (kh - 1) - top, dw * (kw - 1) - left
    bb, br = dh * (kh - 1) - bottom + oph, dw * (kw - 1) - right + opw

    def span(size: Any, s: int) -> Any:
        c = const_int(size)
        return (c - 1) * s + 1 if c is not None else (size - 1) * s + 1

    pad_h = span(in_h, sh) + bt + bb
    pad_w = span(in_w, sw) + bl + br
    # Output size pad - d (k - 1): zero is an empty result (PyTorch's), below zero an error.
    if isinstance(pad_h, int) and pad_h < dh * (kh - 1):
        raise TVMValueError(f"{what}: the padding leaves fewer than zero output rows")
    if isinstance(pad_w, int) and pad_w < dw * (kw - 1):
        raise TVMValueError(f"{what}: the padding leaves fewer than zero output columns")
    zero = te.const(0, Input.dtype)

    def dilated(b: Any, c: Any, y: Any, x: Any) -> te.Expr:
        yy, xx = y - bt, x - bl
        conds = [yy >= 0, xx >= 0, yy < span(in_h, sh), xx < span(in_w, sw)]
        if sh > 1:
            conds.append(te.floormod(yy, sh) == 0)
        if sw > 1:
            conds.append(te.floormod(xx, sw) == 0)
        src_y = te.floordiv(yy, sh) if sh > 1 else yy
        src_x = te.floordiv(xx, sw) if sw > 1 else xx
        return te.if_then_else(te.all(*conds), Input[b, c, src_y, src_x], zero)

    padded = te.compute((n, in_c, pad_h, pad_w), dilated, name="data_dilate_pad", tag=tag.PAD)
    out_h = pad_h - dh * (kh - 1)
    out_w = pad_w - dw * (kw - 1)
    group_in = in_c if groups == 1 else ic // groups
    rc = te.reduce_axis((0, group_in), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    out_dtype = out_dtype or Input.dtype

    def fcompute(b: Any, o: Any, y: Any, x: Any) -> te.Expr:
        if groups == 1:
            c, oo = rc, o
        else:
            g = te.floordiv(o, group_out)
            c, oo = g * group_in + rc, te.floormod(o, group_out)
        value = padded[b, c, y + ry * dh, x + rx * dw]
        weight = Filter[c, oo, kh - 1 - ry, kw - 1 - rx]
        return te.sum(cast_to(value, out_dtype) * cast_to(weight, out_dtype), axis=[rc, ry, rx])

    return te.compute(
        (n, out_c, out_h, out_w),
        fcompute,
        name="T_conv2d_transpose_nchw",
        tag=tag.CONV2D_TRANSPOSE_NCHW,
        attrs={
            "strides": [sh, sw],
            "padding": [top, left, bottom, right],
            "output_padding": [oph, opw],
            "dilation": [dh, dw],
            "groups": groups,
        },
    )
