"""The blocked NCHWc layout of the graph compiler (pytvmbridge/graph/layout.py): convolution
chains (ungrouped, depthwise, stride 2, odd channel counts in padded blocks, residual adds,
ReLU6, max pooling) against eager PyTorch, batch 1 and more, and a dynamic batch."""

import pytest
import torch
from graph_spy import compiled_graphs
from torch import nn

from pytvmbridge.error import TVMValueError
from pytvmbridge.graph import backend, compile_graph
from pytvmbridge.graph.layout import channel_block, host_block

LANES = host_block()
BLOCK = LANES


class Chain(nn.Module):
    """Stem (stride 2) + max pool, a residual 3x3 pair, a depthwise block (stride 1 and 2,
    ReLU6), a convolution whose output channels are not a multiple of the block (computed in
    padded blocks, then read by a blocked one), mean and a linear classifier."""

    def __init__(self, c: int = 2 * BLOCK) -> None:
        super().__init__()
        odd = c + 3
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1, bias=False), nn.BatchNorm2d(c),
                                  nn.ReLU())  # fmt: skip
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.a = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1), nn.BatchNorm2d(c), nn.ReLU())
        self.b = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c))
        self.dw1 = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False),
                                 nn.BatchNorm2d(c), nn.ReLU6())  # fmt: skip
        self.dw2 = nn.Sequential(nn.Conv2d(c, c, 3, 2, 1, groups=c), nn.ReLU6())
        self.odd = nn.Conv2d(c, odd, 1)
        self.back = nn.Sequential(nn.Conv2d(odd, 2 * c, 1, 2), nn.ReLU())
        self.fc = nn.Linear(2 * c, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.stem(x))
        x = torch.relu(x + self.b(self.a(x)))
        x = x + self.dw1(x)
        x = self.back(torch.relu(self.odd(self.dw2(x))))
        return self.fc(x.mean((2, 3)))


def _model() -> nn.Module:
    torch.manual_seed(0)
    model = Chain().eval()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    return model


@pytest.mark.parametrize("batch", [1, 3])
def test_blocked_chain_matches_eager(batch):
    graphs = compiled_graphs(_model(), [torch.randn(batch, 3, 29, 29)])
    assert len(graphs) == 1
    packs = [d for d in graphs[0].derived_inputs if d.kind in ("conv_pack", "winograd_pack")]
    widths = [d.params[0] for d in packs]
    # stem, a, b, dw1, dw2 and back run blocked (their weights in panels of their block: two
    # vectors); the convolution with an odd channel count in padded blocks of one vector. a
    # and b (3x3, stride 1, 8x8 images: 16 tiles of F(2x2) an image) run by Winograd's
    # algorithm, their weights transformed in the same blocks.
    assert channel_block(2 * BLOCK, LANES) == 2 * LANES
    assert widths.count(2 * LANES) == 6
    assert widths.count(LANES) == 1
    assert [d.params for d in packs if d.kind == "winograd_pack"] == [(2 * LANES, 2)] * 2


def test_blocked_chain_dynamic_batch_compiles_once():
    inputs = [torch.randn(b, 3, 21, 21) for b in (2, 5, 3)]
    graphs = compiled_graphs(_model(), inputs, dynamic=True)
    assert len(graphs) == 1 and graphs[0].size_bindings


def test_nchw_layout_option_gives_the_same_values():
    x = torch.randn(2, 3, 17, 17)
    graphs = compiled_graphs(_model(), [x], layout="NCHW")
    widths = [d.params[0] for d in graphs[0].derived_inputs if d.kind == "conv_pack"]
    assert len(widths) < 6  # depthwise weights are not packed in NCHW


def test_layout_option_is_checked():
    with pytest.raises(TVMValueError, match="layout"):
        backend.BackendOptions.parse({"layout": "NHWC"})
    torch._dynamo.reset()
    f = torch.compile(nn.Conv2d(3, 16, 1), backend="pytvmbridge", options={"layout": "NHWC"})
    with pytest.raises(Exception, match="options\\['layout'\\]"):
        f(torch.randn(1, 3, 4, 4))


