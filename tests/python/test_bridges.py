"""to_pytorch / to_numpy / to_jax and the contrib alias: both call forms, zero copies, errors."""

import gc
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import _core, frameworks, nd, te
from pytvmbridge.bridges import to_jax, to_numpy, to_pytorch
from pytvmbridge.contrib.dlpack import to_pytorch_func


def build_add(dtype="float32"):
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A", dtype=dtype)
    B = tvm.placeholder((n,), name="B", dtype=dtype)
    C = tvm.compute((n,), lambda i: A[i] + B[i], name="C")
    return tvm.build(tvm.create_schedule(C.op), [A, B, C], name="vadd")


def build_matmul():
    n, m, l = tvm.var("n"), tvm.var("m"), tvm.var("l")
    X = tvm.placeholder((n, l), name="X")
    Y = tvm.placeholder((l, m), name="Y")
    k = tvm.reduce_axis((0, l), name="k")
    Z = tvm.compute((n, m), lambda i, j: tvm.sum(X[i, k] * Y[k, j], axis=k), name="Z")
    return tvm.build(tvm.create_schedule(Z.op), [X, Y, Z], name="matmul")


def build_sum_diff():
    """Two outputs, the first one before the inputs in the argument list."""
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    B = tvm.placeholder((n,), name="B")
    S = tvm.compute((n,), lambda i: A[i] + B[i], name="S")
    D = tvm.compute((n,), lambda i: A[i] - B[i], name="D")
    return tvm.build(tvm.create_schedule([S.op, D.op]), [S, A, B, D], name="sum_diff")


@pytest.fixture(scope="module")
def vadd():
    return build_add()


@pytest.fixture(scope="module")
def matmul():
    return build_matmul()


@pytest.fixture(scope="module")
def sum_diff():
    return build_sum_diff()


# --- the seed's example, PyTorch half: only the imports changed ---------------------------------


def test_seed_example_pytorch_half():
    import pytvmbridge as tvm
    from pytvmbridge.contrib.dlpack import to_pytorch_func as to_pytorch

    x = torch.rand(56, 56)
    y = torch.rand(56, 56)
    z = x.mm(y)

    n = tvm.convert(56)
    X = tvm.placeholder((n, n), name="X")
    Y = tvm.placeholder((n, n), name="Y")

    k = tvm.reduce_axis((0, n), name="k")
    Z = tvm.compute((n, n), lambda i, j: tvm.sum(X[i, k] * Y[k, j], axis=k))
    s = tvm.create_schedule(Z.op)
    fadd = tvm.build(s, [X, Y, Z], target_host="llvm", name="fadd")

    fadd_pytorch = to_pytorch(fadd)
    z2 = torch.empty(56, 56)
    fadd_pytorch(x, y, z2)
    np.testing.assert_allclose(z.numpy(), z2.numpy(), rtol=1e-5)


# --- PyTorch -------------------------------------------------------------------------------------


def test_pytorch_in_place_returns_none_and_writes_the_callers_memory(vadd):
    f = to_pytorch(vadd)
    x, y = torch.arange(5.0), torch.full((5,), 10.0)
    z = torch.zeros(5)
    ptr = z.data_ptr()
    assert f(x, y, z) is None
    torch.testing.assert_close(z, x + y)
    assert z.data_ptr() == ptr


def test_pytorch_inputs_only_allocates_torch_outputs(matmul):
    f = to_pytorch(matmul)
    x, y = torch.rand(7, 5), torch.rand(5, 3)
    z = f(x, y)
    assert isinstance(z, torch.Tensor)
    assert z.shape == (7, 3) and z.dtype == torch.float32 and z.is_contiguous()
    torch.testing.assert_close(z, x @ y)


def test_pytorch_func_alias_is_the_bridge(vadd):
    f = to_pytorch_func(vadd)
    assert f.module is vadd and f.framework == "torch"
    assert isinstance(f, _core.Caller) and f.__name__ == "vadd_torch"
    torch.testing.assert_close(f(torch.ones(3), torch.ones(3)), torch.full((3,), 2.0))


