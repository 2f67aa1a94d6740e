"""Tensor Comprehensions end to end: the classic programs of the TC documentation, compiled and
run on PyTorch, NumPy and JAX arrays of several shapes, against NumPy / PyTorch references."""

import jax.numpy as jnp
import numpy as np
import pytest
import torch

from pytvmbridge import tc

RNG = np.random.default_rng(0)


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def close(actual, expected, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)


MATMUL = """
def matmul(float(M, K) A, float(K, N) B) -> (C) {
    C(m, n) +=! A(m, r_k) * B(r_k, n)
}
"""


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (3, 4, 5), (17, 33, 9), (64, 32, 48)])
def test_matmul_numpy(m, k, n):
    f = tc.define(MATMUL)
    a, b = rand(m, k), rand(k, n)
    c = f(a, b)
    assert isinstance(c, np.ndarray) and c.shape == (m, n) and c.dtype == np.float32
    close(c, a @ b)


def test_matmul_torch_and_a_single_compilation():
    f = tc.define(MATMUL, name="matmul")
    for m, k, n in [(2, 3, 4), (8, 5, 1), (31, 7, 13)]:
        a, b = torch.randn(m, k), torch.randn(k, n)
        c = f(a, b)
        assert isinstance(c, torch.Tensor) and c.shape == (m, n)
        torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-5)
    module = f.module
    f(torch.randn(5, 6), torch.randn(6, 2))
    assert f.module is module  # sizes are symbolic: compiled once


def test_matmul_jax():
    f = tc.define(MATMUL)
    a, b = rand(4, 6), rand(6, 3)
    c = f(jnp.asarray(a), jnp.asarray(b))
    assert "jax" in type(c).__module__
    close(c, a @ b)


def test_matmul_float64_and_out():
    f = tc.define(MATMUL.replace("float(", "double("))
    a, b = rand(5, 4, dtype="float64"), rand(4, 3, dtype="float64")
    out = np.empty((5, 3))
    assert f(a, b, out=out) is out
    close(out, a @ b, rtol=1e-12, atol=1e-12)


CONV = """
def convolution(float(N, C, H, W) I, float(M, C, KH, KW) W1, float(M) B) -> (O) {
    O(n, m, h, w) +=! I(n, r_c, h + r_kh, w + r_kw) * W1(m, r_c, r_kh, r_kw)
    O(n, m, h, w) = O(n, m, h, w) + B(m)
}
"""


@pytest.mark.parametrize(
    "n,c,h,w,m,kh,kw", [(1, 1, 3, 3, 1, 3, 3), (2, 3, 8, 7, 4, 3, 2), (1, 4, 12, 12, 5, 5, 5)]
)
def test_convolution_with_bias(n, c, h, w, m, kh, kw):
    f = tc.define(CONV)
    x, wt, b = torch.randn(n, c, h, w), torch.randn(m, c, kh, kw), torch.randn(m)
    out = f(x, wt, b)
    torch.testing.assert_close(out, torch.nn.functional.conv2d(x, wt, b), rtol=1e-4, atol=1e-4)


STRIDED_CONV = """
def strided(float(N, C, H, W) I, float(M, C, KH, KW) W1) -> (O) {
    O(n, m, h, w) +=! I(n, r_c, 2 * h + r_kh, 3 * w + r_kw) * W1(m, r_c, r_kh, r_kw)
}
"""


@pytest.mark.parametrize("h,w", [(7, 9), (8, 8), (3, 3), (10, 4)])
def test_strided_convolution(h, w):
    f = tc.define(STRIDED_CONV)
    x, wt = torch.randn(2, 3, h, w), torch.randn(4, 3, 3, 2)
    out = f(x, wt)
    expected = torch.nn.functional.conv2d(x, wt, stride=(2, 3))
    assert out.shape == expected.shape
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)


MAXPOOL = """
def maxpool(float(N, C, H, W) input) -> (output) {
    output(n, c, h, w) max=! input(n, c, h * 2 + r_kh, w * 2 + r_kw)
        where r_kh in 0:2, r_kw in 0:2
}
"""


@pytest.mark.parametrize("h,w", [(4, 4), (7, 5), (2, 2), (16, 9)])
def test_max_pooling(h, w):
    f = tc.define(MAXPOOL)
    x = torch.randn(2, 3, h, w)
    torch.testing.assert_close(f(x), torch.nn.functional.max_pool2d(x, 2, 2))


