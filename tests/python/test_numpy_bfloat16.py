"""NumPy arrays of ml_dtypes' bfloat16 (what np.asarray gives for a JAX bfloat16 array): read
and written by kernels without a copy, and bfloat16 outputs allocated as such arrays."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch

import pytvmbridge as tvm

BF16 = ml_dtypes.bfloat16


def _values(n: int) -> np.ndarray:
    # exact in bfloat16 (8 bits of mantissa): integers up to 256, halves
    return (np.arange(n, dtype=np.float32) - n // 2) / 2


def test_kernel_reads_and_allocates_bfloat16_numpy_arrays():
    double = tvm.kernel(lambda a: tvm.compute(a.shape, lambda i: a[i] * 2.0, name="d"))
    x = _values(37).astype(BF16)
    y = double(x)
    assert isinstance(y, np.ndarray) and y.dtype == BF16
    np.testing.assert_array_equal(y.astype(np.float32), _values(37) * 2)
    np.testing.assert_array_equal(double(x[::3]).astype(np.float32), _values(37)[::3] * 2)
    # the same as torch's bfloat16 arithmetic
    want = (torch.from_numpy(_values(37)).bfloat16() * 2).float().numpy()
    np.testing.assert_array_equal(y.astype(np.float32), want)


def test_casts_between_bfloat16_and_float32_numpy_arrays():
    down = tvm.kernel(lambda a: tvm.compute(a.shape, lambda i: a[i].astype("bfloat16"), name="dn"))
    up = tvm.kernel(lambda a: tvm.compute(a.shape, lambda i: a[i].astype("float32"), name="up"))
    x = np.array([1.0, 1.00390625, -3.5, 1e30, np.inf, np.nan], np.float32)
    got = down(x)
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.astype(np.float32), x.astype(BF16).astype(np.float32))
    back = up(got)
    assert back.dtype == np.float32
    np.testing.assert_array_equal(back, x.astype(BF16).astype(np.float32))


def test_built_module_writes_a_bfloat16_output_in_place():
    n = tvm.var("n")
    A = tvm.placeholder((n,), "bfloat16", name="A")
    B = tvm.compute((n,), lambda i: A[i] + A[i], name="B")
    f = tvm.build(tvm.create_schedule(B.op), [A, B])
    a = _values(10).astype(BF16)
    b = np.zeros(10, BF16)
    f(a, b)
    np.testing.assert_array_equal(b.astype(np.float32), _values(10) * 2)
