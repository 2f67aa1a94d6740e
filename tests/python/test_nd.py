"""nd.array / nd.empty / NDArray's Python surface, checked against NumPy and PyTorch values."""

import sys

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import nd


def owns_its_memory(a: nd.NDArray, *sources: int) -> bool:
    return a.data_ptr % 64 == 0 and all(a.data_ptr != s for s in sources)


# ---- nd.array: copies into our own memory ---------------------------------------------------


def test_array_from_nested_lists_follows_numpy_dtypes():
    a = nd.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert (a.shape, a.dtype, a.strides, a.ndim) == ((2, 3), "float64", (3, 1), 2)
    np.testing.assert_array_equal(a.numpy(), np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    i = nd.array([[1, 2], [3, 4]])
    assert i.dtype == "int64"
    np.testing.assert_array_equal(i.numpy(), [[1, 2], [3, 4]])
    b = nd.array([True, False, True])
    assert b.dtype == "bool"
    assert b.numpy().tolist() == [True, False, True]


def test_array_with_dtype_converts_like_numpy_astype():
    a = nd.array([[1.7, -2.2], [3.5, 4.0]], dtype="int32")
    np.testing.assert_array_equal(a.numpy(), np.array([[1.7, -2.2], [3.5, 4.0]]).astype("int32"))
    src = np.linspace(-3, 3, 12).reshape(3, 4)
    for dtype, name in [
        ("float32", "float32"),
        ("float16", "float16"),
        ("int8", "int8"),
        ("uint16", "uint16"),
        ("bool", "bool"),
        ("double", "float64"),
        (np.float32, "float32"),
        (torch.float16, "float16"),
    ]:
        got = nd.array(src, dtype=dtype)
        want = src.astype(name)
        assert got.dtype == name
        np.testing.assert_array_equal(got.numpy(), want)
        assert owns_its_memory(got, src.ctypes.data)


def test_array_copies_and_is_aligned():
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = nd.array(src)
    assert owns_its_memory(a, src.ctypes.data)
    src[0, 0] = 100.0  # the copy does not see later writes
    assert a.numpy()[0, 0] == 0.0
    np.testing.assert_array_equal(a.numpy()[1:], src[1:])


def test_array_of_strided_sources_is_compact():
    t = torch.arange(30, dtype=torch.int16).reshape(5, 6)
    view = t[1:, ::2].T  # offset, step and transpose
    a = nd.array(view)
    assert a.shape == tuple(view.shape)
    assert a.strides == (4, 1)
    assert a.is_compact()
    np.testing.assert_array_equal(a.numpy(), view.numpy())
    n = np.arange(24, dtype=np.float64).reshape(2, 3, 4)[:, ::-1, 1:3]  # negative stride
    b = nd.array(n)
    np.testing.assert_array_equal(b.numpy(), n)
    assert owns_its_memory(b, n.ctypes.data)


def test_array_from_torch_and_jax_keeps_dtype_and_values():
    cases = [
        torch.randn(3, 4),
        torch.randn(2, 2, dtype=torch.float64),
        torch.randn(5).to(torch.float16),
        torch.tensor([True, False]),
        torch.arange(-4, 4, dtype=torch.int8),
        torch.arange(6, dtype=torch.int64).reshape(2, 3),
    ]
    for t in cases:
        a = nd.array(t)
        assert a.dtype == str(t.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(a.numpy(), t.numpy())
        assert owns_its_memory(a, t.data_ptr())
    j = jnp.arange(10, dtype=jnp.float32).reshape(2, 5) * 1.5
    a = nd.array(j)
    assert a.dtype == "float32"
    np.testing.assert_array_equal(a.numpy(), np.asarray(j))


def test_array_bfloat16_round_trips_bits_exactly():
    t = torch.randn(4, 3).to(torch.bfloat16)
    a = nd.array(t)
    assert a.dtype == "bfloat16"
    # Same 16-bit patterns as torch's.
    np.testing.assert_array_equal(
        a.view("uint16").numpy(), t.view(torch.int16).numpy().view("uint16")
    )
    n = a.numpy()
    assert n.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(n.astype(np.float32), t.float().numpy())
    # float32 -> bfloat16 conversion rounds as ml_dtypes (and torch) do.
    src = np.array([1.0, 1.00390625, 3.14159, -2.5e-3], dtype=np.float32)
    b = nd.array(src, dtype="bfloat16")
    np.testing.assert_array_equal(b.numpy(), src.astype(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(
        b.view("uint16").numpy(),
        torch.from_numpy(src).bfloat16().view(torch.int16).numpy().view("uint16"),
    )
    # And an ml_dtypes NumPy array is accepted as a source.
    c = nd.array(src.astype(ml_dtypes.bfloat16))
    assert c.dtype == "bfloat16"
    np.testing.assert_array_equal(c.numpy(), b.numpy())


def test_array_of_scalars_and_nd_arrays():
    s = nd.array(3.5, dtype="float32")
    assert (s.shape, s.strides, s.size) == ((), (), 1)
    assert s.numpy()[()] == np.float32(3.5)
    a = nd.array([1, 2, 3], dtype="int32")
    b = nd.array(a)
    assert b.data_ptr != a.data_ptr
    np.testing.assert_array_equal(b.numpy(), [1, 2, 3])
    c = nd.array(a, dtype="float64")
    np.testing.assert_array_equal(c.numpy(), np.array([1.0, 2.0, 3.0]))


def test_array_rejects_what_numpy_cannot_make_numeric():
    with pytest.raises(TypeError, match="unsupported dtype 'complex128'"):
        nd.array([1 + 2j])
    with pytest.raises(TypeError, match="unsupported dtype"):
        nd.array(["a", "b"])
    with pytest.raises(TypeError, match="unsupported dtype 'complex64'"):
        nd.array([1.0], dtype="complex64")
    with pytest.raises(TypeError, match="unsupported dtype 'complex64'"):
        nd.array([1.0], dtype=torch.complex64)


# ---- nd.empty --------------------------------------------------------------------------------


def test_empty_shapes_dtypes_and_alignment():
    for shape, dtype, name in [
        ((2, 3), "float32", "float32"),
        (5, np.int16, "int16"),
        ([4, 1, 2], torch.bfloat16, "bfloat16"),
        ((), "bool", "bool"),
        ((0, 7), np.dtype("uint64"), "uint64"),
    ]:
        a = nd.empty(shape, dtype)
        want_shape = (shape,) if isinstance(shape, int) else tuple(shape)
        assert a.shape == want_shape
        assert a.dtype == name
        assert a.data_ptr % 64 == 0
        assert a.is_compact()
        assert a.strides == tuple(
            int(np.prod(want_shape[i + 1 :], dtype=np.int64)) for i in range(len(want_shape))
        )
        assert a.size == int(np.prod(want_shape, dtype=np.int64))
        assert a.nbytes == a.size * a.itemsize
    assert nd.empty((3,)).dtype == "float32"
    assert nd.empty(np.int64(4), "int8").shape == (4,)


def test_empty_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"shape \(2, -3\) has negative extent -3 in dimension 1"):
        nd.empty((2, -3))
    with pytest.raises(TypeError, match="unsupported dtype 'complex64'"):
        nd.empty((2,), "complex64")
    with pytest.raises(TypeError, match="shape entries must be integers, got 'float'"):
        nd.empty((2, 1.5))
    with pytest.raises(TypeError, match="shape must be an int or a sequence of ints, got 'str'"):
        nd.empty("23")
    with pytest.raises(ValueError, match="too large"):
        nd.empty((2**62, 16), "float64")
    with pytest.raises(ValueError, match="live on the CPU"):
        nd.empty((2,), device=(2, 0))
    with pytest.raises(TypeError, match="No constructor defined"):
        nd.NDArray()


# ---- NDArray methods ---------------------------------------------------------------------------


def test_numpy_is_a_zero_copy_view_both_ways():
    a = nd.array(np.zeros((2, 3), dtype=np.float32))
    v = a.numpy()
    assert v.ctypes.data == a.data_ptr
    v[1, 2] = 7.0
    assert a.numpy()[1, 2] == 7.0
    assert a.asnumpy()[1, 2] == 7.0
    np.testing.assert_array_equal(np.asarray(a), v)
    assert np.asarray(a, dtype=np.float64).dtype == np.float64
    assert np.asarray(a).ctypes.data == a.data_ptr


def test_numpy_of_bool_float16_and_views():
    t = torch.tensor([[True, False, True], [False, False, True]])
    a = nd.from_dlpack(t)
    assert a.numpy().dtype == np.bool_
    np.testing.assert_array_equal(a.numpy(), t.numpy())
    h = nd.from_dlpack(torch.arange(6, dtype=torch.float16).reshape(2, 3)[:, 1:])
    assert h.numpy().dtype == np.float16
    np.testing.assert_array_equal(h.numpy(), np.arange(6, dtype=np.float16).reshape(2, 3)[:, 1:])


def test_bfloat16_numpy_without_ml_dtypes_explains(monkeypatch):
    a = nd.empty((2,), "bfloat16")
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # makes `import ml_dtypes` fail
    with pytest.raises(TypeError, match=r"bfloat16 needs the ml_dtypes package.*view\('uint16'\)"):
        a.numpy()
    assert "dtype=bfloat16" in repr(a)  # repr still works, without values
    assert a.view("uint16").numpy().dtype == np.uint16


def test_view_reinterprets_bits():
    a = nd.array(np.array([1.0, -2.0], dtype=np.float32))
    bits = a.view("int32")
    assert bits.data_ptr == a.data_ptr
    np.testing.assert_array_equal(bits.numpy(), np.array([1.0, -2.0], np.float32).view(np.int32))
    with pytest.raises(TypeError, match="element sizes differ"):
        a.view("float64")


def test_copyfrom_converts_and_checks():
    a = nd.empty((2, 3), "float32")
    assert a.copyfrom(np.arange(6.0).reshape(2, 3)) is a
    np.testing.assert_array_equal(a.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
    a.copyfrom(torch.ones(3, 2).T)  # same dtype, strided source
    np.testing.assert_array_equal(a.numpy(), np.ones((2, 3), np.float32))
    a.copyfrom([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(a.numpy(), [[1, 2, 3], [4, 5, 6]])
    with pytest.raises(
        ValueError, match=r"shape mismatch: the destination has shape \(2, 3\), the source \(3,\)"
    ):
        a.copyfrom(np.zeros(3, np.float32))
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        nd.from_dlpack(ro).copyfrom(a)


def test_properties_and_repr():
    a = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert a.device == (1, 0)
    assert a.__dlpack_device__() == (1, 0)
    assert (a.size, a.itemsize, a.nbytes) == (6, 4, 24)
    r = repr(a)
    assert r.startswith("<pytvmbridge.NDArray shape=(2, 3) dtype=float32 strides=(3, 1)\n")
    assert "[[0., 1., 2.],\n [3., 4., 5.]]>" in r
    ro = np.arange(3.0)
    ro.flags.writeable = False
    assert "read_only" in repr(nd.from_dlpack(ro))


def test_tvm_style_device_arguments():
    assert repr(nd.cpu(0)) == "cpu(0)"
    a = nd.array(np.ones(3, np.float32), nd.cpu(0))  # TVM's positional device
    assert a.dtype == "float32"
    np.testing.assert_array_equal(a.numpy(), np.ones(3))
    assert nd.empty((2,), "int32", device=nd.cpu()).shape == (2,)
    with pytest.raises(ValueError, match="live on the CPU"):
        nd.array([1.0], device="cuda")
    assert tvm.nd is nd


def test_tvm_era_copyto_ctx_and_cpu_devices_in_any_spelling():

    a = nd.array(np.arange(3, dtype="float32"), ctx=tvm.cpu(0))  # TVM 0.6's keyword
    assert a.ctx == tvm.cpu(0) and a.ctx == a.device
    into = nd.empty((3,))
    assert a.copyto(into) is into
    np.testing.assert_array_equal(into.numpy(), [0.0, 1.0, 2.0])
    copy = a.copyto(tvm.cpu(0))
    assert copy.data_ptr != a.data_ptr
    np.testing.assert_array_equal(copy.numpy(), a.numpy())
    for device in (torch.device("cpu"), "cpu:0", (1, 0)):
        assert nd.array([1.0], device=device).shape == (1,)
    with pytest.raises(ValueError, match="arrays live on the CPU, got 'cuda'"):
        nd.array([1.0], device="cuda")
    with pytest.raises(ValueError, match="shape mismatch"):
        a.copyto(nd.empty((4,)))
