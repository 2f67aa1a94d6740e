"""Long chains of additions (issue 9, item 5): Python's sum() over many reads is regrouped
into blocks of 128 terms added pairwise before code generation (LLVM's instruction selection is
quadratic in the length of one chain). Values are checked against NumPy: float sums to the
rounding of a float32 sum, wrapping integer sums exactly, and short sums exactly as written."""

import numpy as np

import pytvmbridge as tvm


def build_sum(depth: int, n: int, dtype: str):
    A = tvm.placeholder((depth, n), name="A", dtype=dtype)
    B = tvm.compute((n,), lambda i: sum((A[k, i] for k in range(1, depth)), A[0, i]), name="B")
    s = tvm.create_schedule(B.op)
    return tvm.lower(s, [A, B]), tvm.build(s, [A, B])


def test_long_float_sum_is_regrouped_and_matches_numpy():
    depth, n = 400, 8
    lowered, f = build_sum(depth, n, "float32")
    text = str(lowered)
    assert text.count("A[") == depth  # every read once: nothing copied
    assert ") + ((" in text  # blocks added pairwise
    rng = np.random.default_rng(0)
    a = rng.standard_normal((depth, n)).astype("float32")
    b = np.zeros(n, "float32")
    f(a, b)
    ref = a.astype("float64").sum(axis=0)
    # float32 rounding of 400 terms of size ~1: well within 1e-4 absolute.
    np.testing.assert_allclose(b, ref, rtol=0, atol=1e-4)


def test_long_wrapping_integer_sum_is_exact():
    depth, n = 300, 4
    _, f = build_sum(depth, n, "uint8")
    a = (np.arange(depth * n).reshape(depth, n) * 37 % 256).astype("uint8")
    b = np.zeros(n, "uint8")
    f(a, b)
    np.testing.assert_array_equal(b, a.sum(axis=0, dtype="uint8"))


def test_short_sum_keeps_its_order_exactly():
    # 100 terms (at most one block): added left to right as written, bit for bit.
    depth, n = 100, 4
    lowered, f = build_sum(depth, n, "float32")
    assert ") + ((" not in str(lowered)
    a = (np.linspace(-1, 1, depth * n).reshape(depth, n) ** 3 * 1e4).astype("float32")
    b = np.zeros(n, "float32")
    f(a, b)
    ref = a[0].copy()
    for k in range(1, depth):
        ref = (ref + a[k]).astype("float32")
    np.testing.assert_array_equal(b, ref)


def test_wide_signed_integer_sum_is_left_as_written():
    # int32 additions may not overflow (nsw): a regrouping could, so they stay a chain.
    depth, n = 300, 2
    lowered, f = build_sum(depth, n, "int32")
    assert ") + ((" not in str(lowered)
    a = np.arange(depth * n, dtype="int32").reshape(depth, n)
    b = np.zeros(n, "int32")
    f(a, b)
    np.testing.assert_array_equal(b, a.sum(axis=0, dtype="int32"))
