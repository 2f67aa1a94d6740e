"""@kernel and to_jax on bfloat16 and float16 JAX arrays: eager, under jax.jit, jax.grad and
jax.vmap (whose pure_callback hands the kernel ml_dtypes bfloat16 NumPy arrays, which NumPy
cannot export through DLPack), against JAX computing the same in float32 and casting."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import te
from pytvmbridge.autodiff.jax_vjp import _host
from pytvmbridge.bridges import to_jax

HALVES = ["bfloat16", "float16"]
# A few units in the last place of each: the kernel rounds after every operation, the reference
# once at the end.
RTOL = {"bfloat16": 2.0**-6, "float16": 2.0**-9}

f32 = jnp.float32

# One kernel per expression for the whole module: a @kernel compiles once per input dtype.
poly = tvm.kernel(lambda a, b: te.compute(a.shape, lambda *i: a[i] * b[i] + a[i] * a[i] * 0.5))


def poly_ref(a: jax.Array, b: jax.Array) -> jax.Array:
    return a * b + a * a * 0.5


def _inputs(dtype: str, *shapes: tuple[int, ...]) -> list[jax.Array]:
    # Positive values away from zero: no cancellation, so a relative tolerance holds.
    rng = np.random.default_rng(7)
    return [jnp.asarray(rng.uniform(0.5, 2.0, s), dtype=f32).astype(dtype) for s in shapes]


def _in_float32(fn: Callable[..., jax.Array], dtype: str) -> Callable[..., jax.Array]:
    """fn computed in float32 on the half inputs, its result cast back to ``dtype``."""
    return lambda *xs: fn(*(x.astype(f32) for x in xs)).astype(dtype)


def _close(got: jax.Array, want: jax.Array, dtype: str) -> None:
    assert got.dtype == want.dtype == jnp.dtype(dtype)
    np.testing.assert_allclose(
        np.asarray(got, np.float32), np.asarray(want, np.float32), rtol=RTOL[dtype], atol=1e-3
    )


@pytest.mark.parametrize("dtype", HALVES)
def test_eager_and_jit_match_float32_reference(dtype: str) -> None:
    a, b = _inputs(dtype, (3, 5), (3, 5))
    want = _in_float32(poly_ref, dtype)(a, b)
    _close(poly(a, b), want, dtype)
    _close(jax.jit(poly)(a, b), want, dtype)
    # the kernel among JAX's own operations in one compiled function
    got = jax.jit(lambda a, b: poly(a * 2, b) - a)(a, b)
    _close(got, _in_float32(lambda a, b: poly_ref(a * 2, b) - a, dtype)(a, b), dtype)


@pytest.mark.parametrize("dtype", HALVES)
def test_grad_matches_jax_grad(dtype: str) -> None:
    a, b = _inputs(dtype, (7,), (7,))
    w = jnp.linspace(-1.0, 2.0, 7, dtype=f32)  # cotangents other than ones

    def loss(fn: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
        return lambda a, b: (fn(a, b).astype(f32) * w).sum()

    # JAX's gradient of the same expression in float32, cast back to the inputs' dtype by the
    # astype's transpose
    want = jax.grad(loss(lambda a, b: poly_ref(a.astype(f32), b.astype(f32))), argnums=(0, 1))(a, b)
    for got in (
        jax.grad(loss(poly), argnums=(0, 1))(a, b),
        jax.jit(jax.grad(loss(poly), argnums=(0, 1)))(a, b),
    ):
        for g, e in zip(got, want, strict=True):
            _close(g, e, dtype)


@pytest.mark.parametrize("dtype", HALVES)
def test_vmap_and_vmap_of_grad(dtype: str) -> None:
    a, b = _inputs(dtype, (3, 4), (3, 4))
    _close(jax.vmap(poly)(a, b), _in_float32(poly_ref, dtype)(a, b), dtype)

    def grad_a(fn: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
        return jax.grad(lambda a, b: fn(a, b).astype(f32).sum())

    want = jax.vmap(grad_a(lambda a, b: poly_ref(a.astype(f32), b.astype(f32))))(a, b)
    _close(jax.vmap(grad_a(poly))(a, b), want, dtype)


@pytest.mark.parametrize("dtype", HALVES)
def test_kernels_changing_the_dtype(dtype: str) -> None:
    # float32 in, half out: the outputs are allocated in the first input's framework, which in
    # the callback must then not be NumPy (it has no bfloat16 to allocate)
    down = tvm.kernel(
        lambda a: te.compute(a.shape, lambda i: (a[i] * 3.0).astype(dtype)), name=f"down_{dtype}"
    )
    x = jnp.linspace(0.5, 2.0, 6, dtype=f32)
    want = (x * 3.0).astype(dtype)
    _close(jax.jit(down)(x), want, dtype)
    g = jax.grad(lambda x: down(x).astype(f32).sum())(x)
    np.testing.assert_allclose(np.asarray(g), np.full(6, 3.0), rtol=1e-6)

    # half in, float32 out
    up = tvm.kernel(lambda a: te.compute(a.shape, lambda i: a[i].astype("float32") * 2.0))
    (h,) = _inputs(dtype, (6,))
    np.testing.assert_allclose(np.asarray(jax.jit(up)(h)), np.asarray(h.astype(f32) * 2), rtol=1e-6)
    _close(jax.grad(lambda h: up(h).sum())(h), jnp.full(6, 2.0, dtype), dtype)


@pytest.mark.parametrize("dtype", HALVES)
def test_to_jax_bridge_under_jit_grad_and_vmap(dtype: str) -> None:
    n = tvm.var("n")
    X = tvm.placeholder((n,), name="X", dtype=dtype)
    Y = tvm.compute((n,), lambda i: X[i] * X[i], name="Y")
    f = to_jax(tvm.build(tvm.create_schedule(Y.op), [X, Y], name=f"square_{dtype}"))
    (x,) = _inputs(dtype, (5,))
    want = _in_float32(lambda v: v * v, dtype)(x)
    _close(f(x), want, dtype)
    _close(jax.jit(f)(x), want, dtype)
    _close(jax.vmap(f)(jnp.stack([x, x]))[1], want, dtype)
    got = jax.grad(lambda v: f(v).astype(f32).sum())(x)
    _close(got, jax.grad(lambda v: (v.astype(f32) ** 2).sum())(x), dtype)


def test_callback_arrays_reach_the_kernel_without_a_copy() -> None:
    # bfloat16: an NDArray of the same memory (DLPack's bfloat16 code); other dtypes as they are
    x = np.arange(6, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(2, 3)
    x.flags.writeable = False  # as XLA hands its buffers to the callback
    v: Any = _host(x)
    assert isinstance(v, tvm.nd.NDArray) and v.dtype == "bfloat16" and v.shape == (2, 3)
    assert v.data_ptr == x.ctypes.data and v.read_only
    h = np.zeros(3, np.float16)
    assert _host(h) is h
