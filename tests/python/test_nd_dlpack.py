"""Zero-copy DLPack interchange with real PyTorch, NumPy and JAX arrays, both directions."""

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import torch
import torch.utils.dlpack

from pytvmbridge import _core, nd


@pytest.fixture(params=["exchange_api", "dunder_dlpack"])
def torch_path(request):
    """Runs a test through PyTorch's C exchange table and through __dlpack__(max_version=...)."""
    _core._set_exchange_api_enabled(request.param == "exchange_api")
    yield request.param
    _core._set_exchange_api_enabled(True)


def np_strides(a: np.ndarray) -> tuple:
    return tuple(s // a.itemsize for s in a.strides)


# ---- Import ----------------------------------------------------------------------------------


def test_torch_view_with_storage_offset(torch_path):
    t = torch.arange(30, dtype=torch.float32).reshape(5, 6)
    v = t[2:, 1:]
    assert v.storage_offset() == 13
    a = nd.from_dlpack(v)
    assert a.shape == (3, 5)
    assert a.strides == v.stride() == (6, 1)
    assert a.data_ptr == v.data_ptr() == t.data_ptr() + 13 * 4
    assert not a.is_compact()
    np.testing.assert_array_equal(a.numpy(), v.numpy())
    # Writes are seen both ways.
    v[0, 0] = -1.0
    assert a.numpy()[0, 0] == -1.0
    a.numpy()[2, 4] = 99.0
    assert t[4, 5].item() == 99.0


def test_torch_transpose_and_steps_keep_strides(torch_path):
    t = torch.arange(24, dtype=torch.int32).reshape(4, 6)
    for v in [t.T, t[::2, ::3], t.T[1:, ::2], t.reshape(2, 2, 6).permute(2, 0, 1)]:
        a = nd.from_dlpack(v)
        assert a.shape == tuple(v.shape)
        assert a.strides == v.stride()
        assert a.data_ptr == v.data_ptr()
        assert a.is_compact() == v.is_contiguous()
        np.testing.assert_array_equal(a.numpy(), v.numpy())
        np.testing.assert_array_equal(nd.array(v).numpy(), v.numpy())


def test_torch_dtypes_arrive_as_themselves(torch_path):
    b = torch.tensor([[True, False], [False, True]])
    a = nd.from_dlpack(b)
    assert a.dtype == "bool"  # kDLBool, not uint8
    assert a.numpy().tolist() == b.tolist()
    u8 = nd.from_dlpack(torch.tensor([0, 255], dtype=torch.uint8))
    assert u8.dtype == "uint8"
    np.testing.assert_array_equal(u8.numpy(), [0, 255])

    h = torch.randn(2, 3).half()
    a = nd.from_dlpack(h)
    assert a.dtype == "float16"
    np.testing.assert_array_equal(a.numpy(), h.numpy())

    bf = torch.randn(3, 4).bfloat16()[:, 1:]
    a = nd.from_dlpack(bf)
    assert (a.dtype, a.strides, a.data_ptr) == ("bfloat16", (4, 1), bf.data_ptr())
    np.testing.assert_array_equal(a.numpy().astype(np.float32), bf.float().numpy())

    for dt in [
        torch.int8,
        torch.int16,
        torch.int64,
        torch.uint16,
        torch.uint32,
        torch.uint64,
        torch.float64,
    ]:
        t = torch.arange(5).to(dt)
        a = nd.from_dlpack(t)
        assert a.dtype == str(dt).removeprefix("torch.")
        np.testing.assert_array_equal(a.numpy(), np.arange(5))


def test_zero_size_and_scalar_tensors(torch_path):
    for t in [torch.empty(0, 3), torch.empty(4, 0, 2, dtype=torch.int64), torch.empty(0)]:
        a = nd.from_dlpack(t)
        assert a.shape == tuple(t.shape)
        assert a.size == 0
        assert a.numpy().shape == tuple(t.shape)
        back = torch.from_dlpack(a)
        assert back.shape == t.shape and back.dtype == t.dtype
    s = torch.tensor(2.5)
    a = nd.from_dlpack(s)
    assert (a.shape, a.strides) == ((), ())
    assert a.numpy()[()] == 2.5
    assert torch.from_dlpack(a).item() == 2.5


def test_parameters_and_grad_tensors_through_the_exchange_table():
    # __dlpack__ refuses tensors that require grad; the C table (what kernels use) views them,
    # and so does the __dlpack__ route (through detach()): both routes read the same values.
    p = torch.nn.Parameter(torch.arange(4.0))
    a = nd.from_dlpack(p)
    assert a.data_ptr == p.data_ptr()
    np.testing.assert_array_equal(a.numpy(), [0, 1, 2, 3])
    with pytest.raises(BufferError, match="require gradient"):
        p.__dlpack__()
    _core._set_exchange_api_enabled(False)
    try:
        b = nd.from_dlpack(p)
        assert b.data_ptr == p.data_ptr()
        np.testing.assert_array_equal(b.numpy(), [0, 1, 2, 3])
    finally:
        _core._set_exchange_api_enabled(True)


def test_numpy_views_and_read_only():
    base = np.arange(40, dtype=np.float64).reshape(5, 8)
    for v in [base[1:, 2:], base.T, base[::2, ::-3], base[3]]:
        a = nd.from_dlpack(v)
        assert a.shape == v.shape
        assert a.strides == np_strides(v)
        assert a.data_ptr == v.ctypes.data
        assert not a.read_only
        np.testing.assert_array_equal(a.numpy(), v)
    ro = np.arange(6, dtype=np.int32).reshape(2, 3)
    ro.flags.writeable = False
    a = nd.from_dlpack(ro)
    assert a.read_only
    assert a.data_ptr == ro.ctypes.data
    view = a.numpy()
    assert not view.flags.writeable  # the flag travels on to consumers
    np.testing.assert_array_equal(view, ro)
    assert nd.from_dlpack(np.ones(3)).read_only is False


def test_jax_import_is_zero_copy():
    j = jnp.arange(12, dtype=jnp.float32).reshape(3, 4) + 0.5
    a = nd.from_dlpack(j)
    assert a.data_ptr == j.unsafe_buffer_pointer()
    assert a.shape == (3, 4) and a.dtype == "float32"
    np.testing.assert_array_equal(a.numpy(), np.asarray(j))
    b = nd.from_dlpack(jnp.array([1, 2], dtype=jnp.int32) > 1)
    assert b.dtype == "bool"
    assert b.numpy().tolist() == [False, True]


def test_nd_array_argument_is_taken_directly():
    a = nd.empty((2, 2), "float32")
    b = nd.from_dlpack(a)
    assert b.data_ptr == a.data_ptr
    assert a._use_count == 2  # shared storage record, no capsule round trip


# ---- Export ----------------------------------------------------------------------------------


def test_export_to_torch_numpy_jax_shares_memory():
    a = nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    t = torch.from_dlpack(a)
    n = np.from_dlpack(a)
    j = jax.dlpack.from_dlpack(a)
    assert t.data_ptr() == n.ctypes.data == j.unsafe_buffer_pointer() == a.data_ptr
    assert t.stride() == a.strides == np_strides(n)
    t[0, 1] = 100.0
    assert n[0, 1] == 100.0 and a.numpy()[0, 1] == 100.0
    n[2, 3] = -5.0
    assert t[2, 3].item() == -5.0
    np.testing.assert_array_equal(np.asarray(j), a.numpy())  # JAX reads the shared buffer


def test_export_of_strided_bool_and_bfloat16():
    t = torch.arange(20, dtype=torch.float32).reshape(4, 5)
    a = nd.from_dlpack(t[1:, ::2])
    back = torch.from_dlpack(a)
    assert back.data_ptr() == t[1:, ::2].data_ptr()
    assert back.stride() == (5, 2)
    assert torch.equal(back, t[1:, ::2])
    b = nd.array([True, False, True])
    assert torch.from_dlpack(b).dtype == torch.bool
    assert np.from_dlpack(b).dtype == np.bool_
    bf = nd.array(np.array([1.5, -2.25], dtype=np.float32), dtype="bfloat16")
    tb = torch.from_dlpack(bf)
    assert tb.dtype == torch.bfloat16
    assert tb.float().tolist() == [1.5, -2.25]
    assert np.from_dlpack(bf.view("uint16")).view(ml_dtypes.bfloat16).astype(float).tolist() == [
        1.5,
        -2.25,
    ]


def test_legacy_and_versioned_capsules_both_ways(torch_path):
    t = torch.arange(6, dtype=torch.int64)
    legacy = torch.utils.dlpack.to_dlpack(t)
    assert "dltensor" in repr(legacy) and "versioned" not in repr(legacy)
    a = nd.from_dlpack(legacy)
    assert '"used_dltensor"' in repr(legacy)
    assert a.data_ptr == t.data_ptr()
    versioned = t.__dlpack__(max_version=(1, 0))
    assert '"dltensor_versioned"' in repr(versioned)
    b = nd.from_dlpack(versioned)
    assert '"used_dltensor_versioned"' in repr(versioned)
    np.testing.assert_array_equal(b.numpy(), np.arange(6))

    src = nd.array(np.arange(4, dtype=np.float32))
    cap = src.__dlpack__()
    assert '"dltensor"' in repr(cap)
    t1 = torch.utils.dlpack.from_dlpack(cap)
    assert '"used_dltensor"' in repr(cap)
    cap2 = src.__dlpack__(max_version=(1, 0))
    assert '"dltensor_versioned"' in repr(cap2)
    t2 = torch.utils.dlpack.from_dlpack(cap2)
    assert '"used_dltensor_versioned"' in repr(cap2)
    assert t1.data_ptr() == t2.data_ptr() == src.data_ptr
    assert '"dltensor"' in repr(src.__dlpack__(max_version=(0, 8)))  # older consumer
    again = nd.from_dlpack(src.__dlpack__(max_version=(1, 3)))
    assert again.data_ptr == src.data_ptr


def test_dlpack_keywords_follow_the_specification():
    a = nd.array(np.arange(6, dtype=np.float32))
    # copy=True: new memory with the same values.
    c = np.from_dlpack(a, copy=True)
    assert c.ctypes.data != a.data_ptr
    np.testing.assert_array_equal(c, a.numpy())
    assert np.from_dlpack(a, copy=False).ctypes.data == a.data_ptr
    assert nd.from_dlpack(a.__dlpack__(copy=True, max_version=(1, 0))).data_ptr != a.data_ptr
    assert nd.from_dlpack(a.__dlpack__(dl_device=(1, 0))).data_ptr == a.data_ptr
    assert nd.from_dlpack(a.__dlpack__(stream=None)).data_ptr == a.data_ptr
    assert nd.from_dlpack(a.__dlpack__(stream=-1)).data_ptr == a.data_ptr
    with pytest.raises(BufferError, match="cannot export to device cuda:0"):
        a.__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError, match="stream must be None or an int"):
        a.__dlpack__(stream="default")
    with pytest.raises(TypeError, match=r"max_version must be a \(major, minor\) tuple"):
        a.__dlpack__(max_version=1)
    with pytest.raises(TypeError, match="copy must be None, True or False"):
        a.__dlpack__(copy=1)
    with pytest.raises(TypeError):
        a.__dlpack__(None)  # keyword-only, as the specification says


