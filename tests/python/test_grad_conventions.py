"""Gradients where a function is not differentiable (kinks, ties, 0 ** 0): derived gradients
follow PyTorch's conventions there, checked point by point against torch.autograd on inputs
placed exactly on the kinks (gradcheck's random inputs never land on them)."""

from __future__ import annotations

import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import te, topi

NAN = float("nan")
INF = float("inf")


def _grads(kernel_fn, torch_fn, *inputs):
    """(ours, torch's) gradients of sum(f(inputs)) for each input, float64."""
    ours = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in inputs]
    theirs = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in inputs]
    tvm.kernel(kernel_fn)(*ours).sum().backward()
    torch_fn(*theirs).sum().backward()
    return [t.grad for t in ours], [t.grad for t in theirs]


def _assert_same(kernel_fn, torch_fn, *inputs):
    ours, theirs = _grads(kernel_fn, torch_fn, *inputs)
    for mine, ref in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, ref, equal_nan=True)


KINKS = [-4.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 7.0]


@pytest.mark.parametrize(
    "name, ours, theirs",
    [
        ("relu", topi.nn.relu, torch.relu),
        ("hardswish", topi.nn.hardswish, torch.nn.functional.hardswish),
        ("hardsigmoid", topi.nn.hardsigmoid, torch.nn.functional.hardsigmoid),
        ("clip", lambda x: topi.clip(x, -1.0, 6.0), lambda x: torch.clamp(x, -1.0, 6.0)),
        (
            "hardtanh_as_max_min",
            lambda x: te.compute(
                x.shape, lambda i: te.min(te.max(x[i], te.const(-1.0, x.dtype)), 1.0)
            ),
            lambda x: torch.nn.functional.hardtanh(x, -1.0, 1.0),
        ),
        (
            "relu6_as_max_min",
            lambda x: te.compute(
                x.shape, lambda i: te.min(te.max(x[i], te.const(0.0, x.dtype)), 6.0)
            ),
            torch.nn.functional.relu6,
        ),
    ],
)
def test_activation_kinks_match_torch(name, ours, theirs):
    _assert_same(ours, theirs, KINKS)


def test_relu_gradient_is_zero_at_zero_and_passes_through_nan():
    (grad,), _ = _grads(topi.nn.relu, torch.relu, [-1.0, 0.0, 2.0, NAN])
    assert grad.tolist() == [0.0, 0.0, 1.0, 1.0]
    _assert_same(topi.nn.relu, torch.relu, [-1.0, 0.0, 2.0, NAN])


def test_hard_activations_forward_at_and_between_kinks():
    x = torch.tensor([*KINKS, -2.9, 2.9, 1e-3], dtype=torch.float64)
    for ours, theirs in [
        (topi.nn.hardswish, torch.nn.functional.hardswish),
        (topi.nn.hardsigmoid, torch.nn.functional.hardsigmoid),
    ]:
        torch.testing.assert_close(tvm.kernel(ours)(x), theirs(x))
        assert torch.isnan(tvm.kernel(ours)(torch.tensor([NAN]))).all()


def test_clip_forward_keeps_nan_and_bounds():
    x = torch.tensor([-5.0, -1.0, 0.25, 6.0, 9.0, NAN])
    got = tvm.kernel(lambda a: topi.clip(a, -1.0, 6.0))(x)
    torch.testing.assert_close(got, torch.clamp(x, -1.0, 6.0), equal_nan=True)


@pytest.mark.parametrize(
    "ours, theirs", [(topi.maximum, torch.maximum), (topi.minimum, torch.minimum)]
)
def test_elementwise_max_min_split_ties_like_torch(ours, theirs):
    a = [1.0, 2.0, 3.0, -0.0, 5.0]
    b = [1.0, 1.0, 4.0, 0.0, 5.0]
    _assert_same(ours, theirs, a, b)
    ga, gb = _grads(ours, theirs, a, b)[0]
    assert ga[0].item() == gb[0].item() == 0.5
    # a NaN on either side passes the gradient to both, as torch.maximum does
    _assert_same(ours, theirs, [float("nan"), 1.0, 2.0], [0.0, float("nan"), 3.0])


def test_max_of_same_tensor_reads_counts_both_sides():
    # max(x, x) ties everywhere: the halves add back up to x's full gradient
    k = lambda x: te.compute(x.shape, lambda i: te.max(x[i], x[i]))  # noqa: E731
    _assert_same(k, lambda x: torch.maximum(x, x), [-1.0, 0.0, 2.0])


def test_power_base_gradient_at_zero_to_the_zero():
    base = [0.0, 0.0, 2.0, 0.0, -1.5, 0.0]
    exponent = [0.0, 2.0, 0.0, 1.0, 3.0, -1.0]
    _assert_same(topi.power, torch.pow, base, exponent)
    (g_base, _), _ = _grads(topi.power, torch.pow, base, exponent)
    assert g_base[0].item() == 0.0


def test_power_by_constant_zero_exponent_has_zero_gradient():
    k = lambda x: te.compute(x.shape, lambda i: te.power(x[i], te.const(0.0, x.dtype)))  # noqa: E731
    _assert_same(k, lambda x: torch.pow(x, 0.0), [0.0, 1.0, -2.0])


def test_power_infinite_and_nan_entries_match_torch():
    _assert_same(topi.power, torch.pow, [0.0, INF, NAN, 2.0], [0.0, 2.0, 0.0, INF])
