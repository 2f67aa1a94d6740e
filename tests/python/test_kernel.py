"""@kernel: compiled once per dtype/rank/layout class, cached across sizes, safe under threads."""

import gc
import sys
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import nd
from pytvmbridge.kernel import Kernel, kernel


def make_add():
    @kernel
    def add(A, B):
        return tvm.compute(A.shape, lambda *i: A[i] + B[i], name="C")

    return add


def make_matmul():
    @kernel
    def matmul(X, Y):
        k = tvm.reduce_axis((0, X.shape[1]), name="k")
        return tvm.compute(
            (X.shape[0], Y.shape[1]), lambda i, j: tvm.sum(X[i, k] * Y[k, j], axis=k), name="Z"
        )

    return matmul


def test_kernel_on_each_framework_returns_that_frameworks_array():
    add = make_add()
    t = add(torch.arange(4.0), torch.ones(4))
    assert isinstance(t, torch.Tensor)
    torch.testing.assert_close(t, torch.arange(4.0) + 1)
    a = add(np.arange(4, dtype="float32"), np.ones(4, "float32"))
    assert isinstance(a, np.ndarray)
    np.testing.assert_array_equal(a, np.arange(4, dtype="float32") + 1)
    j = add(jnp.arange(4, dtype="float32"), jnp.ones(4, dtype="float32"))
    assert isinstance(j, jax.Array)
    np.testing.assert_array_equal(np.asarray(j), np.arange(4, dtype="float32") + 1)
    n = add(nd.array(np.arange(4, dtype="float32")), nd.array(np.ones(4, "float32")))
    assert isinstance(n, nd.NDArray)
    np.testing.assert_array_equal(n.numpy(), np.arange(4, dtype="float32") + 1)
    assert add.compilations == 1  # one dtype, one rank: one compiled kernel for all four


def test_new_sizes_reuse_the_compiled_kernel():
    add = make_add()
    for n in (2, 3, 17, 1000, 4096, 5):
        x, y = torch.rand(n), torch.rand(n)
        torch.testing.assert_close(add(x, y), x + y)
    assert add.compilations == 1
    # a size of 1 is the constant 1 in the kernel (broadcasting needs it): one more variant
    x, y = torch.rand(1), torch.rand(1)
    torch.testing.assert_close(add(x, y), x + y)
    assert add.compilations == 2


def test_size_one_dimensions_broadcast_like_numpy():
    from pytvmbridge import topi

    add = tvm.kernel(lambda a, b: topi.add(a, b), name="badd")
    a = np.arange(12, dtype="float32").reshape(3, 4)
    for b in (np.ones((1, 4), "float32"), np.ones((3, 1), "float32"), np.ones((1, 1), "float32")):
        np.testing.assert_array_equal(add(a, b), a + b)
        np.testing.assert_array_equal(add(b, a), b + a)
    col, row = torch.rand(5, 1), torch.rand(1, 7)
    torch.testing.assert_close(add(col, row), col + row)
    # the same kernel with no size 1 among the inputs: the sizes must agree
    with pytest.raises(ValueError, match="do not broadcast"):
        add(np.ones((3, 4), "float32"), np.ones((2, 4), "float32"))


def test_size_one_dimensions_squeeze_and_keep_reading_right():
    from pytvmbridge import topi

    squeeze = tvm.kernel(lambda a: topi.squeeze(a), name="sq")
    x = np.arange(6, dtype="float32").reshape(1, 3, 1, 2)
    np.testing.assert_array_equal(squeeze(x), x.squeeze())
    squeeze1 = tvm.kernel(lambda a: topi.squeeze(a, axis=2), name="sq1")
    np.testing.assert_array_equal(squeeze1(x), x.squeeze(2))
    with pytest.raises(ValueError, match=r"squeeze: dimension 2 of .* is not 1"):
        squeeze1(np.ones((2, 3, 4), "float32"))


def test_dtype_and_rank_make_new_variants():
    add = make_add()
    add(np.ones(3, "float32"), np.ones(3, "float32"))
    add(np.ones(3, "float64"), np.ones(3, "float64"))
    assert add.compilations == 2
    out = add(np.ones((2, 3), "float32"), np.ones((2, 3), "float32"))
    np.testing.assert_array_equal(out, np.full((2, 3), 2.0, "float32"))
    assert add.compilations == 3
    add(np.ones((5, 7), "float32"), np.ones((5, 7), "float32"))
    add(torch.ones(9, dtype=torch.float64), torch.ones(9, dtype=torch.float64))
    assert add.compilations == 3