def test_read_only_export():
    ro = np.arange(3, dtype=np.float32)
    ro.flags.writeable = False
    a = nd.from_dlpack(ro)
    v = np.from_dlpack(a)  # versioned: the flag travels
    assert not v.flags.writeable
    assert v.ctypes.data == ro.ctypes.data
    with pytest.raises(BufferError, match=r"read-only.*legacy 'dltensor' capsule"):
        a.__dlpack__()
    c = np.from_dlpack(a, copy=True)  # a copy is the consumer's own, writable memory
    assert c.flags.writeable
    np.testing.assert_array_equal(c, ro)


def test_read_only_arrays_go_back_to_jax_without_a_copy():
    # JAX asks for a legacy capsule, which cannot say read-only; it never writes into what it
    # imports, so a JAX array viewed as an NDArray (read-only) goes back to JAX as a view.
    x = jnp.arange(6.0, dtype="float32").reshape(2, 3)
    v = nd.from_dlpack(x)
    back = jax.dlpack.from_dlpack(v)
    assert back.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(back) + 1, np.asarray(x) + 1)
    ro = np.arange(3, dtype=np.float32)
    ro.flags.writeable = False
    np.testing.assert_array_equal(np.asarray(jax.dlpack.from_dlpack(nd.from_dlpack(ro))), ro)
    with pytest.raises(BufferError, match="read-only"):
        nd.from_dlpack(ro).__dlpack__()  # any other legacy consumer is still refused


