"""lower() and build(): from a schedule to readable loop IR, and to a callable Module.

Example:
    >>> import numpy as np
    >>> import pytvmbridge as tvm
    >>> n = tvm.var("n")
    >>> A = tvm.placeholder((n,), name="A")
    >>> B = tvm.compute((n,), lambda i: A[i] * 2.0, name="B")
    >>> f = tvm.build(tvm.create_schedule(B.op), [A, B], name="double")
    >>> a = np.arange(3, dtype="float32"); b = np.empty(3, dtype="float32")
    >>> f(a, b); b.tolist()
    [0.0, 2.0, 4.0]
"""

from __future__ import annotations

import numbers
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from . import _core, progress
from .autodiff import bridge_grad as _autodiff_bridge
from .error import TVMTypeError, TVMValueError

Module = _core.Module
LoweredFunc = _core.LoweredFunc


def lower(
    s: _core.Schedule, args: Sequence[Any], name: str = "main", simple_mode: bool = True
) -> LoweredFunc:
    """Lower a schedule to its loop nest; ``str()`` of the result is readable IR.

    ``simple_mode`` is accepted for TVM compatibility; the text is always the simple form.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((8,), name="A")
        >>> B = tvm.compute((8,), lambda i: A[i] + 1.0, name="B")
        >>> print(tvm.lower(tvm.create_schedule(B.op), [A, B]))  # doctest: +ELLIPSIS
        def main(A: float32[8], B: float32[8]):
        for (i, 0, 8) {
        ...
    """
    _check_schedule("lower", s, name)
    return _core.lower(s, list(args), name)


def _check_schedule(what: str, s: Any, name: Any) -> None:
    """TVMTypeErrors for arguments pybind11 would refuse with its own plain TypeError."""
    if not isinstance(s, _core.Schedule):
        raise TVMTypeError(
            f"{what}() takes a schedule (te.create_schedule(...)) first, got {type(s).__name__}"
        )
    if not isinstance(name, str):
        raise TVMTypeError(f"{what}(): name must be a string, got {type(name).__name__}")


def build(
    s: _core.Schedule,
    args: Sequence[Any],
    target: Any = "llvm",
    target_host: Any = None,
    name: str = "default_function",
) -> Module:
    """Compile a schedule to native code for this CPU and return a callable Module.

    ``target`` is ``"llvm"`` (this machine, all its vector features) or ``"llvm -mcpu=NAME"``,
    as a string or a ``tvm.target.Target``;
    ``target_host="llvm"`` alone is accepted as in TVM code. The Module takes one array per entry
    of ``args`` (anything with ``__dlpack__``), binds symbolic sizes from them and writes the
    outputs in place.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((4,), name="A")
        >>> B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
        >>> tvm.build(tvm.create_schedule(B.op), [A, B], target_host="llvm").entry_name
        'default_function'
    """
    from .target import Target

    target, target_host = (str(t) if isinstance(t, Target) else t for t in (target, target_host))
    if target is None:
        target = target_host or "llvm"
    if target_host is not None and not str(target_host).startswith("llvm"):
        raise TVMValueError(f"target_host must be an llvm target, got {target_host!r}")
    if not isinstance(target, str):
        raise TVMTypeError(f"target must be a string such as 'llvm', got {type(target).__name__}")
    _check_schedule("build", s, name)
    with progress.busy(f"building {name}"):  # a bar only if it takes over a second
        module = _core.build(s, list(args), target, name)
    return _autodiff_bridge.remember(module, args)  # its to_pytorch/to_jax are differentiable


@dataclass
class ProfileResult:
    """Timings of a Module, as TVM's time_evaluator returns them: seconds per call. Unpacks as
    TVM's ``(mean, results)``.

    Example:
        >>> r = ProfileResult(2.0, [1.0, 3.0], 2.0)
        >>> mean, results = r
        >>> (mean, r.min, r.max, r.std)
        (2.0, 1.0, 3.0, 1.0)
    """

    mean: float
    results: list[float]
    median: float

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.results)

    def __iter__(self) -> Any:
        return iter((self.mean, self.results))