def test_layout_class_keeps_unequal_sizes_apart():
    """Which dimensions are equal is part of the key: a kernel built for square inputs is
    never used for rectangular ones (its size variables are shared), and vice versa."""
    mm = make_matmul()
    x, y = np.random.rand(4, 4).astype("float32"), np.random.rand(4, 4).astype("float32")
    np.testing.assert_allclose(mm(x, y), x @ y, rtol=1e-5)
    x, y = np.random.rand(6, 6).astype("float32"), np.random.rand(6, 6).astype("float32")
    np.testing.assert_allclose(mm(x, y), x @ y, rtol=1e-5)
    assert mm.compilations == 1
    x, y = np.random.rand(2, 3).astype("float32"), np.random.rand(3, 5).astype("float32")
    np.testing.assert_allclose(mm(x, y), x @ y, rtol=1e-5)
    x, y = np.random.rand(7, 2).astype("float32"), np.random.rand(2, 9).astype("float32")
    np.testing.assert_allclose(mm(x, y), x @ y, rtol=1e-5)
    assert mm.compilations == 2


def test_inputs_too_short_for_the_reads_are_refused():
    add = make_add()
    with pytest.raises(ValueError, match=r"reads argument 1 \('B'\) up to index 3 in dimension 0"):
        add(np.ones(4, "float32"), np.ones(3, "float32"))
    out = add(np.ones(3, "float32"), np.arange(4, dtype="float32"))  # B longer: reads fit
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
    mm = make_matmul()
    with pytest.raises(ValueError, match=r"argument 1 \('Y'\) up to index 4 in dimension 0"):
        mm(np.ones((2, 5), "float32"), np.ones((3, 4), "float32"))  # inner sizes 5 and 3
    x, y = np.random.rand(2, 3).astype("float32"), np.random.rand(4, 6).astype("float32")
    np.testing.assert_allclose(mm(x, y), x @ y[:3], rtol=1e-5)  # Y taller than needed: fine

    @kernel
    def third_column(A):
        return tvm.compute((A.shape[0],), lambda i: A[i, 2], name="T")

    np.testing.assert_array_equal(third_column(np.arange(6, dtype="int32").reshape(2, 3)), [2, 5])
    with pytest.raises(ValueError, match="up to index 2 in dimension 1"):
        third_column(np.ones((2, 2), "int32"))


def test_reads_are_recorded_only_while_compiling():
    getitem, call = tvm.Tensor.__getitem__, tvm.Tensor.__call__
    make_add()(np.ones(2, "float32"), np.ones(2, "float32"))

    @kernel
    def fails(A):
        raise RuntimeError("in the user's function")

    with pytest.raises(RuntimeError, match="user's function"):
        fails(np.ones(2, "float32"))
    assert tvm.Tensor.__getitem__ is getitem and tvm.Tensor.__call__ is call


def test_strides_do_not_recompile():
    add = make_add()
    base = np.arange(40, dtype="float32")
    add(base[:10], base[10:20])
    out = add(base[::4], base[1::4])
    np.testing.assert_array_equal(out, base[::4] + base[1::4])
    assert add.compilations == 1


def test_mixed_frameworks_output_in_the_first_inputs_framework():
    add = make_add()
    x, y = torch.arange(3.0), np.ones(3, "float32")
    out = add(x, y)
    assert isinstance(out, torch.Tensor)
    torch.testing.assert_close(out, torch.tensor([1.0, 2.0, 3.0]))
    out = add(y, x)
    assert isinstance(out, np.ndarray)
    out = add(jnp.ones(3, dtype="float32"), x)
    assert isinstance(out, jax.Array)
    np.testing.assert_array_equal(np.asarray(out), [1.0, 2.0, 3.0])


def test_out_argument_writes_in_place():
    add = make_add()
    z = torch.zeros(5)
    ptr = z.data_ptr()
    r = add(torch.ones(5), torch.ones(5), out=z)
    assert r is z and z.data_ptr() == ptr
    torch.testing.assert_close(z, torch.full((5,), 2.0))
    with pytest.raises(TypeError, match="immutable"):
        add(jnp.ones(5, dtype="float32"), jnp.ones(5, dtype="float32"), out=jnp.zeros(5))


