"""One kernel, four frameworks: PyTorch, NumPy, JAX and MXNet arrays, no copies.

A kernel written once with ``@tvm.kernel`` (a softplus-scaled sum over rows) runs on each
framework's arrays and returns that framework's arrays; a built module goes through each
framework's bridge (``to_pytorch``, ``to_numpy``, ``to_jax``, ``to_mxnet``) in both call forms.
Every result is checked against the framework's own computation.

MXNet 1.9 needs NumPy < 1.24, so it lives in its own environment: this script runs the
frameworks that are installed where it runs (``.venv``: PyTorch, NumPy, JAX;
``.venv-mxnet``: NumPy, MXNet) and says which it skipped.

    .venv/bin/python examples/frameworks.py
    .venv-mxnet/bin/python examples/frameworks.py
"""

from __future__ import annotations

import importlib.util

import numpy as np

import pytvmbridge as tvm
from pytvmbridge.bridges import to_jax, to_mxnet, to_numpy, to_pytorch


@tvm.kernel
def row_energy(X, W):
    """out[i] = sum_j log(1 + exp(X[i, j])) * W[j]"""
    k = tvm.reduce_axis((0, X.shape[1]), name="k")
    return tvm.compute(
        (X.shape[0],), lambda i: tvm.sum(tvm.log1p(tvm.exp(X[i, k])) * W[k], axis=k), name="E"
    )


def reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return (np.log1p(np.exp(x.astype("float64"))) * w).sum(axis=1)


def build_scale():
    """A plain built module for the bridges: y = 2 x + 1, any length."""
    n = tvm.var("n")
    X = tvm.placeholder((n,), name="X")
    Y = tvm.compute((n,), lambda i: X[i] * 2.0 + 1.0, name="Y")
    return tvm.build(tvm.create_schedule(Y.op), [X, Y], name="scale")


def check(name: str, got: np.ndarray, want: np.ndarray) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    print(f"  {name:<50} ok")


def main() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 5)).astype("float32")
    w = rng.standard_normal(5).astype("float32")
    want = reference(x, w)
    v = np.arange(7, dtype="float32")
    scale = build_scale()
    ran, skipped = [], []

    def available(module: str) -> bool:
        (ran if importlib.util.find_spec(module) else skipped).append(module)
        return module in ran

    print("numpy")
    out = row_energy(x, w)
    assert isinstance(out, np.ndarray)
    check("@kernel -> numpy.ndarray", out, want)
    check("to_numpy(module)(x) -> numpy.ndarray", to_numpy(scale)(v), 2 * v + 1)
    y = np.empty_like(v)
    to_numpy(scale)(v, y)
    check("to_numpy(module)(x, y): in place", y, 2 * v + 1)

    if available("torch"):
        import torch

        print("torch")
        tx, tw = torch.from_numpy(x), torch.from_numpy(w)
        out = row_energy(tx, tw)
        assert isinstance(out, torch.Tensor)
        check("@kernel -> torch.Tensor", out.numpy(), want)
        tv = torch.from_numpy(v)
        check("to_pytorch(module)(x) -> torch.Tensor", to_pytorch(scale)(tv).numpy(), 2 * v + 1)
        ty = torch.empty(7)
        to_pytorch(scale)(tv, ty)
        check("to_pytorch(module)(x, y): in place", ty.numpy(), 2 * v + 1)

    if available("jax"):
        import jax
        import jax.numpy as jnp

        print("jax")
        out = row_energy(jnp.asarray(x), jnp.asarray(w))
        assert isinstance(out, jax.Array)
        check("@kernel -> jax.Array", np.asarray(out), want)
        out = to_jax(scale)(jnp.asarray(v))
        assert isinstance(out, jax.Array)
        check("to_jax(module)(x) -> jax.Array (immutable: no y)", np.asarray(out), 2 * v + 1)

    if available("mxnet"):
        import mxnet as mx

        print("mxnet")
        out = row_energy(mx.nd.array(x), mx.nd.array(w))
        assert isinstance(out, mx.nd.NDArray)
        check("@kernel -> mxnet NDArray", out.asnumpy(), want)
        mv = mx.nd.array(v)
        check("to_mxnet(module)(x) -> mxnet NDArray", to_mxnet(scale)(mv).asnumpy(), 2 * v + 1)
        my = mx.nd.empty((7,))
        to_mxnet(scale)(mv, my)
        check("to_mxnet(module)(x, y): in place", my.asnumpy(), 2 * v + 1)

    print(f"one kernel compiled {row_energy.compilations} time(s) for {1 + len(ran)} framework(s)")
    if skipped:
        print(f"not installed here: {', '.join(skipped)} (see this file's docstring)")


if __name__ == "__main__":
    main()
