"""The tiled-reduction rule's "plane_block" knob for blocked convolutions with small output
planes (csrc/autoschedule/rule_tiled_reduction.cc): each panel of output channels computes its
whole plane into one buffer with the input-channel blocks outermost. Values against
torch.conv2d with the knob on and off (odd sizes, stride 2, 1x1, batch 2), the default where it
applies, and the lowered loop nest where the decision is visible."""

import re

import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import te
from pytvmbridge.graph import layout
from pytvmbridge.graph.layout import channel_block, host_block

LANES = host_block()
STAGE = "T_conv2d_NCHWc"


def _conv(batch: int, cin: int, cout: int, size: int, k: int, stride: int) -> tuple:
    """The graph's blocked convolution (+ bias, ReLU) on a blocked input: (placeholders, out,
    block, output size)."""
    b = channel_block(cout, LANES)
    pad = k // 2
    with layout.blocking(LANES):
        xb = te.placeholder((batch, cin // b, size, size, b), name="xb")
        w = te.placeholder((cout // b, cin, k, k, b), name="w")
        bias = te.placeholder((cout,), name="bias")
        y = layout.conv2d_nchwc(
            layout.unpack(xb), w, bias, (stride, stride), (pad, pad), (1, 1), 1, b
        )
        conv = layout.blocked_source(y)
        out = te.compute(conv.shape, lambda *i: tvm.max(conv(*i), tvm.const(0.0)), name="relu")
    return [xb, w, bias], out, b, (size + 2 * pad - k) // stride + 1


def _check(batch: int, cin: int, cout: int, size: int, k: int, stride: int, plane: int) -> str:
    """Builds the convolution with "plane_block" = plane, compares it with torch; returns the
    lowered IR."""
    args, out, b, osize = _conv(batch, cin, cout, size, k, stride)
    config = {STAGE: {"plane_block": plane}}
    s = tvm.auto_schedule(out, "llvm", config)
    text = str(tvm.lower(s, [*args, out]))
    f = tvm.build(s, [*args, out], name="conv_plane")
    torch.manual_seed(5)
    x = torch.randn(batch, cin, size, size)
    weight = torch.randn(cout, cin, k, k) / (cin * k * k) ** 0.5
    bias = torch.randn(cout)
    packed_x = x.view(batch, cin // b, b, size, size).permute(0, 1, 3, 4, 2).contiguous()
    packed_w = weight.view(cout // b, b, cin, k, k).permute(0, 2, 3, 4, 1).contiguous()
    blocked = torch.empty([int(d) for d in out.shape])
    f(packed_x, packed_w, bias, blocked)
    got = blocked.permute(0, 1, 4, 2, 3).reshape(batch, cout, osize, osize)
    want = torch.relu(torch.conv2d(x, weight, bias, stride, k // 2))
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    return text


def _space(batch: int, cin: int, cout: int, size: int, k: int, stride: int) -> tuple:
    _, out, _, _ = _conv(batch, cin, cout, size, k, stride)
    space = tvm.auto_schedule_space(out)
    return space["default"][STAGE].get("plane_block"), space["knobs"][STAGE].get("plane_block")


def test_default_on_for_a_7x7_plane_with_enough_panels():
    # ResNet's last stage at a smaller channel count: a 7x7 output, 8 panels of output channels.
    b = channel_block(16 * LANES, LANES)
    default, knob = _space(1, 2 * b, 8 * b, 7, 3, 1)
    assert knob == [0, 1]
    assert default == 1


@pytest.mark.parametrize(
    "batch,cin,cout_blocks,size,k,stride",
    [
        (1, 2, 8, 7, 3, 1),  # 7x7, 3x3, padding 1
        (1, 3, 3, 9, 3, 2),  # 9x9 stride 2 -> 5x5, three blocks of input channels
        (1, 2, 8, 7, 1, 1),  # 1x1
        (2, 2, 2, 5, 3, 1),  # two images in the plane
        (1, 2, 2, 14, 3, 1),  # two row tiles per output row (unrolled)
    ],
)
def test_values_with_the_knob_on_and_off(batch, cin, cout_blocks, size, k, stride):
    b = channel_block(2 * LANES, LANES)
    cin, cout = cin * b, cout_blocks * b
    assert _space(batch, cin, cout, size, k, stride)[1] == [0, 1]
    on = _check(batch, cin, cout, size, k, stride, 1)
    _check(batch, cin, cout, size, k, stride, 0)
    # On: the plane's buffer (every image, row and column of one panel) is allocated in the
    # parallel panel loop, and the input-channel blocks enclose the row tiles.
    osize = (size + 2 * (k // 2) - k) // stride + 1
    assert f"T_conv2d_NCHWc.local[float32 * {batch} * 1 * {osize} * {osize} * {b}]" in on
    reduction = on.index("for (rco")
    assert re.search(r"for \(y, 0, \d+\)", on[reduction:]) is not None
    # Several row tiles per output row are unrolled (no loop over them in the reduction).
    assert "for (xx.outer" not in on


def test_offered_but_off_at_14x14():
    # A 14x14 plane (25 KB of accumulators at 32 channels): for the tuner, off by default.
    b = channel_block(16 * LANES, LANES)
    assert _space(1, 2 * b, 8 * b, 14, 3, 1) == (0, [0, 1])
    assert _space(1, 2 * b, 8 * b, 14, 1, 1) == (0, [0, 1])


def test_not_offered_for_a_28x28_plane():
    # 28 x 28 x 32 floats of accumulators (100 KB): only 0.
    b = channel_block(2 * LANES, LANES)
    default, knob = _space(1, 2 * b, 8 * b, 28, 3, 1)
    assert knob == [0]
    assert default == 0
