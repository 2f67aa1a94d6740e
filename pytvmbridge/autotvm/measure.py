"""Measuring candidates so that the numbers can be trusted.

``LocalRunner`` keeps ``n_parallel`` worker processes (forked from the tuner, so the task and
its reference data are inherited, not sent). A batch is measured in two phases:

1. build: each worker instantiates, lowers (features) and compiles one candidate, all in
   parallel;
2. measure: one worker at a time runs its compiled candidate while the others wait, so nothing
   else of the tuner runs beside it: one checked run (outputs compared with the reference
   schedule's; a mismatch is a ``WRONG_ANSWER`` record), then ``repeat`` timings of ``number``
   calls each, ``number`` chosen so that a repeat lasts at least ``min_repeat_ms``. A candidate
   whose first timed call is ``slow_factor`` times slower than the best so far is cut short
   (one timing).

A worker that dies (a crashing candidate) or does not answer within ``timeout`` seconds (a
hanging one) is killed and replaced; its candidate becomes a ``CRASH``/``TIMEOUT`` record and
the tuner carries on.

TVM's way of saying how to measure works too: ``measure_option(builder=LocalBuilder(...),
runner=LocalRunner(number=..., repeat=..., min_repeat_ms=..., timeout=...))`` is a dict that
``Tuner.tune``, ``tune_tasks`` and ``autotvm.tune`` accept as ``measure_option``. A
``LocalRunner`` made without a task, as there, only describes the measurement
(``LocalRunner.option``); the tuner starts the workers for each task.

Example:
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge import autotvm
    >>> def add(n):
    ...     A = tvm.placeholder((n,), name="A")
    ...     return [A, tvm.compute((n,), lambda i: A[i] + 1.0, name="B")]
    >>> task = autotvm.auto_task(add, (4096,))
    >>> with autotvm.LocalRunner(task, n_parallel=1) as runner:
    ...     [r] = runner.run([task.space.default()])
    >>> r.error, r.error_name, len(r.costs) > 0
    (0, 'OK', True)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import multiprocessing as mp
import os
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "ERROR_NAMES",
    "LocalBuilder",
    "LocalRunner",
    "MeasureInput",
    "MeasureOption",
    "MeasureResult",
    "make_inputs",
    "measure_in_process",
    "measure_option",
    "reference_outputs",
    "resolve_measure_option",
    "schedule_hash",
]

OK, INSTANTIATE_ERROR, BUILD_ERROR, RUNTIME_ERROR, WRONG_ANSWER, TIMEOUT, CRASH = range(7)
ERROR_NAMES = [
    "OK",
    "INSTANTIATE_ERROR",
    "BUILD_ERROR",
    "RUNTIME_ERROR",
    "WRONG_ANSWER",
    "TIMEOUT",
    "CRASH",
]


@dataclass
class MeasureResult:
    """One candidate's outcome: ``costs`` in seconds per call (one per repeat), ``error`` code
    (0: valid), its message, the features the cost model learns from."""

    config: Any
    costs: list[float] = field(default_factory=list)
    error: int = OK
    error_msg: str = ""
    features: list[float] = field(default_factory=list)
    build_s: float = 0.0
    measure_s: float = 0.0
    cut_short: bool = False
    timestamp: float = field(default_factory=time.time)
    schedule: str = ""  # schedule_hash of what was built and timed ("" if it was not built)
    duplicate: bool = False  # not built: its schedule_hash was in the runner's known_schedules

    @property
    def error_name(self) -> str:
        return ERROR_NAMES[self.error]

    @property
    def error_no(self) -> int:
        """TVM's name of ``error`` (0: valid; the codes are ``ERROR_NAMES``'s, not TVM's)."""
        return self.error

    @property
    def all_cost(self) -> float:
        """TVM's ``all_cost``: the seconds this candidate took to build and measure."""
        return self.build_s + self.measure_s

    @property
    def cost(self) -> float:
        """The median time of a call (``inf`` for an error)."""
        return float(np.median(self.costs)) if self.error == OK and self.costs else math.inf


class MeasureInput(NamedTuple):
    """TVM's ``MeasureInput``: what a callback of ``Tuner.tune`` (or ``record.load_from_file``)
    is told a result was measured for: the target, the task and the configuration (a dict, the
    point of ``task.space``; a ``record.RecordTask`` stands for the task in a loaded log)."""

    target: str
    task: Any
    config: Any


def make_inputs(task: Any, seed: int = 0) -> list[np.ndarray | None]:
    """Random arrays for the task's inputs (``None`` in the outputs' places)."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray | None] = []
    for (shape, dtype), is_out in zip(task.arg_shapes, task.is_output, strict=True):
        if is_out:
            out.append(None)
        elif dtype.startswith("float") or dtype == "bfloat16":
            out.append(rng.uniform(-1, 1, size=shape).astype(dtype))
        elif dtype == "bool":
            out.append(rng.integers(0, 2, size=shape).astype(bool))
        else:
            # a task may say how large its integers can be (a whole graph's gather indices: 0)
            high = getattr(task, "int_high", 8)
            out.append(rng.integers(0, high, size=shape).astype(dtype))
    return out


def _outputs(task: Any) -> list[np.ndarray]:
    return [np.zeros(s, d) for (s, d), o in zip(task.arg_shapes, task.is_output, strict=True) if o]


def _run(module: Any, task: Any, inputs: list[Any], outs: list[np.ndarray]) -> None:
    it = iter(outs)
    module(*[x if x is not None else next(it) for x in inputs])


def reference_outputs(task: Any, inputs: list[Any]) -> list[np.ndarray]:
    """The outputs of the task's reference schedule on ``inputs``."""
    from ..build import build

    s, args = task.reference()
    module = build(s, args, target=task.target)
    outs = _outputs(task)
    _run(module, task, inputs, outs)
    return outs