def test_pytorch_strided_views_are_read_and_written_in_place(vadd):
    f = to_pytorch(vadd)
    base = torch.arange(20.0)
    x, y = base[::2], base[1::2]  # non-contiguous views
    out = torch.zeros(10, 2)
    z = out[:, 1]  # a strided output inside a larger tensor
    f(x, y, z)
    torch.testing.assert_close(z, x + y)
    torch.testing.assert_close(out[:, 0], torch.zeros(10))


def test_pytorch_several_outputs_anywhere_in_the_signature(sum_diff):
    f = to_pytorch(sum_diff)
    a, b = torch.rand(6), torch.rand(6)
    s, d = f(a, b)
    torch.testing.assert_close(s, a + b)
    torch.testing.assert_close(d, a - b)
    s2, d2 = torch.empty(6), torch.empty(6)
    assert f(s2, a, b, d2) is None
    torch.testing.assert_close(s2, a + b)
    torch.testing.assert_close(d2, a - b)


@pytest.mark.parametrize("dtype", ["float64", "int32", "int64", "float16", "uint8"])
def test_pytorch_dtypes(dtype):
    f = to_pytorch(build_add(dtype))
    tdt = getattr(torch, dtype)
    x = torch.arange(8).to(tdt)
    y = torch.full((8,), 3).to(tdt)
    z = f(x, y)
    assert z.dtype == tdt
    torch.testing.assert_close(z, x + y)


def test_pytorch_input_that_requires_grad_is_read(vadd):
    f = to_pytorch(vadd)
    w = torch.ones(4, requires_grad=True)
    torch.testing.assert_close(f(w, torch.ones(4)), torch.full((4,), 2.0))
    z = torch.zeros(4)
    f(w, torch.ones(4), z)
    torch.testing.assert_close(z, torch.full((4,), 2.0))


def test_pytorch_output_that_requires_grad_is_refused_and_untouched(vadd):
    f = to_pytorch(vadd)
    z = torch.zeros(4, requires_grad=True)
    with pytest.raises(ValueError, match=r"argument 2 \('C'\).*requires grad"):
        f(torch.ones(4), torch.ones(4), z)
    assert z.detach().eq(0).all()


def test_pytorch_wrong_device_is_a_clear_error(vadd):
    f = to_pytorch(vadd)
    with pytest.raises(ValueError, match=r"argument 0 \('A'\).*device 'meta'.*CPU"):
        f(torch.empty(4, device="meta"), torch.ones(4), torch.zeros(4))
    with pytest.raises(ValueError, match=r"argument 1 \('B'\).*device 'meta'"):
        f(torch.ones(4), torch.empty(4, device="meta"))


def test_pytorch_bad_arguments_name_the_argument_and_write_nothing(vadd):
    f = to_pytorch(vadd)
    z = torch.zeros(4)
    with pytest.raises(TypeError, match=r"argument 1 \('B'\).*float32.*float64"):
        f(torch.ones(4), torch.ones(4, dtype=torch.float64), z)
    with pytest.raises(ValueError, match=r"'n'"):
        f(torch.ones(4), torch.ones(5), z)
    with pytest.raises(TypeError, match=r"all 3 arrays.*2 input"):
        f(torch.ones(4))
    with pytest.raises(TypeError, match=r"argument 1 \('B'\).*expected an array"):
        f(torch.ones(4), "not an array", z)
    assert z.eq(0).all()


def test_pytorch_output_overlapping_an_input_is_refused(vadd):
    f = to_pytorch(vadd)
    x = torch.ones(5)
    with pytest.raises(ValueError, match="overlaps"):
        f(x[:4], torch.ones(4), x[1:])  # the refusal shows the kernel sees x's own memory
    assert x.eq(1).all()


# --- NumPy ---------------------------------------------------------------------------------------


