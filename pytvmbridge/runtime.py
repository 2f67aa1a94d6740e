"""The runtime under TVM's names: ``tvm.runtime.convert``, devices, arrays and modules.

``load_module`` and ``Module.save``/``export_library`` need compiled-code export, which
pytvmbridge does not have yet: they raise ``NotImplementedError`` saying so.

Example:
    >>> import numpy as np
    >>> import pytvmbridge as tvm
    >>> tvm.runtime.convert(137)
    137
    >>> a = tvm.runtime.ndarray.array(np.arange(3, dtype="float32"), tvm.runtime.cpu(0))
    >>> a.numpy().tolist()
    [0.0, 1.0, 2.0]
"""

from __future__ import annotations

from typing import Any

from . import nd
from . import nd as ndarray
from .build import Module
from .error import TVMNotImplementedError, TVMValueError
from .nd import NDArray, cpu, empty, from_dlpack
from .te import convert

__all__ = [
    "Module",
    "NDArray",
    "convert",
    "cpu",
    "device",
    "empty",
    "from_dlpack",
    "load_module",
    "ndarray",
    "tensor",
]

#: The message of every export entry point until compiled code can be saved.
EXPORT_MISSING = (
    "saving and loading compiled modules (Module.export_library, Module.save, "
    "runtime.load_module) is not implemented yet: it is the export feature (API.md section 9, "
    "issue 13); rebuild the kernel with tvm.build in each process meanwhile"
)


def device(dev_type: Any, dev_id: int = 0) -> nd.Device:
    """The device named ``dev_type`` (``"cpu"``, ``"llvm"`` or the DLPack code 1), TVM's
    ``tvm.device``; pytvmbridge arrays live on the CPU, so any other name is a ValueError.

    Example:
        >>> import pytvmbridge as tvm
        >>> tvm.device("llvm", 0), tvm.device("cpu")
        (cpu(0), cpu(0))
    """
    name = dev_type.kind.name if hasattr(dev_type, "kind") else dev_type
    if isinstance(name, str):
        name = name.split()[0] if name.split() else name
    if name in ("cpu", "llvm", "c", "stackvm", 1):
        return cpu(dev_id)
    raise TVMValueError(
        f"device: pytvmbridge compiles for the CPU only; {dev_type!r} is not available "
        "(use tvm.cpu(0) or tvm.device('llvm'))"
    )


def tensor(data: Any, device: Any = None) -> NDArray:
    """A new array holding a copy of ``data`` (TVM's ``tvm.runtime.tensor``, ``nd.array``).

    Example:
        >>> import pytvmbridge as tvm
        >>> tvm.runtime.tensor([1, 2]).numpy().tolist()
        [1, 2]
    """
    return nd.array(data, device=device)


def load_module(path: str, fmt: str = "") -> Module:
    """Load a module saved by ``export_library``: not implemented yet (issue 13).

    Example:
        >>> import pytvmbridge as tvm
        >>> try:
        ...     tvm.runtime.load_module("f.so")
        ... except NotImplementedError as err:
        ...     print(str(err)[:40])
        saving and loading compiled modules (Mod
    """
    del path, fmt
    raise TVMNotImplementedError(EXPORT_MISSING)


def _export_library(self: Module, file_name: str, *args: Any, **kwargs: Any) -> None:
    """Save the compiled code as a shared library: not implemented yet (issue 13)."""
    raise TVMNotImplementedError(EXPORT_MISSING)


def _save(self: Module, file_name: str, fmt: str = "") -> None:
    """Save the compiled code: not implemented yet (issue 13)."""
    raise TVMNotImplementedError(EXPORT_MISSING)


def _to_dlpack(self: NDArray) -> Any:
    """A DLPack capsule viewing this array (TVM's ``NDArray.to_dlpack``); any DLPack consumer
    (``torch.utils.dlpack.from_dlpack``...) takes it without copying."""
    return self.__dlpack__()


def _get_function(self: Module, name: str, query_imports: bool = False) -> Module:
    """The module's function ``name`` (TVM's ``mod.get_function``/``mod[name]``): a built
    module has one function, its entry, which is the module itself when called."""
    del query_imports
    if name != self.entry_name:
        raise AttributeError(
            f"this module has one function, {self.entry_name!r}; {name!r} is not defined"
        )
    return self


Module.get_function = _get_function
Module.__getitem__ = _get_function
Module.imported_modules = property(lambda self: [])
Module.type_key = property(lambda self: "llvm")

# Installed only where the export issue has not defined them.
if not hasattr(Module, "export_library"):
    Module.export_library = _export_library
if not hasattr(Module, "save"):
    Module.save = _save
if not hasattr(NDArray, "to_dlpack"):
    NDArray.to_dlpack = _to_dlpack