AVGPOOL = """
def avgpool(float(B, C, H, W) input) -> (output) {
    output(b, c, h, w) +=! input(b, c, h * 3 + r_kh, w * 3 + r_kw) / (3 * 3)
        where r_kh in 0:3, r_kw in 0:3
}
"""


@pytest.mark.parametrize("h,w", [(3, 3), (9, 7), (11, 12)])
def test_average_pooling(h, w):
    f = tc.define(AVGPOOL)
    x = torch.randn(2, 2, h, w)
    torch.testing.assert_close(f(x), torch.nn.functional.avg_pool2d(x, 3, 3))


SOFTMAX = """
def softmax(float(N, D) I) -> (O, maxVal, expDistance, expSum) {
    maxVal(n) max=! I(n, d)
    expDistance(n, d) = exp(I(n, d) - maxVal(n))
    expSum(n) +=! expDistance(n, d)
    O(n, d) = expDistance(n, d) / expSum(n)
}
"""


@pytest.mark.parametrize("n,d", [(1, 1), (4, 10), (33, 17)])
def test_softmax_with_its_temporaries(n, d):
    f = tc.define(SOFTMAX)
    x = torch.randn(n, d) * 5
    out, max_val, exp_distance, exp_sum = f(x)
    torch.testing.assert_close(out, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(max_val, x.max(dim=1).values)
    torch.testing.assert_close(exp_sum, exp_distance.sum(dim=1), rtol=1e-5, atol=1e-5)


RELU = """
def relu(float(M, N) I) -> (O) {
    O(m, n) = fmax(I(m, n), 0)
}
"""


@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (64, 3)])
def test_relu(shape):
    f = tc.define(RELU)
    x = rand(*shape)
    close(f(x), np.maximum(x, 0))


BATCH_MATMUL = """
def batch_matmul(float(B, N, M) X, float(B, M, K) Y) -> (Z) {
    Z(b, n, k) +=! X(b, n, r_m) * Y(b, r_m, k)
}
"""


@pytest.mark.parametrize("b,n,m,k", [(1, 2, 3, 4), (3, 5, 7, 2), (4, 16, 8, 16)])
def test_batch_matmul(b, n, m, k):
    f = tc.define(BATCH_MATMUL)
    x, y = torch.randn(b, n, m), torch.randn(b, m, k)
    torch.testing.assert_close(f(x, y), torch.bmm(x, y), rtol=1e-4, atol=1e-5)


TRANSPOSE = """
def transpose(float(M, N) I) -> (O) {
    O(n, m) = I(m, n)
}
"""


@pytest.mark.parametrize("shape", [(1, 5), (3, 4), (20, 13)])
def test_transpose(shape):
    f = tc.define(TRANSPOSE)
    x = rand(*shape)
    close(f(x), x.T)
    xi = np.arange(12, dtype="int32").reshape(3, 4)
    g = tc.define(TRANSPOSE.replace("float(", "int32("))
    np.testing.assert_array_equal(g(xi), xi.T)


FCRELU = """
def fcrelu(float(B, M) I, float(N, M) W1, float(N) B1) -> (O1) {
    O1(b, n) +=! I(b, m) * W1(n, m)
    O1(b, n) = O1(b, n) + B1(n)
    O1(b, n) = fmax(O1(b, n), 0)
}
"""


def test_fully_connected_relu_updates_an_output_in_place():
    f = tc.define(FCRELU)
    x, w, b = torch.randn(6, 5), torch.randn(4, 5), torch.randn(4)
    torch.testing.assert_close(f(x, w, b), torch.relu(x @ w.T + b), rtol=1e-4, atol=1e-5)


def test_several_defs_and_reductions():
    lib = tc.define(
        """
        # one attribute per def
        def row_sum(float(N, M) A) -> (S) { S(n) +=! A(n, m) }
        def row_prod(float(N, M) A) -> (P) { P(n) *=! A(n, m) }
        def row_min(float(N, M) A) -> (L) { L(n) min=! A(n, m) }
        def tensordot(float(N, C1, C2, H, W) I0, float(N, C2, C3, H, W) I1) -> (O) {
            O(n, c1, c3, h, w) +=! I0(n, c1, r_c2, h, w) * I1(n, r_c2, c3, h, w)
        }
        """
    )
    assert lib.names == ["row_sum", "row_prod", "row_min", "tensordot"]
    a = rand(4, 6)
    close(lib.row_sum(a), a.sum(1))
    close(lib.row_prod(a), a.prod(1))
    close(lib["row_min"](a), a.min(1))
    i0, i1 = rand(2, 3, 4, 2, 3), rand(2, 4, 5, 2, 3)
    close(lib.tensordot(i0, i1), np.einsum("nabhw,nbchw->nachw", i0, i1))


