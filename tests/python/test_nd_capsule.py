"""Raw DLPack capsules built with ctypes: exact deleter counts, rejected tensors, error messages.

The producer here is written from the DLPack specification, so every field (device, dtype,
version, flags, byte_offset, NULL strides) can be set to what a test needs, including what no
real CPU library would send.
"""

import ctypes

import numpy as np
import pytest
import torch

from pytvmbridge import nd

# ---- A ctypes DLPack producer ----------------------------------------------------------------


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


READ_ONLY = 1
CUDA, CPU = 2, 1
FLOAT, COMPLEX, BFLOAT, BOOL = 2, 5, 4, 6

# Own function objects: argtypes set on ctypes.pythonapi's are global, and other libraries
# (xgboost) set their own there.
_api = ctypes.PyDLL(None)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# Capsule names must outlive their capsules: module-level bytes.
_NAMES = {False: b"dltensor", True: b"dltensor_versioned"}


class Producer:
    """Hands out managed tensors over a NumPy buffer and counts deleter calls per tensor."""

    def __init__(self):
        self.deleted = 0
        self.live = {}  # address of each managed struct -> what must stay alive until its deleter
        self._deleter = _DELETER(self._on_delete)
        self._destructors = {v: _DESTRUCTOR(self._make_destructor(v)) for v in (False, True)}

    def _on_delete(self, address):
        self.deleted += 1
        del self.live[address]

    def _make_destructor(self, versioned):
        name = _NAMES[versioned]

        def destructor(capsule):
            # As the specification asks of producers: free the tensor unless a consumer took it.
            if _api.PyCapsule_IsValid(capsule, name):
                self._deleter(_api.PyCapsule_GetPointer(capsule, name))

        return destructor

    def managed(
        self,
        data,
        *,
        versioned,
        shape=None,
        strides=None,
        device=(CPU, 0),
        dtype=None,
        byte_offset=0,
        flags=0,
        version=(1, 0),
        null_data=False,
    ):
        data = np.ascontiguousarray(data)
        shape = data.shape if shape is None else shape
        shape_arr = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        strides_arr = None if strides is None else (ctypes.c_int64 * max(len(strides), 1))(*strides)
        if dtype is None:
            kind = {"f": FLOAT, "i": 0, "u": 1, "b": BOOL, "c": COMPLEX}[data.dtype.kind]
            dtype = (kind, data.dtype.itemsize * 8, 1)
        m = DLManagedTensorVersioned() if versioned else DLManagedTensor()
        t = m.dl_tensor
        t.data = None if null_data else data.ctypes.data
        t.device = DLDevice(*device)
        t.ndim = len(shape)
        t.dtype = DLDataType(*dtype)
        t.shape = shape_arr
        t.strides = strides_arr
        t.byte_offset = byte_offset
        m.deleter = ctypes.cast(self._deleter, ctypes.c_void_p)
        if versioned:
            m.version = DLPackVersion(*version)
            m.flags = flags
        self.live[ctypes.addressof(m)] = (m, data, shape_arr, strides_arr)
        return m

    def capsule(self, data, *, versioned=True, **kwargs):
        m = self.managed(data, versioned=versioned, **kwargs)
        destructor = ctypes.cast(self._destructors[versioned], ctypes.c_void_p)
        return _api.PyCapsule_New(ctypes.addressof(m), _NAMES[versioned], destructor)


@pytest.fixture
def producer():
    p = Producer()
    yield p
    # Reference counting frees everything the test dropped; no gc pass is needed (or wanted: a
    # leak hidden in a reference cycle would be a leak all the same).
    assert p.live == {}, "a managed tensor was never deleted"


def capsule_name(cap) -> str:
    return repr(cap).split('"')[1]


# ---- Ownership -------------------------------------------------------------------------------


@pytest.mark.parametrize("versioned", [False, True])
def test_deleter_runs_once_when_the_last_reference_dies(producer, versioned):
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    cap = producer.capsule(data, versioned=versioned)
    a = nd.from_dlpack(cap)
    assert capsule_name(cap) == ("used_dltensor_versioned" if versioned else "used_dltensor")
    b = nd.from_dlpack(a)
    t = torch.from_dlpack(a)  # an exported reference
    del cap, a
    assert producer.deleted == 0
    np.testing.assert_array_equal(b.numpy(), data)
    assert t.data_ptr() == data.ctypes.data
    del b
    assert producer.deleted == 0  # torch still holds it
    np.testing.assert_array_equal(t.numpy(), data)
    del t
    assert producer.deleted == 1


def test_unconsumed_capsules_free_themselves(producer):
    cap = producer.capsule(np.zeros(3, np.float32))
    del cap
    assert producer.deleted == 1
    # Our own capsules: exported, dropped without a consumer, they release the array.
    a = nd.from_dlpack(producer.capsule(np.zeros(3, np.float32), versioned=False))
    c1, c2 = a.__dlpack__(), a.__dlpack__(max_version=(1, 0))
    assert a._use_count == 3
    del c1, c2
    assert a._use_count == 1
    del a
    assert producer.deleted == 2


def test_exported_capsule_consumed_by_torch_keeps_producer_alive(producer):
    data = np.arange(4, dtype=np.int32)
    a = nd.from_dlpack(producer.capsule(data))
    cap = a.__dlpack__(max_version=(1, 0))
    del a
    t = torch.utils.dlpack.from_dlpack(cap)
    assert capsule_name(cap) == "used_dltensor_versioned"
    del cap
    assert producer.deleted == 0
    assert t.tolist() == [0, 1, 2, 3]
    del t
    assert producer.deleted == 1