def schedule_hash(schedule: Any, args: list[Any], target: str = "llvm", lowered: Any = None) -> str:
    """A short hash of everything that decides the code a build of ``schedule`` generates (the
    compile cache's ``build_fingerprint``: the lowered function, the argument signature, the
    target): two configurations with the same hash build the same code. Records carry the hash
    of the schedule that was measured, so that a replay can check that its configuration still
    builds it, and a tuner does not build and measure the same code twice. ``lowered``:
    ``lower(schedule, args)`` done already (any name), which is then not done again."""
    from .. import _core

    text = _core.build_fingerprint(schedule, list(args), str(target), "default_function", lowered)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _close(got: np.ndarray, want: np.ndarray) -> bool:
    if got.dtype.kind in "fc":
        scale = float(np.max(np.abs(want))) if want.size else 1.0
        return bool(np.allclose(got, want, rtol=1e-3, atol=1e-4 * max(1.0, scale), equal_nan=True))
    return bool(np.array_equal(got, want))


# The longest wait a measurement setting may ask for, in seconds (a week). A larger timeout is
# no limit at all, and from about 1e10 s on waiting for a worker raised OverflowError; a
# non-finite min_repeat_ms made every timing a RUNTIME_ERROR.
MAX_WAIT_S = 7 * 24 * 3600.0


def _check_setting(
    owner: str,
    name: str,
    v: Any,
    low: float,
    strict: bool,
    integer: bool = False,
    high: float | None = None,
) -> None:
    """Raises a ValueError naming ``owner`` and ``name`` unless ``v`` is a number (an integer
    with ``integer``) above ``low`` (at ``low`` allowed unless ``strict``) and, with ``high``,
    at most ``high`` (so finite)."""
    from ..error import TVMValueError

    ok_type = isinstance(v, int) if integer else isinstance(v, (int, float))
    if isinstance(v, bool) or not ok_type or not (v > low if strict else v >= low):
        want = "an integer" if integer else "a number"
        rel = ">" if strict else ">="
        raise TVMValueError(f"{owner}: {name} must be {want} {rel} {low}, got {v!r}")
    if high is not None and not v <= high:
        unit = " ms" if name.endswith("_ms") else " s"
        raise TVMValueError(
            f"{owner}: {name} must be a finite number at most {high:g}{unit} (a week), got {v!r}"
        )


def _poll(conn: Any, seconds: float) -> bool:
    """``conn.poll`` with the wait bounded: a wait past what the clock can represent raises
    OverflowError before anything is read (leaving the worker's answer in the pipe, to be read
    as the answer to the next request)."""
    return bool(conn.poll(min(max(0.0, seconds), MAX_WAIT_S)))


@dataclass
class MeasureOption:
    """How candidates are measured (see the module documentation)."""

    repeat: int = 3
    min_repeat_ms: float = 20.0
    timeout: float = 20.0
    slow_factor: float = 10.0
    check: bool = True
    # Build the next batch while this one is measured (a second set of workers), and make the
    # tuner's next proposals meanwhile. None (the default): only where this process may run
    # on more CPUs than a timed run's threads; the timed run then has CPUs of its own and
    # everything else is kept off them (see cpu_split). True on a machine without spare CPUs
    # shares them: the builds and proposals then disturb the timed runs (a build made one
    # 1.47x slower on 2 cores, 2 threads).
    overlap_builds: bool | None = None
    # TVM's LocalRunner(number=...): calls per timing at least (min_repeat_ms may take more);
    # None: as many as min_repeat_ms needs, at least one.
    number: int | None = None
    # TVM's LocalBuilder(timeout=...): seconds a batch's builds may take; None: ``timeout``.
    build_timeout: float | None = None
    # TVM's LocalRunner(cooldown_interval=...): seconds of rest after each measured candidate
    # (a device that heats up is not timed hot, one candidate after another).
    cooldown_interval: float = 0.0

    def __post_init__(self) -> None:
        from ..error import TVMValueError

        def number(
            name: str, low: float, strict: bool, integer: bool = False, high: float | None = None
        ) -> None:
            _check_setting("MeasureOption", name, getattr(self, name), low, strict, integer, high)

        number("repeat", 1, False, integer=True)
        number("min_repeat_ms", 0, False, high=MAX_WAIT_S * 1000.0)
        number("timeout", 0, True, high=MAX_WAIT_S)
        number("slow_factor", 1, False)  # inf: never cut a slow candidate short
        number("cooldown_interval", 0, False, high=MAX_WAIT_S)
        if self.number is not None:
            number("number", 1, False, integer=True)
        if self.build_timeout is not None:
            number("build_timeout", 0, True, high=MAX_WAIT_S)
        if self.overlap_builds not in (None, True, False):
            raise TVMValueError(
                f"MeasureOption: overlap_builds must be True, False or None, "
                f"got {self.overlap_builds!r}"
            )


