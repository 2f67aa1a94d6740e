"""Gradients of product and extreme reductions against PyTorch and JAX: a product's gradient
where the row holds zeros (the product of the other elements, not output / element), a max or
min split evenly between tied elements and NaN over a row holding a NaN (torch.amax, jnp.max),
and second derivatives, which raise instead of being silently dropped."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import topi


def _grad_of(kernel, x):
    x = x.clone().requires_grad_(True)
    (kernel(x) * torch.linspace(0.5, 1.5, 3, dtype=x.dtype)).sum().backward()
    return x.grad


def _reference(fn, x):
    x = x.clone().requires_grad_(True)
    (fn(x) * torch.linspace(0.5, 1.5, 3, dtype=x.dtype)).sum().backward()
    return x.grad


ROWS = torch.tensor(
    [[1.0, 0.0, 3.0, 2.0], [0.0, 0.0, 2.0, 1.0], [1.5, -2.0, 3.0, 0.5]], dtype=torch.float64
)


def test_prod_with_zeros_matches_torch():
    k = tvm.kernel(lambda x: topi.prod(x, axis=1), name="prod_rows")
    torch.testing.assert_close(_grad_of(k, ROWS), _reference(lambda x: x.prod(1), ROWS))


def test_prod_with_zeros_matches_jax():
    k = tvm.kernel(lambda x: topi.prod(x, axis=1), name="prod_rows_jax")
    x = jnp.asarray(ROWS.numpy())
    got = jax.grad(lambda v: k(v).sum())(x)
    want = jax.grad(lambda v: jnp.prod(v, axis=1).sum())(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_tc_product_reduction_with_a_zero():
    pr = tvm.tc.define("def pr(double(M,K) A) -> (C) { C(m) *=! A(m,k) }", name="pr")
    x = ROWS.clone().requires_grad_(True)
    pr(x).sum().backward()
    torch.testing.assert_close(x.grad, _reference_sum(lambda v: v.prod(1), ROWS))


def _reference_sum(fn, x):
    x = x.clone().requires_grad_(True)
    fn(x).sum().backward()
    return x.grad


TIES = torch.tensor(
    [[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [1.0, float("nan"), 3.0, 0.0]],
    dtype=torch.float64,
)


@pytest.mark.parametrize("kind", ["max", "min"])
def test_extremes_split_ties_and_propagate_nan_as_amax(kind):
    k = tvm.kernel(lambda x: getattr(topi, kind)(x, axis=1), name=f"{kind}_rows")
    ref = (lambda x: x.amax(1)) if kind == "max" else (lambda x: x.amin(1))
    data = TIES if kind == "max" else -TIES
    torch.testing.assert_close(_grad_of(k, data), _reference(ref, data), equal_nan=True)


def test_max_ties_match_jax():
    k = tvm.kernel(lambda x: topi.max(x, axis=1), name="max_rows_jax")
    x = jnp.asarray(TIES.numpy()[:2])
    got = jax.grad(lambda v: k(v).sum())(x)
    want = jax.grad(lambda v: jnp.max(v, axis=1).sum())(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_second_derivative_raises_instead_of_dropping_terms():
    k = tvm.kernel(lambda a: topi.sum(topi.multiply(topi.multiply(a, a), a)), name="cube_sum")
    a = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(k(a), a, create_graph=True)
    torch.testing.assert_close(g, 3 * a.detach() ** 2)  # the first derivative is right
    with pytest.raises(RuntimeError, match="not differentiable again"):
        (g * a).sum().backward()
    # Without create_graph, nothing changes.
    a.grad = None
    k(a).backward()
    torch.testing.assert_close(a.grad, 3 * a.detach() ** 2)
    assert torch.autograd.gradcheck(k, (torch.rand(4, dtype=torch.float64, requires_grad=True),))
