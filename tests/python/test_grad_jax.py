"""@kernel under jax.grad (custom_vjp with the derived gradient) against JAX's own gradient."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import te, topi

# float32 (JAX's default; switching on x64 here would change every later JAX test)


def _arrays(*shapes):
    rng = np.random.default_rng(1)
    return [jnp.asarray(rng.standard_normal(s), dtype=jnp.float32) for s in shapes]


CASES = {
    "matmul": (lambda a, b: topi.matmul(a, b), lambda a, b: a @ b, [(4, 5), (5, 3)]),
    "softmax": (lambda x: topi.nn.softmax(x), lambda x: jax.nn.softmax(x, -1), [(3, 6)]),
    "layer_norm": (
        lambda x, g, b: topi.nn.layer_norm(x, g, b),
        lambda x, g, b: (
            (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5) * g + b
        ),
        [(3, 6), (6,), (6,)],
    ),
    "tanh_mul": (
        lambda a, b: te.compute(a.shape, lambda i: te.tanh(a[i]) * b[i] + te.exp(b[i] * 0.5)),
        lambda a, b: jnp.tanh(a) * b + jnp.exp(b * 0.5),
        [(7,), (7,)],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_jax_grad_matches_jax(name):
    fn, ref, shapes = CASES[name]
    k = tvm.kernel(fn, name=name)
    xs = _arrays(*shapes)
    w = _arrays(ref(*xs).shape)[0]
    argnums = tuple(range(len(xs)))
    got = jax.grad(lambda *a: (k(*a) * w).sum(), argnums=argnums)(*xs)
    want = jax.grad(lambda *a: (ref(*a) * w).sum(), argnums=argnums)(*xs)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-4, atol=1e-5)


def test_jax_jit_of_grad():
    k = tvm.kernel(lambda a: te.compute(a.shape, lambda i: te.sin(a[i]) * a[i]), name="xsin")
    x = _arrays((6,))[0]
    got = jax.jit(jax.grad(lambda a: k(a).sum()))(x)
    np.testing.assert_allclose(
        np.asarray(got), np.asarray(jnp.cos(x) * x + jnp.sin(x)), rtol=1e-5, atol=1e-6
    )


def test_plain_jax_call_is_unchanged():
    k = tvm.kernel(lambda a: te.compute(a.shape, lambda i: a[i] + 1.0), name="inc")
    out = k(jnp.arange(3.0))
    assert isinstance(out, jax.Array) and out.tolist() == [1.0, 2.0, 3.0]


def test_vmap_runs_the_kernel_per_element():
    @tvm.kernel
    def scaled_square(a):
        return tvm.compute(a.shape, lambda *i: a[i] * a[i] * 3.0, name="sq3")

    x = jnp.arange(12.0, dtype=jnp.float32).reshape(3, 4) - 5.0
    want = np.asarray(x) ** 2 * 3
    np.testing.assert_allclose(np.asarray(jax.vmap(scaled_square)(x)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.jit(jax.vmap(scaled_square))(x)), want, rtol=1e-6)
    grads = jax.vmap(jax.grad(lambda v: scaled_square(v).sum()))(x)
    np.testing.assert_allclose(np.asarray(grads), 6 * np.asarray(x), rtol=1e-6)


def test_grad_of_a_scalar_loss_and_of_a_0d_input():
    loss = tvm.kernel(lambda a: topi.sum(topi.multiply(a, a)), name="loss")
    x = jnp.arange(3.0, dtype=jnp.float32)
    np.testing.assert_allclose(jax.grad(loss)(x), [0.0, 2.0, 4.0])
    scale = tvm.kernel(lambda s, a: te.compute(a.shape, lambda i: s[()] * a[i]), name="scale")
    ds, da = jax.grad(lambda s, a: scale(s, a).sum(), argnums=(0, 1))(jnp.float32(2.0), x)
    np.testing.assert_allclose(ds, 3.0)
    np.testing.assert_allclose(da, [2.0, 2.0, 2.0])


def test_the_backward_callback_is_made_once():
    # The host callback is a static parameter of JAX's primitive: a closure made per backward
    # was a new primitive each eager call, compiled and cached again (15 ms and 1.5 MB a call)
    @tvm.kernel
    def f(A, B):
        return tvm.compute(A.shape, lambda i, j: tvm.tanh(A[i, j]) * B[i, j])

    x = jnp.ones((4, 4))
    y = jnp.full((4, 4), 2.0)

    def callbacks():
        jaxpr = jax.make_jaxpr(jax.grad(lambda a: f(a, y).sum()))(x)
        return [
            e.params["callback"] for e in jaxpr.jaxpr.eqns if e.primitive.name == "pure_callback"
        ]

    first, second = callbacks(), callbacks()
    assert len(first) == 2  # the forward's and the backward's
    assert first == second
    for _ in range(3):
        g = jax.grad(lambda a: f(a, y).sum())(x)
        np.testing.assert_allclose(g, (1 - np.tanh(1.0) ** 2) * 2, rtol=1e-5)