def _count(value: Any, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TVMTypeError(f"time_evaluator: {name} must be an int, got {value!r}")
    if value < least:
        raise TVMValueError(f"time_evaluator: {name} must be >= {least}, got {value}")
    return int(value)


def _milliseconds(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TVMTypeError(
            f"time_evaluator: {name} must be a number of milliseconds, got {value!r}"
        )
    if not 0 <= value < 1e9:  # NaN fails this too
        raise TVMValueError(f"time_evaluator: {name} must be in [0, 1e9) ms, got {value}")
    return float(value)


def time_evaluator(
    self: Module,
    func_name: str | None = None,
    dev: Any = None,
    number: int = 10,
    repeat: int = 1,
    min_repeat_ms: float = 0,
    limit_zero_time_iterations: int = 100,
    cooldown_interval_ms: float = 0,
    repeats_to_cooldown: int = 1,
    cache_flush_bytes: int = 0,
    f_preproc: str = "",
) -> Callable[..., ProfileResult]:
    """Return a function that times this Module: ``repeat`` rounds of ``number`` calls each
    (TVM's signature). With ``min_repeat_ms``, ``number`` grows until a round lasts that long
    (as TVM's does); ``cooldown_interval_ms`` sleeps between every ``repeats_to_cooldown``
    rounds. ``limit_zero_time_iterations``, ``cache_flush_bytes`` and ``f_preproc`` are
    accepted and have no effect. ``dev`` is ``None`` or the CPU (``tvm.cpu(0)``).

    ``results`` holds the mean time of one call in each round (seconds), ``mean`` their mean.

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> A = tvm.placeholder((4,), name="A")
        >>> B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
        >>> f = tvm.build(tvm.create_schedule(B.op), [A, B])
        >>> a, b = np.zeros(4, "float32"), np.zeros(4, "float32")
        >>> f.time_evaluator(f.entry_name, number=5, repeat=2)(a, b).mean > 0
        True
    """
    del limit_zero_time_iterations, cache_flush_bytes, f_preproc
    if func_name not in (None, self.entry_name):
        raise TVMValueError(f"this module has one function, {self.entry_name!r}, not {func_name!r}")
    if dev is not None and getattr(dev, "device_type", None) != 1:
        raise TVMValueError(
            f"time_evaluator: dev must be the CPU (tvm.cpu(0)) or None, got {dev!r}"
        )
    number = _count(number, "number", 1)
    repeat = _count(repeat, "repeat", 1)
    every = _count(repeats_to_cooldown, "repeats_to_cooldown", 1)
    least_s = _milliseconds(min_repeat_ms, "min_repeat_ms") / 1e3
    cooldown_s = _milliseconds(cooldown_interval_ms, "cooldown_interval_ms") / 1e3

    def evaluate(*arrays: Any) -> ProfileResult:
        self(*arrays)  # warm up, and fail early on bad arguments
        results = []
        calls = number
        for k in range(repeat):
            if k and cooldown_s and k % every == 0:
                time.sleep(cooldown_s)
            while True:
                start = time.perf_counter()
                for _ in range(calls):
                    self(*arrays)
                elapsed = time.perf_counter() - start
                if elapsed >= least_s or calls >= 1 << 30:
                    break
                # TVM's rule: enough calls for the round to last min_repeat_ms, at least twice
                calls = max(calls * 2, int(calls * least_s / max(elapsed, 1e-9) * 1.1) + 1)
            results.append(elapsed / calls)
        return ProfileResult(statistics.fmean(results), results, statistics.median(results))

    return evaluate


Module.time_evaluator = time_evaluator


def _module_repr(self: Module) -> str:
    args = ", ".join(
        f"{name}: {dtype}[{', '.join(str(d) for d in shape)}]" + (" output" if out else "")
        for name, dtype, shape, out in zip(
            self.arg_names, self.arg_dtypes, self.arg_shapes, self.is_output, strict=True
        )
    )
    return f"<pytvmbridge.Module '{self.name}' ({args})>"


Module.__repr__ = _module_repr

__all__ = ["LoweredFunc", "Module", "ProfileResult", "build", "lower"]
