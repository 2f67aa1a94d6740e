"""Tuning logs (JSON lines, one record per measured candidate) and replaying the best.

A record holds the workload (structural hash and description), the target with this machine's
CPU name and thread count, the configuration, its loop features, the measured costs (seconds
per call), the error code (0: valid), a timestamp and the versions of Python, pytvmbridge and
NumPy. ``apply_history_best(log)`` makes the best valid record of each workload the schedule
used while it is active (by ``@kernel``, TC defs and templates); a workload with no record is
scheduled analytically, with one warning. Records measured on another CPU are used only with
``other_cpus=True``.

Example:
    >>> import json, os, tempfile
    >>> from pytvmbridge.autotvm import record
    >>> path = os.path.join(tempfile.mkdtemp(), "log.json")
    >>> r = record.make_record("k", "demo(...)", "auto", "llvm", {"C": {"pack": 1}}, [1e-3], 0)
    >>> record.append(path, [r])
    >>> [x["config"] for x in record.load(path)]
    [{'C': {'pack': 1}}]
"""

from __future__ import annotations

import json
import math
import os
import platform
import threading
import time
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

from .. import _core

__all__ = [
    "ApplyHistoryBest",
    "append",
    "apply_history_best",
    "best_records",
    "cpu_name",
    "load",
    "make_record",
]

_FORMAT = 1


