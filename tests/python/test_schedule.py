"""Schedule primitives compiled and run: each alone and in combination, against NumPy, at sizes
that are and are not multiples of the factors; lower() shows the scheduled loop nest."""

import numpy as np
import pytest

import pytvmbridge as tvm

SIZES = [1, 7, 16, 33]


def elementwise(n, m):
    A = tvm.placeholder((n, m), name="A")
    B = tvm.compute((n, m), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    return A, B


def run_elementwise(s, A, B, shape):
    f = tvm.build(s, [A, B])
    a = np.random.rand(*shape).astype("float32")
    b = np.full(shape, np.nan, dtype="float32")
    f(a, b)
    np.testing.assert_allclose(b, a * 2.0 + 1.0, rtol=1e-6)


def matmul(n, m, k, dtype="float32"):
    A = tvm.placeholder((n, k), dtype=dtype, name="A")
    B = tvm.placeholder((k, m), dtype=dtype, name="B")
    r = tvm.reduce_axis((0, k), name="k")
    C = tvm.compute((n, m), lambda i, j: tvm.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


def run_matmul(s, A, B, C, n, m, k, dtype="float32"):
    f = tvm.build(s, [A, B, C])
    a = np.random.rand(n, k).astype(dtype)
    b = np.random.rand(k, m).astype(dtype)
    c = np.full((n, m), np.nan, dtype=dtype)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("factor", [1, 4, 5])
def test_split_factor(n, factor):
    A, B = elementwise(n, 3)
    s = tvm.create_schedule(B.op)
    xo, _xi = s[B].split(B.op.axis[0], factor=factor)
    assert xo.var.name == "i.outer" if hasattr(xo, "var") else True
    run_elementwise(s, A, B, (n, 3))


@pytest.mark.parametrize("n", SIZES)
def test_split_nparts(n):
    A, B = elementwise(n, 5)
    s = tvm.create_schedule(B.op)
    s[B].split(B.op.axis[1], nparts=2)
    run_elementwise(s, A, B, (n, 5))


def test_split_symbolic_extent():
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    B = tvm.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = tvm.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)
    s[B].parallel(xo)
    f = tvm.build(s, [A, B])
    for size in [0, 1, 7, 8, 9, 100]:
        a = np.random.rand(size).astype("float32")
        b = np.empty(size, "float32")
        f(a, b)
        np.testing.assert_allclose(b, a + 1.0)


@pytest.mark.parametrize("shape", [(16, 16), (13, 7), (1, 40)])
def test_tile(shape):
    A, B = elementwise(*shape)
    s = tvm.create_schedule(B.op)
    _xo, _yo, _xi, _yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=4, y_factor=8)
    assert [iv.var.name for iv in s[B].leaf_iter_vars] == [
        "i.outer",
        "j.outer",
        "i.inner",
        "j.inner",
    ]
    run_elementwise(s, A, B, shape)


@pytest.mark.parametrize("shape", [(16, 16), (5, 3)])
def test_fuse_then_split_vectorize_parallel(shape):
    A, B = elementwise(*shape)
    s = tvm.create_schedule(B.op)
    fused = s[B].fuse(B.op.axis[0], B.op.axis[1])
    xo, xi = s[B].split(fused, factor=8)
    s[B].parallel(xo)
    s[B].vectorize(xi)
    text = str(tvm.lower(s, [A, B]))
    if shape == (16, 16):  # (5, 3): one whole tile and the last one, each a loop of one
        assert "parallel (i.j.fused.outer, 0, 32)" in text
    assert "ramp(" in text
    run_elementwise(s, A, B, shape)


def test_fuse_accepts_a_list_and_three_axes():
    A = tvm.placeholder((3, 4, 5), name="A")
    B = tvm.compute((3, 4, 5), lambda i, j, k: A[i, j, k] - 1.0, name="B")
    s = tvm.create_schedule(B.op)
    f = s[B].fuse([B.op.axis[0], B.op.axis[1], B.op.axis[2]])
    assert len(s[B].leaf_iter_vars) == 1
    s[B].vectorize(f)
    g = tvm.build(s, [A, B])
    a = np.random.rand(3, 4, 5).astype("float32")
    b = np.empty_like(a)
    g(a, b)
    np.testing.assert_allclose(b, a - 1.0)