def test_accumulating_into_earlier_values_and_partial_writes():
    f = tc.define(
        """
        def f(float(N, M) A) -> (S, P) {
            S(n) = 100 where n in 0:N
            S(n) += A(n, m)                 # accumulates into the 100s
            P(n) = A(n, 0)
            P(n) = -1 where n in 1:N - 1    # keeps P(0) and P(N - 1)
        }
        """
    )
    a = rand(5, 3)
    s, p = f(a)
    close(s, 100 + a.sum(1))
    expected = np.full(5, -1, "float32")
    expected[[0, 4]] = a[[0, 4], 0]
    close(p, expected)


def test_expressions_builtins_and_where_bindings():
    f = tc.define(
        """
        def ops(float(N) A, float(N) B) -> (O1, O2, O3, O4) {
            O1(i) = A(i) > B(i) && A(i) > 0 ? A(i) : -B(i) / 2
            O2(i) = exp(A(i)) + log(abs(B(i)) + 1) + tanh(A(i)) + sqrt(abs(A(i)))
                  + rsqrt(abs(B(i)) + 1) + erf(A(i)) + floor(A(i)) + ceil(B(i))
                  + sigmoid(A(i)) + pow(abs(A(i)), 1.5) + fmin(A(i), B(i))
            O3(i) = x * x where x = A(i) + B(i)
            O4(i) = A(N - 1 - i) * A.0 + i
        }
        """
    )
    a, b = rand(9), rand(9)
    o1, o2, o3, o4 = f(a, b)
    close(o1, np.where((a > b) & (a > 0), a, -b / 2))
    erf = np.vectorize(__import__("math").erf)
    expected = (
        np.exp(a)
        + np.log(np.abs(b) + 1)
        + np.tanh(a)
        + np.sqrt(np.abs(a))
        + 1 / np.sqrt(np.abs(b) + 1)
        + erf(a)
        + np.floor(a)
        + np.ceil(b)
        + 1 / (1 + np.exp(-a))
        + np.abs(a) ** 1.5
        + np.minimum(a, b)
    )
    close(o2, expected, rtol=1e-4, atol=1e-4)
    close(o3, (a + b) ** 2)
    close(o4, a[::-1] * 9 + np.arange(9))


def test_integer_programs_and_floor_division():
    f = tc.define(
        """
        def ints(int32(N) A, int32(N) B) -> (Q, C) {
            Q(i) = A(i) / B(i)
            C(i) = int64(A(i)) * 3000000000
        }
        """
    )
    a = np.array([7, -7, 5, 3, -9], "int32")
    b = np.array([2, 2, 0, -1, 4], "int32")
    q, c = f(a, b)
    np.testing.assert_array_equal(q, [3, -4, 0, -3, -3])  # rounds down; x / 0 gives 0
    assert c.dtype == np.int64
    np.testing.assert_array_equal(c, a.astype("int64") * 3000000000)


def test_fixed_sizes_scalars_and_no_inputs():
    f = tc.define(
        """
        def f(float(3, N) A, float S) -> (O, T) {
            O(i, j) = A(i, j) * S
            T +=! A(i, j)
        }
        """
    )
    a = rand(3, 4)
    o, t = f(a, np.array(2.0, "float32"))
    close(o, a * 2)
    assert t.shape == ()
    close(t, a.sum())
    iota = tc.define("def iota() -> (O) { O(i) = i * 2 where i in 0:5 }")
    out = iota()
    assert isinstance(out, np.ndarray) and out.dtype == np.int32
    np.testing.assert_array_equal(out, [0, 2, 4, 6, 8])


def test_literals_adopt_the_dtype_of_the_tensor():
    f = tc.define("def f(double(N) A) -> (B) { B(i) = A(i) * 0.1 + 1 }")
    a = rand(4, dtype="float64")
    b = f(a)
    assert b.dtype == np.float64
    np.testing.assert_allclose(b, a * 0.1 + 1, rtol=1e-15)
    h = tc.define("def h(float16(N) A) -> (B) { B(i) = A(i) * 2 + 0.5 }")
    x = torch.randn(6, dtype=torch.float16)
    torch.testing.assert_close(h(x), x * 2 + 0.5)