def check_measure_option(option: object) -> None:
    """Raises a clear error where ``measure_option`` is not a ``MeasureOption``, TVM's
    ``measure_option(builder=..., runner=...)`` dict, or None."""
    resolve_measure_option(option)


def resolve_measure_option(
    option: object, n_parallel: int | None = None
) -> tuple[MeasureOption | None, int | None]:
    """``(MeasureOption or None, n_parallel)`` for a ``measure_option`` argument: a
    ``MeasureOption`` or None as is; TVM's ``{"builder": ..., "runner": ...}`` (from
    ``measure_option``) as the runner's settings, with the builder's timeout and, where
    ``n_parallel`` is None, its ``n_parallel``. Anything else is a TypeError.

    Example:
        >>> from pytvmbridge import autotvm
        >>> from pytvmbridge.autotvm.measure import resolve_measure_option
        >>> opt, n = resolve_measure_option(autotvm.measure_option(
        ...     builder=autotvm.LocalBuilder(n_parallel=2), runner=autotvm.LocalRunner(number=5)))
        >>> opt.number, opt.repeat, opt.min_repeat_ms, n
        (5, 3, 0, 2)
    """
    from ..error import TVMTypeError

    if option is None or isinstance(option, MeasureOption):
        return option, n_parallel
    if isinstance(option, dict) and set(option) == {"builder", "runner"}:
        builder, runner = option["builder"], option["runner"]
        if not isinstance(builder, LocalBuilder):
            raise TVMTypeError(
                f"measure_option: builder must be an autotvm.LocalBuilder, got "
                f"{type(builder).__name__}"
            )
        if not isinstance(runner, LocalRunner):
            raise TVMTypeError(
                f"measure_option: runner must be an autotvm.LocalRunner, got "
                f"{type(runner).__name__}"
            )
        opt = dataclasses.replace(runner.option, build_timeout=builder.timeout)
        return opt, n_parallel if n_parallel is not None else builder.n_parallel
    raise TVMTypeError(
        "measure_option must be an autotvm.MeasureOption, autotvm.measure_option(builder=..., "
        f"runner=...) or None, got {type(option).__name__}: {option!r}"
    )


class LocalBuilder:
    """TVM's ``LocalBuilder``: how candidates are built, for ``measure_option``. ``timeout``:
    seconds a batch's builds may take (a candidate still building then is a ``TIMEOUT``
    record); ``n_parallel``: candidates built at once (None: the tuner's default, up to 4).
    Builds always run in forked worker processes here (``do_fork`` is accepted for TVM's
    code); ``build_func`` must be ``"default"``.

    Example:
        >>> from pytvmbridge import autotvm
        >>> autotvm.LocalBuilder(timeout=30, n_parallel=2)
        LocalBuilder(timeout=30, n_parallel=2)
    """

    def __init__(
        self,
        timeout: float = 10,
        n_parallel: int | None = None,
        build_kwargs: dict[str, Any] | None = None,
        build_func: str = "default",
        do_fork: bool = False,
    ) -> None:
        from ..error import TVMValueError

        _check_setting("LocalBuilder", "timeout", timeout, 0, True, high=MAX_WAIT_S)
        if n_parallel is not None and (
            isinstance(n_parallel, bool) or not isinstance(n_parallel, int) or n_parallel < 1
        ):
            raise TVMValueError(
                f"LocalBuilder: n_parallel must be an integer >= 1 or None, got {n_parallel!r}"
            )
        if build_func != "default":
            raise TVMValueError(
                f"LocalBuilder: build_func must be 'default' (candidates are built with "
                f"pytvmbridge.build), got {build_func!r}"
            )
        if build_kwargs:
            raise TVMValueError(
                f"LocalBuilder: build_kwargs are not supported, got {sorted(build_kwargs)}"
            )
        self.timeout = timeout
        self.n_parallel = n_parallel
        self.do_fork = do_fork

    def __repr__(self) -> str:
        return f"LocalBuilder(timeout={self.timeout!r}, n_parallel={self.n_parallel!r})"


def measure_option(builder: Any = "local", runner: Any = "local") -> dict[str, Any]:
    """TVM's ``autotvm.measure_option``: ``{"builder": LocalBuilder, "runner": LocalRunner}``,
    which ``Tuner.tune(measure_option=...)``, ``tune_tasks`` and ``autotvm.tune`` accept
    (``"local"`` stands for the default of each).

    Example:
        >>> from pytvmbridge import autotvm
        >>> opt = autotvm.measure_option(builder=autotvm.LocalBuilder(),
        ...                              runner=autotvm.LocalRunner(number=5, repeat=1))
        >>> opt["runner"].option.number, opt["runner"].option.repeat
        (5, 1)
    """
    from ..error import TVMValueError

    if isinstance(builder, str):
        if builder != "local":
            raise TVMValueError(f"measure_option: builder must be 'local', got {builder!r}")
        builder = LocalBuilder()
    if isinstance(runner, str):
        if runner != "local":
            raise TVMValueError(f"measure_option: runner must be 'local', got {runner!r}")
        runner = LocalRunner()
    option = {"builder": builder, "runner": runner}
    resolve_measure_option(option)  # the types, checked now rather than at the first trial
    return option


