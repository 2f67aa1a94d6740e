"""NDArray: pytvmbridge's array, shared with every DLPack framework without copying.

``array`` copies anything array-like into new 64-byte aligned memory owned by pytvmbridge;
``empty`` allocates; ``from_dlpack`` views another framework's memory. An ``NDArray`` has
``.shape .dtype .strides .numpy()`` and ``__dlpack__``, so PyTorch, NumPy and JAX view it back
without copying.

Example:
    >>> import numpy as np
    >>> from pytvmbridge import nd
    >>> a = nd.array(np.arange(6, dtype="float32").reshape(2, 3))
    >>> a.shape, a.dtype, a.strides
    ((2, 3), 'float32', (3, 1))
    >>> v = np.from_dlpack(a)  # a view of the same memory
    >>> v[1, 2] = 50.0
    >>> float(a.numpy()[1, 2])
    50.0
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import _core
from .error import TVMTypeError, TVMValueError

__all__ = ["Device", "NDArray", "array", "cpu", "empty", "from_dlpack"]

#: The array class (implemented in C++); see ``help(NDArray)``.
NDArray = _core.NDArray

#: A dtype: a name such as ``"float32"``, a NumPy dtype or scalar type, or a ``torch.dtype``.
DTypeLike = Any

_SUPPORTED = (
    "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 bfloat16 float32 float64"
).split()
_DLPACK_CPU = 1


class Device(NamedTuple):
    """A DLPack device, as TVM's ``tvm.cpu(0)``; pytvmbridge arrays live on the CPU."""

    device_type: int
    device_id: int

    @property
    def exist(self) -> bool:
        """Whether the device exists (TVM's ``dev.exist``): true for the CPU."""
        return self.device_type == _DLPACK_CPU

    def sync(self) -> None:
        """Wait for the device's work to finish (TVM's ``dev.sync()``); CPU kernels are
        synchronous, so there is nothing to wait for."""

    def __repr__(self) -> str:
        if self.device_type == _DLPACK_CPU:
            return f"cpu({self.device_id})"
        return f"Device(device_type={self.device_type}, device_id={self.device_id})"


def cpu(dev_id: int = 0) -> Device:
    """The CPU device (TVM's ``tvm.cpu``).

    Example:
        >>> from pytvmbridge import nd
        >>> nd.empty((2,), "int32", device=nd.cpu(0)).device
        (1, 0)
    """
    return Device(_DLPACK_CPU, dev_id)


def _check_device(device: object) -> None:
    if device is None or device in ("cpu", "llvm", "cpu:0"):
        return
    if isinstance(device, tuple) and len(device) == 2 and device[0] == _DLPACK_CPU:
        return
    if getattr(device, "type", None) == "cpu":  # torch.device("cpu")
        return
    raise TVMValueError(
        f"device: pytvmbridge arrays live on the CPU, got {device!r}; use nd.cpu(0)"
    )


_ALIASES = {"float": "float32", "double": "float64", "half": "float16"}  # TVM's spellings


def _dtype_name(dtype: DTypeLike) -> str:
    """The pytvmbridge name of a dtype given as a string, NumPy dtype or torch.dtype."""
    if isinstance(dtype, str):
        name = _ALIASES.get(dtype, dtype)
    elif type(dtype).__module__ == "torch" and str(dtype).startswith("torch."):
        name = str(dtype)[len("torch.") :]
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = repr(dtype)
    if name not in _SUPPORTED:
        raise TVMTypeError(f"unsupported dtype '{name}'; expected one of {', '.join(_SUPPORTED)}")
    return name


def _ml_dtypes() -> Any:
    try:
        import ml_dtypes
    except ImportError:
        raise TVMTypeError(
            "bfloat16 needs the ml_dtypes package to be seen from NumPy (NumPy has no bfloat16 of "
            "its own): pip install ml_dtypes, or view the memory as uint16 with a.view('uint16')"
        ) from None
    return ml_dtypes


def _np_dtype(name: str) -> np.dtype:
    return np.dtype(_ml_dtypes().bfloat16) if name == "bfloat16" else np.dtype(name)


def _from_numpy(arr: np.ndarray) -> NDArray:
    """A zero-copy NDArray view of a NumPy array (a copy only where DLPack cannot describe it)."""
    name = arr.dtype.name
    if name not in _SUPPORTED:
        raise TVMTypeError(f"unsupported dtype '{name}'; expected one of {', '.join(_SUPPORTED)}")
    if name == "bfloat16":  # ml_dtypes' bfloat16 is unknown to NumPy's DLPack export
        return _from_numpy(arr.view(np.uint16)).view("bfloat16")
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    try:
        return _core.from_dlpack(arr)
    except BufferError:  # e.g. strides that are not a multiple of the item size
        return _core.from_dlpack(np.ascontiguousarray(arr))


def _view_of(obj: object) -> NDArray:
    """obj itself, a zero-copy view of a DLPack producer, or a view of NumPy's conversion."""
    if isinstance(obj, NDArray):
        return obj
    if not isinstance(obj, np.ndarray) and hasattr(obj, "__dlpack__"):
        return _core.from_dlpack(obj)
    return _from_numpy(np.asarray(obj))