def test_numpy_both_forms(matmul):
    f = to_numpy(matmul)
    x = np.random.rand(4, 6).astype("float32")
    y = np.random.rand(6, 2).astype("float32")
    z = f(x, y)
    assert isinstance(z, np.ndarray) and z.shape == (4, 2) and z.dtype == np.float32
    np.testing.assert_allclose(z, x @ y, rtol=1e-5)
    z2 = np.zeros((4, 2), "float32")
    ptr = z2.ctypes.data
    assert f(x, y, z2) is None
    np.testing.assert_allclose(z2, x @ y, rtol=1e-5)
    assert z2.ctypes.data == ptr


def test_numpy_read_only_output_is_refused_and_untouched(vadd):
    f = to_numpy(vadd)
    z = np.zeros(3, "float32")
    z.flags.writeable = False
    with pytest.raises(ValueError, match=r"argument 2 \('C'\).*read-only"):
        f(np.ones(3, "float32"), np.ones(3, "float32"), z)
    assert not z.any()


def test_numpy_strided_and_transposed_inputs(matmul):
    f = to_numpy(matmul)
    big = np.random.rand(8, 8).astype("float32")
    x, y = big[::2, 1::2], big.T[:4, :3]
    np.testing.assert_allclose(f(x, y), x @ y, rtol=1e-5)


# --- JAX -----------------------------------------------------------------------------------------


def test_jax_inputs_only_returns_jax_arrays(matmul):
    f = to_jax(matmul)
    x = jnp.arange(6.0, dtype="float32").reshape(2, 3)
    y = jnp.ones((3, 4), dtype="float32")
    z = f(x, y)
    assert isinstance(z, jax.Array) and z.shape == (2, 4) and z.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(z), np.asarray(x) @ np.asarray(y), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(z + 1), np.asarray(x) @ np.asarray(y) + 1, rtol=1e-5)


def test_jax_outputs_are_handed_over_without_a_copy(vadd, monkeypatch):
    # The output is a pytvmbridge allocation, written by the kernel, then wrapped by JAX.
    fw = frameworks.get("jax")
    buffers = []
    original = type(fw).wrap

    def recording_wrap(self, buffer):
        buffers.append(buffer)
        return original(self, buffer)

    monkeypatch.setattr(type(fw), "wrap", recording_wrap)
    z = to_jax(vadd)(jnp.ones(16, dtype="float32"), jnp.ones(16, dtype="float32"))
    assert len(buffers) == 1
    assert z.unsafe_buffer_pointer() == buffers[0].data_ptr
    np.testing.assert_array_equal(np.asarray(z), np.full(16, 2.0, "float32"))