# ---- Producers with other protocols ------------------------------------------------------------


class LegacyOnlyProducer:
    """A producer from before DLPack 1.0: __dlpack__ takes no max_version."""

    def __init__(self, arr):
        self.arr = arr
        self.calls = []

    def __dlpack__(self, stream=None):
        self.calls.append(stream)
        return self.arr.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


def test_fallback_to_legacy_dunder_dlpack():
    base = np.arange(5, dtype=np.int16)
    p = LegacyOnlyProducer(base)
    a = nd.from_dlpack(p)
    assert p.calls == [None]  # the keyword call failed with TypeError, then one legacy call
    assert a.data_ptr == base.ctypes.data
    np.testing.assert_array_equal(a.numpy(), base)


def test_producer_exceptions_propagate():
    class Raising:
        def __dlpack__(self, **kwargs):
            raise BufferError("producer says no")

    class AttrInside:
        def __dlpack__(self, **kwargs):
            return self.missing

    class NotACapsule:
        def __dlpack__(self, **kwargs):
            return 42

    with pytest.raises(BufferError, match="producer says no"):
        nd.from_dlpack(Raising())
    with pytest.raises(AttributeError, match="missing"):
        nd.from_dlpack(AttrInside())
    with pytest.raises(
        TypeError, match=r"__dlpack__\(\) of '.*NotACapsule' returned an object of type 'int'"
    ):
        nd.from_dlpack(NotACapsule())