def test_te_tensors_are_the_dsl_objects():
    import pytvmbridge as tvm

    f = tc.define(MATMUL)
    (c,) = f.outputs
    assert c.name == "C"
    assert [str(d) for d in c.shape] == ["M", "N"]
    assert len(c.op.reduce_axis) == 1
    s = f.create_schedule()
    mo, mi = s[c].split(s[c].op.axis[0], factor=4)
    s[c].reorder(mo, s[c].op.reduce_axis[0], mi)
    f.build(s)
    a, b = rand(9, 5), rand(5, 3)
    close(f(a, b), a @ b)
    assert "for" in str(tvm.lower(f.create_schedule(), f.inputs + f.outputs))


def test_docstring_examples():
    import doctest

    result = doctest.testmod(tc, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_ranges_that_do_not_start_at_zero():
    f = tc.define(
        """
        def f(float(N, M) A) -> (O1, O2, O3, S, T) {
            O1(i) = A(i, 0) where i in 1:N      # O1(0) is never written: 0
            O2(i) = A(i + 1, 0)                 # i in 0:N-1 (a negative start is clamped)
            O3(i) = A(i - 1, 0)                 # i in 1:N+1, so O3 has N + 1 elements
            S(n) = A(n, 0)
            S(n) +=! A(n, m) where n in 1:N     # a fresh reduction, but only for n >= 1
            T(n) +=! A(n, m) where m in 1:M     # a reduction range starting at 1
        }
        """
    )
    a = rand(3, 4)
    o1, o2, o3, s, t = f(a)
    close(o1, [0, a[1, 0], a[2, 0]])
    close(o2, a[1:, 0])
    close(o3, [0, *a[:, 0]])
    close(s, [a[0, 0], a[1].sum(), a[2].sum()])
    close(t, a[:, 1:].sum(1))


def test_fmax_fmin_ignore_nan_as_c_does_and_max_min_propagate_it():
    f = tc.define(
        """def f(float(N) A, float(N) B) -> (X, Y, P, Q) {
             X(i) = fmax(A(i), B(i))
             Y(i) = fmin(A(i), B(i))
             P(i) = max(A(i), B(i))
             Q(i) = min(A(i), B(i))
           }"""
    )
    nan = np.nan
    a = np.array([nan, 1.0, nan, -2.0, 3.0], "float32")
    b = np.array([2.0, nan, nan, 5.0, -1.0], "float32")
    x, y, p, q = f(a, b)
    np.testing.assert_array_equal(x, np.fmax(a, b))
    np.testing.assert_array_equal(y, np.fmin(a, b))
    np.testing.assert_array_equal(p, np.maximum(a, b))
    np.testing.assert_array_equal(q, np.minimum(a, b))


class _ModelHoldingADef(torch.nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x):
        return self.op(x)


def test_defs_pickle_as_source_and_torch_save_a_module_holding_one():
    import io
    import pickle

    square = tc.define("def sq_pickled(float(N) A) -> (B) { B(i) = A(i) * A(i) }")
    again = pickle.loads(pickle.dumps(square))
    np.testing.assert_array_equal(again(np.arange(3, dtype="float32")), [0, 1, 4])
    lib = tc.define(
        "def inc(float(N) A) -> (B) { B(i) = A(i) + 1 }\n"
        "def tri(float(N) A) -> (B) { B(i) = A(i) * 3 }"
    )
    tri = pickle.loads(pickle.dumps(lib.tri))
    assert tri.name == "tri"
    np.testing.assert_array_equal(tri(np.ones(2, "float32")), [3, 3])

    buf = io.BytesIO()
    torch.save(_ModelHoldingADef(square), buf)
    buf.seek(0)
    model = torch.load(buf, weights_only=False)
    torch.testing.assert_close(model(torch.tensor([2.0, -3.0])), torch.tensor([4.0, 9.0]))


def test_a_dlpack_capsule_is_an_input_like_any_array():
    # The checks read its shape and dtype, then the call its data: a capsule is read once
    mm = tc.define("def mm(float(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k) * B(k,n) }")
    a = np.arange(6, dtype="float32").reshape(2, 3)
    b = np.arange(12, dtype="float32").reshape(3, 4)
    got = mm(a.__dlpack__(), torch.from_numpy(b).__dlpack__())
    np.testing.assert_allclose(np.from_dlpack(got), a @ b)
    np.testing.assert_allclose(np.from_dlpack(mm(torch.from_numpy(a).__dlpack__(), b)), a @ b)