def _to_numpy(a: NDArray) -> np.ndarray:
    if a.dtype == "bfloat16":
        bfloat16 = _ml_dtypes().bfloat16
        return np.from_dlpack(a.view("uint16")).view(bfloat16)
    return np.from_dlpack(a)


def _array_protocol(a: NDArray, dtype: DTypeLike = None, copy: bool | None = None) -> np.ndarray:
    out = _to_numpy(a)
    if dtype is not None and np.dtype(dtype) != out.dtype:
        if copy is False:
            raise TVMValueError(f"cannot view {a.dtype} as {np.dtype(dtype)} without a copy")
        return out.astype(dtype)
    return out.copy() if copy else out


def _copyfrom(a: NDArray, source: object) -> NDArray:
    if a.read_only:
        raise TVMValueError("copyfrom: the destination array is read-only")
    src = _view_of(source)
    if src.shape != a.shape:
        raise TVMValueError(
            f"copyfrom: shape mismatch: the destination has shape {a.shape}, the source {src.shape}"
        )
    if src.dtype == a.dtype:
        a._copy_from(src)
    else:
        _to_numpy(a)[...] = _to_numpy(src)  # NumPy converts the dtype as it copies
    return a


def _repr(a: NDArray) -> str:
    head = f"<pytvmbridge.NDArray shape={a.shape} dtype={a.dtype} strides={a.strides}"
    if a.device[0] != _DLPACK_CPU:
        head += f" device={a.device}"
    if a.read_only:
        head += " read_only"
    try:
        values = np.array2string(_to_numpy(a), separator=", ", threshold=64, edgeitems=3)
    except TypeError:  # bfloat16 without ml_dtypes
        return head + ">"
    return f"{head}\n{values}>"


def empty(
    shape: int | tuple[int, ...], dtype: DTypeLike = "float32", device: Any = None
) -> NDArray:
    """A new uninitialised, compact array of 64-byte aligned memory.

    Example:
        >>> from pytvmbridge import nd
        >>> a = nd.empty((2, 3), "int32")
        >>> a.shape, a.dtype, a.strides
        ((2, 3), 'int32', (3, 1))
    """
    _check_device(device)
    return _core.empty(shape, _dtype_name(dtype))


def array(obj: object, dtype: DTypeLike = None, device: Any = None, ctx: Any = None) -> NDArray:
    """Copies anything array-like into a new compact array of pytvmbridge's own memory.

    ``obj`` may be a nested list, a scalar, a NumPy/PyTorch/JAX array, any DLPack producer or
    an NDArray. Without ``dtype`` the source's dtype is kept (NumPy's rules for lists: ``float64``
    and ``int64``); with it the values are converted as NumPy's ``astype`` does.

    Example:
        >>> from pytvmbridge import nd
        >>> a = nd.array([[1, 2], [3, 4]], dtype="float32")
        >>> a.numpy().tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    if isinstance(dtype, Device):  # TVM's positional form: nd.array(x, tvm.cpu(0))
        dtype, device = None, dtype
    _check_device(device)
    _check_device(ctx)  # TVM 0.6's name of the device
    target = None if dtype is None else _dtype_name(dtype)
    if target is not None and not isinstance(obj, NDArray) and not hasattr(obj, "__dlpack__"):
        # Lists and scalars: NumPy converts straight to the target dtype.
        return _from_numpy(np.asarray(obj, dtype=_np_dtype(target))).copy()
    src = _view_of(obj)
    if target is None or target == src.dtype:
        return src.copy()
    out = _core.empty(src.shape, target)
    _to_numpy(out)[...] = _to_numpy(src)  # NumPy converts the dtype as it copies
    return out


def from_dlpack(obj: object) -> NDArray:
    """A zero-copy view of any DLPack producer: an object with ``__dlpack__`` or a capsule.

    Writes through either side are seen by the other. Read-only producers (a NumPy array with
    ``writeable=False``) give a read-only NDArray.

    Example:
        >>> import torch
        >>> from pytvmbridge import nd
        >>> t = torch.arange(6.0).reshape(2, 3)
        >>> a = nd.from_dlpack(t[:, 1:])
        >>> a.shape, a.strides, a.data_ptr == t[:, 1:].data_ptr()
        ((2, 2), (3, 1), True)
    """
    return _core.from_dlpack(obj)


def _copyto(a: NDArray, target: Any) -> NDArray:
    """TVM's ``copyto``: into ``target`` when it is an NDArray of the same shape (returned), or a
    copy on the device ``target`` names (the CPU).

    Example:
        >>> import numpy as np
        >>> from pytvmbridge import nd
        >>> a = nd.array(np.arange(3, dtype="float32"))
        >>> a.copyto(nd.empty((3,))).numpy().tolist(), a.copyto(nd.cpu(0)).shape
        ([0.0, 1.0, 2.0], (3,))
    """
    if isinstance(target, NDArray):
        return _copyfrom(target, a)
    _check_device(target)
    return a.copy()


# TVM-era names: arr.copyto(dev_or_array), arr.ctx (TVM 0.6's name of arr.device).
NDArray.copyto = _copyto
NDArray.ctx = property(lambda a: Device(*a.device), doc="The array's device (TVM 0.6's name).")
