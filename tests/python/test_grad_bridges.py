"""to_pytorch / to_jax functions of built Modules are differentiable (inputs-only form): their
gradients, derived by te.gradient, against PyTorch's and JAX's own."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import te, topi
from pytvmbridge.bridges import to_jax, to_numpy, to_pytorch


def _matmul_tanh_module(dtype: str, symbolic: bool = True):
    n, k, m = (tvm.var("n"), tvm.var("k"), tvm.var("m")) if symbolic else (3, 4, 2)
    a = te.placeholder((n, k), name="a", dtype=dtype)
    b = te.placeholder((k, m), name="b", dtype=dtype)
    c = topi.tanh(topi.matmul(a, b))
    return tvm.build(tvm.create_schedule(c.op), [a, b, c], name="mm_tanh")


def _rand(*shape):
    g = torch.Generator().manual_seed(sum(shape))
    return torch.randn(*shape, dtype=torch.float64, generator=g).requires_grad_()


@pytest.mark.parametrize("symbolic", [True, False])
def test_to_pytorch_gradcheck(symbolic):
    f = to_pytorch(_matmul_tanh_module("float64", symbolic))
    a, b = _rand(3, 4), _rand(4, 2)
    y = f(a, b)
    assert y.grad_fn is not None
    torch.testing.assert_close(y, torch.tanh(a @ b))
    assert torch.autograd.gradcheck(f, (a, b))


def test_to_pytorch_gradients_match_torch_for_two_outputs():
    x = te.placeholder((5,), name="x", dtype="float64")
    sq = te.compute((5,), lambda i: x[i] * x[i], name="sq")
    sn = te.compute((5,), lambda i: te.sin(x[i]), name="sn")
    f = to_pytorch(tvm.build(tvm.create_schedule([sq.op, sn.op]), [x, sq, sn], name="two"))
    a = _rand(5)
    p, q = f(a)
    (p * 2.0 + q * 3.0).sum().backward()
    torch.testing.assert_close(a.grad, 4.0 * a.detach() + 3.0 * torch.cos(a.detach()))


def test_to_pytorch_without_grad_and_in_place_form_stay_plain():
    f = to_pytorch(_matmul_tanh_module("float64"))
    a, b = _rand(3, 4), _rand(4, 2)
    with torch.no_grad():
        assert f(a, b).grad_fn is None
    out = torch.empty(3, 2, dtype=torch.float64)
    assert f(a.detach(), b.detach(), out) is None
    torch.testing.assert_close(out, torch.tanh(a @ b).detach())
    # a NumPy bridge of the same module is not differentiable (NumPy has no autograd)
    got = to_numpy(_matmul_tanh_module("float64"))(a.detach().numpy(), b.detach().numpy())
    np.testing.assert_allclose(got, torch.tanh(a @ b).detach().numpy())


def test_to_pytorch_under_torch_compile():
    f = to_pytorch(_matmul_tanh_module("float32"))
    a = torch.randn(3, 4, requires_grad=True)
    b = torch.randn(4, 2, requires_grad=True)
    compiled = torch.compile(lambda a, b: (f(a, b) * 2.0).sum(), backend="aot_eager")
    compiled(a, b).backward()
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    (torch.tanh(a2 @ b2) * 2.0).sum().backward()
    torch.testing.assert_close(a.grad, a2.grad)
    torch.testing.assert_close(b.grad, b2.grad)


def test_opcheck_on_the_bridge_op():
    from pytvmbridge.autodiff.torch_autograd import torch_op

    op = torch_op(to_pytorch(_matmul_tanh_module("float64")))
    torch.library.opcheck(op, ([_rand(3, 4), _rand(4, 2)],))


def test_loaded_module_says_so_at_backward(tmp_path):
    path = str(tmp_path / "mm.so")
    _matmul_tanh_module("float64").export_library(path)
    f = to_pytorch(tvm.runtime.load_module(path))
    a, b = _rand(3, 4), _rand(4, 2)
    y = f(a, b)  # the forward runs
    torch.testing.assert_close(y, torch.tanh(a @ b))
    with pytest.raises(RuntimeError, match=r"'mm_tanh'.*no tensor expressions"):
        y.sum().backward()


def test_to_jax_grad_matches_jax():
    f = to_jax(_matmul_tanh_module("float32"))
    rng = np.random.default_rng(2)
    a = jnp.asarray(rng.standard_normal((3, 4)), dtype=jnp.float32)
    b = jnp.asarray(rng.standard_normal((4, 2)), dtype=jnp.float32)
    w = jnp.asarray(rng.standard_normal((3, 2)), dtype=jnp.float32)
    got = jax.grad(lambda a, b: (f(a, b) * w).sum(), argnums=(0, 1))(a, b)
    want = jax.grad(lambda a, b: (jnp.tanh(a @ b) * w).sum(), argnums=(0, 1))(a, b)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-4, atol=1e-5)
    jitted = jax.jit(jax.grad(lambda a: (f(a, b) * w).sum()))(a)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(want[0]), rtol=1e-4, atol=1e-5)


def test_reversed_numpy_input_beside_a_tensor_that_requires_grad():
    # PyTorch's from_dlpack aborts the process on a negative stride: the NumPy view is copied.
    f = to_pytorch(_matmul_tanh_module("float64"))
    a = _rand(3, 4)
    b = np.arange(16, dtype="float64").reshape(4, 4)[::-1, ::-2] / 10.0  # strides (-4, -2)
    y = f(a, b)
    expected = torch.tanh(a @ torch.from_numpy(b.copy()))
    torch.testing.assert_close(y, expected)
    y.sum().backward()
    expected_grad = torch.autograd.grad(expected.sum(), a)[0]
    torch.testing.assert_close(a.grad, expected_grad)

    @tvm.kernel
    def add(x, z):
        return tvm.compute(x.shape, lambda i: x[i] + z[i], name="s")

    t = torch.ones(4, requires_grad=True)
    torch.testing.assert_close(
        add(t, np.arange(4.0, dtype="float32")[::-1]), 1.0 + torch.arange(3.0, -1.0, -1.0)
    )