def test_objects_without_dlpack_are_type_errors():
    with pytest.raises(
        TypeError,
        match=r"expected an array \(an object with __dlpack__.*got an object of type 'list'",
    ):
        nd.from_dlpack([1, 2, 3])
    with pytest.raises(TypeError, match="got an object of type 'object'"):
        nd.from_dlpack(object())
    with pytest.raises(TypeError, match="got an object of type 'NoneType'"):
        nd.from_dlpack(None)


def test_unsupported_dtypes_from_real_producers():
    with pytest.raises(TypeError, match="from_dlpack argument: unsupported dtype complex64"):
        nd.from_dlpack(torch.zeros(2, dtype=torch.complex64))
    with pytest.raises(TypeError, match="unsupported dtype complex128"):
        nd.from_dlpack(np.zeros(2, dtype=np.complex128))
    with pytest.raises(TypeError, match="unsupported dtype float8_e4m3fn"):
        nd.from_dlpack(torch.zeros(2, dtype=torch.float8_e4m3fn))


def test_tensors_pytorch_cannot_export_are_explained_without_a_stack_trace():
    q = torch.quantize_per_tensor(torch.zeros(4), 0.1, 0, torch.qint8)
    with pytest.raises(
        TypeError, match=r"quantized PyTorch tensor \(dtype torch.qint8\).*dequantize"
    ):
        nd.from_dlpack(q)
    with pytest.raises(TypeError, match=r"dtype torch.bits8.*view\(torch.uint8\)"):
        nd.from_dlpack(torch.zeros(4, dtype=torch.uint8).view(torch.bits8))
    nested = torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)])
    with pytest.raises(ValueError, match=r"nested PyTorch tensor.*to_padded_tensor") as caught:
        nd.from_dlpack(nested)
    assert "Exception raised from" not in str(caught.value)
    # what it can export of the same tensors, as a kernel's inputs would be
    np.testing.assert_array_equal(nd.from_dlpack(q.int_repr()).numpy(), np.zeros(4, "int8"))


def test_shared_buffer_example_runs(capsys):
    import pathlib
    import runpy

    example = pathlib.Path(__file__).parents[2] / "examples" / "shared_buffer.py"
    runpy.run_path(str(example), run_name="__main__")
    out = capsys.readouterr().out
    assert out.count("data pointer") == 4
    assert out.strip().endswith("ok: one buffer, four frameworks, no copies")


def test_a_jax_array_imported_through_dlpack_cannot_be_written():
    # JAX treats its arrays as immutable but exports them without DLPack's read-only flag: the
    # NDArray viewing one refuses to be an output, as one of a read-only NumPy array does
    import pytvmbridge as tvm

    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    B = tvm.compute((n,), lambda i: A[i] + 7.0, name="B")
    f = tvm.build(tvm.create_schedule(B.op), [A, B])
    j = jnp.zeros(3, dtype=jnp.float32)
    view = tvm.nd.from_dlpack(j)
    assert view.read_only
    with pytest.raises(
        ValueError, match=r"argument 1 \('B'\) is an output but the array is read-only"
    ):
        f(np.ones(3, "float32"), view)
    np.testing.assert_array_equal(np.asarray(j), np.zeros(3, "float32"))
    out = np.empty(3, "float32")
    f(view, out)  # still an input
    np.testing.assert_array_equal(out, np.full(3, 7.0, "float32"))


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"max_version": ("1", "0")}, TypeError, "max_version must be a tuple of two ints"),
        ({"max_version": (True, 0)}, TypeError, "max_version must be a tuple of two ints"),
        ({"max_version": (2**70, 0)}, ValueError, "max_version holds a number out of range"),
        ({"dl_device": (1.0, 0)}, TypeError, "dl_device must be a tuple of two ints"),
        ({"dl_device": (2**40, 0)}, ValueError, "dl_device holds a number out of range"),
    ],
)
def test_dlpack_arguments_of_the_wrong_kind_name_the_argument(kwargs, error, message):
    a = nd.array(np.arange(3, dtype="float32"))
    with pytest.raises(error, match=message):
        a.__dlpack__(**kwargs)
    assert np.from_dlpack(a).tolist() == [0.0, 1.0, 2.0]  # still exportable


def test_empty_takes_a_numpy_array_of_sizes():
    assert nd.empty(np.array([2, 3])).shape == (2, 3)  # as np.empty does
    assert nd.empty(np.array(4)).shape == (4,)
    assert nd.empty((2, np.int64(3)), "int8").shape == (2, 3)
    with pytest.raises(TypeError, match="shape must be an int or a sequence of ints"):
        nd.empty("ab")