def test_jax_narrowing_a_64_bit_output_warns_once(monkeypatch):
    import pytvmbridge.frameworks.jax as jax_fw

    assert not jax.config.read("jax_enable_x64")  # the suite keeps JAX's default
    monkeypatch.setattr(jax_fw, "_narrowed_warned", set())
    a = te.placeholder((3,), name="a", dtype="float64")
    doubled = te.compute((3,), lambda i: a[i] * 2.0, name="d")
    f = to_jax(tvm.build(tvm.create_schedule(doubled.op), [a, doubled]))
    with pytest.warns(UserWarning, match="float64 becomes float32 in JAX"):
        z = f(np.arange(3.0))
    assert z.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(z), [0.0, 2.0, 4.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(np.arange(3.0))  # once per dtype


def test_jax_inputs_are_viewed_without_a_copy():
    x = jnp.arange(8.0, dtype="float32")
    assert frameworks.framework_of(x).view(x).data_ptr == x.unsafe_buffer_pointer()


def test_jax_array_as_an_output_is_refused(vadd):
    f = to_jax(vadd)
    x = jnp.ones(4, dtype="float32")
    z = jnp.zeros(4, dtype="float32")
    with pytest.raises(TypeError, match=r"argument 2 \('C'\).*immutable"):
        f(x, x, z)
    assert not np.asarray(z).any()
    with pytest.raises(TypeError, match="immutable"):  # through any bridge
        to_pytorch(vadd)(torch.ones(4), torch.ones(4), z)
    assert not np.asarray(z).any()


def test_jax_and_numpy_mixed_output_in_numpy_is_written(vadd):
    z = np.zeros(3, "float32")
    to_jax(vadd)(jnp.ones(3, dtype="float32"), jnp.ones(3, dtype="float32"), z)
    np.testing.assert_array_equal(z, np.full(3, 2.0, "float32"))


# --- mixed frameworks ----------------------------------------------------------------------------


def test_bridges_accept_arrays_of_other_frameworks(vadd):
    x = np.arange(4, dtype="float32")
    y = torch.ones(4)
    j = jnp.full(4, 2.0, dtype="float32")
    a = nd.array(np.full(4, 3.0, "float32"))
    out = to_pytorch(vadd)(x, j)
    assert isinstance(out, torch.Tensor)
    np.testing.assert_array_equal(out.numpy(), x + 2)
    out = to_numpy(vadd)(y, a)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, np.full(4, 4.0, "float32"))
    out = to_jax(vadd)(a, x)
    assert isinstance(out, jax.Array)
    np.testing.assert_array_equal(np.asarray(out), x + 3)
    z = nd.empty((4,), "float32")
    to_pytorch(vadd)(x, y, z)
    np.testing.assert_array_equal(z.numpy(), x + 1)


def test_a_dlpack_capsule_is_an_array(vadd):
    x = torch.arange(3.0)
    out = to_numpy(vadd)(torch.utils.dlpack.to_dlpack(x), x)
    np.testing.assert_array_equal(out, 2 * x.numpy())


# --- reference counts ----------------------------------------------------------------------------


@pytest.mark.parametrize("bridge", [to_pytorch, to_numpy])
def test_no_reference_leaks_over_10000_calls(vadd, bridge):
    make = (
        (lambda v: torch.full((4,), v))
        if bridge is to_pytorch
        else (lambda v: np.full(4, v, "float32"))
    )
    f = bridge(vadd)
    x, y, z = make(1.0), make(2.0), make(0.0)
    for _ in range(100):  # warm up caches
        f(x, y, z)
        f(x, y)
    before = [sys.getrefcount(o) for o in (x, y, z, vadd, f)]
    for _ in range(10_000):
        f(x, y, z)
        out = f(x, y)
    after = [sys.getrefcount(o) for o in (x, y, z, vadd, f)]
    assert before == after
    assert sys.getrefcount(out) == 2  # the local name and getrefcount's argument: nothing else


def test_no_reference_leaks_with_jax_over_10000_calls(vadd):
    f = to_jax(vadd)
    x = jnp.ones(4, dtype="float32")
    for _ in range(100):
        f(x, x)
    before = (sys.getrefcount(x), sys.getrefcount(vadd))
    for _ in range(10_000):
        out = f(x, x)
    assert (sys.getrefcount(x), sys.getrefcount(vadd)) == before
    assert sys.getrefcount(out) == 2
    np.testing.assert_array_equal(np.asarray(out), np.full(4, 2.0, "float32"))


def test_no_reference_leaks_on_errors(vadd):
    f = to_pytorch(vadd)
    x, z = torch.ones(4), torch.zeros(4, requires_grad=True)
    bad = torch.ones(4, dtype=torch.float64)
    before = [sys.getrefcount(o) for o in (x, z, bad)]
    for _ in range(1000):
        with pytest.raises(ValueError):
            f(x, x, z)
        with pytest.raises(TypeError):
            f(x, bad)
    gc.collect()
    assert [sys.getrefcount(o) for o in (x, z, bad)] == before