@pytest.mark.parametrize("shape", [(8, 9, 10), (1, 1, 1)])
def test_reorder(shape):
    n, m, k = shape
    A, B, C = matmul(n, m, k)
    s = tvm.create_schedule(C.op)
    i, j = C.op.axis
    (r,) = C.op.reduce_axis
    s[C].reorder(r, j, i)
    assert list(s[C].leaf_iter_vars) == [r, j, i]
    run_matmul(s, A, B, C, n, m, k)


@pytest.mark.parametrize("n", [1, 3, 16, 21, 64, 100])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8"])
def test_vectorize_any_extent_and_dtype(n, dtype):
    A = tvm.placeholder((4, n), dtype=dtype, name="A")
    B = tvm.compute((4, n), lambda i, j: A[i, j] + A[i, n - 1 - j], name="B")
    s = tvm.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    f = tvm.build(s, [A, B])
    a = (np.random.rand(4, n) * 50).astype(dtype)
    b = np.zeros((4, n), dtype)
    f(a, b)
    np.testing.assert_array_equal(b, a + a[:, ::-1])


def test_vectorize_gather_and_math():
    A = tvm.placeholder((10, 12), name="A")
    B = tvm.compute((12, 10), lambda i, j: tvm.exp(A[j, i]) + tvm.sqrt(A[j, i]), name="B")
    s = tvm.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    f = tvm.build(s, [A, B])
    a = np.random.rand(10, 12).astype("float32")
    b = np.empty((12, 10), "float32")
    f(a, b)
    np.testing.assert_allclose(b, np.exp(a.T) + np.sqrt(a.T), rtol=1e-5)


def test_vectorize_if_then_else_guards_reads():
    n = 30
    A = tvm.placeholder((n,), name="A")
    B = tvm.compute(
        (n + 2,), lambda i: tvm.if_then_else(tvm.all(i >= 1, i <= n), A[i - 1], 0.0), name="B"
    )
    s = tvm.create_schedule(B.op)
    _xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    f = tvm.build(s, [A, B])
    a = np.random.rand(n).astype("float32")
    b = np.empty(n + 2, "float32")
    f(a, b)
    np.testing.assert_allclose(b, np.concatenate([[0], a, [0]]).astype("float32"))


def test_vectorize_reduce_axis_stays_correct():
    A, B, C = matmul(4, 5, 19)
    s = tvm.create_schedule(C.op)
    s[C].vectorize(C.op.reduce_axis[0])
    run_matmul(s, A, B, C, 4, 5, 19)


def test_vectorize_outer_loop_over_inner_reduction():
    A, B, C = matmul(6, 16, 9)
    s = tvm.create_schedule(C.op)
    i, j = C.op.axis
    (r,) = C.op.reduce_axis
    s[C].reorder(i, j, r)
    s[C].vectorize(j)
    assert "ramp(" in str(tvm.lower(s, [A, B, C]))
    run_matmul(s, A, B, C, 6, 16, 9)


@pytest.mark.parametrize("factor", [3, 4, 70])
def test_unroll(factor):
    A, B = elementwise(10, 9)
    s = tvm.create_schedule(B.op)
    _xo, xi = s[B].split(B.op.axis[1], factor=factor)
    s[B].unroll(xi)
    run_elementwise(s, A, B, (10, 9))


def test_parallel_shows_in_lower_and_runs():
    A, B = elementwise(64, 8)
    s = tvm.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    assert "parallel (i, 0, 64)" in str(tvm.lower(s, [A, B]))
    run_elementwise(s, A, B, (64, 8))


def test_parallel_reduction_data_axis():
    A, B, C = matmul(37, 11, 13)
    s = tvm.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    run_matmul(s, A, B, C, 37, 11, 13)


def stencil(n):
    A = tvm.placeholder((n,), name="A")
    B = tvm.compute((n,), lambda i: A[i] * 3.0, name="B")
    C = tvm.compute((n - 2,), lambda i: B[i] + B[i + 1] + B[i + 2], name="C")
    return A, B, C


