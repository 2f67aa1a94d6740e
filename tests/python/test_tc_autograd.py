"""tc.make_autograd: a torch.autograd.Function from a forward TC def and hand-written backward
TCs, checked with torch.autograd.gradcheck (float64) and against PyTorch's own gradients."""

import pytest
import torch

from pytvmbridge import tc

LIB = tc.define("""
def matmul(double(M, K) A, double(K, N) B) -> (C) {
    C(m, n) +=! A(m, r_k) * B(r_k, n)
}
def matmul_grad(double(M, K) A, double(K, N) B, double(M, N) dC) -> (dA, dB) {
    dA(m, k) +=! dC(m, r_n) * B(k, r_n)
    dB(k, n) +=! A(r_m, k) * dC(r_m, n)
}
def tanh_scale(double(N) X, double(N) S) -> (Y) { Y(i) = tanh(X(i)) * S(i) }
def tanh_scale_grad(double(N) X, double(N) S, double(N) dY) -> (dX, dS) {
    dX(i) = dY(i) * S(i) * (1 - tanh(X(i)) * tanh(X(i)))
    dS(i) = dY(i) * tanh(X(i))
}
def gather(double(V, D) W, int64(B) I) -> (O) { O(b, d) = W(I(b), d) }
def gather_grad(double(V, D) W, int64(B) I, double(B, D) dO) -> (dW) {
    dW(v, d) +=! (I(r_b) == v) ? dO(r_b, d) : 0.0 where v in 0:V
}
""")


def test_gradcheck_matmul():
    f = tc.make_autograd(LIB.matmul, LIB.matmul_grad)
    a = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(f, (a, b))
    f(a, b).square().sum().backward()
    ga, gb = a.grad.clone(), b.grad.clone()
    a.grad = b.grad = None
    (a @ b).square().sum().backward()
    torch.testing.assert_close(ga, a.grad)
    torch.testing.assert_close(gb, b.grad)


def test_gradcheck_elementwise_with_two_outputs_of_the_backward():
    f = tc.make_autograd(LIB.tanh_scale, LIB.tanh_scale_grad)
    x = torch.randn(7, dtype=torch.float64, requires_grad=True)
    s = torch.randn(7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(f, (x, s))
    torch.testing.assert_close(f(x, s), torch.tanh(x) * s)


def test_embedding_backward_with_a_python_backward_function():
    # The backward may be any callable; an integer input gets the gradient None.
    def backward(w, ids, d_out):
        return LIB.gather_grad(w, ids, d_out), None

    f = tc.make_autograd(LIB.gather, backward)
    w = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    ids = torch.tensor([1, 4, 1, 0])
    assert torch.autograd.gradcheck(lambda w: f(w, ids), (w,))
    (f(w, ids) * torch.arange(12.0, dtype=torch.float64).view(4, 3)).sum().backward()
    g = w.grad.clone()
    w.grad = None
    (
        torch.nn.functional.embedding(ids, w) * torch.arange(12.0, dtype=torch.float64).view(4, 3)
    ).sum().backward()
    torch.testing.assert_close(g, w.grad)


def test_wrong_gradient_count_and_bad_arguments():
    f = tc.make_autograd(LIB.tanh_scale, lambda x, s, dy: LIB.tanh_scale_grad(x, s, dy)[0])
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(ValueError, match="1 gradient"):
        f(x, torch.ones(3, dtype=torch.float64)).sum().backward()
    with pytest.raises(TypeError, match="two callables"):
        tc.make_autograd(LIB.tanh_scale, "not a function")