def test_views_keep_the_base_alive(producer):
    a = nd.from_dlpack(producer.capsule(np.array([1.0, 2.0], np.float32)))
    bits = a.view("uint32")
    del a
    assert producer.deleted == 0
    np.testing.assert_array_equal(bits.numpy(), np.array([1.0, 2.0], np.float32).view(np.uint32))
    del bits
    assert producer.deleted == 1


# ---- What producers may send ---------------------------------------------------------------


def test_null_strides_byte_offset_and_read_only_flag(producer):
    data = np.arange(10, dtype=np.float64)
    a = nd.from_dlpack(producer.capsule(data, shape=(2, 3), byte_offset=2 * 8, flags=READ_ONLY))
    assert a.strides == (3, 1)  # NULL strides: compact row-major
    assert a.data_ptr == data.ctypes.data + 16  # byte_offset included
    assert a.read_only
    np.testing.assert_array_equal(a.numpy(), np.arange(2, 8, dtype=np.float64).reshape(2, 3))
    assert not a.numpy().flags.writeable
    with pytest.raises(BufferError, match="read-only"):
        a.__dlpack__()
    s = nd.from_dlpack(producer.capsule(data, shape=(3,), strides=(-2,), byte_offset=8 * 8))
    np.testing.assert_array_equal(s.numpy(), [8.0, 6.0, 4.0])


def test_empty_tensor_with_null_data_and_bool_and_bfloat16(producer):
    e = nd.from_dlpack(producer.capsule(np.zeros(0, np.float32), shape=(0, 4), null_data=True))
    assert (e.shape, e.size) == ((0, 4), 0)
    b = nd.from_dlpack(producer.capsule(np.array([1, 0, 1], np.uint8), dtype=(BOOL, 8, 1)))
    assert b.dtype == "bool"
    assert b.numpy().tolist() == [True, False, True]
    bits = np.array([0x3FC0, 0xC020], np.uint16)  # 1.5, -2.5 in bfloat16
    h = nd.from_dlpack(producer.capsule(bits, dtype=(BFLOAT, 16, 1)))
    assert h.dtype == "bfloat16"
    assert h.numpy().astype(np.float32).tolist() == [1.5, -2.5]


# ---- Rejections: error messages, and the capsule is left to free itself ------------------------


REJECTIONS = [
    (dict(dtype=(COMPLEX, 64, 1)), TypeError, "unsupported dtype complex64"),
    (dict(dtype=(10, 8, 1)), TypeError, "unsupported dtype float8_e4m3fn"),
    (dict(dtype=(3, 64, 1)), TypeError, "unsupported dtype opaque_handle64"),
    (dict(dtype=(FLOAT, 32, 4)), TypeError, "unsupported dtype float32x4"),
    (dict(device=(CUDA, 0)), ValueError, "on device cuda:0"),
    (dict(device=(10, 1)), ValueError, "on device rocm:1"),
    (dict(shape=(2, -3)), ValueError, "dimension 1 of the DLPack tensor has negative extent -3"),
    (dict(null_data=True), ValueError, "NULL data pointer"),
]


@pytest.mark.parametrize("versioned", [False, True])
@pytest.mark.parametrize(("fields", "error", "message"), REJECTIONS)
def test_rejected_capsules_are_not_consumed(producer, versioned, fields, error, message):
    cap = producer.capsule(np.zeros(6, np.float32), versioned=versioned, **fields)
    name = capsule_name(cap)
    with pytest.raises(error, match=f"from_dlpack argument: .*{message}"):
        nd.from_dlpack(cap)
    assert capsule_name(cap) == name  # still the producer's
    del cap
    assert producer.deleted == 1


def test_newer_major_version_is_a_buffer_error(producer):
    cap = producer.capsule(np.zeros(2, np.float32), version=(2, 0))
    with pytest.raises(BufferError, match=r"DLPack version 2\.0 is not supported"):
        nd.from_dlpack(cap)
    assert capsule_name(cap) == "dltensor_versioned"
    del cap
    assert producer.deleted == 1
    # A newer minor version is fine.
    a = nd.from_dlpack(producer.capsule(np.ones(2, np.float32), version=(1, 7)))
    np.testing.assert_array_equal(a.numpy(), [1, 1])


def test_consumed_and_foreign_capsules(producer):
    cap = producer.capsule(np.zeros(2, np.float32))
    nd.from_dlpack(cap)
    with pytest.raises(BufferError, match=r"already consumed .*'used_dltensor_versioned'"):
        nd.from_dlpack(cap)
    legacy = torch.utils.dlpack.to_dlpack(torch.ones(2))
    torch.utils.dlpack.from_dlpack(legacy)
    with pytest.raises(BufferError, match=r"already consumed .*'used_dltensor'"):
        nd.from_dlpack(legacy)
    other = _api.PyCapsule_New(ctypes.addressof(ctypes.c_int(0)), b"not_a_tensor", None)
    with pytest.raises(
        TypeError,
        match="expected a DLPack capsule named 'dltensor' or "
        "'dltensor_versioned', got a capsule named 'not_a_tensor'",
    ):
        nd.from_dlpack(other)


class CudaProducer:
    """A producer that claims its memory is on a GPU (the device a CPU kernel cannot read)."""

    def __init__(self, producer):
        self.producer = producer

    def __dlpack__(self, *, max_version=None, **kwargs):
        return self.producer.capsule(
            np.zeros(4, np.float32), device=(CUDA, 1), versioned=max_version is not None
        )

    def __dlpack_device__(self):
        return (CUDA, 1)


def test_unsupported_device_from_a_producer_object(producer):
    with pytest.raises(ValueError, match="from_dlpack argument: the array is on device cuda:1"):
        nd.from_dlpack(CudaProducer(producer))
    assert producer.deleted == 1  # the rejected capsule freed itself
    with pytest.raises(ValueError, match="on device cuda:1"):
        nd.array(CudaProducer(producer))
