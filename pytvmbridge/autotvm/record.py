"""Tuning logs (JSON lines, one record per measured candidate) and replaying the best.

A record holds the workload (structural hash and description), the target with this machine's
CPU name and thread count, the configuration, its loop features, the measured costs (seconds
per call), the error code (0: valid), a timestamp and the versions of Python, pytvmbridge and
NumPy. ``apply_history_best(log)`` makes the best valid record of each workload the schedule
used while it is active (by ``@kernel``, TC defs and templates); a workload with no record is
scheduled analytically, with one warning. Records measured on another CPU are used only with
``other_cpus=True``.

Every reader goes through one check, ``record_problem``: ``load`` skips a line that is not a
usable record (not JSON, a field of the wrong type, a valid record whose costs are not positive
finite seconds) with a warning naming the file and line, and ``record_cost``/``best_records``
never choose such a record, so a damaged or hand-edited log cannot crash a kernel call made
under ``apply_history_best`` nor win with a NaN. TVM's names are here too: ``load_from_file``
(``(MeasureInput, MeasureResult)`` pairs), ``pick_best``, ``encode``.

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
from dataclasses import dataclass
from typing import Any

from .. import _core

__all__ = [
    "ApplyHistoryBest",
    "RecordTask",
    "append",
    "apply_history_best",
    "best_records",
    "check_log_path",
    "cpu_name",
    "encode",
    "from_result",
    "load",
    "load_from_file",
    "make_record",
    "pick_best",
    "record_problem",
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


def _is_real(x: Any) -> bool:
    # bool is an int to Python, never a time or a count in a record
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def record_problem(r: Any) -> str | None:
    """Why ``r`` is not a usable tuning record, or ``None`` when it is one.

    The one check every reader relies on (``load`` skips what fails it, ``record_cost`` and
    ``best_records`` never choose it), so that the code after it can index the fields it reads:
    ``workload`` (a string), ``config`` (an object; for ``kind`` "auto" ``{stage: {knob:
    int}}``), ``target`` (an object with a string ``name``), ``error`` (an error code),
    ``costs`` (a list of numbers; for a valid record, error 0, not empty and every one positive
    and finite: a NaN, infinite or negative time compares as "not slower" with every other and
    would be chosen), and the optional ``verified`` (a finite number), ``chosen`` and
    ``cut_short`` (booleans), ``flop`` (a number >= 0), ``kind``, ``description``,
    ``schedule`` and the target's ``cpu`` (strings).

    Example:
        >>> from pytvmbridge.autotvm import record
        >>> good = record.make_record("k", "demo()", "auto", "llvm", {"B": {"x": 1}}, [1e-3], 0)
        >>> record.record_problem(good) is None
        True
        >>> record.record_problem(dict(good, costs=[float("nan")]))
        'costs of a valid record must be positive finite seconds, got [nan]'
    """
    from .measure import ERROR_NAMES

    if not isinstance(r, dict):
        kinds = {list: "array", str: "string", bool: "boolean", type(None): "null"}
        return f"a JSON {kinds.get(type(r), 'number')}, not an object"
    if not isinstance(r.get("workload"), str) or not r["workload"]:
        return f"'workload' must be a non-empty string, got {r.get('workload')!r}"
    config = r.get("config")
    if not isinstance(config, dict):
        return f"'config' must be an object, got {config!r}"
    kind = r.get("kind")
    if kind is not None and not isinstance(kind, str):
        return f"'kind' must be a string, got {kind!r}"
    if kind == "auto":  # the automatic scheduler's point: {stage: {knob: int}}
        for stage, knobs in config.items():
            if not isinstance(knobs, dict) or not all(
                isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63
                for v in knobs.values()
            ):
                return f"'config' stage {stage!r} must map knobs to integers, got {knobs!r}"
    target = r.get("target")
    if not isinstance(target, dict) or not isinstance(target.get("name"), str):
        return f"'target' must be an object with a string 'name', got {target!r}"
    if not isinstance(target.get("cpu", ""), str):
        return f"'target' cpu must be a string, got {target['cpu']!r}"
    error = r.get("error")
    if not isinstance(error, int) or isinstance(error, bool) or not 0 <= error < len(ERROR_NAMES):
        return f"'error' must be an error code 0..{len(ERROR_NAMES) - 1}, got {error!r}"
    costs = r.get("costs")
    if not isinstance(costs, list) or not all(_is_real(c) for c in costs):
        return f"'costs' must be a list of numbers, got {costs!r}"
    if error == 0 and (not costs or not all(math.isfinite(c) and c > 0 for c in costs)):
        return f"costs of a valid record must be positive finite seconds, got {costs!r}"
    verified = r.get("verified")
    if verified is not None and not (_is_real(verified) and math.isfinite(verified)):
        return f"'verified' must be a finite number, got {verified!r}"
    for name in ("chosen", "cut_short"):
        if name in r and not isinstance(r[name], bool):
            return f"{name!r} must be true or false, got {r[name]!r}"
    if "flop" in r and not (_is_real(r["flop"]) and math.isfinite(r["flop"]) and r["flop"] >= 0):
        return f"'flop' must be a number >= 0, got {r['flop']!r}"
    for name in ("description", "schedule"):
        if name in r and not isinstance(r[name], str):
            return f"{name!r} must be a string, got {r[name]!r}"
    return None


# Per load of one file: the lines named in a warning each; the rest are counted in one more (a
# log of another format, read by mistake, is thousands of lines).
_WARN_LINES = 10


def load(path: str | os.PathLike[str], verified: bool = True) -> Iterator[dict[str, Any]]:
    """The records of a log, in order. A line that is not a usable record is skipped with a
    warning naming the file and line (see ``record_problem``): a log cut by a crash keeps its
    complete lines, and a damaged line cannot reach the code that replays the log. Lines of
    other kinds (JSON objects without a ``workload``, such as the graph guard's verdicts) are
    skipped silently. ``verified=False``: only the search's trials, without the final
    re-measurements (``Tuner.verify``)."""
    if not os.path.exists(path):
        return
    skipped = 0

    def skip(n: int, why: str) -> None:
        nonlocal skipped
        skipped += 1
        if skipped <= _WARN_LINES:
            warnings.warn(f"{os.fspath(path)}:{n}: {why}, skipped", stacklevel=3)

    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                r = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                skip(n, "not a JSON record")  # (RecursionError: nested past Python's limit)
                continue
            if isinstance(r, dict) and "workload" not in r:
                if "input" in r and "result" in r:
                    skip(n, "a TVM AutoTVM record (pytvmbridge reads its own record format)")
                continue
            why = record_problem(r)
            if why is not None:
                skip(n, f"not a valid tuning record: {why}")
                continue
            if verified or "verified" not in r:
                yield r
    if skipped > _WARN_LINES:
        warnings.warn(
            f"{os.fspath(path)}: {skipped - _WARN_LINES} more lines that are not valid tuning "
            "records skipped",
            stacklevel=2,
        )


def record_cost(r: dict[str, Any]) -> float:
    """The median cost of a valid, fully measured record; ``inf`` otherwise (an error, a
    candidate cut short, or anything ``record_problem`` refuses)."""
    if record_problem(r) is not None or r["error"] != 0 or r.get("cut_short"):
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
    usable = [r for r in records if record_problem(r) is None]
    return _best_of([r for r in usable if _matches_target(r, target, other_cpus)])


def _best_of(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``best_records`` of records already checked and of one target (see there)."""
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
        self.paths: list[str] = []
        self._records: list[dict[str, Any]] = []
        if isinstance(logs, (str, os.PathLike)):
            logs = [logs]
        elif isinstance(logs, (bytes, dict)) or not isinstance(logs, Iterable):
            raise _core.TVMTypeError(
                "apply_history_best: logs must be a log file path (str or os.PathLike) or a "
                f"list of paths and records, got {type(logs).__name__}"
            )
        given = 0
        for k, item in enumerate(logs):
            if isinstance(item, dict):  # a record (as load() yields it), checked as load checks
                given += 1
                why = record_problem(item)
                if why is None:
                    self._records.append(item)
                else:
                    warnings.warn(
                        f"apply_history_best: logs[{k}] is not a valid tuning record ({why}), "
                        "skipped",
                        stacklevel=3,
                    )
                continue
            path = check_log_path(item, f"apply_history_best: logs[{k}]")
            self.paths.append(path)
            self._records += load(path)
        if given:
            self.paths.append(f"{given} records given")  # what the miss warnings name
        self.other_cpus = other_cpus
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
            self._warn_once(
                task,
                f"apply_history_best: no valid record of {task.description} "
                f"(workload {task.workload_key}) for target '{task.target}' on this CPU in "
                f"{', '.join(self.paths)}; using the default schedule",
            )
            return None
        if getattr(task, "kind", None) == "template":
            # A template's knobs are the user's code: a log written by an older version of it
            # can hold a value the template no longer offers, which would fail inside the
            # template at the kernel call. (The automatic scheduler's points are repaired to
            # the nearest allowed value instead, see dispatch.apply_config.)
            try:
                task.canonical(r["config"])
            except ValueError as err:
                self._warn_once(
                    task,
                    f"apply_history_best: the best record of {task.description} in "
                    f"{', '.join(self.paths)} does not fit the template's knobs ({err}); "
                    "using the default schedule",
                )
                return None
        return r["config"]

    def _warn_once(self, task: Any, message: str) -> None:
        if task.workload_key not in self._warned:
            self._warned.add(task.workload_key)
            warnings.warn(message, stacklevel=4)

    def __enter__(self) -> ApplyHistoryBest:
        if not hasattr(_active, "stack"):
            _active.stack = []
        _active.stack.append(self)
        _core._bump_dispatch_epoch()  # kernels called before look their schedule up again
        return self

    def __exit__(self, *exc: object) -> None:
        stack = getattr(_active, "stack", [])
        if self not in stack:
            # not entered (or exited already, or entered in another thread: the stack is per
            # thread): list.remove's "x not in list" said nothing of the context
            raise _core.TVMValueError(
                "ApplyHistoryBest.__exit__: this context is not active in this thread (it was "
                "not entered with 'with', or was exited already)"
            )
        stack.remove(self)
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


def check_log_path(path: Any, what: str) -> str:
    """``path`` as a string, checked to name a tuning log: a TypeError for what is not a path
    (str or os.PathLike; bytes included, as ``tune``'s ``log_file`` refuses them), a ValueError
    for a directory; ``what`` names the argument or option. A missing file is accepted: it
    holds no records yet (a log the first tuning run writes).

    Example:
        >>> import tempfile
        >>> from pytvmbridge.autotvm.record import check_log_path
        >>> try:
        ...     check_log_path(tempfile.gettempdir(), "tuning_log_file")
        ... except ValueError as err:
        ...     print(str(err).split(" is ")[1])
        a directory, not a tuning log file
    """
    if not isinstance(path, (str, os.PathLike)):
        raise _core.TVMTypeError(
            f"{what} must be a tuning log path (str or os.PathLike), got {type(path).__name__}"
        )
    text = os.fspath(path)
    if not isinstance(text, str):  # an os.PathLike of bytes
        raise _core.TVMTypeError(f"{what} must be a str path, got a bytes path {text!r}")
    if not text:
        raise _core.TVMValueError(f"{what} must be a tuning log path, got an empty string")
    if os.path.isdir(text):
        raise _core.TVMValueError(f"{what} {text!r} is a directory, not a tuning log file")
    return text


def context_for_option(
    path: Any, other_cpus: bool = False, option: str = "tuning_log_file"
) -> ApplyHistoryBest | None:
    """The context for an ``option["tuning_log_file"]`` (cached per path; ``None`` for no
    path). For the graph backend and ``pytvmbridge.torch.compile``. A path that cannot be a
    log (not a path, a directory) is refused here, naming ``option``, rather than read as no
    records or failing at the first kernel built with it."""
    if path is None or (isinstance(path, str) and not path):
        return None
    key = (check_log_path(path, option), other_cpus)
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


# --- TVM's names: load_from_file, encode, pick_best ---------------------------------------------


@dataclass(frozen=True)
class RecordTask:
    """The task a log record was measured for, as far as the record tells (``MeasureInput.task``
    of ``load_from_file``): enough to group, filter and re-encode records, not to build them
    (the computation itself is not in the log)."""

    name: str
    description: str
    workload_key: str
    kind: str
    target: str
    flop: float


def from_result(
    task: Any, result: Any, verified: float | None = None, chosen: bool = False
) -> dict[str, Any]:
    """The log record of ``task``'s measured candidate ``result`` (a ``MeasureResult``); what
    the tuners and ``callback.log_to_file`` write."""
    return make_record(
        task.workload_key,
        task.description,
        task.kind,
        task.target,
        result.config,
        result.costs,
        result.error,
        result.error_msg,
        result.features,
        result.build_s,
        task.flop,
        result.cut_short,
        result.timestamp,
        result.measure_s,
        verified,
        chosen,
        result.schedule,
    )


def encode(inp: Any, result: Any, protocol: str = "json") -> str:
    """TVM's ``record.encode``: one log line (no line break) for a ``(MeasureInput,
    MeasureResult)`` pair, in pytvmbridge's record format (``protocol`` "json" only).

    Example:
        >>> import json
        >>> from pytvmbridge.autotvm import record
        >>> from pytvmbridge.autotvm.measure import MeasureInput, MeasureResult
        >>> task = record.RecordTask("k", "k()", "0123456789abcdef", "template", "llvm", 0.0)
        >>> line = record.encode(MeasureInput("llvm", task, {"x": 1}),
        ...                      MeasureResult(config={"x": 1}, costs=[1e-3]))
        >>> json.loads(line)["costs"], record.record_problem(json.loads(line)) is None
        ([0.001], True)
    """
    if protocol != "json":
        from ..error import TVMValueError

        raise TVMValueError(
            f"log protocol must be 'json' (pytvmbridge's logs are JSON lines), got {protocol!r}"
        )
    return json.dumps(from_result(inp.task, result), sort_keys=True)


def _pair(r: dict[str, Any]) -> tuple[Any, Any]:
    from .measure import MeasureInput, MeasureResult

    description = r.get("description", r["workload"])
    target = r["target"]["name"]
    task = RecordTask(
        description.split("(", 1)[0],
        description,
        r["workload"],
        r.get("kind", "auto"),
        target,
        float(r.get("flop", 0.0)),
    )
    result = MeasureResult(
        config=r["config"],
        costs=list(r["costs"]),
        error=r["error"],
        error_msg=str(r.get("error_msg", "")),
        cut_short=bool(r.get("cut_short", False)),
        timestamp=r["timestamp"] if _is_real(r.get("timestamp")) else 0.0,
        schedule=r.get("schedule", ""),
    )
    # the optional timings (TVM's all_cost is their sum), where the record has them as numbers
    for name in ("build_s", "measure_s"):
        if _is_real(r.get(name)):
            setattr(result, name, float(r[name]))
    return MeasureInput(target, task, r["config"]), result


def load_from_file(filename: str | os.PathLike[str]) -> Iterator[tuple[Any, Any]]:
    """TVM's ``record.load_from_file``: the log's records as ``(MeasureInput, MeasureResult)``
    pairs, in order (``inp.target``, ``inp.task`` a ``RecordTask``, ``inp.config``;
    ``res.costs``, ``res.error_no``, ``res.timestamp``...). Lines that are not valid records
    are skipped with a warning, as by ``load``.

    Example:
        >>> import os, tempfile
        >>> from pytvmbridge.autotvm import record
        >>> path = os.path.join(tempfile.mkdtemp(), "log.json")
        >>> record.append(path, [record.make_record("k", "k()", "auto", "llvm", {}, [2e-3], 0)])
        >>> [(inp.task.name, res.costs, res.error_no) for inp, res in record.load_from_file(path)]
        [('k', [0.002], 0)]
    """
    for r in load(filename):
        yield _pair(r)


def pick_best(in_file: str | os.PathLike[str], out_file: Any) -> int:
    """TVM's ``record.pick_best``: writes to ``out_file`` (a path, replaced, or an open text
    file) the records ``apply_history_best`` would choose from ``in_file``: per target and CPU,
    the best valid record of each workload (the one its latest verification chose, if any).
    An existing ``out_file`` path takes part: its best records stay when ``in_file`` has none
    better. Returns the number of records written.

    Example:
        >>> import os, tempfile
        >>> from pytvmbridge.autotvm import record
        >>> d = tempfile.mkdtemp()
        >>> recs = [record.make_record("k", "k()", "auto", "llvm", {"B": {"x": x}}, [t], 0)
        ...         for x, t in [(1, 3e-3), (2, 1e-3), (3, 2e-3)]]
        >>> record.append(os.path.join(d, "all.json"), recs)
        >>> record.pick_best(os.path.join(d, "all.json"), os.path.join(d, "best.json"))
        1
        >>> [r["config"] for r in record.load(os.path.join(d, "best.json"))]
        [{'B': {'x': 2}}]
    """
    recs = list(load(in_file))
    to_path = isinstance(out_file, (str, os.PathLike))
    if to_path and os.path.isfile(out_file):
        recs += list(load(out_file))
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in recs:
        key = (r["target"]["name"], r["target"].get("cpu", ""))
        groups.setdefault(key, []).append(r)
    keep = {id(b) for group in groups.values() for b in _best_of(group).values()}
    lines: list[str] = []
    for r in recs:  # in the logs' order, each record once
        text = json.dumps(r, sort_keys=True)
        if id(r) in keep and text not in lines:
            lines.append(text)
            keep.discard(id(r))
    if not to_path:
        out_file.writelines(line + "\n" for line in lines)
        return len(lines)
    path = os.fspath(out_file)
    # written beside it, then renamed: a crash meanwhile leaves the old file whole
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.writelines(line + "\n" for line in lines)
    os.replace(tmp, path)
    return len(lines)