def cpu_split(threads: int) -> tuple[list[int], list[int]] | None:
    """``(measure_cpus, build_cpus)``: the first ``threads`` CPUs this process may run on for
    timed runs, the rest for builds and the tuner's own work; None where there is no CPU to
    spare (or no affinity control: not Linux).

    A build on a CPU of its own barely moves a timed run (conv2d 128x28x28 one thread, 150
    timings: 1.176 ms idle, 1.196 ms with builds running beside it), where one sharing its
    CPUs makes it 1.47x slower.

    Example:
        >>> from pytvmbridge.autotvm.measure import cpu_split
        >>> cpu_split(4096) is None  # no machine here has CPUs to spare beside 4096 threads
        True
    """
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None
    if threads < 1 or len(cpus) <= threads:
        return None
    quota = _cpu_quota()
    if quota is not None and quota < threads + 1:  # a container's --cpus: no time to spare
        return None
    timed = cpus[:threads]
    # Not the other hardware threads of the timed runs' cores: a build there takes their
    # execution units.
    shared = set().union(*(_core_siblings(c) for c in timed))
    rest = [c for c in cpus[threads:] if c not in shared]
    return (timed, rest) if rest else None


def _cpu_quota(root: str = "/") -> float | None:
    """The CPUs' worth of time this process's cgroup allows (``docker --cpus``: the affinity
    mask still lists every CPU), or None where it is unlimited or unknown. cgroup v2's
    ``cpu.max`` or v1's ``cpu.cfs_quota_us``, at the process's own cgroup or else at the
    mount's root (what a container sees of its own)."""

    def read(path: str) -> str | None:
        try:
            with open(os.path.join(root, path.lstrip("/"))) as f:
                return f.read().strip()
        except OSError:
            return None

    for line in (read("/proc/self/cgroup") or "").splitlines():
        hierarchy, controllers, path = [*line.split(":", 2), "", ""][:3]
        try:
            if hierarchy == "0" and not controllers:  # v2
                text = read(f"/sys/fs/cgroup{path}/cpu.max") or read("/sys/fs/cgroup/cpu.max")
                if text:
                    quota, period = [*text.split(), "100000"][:2]
                    return None if quota == "max" else int(quota) / int(period)
            elif "cpu" in controllers.split(","):  # v1
                base = "/sys/fs/cgroup/" + controllers
                for where in (f"{base}{path}", base, "/sys/fs/cgroup/cpu"):
                    quota = read(f"{where}/cpu.cfs_quota_us")
                    period = read(f"{where}/cpu.cfs_period_us")
                    if quota and period:
                        return None if int(quota) < 0 else int(quota) / int(period)
        except ValueError:  # not a number: treated as unknown
            return None
    return None


