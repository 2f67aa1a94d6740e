"""Convolution weights packed once, not on every call (what freezing buys Inductor).

``auto_schedule`` packs a convolution's OIHW weight into panels ``[O/w, I, kh, kw, w]`` inside
the kernel, on every call. When the weight is a graph input (a parameter), the graph compiler
instead declares the kernel argument in the packed layout (:func:`conv2d_prepacked`; the rule
sees ready-made panels and packs nothing) and the graph's derived-tensor cache
(:class:`.fold.DerivedCache`) packs the tensor in PyTorch once, again only when it changes.

Example:
    >>> import torch
    >>> w = torch.arange(2 * 3 * 1 * 1, dtype=torch.float32).reshape(2, 3, 1, 1)
    >>> pack_weight(w, 2).shape
    torch.Size([1, 3, 1, 1, 2])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .. import te, topi
from ..topi import tag


def pack_weight(weight: torch.Tensor, width: int) -> torch.Tensor:
    """OIHW -> [ceil(O/width), I, kh, kw, width], the last panel padded with zeros.

    Example:
        >>> import torch
        >>> pack_weight(torch.zeros(64, 3, 3, 3), 32).shape
        torch.Size([2, 3, 3, 3, 32])
        >>> pack_weight(torch.ones(24, 3, 1, 1), 32)[0, 0, 0, 0, 23:25].tolist()
        [1.0, 0.0]
    """
    o, i, kh, kw = weight.shape
    w = weight.detach()
    if o % width:
        w = torch.nn.functional.pad(w, (0, 0, 0, 0, 0, 0, 0, width - o % width))
    return w.reshape(-1, width, i, kh, kw).permute(0, 2, 3, 4, 1).contiguous()


def read_weight(w: te.Tensor) -> Callable[[Any, Any, Any, Any], Any]:
    """``read(o, i, ry, rx)``: element ``[o, i, ry, rx]`` of a convolution weight held OIHW or
    packed in panels ``[O/w, I, kh, kw, w]``."""
    if len(w.shape) == 4:
        return lambda o, i, ry, rx: w[o, i, ry, rx]
    width = w.shape[4]
    return lambda o, i, ry, rx: w[te.floordiv(o, width), i, ry, rx, te.floormod(o, width)]


def nchw_conv_compute(
    shape: Any, fcompute: Callable[..., Any], stride: Any, padding: Any, dilation: Any
) -> te.Tensor:
    """The NCHW convolution output ``shape`` computed by ``fcompute``, named and tagged as
    topi's (the automatic scheduler recognises convolutions by that tag and these attrs)."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    return te.compute(
        shape,
        fcompute,
        name="T_conv2d_nchw",
        tag=tag.CONV2D_NCHW,
        attrs={"layout": "NCHW", "strides": [sh, sw], "padding": [ph, pw, ph, pw],
               "dilation": [dh, dw], "groups": 1},
    )  # fmt: skip


def conv2d_prepacked(
    x: te.Tensor, packed: te.Tensor, stride: Any, padding: Any, dilation: Any
) -> te.Tensor:
    """NCHW convolution reading a ``[O/w, I, kh, kw, w]`` weight (groups = 1)."""
    _, in_c, kh, kw, width = packed.shape
    n, _, h, w = x.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    out_h = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    out_w = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    data = topi.nn.pad(x, [0, 0, ph, pw], [0, 0, ph, pw], name="pad_temp") if ph or pw else x
    rc = te.reduce_axis((0, in_c), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    out_c = packed.shape[0] * width
    weight = read_weight(packed)

    def fcompute(b: Any, o: Any, y: Any, xx: Any) -> te.Expr:
        value = data[b, rc, y * sh + ry * dh, xx * sw + rx * dw]
        return te.sum(value * weight(o, rc, ry, rx), axis=[rc, ry, rx])

    return nchw_conv_compute((n, out_c, out_h, out_w), fcompute, stride, padding, dilation)


__all__ = ["conv2d_prepacked", "pack_weight"]
