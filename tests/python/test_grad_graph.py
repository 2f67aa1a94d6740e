"""The graph backend's training path: with strict=True every operator of AOT autograd's forward
and backward graphs is compiled (convolution_backward and avg_pool2d_backward by te.gradient),
and loss.backward() gives eager PyTorch's gradients."""

from __future__ import annotations

import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import te


def _grads(model, x):
    model.zero_grad()
    x = x.clone().requires_grad_(True)
    out = model(x)
    (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
    return out.detach(), [p.grad.clone() for p in model.parameters()] + [x.grad]


def _assert_strict_step_matches(model, x, reference=None, out_rtol=1e-5, grad_rtol=1e-4):
    """One training step of ``model`` compiled with strict=True (any operator left to PyTorch
    raises) against eager PyTorch on ``reference`` (default: the same model, run first)."""
    expected_out, expected = _grads(model if reference is None else reference, x)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="pytvmbridge", options={"strict": True})
    out, grads = _grads(compiled, x)
    torch.testing.assert_close(out, expected_out, rtol=out_rtol, atol=1e-5)
    for got, want in zip(grads, expected, strict=True):
        torch.testing.assert_close(got, want, rtol=grad_rtol, atol=1e-5)


def test_conv_training_step_is_compiled_whole_and_matches_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 6, 3, padding=1, stride=2),
        torch.nn.Tanh(),
        torch.nn.AvgPool2d(2),
        torch.nn.Conv2d(6, 4, 3, bias=False),
        torch.nn.Flatten(),
        torch.nn.Linear(4, 3),
    )
    # strict: an operator left to PyTorch (convolution_backward before te.gradient) raises
    _assert_strict_step_matches(model, torch.randn(2, 3, 14, 14))


@pytest.mark.parametrize("mask", [(False, True, True), (True, False, False)])
def test_convolution_backward_converter_against_aten(mask):
    from pytvmbridge.autodiff.graph_grads import convolution_backward

    g, x, w = torch.randn(2, 4, 3, 3), torch.randn(2, 3, 6, 6), torch.randn(4, 3, 3, 3)
    conv = ([4], [2, 2], [1, 1], [1, 1], False, [0, 0], 1, list(mask))
    phs = [te.placeholder(tuple(t.shape), name=n) for t, n in zip((g, x, w), "gxw", strict=True)]
    results = convolution_backward(*phs, *conv)
    assert [r is not None for r in results] == list(mask)
    produced = [r for r in results if r is not None]
    f = tvm.build(tvm.auto_schedule(produced), [*phs, *produced])
    got = [torch.empty(tuple(int(d) for d in r.shape)) for r in produced]
    f(g, x, w, *got)
    want = torch.ops.aten.convolution_backward.default(g, x, w, *conv)
    expected = [e for e, m in zip(want, mask, strict=True) if m]
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_relu_max_pool_training_step_is_compiled_whole_and_matches_eager():
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 6, 3, padding=1),
        torch.nn.ReLU(),  # windows of zeros: tied maxima, whose gradient goes to one element
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(6, 4, 3),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(3, 2, 1),  # overlapping, padded windows
        torch.nn.Flatten(),
        torch.nn.Linear(16, 3),
    )
    # strict: max_pool2d_with_indices (forward, with its indices), its backward and ReLU's
    # backward (le, scalar_tensor, where) all compiled, or this raises
    _assert_strict_step_matches(model, torch.randn(2, 3, 12, 12))


def _run(outputs, inputs, args):
    f = tvm.build(tvm.auto_schedule(outputs), [*inputs, *outputs])
    got = [
        torch.empty(tuple(int(d) for d in o.shape), dtype=getattr(torch, o.dtype)) for o in outputs
    ]
    f(*args, *got)
    return got


@pytest.mark.parametrize("pool", [([2, 2], [2, 2], [0, 0]), ([3, 3], [2, 2], [1, 1])])
def test_max_pool_indices_and_backward_against_aten(pool):
    from pytvmbridge.autodiff.graph_grads import (
        max_pool2d_with_indices,
        max_pool2d_with_indices_backward,
    )

    kernel, stride, padding = pool
    # rounded values: many ties inside a window, resolved to the first (row-major) as in aten
    x = torch.randn(2, 3, 7, 7).round().clamp(min=0)
    want_out, want_idx = torch.ops.aten.max_pool2d_with_indices.default(x, kernel, stride, padding)
    g = torch.randn(want_out.shape)
    xp = te.placeholder(tuple(x.shape), name="x")
    out, idx = max_pool2d_with_indices(xp, kernel, stride, padding)
    got_out, got_idx = _run([out, idx], [xp], [x])
    torch.testing.assert_close(got_out, want_out)
    assert torch.equal(got_idx, want_idx)

    gp = te.placeholder(tuple(g.shape), name="g")
    ip = te.placeholder(tuple(g.shape), "int64", name="i")
    dx = max_pool2d_with_indices_backward(gp, xp, kernel, stride, padding, [1, 1], False, ip)
    # a gather over the window (never a reduction over the whole output image)
    assert sorted(int(r.dom.extent) for r in dx.op.reduce_axis) == sorted(kernel)
    (got,) = _run([dx], [gp, xp, ip], [g, x, want_idx])
    want = torch.ops.aten.max_pool2d_with_indices_backward.default(
        g, x, kernel, stride, padding, [1, 1], False, want_idx
    )
    torch.testing.assert_close(got, want)


class _NormNet(torch.nn.Module):
    """Batch norm in training (batch statistics, running statistics updated), ReLU6 and a
    layer norm: what the training graphs of MobileNetV2, ResNet and BERT add to a plain CNN."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = torch.nn.BatchNorm2d(8)
        self.pool = torch.nn.MaxPool2d(2)
        self.norm = torch.nn.LayerNorm(8 * 4 * 4)
        self.fc = torch.nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        h = self.pool(torch.nn.functional.relu6(self.bn(self.conv(x)) * 4.0))
        return self.fc(self.norm(h.flatten(1)))


def test_norm_training_step_is_compiled_whole_and_matches_eager():
    torch.manual_seed(2)
    model = _NormNet().train()
    twin = _NormNet().train()
    twin.load_state_dict(model.state_dict())
    # strict: native_layer_norm and batch norm's training form with their saved statistics,
    # the running-statistics update and step counter, ReLU6's backward (bitwise_or, where)
    x = torch.randn(4, 3, 8, 8)
    _assert_strict_step_matches(model, x, reference=twin, out_rtol=1e-4, grad_rtol=1e-3)
    for got, want in zip(model.buffers(), twin.buffers(), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
