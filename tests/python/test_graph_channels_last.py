"""Graphs traced on channels_last tensors: the compiled kernel declares such inputs in their
memory order and reads them through an inlined view (``PermutedInput``), so it runs its compact
variant rather than the strided one, whose loads along the last axis would be gathers. Values
against eager PyTorch; the variant that ran from the loop profile."""

import pytest
import torch
from graph_spy import compiled_graphs
from torch import nn

import pytvmbridge as tvm
from pytvmbridge.graph import compile_graph
from pytvmbridge.graph.compiler import PermutedInput, memory_order


class Block(nn.Module):
    def __init__(self, channels: int = 16) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels)
        self.proj = nn.Conv2d(channels, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(torch.relu(self.bn(self.conv(x)) + x))


def _block() -> nn.Module:
    torch.manual_seed(0)
    m = Block().eval()
    with torch.no_grad():
        m.bn.running_mean.uniform_(-0.5, 0.5)
        m.bn.running_var.uniform_(0.5, 2.0)
    return m


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((2, 3, 4, 5), (0, 2, 3, 1)),  # channels_last
        ((1, 3, 4, 5), (0, 2, 3, 1)),  # a batch of one
        ((2, 1, 4, 5), None),  # one channel: channels_last is row-major too
    ],
)
def test_memory_order_of_channels_last(shape, expected):
    t = torch.empty(shape).to(memory_format=torch.channels_last)
    order = memory_order(t)
    if expected is None:
        assert order is None
    else:
        assert order == expected
        assert t.permute(order).is_contiguous()


def test_memory_order_of_other_layouts():
    assert memory_order(torch.empty(4, 6).t()) == (1, 0)
    assert memory_order(torch.empty(4, 6)) is None  # row-major
    assert memory_order(torch.empty(4, 12)[:, ::2]) is None  # gaps
    assert memory_order(torch.empty(4, 1).expand(4, 6)) is None  # stride 0
    assert memory_order(torch.empty(4, 6)[:, 1:].t()) is None  # gaps between the columns
    assert memory_order(torch.empty(6, 4)[1:].t()) == (1, 0)  # rows 1.. of a matrix: dense
    assert memory_order(torch.empty(5)) is None  # one dimension


def _strided_calls(fn, *args):
    with tvm.profile_loops() as prof:
        out = fn(*args)
    return out, [r.name for r in prof if "(strided)" in r.name]


def test_channels_last_input_runs_the_compact_variant():
    model = _block()
    x = torch.randn(2, 16, 9, 11).to(memory_format=torch.channels_last)
    graphs = compiled_graphs(model, [x])
    assert len(graphs) == 1
    permuted = [s for s in graphs[0].kernel_sources if isinstance(s, PermutedInput)]
    assert [s.dims for s in permuted] == [(0, 2, 3, 1)]
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="pytvmbridge")
    with torch.no_grad():
        compiled(x)  # compiles
        out, strided = _strided_calls(compiled, x)
        torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-4)
    assert strided == []


def test_channels_last_model_and_input_match_eager():
    model = _block().to(memory_format=torch.channels_last)
    inputs = [torch.randn(b, 16, 10, 7).to(memory_format=torch.channels_last) for b in (1, 3)]
    graphs = compiled_graphs(model, inputs, dynamic=True)
    assert graphs
    for g in graphs:
        # Convolution weights are packed from PyTorch's tensors whatever their layout: only
        # the activation is read permuted.
        permuted = [s for s in g.kernel_sources if isinstance(s, PermutedInput)]
        assert len(permuted) == 1


def test_compiled_for_channels_last_still_right_on_row_major_input():
    # A graph compiled for a channels_last input, called with a row-major one (Dynamo would
    # recompile; a direct caller may not): the permuted view is not row-major, and the kernel's
    # strided variant computes the same values.
    aten = torch.ops.aten
    gm = torch.fx.symbolic_trace(lambda a, b: aten.relu.default(aten.add.Tensor(a, b)))
    a = torch.randn(2, 5, 3, 4).to(memory_format=torch.channels_last)
    b = torch.randn(2, 5, 3, 4).to(memory_format=torch.channels_last)
    cg = compile_graph(gm, [a, b], permute_inputs=True)
    assert all(isinstance(s, PermutedInput) for s in cg.kernel_sources)
    out, strided = _strided_calls(cg, a, b)
    torch.testing.assert_close(out, torch.relu(a + b), rtol=0, atol=0)
    assert strided == []
    ac, bc = a.contiguous(), b.contiguous()
    out, strided = _strided_calls(cg, ac, bc)
    torch.testing.assert_close(out, torch.relu(a + b), rtol=0, atol=0)
    assert strided


@pytest.mark.parametrize("kind", ["elementwise", "conv"])
def test_outputs_have_eagers_strides(kind):
    torch.manual_seed(5)
    conv = nn.Conv2d(3, 8, 3, padding=1).eval()

    def fn(x):
        if kind == "conv":
            return torch.relu(conv(x)), x * 2
        return torch.relu(x) + 1

    x = torch.randn(2, 3, 6, 5).to(memory_format=torch.channels_last)
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="pytvmbridge", options={"strict": True})
    with torch.no_grad():
        expected, got = fn(x), compiled(x)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    for e, g in zip(expected, got, strict=True):
        assert g.stride() == e.stride()
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-4)
        # What code after the model may do with a channels_last result.
        flat = g.permute(0, 2, 3, 1).view(-1)
        torch.testing.assert_close(flat, e.permute(0, 2, 3, 1).reshape(-1), rtol=1e-4, atol=1e-4)
