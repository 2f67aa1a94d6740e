"""Reductions masked by a condition on the output's index (``where=k <= i``: prefix sums, a
triangular mask's row sums) under the automatic schedule, against NumPy.

The schedule vectorizes the reduction and splits it into a main part and a masked tail; the
loop-partitioning passes then decide the mask's comparisons per range of the output index. One
variable runs both parts of the split loop, and the pass once took the tail part's range for
both: for every row but the last it decided ``k <= i`` false and dropped the whole sum (rows of
zeros at lengths 17, 25, 33, not 16, 24, 32)."""

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import te

rng = np.random.default_rng(11)

MASKS = {
    "k<=i": (lambda k, i: k <= i, lambda k, i: k <= i),
    "k>=i": (lambda k, i: k >= i, lambda k, i: k >= i),
    "k<i+3": (lambda k, i: k < i + 3, lambda k, i: k < i + 3),
    "2k<=i": (lambda k, i: 2 * k <= i, lambda k, i: 2 * k <= i),
}


@pytest.mark.parametrize("mask", sorted(MASKS))
@pytest.mark.parametrize("n", [7, 16, 17, 25, 33, 40, 67])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_masked_sum_by_output_index_matches_numpy(n, mask, dtype):
    te_mask, np_mask = MASKS[mask]
    x = te.placeholder((n,), name="x", dtype=dtype)
    k = te.reduce_axis((0, n), name="k")
    out = te.compute((n,), lambda i: te.sum(x[k], axis=k, where=te_mask(k, i)), name="out")
    f = tvm.build(tvm.auto_schedule(out), [x, out])
    a = rng.standard_normal(n).astype(dtype)
    got = np.zeros(n, dtype)
    f(a, got)
    ks, i_s = np.meshgrid(np.arange(n), np.arange(n))
    want = (a[None, :] * np_mask(ks, i_s)).sum(1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [9, 25, 33])
def test_masked_row_sums_of_a_matrix_with_select(n):
    """The mask as a select in the summand (a causal mask's row sums), over rows and columns."""
    x = te.placeholder((3, n, n), name="x")
    k = te.reduce_axis((0, n), name="k")
    out = te.compute(
        (3, n),
        lambda b, i: te.sum(te.select(k <= i, x[b, i, k], te.const(0.0, "float32")), axis=k),
        name="out",
    )
    f = tvm.build(tvm.auto_schedule(out), [x, out])
    a = rng.standard_normal((3, n, n)).astype("float32")
    got = np.zeros((3, n), "float32")
    f(a, got)
    np.testing.assert_allclose(got, np.tril(a).sum(-1), rtol=1e-5, atol=1e-5)
