"""MXNet 1.9.1 (old DLPack functions only), run in .venv-mxnet by `make test-mxnet`."""

import gc
import subprocess
import sys
from pathlib import Path

import mxnet as mx
import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import frameworks, nd
from pytvmbridge.bridges import to_mxnet, to_numpy
from pytvmbridge.contrib.mxnet import to_mxnet_func
from pytvmbridge.kernel import kernel

ROOT = Path(__file__).parents[3]


def test_this_is_the_old_mxnet():
    assert mx.__version__.startswith("1.")
    assert not hasattr(mx.nd.NDArray, "__dlpack__")  # only to_dlpack_for_read/_write


def build_matmul(n=None):
    n = n if n is not None else tvm.var("n")
    X = tvm.placeholder((n, n), name="X")
    Y = tvm.placeholder((n, n), name="Y")
    k = tvm.reduce_axis((0, n), name="k")
    Z = tvm.compute((n, n), lambda i, j: tvm.sum(X[i, k] * Y[k, j], axis=k))
    return tvm.build(tvm.create_schedule(Z.op), [X, Y, Z], target_host="llvm", name="f")


def build_add(dtype="float32"):
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A", dtype=dtype)
    B = tvm.placeholder((n,), name="B", dtype=dtype)
    C = tvm.compute((n,), lambda i: A[i] + B[i], name="C")
    return tvm.build(tvm.create_schedule(C.op), [A, B, C], name="vadd")


def test_seed_example_mxnet_half():
    import mxnet

    import pytvmbridge as tvm
    from pytvmbridge.contrib.mxnet import to_mxnet_func

    n = tvm.convert(56)
    X = tvm.placeholder((n, n), name="X")
    Y = tvm.placeholder((n, n), name="Y")
    k = tvm.reduce_axis((0, n), name="k")
    Z = tvm.compute((n, n), lambda i, j: tvm.sum(X[i, k] * Y[k, j], axis=k))
    s = tvm.create_schedule(Z.op)

    ctx = mxnet.cpu(0)
    x = mxnet.nd.uniform(shape=(56, 56), ctx=ctx)
    y = mxnet.nd.uniform(shape=(56, 56), ctx=ctx)
    z = mxnet.nd.empty(shape=(56, 56), ctx=ctx)
    f = tvm.build(s, [X, Y, Z], target_host="llvm", name="f")
    f_mxnet = to_mxnet_func(f)
    f_mxnet(x, y, z)
    np.testing.assert_allclose(z.asnumpy(), x.asnumpy().dot(y.asnumpy()), rtol=1e-5)


def test_in_place_form_writes_the_mxnet_array():
    f = to_mxnet(build_matmul())
    x = mx.nd.random.uniform(shape=(9, 9))
    y = mx.nd.random.uniform(shape=(9, 9))
    z = mx.nd.zeros((9, 9))
    assert f(x, y, z) is None
    np.testing.assert_allclose(z.asnumpy(), x.asnumpy() @ y.asnumpy(), rtol=1e-5)
    # A pending MXNet operation on z is waited for before the kernel writes it, and later
    # MXNet operations see the kernel's result.
    z2 = z * 2
    np.testing.assert_allclose(z2.asnumpy(), 2 * (x.asnumpy() @ y.asnumpy()), rtol=1e-5)


def test_zero_copy_views():
    x = mx.nd.arange(6).reshape((2, 3))
    fw = frameworks.framework_of(x)
    a = fw.as_output(x, "x")
    b = fw.as_input(x, "x")
    assert a.data_ptr == b.data_ptr  # both views of the one buffer MXNet owns
    f = to_mxnet(build_add())
    z = mx.nd.zeros((6,))
    ptr = fw.as_input(z, "z").data_ptr
    f(mx.nd.ones((6,)), mx.nd.ones((6,)), z)
    assert fw.as_input(z, "z").data_ptr == ptr
    np.testing.assert_array_equal(z.asnumpy(), np.full(6, 2.0, "float32"))