def test_several_outputs_are_a_tuple():
    @kernel
    def stats(A):
        k = tvm.reduce_axis((0, A.shape[1]), name="k")
        s = tvm.compute((A.shape[0],), lambda i: tvm.sum(A[i, k], axis=k), name="S")
        m = tvm.compute((A.shape[0],), lambda i: tvm.max(A[i, k], axis=k), name="M")
        return s, m

    a = torch.rand(5, 7)
    s, m = stats(a)
    torch.testing.assert_close(s, a.sum(1))
    torch.testing.assert_close(m, a.max(1).values)


def test_schedule_function_is_applied_once_per_variant():
    calls = []

    def schedule(s, C):
        calls.append(C.name)
        _, xi = s[C].split(C.op.axis[0], factor=8)
        s[C].vectorize(xi)

    @kernel(schedule=schedule)
    def scaled(A):
        return tvm.compute(A.shape, lambda i: A[i] * 3.0, name="C")

    for n in (5, 8, 31, 64):
        x = np.arange(n, dtype="float32")
        np.testing.assert_array_equal(scaled(x), x * 3)
    assert calls == ["C"] and scaled.compilations == 1
    assert isinstance(scaled, Kernel) and scaled.__name__ == "scaled"
    assert "<8 x float>" in scaled.module_for(np.ones(4, "float32")).get_source("ll")


def test_schedule_function_may_return_a_schedule():
    def schedule(s, C):
        fresh = tvm.create_schedule(C.op)
        fresh[C].parallel(C.op.axis[0])
        return fresh

    @kernel(schedule=schedule)
    def neg(A):
        return tvm.compute(A.shape, lambda i, j: -A[i, j], name="N")

    x = torch.rand(33, 9)
    torch.testing.assert_close(neg(x), -x)


def test_errors():
    add = make_add()
    with pytest.raises(TypeError, match="takes 2 input"):
        add(torch.ones(3))
    with pytest.raises(TypeError, match="expected an array"):
        add(torch.ones(3), [1.0, 2.0, 3.0])

    @kernel
    def returns_input(A):
        return A

    with pytest.raises(ValueError, match="returns its input"):
        returns_input(np.ones(3, "float32"))

    @kernel
    def returns_number(A):
        return 3

    with pytest.raises(TypeError, match="must return tensors"):
        returns_number(np.ones(3, "float32"))


def test_threads_hammering_one_kernel_compile_each_variant_once():
    add = make_add()
    errors = []
    start = threading.Barrier(8)

    def worker(seed):
        rng = np.random.default_rng(seed)
        try:
            start.wait()
            for i in range(200):
                n = int(rng.integers(2, 64))  # (a size of 1 is a variant of its own)
                if (i + seed) % 2:
                    x, y = torch.rand(n), torch.rand(n)
                    torch.testing.assert_close(add(x, y), x + y)
                else:
                    x = rng.random(n)  # float64: a second variant
                    np.testing.assert_array_equal(add(x, x), x + x)
        except Exception as err:  # reported below, with the thread's seed
            errors.append((seed, err))

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert add.compilations == 2


def test_no_reference_leaks_over_10000_calls():
    add = make_add()
    x, y = torch.ones(4), torch.ones(4)
    a = np.ones(4, "float32")
    for _ in range(100):
        add(x, y)
        add(a, a)
    gc.collect()
    before = [sys.getrefcount(o) for o in (x, y, a, add)]
    for _ in range(10_000):
        out = add(x, y)
        out2 = add(a, a)
    gc.collect()
    assert [sys.getrefcount(o) for o in (x, y, a, add)] == before
    assert sys.getrefcount(out) == 2 and sys.getrefcount(out2) == 2
    assert add.compilations == 1


@pytest.mark.parametrize(
    "module",
    [
        "pytvmbridge.kernel",
        "pytvmbridge.bridges",
        "pytvmbridge.frameworks",
        "pytvmbridge.frameworks._base",
        "pytvmbridge.frameworks.torch",
        "pytvmbridge.frameworks.numpy",
        "pytvmbridge.frameworks.jax",
        "pytvmbridge.frameworks.nd",
        "pytvmbridge.contrib",
        "pytvmbridge.contrib.dlpack",
    ],
)
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


@tvm.kernel
def _pickled_double(a):
    return tvm.compute(a.shape, lambda i: a[i] * 2.0, name="dbl")


def _plain_triple(a):
    return tvm.compute(a.shape, lambda i: a[i] * 3.0, name="tpl")


