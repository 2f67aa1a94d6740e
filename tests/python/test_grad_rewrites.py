"""te.gradient's simplifications (pytvmbridge/autodiff/shift.py, algebra.py): each one checked
for what it removes from the gradient and for the gradient's values against PyTorch (float64)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import _core, te, topi
from pytvmbridge.autodiff.algebra import factor_out, sums_to_zero
from pytvmbridge.autodiff.gradient import _producers, gradient_saving
from pytvmbridge.autodiff.shift import cancels

F64 = "float64"


def tensors_of(t):
    """Every tensor the computation of ``t`` reads, ``t`` included, by name."""
    seen, stack = {}, [t]
    while stack:
        u = stack.pop()
        if u.name in seen:
            continue
        seen[u.name] = u
        stack.extend(_producers(u))
    return seen


def softmax_parts(x):
    y = topi.nn.softmax(x)
    names = tensors_of(y)
    return y, names["T_softmax_maxelem"], names["T_softmax_expsum"]


def test_softmax_max_shift_cancels():
    x = te.placeholder((4, 6), name="x", dtype=F64)
    y, m, s = softmax_parts(x)
    assert cancels(y, m)
    assert not cancels(y, s)  # the sum is a real dependence
    # log_softmax subtracts log(sum(exp(x - m))): the shift cancels additively
    ly = topi.nn.log_softmax(x)
    assert cancels(ly, tensors_of(ly)["T_softmax_maxelem"])
    # without the normalisation the shift stays
    e = te.compute(x.shape, lambda i, j: te.exp(x[i, j] - m[i]), name="e")
    assert not cancels(e, m)


def run_grad(out, phs, head_shape, xs, saved=None, saved_value=None):
    head = te.placeholder(head_shape, name="head", dtype=F64)
    grads = gradient_saving(out, phs, head, saved)
    extra = [saved] if saved is not None else []
    f = tvm.build(tvm.auto_schedule(grads), [*phs, head, *extra, *grads])
    h = np.random.default_rng(1).standard_normal(head_shape)
    got = [np.empty_like(x) for x in xs]
    f(*xs, h, *([saved_value] if saved is not None else []), *got)
    return grads, h, got


@pytest.mark.parametrize("use_saved", [False, True])
def test_softmax_gradient_reads_the_output(use_saved):
    x = te.placeholder((5, 7), name="x", dtype=F64)
    y = topi.nn.softmax(x)
    a = np.random.default_rng(0).standard_normal((5, 7)) * 3
    ty = torch.tensor(a, requires_grad=True)
    ref_y = torch.softmax(ty, -1)
    saved = te.placeholder((5, 7), name="y_saved", dtype=F64) if use_saved else None
    (dx,), h, (got,) = run_grad(y, [x], (5, 7), [a], saved, ref_y.detach().numpy())
    (want,) = torch.autograd.grad(ref_y, [ty], torch.tensor(h))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-12)
    names = tensors_of(dx)
    # no argmax mask, no max: the shift's adjoint is gone
    assert not any("maxelem_grad" in n for n in names)
    if use_saved:  # y * (g - sum(g * y)): nothing of the forward is recomputed
        assert "T_softmax_maxelem" not in names and "T_softmax_expsum" not in names
        assert "y_saved" in names


def test_log_softmax_gradient():
    x = te.placeholder((3, 9), name="x", dtype=F64)
    out = topi.nn.log_softmax(x)
    a = np.random.default_rng(2).standard_normal((3, 9)) * 4
    (dx,), h, (got,) = run_grad(out, [x], (3, 9), [a])
    tx = torch.tensor(a, requires_grad=True)
    (want,) = torch.autograd.grad(torch.log_softmax(tx, -1), [tx], torch.tensor(h))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-12)
    assert not any("maxelem_grad" in n for n in tensors_of(dx))


def test_a_max_that_does_not_cancel_keeps_its_gradient():
    x = te.placeholder((3, 5), name="x", dtype=F64)
    _, m, _ = softmax_parts(x)
    e = te.compute(x.shape, lambda i, j: te.exp(x[i, j] - m[i]) * x[i, j], name="e")
    a = np.random.default_rng(3).standard_normal((3, 5))
    _, h, (got,) = run_grad(e, [x], (3, 5), [a])
    tx = torch.tensor(a, requires_grad=True)
    ref = torch.exp(tx - tx.amax(-1, keepdim=True)) * tx
    (want,) = torch.autograd.grad(ref, [tx], torch.tensor(h))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-12)


def test_layer_norm_gradient_without_the_mean_term_of_the_variance():
    x = te.placeholder((4, 10), name="x", dtype=F64)
    g = te.placeholder((10,), name="g", dtype=F64)
    b = te.placeholder((10,), name="b", dtype=F64)
    out = topi.nn.layer_norm(x, g, b)
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((4, 10)) * 2 + 1, rng.standard_normal(10), rng.standard_normal(10)]
    grads, h, got = run_grad(out, [x, g, b], (4, 10), xs)
    ts = [torch.tensor(v, requires_grad=True) for v in xs]
    ref = torch.nn.functional.layer_norm(ts[0], (10,), ts[1], ts[2])
    want = torch.autograd.grad(ref, ts, torch.tensor(h))
    for k in range(3):
        np.testing.assert_allclose(got[k], want[k].numpy(), rtol=1e-9, atol=1e-11)
    names = tensors_of(grads[0])
    # sum_k (x - mean) is zero: the variance passes nothing to the mean
    assert not any(n.startswith("T_layer_norm_mean_grad_T_layer_norm_sqsum") for n in names)
    # the statistics' kept axis of extent one is read at 0, not summed over: no reduction of
    # x's shape (a stored pass of its own) is left in the data gradient
    for t in names.values():
        if isinstance(t.op, te.ComputeOp) and _core.expr_parts(t.op.body[0])[0] == "Reduce":
            assert tuple(int(d) for d in t.shape) != (4, 10), t.name


def test_sums_to_zero_and_factor_out():
    x = te.placeholder((3, 8), name="x", dtype=F64)
    k = te.reduce_axis((0, 8), name="k")
    total = te.compute((3,), lambda i: te.sum(x[i, k], axis=k), name="total")
    mean = te.compute((3,), lambda i: total[i] / 8.0, name="mean")
    i = te.var("i")
    j = te.reduce_axis((0, 8), name="j")
    assert sums_to_zero(x[i, j.var] - mean[i], [j])
    assert sums_to_zero(2.0 * mean[i] - x[i, j.var] * 2.0, [j])
    assert not sums_to_zero(x[i, j.var] - 2.0 * mean[i], [j])
    short = te.reduce_axis((0, 7), name="short")  # a different range: no cancellation
    assert not sums_to_zero(x[i, short.var] - mean[i], [short])
    outside, inside = factor_out(x[i, j.var] * mean[i] / total[i], [j.var])
    assert "x" not in repr(outside) and "mean" in repr(outside) and "total" in repr(outside)
    assert repr(inside).startswith("x")
    assert factor_out(x[i, j.var] * x[i, j.var], [j.var]) is None


def test_softmax_kernel_backward_through_torch_uses_saved_output():
    sm = tvm.kernel(lambda a: topi.nn.softmax(a), name="sm_saved")
    a = torch.randn(6, 11, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(sm, (a,))
    y = sm(a)
    g = torch.randn(6, 11, dtype=torch.float64)
    y.backward(g)
    ref = a.detach().clone().requires_grad_()
    torch.softmax(ref, -1).backward(g)
    torch.testing.assert_close(a.grad, ref.grad, rtol=1e-10, atol=1e-12)


def test_softmax_custom_op_backward_reads_the_saved_output():
    # the custom op (torch.compile, torch.export) saves the outputs for its backward op too
    from pytvmbridge.autodiff.torch_autograd import torch_op

    sm = tvm.kernel(lambda a: topi.nn.softmax(a), name="sm_op_saved")
    op = torch_op(sm)
    a = torch.randn(4, 9, dtype=torch.float64, requires_grad=True)
    torch.library.opcheck(op, ([a],))
    (y,) = op([a])
    g = torch.randn(4, 9, dtype=torch.float64)
    y.backward(g)
    ref = a.detach().clone().requires_grad_()
    torch.softmax(ref, -1).backward(g)
    torch.testing.assert_close(a.grad, ref.grad, rtol=1e-10, atol=1e-12)

    def f(x):
        return (sm(x) * torch.arange(9.0, dtype=torch.float64)).sum()

    b = a.detach().clone().requires_grad_()
    torch.compile(f, backend="aot_eager")(b).backward()
    ref.grad = None
    (torch.softmax(ref, -1) * torch.arange(9.0, dtype=torch.float64)).sum().backward()
    torch.testing.assert_close(b.grad, ref.grad, rtol=1e-10, atol=1e-12)
