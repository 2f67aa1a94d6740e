"""Blocked ``NCHW[b]c`` activations between convolutions (what oneDNN and TVM's x86 schedules do).

In NCHW a convolution's output channels, the axis its weight is streamed along, are ``H * W``
floats apart: the micro-kernel's vector of channels is stored and re-read strided, and a
depthwise convolution has only the image width to vectorize (7 floats in MobileNetV2's last
stages). With ``b`` (one vector of float32: 16 with AVX-512, 8 with AVX2) channels innermost,
``[N, C/b, H, W, b]``, each tile of the micro-kernel is one contiguous vector per output pixel
and a depthwise convolution is one vector FMA per window point.

While the graph compiler imports a graph (:func:`blocking`), a convolution whose output channels
are a multiple of ``b`` (ungrouped or depthwise) computes its output blocked, with its bias, and
returns an *unpack view* (:func:`unpack`: the NCHW tensor as an injective stage reading the
blocked one). The converters that know the layout look through that view
(:func:`blocked_source`): the next convolution reads the blocked tensor directly, elementwise
operators whose tensor operands are all views of one blocked shape (ReLU, ReLU6, residual adds)
compute blocked and return a view again (:func:`through_blocks`), max pooling pools blocked.
Any other reader sees the NCHW view, which the scheduler inlines: the layout transform happens
only where a non-blocked operator reads a blocked value (the mean before a classifier), never
between two convolutions. The weights are passed pre-packed as ``[O/b, I, kh, kw, b]``
(``Derived("conv_pack")``, computed once), so nothing is re-laid-out on a call.

Example:
    >>> import pytvmbridge as tvm
    >>> x = tvm.placeholder((1, 3, 8, 8), name="x")
    >>> w = tvm.placeholder((2, 3, 3, 3, 16), name="w")  # 32 channels in panels of 16
    >>> y = conv2d_nchwc(x, w, None, (1, 1), (1, 1), (1, 1), 1, 16)
    >>> y.shape, blocked_source(y).shape
    ((1, 32, 8, 8), (1, 2, 8, 8, 16))
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

from .. import te, topi
from ..topi import tag
from ..topi.nn.conv2d import conv_output_size
from ..topi.utils import const_int, same_dim
from .prepack import nchw_conv_compute, read_weight
from .traced_sizes import size_hint

UNPACK_TAG = "nchwc_unpack"
DEPTHWISE_NCHWC_TAG = "depthwise_conv2d_NCHWc"

_LANES: contextvars.ContextVar[int] = contextvars.ContextVar("nchwc_lanes", default=0)
# Pre-packed weights whose output channels were padded to whole blocks: name -> real count.
_PADDED: contextvars.ContextVar[dict[str, int]] = contextvars.ContextVar("nchwc_padded")
# Weights passed Winograd-transformed, [m + 2, m + 2, O/b, I, b]: name -> tile size m.
_WINOGRAD: contextvars.ContextVar[dict[str, int]] = contextvars.ContextVar("nchwc_winograd")


def host_block() -> int:
    """float32 lanes of one vector register on this host (the smallest channel block)."""
    from .. import _core

    features = _core.host_cpu_features()
    if features.get("avx512f"):
        return 16
    if features.get("avx2") or features.get("avx"):
        return 8
    return 4


@contextlib.contextmanager
def blocking(
    lanes: int, padded: dict[str, int] | None = None, winograd: dict[str, int] | None = None
) -> Iterator[None]:
    """Converters inside this block compute blocked convolutions for vectors of ``lanes``
    float32 (0: off); ``padded`` names the pre-packed weights whose output channels are padded
    to whole panels, with their real output channel count; ``winograd`` the weights passed
    Winograd-transformed (see :func:`winograd_tile`), with their tile size."""
    token = _LANES.set(lanes)
    padded_token = _PADDED.set(dict(padded or {}))
    winograd_token = _WINOGRAD.set(dict(winograd or {}))
    try:
        yield
    finally:
        _WINOGRAD.reset(winograd_token)
        _PADDED.reset(padded_token)
        _LANES.reset(token)


def winograd_weights() -> dict[str, int]:
    """The weights the import in progress receives Winograd-transformed: name -> tile size."""
    return _WINOGRAD.get({})


def winograd_tile(node: torch.fx.Node, lanes: int) -> int:
    """The tile size ``m`` of F(m x m, 3 x 3) for the FX ``aten.convolution`` node, 0 for a
    direct convolution: an ungrouped 3x3 convolution of stride 1 and dilation 1, computed
    blocked (:func:`conv_block`) with no padded panel, whose input channels are whole vectors
    (so that whatever block its input arrives in divides them); ``m`` from
    :func:`~pytvmbridge.topi.nn.winograd_tile_size` (for a symbolic image size, at its traced
    value)."""
    block = conv_block(node, lanes)
    if not block:
        return 0
    _, w, _, stride, padding, dilation, _, _, groups = node.args
    x, weight = node.args[0].meta["val"], w.meta["val"]
    out_c, in_c, kh, kw = weight.shape
    if (kh, kw) != (3, 3) or groups != 1 or out_c % block or in_c % lanes:
        return 0
    if tuple(stride) != (1, 1) or tuple(dilation) != (1, 1):
        return 0
    # A symbolic image size is judged by the size it was traced at (dynamic=True: the first
    # call's), the tiles covering whatever size a later call brings.
    height, width = (size_hint(d) for d in x.shape[2:])
    if height is None or width is None:
        return 0
    ph, pw = padding
    out_h, out_w = height + 2 * ph - 2, width + 2 * pw - 2
    if out_h < 1 or out_w < 1:
        return 0
    batch = x.shape[0] if isinstance(x.shape[0], int) else None
    return topi.nn.winograd_tile_size(batch, out_h, out_w)


def winograd_shape(shape: list[Any], width: int, tile_size: int) -> list[Any]:
    """The ``[m + 2, m + 2, O/b, I, b]`` shape of an OIHW weight of ``shape`` passed
    Winograd-transformed in blocks of ``width`` output channels."""
    alpha = tile_size + 2
    return [alpha, alpha, -(-shape[0] // width), shape[1], width]


def packed_out_channels(w: te.Tensor) -> int | None:
    """The real output channels of a weight pre-packed ``[O/b, I, kh, kw, b]`` (None if not
    constant): its panels' channels, less the zero padding of the last panel."""
    real = _PADDED.get({}).get(w.op.name)
    if real is not None:
        return real
    panels, width = const_int(w.shape[0]), const_int(w.shape[4])
    return None if panels is None or width is None else panels * width


