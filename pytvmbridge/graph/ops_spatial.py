"""ATen converters: spatial operators beyond ops.py's: 1-D and transposed convolutions, group
and instance norm, upsampling, adaptive max pooling, constant padding.

Registered into :data:`pytvmbridge.graph.ops.CONVERTERS` when :mod:`pytvmbridge.graph.ops` is
imported. ``aten.convolution`` keeps ops.py's converter for 2-d convolutions (blocked layouts,
pre-packed and Winograd weights) and wraps it: a 1-d convolution is that 2-d one over an image
of height 1, a transposed one is :func:`~pytvmbridge.topi.nn.conv2d_transpose_nchw` (1-d: of
height 1 as well). Upsampling arrives whole only from ``torch.export`` graphs (the nearest
overloads are left out of :func:`~pytvmbridge.graph.backend.core_decompositions` for that);
under ``torch.compile`` PyTorch's Python decompositions always split it into index arithmetic.

Example:
    >>> import torch
    >>> from pytvmbridge.graph.ops import CONVERTERS
    >>> torch.ops.aten.native_group_norm.default in CONVERTERS
    True
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .. import te, topi
from ..topi.utils import const_int
from .ops import ACCEPTS, CONVERTERS, OTHER_DTYPES, _register, in_float32, norm_statistics
from .promotion import INTEGER_DTYPES, number

aten = torch.ops.aten


def _val(node: Any) -> Any:
    return node.meta["val"]


def _static(*dims: Any) -> bool:
    return all(isinstance(d, int) for d in dims)


# --- convolution -----------------------------------------------------------------------------

_conv2d = CONVERTERS[aten.convolution.default]
_conv2d_accepts = ACCEPTS[aten.convolution.default]


def _one(value: Any) -> int:
    return value[0] if isinstance(value, (list, tuple)) else value


def _height_one(x: te.Tensor) -> te.Tensor:
    return topi.expand_dims(x, 2)


def _drop_height(y: te.Tensor) -> te.Tensor:
    n, c, _, length = y.shape
    return te.compute((n, c, length), lambda b, o, i: y[b, o, 0, i], name="T_conv1d",
                      tag=topi.tag.INJECTIVE)  # fmt: skip


@in_float32
def _conv_transpose(
    x: te.Tensor,
    w: te.Tensor,
    bias: te.Tensor | None,
    stride: Any,
    padding: Any,
    dilation: Any,
    output_padding: Any,
    groups: int,
) -> te.Tensor:
    out = topi.nn.conv2d_transpose_nchw(
        x, w, stride, padding, x.dtype, output_padding=output_padding, dilation=dilation,
        groups=groups,
    )  # fmt: skip
    return out if bias is None else topi.nn.bias_add(out, bias, axis=1)


@_register(aten.convolution.default)
def convolution(
    x: te.Tensor,
    w: te.Tensor,
    bias: te.Tensor | None,
    stride: Any,
    padding: Any,
    dilation: Any,
    transposed: bool,
    output_padding: Any,
    groups: int,
) -> te.Tensor:
    """``aten.convolution``: 1-d (an image of height 1) and transposed ones here, the 2-d
    ones by ops.py's converter, unchanged."""
    if len(w.shape) == 3:
        stride, padding, dilation = (1, _one(stride)), (0, _one(padding)), (1, _one(dilation))
        output_padding = (0, _one(output_padding))
        x, w = _height_one(x), _height_one(w)
        if transposed:
            out = _conv_transpose(x, w, bias, stride, padding, dilation, output_padding, groups)
        else:
            out = _conv2d(x, w, bias, stride, padding, dilation, False, (0, 0), groups)
        return _drop_height(out)
    if transposed:
        return _conv_transpose(x, w, bias, stride, padding, dilation, output_padding, groups)
    return _conv2d(x, w, bias, stride, padding, dilation, transposed, output_padding, groups)


def _convolution_accepts(node: torch.fx.Node) -> bool:
    x, w = _val(node.args[0]), _val(node.args[1])
    transposed = node.args[6]
    if w.dim() == 3 or transposed:
        # kernel sizes and channels fixed (a transposed grouped one splits its input channels)
        return x.dim() == w.dim() in (3, 4) and _static(*w.shape, x.shape[1])
    return _conv2d_accepts(node)


ACCEPTS[aten.convolution.default] = _convolution_accepts


# --- normalisation ---------------------------------------------------------------------------