def cpu_name() -> str:
    """This machine's CPU (``model name`` of /proc/cpuinfo, else the platform's)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _versions() -> dict[str, str]:
    import numpy as np

    from .. import __version__

    return {
        "python": platform.python_version(),
        "pytvmbridge": __version__,
        "numpy": np.__version__,
    }


def make_record(
    workload: str,
    description: str,
    kind: str,
    target: str,
    config: Any,
    costs: list[float],
    error: int,
    error_msg: str = "",
    features: list[float] | None = None,
    build_s: float = 0.0,
    flop: float = 0.0,
    cut_short: bool = False,
    timestamp: float | None = None,
    measure_s: float = 0.0,
    verified: float | None = None,
    chosen: bool = False,
    schedule: str = "",
) -> dict[str, Any]:
    """One log record (a JSON-able dict). ``verified``: the id (a timestamp) of the final,
    interleaved in-process re-measurement the record belongs to (see ``Tuner.verify``);
    ``chosen``: the configuration that re-measurement selected; ``schedule``: the hash of the
    lowered schedule that was built and timed (``measure.schedule_hash``), so that a replay can
    check that the configuration still builds the same code."""
    from .. import get_num_threads
    from .measure import ERROR_NAMES

    rec = {
        "format": _FORMAT,
        "workload": workload,
        "description": description,
        "kind": kind,
        "target": {"name": str(target), "cpu": cpu_name(), "threads": get_num_threads()},
        "config": config,
        "features": list(features or []),
        "costs": list(costs),
        "flop": flop,
        "error": int(error),
        "error_name": ERROR_NAMES[int(error)],
        "error_msg": error_msg,
        "cut_short": bool(cut_short),
        "build_s": build_s,
        "measure_s": measure_s,
        "schedule": schedule,
        "timestamp": time.time() if timestamp is None else timestamp,
        "versions": _versions(),
    }
    if verified is not None:
        rec["verified"] = float(verified)
        rec["chosen"] = bool(chosen)
    return rec


def append(path: str | os.PathLike[str], records: Iterable[dict[str, Any]]) -> None:
    """Appends records to a log (one JSON object a line; flushed so a crash loses nothing).
    A log whose last line a crash cut short gets a line break first, so that the first new
    record is not glued onto the partial one (and lost with it)."""
    with open(path, "ab") as f:
        if f.tell() > 0:
            with open(path, "rb") as tail:
                tail.seek(-1, os.SEEK_END)
                if tail.read(1) != b"\n":
                    f.write(b"\n")
        for r in records:
            f.write((json.dumps(r, sort_keys=True) + "\n").encode())
        f.flush()


def load(path: str | os.PathLike[str], verified: bool = True) -> Iterator[dict[str, Any]]:
    """The records of a log, in order (lines that are not records are skipped with a warning:
    a log cut by a crash keeps its complete lines). ``verified=False``: only the search's
    trials, without the final re-measurements (``Tuner.verify``)."""
    if not os.path.exists(path):
        return
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                r = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                warnings.warn(f"{path}:{n}: not a JSON record, skipped", stacklevel=2)
                continue
            if isinstance(r, dict) and "workload" in r and "config" in r:
                if verified or "verified" not in r:
                    yield r


def record_cost(r: dict[str, Any]) -> float:
    """The median cost of a valid, fully measured record; ``inf`` otherwise."""
    if r.get("error") != 0 or not r.get("costs") or r.get("cut_short"):
        return math.inf
    costs = sorted(r["costs"])
    return float(costs[len(costs) // 2])


def _matches_target(r: dict[str, Any], target: str, other_cpus: bool) -> bool:
    t = r.get("target", {})
    if str(t.get("name")) != str(target):
        return False
    return other_cpus or t.get("cpu") == cpu_name()


def best_records(
    records: Iterable[dict[str, Any]], target: str = "llvm", other_cpus: bool = False
) -> dict[str, dict[str, Any]]:
    """Workload key -> its best valid record for ``target`` (error records never count).

    A workload whose tuning ended with a verification (the best candidates and the analytical
    schedule re-measured together, records marked ``verified``) takes the record its latest
    verification chose: those times were measured under the same conditions, unlike the
    minimum over the whole search, which favours a lucky measurement.
    """
    records = [r for r in records if _matches_target(r, target, other_cpus)]
    latest: dict[str, float] = {}
    for r in records:
        if r.get("verified") is not None and not math.isinf(record_cost(r)):
            latest[r["workload"]] = max(latest.get(r["workload"], -math.inf), r["verified"])
    best: dict[str, dict[str, Any]] = {}
    for r in records:
        cost = record_cost(r)
        if math.isinf(cost):
            continue
        key = r["workload"]
        if key in latest and r.get("verified") != latest[key]:
            continue
        if key in best and best[key].get("chosen"):
            continue
        if key not in best or r.get("chosen") or cost < record_cost(best[key]):
            best[key] = r
    return best


# --- dispatch: which configuration a workload is built with ------------------------------------

_active = threading.local()
_option_contexts: dict[tuple[str, bool], ApplyHistoryBest] = {}


class ApplyHistoryBest:
    """Context manager: while active, workloads with a record in ``logs`` are built with their
    best configuration (see the module documentation). ``lookup(task)`` returns it or ``None``
    (warning once per workload)."""

    def __init__(self, logs: Any, other_cpus: bool = False) -> None:
        paths = [logs] if isinstance(logs, (str, os.PathLike)) else list(logs)
        self.paths = [os.fspath(p) for p in paths]
        self.other_cpus = other_cpus
        self._records = [r for p in self.paths for r in load(p)]
        self._best: dict[str, dict[str, dict[str, Any]]] = {}
        self._warned: set[str] = set()

    def best(self, workload: str, target: str = "llvm") -> dict[str, Any] | None:
        """The best valid record of ``workload`` for ``target``, or ``None``."""
        if target not in self._best:
            self._best[target] = best_records(self._records, target, self.other_cpus)
        return self._best[target].get(workload)

    def lookup(self, task: Any) -> Any:
        r = self.best(task.workload_key, task.target)
        if r is None:
            if task.workload_key not in self._warned:
                self._warned.add(task.workload_key)
                warnings.warn(
                    f"apply_history_best: no valid record of {task.description} "
                    f"(workload {task.workload_key}) for target '{task.target}' on this CPU in "
                    f"{', '.join(self.paths)}; using the default schedule",
                    stacklevel=3,
                )
            return None
        return r["config"]

    def __enter__(self) -> ApplyHistoryBest:
        if not hasattr(_active, "stack"):
            _active.stack = []
        _active.stack.append(self)
        _core._bump_dispatch_epoch()  # kernels called before look their schedule up again
        return self

    def __exit__(self, *exc: object) -> None:
        _active.stack.remove(self)
        _core._bump_dispatch_epoch()


def apply_history_best(logs: Any, other_cpus: bool = False) -> ApplyHistoryBest:
    """AutoTVM's ``apply_history_best(log_file)``: a context manager under which the best
    valid record of each workload (for this CPU) is the schedule used.

    Example:
        >>> from pytvmbridge import autotvm
        >>> with autotvm.apply_history_best("no-such-log.json") as ctx:
        ...     ctx.best("0123456789abcdef") is None
        True
    """
    return ApplyHistoryBest(logs, other_cpus)


def context_for_option(path: Any, other_cpus: bool = False) -> ApplyHistoryBest | None:
    """The context for an ``option["tuning_log_file"]`` (cached per path; ``None`` for no
    path). For the graph backend and ``pytvmbridge.torch.compile``."""
    if not path:
        return None
    key = (os.fspath(path), other_cpus)
    ctx = _option_contexts.get(key)
    mtime = os.path.getmtime(key[0]) if os.path.exists(key[0]) else None
    if ctx is None or getattr(ctx, "_mtime", None) != mtime:
        ctx = ApplyHistoryBest(key[0], other_cpus)
        ctx._mtime = mtime  # type: ignore[attr-defined]
        _option_contexts[key] = ctx
    return ctx


def current() -> ApplyHistoryBest | None:
    """The innermost active ``apply_history_best`` context, or ``None``."""
    stack = getattr(_active, "stack", None)
    return stack[-1] if stack else None


def _current_config(task: Any) -> Any:
    ctx = current()
    return ctx.lookup(task) if ctx is not None else None
