"""The on-disk compile cache: a build that some process already made is loaded, not compiled.

``@kernel``, ``tc.define`` and the graph compiler (``torch.compile`` partitions,
``pytvmbridge.torch.compile``) build through :func:`build`. An entry is the saved module file of
``runtime.module_to_bytes`` (object code + manifest), named by the SHA-256 of everything that
decides the generated code, and of the versions of pytvmbridge, LLVM, the file format and the
compiler's own sources (``_core.source_hash``, so that a rebuilt compiler never reads another
build's entries). File timestamps never enter the key. What is hashed depends on how the
schedule was made:

- automatic schedules (:func:`build_auto`, or ``build(..., recipe=auto_recipe(config))``: what
  ``@kernel``, ``tc.define`` and the graph compiler use by default): the computation *before*
  scheduling (every operation, its axes and
  body, with the identity of its variables: ``_core.dag_fingerprint``), the argument signature,
  the canonical target string (CPU and features), the name, and the scheduler's configuration.
  Nothing is scheduled or lowered to find and load an entry (:func:`build_auto`), so a hit costs
  a hash and a load: about a millisecond and a half for a matmul.
- any other schedule: the lowered IR (``_core.build_fingerprint``), which describes whatever the
  schedule did.

- ``PYTVMBRIDGE_CACHE_DIR`` chooses the directory (default ``$XDG_CACHE_HOME/pytvmbridge`` or
  ``~/.cache/pytvmbridge``); :func:`set_dir` does the same from Python.
- ``PYTVMBRIDGE_CACHE=0`` (or :func:`disable`) switches it off.
- ``PYTVMBRIDGE_CACHE_MAX_BYTES`` caps its size (default 1 GiB): after a write, the least recently
  used entries (a hit refreshes an entry's modification time) are removed until it fits.
- Writes go to a temporary file renamed into place, so concurrent processes never see half an
  entry; a directory that cannot be written gives one ``CacheWarning`` and the build goes on.

Example:
    >>> import tempfile, pytvmbridge as tvm
    >>> from pytvmbridge import cache
    >>> cache.set_dir(tempfile.mkdtemp())
    >>> A = tvm.placeholder((4,), name="A")
    >>> B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
    >>> s = tvm.create_schedule(B.op)
    >>> before = cache.stats()["hits"]
    >>> f = cache.build(s, [A, B], name="inc")  # compiled and stored
    >>> g = cache.build(s, [A, B], name="inc")  # loaded from the file
    >>> cache.stats()["hits"] - before
    1
    >>> cache.set_dir(None)  # back to PYTVMBRIDGE_CACHE_DIR or the default
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

from . import _core
from .error import TVMTypeError, TVMValueError

__all__ = [
    "CacheWarning",
    "auto_recipe",
    "build",
    "build_auto",
    "cache_dir",
    "clear",
    "disable",
    "enable",
    "enabled",
    "key_of",
    "load",
    "set_dir",
    "stats",
    "store",
]

#: Bumped when the key's recipe changes, so that old entries are never misread.
KEY_VERSION = 2
DEFAULT_MAX_BYTES = 1 << 30
SUFFIX = ".ptb"


class CacheWarning(RuntimeWarning):
    """The compile cache could not be used (a read-only or unusable directory); building goes on
    without it."""


_lock = threading.Lock()
_state: dict[str, Any] = {"enabled": None, "dir": None, "warned": set(), "sizes": {}}
_stats = {"hits": 0, "misses": 0, "writes": 0, "errors": 0}


def enabled() -> bool:
    """Whether builds use the cache: :func:`enable`/:func:`disable` if called, else the
    environment (``PYTVMBRIDGE_CACHE=0`` switches it off).

    Example:
        >>> from pytvmbridge import cache
        >>> cache.disable(); cache.enabled()
        False
        >>> cache.enable(None)  # back to the environment's choice
    """
    if _state["enabled"] is not None:
        return bool(_state["enabled"])
    value = os.environ.get("PYTVMBRIDGE_CACHE", "1").strip().lower()
    if value in ("0", "false", "off", "no", "disabled", "disable"):
        return False
    if value not in ("", "1", "true", "on", "yes", "enabled", "enable"):
        _warn_setting("PYTVMBRIDGE_CACHE", value, "the cache stays on (0/off/false/no: off)")
    return True


def _warn_setting(name: str, value: str, meaning: str) -> None:
    """One warning per environment setting whose value cannot be read."""
    if (name, value) in _state["warned"]:
        return
    _state["warned"].add((name, value))
    warnings.warn(f"{name}={value!r} is not understood: {meaning}", CacheWarning, stacklevel=4)


def enable(flag: bool | None = True) -> None:
    """Switch the cache on (``True``), off (``False``), or back to the environment (``None``)."""
    _state["enabled"] = flag


def disable() -> None:
    """Switch the cache off for this process (the same as ``PYTVMBRIDGE_CACHE=0``)."""
    enable(False)


def set_dir(path: str | os.PathLike[str] | None) -> None:
    """Use ``path`` as the cache directory (``None``: ``PYTVMBRIDGE_CACHE_DIR`` or the default;
    ``~`` is the home directory)."""
    if path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise TVMTypeError(f"set_dir: path must be a str, os.PathLike or None, got {path!r}")
        path = os.fspath(path)
        if not isinstance(path, str) or not path.strip():
            raise TVMValueError(f"set_dir: path must name a directory, got {path!r}")
        path = os.path.expanduser(path)
    _state["dir"] = path


def cache_dir() -> str:
    """The directory entries live in.

    Example:
        >>> from pytvmbridge import cache
        >>> cache.set_dir("/tmp/ptb-cache-example"); cache.cache_dir()
        '/tmp/ptb-cache-example'
        >>> cache.set_dir(None)
    """
    if _state["dir"] is not None:
        return str(_state["dir"])
    env = os.environ.get("PYTVMBRIDGE_CACHE_DIR", "").strip()
    if env:
        return os.path.expanduser(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pytvmbridge")


def _max_bytes() -> int:
    value = os.environ.get("PYTVMBRIDGE_CACHE_MAX_BYTES", "").strip()
    if not value:
        return DEFAULT_MAX_BYTES
    try:
        return int(value)
    except ValueError:
        _warn_setting(
            "PYTVMBRIDGE_CACHE_MAX_BYTES",
            value,
            f"an integer number of bytes; {DEFAULT_MAX_BYTES} used",
        )
        return DEFAULT_MAX_BYTES


def stats() -> dict[str, int]:
    """This process's counts: ``hits``, ``misses``, ``writes`` and ``errors`` (unusable
    directories and damaged entries)."""
    return dict(_stats)


def key_of(text: str | bytes) -> str:
    """The entry name for ``text`` (a build's fingerprint, or any canonical description of what
    is compiled, such as a graph partition's): its SHA-256 together with the versions.

    Example:
        >>> from pytvmbridge import cache
        >>> len(cache.key_of("some canonical IR")), cache.key_of("a") == cache.key_of("a")
        (64, True)
    """
    from . import __version__

    h = hashlib.sha256()
    versions = f"pytvmbridge-cache {KEY_VERSION} {__version__} llvm {_core.llvm_version()} "
    h.update(f"{versions} file {_core.module_file_version} sources {_core.source_hash}\n".encode())
    # The compiler's switches change the code built for the same description: an experiment
    # with one set never reuses (or leaves behind) the code of another.
    switches = [f"{k}={os.environ[k]}" for k in CODEGEN_SWITCHES if k in os.environ]
    if switches:
        h.update(("switches " + " ".join(switches) + "\n").encode())
    h.update(text.encode() if isinstance(text, str) else bytes(text))
    return h.hexdigest()


#: Environment variables read by the compiler that change the code it makes (see
#: docs/architecture.md): part of every key when set.
CODEGEN_SWITCHES = (
    "PYTVMBRIDGE_LLVM_PIPELINE",
    "PYTVMBRIDGE_NO_PARTITION",
    "PYTVMBRIDGE_NO_PARTITION_RANGES",
    "PYTVMBRIDGE_NO_PREFETCH",
)


def _entry_path(key: str) -> str:
    return os.path.join(cache_dir(), f"v{KEY_VERSION}", key[:2], key + SUFFIX)


def _warn_once(what: str, err: BaseException) -> None:
    _stats["errors"] += 1
    directory = cache_dir()
    if directory in _state["warned"]:
        return
    _state["warned"].add(directory)
    warnings.warn(
        f"pytvmbridge compile cache: cannot {what} in {directory!r} ({err}); building without "
        "the cache (set PYTVMBRIDGE_CACHE_DIR to a writable directory, or PYTVMBRIDGE_CACHE=0)",
        CacheWarning,
        stacklevel=4,
    )


def load(key: str, build_args: tuple[Any, list[Any], str, str] | None = None) -> Any:
    """The cached Module for ``key``, or ``None`` (also when the cache is off, or the entry is
    damaged: it is then removed). ``build_args`` (schedule, args, target, name) let the module
    compile its variant for strided arrays on demand when the entry lacks it; a schedule of
    ``None`` means the automatic one, made then."""
    from .runtime import module_from_bytes

    if not enabled():
        return None
    path = _entry_path(key)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        _stats["misses"] += 1
        return None
    try:
        if build_args is None:
            module = module_from_bytes(data, path)
        elif build_args[0] is None:
            module = _core.load_cached_auto_module_bytes(data, path, *build_args[1:])
        else:
            module = _core.load_cached_module_bytes(data, path, *build_args)
        if build_args is not None:
            _check_signature(module, build_args[1], build_args[3], path)
    except ValueError:
        # Damaged, or made for another machine's CPU: rebuild and overwrite.
        _stats["errors"] += 1
        _stats["misses"] += 1
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # least recently used pruning goes by modification time
    _stats["hits"] += 1
    return module


def _check_signature(module: Any, args: list[Any], name: str, path: str) -> None:
    """A ValueError (the entry is then rebuilt) unless the module found under a key is the
    build asked for: its name and its arguments' dtypes and ranks. A file put under another
    key (copied, or a colliding description) would otherwise run with the wrong arguments."""
    dtypes = [getattr(a, "dtype", None) for a in args]
    ranks = [len(a.shape) if hasattr(a, "shape") else None for a in args]
    if (
        module.name != name
        or list(module.arg_dtypes) != dtypes
        or [len(s) for s in module.arg_shapes] != ranks
    ):
        raise TVMValueError(f"{path}: the entry holds another build ({module!r})")


def store(key: str, module: Any) -> None:
    """Save ``module`` as the entry for ``key`` (atomically); a directory that cannot be written
    gives one CacheWarning, never an error."""
    from .runtime import file_mode, module_to_bytes

    if not enabled():
        return
    path = _entry_path(key)
    try:
        # As compiled: the strided variant only if a call needed it already.
        data = module_to_bytes(module, include_generic=False)
    except NotImplementedError:
        return  # a signature the file format cannot express: such a build is not cached
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path))
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, file_mode())  # readable as any new file (a cache shared by users)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as err:
        _warn_once("write", err)
        return
    _stats["writes"] += 1
    # The whole directory is walked once per process (and again only when the running total
    # passes the limit), not on every write: a cache of 40000 entries took 0.4 s a walk.
    directory = cache_dir()
    total = _state["sizes"].get(directory)
    if total is None or total + len(data) > _max_bytes():
        _state["sizes"][directory] = _prune(_max_bytes())
    else:
        _state["sizes"][directory] = total + len(data)


#: A temporary file older than this is left from a writer that died mid-write.
STALE_TEMPORARY_S = 3600


def _entries() -> Iterator[tuple[float, int, str]]:
    """(modification time, size, path) of every entry; temporary files that writers killed
    mid-write left behind are removed on the way."""
    root = os.path.join(cache_dir(), f"v{KEY_VERSION}")
    now = time.time()
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            if name.startswith(".tmp-"):
                with contextlib.suppress(OSError):
                    if now - os.stat(path).st_mtime > STALE_TEMPORARY_S:
                        os.unlink(path)
                continue
            if not name.endswith(SUFFIX):
                continue
            with contextlib.suppress(OSError):
                st = os.stat(path)
                yield st.st_mtime, st.st_size, path


def _prune(max_bytes: int) -> int:
    """Remove the least recently used entries until the cache holds at most ``max_bytes``;
    returns the bytes that remain."""
    entries = sorted(_entries())
    total = sum(size for _, size, _ in entries)
    for _, size, path in entries:
        if total <= max_bytes:
            break
        with contextlib.suppress(OSError):  # another process may have removed it first
            os.unlink(path)
        total -= size
    return total


def clear() -> None:
    """Remove every entry of the current cache directory."""
    _state["sizes"][cache_dir()] = _prune(-1)


def auto_recipe(config: Any = None) -> str:
    """The ``recipe`` of :func:`build` for a schedule made by ``auto_schedule(create_schedule(
    outputs), target, config)``: the scheduler is deterministic in the computation, the target
    and ``config``, so these (with the compiler's version) identify the code it leads to.

    Example:
        >>> from pytvmbridge import cache
        >>> cache.auto_recipe(), cache.auto_recipe({"C": {"tile_x": 8}})
        ('auto_schedule null', 'auto_schedule {"C": {"tile_x": 8}}')
    """
    return "auto_schedule " + json.dumps(config, sort_keys=True)


def _fingerprint(s: Any, args: list[Any], target: str, name: str, recipe: str | None) -> str:
    if recipe is not None:
        dag = _core.dag_fingerprint(args, target, name)
        if dag:  # empty: a computation the text cannot describe (extern, scan): lower it
            return f"{dag}\nschedule {recipe}\n"
    return _core.build_fingerprint(s, args, target, name)


def build(
    s: Any,
    args: Sequence[Any],
    target: Any = "llvm",
    name: str = "default_function",
    recipe: str | None = None,
) -> Any:
    """``pytvmbridge.build`` through the cache: the Module is loaded when an identical build was
    stored (by any process), else built and stored.

    ``recipe`` says how ``s`` was made from ``create_schedule`` of the outputs, when that is all
    that decides it (:func:`auto_recipe`): the key is then the computation and the recipe, found
    without lowering. Without it the key is the lowered IR, whatever the schedule did.

    Example:
        >>> import numpy as np, tempfile, pytvmbridge as tvm
        >>> from pytvmbridge import cache
        >>> cache.set_dir(tempfile.mkdtemp())
        >>> A = tvm.placeholder((3,), name="A")
        >>> B = tvm.compute((3,), lambda i: A[i] * 2.0, name="B")
        >>> f = cache.build(tvm.create_schedule(B.op), [A, B], name="double")
        >>> b = np.empty(3, "float32"); f(np.arange(3, dtype="float32"), b); b.tolist()
        [0.0, 2.0, 4.0]
        >>> s = tvm.auto_schedule(B)  # the same computation, scheduled automatically
        >>> g = cache.build(s, [A, B], name="double", recipe=cache.auto_recipe())
        >>> g(np.arange(3, dtype="float32"), b); b.tolist()
        [0.0, 2.0, 4.0]
        >>> cache.set_dir(None)
    """
    from .build import build as build_uncached
    from .target import Target

    if not enabled():
        return build_uncached(s, args, target=target, name=name)
    target_text = str(target) if isinstance(target, Target) else target
    try:
        fingerprint = _fingerprint(s, list(args), target_text, name, recipe)
    except Exception:
        # Whatever is wrong with the build, build() reports it in its own words.
        return build_uncached(s, args, target=target, name=name)
    key = key_of(fingerprint)
    module = load(key, (s, list(args), target_text, name))
    if module is not None:
        return module
    module = build_uncached(s, args, target=target, name=name)
    store(key, module)
    return module


def build_auto(
    args: Sequence[Any], target: Any = "llvm", name: str = "default_function", config: Any = None
) -> Any:
    """``build(auto_schedule(create_schedule(outputs), target, config), args, target, name)``
    through the cache, where ``outputs`` are the computed tensors among ``args``: a hit is found
    from the computation alone and loaded without scheduling or lowering anything.

    Example:
        >>> import numpy as np, tempfile, pytvmbridge as tvm
        >>> from pytvmbridge import cache
        >>> cache.set_dir(tempfile.mkdtemp())
        >>> A = tvm.placeholder((4,), name="A")
        >>> B = tvm.compute((4,), lambda i: A[i] - 1.0, name="B")
        >>> f = cache.build_auto([A, B], name="dec")  # scheduled, compiled and stored
        >>> g = cache.build_auto([A, B], name="dec")  # loaded: nothing scheduled
        >>> b = np.empty(4, "float32"); g(np.ones(4, "float32"), b); b.tolist()
        [0.0, 0.0, 0.0, 0.0]
        >>> cache.set_dir(None)
    """
    from .autoschedule import auto_schedule
    from .build import build as build_uncached
    from .schedule import create_schedule
    from .target import Target
    from .te import PlaceholderOp

    args = list(args)

    def schedule() -> Any:
        outputs = [t for t in args if not isinstance(t.op, PlaceholderOp)]
        return auto_schedule(create_schedule([t.op for t in outputs]), target=target_text,
                             config=config)  # fmt: skip

    target_text = str(target) if isinstance(target, Target) else target
    if not enabled():
        return build_uncached(schedule(), args, target=target, name=name)
    if config is not None:  # the C++ loader remakes only default schedules: schedule now
        return build(schedule(), args, target=target, name=name, recipe=auto_recipe(config))
    try:
        dag = _core.dag_fingerprint(args, target_text, name)
    except Exception:
        dag = ""
    if not dag:  # a computation the text cannot describe (extern, scan...): key on lowering
        return build(schedule(), args, target=target, name=name)
    key = key_of(f"{dag}\nschedule {auto_recipe(None)}\n")
    module = load(key, (None, args, target_text, name))
    if module is not None:
        return module
    module = build_uncached(schedule(), args, target=target, name=name)
    store(key, module)
    return module