def active_lanes() -> int:
    """The vector lanes of the import in progress (0 when blocking is off)."""
    return _LANES.get()


def channel_block(channels: int | None, lanes: int, pad: bool = False) -> int:
    """The block of a tensor of ``channels`` channels: two vectors when they divide it (the
    micro-kernel's tile is then two vectors wide: 2 loads of the weight per 8 broadcasts, not 1
    per 14), else one vector, else 0 (the tensor stays NCHW).

    With ``pad`` (an ungrouped convolution's output), channels no block divides are padded to
    whole blocks when that adds at most half of them (MobileNetV2's 24 in one block of 32):
    the padding lanes are computed from zero weights and never read as channels. In NCHW,
    read from blocked inputs, those layers gathered each vector from 16 pixels' channels and
    took 12% of MobileNetV2's time at batch 8."""
    if not lanes or channels is None:
        return 0
    for block in (2 * lanes, lanes):
        if channels % block == 0:
            return block
    if pad and channels >= lanes:
        for block in (2 * lanes, lanes):
            if -(-channels // block) * block * 2 <= channels * 3:
                return block
    return 0


def unpack(blocked: te.Tensor, channels: Any = None) -> te.Tensor:
    """``[N, C/b, H, W, b]`` -> the NCHW view ``[N, C, H, W]`` (an injective stage); ``channels``
    is C when the last block is padded (default: all of them)."""
    n, cb, h, w, b = blocked.shape
    return te.compute(
        (n, cb * b if channels is None else channels, h, w),
        lambda i, c, y, x: blocked[i, te.floordiv(c, b), y, x, te.floormod(c, b)],
        name="nchwc_unpack",
        tag=UNPACK_TAG,
    )


def blocked_source(value: Any) -> te.Tensor | None:
    """The blocked tensor behind an unpack view, else None."""
    if isinstance(value, te.Tensor) and isinstance(value.op, te.ComputeOp):
        if value.op.tag == UNPACK_TAG:
            return value.op.input_tensors[0]
    return None


def conv_block(node: torch.fx.Node, lanes: int) -> int:
    """The output block of the FX ``aten.convolution`` node (0: it computes NCHW): static
    channels, 2-d, not transposed, ungrouped or depthwise, see :func:`channel_block`."""
    if not lanes or node.args[6]:
        return 0
    x, w = node.args[0].meta.get("val"), node.args[1].meta.get("val")
    if x is None or w is None or w.dim() != 4 or x.dim() != 4:
        return 0
    if not all(isinstance(d, int) for d in (*w.shape, x.shape[1])):
        return 0
    return weight_block(w.shape[0], w.shape[1], x.shape[1], node.args[8], lanes)


def weight_block(out_c: int, group_in: int, in_c: int, groups: int, lanes: int) -> int:
    """:func:`conv_block` from the sizes (the converters' side of the same decision)."""
    depthwise = groups == in_c == out_c and group_in == 1
    if groups == 1:
        return channel_block(out_c, lanes, pad=True)
    return channel_block(out_c, lanes) if depthwise else 0


def _weight_reader(w: te.Tensor, block: int) -> Callable[..., Any]:
    """``read(oc, oi, i, ry, rx)``: the weight of output channel ``oc * block + oi``."""
    if len(w.shape) == 5:
        return lambda oc, oi, i, ry, rx: w[oc, i, ry, rx, oi]
    return lambda oc, oi, i, ry, rx: w[oc * block + oi, i, ry, rx]


def conv2d_nchwc(
    x: te.Tensor,
    w: te.Tensor,
    bias: te.Tensor | None,
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
    groups: int,
    block: int,
) -> te.Tensor:
    """A convolution computed blocked; returns the NCHW unpack view of its output.

    ``x`` is NCHW (read as it is, or through to its blocked source when it is an unpack view,
    of any block; a depthwise convolution's of the same block); ``w`` is OIHW or pre-packed
    ``[O/block, I, kh, kw, block]``; ``groups`` is 1 or the channel count (depthwise).
    """
    tile_size = winograd_weights().get(w.op.name) if len(w.shape) == 5 else None
    if tile_size:
        return _winograd_conv(x, w, bias, padding, block, tile_size)
    source = blocked_source(x)
    in_block = const_int(source.shape[-1]) if source is not None else None
    if source is not None and groups != 1 and in_block != block:
        source = None
    n, in_c, h, wd = x.shape
    if len(w.shape) == 5:
        out_c = packed_out_channels(w)
        kh, kw = const_int(w.shape[2]), const_int(w.shape[3])
    else:
        out_c, kh, kw = (const_int(d) for d in (w.shape[0], w.shape[2], w.shape[3]))
    blocks = -(-out_c // block)  # the last one padded when block does not divide out_c
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    out_h = conv_output_size(h, kh, sh, dh, ph, ph)
    out_w = conv_output_size(wd, kw, sw, dw, pw, pw)
    weight = _weight_reader(w, block)
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    depthwise = groups != 1
    if source is not None and _subsampled(source, kh, kw, (sh, sw), (ph, pw), out_c, in_c):
        # Every (sh, sw)-th pixel copied once, then a 1x1 convolution of stride 1 over it.
        source = _subsample(source, (sh, sw), (out_h, out_w))
        sh = sw = 1
    if source is not None:
        data = source
        if ph or pw:
            data = topi.nn.pad(source, [0, 0, ph, pw, 0], [0, 0, ph, pw, 0], name="pad_temp")

        def pixel(i: Any, c_block: Any, c_lane: Any, y: Any, xx: Any) -> Any:
            return data[i, c_block, y, xx, c_lane]

    else:
        data = topi.nn.pad(x, [0, 0, ph, pw], [0, 0, ph, pw], name="pad_temp") if ph or pw else x

        def pixel(i: Any, c_block: Any, c_lane: Any, y: Any, xx: Any) -> Any:
            return data[i, c_block * block + c_lane, y, xx]

    shape = (n, blocks, out_h, out_w, block)
    attrs = {"layout": f"NCHW{block}c", "strides": [sh, sw], "padding": [ph, pw, ph, pw],
             "dilation": [dh, dw], "groups": groups}  # fmt: skip
    if depthwise:

        def fdepthwise(i: Any, oc: Any, y: Any, xx: Any, oi: Any) -> Any:
            value = pixel(i, oc, oi, y * sh + ry * dh, xx * sw + rx * dw)
            return te.sum(value * weight(oc, oi, 0, ry, rx), axis=[ry, rx])

        out = te.compute(shape, fdepthwise, name="T_depthwise_conv2d_NCHWc",
                         tag=DEPTHWISE_NCHWC_TAG, attrs=attrs)  # fmt: skip
    elif source is not None and const_int(in_c) % in_block:
        # A source with a padded last block: one reduction over the real channels.
        rc = te.reduce_axis((0, in_c), name="rc")

        def fpadded(i: Any, oc: Any, y: Any, xx: Any, oi: Any) -> Any:
            value = pixel(i, te.floordiv(rc, in_block), te.floormod(rc, in_block),
                          y * sh + ry * dh, xx * sw + rx * dw)  # fmt: skip
            return te.sum(value * weight(oc, oi, rc, ry, rx), axis=[rc, ry, rx])

        out = te.compute(shape, fpadded, name="T_conv2d_NCHWc", tag=tag.CONV2D_NCHWC,
                         attrs=attrs)  # fmt: skip
    elif source is not None:
        rco = te.reduce_axis((0, const_int(in_c) // in_block), name="rco")
        rci = te.reduce_axis((0, in_block), name="rci")

        # Reduction order (input channel, then the window): the packed weight [O/b, I, kh, kw,
        # b] is then read as one contiguous stream. With the input lane innermost each step
        # jumped kh * kw * b floats: ResNet-18's 512-channel 3x3 layers (9.4 MB of weights,
        # read from memory at batch 1) measured 1.25x slower on one thread.
        def fblocked(i: Any, oc: Any, y: Any, xx: Any, oi: Any) -> Any:
            value = pixel(i, rco, rci, y * sh + ry * dh, xx * sw + rx * dw)
            return te.sum(
                value * weight(oc, oi, rco * in_block + rci, ry, rx), axis=[rco, rci, ry, rx]
            )

        out = te.compute(shape, fblocked, name="T_conv2d_NCHWc", tag=tag.CONV2D_NCHWC,
                         attrs=attrs)  # fmt: skip
    else:
        rc = te.reduce_axis((0, in_c), name="rc")

        def fplain(i: Any, oc: Any, y: Any, xx: Any, oi: Any) -> Any:
            value = data[i, rc, y * sh + ry * dh, xx * sw + rx * dw]
            return te.sum(value * weight(oc, oi, rc, ry, rx), axis=[rc, ry, rx])

        out = te.compute(shape, fplain, name="T_conv2d_NCHWc", tag=tag.CONV2D_NCHWC,
                         attrs=attrs)  # fmt: skip
    return unpack(_add_bias(out, bias, out_c), out_c)


def _add_bias(conv: te.Tensor, bias: te.Tensor | None, out_c: int) -> te.Tensor:
    """A blocked convolution's output plus its per-channel ``bias`` (None: none)."""
    if bias is None:
        return conv
    block = const_int(conv.shape[-1])

    def fbias(i: Any, oc: Any, y: Any, xx: Any, oi: Any) -> Any:
        c = oc * block + oi
        if out_c % block == 0:
            return conv[i, oc, y, xx, oi] + bias[c]
        # The padding lanes read no bias (one masked vector load).
        return conv[i, oc, y, xx, oi] + te.if_then_else(c < out_c, bias[c], 0.0)

    return te.compute(conv.shape, fbias, name="T_add", tag=tag.BROADCAST)


def _winograd_conv(
    x: te.Tensor,
    w: te.Tensor,
    bias: te.Tensor | None,
    padding: tuple[int, int],
    block: int,
    tile_size: int,
) -> te.Tensor:
    """A 3x3 convolution (stride 1, ungrouped) by Winograd's algorithm, ``w`` transformed and
    blocked ``[m + 2, m + 2, O/block, I, block]``; returns the NCHW unpack view of its blocked
    output. ``x`` is read through to its blocked source, or (NCHW) through a blocking view the
    data transform inlines; :func:`winograd_tile` guarantees whole input blocks."""
    source = blocked_source(x)
    in_c = const_int(x.shape[1])
    if source is None or in_c % const_int(source.shape[-1]):
        lanes = next(b for b in (2 * block, block, active_lanes(), 1) if b and in_c % b == 0)
        source = topi.nn.pack_nchwc(x, lanes)
    ph, pw = padding
    out = topi.nn.conv2d_winograd_nchwc(source, w, (ph, pw, ph, pw), tile_size)
    out_c = const_int(w.shape[2]) * block
    return unpack(_add_bias(out, bias, out_c), out_c)


# Weight bytes above which a strided 1x1 convolution reads a compact copy of its input's
# sampled pixels (about half a core's L2, the autoscheduler's "stays in cache" size).
SUBSAMPLE_WEIGHT_BYTES = 1 << 20


def _subsampled(
    source: te.Tensor, kh: int, kw: int, stride: tuple[int, int], padding: tuple[int, int],
    out_c: int, in_c: Any,
) -> bool:  # fmt: skip
    """Whether a blocked 1x1 convolution of stride > 1 should read a compact copy of the
    pixels it samples: where its weight does not stay in cache. Such a weight is swept once
    per image, and each image's input once per panel of output channels; read in place with
    a stride, each sweep touches (and the prefetchers fetch) the whole image, 4x the pixels
    used at stride 2. ResNet-50 at batch 8 (one thread, CPU time, loaded machine, ratio to
    oneDNN in the same run): the 512->1024 layer 1.17 -> 0.89, 1024->2048 1.22 -> 1.11; the
    256->512 one (a 512 KB weight, panels innermost) measured no better, so it reads in place."""
    if (kh, kw) != (1, 1) or padding != (0, 0) or stride == (1, 1):
        return False
    in_channels = const_int(in_c)
    if in_channels is None:
        return False
    return out_c * in_channels * np.dtype(source.dtype).itemsize > SUBSAMPLE_WEIGHT_BYTES


def _subsample(source: te.Tensor, stride: tuple[int, int], size: tuple[Any, Any]) -> te.Tensor:
    """``source[:, :, ::sh, ::sw, :]`` as a stage of its own, ``size`` pixels."""
    n, cb, _, _, b = source.shape
    sh, sw = stride
    return te.compute(
        (n, cb, size[0], size[1], b),
        lambda i, c, y, x, lane: source[i, c, y * sh, x * sw, lane],
        name="nchwc_subsample",
    )


def conv2d_nchw_from_blocks(
    source: te.Tensor,
    w: te.Tensor,
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
) -> te.Tensor:
    """An ungrouped convolution with an NCHW output (output channels that are no multiple of
    a block) reading a blocked input directly, rather than a stored NCHW copy of it. ``w`` is
    OIHW or pre-packed in panels ``[O/p, I, kh, kw, p]`` (``conv2d_prepacked``'s layout)."""
    n, _, h, wd, block = source.shape
    if len(w.shape) == 5:
        out_c = packed_out_channels(w)
        in_c, kh, kw = (const_int(d) for d in w.shape[1:4])
    else:
        out_c, in_c, kh, kw = (const_int(d) for d in w.shape)
    weight = read_weight(w)

    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    out_h = conv_output_size(h, kh, sh, dh, ph, ph)
    out_w = conv_output_size(wd, kw, sw, dw, pw, pw)
    data = source
    if ph or pw:
        data = topi.nn.pad(source, [0, 0, ph, pw, 0], [0, 0, ph, pw, 0], name="pad_temp")
    b = const_int(block)
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    if in_c % b:  # a source with a padded last block: one reduction over the real channels
        rc = te.reduce_axis((0, in_c), name="rc")

        def fcompute(i: Any, o: Any, y: Any, xx: Any) -> Any:
            value = data[i, te.floordiv(rc, b), y * sh + ry * dh, xx * sw + rx * dw,
                         te.floormod(rc, b)]  # fmt: skip
            return te.sum(value * weight(o, rc, ry, rx), axis=[rc, ry, rx])

    else:
        rco = te.reduce_axis((0, in_c // b), name="rco")
        rci = te.reduce_axis((0, b), name="rci")

        def fcompute(i: Any, o: Any, y: Any, xx: Any) -> Any:  # weight order, as conv2d_nchwc
            value = data[i, rco, y * sh + ry * dh, xx * sw + rx * dw, rci]
            return te.sum(value * weight(o, rco * b + rci, ry, rx), axis=[rco, rci, ry, rx])

    return nchw_conv_compute((n, out_c, out_h, out_w), fcompute, stride, padding, dilation)


def through_blocks(fn: Callable[..., Any]) -> Callable[..., Any]:
    """An elementwise converter computed on the blocked tensors when every tensor operand is
    an unpack view of one blocked shape (scalars allowed); otherwise on the NCHW values."""

    @functools.wraps(fn)
    def convert(*args: Any, **kwargs: Any) -> Any:
        tensors = [a for a in args if isinstance(a, te.Tensor)]
        sources = [blocked_source(t) for t in tensors]
        if not tensors or any(s is None for s in sources):
            return fn(*args, **kwargs)
        # Sizes compared by their difference: a residual block's two branches spell a strided
        # symbolic size each their own way (a 3x3 convolution's (s + 2 - 3) // 2 + 1, the 1x1
        # downsampling's (s - 1) // 2 + 1), and compared as text the sum fell back to NCHW.
        shape = [*sources[0].shape, *tensors[0].shape]
        if any(len(s.shape) + len(t.shape) != len(shape)
               or not all(map(same_dim, (*s.shape, *t.shape), shape))
               for s, t in zip(sources[1:], tensors[1:], strict=True)):  # fmt: skip
            return fn(*args, **kwargs)
        swap = {id(t): s for t, s in zip(tensors, sources, strict=True)}
        blocked_args = [swap.get(id(a), a) for a in args]
        out = fn(*blocked_args, **kwargs)
        return unpack(out, tensors[0].shape[1]) if isinstance(out, te.Tensor) else out

    return convert


def max_pool_nchwc(
    source: te.Tensor,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    padding: tuple[int, int],
    dilation: tuple[int, int],
    ceil_mode: bool,
    channels: Any = None,
) -> te.Tensor | None:
    """Max pooling of a blocked tensor (its unpack view of ``channels``), or None where not
    handled."""
    if ceil_mode:
        return None
    n, cb, h, w, b = source.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    out_h = conv_output_size(h, kh, sh, dh, ph, ph)
    out_w = conv_output_size(w, kw, sw, dw, pw, pw)
    data = source
    if ph or pw:
        lowest = te.min_value(source.dtype)
        data = topi.nn.pad(source, [0, 0, ph, pw, 0], [0, 0, ph, pw, 0], lowest, name="pad_temp")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    out = te.compute(
        (n, cb, out_h, out_w, b),
        lambda i, c, y, x, ci: te.max(data[i, c, y * sh + ry * dh, x * sw + rx * dw, ci],
                                      axis=[ry, rx]),
        name="T_pool_max",
        tag="pool_max",
    )  # fmt: skip
    return unpack(out, channels)


__all__ = [
    "active_lanes",
    "blocked_source",
    "blocking",
    "channel_block",
    "conv2d_nchw_from_blocks",
    "conv2d_nchwc",
    "conv_block",
    "host_block",
    "max_pool_nchwc",
    "packed_out_channels",
    "through_blocks",
    "unpack",
    "weight_block",
    "winograd_shape",
    "winograd_tile",
    "winograd_weights",
]