def _core_siblings(cpu: int) -> set[int]:
    """The CPUs that share ``cpu``'s core (itself included), from Linux's topology files."""
    path = f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return {cpu}
    out = {cpu}
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _pin_process(cpus: list[int]) -> None:
    """Every thread of this process onto ``cpus`` (a thread pool's threads included: Linux's
    sched_setaffinity takes thread ids). Threads started later inherit it."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:  # the thread ended meanwhile
            pass


def _worker(
    conn: Any,
    inherited: list[Any],
    tuner_pid: int,
    task: Any,
    inputs: list[Any],
    ref: list[Any],
    opt: MeasureOption,
    split: tuple[list[int], list[int]] | None = None,
) -> None:
    import faulthandler
    import signal

    faulthandler.disable()  # a crashing candidate is reported by the tuner, not dumped here
    # An interrupt is the tuner's to handle: Jupyter (and a terminal's Ctrl-C) signals the
    # whole process group, and each worker printed its own KeyboardInterrupt traceback into
    # the cell. The tuner stops the workers (close(), or end-of-file on their pipes).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The fork copied the tuner's ends of this worker's pipe and of the workers started before
    # it: closed here, so that this worker reads end-of-file when the tuner dies (kept open,
    # they kept every worker of a killed tuner alive, waiting on a pipe it held itself).
    for end in inherited:
        end.close()
    from ..build import build
    from .features import loop_features

    module = None
    while True:
        try:
            # Any other process forked from the tuner may still hold its end: a worker whose
            # tuner is gone (re-parented) stops too.
            while not conn.poll(1.0):
                if os.getppid() != tuner_pid:
                    return
            msg = conn.recv()
        except EOFError:
            return
        if msg[0] == "stop":
            return
        if msg[0] == "build":
            if split is not None:  # off the CPUs of the timed runs
                _pin_process(split[1])
            config, known, hint, feats_hint = msg[1], msg[2], msg[3], msg[4]
            start = time.perf_counter()
            try:
                s, args = task.instantiate(config)
                # the tuner's loop features of this config, where it computed them (the same
                # function of the same schedule): not computed again here
                feats = list(feats_hint) if feats_hint is not None else loop_features(s, args)
                # the tuner's hash of this config, computed in the process this one was
                # forked from (the same code): no second fingerprint of the lowered function
                sched = hint or schedule_hash(s, args, task.target)
            except Exception as err:  # the candidate's failure, reported
                conn.send(("built", INSTANTIATE_ERROR, _describe(err), [], 0.0, "", False))
                continue
            if sched in known:  # that code was measured already: no build
                conn.send(("built", OK, "", feats, time.perf_counter() - start, sched, True))
                continue
            try:
                module = build(s, args, target=task.target)
            except Exception as err:
                conn.send(("built", BUILD_ERROR, _describe(err), feats, 0.0, sched, False))
                continue
            conn.send(("built", OK, "", feats, time.perf_counter() - start, sched, False))
        elif msg[0] == "measure":
            best = msg[1]
            if split is not None:  # the timed run's own CPUs, nothing else on them
                _pin_process(split[0])
            start = time.perf_counter()

            def reply(*answer: Any, start: float = start) -> None:
                conn.send(("measured", *answer, time.perf_counter() - start))

            try:
                outs = _outputs(task)
                _run(module, task, inputs, outs)
                pairs = list(zip(outs, ref, strict=True)) if opt.check else []
                if not all(_close(g, w) for g, w in pairs):
                    worst = max(float(np.max(np.abs(g - w))) for g, w in pairs)
                    reply(
                        WRONG_ANSWER,
                        f"outputs differ from the reference "
                        f"schedule's (max abs difference {worst:.3g})",
                        [],
                        False,
                    )
                    continue
                t0 = time.perf_counter()
                _run(module, task, inputs, outs)
                first = time.perf_counter() - t0
                if best is not None and first > opt.slow_factor * best:
                    reply(OK, "", [first], True)
                    continue
                # TVM's rule: `number` calls per timing, more where they would not last
                # min_repeat_ms
                number = max(
                    opt.number or 1, math.ceil(opt.min_repeat_ms / 1000.0 / max(first, 1e-9))
                )
                costs = []
                for _ in range(opt.repeat):
                    t0 = time.perf_counter()
                    for _ in range(number):
                        _run(module, task, inputs, outs)
                    costs.append((time.perf_counter() - t0) / number)
                reply(OK, "", costs, False)
            except Exception as err:
                reply(RUNTIME_ERROR, _describe(err), [], False)


def _describe(err: BaseException) -> str:
    text = f"{type(err).__name__}: {err}"
    if len(text) > 2000:
        text = text[:2000] + "..."
    return text or traceback.format_exc(limit=2)


class LocalRunner:
    """Builds candidates in ``n_parallel`` worker processes, measures them one at a time.

    Use as a context manager (the workers stop on exit). ``run(configs, best)`` returns one
    ``MeasureResult`` per configuration, in order; ``best`` is the best time so far (for
    cutting slow candidates short).

    Made without a task, with TVM's keywords (``LocalRunner(number=5, repeat=1,
    min_repeat_ms=0, timeout=10, cooldown_interval=0.1)``, TVM's defaults), it only describes
    the measurement, for ``measure_option(runner=...)``: ``option`` holds it, and the tuner
    starts the workers of each task. As in TVM, a timing is ``number`` calls (more where they
    would last less than ``min_repeat_ms``), ``repeat`` timings are taken, and the runner rests
    ``cooldown_interval`` seconds after each candidate. ``enable_cpu_cache_flush`` is accepted
    and has no effect (a warning says so).

    Example:
        >>> from pytvmbridge import autotvm
        >>> autotvm.LocalRunner(number=5, repeat=1)
        LocalRunner(timeout=10, number=5, repeat=1, min_repeat_ms=0, cooldown_interval=0.1)
    """

    def __init__(
        self,
        task: Any = None,
        n_parallel: int | None = None,
        option: MeasureOption | None = None,
        seed: int = 0,
        *,
        timeout: float | None = None,
        number: int | None = None,
        repeat: int | None = None,
        min_repeat_ms: float | None = None,
        cooldown_interval: float | None = None,
        enable_cpu_cache_flush: bool = False,
    ) -> None:
        from ..error import TVMTypeError

        tvm_settings = {
            "timeout": timeout,
            "number": number,
            "repeat": repeat,
            "min_repeat_ms": min_repeat_ms,
            "cooldown_interval": cooldown_interval,
        }
        given = sorted(k for k, v in tvm_settings.items() if v is not None)
        if isinstance(task, (int, float)) and not isinstance(task, bool):
            raise TVMTypeError(
                "LocalRunner takes a tuning task, or TVM's settings by keyword (timeout=, "
                f"number=, repeat=, min_repeat_ms=, cooldown_interval=); got {task!r} as its "
                "first argument"
            )
        self.task = task
        # schedule_hash values already measured: a candidate that builds one of them is
        # answered as a duplicate without compiling (the tuner sets this before each run).
        self.known_schedules: set[str] = set()
        # config key (JSON, sorted keys) -> its schedule_hash, where the tuner computed it
        self.schedule_hints: dict[str, str] = {}
        # config key -> its loop features (features.loop_features), where the tuner has them
        self.feature_hints: dict[str, list[float]] = {}
        self._workers: list[tuple[Any, Any] | None] = []
        self._busy: set[int] = set()
        if task is None:
            # TVM's form: a description of the measurement (its defaults are TVM's), no workers
            if n_parallel is not None:
                raise TVMTypeError(
                    "LocalRunner without a task takes no n_parallel (TVM's form: the builder "
                    "says how many candidates are built at once, LocalBuilder(n_parallel=...))"
                )
            if enable_cpu_cache_flush:
                warnings.warn(
                    "LocalRunner: enable_cpu_cache_flush has no effect in pytvmbridge (each "
                    "timing repeats the call on warm caches)",
                    stacklevel=2,
                )
            defaults = {
                "timeout": 10,
                "number": 4,
                "repeat": 3,
                "min_repeat_ms": 0,
                "cooldown_interval": 0.1,
            }
            settings = {k: defaults[k] if v is None else v for k, v in tvm_settings.items()}
            # checked here too, so that the error names LocalRunner, where they were given
            limits = {
                "timeout": (0, True, False, MAX_WAIT_S),
                "number": (1, False, True, None),
                "repeat": (1, False, True, None),
                "min_repeat_ms": (0, False, False, MAX_WAIT_S * 1000.0),
                "cooldown_interval": (0, False, False, MAX_WAIT_S),
            }
            for k, (low, strict, integer, high) in limits.items():
                _check_setting("LocalRunner", k, settings[k], low, strict, integer, high)
            self.option = dataclasses.replace(option or MeasureOption(), **settings)
            self.n_parallel = 1
            self.overlap, self.split = False, None
            return
        if given:
            raise TVMTypeError(
                f"LocalRunner(task, ...) takes its settings as option=MeasureOption(...), not "
                f"TVM's keywords ({', '.join(given)}): those describe a runner without a task, "
                "for autotvm.measure_option(runner=...)"
            )
        self.option = option or MeasureOption()
        self.n_parallel = max(1, n_parallel or min(4, os.cpu_count() or 1))
        cached = getattr(task, "_measure_data", None)
        if cached is None or cached[0] != (seed, self.option.check):
            inputs = make_inputs(task, seed)
            ref = reference_outputs(task, inputs) if self.option.check else []
            cached = task._measure_data = ((seed, self.option.check), inputs, ref)
        self.inputs, self.ref = cached[1], cached[2]
        self._ctx = mp.get_context("fork")
        # With overlap_builds, two sets of n_parallel workers: one builds the next batch while
        # the other's candidates (each held built in its worker) are measured. Where CPUs are
        # to spare, the timed runs get the first get_num_threads() of them and the builds and
        # this process's own work (the next proposals, made during a measurement) the rest.
        from .. import get_num_threads

        split = cpu_split(get_num_threads())
        want = self.option.overlap_builds
        self.overlap = bool(split) if want is None else bool(want)
        self.split = split if self.overlap else None
        self._workers = [None] * self.n_parallel * (2 if self.overlap else 1)

    def __repr__(self) -> str:
        if self.task is not None:
            return f"LocalRunner({self.task!r}, n_parallel={self.n_parallel})"
        o = self.option
        return (
            f"LocalRunner(timeout={o.timeout!r}, number={o.number!r}, repeat={o.repeat!r}, "
            f"min_repeat_ms={o.min_repeat_ms!r}, cooldown_interval={o.cooldown_interval!r})"
        )

    def _need_task(self) -> None:
        if self.task is None:
            from ..error import TVMValueError

            raise TVMValueError(
                "this LocalRunner has no task: it describes how to measure (TVM's form); "
                "give it to a tuner as autotvm.measure_option(runner=...), or make "
                "LocalRunner(task, ...) to measure configurations yourself"
            )

    def __enter__(self) -> LocalRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for k in range(len(self._workers)):
            self._stop(k, graceful=True)

    def __del__(self) -> None:
        # A runner dropped without close(): its workers stopped and reaped now (they were left
        # as zombies, their pipes open, until the next runner started).
        try:
            for k in range(len(getattr(self, "_workers", ()))):
                self._stop(k)
        except Exception:  # interpreter shutdown: multiprocessing may be gone already
            pass

    def _start(self, k: int) -> tuple[Any, Any]:
        parent, child = self._ctx.Pipe()
        inherited = [parent] + [w[1] for w in self._workers if w is not None]
        proc = self._ctx.Process(
            target=_worker,
            args=(
                child,
                inherited,
                os.getpid(),
                self.task,
                self.inputs,
                self.ref,
                self.option,
                self.split,
            ),
            daemon=True,
        )
        with warnings.catch_warnings():
            # JAX warns on any fork once it is loaded; the worker never touches JAX.
            warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called")
            proc.start()
        child.close()
        self._workers[k] = (proc, parent)
        return proc, parent

    def _stop(self, k: int, graceful: bool = False) -> None:
        w = self._workers[k]
        if w is None:
            return
        proc, conn = w
        if graceful and proc.is_alive():
            try:
                conn.send(("stop",))
                proc.join(1.0)
            except (OSError, BrokenPipeError):
                pass
        if proc.is_alive():
            proc.kill()
            proc.join(5.0)
        conn.close()
        self._workers[k] = None

    def _ask(
        self,
        k: int,
        msg: tuple[Any, ...],
        timeout: float,
        meanwhile: Callable[[], None] | None = None,
    ) -> tuple[Any, ...]:
        """Sends ``msg`` to worker k and waits for its answer, running ``meanwhile`` (if
        given) once the worker has it; a dead or silent worker is replaced and the answer is
        an error tuple ``("failed", code, message)``. An exception of ``meanwhile`` is raised
        once the answer is in (or the worker replaced)."""
        w = self._workers[k] or self._start(k)
        proc, conn = w
        deadline = time.monotonic() + timeout
        raised: BaseException | None = None
        answered = False
        try:
            conn.send(msg)
            if meanwhile is not None:
                try:
                    meanwhile()
                except BaseException as err:  # re-raised below, the worker's answer read first
                    raised = err
            if _poll(conn, deadline - time.monotonic()):
                answer = conn.recv()
                answered = True
                if raised is not None:
                    raise raised
                return answer
            code, text = TIMEOUT, f"no answer within {timeout:g} s (killed)"
        except (EOFError, OSError, BrokenPipeError):
            code, text = CRASH, "the worker process died"
        except BaseException:
            # Interrupted (Ctrl-C) between the request and its answer: the worker's answer
            # would be read as the answer to its next request (a "measured" reply unpacked as
            # a build's), so the worker goes.
            if not answered:
                self._stop(k)
            raise
        proc.join(0.05)
        if not proc.is_alive() and code == TIMEOUT:
            code, text = CRASH, "the worker process died"
        if code == CRASH:
            text += f" (exit code {proc.exitcode})"
        self._stop(k)
        if raised is not None:
            raise raised
        return ("failed", code, text)

    def run(self, configs: list[Any], best: float | None = None) -> list[MeasureResult]:
        self._need_task()
        results: list[MeasureResult] = []
        for lo in range(0, len(configs), self.n_parallel):
            results += self.collect(self.submit(configs[lo : lo + self.n_parallel]), best)
            valid = [r.cost for r in results if r.error == OK and not r.cut_short]
            if valid:
                best = min([*([best] if best else []), *valid])
        return results

    def submit(self, configs: list[Any]) -> Any:
        """Starts building ``configs`` (at most ``n_parallel``, one per worker) and returns at
        once: the caller prepares its next proposals while the workers compile. ``collect``
        then waits for the builds and measures the candidates one at a time."""
        self._need_task()
        if len(configs) > self.n_parallel:
            from ..error import TVMValueError

            raise TVMValueError(
                f"submit: configs has {len(configs)} entries, at most n_parallel "
                f"({self.n_parallel}) allowed"
            )
        results = [MeasureResult(config=c) for c in configs]
        free = [k for k in range(len(self._workers)) if k not in self._busy]
        if len(free) < len(configs):
            from ..error import TVMValueError

            raise TVMValueError("submit: every worker holds a batch not collected yet")
        sent = []  # (index in the batch, worker)
        for i, c in enumerate(configs):  # phase 1: every worker builds, in parallel
            k = free[i]
            w = self._workers[k] or self._start(k)
            try:
                key = json.dumps(c, sort_keys=True)
                hint, feats = self.schedule_hints.get(key), self.feature_hints.get(key)
                w[1].send(("build", c, self.known_schedules, hint, feats))
                sent.append((i, k))
                self._busy.add(k)
            except (OSError, BrokenPipeError):
                results[i].error, results[i].error_msg = CRASH, "the worker process died"
                self._stop(k)
        return results, sent, time.monotonic() + self._build_timeout()

    def _build_timeout(self) -> float:
        o = self.option
        return o.build_timeout if o.build_timeout is not None else o.timeout

    def collect(
        self,
        pending: Any,
        best: float | None = None,
        measure: bool = True,
        meanwhile: Callable[[], None] | None = None,
    ) -> list[MeasureResult]:
        """The results of a ``submit``: its builds waited for, then each built candidate
        measured alone (no build of this batch runs meanwhile: every worker has answered).
        ``measure=False`` only waits for the builds (a batch the tuner no longer needs).

        ``meanwhile`` (with ``overlap``): the caller's own work, run once while the first
        candidate is measured (or, with nothing to measure, before returning), such as
        proposing and submitting the next batch. Where CPUs are split (``split``), the calling
        thread runs on the build CPUs until this returns."""
        results, sent, deadline = pending
        pinned = None
        if self.split is not None and measure:
            try:
                pinned = os.sched_getaffinity(0)
                os.sched_setaffinity(0, self.split[1])
            except OSError:
                pinned = None
        try:
            return self._collect(results, sent, deadline, best, measure, meanwhile)
        finally:
            self._busy.difference_update(k for _, k in sent)
            if pinned is not None:
                os.sched_setaffinity(0, pinned)

    def _collect(
        self,
        results: list[MeasureResult],
        sent: list[tuple[int, int]],
        deadline: float,
        best: float | None,
        measure: bool,
        meanwhile: Callable[[], None] | None = None,
    ) -> list[MeasureResult]:
        built = []
        unread = [k for _, k in sent]  # workers whose build answer is still in their pipe
        try:
            self._read_builds(results, sent, deadline, measure, built, unread)
        except BaseException:
            # Interrupted while waiting: an answer left unread would be taken later as the
            # answer to another request, so the workers that still owe one go.
            for k in unread:
                self._stop(k)
            raise
        self._measure_built(results, built, best, meanwhile)
        return results

    def _read_builds(
        self,
        results: list[MeasureResult],
        sent: list[tuple[int, int]],
        deadline: float,
        measure: bool,
        built: list[tuple[int, int]],
        unread: list[int],
    ) -> None:
        """Phase 1 of ``_collect``: each worker's build answer read into ``results`` (``built``
        gets the candidates to measure; ``unread`` loses each worker as it is dealt with)."""
        for i, k in sent:
            w = self._workers[k]
            if w is None:  # stopped meanwhile
                results[i].error, results[i].error_msg = CRASH, "the worker process died"
                unread.remove(k)
                continue
            proc, conn = w
            remaining = max(0.0, deadline - time.monotonic())
            try:
                ready = _poll(conn, remaining)
                answer = conn.recv() if ready else None
            except (EOFError, OSError):
                answer, ready = None, True
            unread.remove(k)  # read, or (no answer) stopped just below
            if answer is None:
                code = CRASH if ready else TIMEOUT
                proc.join(0.05)
                if code == TIMEOUT and not proc.is_alive():
                    code = CRASH
                results[i].error = code
                results[i].error_msg = (
                    f"the worker process died while building (exit code {proc.exitcode})"
                    if code == CRASH
                    else f"building took longer than {self._build_timeout():g} s (killed)"
                )
                self._stop(k)
                continue
            _, code, text, feats, build_s, sched, duplicate = answer
            results[i].error, results[i].error_msg = code, text
            results[i].features, results[i].build_s = feats, build_s
            results[i].schedule, results[i].duplicate = sched, duplicate
            if code == OK and not duplicate and measure:
                built.append((i, k))

    def _measure_built(
        self,
        results: list[MeasureResult],
        built: list[tuple[int, int]],
        best: float | None,
        meanwhile: Callable[[], None] | None,
    ) -> None:
        """Phase 2 of ``_collect``: the built candidates measured one at a time."""
        for i, k in built:  # phase 2: one at a time
            start = time.perf_counter()
            answer = self._ask(k, ("measure", best), self.option.timeout, meanwhile)
            meanwhile = None
            results[i].measure_s = time.perf_counter() - start
            if answer[0] == "measured":
                # the worker's own clock: the caller's work may have outlasted the measurement
                results[i].measure_s, answer = answer[-1], answer[:-1]
            if answer[0] == "failed":
                results[i].error, results[i].error_msg = answer[1], answer[2]
                continue
            _, code, text, costs, cut = answer
            results[i].error, results[i].error_msg = code, text
            results[i].costs, results[i].cut_short = costs, cut
            if code == OK and not cut and (best is None or min(costs) < best):
                best = float(np.median(costs))
            if self.option.cooldown_interval:
                time.sleep(self.option.cooldown_interval)
        if meanwhile is not None:  # nothing was measured
            meanwhile()


def measure_in_process(
    task: Any,
    configs: list[Any],
    rounds: int = 5,
    min_repeat_ms: float = 20.0,
    seed: int = 0,
    settle_s: float = 0.05,
) -> list[list[float]]:
    """Seconds per call of each configuration, one time per round, measured in this process
    with the configurations interleaved (each round times every configuration once, starting
    from a different one), so that a change of load or clock hits every configuration alike.

    This is how a tuner's final choice is confirmed: its best candidates and the analytical
    schedule, built and run the way the user's process will run them (this process's thread
    pool, fresh arrays), rather than trusting the minimum of many noisy in-worker timings
    (the winner's curse). Only configurations already measured valid should be passed: they
    run here, not in a worker.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import autotvm
        >>> def add(n):
        ...     A = tvm.placeholder((n,), name="A")
        ...     return [A, tvm.compute((n,), lambda i: A[i] + 1.0, name="B")]
        >>> task = autotvm.auto_task(add, (4096,))
        >>> times = measure_in_process(task, [task.space.default()], rounds=2, min_repeat_ms=1)
        >>> len(times), len(times[0]), times[0][0] > 0
        (1, 2, True)
    """
    from ..build import build

    inputs = make_inputs(task, seed)
    runs = []
    for config in configs:
        if hasattr(task, "build"):  # a task that builds itself (a whole graph, cached)
            module = task.build(config)
        else:
            s, args = task.instantiate(config)
            module = build(s, args, target=task.target)
        outs = _outputs(task)
        _run(module, task, inputs, outs)  # warm: page faults, first-call setup
        t0 = time.perf_counter()
        _run(module, task, inputs, outs)
        one = max(time.perf_counter() - t0, 1e-9)
        runs.append((module, outs, max(1, math.ceil(min_repeat_ms / 1000.0 / one))))
    times: list[list[float]] = [[] for _ in configs]
    for r in range(rounds):
        for j in range(len(runs)):
            k = (j + r) % len(runs)
            module, outs, number = runs[k]
            time.sleep(settle_s)  # the previous configuration's threads go idle
            _run(module, task, inputs, outs)
            t0 = time.perf_counter()
            for _ in range(number):
                _run(module, task, inputs, outs)
            times[k].append((time.perf_counter() - t0) / number)
    return times