def test_bridges_release_the_module(vadd):
    gc.collect()
    before = sys.getrefcount(vadd)
    for _ in range(1000):
        f = to_pytorch(vadd)
        f.extra = f  # a cycle through the instance's attributes: the collector frees it
        f(torch.ones(2), torch.ones(2), torch.empty(2))
    del f
    gc.collect()
    assert sys.getrefcount(vadd) == before


def test_plain_bridges_are_weak_referenceable_and_named():
    import weakref

    from pytvmbridge.bridges import to_numpy

    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    B = tvm.compute((n,), lambda i: A[i] * 2.0, name="B")
    f = to_numpy(tvm.build(tvm.create_schedule(B.op), [A, B], name="twice"))
    assert weakref.ref(f)() is f  # jax.jit and functools caches hold functions weakly
    assert repr(f) == "<pytvmbridge bridge 'twice_numpy'>"
    np.testing.assert_array_equal(f(np.arange(3, dtype="float32")), [0.0, 2.0, 4.0])


def test_writing_a_torch_tensor_bumps_its_version_as_in_place_operators_do():
    # Module calls, bridges in place and @kernel(out=): autograd then refuses a backward whose
    # saved tensor the kernel overwrote, as after z.copy_(...), instead of a wrong gradient
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    B = tvm.placeholder((n,), name="B")
    C = tvm.compute((n,), lambda i: A[i] + B[i], name="C")
    module = tvm.build(tvm.create_schedule(C.op), [A, B, C])
    bridge = tvm.to_pytorch(module)
    double = tvm.kernel(lambda x: tvm.compute(x.shape, lambda i: x[i] * 2.0, name="y"))
    ones = torch.ones(4)
    for write in (
        lambda z: module(ones, ones, z),
        lambda z: bridge(ones, ones, z),
        lambda z: double(ones, out=z),
    ):
        p = torch.ones(4, requires_grad=True)
        z = torch.full((4,), 3.0)
        loss = (z * p).sum()  # saves z for the backward
        before = z._version
        write(z)
        assert z._version == before + 1
        torch.testing.assert_close(z, torch.full((4,), 2.0))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss.backward()
    y = torch.zeros(4)
    double(ones, out=y)  # one bump per call, not per row
    assert y._version == 1


def test_a_parameter_is_written_under_no_grad_as_an_optimizer_step():
    # PyTorch allows p.sub_(...) on a leaf that requires grad under no_grad; so does a kernel
    # (its version bumped), and in grad mode the write is still refused
    p = torch.nn.Parameter(torch.full((4,), 3.0))
    g = torch.full((4,), 2.0)
    # (an output may not overlap an input, API.md: the kernel reads the old values from a copy)
    sgd = tvm.kernel(lambda w, d: tvm.compute(w.shape, lambda i: w[i] - 0.5 * d[i], name="s"))
    with pytest.raises(ValueError, match=r"requires grad.*or write under torch.no_grad\(\)"):
        sgd(p.detach().clone(), g, out=p)
    module = sgd.module_for(p.detach(), g)
    with pytest.raises(ValueError, match=r"requires grad.*or write under torch.no_grad\(\)"):
        module(g, g, p)
    torch.testing.assert_close(p.detach(), torch.full((4,), 3.0))
    with torch.no_grad():
        before = p._version
        sgd(p.clone(), g, out=p)
    torch.testing.assert_close(p.detach(), torch.full((4,), 2.0))
    assert p._version == before + 1 and p.requires_grad
    p.sum().backward()  # still a leaf that autograd works with
    torch.testing.assert_close(p.grad, torch.ones(4))


def test_pytorch_tensors_dlpack_cannot_describe_are_type_errors(vadd):
    f = to_pytorch(vadd)
    q = torch.quantize_per_tensor(torch.ones(4), 0.5, 0, torch.qint8)
    with pytest.raises(TypeError, match=r"argument 0 \('A'\): a quantized PyTorch tensor"):
        f(q, torch.ones(4))
    torch.testing.assert_close(f(q.dequantize(), torch.ones(4)), torch.full((4,), 2.0))
