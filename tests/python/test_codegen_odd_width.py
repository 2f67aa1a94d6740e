"""Contiguous vector loads of a kernel input whose lane count has an odd factor of 3 or more
(a 7x7 image's rows, 12- or 28-lane tails): on AVX-512 they are one masked load of the next
power of two instead of power-of-two pieces, so their values must equal NumPy's for every
width and dtype, with the last row ending at the array's last element."""

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import te, topi

rng = np.random.default_rng(11)


@pytest.mark.parametrize("width", [3, 5, 7, 12, 24, 28, 49])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8"])
def test_odd_width_row_load_matches_numpy(width, dtype):
    # One vector per row of `width` lanes; the last row ends at the array's last element.
    rows = 5
    A = te.placeholder((rows, width), name="A", dtype=dtype)
    B = te.compute((rows, width), lambda i, j: A[i, j] * 2, name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    f = tvm.build(s, [A, B])
    a = (rng.standard_normal((rows, width)) * 20).astype(dtype)
    b = np.zeros((rows, width), dtype)
    f(a, b)
    np.testing.assert_array_equal(b, a * np.array(2, dtype))


@pytest.mark.parametrize("hw", [(7, 7), (5, 5), (3, 9), (14, 7)])
def test_global_pool_of_odd_rows_matches_numpy(hw):
    x = tvm.placeholder((2, 33, *hw), name="x")
    y = topi.nn.adaptive_avg_pool2d(x, (1, 1))
    z = topi.nn.global_pool(x, "max")
    s = tvm.auto_schedule([y, z])
    f = tvm.build(s, [x, y, z])
    data = rng.standard_normal((2, 33, *hw)).astype("float32")
    data[1, 3, 0, -1] = np.nan
    out = np.zeros((2, 33, 1, 1), "float32")
    top = np.zeros((2, 33, 1, 1), "float32")
    f(data, out, top)
    np.testing.assert_allclose(out, data.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(top, data.max(axis=(2, 3), keepdims=True))