def test_inputs_only_form_returns_mxnet_arrays():
    f = to_mxnet(build_add())
    out = f(mx.nd.arange(5), mx.nd.ones((5,)))
    assert isinstance(out, mx.nd.NDArray)
    assert out.shape == (5,) and out.dtype == np.float32
    np.testing.assert_array_equal(out.asnumpy(), np.arange(5, dtype="float32") + 1)


@pytest.mark.parametrize("dtype", ["float64", "int32", "int64", "uint8", "int8"])
def test_dtypes(dtype):
    f = to_mxnet(build_add(dtype))
    x = mx.nd.array(np.arange(7), dtype=dtype)
    out = f(x, x)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.asnumpy(), 2 * np.arange(7).astype(dtype))


def test_mxnet_numpy_arrays():
    f = to_mxnet_func(build_add())
    x = mx.np.ones((4,))
    z = mx.np.zeros((4,))
    f(x, x, z)
    np.testing.assert_array_equal(z.asnumpy(), np.full(4, 2.0, "float32"))


def test_mixed_with_numpy_and_nd():
    f = to_mxnet(build_add())
    out = f(np.arange(3, dtype="float32"), mx.nd.ones((3,)))
    assert isinstance(out, mx.nd.NDArray)
    np.testing.assert_array_equal(out.asnumpy(), [1.0, 2.0, 3.0])
    out = to_numpy(build_add())(mx.nd.ones((3,)), nd.array(np.ones(3, "float32")))
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, [2.0, 2.0, 2.0])
    z = mx.nd.zeros((3,))
    to_numpy(build_add())(np.ones(3, "float32"), np.ones(3, "float32"), z)
    np.testing.assert_array_equal(z.asnumpy(), [2.0, 2.0, 2.0])


def test_kernel_on_mxnet_arrays():
    @kernel
    def axpy(X, Y):
        return tvm.compute(X.shape, lambda *i: 2.0 * X[i] + Y[i], name="Z")

    for shape in [(3,), (10,), (100,)]:
        x, y = mx.nd.ones(shape), mx.nd.arange(shape[0])
        out = axpy(x, y)
        assert isinstance(out, mx.nd.NDArray)
        np.testing.assert_array_equal(out.asnumpy(), 2 + np.arange(shape[0]))
    assert axpy.compilations == 1
    z = mx.nd.zeros((3,))
    assert axpy(mx.nd.ones((3,)), mx.nd.ones((3,)), out=z) is z
    np.testing.assert_array_equal(z.asnumpy(), [3.0, 3.0, 3.0])


def test_errors_name_the_argument_and_write_nothing():
    f = to_mxnet(build_add())
    z = mx.nd.zeros((4,))
    with pytest.raises(TypeError, match=r"argument 1 \('B'\).*float32.*float64"):
        f(mx.nd.ones((4,)), mx.nd.ones((4,), dtype="float64"), z)
    with pytest.raises(ValueError, match="'n'"):
        f(mx.nd.ones((4,)), mx.nd.ones((5,)), z)
    with pytest.raises(TypeError, match=r"all 3 arrays"):
        f(mx.nd.ones((4,)))
    assert not z.asnumpy().any()


def test_no_reference_leaks_over_10000_calls():
    m = build_add()
    f = to_mxnet(m)
    x, y, z = mx.nd.ones((4,)), mx.nd.ones((4,)), mx.nd.zeros((4,))
    for _ in range(100):
        f(x, y, z)
        f(x, y)
    gc.collect()
    before = [sys.getrefcount(o) for o in (x, y, z, m, f)]
    for _ in range(10_000):
        f(x, y, z)
        out = f(x, y)
    gc.collect()
    assert [sys.getrefcount(o) for o in (x, y, z, m, f)] == before
    assert sys.getrefcount(out) == 2
    np.testing.assert_array_equal(out.asnumpy(), [2.0] * 4)


def test_frameworks_example_runs_its_mxnet_part():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "frameworks.py")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "mxnet" in result.stdout and "ok" in result.stdout
