"""Reads outside a tensor: a compute whose affine indices reach past an input's end is refused
by build() when the sizes are constants, and by the call once symbolic sizes are bound (before
anything runs), naming the compute, the tensor, the dimension and both ranges. Reads under a
condition (a pad), gathers and empty loops are not refused; values against NumPy."""

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import te, topi
from pytvmbridge.error import TVMValueError


def naive(outputs, args):
    return tvm.build(tvm.create_schedule([o.op for o in outputs]), args)


def test_symbolic_sizes_reading_past_the_end():
    n, m = te.var("n"), te.var("m")
    b = te.placeholder((n,), name="B", dtype="int32")
    d = te.compute((m,), lambda i: b[i] + 1, name="D")
    f = naive([d], [b, d])
    src = np.arange(5, dtype="int32")
    out = np.zeros(5, "int32")
    f(src, out)  # m == n: in bounds
    np.testing.assert_array_equal(out, src + 1)
    short = np.zeros(3, "int32")
    f(src, short)  # m < n: in bounds
    np.testing.assert_array_equal(short, src[:3] + 1)
    long = np.full(10, -7, "int32")
    with pytest.raises(
        TVMValueError, match=r"compute 'D' reads 'B' in dimension 0 at indices 0\.\.9"
    ):
        f(src, long)
    assert (long == -7).all()  # refused before anything ran
    f(src, np.zeros(0, "int32"))  # no element: nothing read