@_register(aten.native_group_norm.default, results=(0, 1, 2))
def _group_norm(
    x: te.Tensor,
    weight: te.Tensor | None,
    bias: te.Tensor | None,
    n: Any,
    c: Any,
    hw: Any,
    group: int,
    eps: float,
) -> tuple:
    """The normalised output and, for a training forward that saves them for the backward,
    each group's mean and 1 / sqrt(variance + eps), shape ``(n, group)`` (unused ones are not
    computed)."""
    out = topi.nn.group_norm(x, weight, bias, group, channel_axis=1, epsilon=eps)
    grouped = topi.reshape(x, [n, group, (const_int(c) // group) * hw])
    mean, rstd = norm_statistics(grouped, [2], eps)
    return out, topi.reshape(mean, [n, group]), topi.reshape(rstd, [n, group])


ACCEPTS[aten.native_group_norm.default] = lambda node: _static(_val(node.args[0]).shape[1])


def _instance_stats_norm(
    x: te.Tensor, weight: te.Tensor | None, bias: te.Tensor | None, eps: float
) -> tuple:
    # Batch statistics per channel (training-mode batch norm without running statistics: what
    # InstanceNorm, reshaped to one image of N * C channels, and BatchNorm with
    # track_running_stats=False compute): a group norm of one channel per group over the
    # batch and the image; the statistics a training forward saves are per channel, (C,).
    channels = const_int(x.shape[1])
    axes = [0, *range(2, len(x.shape))]
    out = topi.nn.group_norm(x, weight, bias, channels, channel_axis=1, axes=axes, epsilon=eps)
    mean, rstd = norm_statistics(x, axes, eps)
    return (out, topi.reshape(mean, [channels]), topi.reshape(rstd, [channels]))


@_register(aten._native_batch_norm_legit.no_stats, results=(0, 1, 2))
def _batch_norm_no_stats(
    x: te.Tensor,
    weight: te.Tensor | None,
    bias: te.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple:
    return _instance_stats_norm(x, weight, bias, eps)


@_register(aten.native_batch_norm.default, results=(0, 1, 2))
def _native_batch_norm(
    x: te.Tensor,
    weight: te.Tensor | None,
    bias: te.Tensor | None,
    running_mean: Any,
    running_var: Any,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple:
    return _instance_stats_norm(x, weight, bias, eps)


ACCEPTS[aten._native_batch_norm_legit.no_stats] = lambda node: (
    node.args[3] is True and _val(node.args[0]).dim() >= 2 and _static(_val(node.args[0]).shape[1])
)
ACCEPTS[aten.native_batch_norm.default] = lambda node: (
    node.args[3] is None and node.args[4] is None and node.args[5] is True
    and _val(node.args[0]).dim() >= 2 and _static(_val(node.args[0]).shape[1])
)  # fmt: skip


# --- upsampling ------------------------------------------------------------------------------


def _output_size(x: te.Tensor, output_size: Any, scale_factors: Any) -> list[int]:
    """``upsample_compute_output_size``: the given size, else the input's times the factor,
    truncated."""
    if output_size:
        return [int(s) for s in output_size]
    return [int(const_int(x.shape[2 + d]) * float(s)) for d, s in enumerate(scale_factors)]


@_register(aten.upsample_nearest2d.default)
def _upsample_nearest(
    x: te.Tensor, output_size: Any, scales_h: Any = None, scales_w: Any = None
) -> te.Tensor:
    return topi.nn.upsample_nearest2d(x, list(output_size), (scales_h, scales_w))


@_register(aten._upsample_nearest_exact2d.default)
def _upsample_nearest_exact(
    x: te.Tensor, output_size: Any, scales_h: Any = None, scales_w: Any = None
) -> te.Tensor:
    return topi.nn.upsample_nearest2d(x, list(output_size), (scales_h, scales_w), exact=True)


@_register(aten.upsample_nearest2d.vec)
def _upsample_nearest_vec(x: te.Tensor, output_size: Any, scale_factors: Any) -> te.Tensor:
    size = _output_size(x, output_size, scale_factors)
    return topi.nn.upsample_nearest2d(x, size, scale_factors)


@_register(aten._upsample_nearest_exact2d.vec)
def _upsample_nearest_exact_vec(x: te.Tensor, output_size: Any, scale_factors: Any) -> te.Tensor:
    size = _output_size(x, output_size, scale_factors)
    return topi.nn.upsample_nearest2d(x, size, scale_factors, exact=True)


@_register(aten.upsample_bilinear2d.default)
def _upsample_bilinear(
    x: te.Tensor,
    output_size: Any,
    align_corners: bool,
    scales_h: Any = None,
    scales_w: Any = None,
) -> te.Tensor:
    return topi.nn.upsample_bilinear2d(x, list(output_size), align_corners, (scales_h, scales_w))


@_register(aten.upsample_bilinear2d.vec)
def _upsample_bilinear_vec(
    x: te.Tensor, output_size: Any, align_corners: bool, scale_factors: Any
) -> te.Tensor:
    size = _output_size(x, output_size, scale_factors)
    return topi.nn.upsample_bilinear2d(x, size, align_corners, scale_factors)


def _upsample_accepts(node: torch.fx.Node) -> bool:
    # static image sizes: the source-index scale is computed once, in Python
    x, size = _val(node.args[0]), node.args[1]
    return x.dim() == 4 and _static(*x.shape[2:]) and (size is None or _static(*size))


for _target in (
    aten.upsample_nearest2d.default,
    aten.upsample_nearest2d.vec,
    aten._upsample_nearest_exact2d.default,
    aten._upsample_nearest_exact2d.vec,
    aten.upsample_bilinear2d.default,
    aten.upsample_bilinear2d.vec,
):
    ACCEPTS[_target] = _upsample_accepts


# --- pooling and padding ---------------------------------------------------------------------


@_register(aten.adaptive_max_pool2d.default, results=(0,))
def _adaptive_max_pool(x: te.Tensor, output_size: Any) -> tuple:
    size = [int(s) for s in output_size]
    if len(x.shape) == 3:  # (C, H, W): one image
        out = topi.nn.adaptive_max_pool2d(topi.expand_dims(x, 0), size)
        return (topi.squeeze(out, [0]), None)
    return (topi.nn.adaptive_max_pool2d(x, size), None)


ACCEPTS[aten.adaptive_max_pool2d.default] = lambda node: (
    _val(node.args[0]).dim() in (3, 4) and _static(*node.args[1])
)


@_register(aten.constant_pad_nd.default)
def _constant_pad(x: te.Tensor, pad: Any, value: Any = 0) -> te.Tensor:
    """``F.pad(mode="constant")``: ``pad`` holds (before, after) pairs from the last dimension
    back; a negative amount crops."""
    ndim = len(x.shape)
    before, after = [0] * ndim, [0] * ndim
    for k in range(len(pad) // 2):
        before[ndim - 1 - k], after[ndim - 1 - k] = int(pad[2 * k]), int(pad[2 * k + 1])
    shape = [n + b + a if (b or a) else n for n, b, a in zip(x.shape, before, after, strict=True)]
    fill = number(value, x.dtype)  # as PyTorch converts it (integer labels padded with -100)

    def fcompute(*i: Any) -> te.Expr:
        index = [v - b if b else v for v, b in zip(i, before, strict=True)]
        # only padded sides need a bound check: a crop always reads inside
        conds = [v >= 0 for v, b in zip(index, before, strict=True) if b > 0]
        conds += [
            v < x.shape[d] for d, (v, a) in enumerate(zip(index, after, strict=True)) if a > 0
        ]
        if not conds:
            return x[index]
        return te.if_then_else(te.all(*conds), x[index], fill)

    return te.compute(shape, fcompute, name="T_constant_pad", tag=topi.tag.PAD)


def _fill_converts(value: Any, dtype: torch.dtype) -> bool:
    """Whether eager converts the fill ``value`` to ``dtype`` (it raises on an integer out of
    the dtype's range, -100 into uint8, or a non-finite float into integers); such a node is
    left to PyTorch, which raises."""
    if dtype.is_floating_point or dtype == torch.bool:
        return True
    if isinstance(value, float) and not math.isfinite(value):
        return False
    info = torch.iinfo(dtype)
    return info.min <= int(value) <= info.max


ACCEPTS[aten.constant_pad_nd.default] = lambda node: (
    _static(*node.args[1]) and len(node.args[1]) % 2 == 0
    and len(node.args[1]) // 2 <= _val(node.args[0]).dim()
    and _fill_converts(node.args[2] if len(node.args) > 2 else 0, _val(node.args[0]).dtype)
)  # fmt: skip
OTHER_DTYPES[aten.constant_pad_nd.default] = (*INTEGER_DTYPES, torch.bool)

__all__ = ["convolution"]