def test_kernels_pickle_by_reference_or_by_function(tmp_path):
    import pickle
    import subprocess
    import sys

    assert pickle.loads(pickle.dumps(_pickled_double)) is _pickled_double
    again = pickle.loads(pickle.dumps(tvm.kernel(_plain_triple, name="tpl")))
    np.testing.assert_array_equal(again(np.ones(3, "float32")), np.full(3, 3.0, "float32"))
    # a decorated kernel of an importable module, loaded in a fresh process
    (tmp_path / "kmod.py").write_text(
        "import pytvmbridge as tvm\n"
        "@tvm.kernel\n"
        "def square(a):\n"
        "    return tvm.compute(a.shape, lambda i: a[i] * a[i], name='sq')\n"
    )
    code = (
        "import pickle, sys, numpy as np\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import kmod\n"
        "sys.stdout.buffer.write(pickle.dumps(kmod.square))\n"
    )
    data = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True).stdout
    sys.path.insert(0, str(tmp_path))
    try:
        square = pickle.loads(data)
        np.testing.assert_array_equal(square(np.arange(4, dtype="float32")), [0, 1, 4, 9])
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("kmod", None)
    with pytest.raises(Exception, match="lambda"):
        pickle.dumps(tvm.kernel(lambda a: tvm.compute(a.shape, lambda i: a[i])))


def test_arrays_of_different_dtypes_meeting_in_the_body_name_the_arguments():
    @tvm.kernel
    def add(a, b):
        return tvm.compute(a.shape, lambda i: a[i] + b[i], name="c")

    with pytest.raises(
        TypeError, match=r"kernel 'add': .*\(the arguments: a: float32, b: float64\)"
    ):
        add(np.ones(3, "float32"), np.ones(3, "float64"))
    np.testing.assert_array_equal(add(np.ones(3), np.full(3, 2.0)), np.full(3, 3.0))


def test_a_kernel_whose_function_calls_itself_for_another_dtype_does_not_hang():
    @kernel
    def plus_one(A):
        if A.dtype == "float32":  # compiling one variant compiles another first
            inner = plus_one(np.arange(2, dtype="int32"))
            assert inner.tolist() == [1, 2]
        return tvm.compute(A.shape, lambda i: A[i] + 1, name="R")

    np.testing.assert_array_equal(plus_one(np.ones(3, "float32")), np.full(3, 2.0, "float32"))
    assert plus_one.compilations == 2


def test_tune_is_checked_when_the_kernel_is_made():
    def body(A):
        return tvm.compute(A.shape, lambda i: A[i] + 1, name="B")

    with pytest.raises(TypeError, match=r"tune must be a number of trials .*got str '3'"):
        kernel(tune="3")(body)
    with pytest.raises(TypeError, match="got bool True"):
        kernel(tune=True)(body)
    with pytest.raises(ValueError, match="trials >= 0, got -1"):
        kernel(tune=-1)(body)
    with pytest.raises(ValueError, match="schedule=None replaces that schedule"):
        kernel(tune=2, schedule=None)(body)
    k = kernel(tune=0, schedule=None)(body)  # no tuning: any schedule
    np.testing.assert_array_equal(k(np.zeros(3, "float32")), np.ones(3, "float32"))


def test_a_schedule_function_of_the_wrong_arity_is_told_the_convention():
    # fn(s) failed with "sched() takes 1 positional argument but 2 were given" from its own frame
    def one_argument(s):
        pass

    double = kernel(lambda X: tvm.compute(X.shape, lambda i: X[i] * 2), schedule=one_argument)
    with pytest.raises(TypeError, match=r"schedule\(s, \*outputs\).*1 output.*'one_argument'"):
        double(np.ones(4, "float32"))

    def vectorized(s, out):
        s[out].vectorize(out.op.axis[0])

    double = kernel(lambda X: tvm.compute(X.shape, lambda i: X[i] * 2), schedule=vectorized)
    np.testing.assert_array_equal(double(np.arange(4, dtype="float32")), [0, 2, 4, 6])


def test_a_trace_error_names_the_sizes_of_the_call():
    # the kernel is traced with size variables: "shapes (A_0,) and (B_0,) do not broadcast"
    # named no size the caller passed
    add = kernel(lambda A, B: tvm.topi.add(A, B))
    with pytest.raises(ValueError, match="do not broadcast") as info:
        add(np.ones(3, "float32"), np.ones(4, "float32"))
    assert "the size variables in this call: A_0 = 3, B_0 = 4" in info.value.__notes__[0]
    np.testing.assert_array_equal(add(np.ones(3, "float32"), np.ones(3, "float32")), [2, 2, 2])