def test_shifted_reads_and_reductions():
    n = te.var("n")
    a = te.placeholder((n, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    nxt = te.compute((n - 1, 4), lambda i, j: a[i + 1, j] - a[i, j], name="diff")
    total = te.compute((n,), lambda i: te.sum(a[i, k], axis=k), name="total")
    f = naive([nxt, total], [a, nxt, total])
    x = np.random.default_rng(0).standard_normal((6, 4)).astype("float32")
    got_diff, got_total = np.empty((5, 4), "float32"), np.empty(6, "float32")
    f(x, got_diff, got_total)
    np.testing.assert_allclose(got_diff, x[1:] - x[:-1], rtol=1e-6)
    np.testing.assert_allclose(got_total, x.sum(1), rtol=1e-5)


def test_constant_sizes_are_refused_at_build():
    a = te.placeholder((8,), name="A")
    k = te.reduce_axis((0, 4), name="k")
    c = te.compute((6,), lambda i: te.sum(a[i + k], axis=k), name="window")
    with pytest.raises(
        TVMValueError, match=r"compute 'window' reads 'A' in dimension 0 at indices 0\.\.8"
    ):
        naive([c], [a, c])
    ok = te.compute((5,), lambda i: te.sum(a[i + k], axis=k), name="window")
    f = naive([ok], [a, ok])
    x = np.arange(8, dtype="float32")
    out = np.empty(5, "float32")
    f(x, out)
    np.testing.assert_allclose(out, np.convolve(x, np.ones(4, "float32"), "valid"))


def test_guarded_reads_gathers_and_topi_are_not_refused():
    n = te.var("n")
    x = te.placeholder((n,), name="x")
    idx = te.placeholder((3,), name="idx", dtype="int32")
    padded = te.compute(
        (n + 2,),
        lambda i: te.if_then_else(te.all(i >= 1, i <= n), x[i - 1], te.const(0.0, "float32")),
        name="padded",
    )
    gathered = topi.take(x, idx, mode="clip")
    img = te.placeholder((1, 2, 7, 7), name="img")
    pooled = topi.nn.max_pool2d(img, (3, 3), (2, 2), (1, 1))
    f = naive([padded, gathered], [x, idx, padded, gathered])
    data = np.arange(1, 5, dtype="float32")
    out_pad, out_take = np.empty(6, "float32"), np.empty(3, "float32")
    f(data, np.array([0, 9, -2], "int32"), out_pad, out_take)
    np.testing.assert_array_equal(out_pad, np.pad(data, 1))
    np.testing.assert_array_equal(out_take, data[np.clip([0, 9, -2], 0, 3)])
    g = tvm.build(tvm.auto_schedule([pooled]), [img, pooled])
    pixels = np.random.default_rng(1).standard_normal((1, 2, 7, 7)).astype("float32")
    out_pool = np.empty((1, 2, 4, 4), "float32")
    g(pixels, out_pool)
    padded_img = np.pad(pixels, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    windows = np.lib.stride_tricks.sliding_window_view(padded_img, (3, 3), axis=(2, 3))
    np.testing.assert_array_equal(out_pool, windows[:, :, ::2, ::2].max(axis=(-1, -2)))


def test_saved_module_keeps_its_checks(tmp_path):
    n, m = te.var("n"), te.var("m")
    b = te.placeholder((n,), name="B")
    d = te.compute((m,), lambda i: b[i] * 2.0, name="D")
    path = str(tmp_path / "d.ptb")
    naive([d], [b, d]).save(path)
    g = tvm.runtime.load_module(path)
    with pytest.raises(TVMValueError, match="reads 'B'"):
        g(np.ones(2, "float32"), np.empty(4, "float32"))
    out = np.empty(2, "float32")
    g(np.ones(2, "float32"), out)
    np.testing.assert_array_equal(out, [2.0, 2.0])


def test_monotone_indices_are_checked_exactly():
    # i // 2 + 5 and max(i, 8) reach their interval bounds: refused at build, naming the range
    a = te.placeholder((8,), name="A")
    up = te.compute((8,), lambda i: a[i // 2 + 5], name="up")
    with pytest.raises(TVMValueError, match=r"'up' reads 'A' in dimension 0 at indices 5\.\.8"):
        naive([up], [a, up])
    clamped = te.compute((8,), lambda i: a[te.max(i, 8)], name="clamped")
    with pytest.raises(TVMValueError, match=r"at indices 8\.\.8"):
        naive([clamped], [a, clamped])
    # The same in bounds runs; a mod or i * i (whose intervals are not exact) is not refused
    x = np.arange(8, dtype="float32")
    for body, want in (
        (lambda i: a[i // 2 + 4], x[np.arange(8) // 2 + 4]),
        (lambda i: a[te.min(i, 3)], x[np.minimum(np.arange(8), 3)]),
        (lambda i: a[(i * 3) % 7], x[(np.arange(8) * 3) % 7]),
        (lambda i: a[(i * i) // 8], x[np.arange(8) ** 2 // 8]),
    ):
        b = te.compute((8,), body, name="B")
        out = np.empty(8, "float32")
        naive([b], [a, b])(x, out)
        np.testing.assert_array_equal(out, want)


def test_monotone_indices_over_symbolic_sizes_are_checked_per_call():
    m = te.var("m")
    a = te.placeholder((m,), name="A")
    b = te.compute((m,), lambda i: a[i // 2 + 5], name="B")
    f = naive([b], [a, b])
    with pytest.raises(TVMValueError, match=r"'B' reads 'A' in dimension 0 at indices 5\.\.8"):
        f(np.zeros(8, "float32"), np.zeros(8, "float32"))
    x = np.arange(12, dtype="float32")
    out = np.empty(12, "float32")
    f(x, out)
    np.testing.assert_array_equal(out, x[np.arange(12) // 2 + 5])


def test_an_intermediate_of_negative_size_is_a_value_error():
    n = te.var("n")
    a = te.placeholder((n,), name="A")
    b = te.compute((n - 3,), lambda i: a[i] + a[i + 3], name="B")
    k = te.reduce_axis((0, n - 3), name="k")
    c = te.compute((1,), lambda i: te.sum(b[k], axis=k), name="C")
    f = naive([c], [a, c])
    with pytest.raises(
        TVMValueError, match=r"axis 'i' of stage 'B' is \(n - 3\), which is -1 .*'n' = 2"
    ):
        f(np.zeros(2, "float32"), np.zeros(1, "float32"))
    out = np.zeros(1, "float32")
    f(np.arange(5, dtype="float32"), out)
    np.testing.assert_array_equal(out, [0 + 3 + 1 + 4])
