"""Tensor Comprehensions with pytvmbridge: the TC documentation's examples, run on PyTorch, NumPy
and JAX arrays, each checked against the framework's own implementation.

TC writes a kernel in Einstein notation: loops are implicit, their ranges are inferred from the
tensors they index, and indices that appear only on the right-hand side are reduced. The TC
source compiles to the same tensor IR as pytvmbridge's Python DSL, then to native code with
LLVM; calls take any framework's arrays and return outputs allocated in that framework.

Run it with `.venv/bin/python examples/tc_quickstart.py`.
"""

import time

import jax.numpy as jnp
import numpy as np
import torch

from pytvmbridge import tc

# --- One def: matrix multiplication, on PyTorch tensors (TC's own first example) -------------
matmul = tc.define(
    """
    def matmul(float(M, K) A, float(K, N) B) -> (C) {
        C(m, n) +=! A(m, r_k) * B(r_k, n)
    }
    """,
    name="matmul",
)
mat1, mat2 = torch.randn(3, 4), torch.randn(4, 5)
start = time.perf_counter()
out = matmul(mat1, mat2)  # compiles on the first call, then reuses the kernel for any size
first_ms = (time.perf_counter() - start) * 1e3
torch.testing.assert_close(out, mat1 @ mat2, rtol=1e-5, atol=1e-5)
print(f"matmul {tuple(out.shape)}: matches torch (first call, with compilation: {first_ms:.0f} ms)")

# Sizes are symbolic: new shapes reuse the compiled kernel.
big1, big2 = torch.randn(128, 64), torch.randn(64, 96)
start = time.perf_counter()
out = matmul(big1, big2)
print(f"matmul {tuple(out.shape)}: {(time.perf_counter() - start) * 1e3:.2f} ms, no recompilation")
torch.testing.assert_close(out, big1 @ big2, rtol=1e-4, atol=1e-4)

# --- Several defs in one source: an attribute per def --------------------------------------
lib = tc.define(
    """
    # Convolution with a bias: the second statement updates O in place.
    def conv_bias(float(N, C, H, W) I, float(M, C, KH, KW) W1, float(M) B) -> (O) {
        O(n, m, h, w) +=! I(n, r_c, h + r_kh, w + r_kw) * W1(m, r_c, r_kh, r_kw)
        O(n, m, h, w) = O(n, m, h, w) + B(m)
    }

    # 2x2 max pooling with stride 2: where clauses give the window's ranges.
    def maxpool(float(N, C, H, W) I) -> (O) {
        O(n, c, h, w) max=! I(n, c, 2 * h + r_kh, 2 * w + r_kw) where r_kh in 0:2, r_kw in 0:2
    }

    # Softmax: the temporaries are outputs too, read by later statements.
    def softmax(float(N, D) I) -> (O, maxVal, expDistance, expSum) {
        maxVal(n) max=! I(n, d)
        expDistance(n, d) = exp(I(n, d) - maxVal(n))
        expSum(n) +=! expDistance(n, d)
        O(n, d) = expDistance(n, d) / expSum(n)
    }
    """
)
print("defs:", ", ".join(lib.names))

x, w, b = torch.randn(2, 3, 10, 10), torch.randn(4, 3, 3, 3), torch.randn(4)
torch.testing.assert_close(
    lib.conv_bias(x, w, b), torch.nn.functional.conv2d(x, w, b), rtol=1e-4, atol=1e-4
)
print("conv_bias on torch tensors: matches torch.nn.functional.conv2d")

images = np.random.default_rng(0).standard_normal((1, 2, 6, 6)).astype("float32")
pooled = lib.maxpool(images)  # NumPy in, NumPy out
expected = images.reshape(1, 2, 3, 2, 3, 2).max(axis=(3, 5))
np.testing.assert_allclose(pooled, expected)
print(f"maxpool on a NumPy array: {images.shape} -> {pooled.shape}, matches NumPy")

logits = jnp.asarray(np.random.default_rng(1).standard_normal((4, 7)).astype("float32"))
probabilities, *_ = lib.softmax(logits)  # JAX in, JAX out
np.testing.assert_allclose(
    np.asarray(probabilities),
    np.asarray(jnp.exp(logits) / jnp.exp(logits).sum(1, keepdims=True)),
    rtol=1e-5,
)
print(f"softmax on a JAX array: rows sum to {np.asarray(probabilities).sum(1).round(5).tolist()}")

# --- Errors point at the source -------------------------------------------------------------
try:
    tc.define(
        """
        def broken(float(M, K) A) -> (C) {
            C(m) = A(m, k)
        }
        """
    )
except tc.TCError as err:
    print(f"\nTCError at line {err.line}, column {err.column}:\n{err}")
    assert (err.line, err.column) == (3, 25)

try:
    matmul(torch.randn(3, 4), torch.randn(5, 6))
except ValueError as err:
    print(f"\nValueError: {err}")
    assert "'K'" in str(err)