def check_stencil(s, A, C, n):
    f = tvm.build(s, [A, C])
    a = np.random.rand(n).astype("float32")
    c = np.empty(n - 2, "float32")
    f(a, c)
    b = a * 3.0
    np.testing.assert_allclose(c, b[:-2] + b[1:-1] + b[2:], rtol=1e-5)


@pytest.mark.parametrize("n", [3, 10, 64, 67])
def test_compute_at(n):
    A, B, C = stencil(n)
    s = tvm.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[B].compute_at(s[C], xo)
    s[B].vectorize(B.op.axis[0])
    s[C].vectorize(xi)
    text = str(tvm.lower(s, [A, C]))
    # A tile of 8 outputs reads 10 of B; a factor larger than C (n = 3: one output) is cut to it.
    assert f"allocate B[float32 * {min(n, 10)}]" in text, text
    check_stencil(s, A, C, n)


def test_compute_inline_and_root():
    A, B, C = stencil(20)
    s = tvm.create_schedule(C.op)
    s[B].compute_inline()
    assert "allocate" not in str(tvm.lower(s, [A, C]))
    check_stencil(s, A, C, 20)
    s[B].compute_root()
    assert "allocate B" in str(tvm.lower(s, [A, C]))
    check_stencil(s, A, C, 20)


@pytest.mark.parametrize("index_dtype", ["int64", "int32", "int8"])
def test_inlined_stage_read_at_indices_loaded_from_a_tensor(index_dtype):
    # The loaded index replaces B's axis variable in B's body (i * 4 + j): an index of another
    # integer dtype than the variable's used to meet it in that arithmetic and fail the build
    A = tvm.placeholder((16,), name="A")
    I = tvm.placeholder((5,), name="I", dtype=index_dtype)
    B = tvm.compute((4, 4), lambda i, j: A[i * 4 + j] * 2.0, name="B")
    C = tvm.compute((5, 4), lambda i, j: B[I[i], j], name="C")
    s = tvm.create_schedule(C.op)
    s[B].compute_inline()
    f = tvm.build(s, [A, I, C])
    a = np.random.rand(16).astype("float32")
    rows = np.array([3, 0, 2, 2, 1], dtype=index_dtype)
    c = np.full((5, 4), np.nan, dtype="float32")
    f(a, rows, c)
    np.testing.assert_array_equal(c, (a.reshape(4, 4) * 2.0)[rows])


@pytest.mark.parametrize("shape", [(64, 64, 64), (33, 47, 29)])
def test_cache_write_compute_at(shape):
    n, m, k = shape
    A, B, C = matmul(n, m, k)
    s = tvm.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    assert CC.name == "C.local" and s[CC].scope == "local"
    xo, yo, _xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    (kc,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kc, factor=4)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)
    s[C].vectorize(yi)
    s[C].parallel(xo)
    run_matmul(s, A, B, C, n, m, k)


