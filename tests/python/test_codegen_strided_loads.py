"""Vector loads of a ramp with a small constant stride (a stride-2 pooling window, a strided
slice) are emitted as masked contiguous loads and a shuffle instead of a gather: the values
must equal NumPy's for every stride, dtype, tail and lane condition, and read nothing outside
the elements they take."""

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import te, topi

rng = np.random.default_rng(7)


def _strided(n, stride, dtype, offset=0):
    A = te.placeholder((n * stride + offset,), name="A", dtype=dtype)
    B = te.compute((n,), lambda i: A[i * stride + offset], name="B")
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    return A, B, s


@pytest.mark.parametrize("stride", [2, 3, 4])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8", "float16"])
@pytest.mark.parametrize("n", [16, 37, 5])
def test_strided_vector_load_matches_numpy(stride, dtype, n):
    A, B, s = _strided(n, stride, dtype, offset=1)
    f = tvm.build(s, [A, B])
    a = (rng.standard_normal(n * stride + 1) * 50).astype(dtype)
    b = np.zeros(n, dtype)
    f(a, b)
    np.testing.assert_array_equal(b, a[1::stride][:n])
    if n == 16:  # whole vectors: the compact kernel has contiguous loads and no gather
        ll = f.get_source("ll")
        assert "masked.gather" not in ll
        assert "masked.load" in ll


def test_strided_load_reads_only_its_lanes():
    # The last lane of a stride-3 ramp is the last element of the array: the contiguous vectors
    # spanning the lanes would run two elements past it; their masks keep them in bounds (an
    # out-of-bounds read would fault or be caught under ASan; here the values must be right).
    n, stride = 16, 3
    A = te.placeholder((stride * (n - 1) + 1,), name="A")
    B = te.compute((n,), lambda i: A[i * stride], name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    f = tvm.build(s, [A, B])
    a = rng.standard_normal(stride * (n - 1) + 1).astype("float32")
    b = np.zeros(n, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a[::stride])


def test_strided_load_under_a_lane_condition():
    # Only the lanes whose condition holds are read (the others take the other branch).
    n = 32
    A = te.placeholder((2 * n,), name="A")
    B = te.compute(
        (n,),
        lambda i: te.if_then_else(i % 3 == 1, A[2 * i + 1], te.const(-1.0, "float32")),
        name="B",
    )
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    f = tvm.build(s, [A, B])
    a = rng.standard_normal(2 * n).astype("float32")
    b = np.zeros(n, "float32")
    f(a, b)
    i = np.arange(n)
    np.testing.assert_array_equal(b, np.where(i % 3 == 1, a[2 * i + 1], -1.0).astype("float32"))


def test_strided_views_still_use_the_generic_kernel():
    # A non-contiguous input runs the generic kernel (strides read at run time: a gather).
    A, B, s = _strided(16, 2, "float32")
    f = tvm.build(s, [A, B])
    base = rng.standard_normal(64).astype("float32")
    a = base[::2]  # 32 elements, stride 2 in memory
    b = np.zeros(16, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a[::2])


def test_pooling_with_stride_two_matches_torch():
    torch = pytest.importorskip("torch")
    x = tvm.placeholder((2, 3, 23, 37), name="x")
    for y, ref in [
        (
            topi.nn.max_pool2d(x, (3, 3), (2, 2), (1, 1)),
            lambda t: torch.nn.functional.max_pool2d(t, 3, 2, 1),
        ),
        (topi.nn.avg_pool2d(x, (2, 2), (2, 2)), lambda t: torch.nn.functional.avg_pool2d(t, 2, 2)),
    ]:
        f = tvm.build(tvm.auto_schedule(y), [x, y])
        a = torch.randn(2, 3, 23, 37)
        out = torch.empty([int(d) for d in y.shape])
        f(a, out)
        np.testing.assert_allclose(out.numpy(), ref(a).numpy(), rtol=1e-6, atol=1e-6)