def test_blocked_weights_follow_in_place_changes():
    from torch.fx.experimental.proxy_tensor import make_fx

    def f(x, w, wd):
        y = torch.relu(torch.nn.functional.conv2d(x, w, stride=2, padding=1))
        return torch.nn.functional.conv2d(y, wd, padding=1, groups=w.shape[0]) + y

    c = 3 * BLOCK
    args = [torch.randn(2, 5, 11, 11), torch.randn(c, 5, 3, 3), torch.randn(c, 1, 3, 3)]
    cg = compile_graph(make_fx(f)(*args), args)
    assert channel_block(c, LANES) == LANES
    assert {(d.kind, d.params) for d in cg.derived_inputs} == {("conv_pack", (LANES,))}
    torch.testing.assert_close(cg(*args), f(*args), rtol=1e-4, atol=1e-4)
    args[1].mul_(-0.5)
    args[2].add_(1.0)
    torch.testing.assert_close(cg(*args), f(*args), rtol=1e-4, atol=1e-4)


class Padded(nn.Module):
    """MobileNetV2's 24-channel stage in miniature: output channels no block divides (computed
    in one padded block), a residual add of two such tensors, convolutions reading them (1x1 and
    3x3 with padding), a depthwise layer between."""

    def __init__(self, c: int) -> None:
        super().__init__()
        wide = 4 * BLOCK
        self.stem = nn.Sequential(nn.Conv2d(3, wide, 3, 2, 1), nn.ReLU6())
        self.proj = nn.Sequential(nn.Conv2d(wide, c, 1, bias=False), nn.BatchNorm2d(c))
        depthwise = nn.Conv2d(wide, wide, 3, 1, 1, groups=wide)
        self.expand = nn.Sequential(nn.Conv2d(c, wide, 1), nn.ReLU6(), depthwise, nn.ReLU6())
        self.proj2 = nn.Conv2d(wide, c, 1)
        self.head = nn.Sequential(nn.Conv2d(c, wide, 3, 1, 1), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(self.stem(x))
        y = y + self.proj2(self.expand(y))
        return self.head(y).mean((2, 3)), y


@pytest.mark.parametrize("batch", [1, 2])
def test_padded_channel_blocks_match_eager(batch):
    c = 3 * LANES // 2  # 24 with AVX-512, 12 with AVX2: one padded block of 32 (16)
    block = channel_block(c, LANES, pad=True)
    assert channel_block(c, LANES) == 0 and block == 2 * LANES and block > c
    assert channel_block(2 * LANES + 3, LANES, pad=True) == LANES  # 3 blocks, 13 lanes padding
    assert channel_block(LANES + 3, LANES, pad=True) == 0  # would pad more than half: NCHW
    assert channel_block(LANES // 2, LANES, pad=True) == 0  # under one vector: stays NCHW
    torch.manual_seed(1)
    model = Padded(c).eval()
    bn = model.proj[1]
    bn.running_mean.uniform_(-0.2, 0.2)
    bn.running_var.uniform_(0.5, 1.5)
    graphs = compiled_graphs(model, [torch.randn(batch, 3, 18, 18)])
    # proj and proj2 (c outputs) run blocked, their weights in one zero-padded panel
    packs = [d for d in graphs[0].derived_inputs if d.kind == "conv_pack" and d.params == (block,)]
    assert len(packs) >= 2


def _blocked_1x1(batch, cin, cout, size, config=None):
    """A 1x1 convolution in the blocked layout (input, weight and output blocked), its default
    loop order and its values against ``torch.conv2d``."""
    import pytvmbridge as tvm
    from pytvmbridge import te
    from pytvmbridge.graph import layout

    b = channel_block(cout, LANES)
    with layout.blocking(LANES):
        xb = te.placeholder((batch, cin // b, size, size, b), name="xb")
        w = te.placeholder((cout // b, cin, 1, 1, b), name="w")
        y = layout.conv2d_nchwc(layout.unpack(xb), w, None, (1, 1), (0, 0), (1, 1), 1, b)
        out = layout.blocked_source(y)
    order = tvm.auto_schedule_space(out)["default"]["T_conv2d_NCHWc"]["streamed_outer"]
    f = tvm.build(tvm.auto_schedule(out, "llvm", config), [xb, w, out], name="conv1x1")
    torch.manual_seed(2)
    x, weight = torch.randn(batch, cin, size, size), torch.randn(cout, cin, 1, 1) / cin**0.5
    blocked = torch.empty([int(d) for d in out.shape])
    packed_x = x.view(batch, cin // b, b, size, size).permute(0, 1, 3, 4, 2).contiguous()
    packed_w = weight.view(cout // b, b, cin, 1, 1).permute(0, 2, 3, 4, 1).contiguous()
    f(packed_x, packed_w, blocked)
    got = blocked.permute(0, 1, 4, 2, 3).reshape(batch, cout, size, size)
    torch.testing.assert_close(got, torch.conv2d(x, weight), rtol=1e-4, atol=1e-4)
    return order


def test_blocked_conv_loop_order_follows_the_cache():
    # One image's input (256 x 36 x 36, 1.3 MB) does not stay in cache, the weight (64 KB)
    # does: the weight's panels innermost (2), each input row read once.
    assert _blocked_1x1(2, 256, 64, 36) == 2
    # A 2 MB weight against 200 KB images: axis order (0), the weight swept once per image
    # rather than every image's input once per panel.
    assert _blocked_1x1(8, 1024, 512, 7) == 0
    # Every order computes the same values.
    for order in (0, 1, 2):
        _blocked_1x1(2, 256, 64, 36, {"T_conv2d_NCHWc": {"streamed_outer": order}})


def _operation_names(t):
    names, stack, seen = set(), [t], set()
    while stack:
        u = stack.pop()
        if u.op.name in seen:
            continue
        seen.add(u.op.name)
        names.add(u.op.name)
        stack.extend(getattr(u.op, "input_tensors", []))
    return names


@pytest.mark.parametrize("cin,cout,subsampled", [(512, 1024, True), (64, 128, False)])
def test_strided_1x1_reads_a_compact_copy_when_its_weight_is_large(cin, cout, subsampled):
    # A 2 MB weight (512 -> 1024) reads a stored copy of every other pixel; a small one reads
    # its input in place. Both against torch.conv2d (stride 2, bias).
    import pytvmbridge as tvm
    from pytvmbridge import te
    from pytvmbridge.graph import layout

    b, batch, size = channel_block(cout, LANES), 2, 9
    with layout.blocking(LANES):
        xb = te.placeholder((batch, cin // b, size, size, b), name="xb")
        w = te.placeholder((cout // b, cin, 1, 1, b), name="w")
        bias = te.placeholder((cout,), name="bias")
        y = layout.conv2d_nchwc(layout.unpack(xb), w, bias, (2, 2), (0, 0), (1, 1), 1, b)
        out = layout.blocked_source(y)
    assert ("nchwc_subsample" in _operation_names(out)) == subsampled
    f = tvm.build(tvm.auto_schedule(out), [xb, w, bias, out], name="strided1x1")
    torch.manual_seed(3)
    x, weight = torch.randn(batch, cin, size, size), torch.randn(cout, cin, 1, 1) / cin**0.5
    bias_t = torch.randn(cout)
    blocked = torch.empty([int(d) for d in out.shape])
    packed_x = x.view(batch, cin // b, b, size, size).permute(0, 1, 3, 4, 2).contiguous()
    packed_w = weight.view(cout // b, b, cin, 1, 1).permute(0, 2, 3, 4, 1).contiguous()
    f(packed_x, packed_w, bias_t, blocked)
    got = blocked.permute(0, 1, 4, 2, 3).reshape(batch, cout, 5, 5)
    torch.testing.assert_close(got, torch.conv2d(x, weight, bias_t, 2), rtol=1e-4, atol=1e-4)


class SharedConvTwoNorms(nn.Module):
    """One convolution weight read by three layers: with two different batch norms (domain
    batch norm), and with the second norm again at stride 2 (the same fold, another layout)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(2 * BLOCK, 16, 3, 3) * 0.1)
        self.b = nn.Parameter(torch.randn(2 * BLOCK))
        self.bn_a, self.bn_b = nn.BatchNorm2d(2 * BLOCK), nn.BatchNorm2d(2 * BLOCK)
        with torch.no_grad():
            self.bn_b.running_mean.fill_(5.0)
            self.bn_b.running_var.fill_(4.0)

    def forward(self, xa: torch.Tensor, xb: torch.Tensor) -> tuple[torch.Tensor, ...]:
        conv = nn.functional.conv2d
        return (
            self.bn_a(conv(xa, self.w, self.b, 1, 1)),
            self.bn_b(conv(xb, self.w, self.b, 1, 1)),
            self.bn_b(conv(xb, self.w, self.b, 2, 1)),
        )


@pytest.mark.parametrize("layout", ["NCHWc", "NCHW"])
def test_a_weight_shared_by_differently_folded_convolutions(layout):
    torch.manual_seed(0)
    model = SharedConvTwoNorms().eval()
    xa, xb = torch.randn(1, 16, 28, 28), torch.randn(1, 16, 28, 28)
    with torch.no_grad():
        expected = model(xa, xb)
        got = torch.compile(model, backend="pytvmbridge", options={"layout": layout})(xa, xb)
    for e, g in zip(expected, got, strict=True):
        assert g.shape == e.shape
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-4)