def test_compute_at_a_loop_enclosing_the_consumer():
    # B (a copy of A's panel) computed at C's outer loop, where the cache CC that reads it is
    # computed deeper (at yo): C itself does not read B, and B's region is what CC reads over
    # every loop inside xo: 8 rows of A (a GEMM's panel packed once for all its tiles).
    n, m, k = 33, 40, 12
    A = tvm.placeholder((n, k), name="A")
    Bw = tvm.placeholder((k, m), name="Bw")
    AP = tvm.compute((n, k), lambda i, r: A[i, r] + 0.0, name="AP")
    r = tvm.reduce_axis((0, k), name="k")
    C = tvm.compute((n, m), lambda i, j: tvm.sum(AP[i, r] * Bw[r, j], axis=r), name="C")
    s = tvm.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    xo, yo, _xi, _yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[CC].compute_at(s[C], yo)
    s[AP].compute_at(s[C], xo)
    text = str(tvm.lower(s, [A, Bw, C]))
    assert f"allocate AP[float32 * 8 * {k}]" in text, text
    assert text.index("allocate AP") < text.index("for (j.outer")
    f = tvm.build(s, [A, Bw, C])
    a, b = np.random.rand(n, k).astype("float32"), np.random.rand(k, m).astype("float32")
    c = np.empty((n, m), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    # With no consumer inside that loop (the cache computed at root) it stays an error.
    s = tvm.create_schedule(C.op)
    s.cache_write(C, "local")
    with pytest.raises(ValueError, match="does not read"):
        s[AP].compute_at(s[C], s[C].op.axis[0])


@pytest.mark.parametrize("where", ["row", "column", "cache_read"])
def test_compute_at_a_consumer_that_gathers(where):
    # D[i, j] = B[I[i], j] with B computed at D's loops: B's region starts at a read of the
    # index tensor I (an embedding lookup), which the realized buffer's offset loads
    A = tvm.placeholder((10, 6), name="A")
    index = tvm.placeholder((5,), name="I", dtype="int64")
    B = tvm.compute((10, 6), lambda i, j: A[i, j] * 3.0, name="B")
    D = tvm.compute((5, 6), lambda i, j: B[index[i], j] + 1.0, name="D")
    s = tvm.create_schedule(D.op)
    if where == "cache_read":
        s[s.cache_read(B, "local", [D])].compute_at(s[D], D.op.axis[0])
    else:
        s[B].compute_at(s[D], D.op.axis[0 if where == "row" else 1])
    f = tvm.build(s, [A, index, D])
    a = np.random.rand(10, 6).astype("float32")
    ids = np.array([3, 0, 9, 9, 1])
    d = np.empty((5, 6), "float32")
    f(a, ids, d)
    np.testing.assert_allclose(d, a[ids] * 3 + 1, rtol=1e-6)


def test_cache_read():
    A, B, C = matmul(20, 24, 10)
    s = tvm.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    BB = s.cache_read(B, "shared", C.op)
    assert s[AA].op.name == "A.shared"
    xo, _xi = s[C].split(C.op.axis[0], factor=8)
    s[AA].compute_at(s[C], xo)
    s[BB].vectorize(s[BB].op.axis[1])
    run_matmul(s, A, B, C, 20, 24, 10)


@pytest.mark.parametrize("k", [64, 37])
def test_rfactor_parallel_reduction(k):
    A = tvm.placeholder((k,), name="A")
    r = tvm.reduce_axis((0, k), name="k")
    B = tvm.compute((1,), lambda i: tvm.sum(A[r], axis=r), name="B")
    s = tvm.create_schedule(B.op)
    _ko, ki = s[B].split(r, factor=16)
    BF = s.rfactor(B, ki)
    assert tuple(int(d) for d in BF.shape) == (16, 1)
    s[BF].parallel(s[BF].op.axis[0])
    s[B].vectorize(s[B].op.reduce_axis[0])
    f = tvm.build(s, [A, B])
    a = np.random.rand(k).astype("float32")
    b = np.empty(1, "float32")
    f(a, b)
    np.testing.assert_allclose(b[0], a.sum(), rtol=1e-5)


def test_rfactor_row_sums_compute_at():
    A = tvm.placeholder((9, 50), name="A")
    r = tvm.reduce_axis((0, 50), name="k")
    B = tvm.compute((9,), lambda i: tvm.max(A[i, r], axis=r), name="B")
    s = tvm.create_schedule(B.op)
    _ko, ki = s[B].split(r, factor=8)
    BF = s.rfactor(B, ki)
    s[BF].compute_at(s[B], s[B].op.axis[0])
    s[B].parallel(s[B].op.axis[0])
    f = tvm.build(s, [A, B])
    a = np.random.rand(9, 50).astype("float32")
    b = np.empty(9, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a.max(axis=1))


def test_stage_lookup_by_tensor_operation_and_cache_tensor():
    _A, _B, C = matmul(4, 4, 4)
    s = tvm.create_schedule(C.op)
    assert s[C] == s[C.op]
    CC = s.cache_write(C, "global")
    assert s[CC] == s[CC.op]
    assert s[C].op.name == "C" and s[C].origin_op == C.op
    assert repr(s[C]) == "<Stage C>"
