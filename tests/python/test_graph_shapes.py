"""Shape operators in compiled graphs against eager PyTorch, in strict mode (a partition that
falls back to PyTorch fails the test): squeeze of given dimensions (its result feeding a
broadcast, where a kept dimension would broadcast to a wrong shape), logsumexp (a reduction
squeezed), the ``x.view(x.size(0), -1)`` of a symbolic batch before a linear layer, and math
functions feeding a softmax."""

import pytest
import torch

from pytvmbridge.graph import backend


def _check(fn, *inputs, dynamic=False):
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="pytvmbridge", options={"strict": True})
    for args in inputs if dynamic else [inputs]:
        if dynamic:
            for a in args:
                torch._dynamo.mark_dynamic(a, 0)
        expected = fn(*args)
        got = compiled(*args)
        assert got.shape == expected.shape
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("fn", "shapes"),
    [
        (lambda a, b: a.squeeze(1) + b, [(4, 1), (4,)]),
        (lambda a, b: a.squeeze(1) * b, [(3, 1, 5), (5,)]),
        (lambda a, b: a.squeeze((1, 3)) - b, [(2, 1, 3, 1), (2, 3)]),
        (lambda a, b: a.squeeze(-1) + b, [(6, 1), (6,)]),
        (lambda a, b: a.squeeze(0) + b, [(2, 3), (2, 3)]),  # not 1: kept, as PyTorch does
        (lambda a, b: a.squeeze() + b, [(1, 4, 1), (4,)]),
    ],
)
def test_squeeze_then_broadcast(fn, shapes):
    torch.manual_seed(0)
    _check(fn, *[torch.randn(s) for s in shapes])


@pytest.mark.parametrize(("shape", "dim"), [((4, 6), 1), ((4, 6), 0), ((2, 3, 5), 1)])
def test_logsumexp(shape, dim):
    torch.manual_seed(1)
    _check(lambda x: x.logsumexp(dim) * 2, torch.randn(shape))


def test_squeezed_reduction_backward_matches_eager():
    torch.manual_seed(2)
    x = torch.randn(5, 7, requires_grad=True)

    def fn(t):
        return (t.amax(1, keepdim=True).squeeze(1) * t.sum(1)).sum()

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="pytvmbridge")
    (g_expected,) = torch.autograd.grad(fn(x), x)
    (g_got,) = torch.autograd.grad(compiled(x), x)
    torch.testing.assert_close(g_got, g_expected, rtol=1e-5, atol=1e-5)


def test_view_batch_minus_one_before_linear_with_a_symbolic_batch():
    torch.manual_seed(3)
    conv = torch.nn.Conv2d(3, 8, 3, padding=1).eval()
    lin = torch.nn.Linear(8 * 2 * 2, 5).eval()

    def fn(x):
        y = torch.relu(conv(x))
        return lin(y.view(y.size(0), -1))

    before = backend.compile_count
    with torch.no_grad():
        _check(fn, *[(torch.randn(b, 3, 2, 2),) for b in (2, 3, 6)], dynamic=True)
    assert backend.compile_count - before == 1


@pytest.mark.parametrize("first", ["log", "exp", "sqrt", "tanh"])
@pytest.mark.parametrize("norm", ["softmax", "log_softmax"])
def test_math_function_feeding_a_softmax(first, norm):
    torch.manual_seed(4)
    x = torch.rand(4, 16) + 0.5

    def fn(t):
        return getattr(getattr(t, first)(), norm)(-1)

    _check(fn, x)
