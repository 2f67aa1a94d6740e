"""2-d convolution in the blocked ``NCHW[x]c`` layout with a pre-packed ``OIHW[x]i[y]o`` kernel.

Channels are cut into blocks: the data is (N, C/ic_bn, H, W, ic_bn), the kernel
(O/oc_bn, C/ic_bn, kh, kw, ic_bn, oc_bn) and the output (N, O/oc_bn, OH, OW, oc_bn), so the
innermost loop of the output runs over ``oc_bn`` contiguous channels: one vector register, with
the kernel packed once ahead of time. ``layout_transform`` (or the helpers here) packs and
unpacks. The compute reduces over input-channel blocks, the kernel window and the channels
inside a block as separate axes (no division in the index), tagged ``"conv2d_NCHWc"``.

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> X = tvm.placeholder((1, 8, 6, 6), name="X")
    >>> W = tvm.placeholder((16, 8, 3, 3), name="W")
    >>> Xc = topi.nn.pack_nchwc(X, 4)
    >>> Wc = topi.nn.pack_oihwio(W, 4, 8)
    >>> Yc = topi.nn.conv2d_NCHWc(Xc, Wc, 1, 1, 1, "NCHW4c", "NCHW8c")
    >>> Yc.shape, Yc.op.tag
    ((1, 2, 6, 6, 8), 'conv2d_NCHWc')
    >>> topi.nn.unpack_nchwc(Yc).shape
    (1, 16, 6, 6)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ... import te
from ...error import TVMTypeError, TVMValueError
from .. import tag
from ..transform import layout_transform
from ..utils import (
    Tensor,
    cast_to,
    check_ndim,
    check_tensor,
    get_const_int,
    positive_pair,
    same_dim,
)
from .conv2d import conv_output_size
from .pad import PaddingArg, get_pad_tuple, pad

IntPair = int | Sequence[int]


def pack_nchwc(data: Tensor, c_bn: int) -> Tensor:
    """NCHW data as NCHW[c_bn]c.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.pack_nchwc(tvm.placeholder((2, 16, 5, 5)), 8).shape
        (2, 2, 5, 5, 8)
    """
    return layout_transform(data, "NCHW", f"NCHW{c_bn}c")


def unpack_nchwc(data: Tensor) -> Tensor:
    """NCHW[x]c data back to NCHW.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.unpack_nchwc(tvm.placeholder((2, 2, 5, 5, 8))).shape
        (2, 16, 5, 5)
    """
    check_tensor(data, "data of unpack_nchwc")
    check_ndim(data, 5, "data of unpack_nchwc", "NCHW[x]c")
    c_bn = get_const_int(data.shape[4], "the channel block of unpack_nchwc")
    return layout_transform(data, f"NCHW{c_bn}c", "NCHW")


def pack_oihwio(kernel: Tensor, ic_bn: int, oc_bn: int) -> Tensor:
    """An OIHW kernel as OIHW[ic_bn]i[oc_bn]o, the packed kernel of :func:`conv2d_NCHWc`.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.pack_oihwio(tvm.placeholder((16, 8, 3, 3)), 4, 8).shape
        (2, 2, 3, 3, 4, 8)
    """
    return layout_transform(kernel, "OIHW", f"OIHW{ic_bn}i{oc_bn}o")


def _block(layout: str, what: str) -> int:
    m = re.fullmatch(r"NCHW(\d+)c", layout)
    if not m:
        raise TVMValueError(f"{what} must look like 'NCHW8c', found {layout!r}")
    return int(m.group(1))


def conv2d_NCHWc(
    data: Tensor,
    kernel: Tensor,
    stride: IntPair,
    padding: PaddingArg,
    dilation: IntPair,
    layout: str,
    out_layout: str,
    out_dtype: str | None = None,
) -> Tensor:
    """Convolution of NCHW[x]c ``data`` with an OIHW[x]i[y]o ``kernel`` (TVM's signature);
    ``layout`` is the data's layout (``"NCHW4c"``), ``out_layout`` the output's (``"NCHW8c"``),
    whose block must match the kernel's output-channel block.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X = tvm.placeholder((tvm.var("n"), 2, 7, 7, 4))
        >>> W = tvm.placeholder((3, 2, 3, 3, 4, 8))
        >>> topi.nn.conv2d_NCHWc(X, W, 2, 1, 1, "NCHW4c", "NCHW8c").shape
        (n, 3, 4, 4, 8)
    """
    check_tensor(data, "data of conv2d_NCHWc")
    check_tensor(kernel, "kernel of conv2d_NCHWc")
    check_ndim(data, 5, "data of conv2d_NCHWc", "NCHW[x]c")
    check_ndim(kernel, 6, "kernel of conv2d_NCHWc", "OIHW[x]i[y]o")
    if data.dtype != kernel.dtype:
        raise TVMTypeError(
            f"conv2d_NCHWc: data is {data.dtype} and kernel is {kernel.dtype}; cast one"
        )
    ic_bn = _block(layout, "layout of conv2d_NCHWc")
    oc_bn = _block(out_layout, "out_layout of conv2d_NCHWc")
    n, ic_chunk, in_h, in_w, data_bn = data.shape
    oc_chunk, k_ic_chunk, kh, kw, k_ic_bn, k_oc_bn = kernel.shape
    if get_const_int(data_bn, "the data's channel block") != ic_bn:
        raise TVMValueError(f"conv2d_NCHWc: layout {layout!r} but the data's block is {data_bn}")
    if get_const_int(k_ic_bn, "the kernel's input block") != ic_bn or not same_dim(
        k_ic_chunk, ic_chunk
    ):
        raise TVMValueError(
            f"conv2d_NCHWc: the kernel {tuple(kernel.shape)} does not match data "
            f"{tuple(data.shape)} (expected {ic_chunk} input blocks of {ic_bn})"
        )
    if get_const_int(k_oc_bn, "the kernel's output block") != oc_bn:
        raise TVMValueError(
            f"conv2d_NCHWc: out_layout {out_layout!r} but the kernel's output block is {k_oc_bn}"
        )
    sh, sw = positive_pair(stride, "stride of conv2d_NCHWc")
    dh, dw = positive_pair(dilation, "dilation of conv2d_NCHWc")
    kh = get_const_int(kh, "the kernel height of conv2d_NCHWc")
    kw = get_const_int(kw, "the kernel width of conv2d_NCHWc")
    pads = get_pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1))
    out_h = conv_output_size(in_h, kh, sh, dh, pads[0], pads[2])
    out_w = conv_output_size(in_w, kw, sw, dw, pads[1], pads[3])
    padded = data
    if any(pads):
        padded = pad(
            data,
            [0, 0, pads[0], pads[1], 0],
            [0, 0, pads[2], pads[3], 0],
            name="data_pad",
        )
    out_dtype = out_dtype or data.dtype
    icc = te.reduce_axis((0, ic_chunk), name="icc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    icb = te.reduce_axis((0, ic_bn), name="icb")

    def fcompute(b: Any, occ: Any, y: Any, x: Any, ocb: Any) -> te.Expr:
        value = padded[b, icc, y * sh + ry * dh, x * sw + rx * dw, icb]
        weight = kernel[occ, icc, ry, rx, icb, ocb]
        return te.sum(
            cast_to(value, out_dtype) * cast_to(weight, out_dtype),
            axis=[icc, ry, rx, icb],
        )

    return te.compute(
        (n, oc_chunk, out_h, out_w, oc_bn),
        fcompute,
        name="conv2d_NCHWc",
        tag=tag.CONV2D_NCHWC,
        attrs={
            "layout": layout,
            "out_layout": out_layout,
            "strides": [sh, sw],
            "padding": list(pads),
            "dilation": [dh, dw],
        },
    )
