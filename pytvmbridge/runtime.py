"""The runtime under TVM's names: ``tvm.runtime.convert``, devices, arrays and modules.

``Module.export_library(path)``/``Module.save(path)`` write one file holding the compiled object
code and a manifest (the format is described in ``csrc/runtime/module_file.h``);
``load_module(path)`` links it into this process without lowering or compiling anything. A
Module also pickles (``pickle``, ``torch.save``) carrying the same bytes.

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

import contextlib
import errno
import json
import os
import tempfile
from typing import Any

from . import _core, nd
from . import nd as ndarray
from .build import Module
from .error import TVMNotImplementedError, TVMTypeError, TVMValueError
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
    "module_from_bytes",
    "module_to_bytes",
    "ndarray",
    "read_manifest",
    "tensor",
]


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


def module_to_bytes(module: Module, include_ir: bool = True, include_generic: bool = True) -> bytes:
    """The saved form of a built Module: its object code and manifest (what ``save`` writes).

    ``include_ir`` keeps the LLVM IR, so that ``get_source("ll")``/``("asm")`` work after loading.
    ``include_generic`` compiles the variant for strided arrays if it was not yet (a build defers
    it to the first strided call) and saves it too; without it, strided calls of the loaded module
    are a ValueError.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((4,), name="A")
        >>> B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
        >>> data = tvm.runtime.module_to_bytes(tvm.build(tvm.create_schedule(B.op), [A, B]))
        >>> data[:6]
        b'PTBMOD'
    """
    if not isinstance(module, Module):
        raise TVMTypeError(
            f"module must be a built pytvmbridge Module, got {type(module).__name__}"
        )
    from . import __version__  # defined once the package has imported its modules

    return _core.save_module_bytes(module, __version__, bool(include_ir), bool(include_generic))


def module_from_bytes(data: bytes, origin: str = "<bytes>") -> Module:
    """A callable Module from ``module_to_bytes``' bytes, linked without compiling.

    A truncated, corrupted or foreign file, or code for CPU features this host lacks, is a
    ValueError naming ``origin`` and what is wrong.

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> A = tvm.placeholder((4,), name="A")
        >>> B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
        >>> f = tvm.build(tvm.create_schedule(B.op), [A, B], name="inc")
        >>> g = tvm.runtime.module_from_bytes(tvm.runtime.module_to_bytes(f))
        >>> b = np.empty(4, "float32"); g(np.arange(4, dtype="float32"), b); b.tolist()
        [1.0, 2.0, 3.0, 4.0]
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TVMTypeError(f"data must be bytes, got {type(data).__name__}")
    return _core.load_module_bytes(bytes(data), origin)


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a saved module as a dict (versions, target, CPU features, signature...).

    Example:
        >>> import os, tempfile, pytvmbridge as tvm
        >>> A = tvm.placeholder((4,), name="A")
        >>> B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
        >>> path = os.path.join(tempfile.mkdtemp(), "inc.ptb")
        >>> tvm.build(tvm.create_schedule(B.op), [A, B], name="inc").export_library(path)
        >>> m = tvm.runtime.read_manifest(path)
        >>> m["name"], m["format_version"], [a["shape"] for a in m["args"]]
        ('inc', 1, [[4], [4]])
    """
    data = read_module_file(path, "read_manifest")
    return json.loads(_core.read_module_manifest(data, os.fspath(path)))


def load_module(path: str | os.PathLike[str], fmt: str = "") -> Module:
    """Load a module saved by ``Module.export_library``/``save`` (TVM's ``load_module``).

    The object code goes straight into the JIT: nothing is lowered or compiled. A file from
    another format version, a truncated or corrupted one, or code for CPU features this host
    lacks is a ValueError saying so.

    Example:
        >>> import os, tempfile, numpy as np, pytvmbridge as tvm
        >>> A = tvm.placeholder((3,), name="A")
        >>> B = tvm.compute((3,), lambda i: A[i] * 2.0, name="B")
        >>> path = os.path.join(tempfile.mkdtemp(), "double.so")
        >>> tvm.build(tvm.create_schedule(B.op), [A, B], name="double").export_library(path)
        >>> f = tvm.runtime.load_module(path)
        >>> b = np.empty(3, "float32"); f(np.arange(3, dtype="float32"), b); b.tolist()
        [0.0, 2.0, 4.0]
    """
    del fmt  # one format: the file says what it is
    return _core.load_module_bytes(read_module_file(path, "load_module"), os.fspath(path))


#: The first bytes of every module file (``csrc/runtime/module_file.cc``).
MODULE_MAGIC = b"PTBMOD\r\n"


def read_module_file(path: str | os.PathLike[str], what: str) -> bytes:
    """The bytes of the module file at ``path``, after its first bytes say it is one: another
    file (a 3 GB archive given by mistake) is refused before it is read into memory. Errors
    name ``what`` (the function) and the path.

    Example:
        >>> import tempfile
        >>> from pytvmbridge.runtime import read_module_file
        >>> with tempfile.NamedTemporaryFile(suffix=".so") as f:
        ...     try:
        ...         read_module_file(f.name, "load_module")
        ...     except ValueError as err:
        ...         print(str(err).split(": ", 1)[1][:31])
        not a pytvmbridge module file (
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TVMTypeError(f"{what}: path must be a str or os.PathLike, got {type(path).__name__}")
    path = os.fspath(path)
    with open(path, "rb") as f:
        head = f.read(len(MODULE_MAGIC))
        if head != MODULE_MAGIC:
            raise TVMValueError(
                f"{what}: not a pytvmbridge module file ({path!r} does not begin as one; "
                "Module.export_library or save writes them)"
            )
        return head + f.read()


def file_mode() -> int:
    """The permissions of a new file under this process's umask (0o644 under umask 022): what
    files written through a temporary file get, as ``open(path, "w")`` would give them
    (``mkstemp`` makes them 0o600, which other users cannot read).

    Example:
        >>> from pytvmbridge.runtime import file_mode
        >>> file_mode() & 0o600
        384
    """
    mask = None
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status") as f:  # Linux: read without changing the umask
            for line in f:
                if line.startswith("Umask:"):
                    mask = int(line.split()[1], 8)
    if mask is None:  # elsewhere: set and restore (not thread-safe, so only then)
        mask = os.umask(0o022)
        os.umask(mask)
    return 0o666 & ~mask


def _write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename, so that a reader (or a
    crash) never sees half a file. Errors name ``path``, not the temporary file."""
    if not path:
        raise TVMValueError("the file name is empty")
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file name", path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, f"no folder {directory!r} to write into", path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    except OSError as err:  # a read-only folder, a full disk...
        raise type(err)(err.errno, err.strerror, path) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except OSError as err:  # a full disk while writing: named by the file meant
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise type(err)(err.errno, err.strerror, path) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _export_library(
    self: Module,
    file_name: str | os.PathLike[str],
    fcompile: Any = None,
    *,
    include_ir: bool = True,
    **kwargs: Any,
) -> None:
    """Save the compiled code and its manifest to one file, loadable by ``load_module``.

    The file is pytvmbridge's module format (not a C shared library), whatever its extension;
    ``fcompile`` (TVM's custom linker) is not supported.

    Example:
        >>> import os, tempfile, pytvmbridge as tvm
        >>> A = tvm.placeholder((4,), name="A")
        >>> B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
        >>> path = os.path.join(tempfile.mkdtemp(), "inc.so")
        >>> tvm.build(tvm.create_schedule(B.op), [A, B]).export_library(path)
        >>> os.path.getsize(path) > 0
        True
    """
    if fcompile is not None or kwargs:
        raise TVMNotImplementedError(
            "export_library: linking a C-loadable shared library (fcompile, options) is not "
            "supported; the file pytvmbridge writes is loaded with runtime.load_module"
        )
    _write_atomically(os.fspath(file_name), module_to_bytes(self, include_ir))


def _save(self: Module, file_name: str | os.PathLike[str], fmt: str = "") -> None:
    """Save the compiled code and its manifest (the same file as ``export_library``)."""
    del fmt
    _write_atomically(os.fspath(file_name), module_to_bytes(self))


def _reduce(self: Module) -> tuple[Any, tuple[bytes, str]]:
    """Pickling carries the compiled code itself, not a path."""
    return module_from_bytes, (module_to_bytes(self), f"<pickled module {self.entry_name!r}>")


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

Module.export_library = _export_library
Module.save = _save
Module.__reduce__ = _reduce
if not hasattr(NDArray, "to_dlpack"):
    NDArray.to_dlpack = _to_dlpack
