"""Tuners: random, grid, and an evolutionary search guided by a learned cost model.

Every tuner proposes batches of unmeasured configurations and learns from the results;
``Tuner.tune`` runs the loop: propose, measure (``LocalRunner`` or ``runner="ray"``), log,
update, with early stopping and a progress bar, calling TVM-style ``callbacks`` (``callback``
module) after each batch. ``EvolutionaryTuner`` (also ``XGBTuner``)
keeps the measured candidates, breeds new ones from the best (mutation and crossover, plus
some random ones), ranks them with an XGBoost model trained on the measurements so far
(features: the candidate's loop structure and its knob values; target: throughput relative to
the best) and measures the most promising; the model is retrained after every batch.

Example:
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge import autotvm
    >>> def add(n):
    ...     A = tvm.placeholder((n,), name="A")
    ...     return [A, tvm.compute((n,), lambda i: A[i] + 1.0, name="B")]
    >>> task = autotvm.auto_task(add, (4096,))
    >>> best = autotvm.RandomTuner(task, seed=0).tune(2, n_parallel=1, progress=False)
    >>> best["error"], len(best["costs"]) > 0
    (0, True)
"""

from __future__ import annotations

import errno
import json
import math
import os
import random
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..error import TVMTypeError, TVMValueError
from . import record
from .callback import _LogToFile, _ProgressBar, check_si_prefix
from .features import FEATURE_NAMES, loop_features
from .measure import (
    LocalRunner,
    MeasureInput,
    MeasureOption,
    MeasureResult,
    check_measure_option,
    measure_in_process,
    resolve_measure_option,
    schedule_hash,
)

__all__ = [
    "EvolutionaryTuner",
    "GridSearchTuner",
    "RandomTuner",
    "Tuner",
    "XGBTuner",
    "tune_tasks",
]


def _key(config: Any) -> str:
    return json.dumps(config, sort_keys=True)


class Tuner:
    """Base tuner: ``next_batch(n)`` proposes, ``update(results)`` learns, ``tune`` loops."""

    def __init__(self, task: Any, seed: int | None = 0) -> None:
        self.task = task
        self.rng = random.Random(seed)
        self.seed = seed
        self.visited: set[str] = set()
        self.history: list[tuple[Any, float]] = []  # (config, cost; inf for errors)
        self.best_cost = math.inf
        self.best_config: Any = None
        self.best_record: dict[str, Any] | None = None
        self.trials = 0
        self.duplicates = 0  # proposals skipped: their code was measured already
        self.verified: dict[str, Any] | None = None  # the last verify(): configs, medians, chosen
        # The record apply_history_best applies from the log last resumed (its latest
        # verification's choice, else its cheapest valid record): what tuning returns when it
        # measures nothing new, so that the two agree (best_record is the cheapest of every
        # record seen, which can be an unverified trial the verification did not choose).
        self.resumed_best: dict[str, Any] | None = None
        self._schedules: dict[str, str] = {}  # config key -> hash of the schedule measured
        self._records: dict[str, dict[str, Any]] = {}  # config key -> its (last) record
        self._hash_of: dict[str, str | None] = {}  # config key -> schedule_hash (None: fails)
        self._seen_schedules: set[str] = set()  # schedules measured or about to be
        self._pending: set[str] = set()  # config keys proposed, not yet measured
        self._proposed_schedules: set[str] = set()  # hashes of the code of every proposal

    # next_batch calls one proposal may take when its candidates repeat measured code (a
    # space whose remaining points all do then ends the search)
    PROPOSE_ROUNDS = 50

    # --- to override ---
    def next_batch(self, n: int) -> list[Any]:
        raise NotImplementedError

    def has_next(self) -> bool:
        return len(self.visited) < len(self.task.space)

    def update(self, configs: list[Any], costs: list[float]) -> None:
        """Learn from measured configurations (``inf`` cost: an error)."""

    # --- shared ---
    def _fresh(self, config: Any) -> Any | None:
        """The canonical form of ``config`` if it was not measured nor is being measured
        (else ``None``)."""
        try:
            config = self.task.canonical(config)
        except ValueError:
            return None
        key = _key(config)
        if key in self.visited or key in self._pending:
            return None
        return config

    def _propose(self, n: int) -> list[Any]:
        """Up to ``n`` configurations from ``next_batch``, marked as being measured, none of
        which builds code measured or proposed already.

        Different configurations often build the same code (a knob that does nothing at this
        shape, a tile size repaired to the same one). Left to the runner, such a proposal
        still takes a worker: it lowers and hashes there and answers "duplicate" while the
        other worker of its batch builds alone, so a batch with a duplicate yields one trial
        for the wall time of two. Hashing here (the lowering the compile cache fingerprints,
        a few milliseconds, against a build's tens) lets every submitted slot build new code;
        the runner is handed the hashes so its workers do not compute them again. Only for
        the automatic scheduler's space (``kind == "auto"``), whose candidates this process
        instantiates for the cost model's features anyway: a template is user code that may
        crash or hang, so it runs in the workers alone."""
        out: list[Any] = []
        in_process = getattr(self.task, "kind", None) == "auto"
        for _ in range(self.PROPOSE_ROUNDS if in_process else 1):
            configs = self.next_batch(n - len(out))
            if not configs:
                break
            for c in configs:
                key = _key(c)
                h = self._schedule_of(c) if in_process else None
                if h is not None and (h in self._seen_schedules or h in self._proposed_schedules):
                    self.visited.add(key)
                    self.duplicates += 1
                    continue
                if h is not None:
                    self._proposed_schedules.add(h)
                self._pending.add(key)
                out.append(c)
            if len(out) >= n:
                break
        return out

    def _share_schedules(self, runner: Any) -> None:
        if hasattr(runner, "known_schedules"):
            # The runner still skips code measured already before compiling (a proposal made
            # without a hash, or a runner used without this tuner), and takes the hashes
            # computed here instead of lowering again.
            runner.known_schedules = set(self._seen_schedules)
        if hasattr(runner, "schedule_hints"):
            runner.schedule_hints = {
                k: h for k in self._pending if (h := self._hash_of.get(k)) is not None
            }
        if hasattr(runner, "feature_hints"):
            # the loop features the cost model computed for these proposals: the workers
            # record them instead of lowering each candidate once more
            loop = getattr(self, "_loop_features", {})
            runner.feature_hints = {k: f for k in self._pending if (f := loop.get(k)) is not None}

    def _observe(self, config: Any, cost: float, rec: dict[str, Any] | None) -> None:
        self.visited.add(_key(config))
        if rec is not None:
            self._records[_key(config)] = rec
            if rec.get("schedule"):
                self._schedules[_key(config)] = rec["schedule"]
                self._seen_schedules.add(rec["schedule"])
        self.history.append((config, cost))
        if cost < self.best_cost:
            self.best_cost, self.best_config, self.best_record = cost, config, rec

    def _schedule_of(self, config: Any) -> str | None:
        """``schedule_hash`` of the code ``config`` builds (``None`` if it cannot be made)."""
        key = _key(config)
        if key not in self._hash_of:
            try:
                s, args = self.task.instantiate(config)
                self._hash_of[key] = schedule_hash(s, args, self.task.target)
            except Exception:  # the runner reports it as an error record
                self._hash_of[key] = None
        return self._hash_of[key]

    def resume(self, log_file: str) -> int:
        """Takes the records of this workload (this target and CPU) from ``log_file`` as
        already measured: they are not measured again, and the model learns from them.
        Returns how many there were."""
        configs, costs = [], []
        mine = []  # this workload's records on this target and CPU, as apply_history_best sees
        for r in record.load(log_file):
            if r["workload"] != self.task.workload_key:
                continue
            if not record._matches_target(r, self.task.target, other_cpus=False):
                continue
            mine.append(r)
            try:
                config = self.task.canonical(r["config"])
            except ValueError:
                continue
            cost = record.record_cost(r)
            self._observe(config, cost, r)
            configs.append(config)
            costs.append(cost)
        if configs:
            self.update(configs, costs)
        self.resumed_best = self._applied(mine)
        return len(configs)

    def _applied(self, records: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The record of this task ``apply_history_best`` applies from ``records`` (its rule,
        ``record.best_records``), or ``None`` where it applies none: no valid record, or (a
        template) a best record whose configuration the template's knobs no longer allow
        (``ApplyHistoryBest.lookup`` then builds the default schedule)."""
        best = record.best_records(records, self.task.target).get(self.task.workload_key)
        if best is not None and self.task.kind == "template":
            try:
                self.task.canonical(best["config"])
            except ValueError:
                return None
        return best

    def tune(
        self,
        n_trial: int,
        measure_option: MeasureOption | dict[str, Any] | None = None,
        early_stopping: int | None = None,
        log_file: str | os.PathLike[str] | None = None,
        n_parallel: int | None = None,
        runner: Any = "local",
        progress: bool = True,
        resume: bool = True,
        verify: bool = True,
        time_budget_s: float | None = None,
        callbacks: Sequence[Callable[[Any, list[Any], list[Any]], Any]] = (),
        si_prefix: str = "G",
        _shared_bar: Any = None,
        _round: bool = False,
    ) -> dict[str, Any] | None:
        """Measure up to ``n_trial`` new candidates; returns the best valid record (or ``None``).

        ``log_file``: records are appended there (and, with ``resume``, those already there
        for this workload are not measured again). ``early_stopping``: stop after that many
        trials without improvement. ``runner``: ``"local"`` (worker processes on this machine),
        ``"ray"`` (a Ray cluster, see ``ray_runner``), or a runner object with
        ``run(configs, best)``. ``verify``: end with :meth:`verify` (the best candidates and the
        analytical schedule re-measured together in this process). ``time_budget_s``: no new
        batch is proposed once that many seconds of searching have passed (the batches under
        way are measured; the verification is not counted). One call with a budget keeps the
        pipeline full; calling ``tune`` again and again for one batch each (to check a clock
        between them) made every proposal wait for the last batch's measurement and the
        workers wait for every proposal.

        TVM's call works as in TVM: ``tune(n_trial=..., measure_option=autotvm.measure_option(
        builder=..., runner=...), early_stopping=..., callbacks=[...], si_prefix="G")``. Each
        callback is called as ``callback(tuner, inputs, results)`` after each measured batch
        (``MeasureInput`` and ``MeasureResult`` lists); ``callback.log_to_file`` also receives
        the verification's records, and ``callback.progress_bar`` replaces the tuner's own bar.

        Example:
            >>> import os, tempfile
            >>> import pytvmbridge as tvm
            >>> from pytvmbridge import autotvm
            >>> def add(n):
            ...     A = tvm.placeholder((n,), name="A")
            ...     return [A, tvm.compute((n,), lambda i: A[i] + 1.0, name="B")]
            >>> log = os.path.join(tempfile.mkdtemp(), "add.json")
            >>> tuner = autotvm.tuner.RandomTuner(autotvm.auto_task(add, (4096,)))
            >>> best = tuner.tune(
            ...     n_trial=2,
            ...     measure_option=autotvm.measure_option(
            ...         builder=autotvm.LocalBuilder(n_parallel=1),
            ...         runner=autotvm.LocalRunner(number=5, repeat=1, cooldown_interval=0)),
            ...     callbacks=[autotvm.callback.log_to_file(log)], verify=False)
            >>> [len(r["costs"]) for r in autotvm.record.load(log)]
            [1, 1]
        """
        measure_option, n_parallel = resolve_measure_option(measure_option, n_parallel)
        _check_tune_args(n_trial, n_parallel, early_stopping, measure_option, log_file)
        callbacks = _check_callbacks(callbacks, si_prefix)
        if time_budget_s is not None and not time_budget_s >= 0:
            raise TVMValueError(f"time_budget_s must be >= 0 or None, got {time_budget_s!r}")
        deadline = None if time_budget_s is None else time.monotonic() + time_budget_s

        def in_time() -> bool:
            return deadline is None or time.monotonic() < deadline

        log_file = os.fspath(log_file) if log_file is not None else None
        if log_file and resume:
            self.resume(log_file)
        own_runner = isinstance(runner, str)
        if runner == "local":
            runner = LocalRunner(
                self.task, n_parallel=n_parallel, option=measure_option, seed=self.seed or 0
            )
        elif runner == "ray":
            from .ray_runner import RayRunner

            runner = RayRunner(
                self.task, n_parallel=n_parallel, option=measure_option, seed=self.seed or 0
            )
        elif isinstance(runner, str):
            raise TVMValueError(f"runner must be 'local', 'ray' or a runner object, got {runner!r}")
        # tune_tasks' rounds share its one bar over the whole budget (a bar per round started
        # again from 0 every few trials, with no ETA worth reading)
        # a progress_bar callback is TVM's bar: the tuner's own is not drawn beside it
        progress = progress and not any(isinstance(cb, _ProgressBar) for cb in callbacks)
        bar = _shared_bar if _shared_bar is not None else _bar(self.task, n_trial, progress)
        batch = getattr(runner, "n_parallel", 1)
        # With a runner that has submit/collect, a batch's builds run while this process
        # makes the next proposals (cost model fit, features) and while it logs the last
        # results, so the workers do not wait for the tuner; each candidate is still measured
        # alone, once every build of its batch has answered.
        pipelined = hasattr(runner, "submit") and hasattr(runner, "collect")
        last_improvement = 0
        done = 0
        idle_batches = 0
        self._pending = set()
        self._proposed_schedules = set()
        inflight: Any = None
        inflight_n = 0
        try:
            while True:
                if inflight is None:
                    if done >= n_trial or not self.has_next() or not in_time():
                        break
                    configs = self._propose(min(batch, n_trial - done))
                    if not configs:
                        break
                    self._share_schedules(runner)
                    if pipelined:
                        inflight, inflight_n = runner.submit(configs), len(configs)
                    else:
                        inflight, inflight_n = configs, len(configs)
                upcoming: list[Any] = []
                more = pipelined and done + inflight_n < n_trial and self.has_next() and in_time()
                overlap = more and getattr(runner, "overlap", False)
                if more and not overlap:
                    upcoming = self._propose(min(batch, n_trial - done - inflight_n))
                best = self.best_cost if math.isfinite(self.best_cost) else None
                ahead: Any = None

                def build_ahead(n: int = min(batch, n_trial - done - inflight_n)) -> None:
                    # overlap_builds: while this batch's first candidate is measured, the next
                    # batch is proposed and submitted; it builds while the rest are measured
                    nonlocal ahead
                    configs = self._propose(n)
                    if configs:
                        self._share_schedules(runner)
                        ahead = runner.submit(configs)

                try:
                    if overlap:
                        results = runner.collect(inflight, best, meanwhile=build_ahead)
                    elif pipelined:
                        results = runner.collect(inflight, best)
                    else:
                        results = runner.run(inflight, best)
                except BaseException:
                    if ahead is not None:
                        runner.collect(ahead, None, measure=False)
                    raise
                inflight = None
                if ahead is not None:
                    inflight, inflight_n = ahead, len(ahead[0])
                for r in results:
                    self._pending.discard(_key(r.config))
                    if r.schedule and not r.duplicate and r.error == 0:
                        self._seen_schedules.add(r.schedule)
                if upcoming:  # its builds start now, while these results are logged
                    self._share_schedules(runner)
                    inflight, inflight_n = runner.submit(upcoming), len(upcoming)
                for r in results:
                    if r.duplicate:
                        self.visited.add(_key(r.config))
                        self.duplicates += 1
                results = [r for r in results if not r.duplicate]
                if not results:
                    idle_batches += 1
                    if idle_batches >= 100:  # a space whose remaining points all repeat
                        break
                    continue
                idle_batches = 0
                recs = [self._record(r) for r in results]
                if log_file:
                    record.append(log_file, recs)
                before = self.best_cost
                for r, rec in zip(results, recs, strict=True):
                    self._observe(r.config, record.record_cost(rec), rec)
                self.update([r.config for r in results], [record.record_cost(x) for x in recs])
                if callbacks:  # TVM's order: after the tuner learned from the batch
                    t = self.task
                    inputs = [MeasureInput(t.target, t, r.config) for r in results]
                    for cb in callbacks:
                        cb(self, inputs, results)
                done += len(results)
                self.trials += len(results)
                if self.best_cost < before:
                    last_improvement = done
                if bar is not None:
                    bar.update(len(results))
                    bar.set_postfix(best_gflops=f"{self.best_gflops:.2f}")
                if early_stopping is not None and done - last_improvement >= early_stopping:
                    break
        finally:
            if inflight is not None and pipelined:
                for r in runner.collect(inflight, None, measure=False):  # not needed now
                    self._pending.discard(_key(r.config))
            if bar is not None and _shared_bar is None:
                bar.close()
            if own_runner:
                runner.close()
            if not _round:  # tune_tasks' rounds: the bar ends with the last round
                _close_bars(callbacks)
        if verify:
            chosen = self.verify(log_file)
            _log_verification(self, callbacks)
            return chosen
        if done == 0 and log_file and resume:
            # nothing measured: the log's choice, which apply_history_best applies
            return self.resumed_best
        return self.best_record

    def verify(
        self,
        log_file: str | os.PathLike[str] | None = None,
        top_k: int = 3,
        rounds: int = 7,
        min_repeat_ms: float = 20.0,
        margin: float = 0.02,
        settle_s: float = 0.05,
    ) -> dict[str, Any] | None:
        """Confirm the choice: re-measure the analytical point and the ``top_k`` best candidates
        together in this process (:func:`~.measure.measure_in_process`: interleaved rounds),
        and keep the analytical point unless a candidate beats it round by round.

        The search's own minimum is biased (of many noisy timings, the luckiest wins), so
        without this a "tuned" schedule can be slower than the analytical one when timed
        again. A candidate is compared with the analytical point within each round (the two
        timed a moment apart, under the same load): it is chosen only if the median of those
        paired ratios is below ``1 - margin`` *and* it was faster in all but a quarter of the
        rounds; of several such candidates the lowest median ratio wins. A candidate whose
        configuration no longer builds the schedule that was measured (its record's
        ``schedule`` hash) is left out with a warning: its timing says nothing about what its
        configuration builds now. The re-measurements are logged as records marked
        ``verified`` (the chosen one ``chosen``), which ``apply_history_best`` prefers. Returns
        the chosen record."""
        default = self.task.canonical(self.task.space.default())
        ranked: list[Any] = []
        seen = {_key(default)}
        for config, cost in sorted(self.history, key=lambda h: h[1]):
            if not math.isfinite(cost) or _key(config) in seen or len(ranked) >= top_k:
                continue
            seen.add(_key(config))
            if self._replays(config):
                ranked.append(config)
        # With no candidate left to compare (every other one failed, was cut short as much
        # slower, or no longer replays), the analytical point is still re-measured and recorded
        # as the choice, so that the log always says what this verification decided.
        configs = [default, *ranked]
        try:
            hashes = [self._schedule_of(c) or "" for c in configs]
            times = measure_in_process(
                self.task, configs, rounds, min_repeat_ms, self.seed or 0, settle_s
            )
        except Exception as err:  # a candidate that cannot be rebuilt here: keep the search's
            warnings.warn(f"verify: re-measuring {self.task.name} failed ({err})", stacklevel=2)
            return self.best_record
        medians = [float(np.median(t)) for t in times]
        ratios = [1.0]
        pick, best_ratio = 0, 1.0 - margin
        needed = rounds - rounds // 4
        for k in range(1, len(configs)):
            paired = [a / b for a, b in zip(times[k], times[0], strict=True)]
            ratio = float(np.median(paired))
            ratios.append(ratio)
            wins = sum(p < 1.0 for p in paired)
            if ratio < best_ratio and wins >= needed:
                pick, best_ratio = k, ratio
        batch = time.time()
        recs = []
        for k, (config, costs) in enumerate(zip(configs, times, strict=True)):
            result = MeasureResult(config=config, costs=costs, schedule=hashes[k])
            recs.append(self._record(result, verified=batch, chosen=k == pick))
        if log_file:
            record.append(os.fspath(log_file), recs)
        self.best_cost, self.best_config, self.best_record = (
            medians[pick],
            configs[pick],
            recs[pick],
        )
        self.verified = {
            "configs": configs,
            "medians": medians,
            "ratios": ratios,
            "chosen": pick,
            "schedules": hashes,
            "records": recs,
        }
        return self.best_record

    def _replays(self, config: Any) -> bool:
        """Whether ``config`` still builds the schedule its record says was measured."""
        measured = self._schedules.get(_key(config))
        if not measured:
            return True  # an older record without the hash: nothing to compare
        now = self._schedule_of(config)
        if now != measured:
            warnings.warn(
                f"verify: {self.task.name}: configuration {_key(config)} now builds schedule "
                f"{now}, not the measured {measured}; left out",
                stacklevel=3,
            )
            return False
        return True

    @property
    def best_gflops(self) -> float:
        if not math.isfinite(self.best_cost) or not self.task.flop:
            return 0.0
        return self.task.flop / self.best_cost / 1e9

    @property
    def best_flops(self) -> float:
        """TVM's ``best_flops``: floating-point operations per second of the best candidate
        (0 before a valid one)."""
        return self.best_gflops * 1e9

    def _record(
        self, r: MeasureResult, verified: float | None = None, chosen: bool = False
    ) -> dict[str, Any]:
        return record.from_result(self.task, r, verified, chosen)


def _bar(task: Any, total: int, progress: bool) -> Any:
    from .. import progress as progress_mod

    # Where no one watches (a pipe, a CI log) a redrawn bar is only a run of carriage returns:
    # the same rule as pytvmbridge.progress (a terminal, Jupyter, or PYTVMBRIDGE_PROGRESS=1).
    if not progress or not progress_mod.enabled() or not progress_mod._watched(None):
        return None
    # tqdm.auto (a widget in notebooks), as pytvmbridge.progress chooses it
    tqdm = progress_mod._tqdm_class()
    return tqdm(total=total, desc=f"tuning {task.name}", unit="trial", leave=False)


def _check_callbacks(callbacks: Any, si_prefix: Any) -> list[Any]:
    """``callbacks`` as a list, each callable (TVM's ``callbacks=[...]``), checked before any
    trial; ``si_prefix`` one of TVM's."""
    check_si_prefix(si_prefix)
    if callable(callbacks) or isinstance(callbacks, (str, bytes)):
        raise TVMTypeError(
            "callbacks must be a list of functions callback(tuner, inputs, results), got "
            f"{type(callbacks).__name__} (put it in a list)"
        )
    try:
        out = list(callbacks or ())
    except TypeError:
        raise TVMTypeError(
            "callbacks must be a list of functions callback(tuner, inputs, results), got "
            f"{type(callbacks).__name__}"
        ) from None
    for cb in out:
        if not callable(cb):
            raise TVMTypeError(
                f"callbacks must be functions callback(tuner, inputs, results), got {cb!r}"
            )
    return out


def _log_verification(tuner: Tuner, callbacks: Sequence[Any]) -> None:
    """The records of ``tuner``'s last verification to the ``log_to_file`` callbacks: a log
    written through them holds the choice ``tune`` returned (``apply_history_best`` takes the
    record the latest verification chose)."""
    recs = (tuner.verified or {}).get("records")
    if not recs or getattr(tuner, "_logged_verification", None) is recs:
        return
    tuner._logged_verification = recs  # type: ignore[attr-defined]
    for cb in callbacks:
        if isinstance(cb, _LogToFile):
            cb.write_records(recs)


def _close_bars(callbacks: Sequence[Any]) -> None:
    for cb in callbacks:
        if isinstance(cb, _ProgressBar):
            cb.close()


class RandomTuner(Tuner):
    """Uniformly random unmeasured configurations (repaired to valid points), after the
    space's default point (the analytical schedule: tuning starts from it)."""

    def next_batch(self, n: int) -> list[Any]:
        out: list[Any] = []
        seen: set[str] = set()
        if n > 0 and not self.history:
            default = self._fresh(self.task.space.default())
            if default is not None:
                out.append(default)
                seen.add(_key(default))
        for _ in range(50 * n + 50):
            if len(out) == n:
                break
            c = self._fresh(self.task.space.sample(self.rng))
            if c is not None and _key(c) not in seen:
                seen.add(_key(c))
                out.append(c)
        return out


class GridSearchTuner(Tuner):
    """Every configuration of the space in order (repaired points measured once)."""

    def __init__(self, task: Any, seed: int | None = 0) -> None:
        super().__init__(task, seed)
        self._grid = iter(task.space.grid())
        self._exhausted = False

    def has_next(self) -> bool:
        return not self._exhausted

    def next_batch(self, n: int) -> list[Any]:
        out: list[Any] = []
        seen: set[str] = set()
        while len(out) < n:
            c = next(self._grid, None)
            if c is None:
                self._exhausted = True
                break
            c = self._fresh(c)
            if c is not None and _key(c) not in seen:
                seen.add(_key(c))
                out.append(c)
        return out


class CostModel:
    """Predicts a candidate's relative throughput from its features (XGBoost; without xgboost
    installed, no prediction: every candidate scores the same)."""

    def __init__(self, seed: int | None = 0) -> None:
        self.seed = seed or 0
        self.model: Any = None

    def fit(self, x: np.ndarray, y: np.ndarray) -> None:
        try:
            import xgboost as xgb
        except ImportError:
            self.model = None
            return
        params = {
            "max_depth": 4,
            "eta": 0.2,
            "seed": self.seed,
            "nthread": 1,
            "verbosity": 0,
            "objective": "reg:squarederror",
        }
        # nthread=1 for the matrix too: by default it starts a thread per core, whose OpenMP
        # spin-waits cost the tuning loop tens of milliseconds per fit on a busy machine.
        data = xgb.DMatrix(x, label=y, nthread=1)
        self.model = xgb.train(params, data, num_boost_round=60)

    def predict(self, x: np.ndarray) -> np.ndarray:
        if self.model is None:
            return np.zeros(len(x))
        import xgboost as xgb

        return np.asarray(self.model.predict(xgb.DMatrix(x, nthread=1)))


class EvolutionaryTuner(Tuner):
    """Evolutionary search ranked by a cost model retrained as measurements arrive.

    ``population``: candidates bred per plan (at least three per planned trial); ``eps_random``:
    the share of each plan taken at random (exploration); ``min_train``: measurements before
    the model is trusted; ``plan_size``: how many ranked candidates one breeding round plans
    (AutoTVM's plan size): they are measured over the next batches, and the model is refit
    with everything measured when the plan runs out. Planning ahead instead of breeding and
    refitting after every batch of ``n_parallel`` candidates keeps the tuner's own work (the
    loop features of the bred candidates, the fit) a small part of each trial's time.
    """

    def __init__(
        self,
        task: Any,
        seed: int | None = 0,
        population: int = 24,
        eps_random: float = 0.2,
        min_train: int = 8,
        plan_size: int = 8,
    ) -> None:
        super().__init__(task, seed)
        self.population = population
        self.eps_random = eps_random
        self.min_train = min_train
        self.plan_size = max(1, plan_size)
        self.model = CostModel(seed)
        self._features: dict[str, list[float]] = {}
        self._loop_features: dict[str, list[float]] = {}  # the loop part of _features
        self._trained = False
        self._fitted_at = -1  # len(history) at the last fit
        self._plan: list[Any] = []

    def features(self, config: Any) -> list[float]:
        key = _key(config)
        f = self._features.get(key)
        if f is None:
            try:
                s, args = self.task.instantiate(config)
                f = loop_features(s, args)
                self._loop_features[key] = f
            except Exception:
                f = [0.0] * len(FEATURE_NAMES)
            f = f + self.task.space.vector(config)
            self._features[key] = f
        return f

    def update(self, configs: list[Any], costs: list[float]) -> None:
        """The measurements are in ``history`` already; the model learns from them when the
        next plan is made (``_refit``)."""

    def _refit(self) -> None:
        if len(self.history) < self.min_train or len(self.history) == self._fitted_at:
            return
        valid = [c for _, c in self.history if math.isfinite(c)]
        if not valid:
            return
        best = min(valid)
        x = np.array([self.features(c) for c, _ in self.history], dtype=float)
        y = np.array([best / c if math.isfinite(c) else 0.0 for _, c in self.history])
        self.model.fit(x, y)
        self._fitted_at = len(self.history)
        self._trained = self.model.model is not None

    def next_batch(self, n: int) -> list[Any]:
        out: list[Any] = []
        chosen: set[str] = set()
        for _ in range(3):  # a plan can be used up by points measured meanwhile (resume)
            while self._plan and len(out) < n:
                c = self._fresh(self._plan.pop(0))
                if c is not None and _key(c) not in chosen:
                    out.append(c)
                    chosen.add(_key(c))
            if len(out) == n:
                break
            self._plan = self._make_plan(max(n - len(out), self.plan_size))
            if not self._plan:
                break
        return out

    def _make_plan(self, m: int) -> list[Any]:
        self._refit()
        if not self._trained:
            return RandomTuner.next_batch(self, m)  # type: ignore[arg-type]
        space = self.task.space
        ranked = sorted((h for h in self.history if math.isfinite(h[1])), key=lambda h: h[1])
        parents = [c for c, _ in ranked[:8]] or [space.default()]
        population = max(self.population, 3 * m)
        pool: dict[str, Any] = {}
        for _ in range(population * 4):
            if len(pool) >= population:
                break
            r = self.rng.random()
            if r < 0.6:
                c = space.mutate(self.rng.choice(parents), self.rng)
                if self.rng.random() < 0.5:
                    c = space.mutate(c, self.rng)
            elif r < 0.9 and len(parents) > 1:
                a, b = self.rng.sample(parents, 2)
                c = space.crossover(a, b, self.rng)
            else:
                c = space.sample(self.rng)
            c = self._fresh(c)
            if c is not None:
                pool.setdefault(_key(c), c)
        cands = list(pool.values())
        n_random = round(m * self.eps_random)
        out: list[Any] = []
        if cands:
            scores = self.model.predict(np.array([self.features(c) for c in cands], dtype=float))
            order = np.argsort(-scores, kind="stable")
            out = [cands[i] for i in order[: m - n_random]]
        chosen = {_key(c) for c in out}
        for c in RandomTuner.next_batch(self, m):  # type: ignore[arg-type]
            if len(out) >= m:
                break
            if _key(c) not in chosen:
                out.append(c)
                chosen.add(_key(c))
        return out


XGBTuner = EvolutionaryTuner

_TUNERS = {
    "random": RandomTuner,
    "grid": GridSearchTuner,
    "evolutionary": EvolutionaryTuner,
    "xgb": EvolutionaryTuner,
}


def _check_count(name: str, value: Any, low: int, none_ok: bool) -> None:
    if value is None and none_ok:
        return
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        also = " or None" if none_ok else ""
        raise TVMValueError(f"{name} must be an integer >= {low}{also}, got {value!r}")


def _check_log_file(log_file: Any) -> None:
    """A log a tuning run can append to, checked before the first trial (not after the first
    batch was measured): a path, not a directory; its folder is made if it is missing, as for
    ``logs/resnet.json`` in a fresh checkout."""
    if log_file is None:
        return
    if not isinstance(log_file, (str, os.PathLike)):
        hint = ""
        if isinstance(log_file, (list, tuple)):  # TVM's 4th argument of tune() is callbacks
            hint = " (TVM's callbacks list goes in callbacks=[...])"
        raise TVMTypeError(f"log_file must be a path or None, got {type(log_file).__name__}{hint}")
    path = os.fspath(log_file)
    if not path:
        raise TVMValueError("log_file must be a path or None, got an empty string")
    if os.path.isdir(path):
        raise TVMValueError(
            f"log_file {path!r} is a directory; give a file path such as "
            f"{os.path.join(path, 'tune.json')!r}"
        )
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    # PermissionError now, not after the first batch (the file itself is made by the first
    # record: a run with no trial leaves no empty log behind)
    target = path if os.path.exists(path) else folder
    if not os.access(target, os.W_OK):
        raise PermissionError(errno.EACCES, "the tuning log cannot be written", path)


def _check_tune_args(
    n_trial: Any,
    n_parallel: Any,
    early_stopping: Any,
    measure_option: Any,
    log_file: Any = None,
) -> None:
    """The arguments ``tune`` and ``tune_tasks`` share, checked before any worker starts."""
    _check_log_file(log_file)
    _check_count("n_trial", n_trial, 0, none_ok=False)
    _check_count("n_parallel", n_parallel, 1, none_ok=True)
    _check_count("early_stopping", early_stopping, 1, none_ok=True)
    check_measure_option(measure_option)


def make_tuner(name_or_cls: Any, task: Any, seed: int | None = 0) -> Tuner:
    """A tuner for ``task``: by name (``"evolutionary"``, ``"random"``, ``"grid"``...) or a
    ``Tuner`` subclass."""
    if isinstance(name_or_cls, str):
        if name_or_cls not in _TUNERS:
            raise TVMValueError(f"tuner must be one of {sorted(_TUNERS)}, got {name_or_cls!r}")
        return _TUNERS[name_or_cls](task, seed=seed)
    if not (isinstance(name_or_cls, type) and issubclass(name_or_cls, Tuner)):
        raise TVMTypeError(
            f"tuner must be one of {sorted(_TUNERS)} or a Tuner subclass, got {name_or_cls!r}"
        )
    return name_or_cls(task, seed=seed)


def tune_tasks(
    tasks: Sequence[Any],
    n_trial: int,
    tuner: Any = "evolutionary",
    log_file: str | os.PathLike[str] | None = None,
    early_stopping: int | None = None,
    measure_option: MeasureOption | dict[str, Any] | None = None,
    n_parallel: int | None = None,
    runner: Any = "local",
    seed: int | None = 0,
    progress: bool = True,
    resume: bool = True,
    verify: bool = True,
    weights: Sequence[float] | None = None,
    callbacks: Sequence[Callable[[Any, list[Any], list[Any]], Any]] = (),
    si_prefix: str = "G",
) -> list[dict[str, Any] | None]:
    """Tune several tasks with ``n_trial`` trials in total, split by expected gain (Ansor's
    task scheduler, simplified): each task gets one round first; then each round goes to the
    task whose time (its share of the total: its best time times its weight, how often a
    model runs it, default 1) times its recent relative improvement is largest; a task that
    stopped improving keeps a chance that shrinks with the rounds it already had, so the
    slowest task does not take every remaining round.
    With ``verify``, each task measured here ends with ``Tuner.verify`` (its best candidates
    and its analytical point re-measured together). ``measure_option``, ``callbacks`` and
    ``si_prefix`` as for ``Tuner.tune`` (the callbacks see every task's batches). Returns each
    task's best record.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import autotvm
        >>> def scale(n):
        ...     A = tvm.placeholder((n,), name="A")
        ...     return [A, tvm.compute((n,), lambda i: A[i] * 3.0, name="B")]
        >>> tasks = [autotvm.auto_task(scale, (n,)) for n in (1024, 2048)]
        >>> bests = autotvm.tune_tasks(tasks, 4, tuner="random", n_parallel=1, progress=False)
        >>> [b["error"] for b in bests]
        [0, 0]
    """
    measure_option, n_parallel = resolve_measure_option(measure_option, n_parallel)
    _check_tune_args(n_trial, n_parallel, early_stopping, measure_option, log_file)
    callbacks = _check_callbacks(callbacks, si_prefix)
    tuners = [make_tuner(tuner, t, seed) for t in tasks]
    if not tuners:
        return []
    weight = [1.0] * len(tuners) if weights is None else [float(w) for w in weights]
    if len(weight) != len(tuners) or not all(w > 0 for w in weight):
        raise TVMValueError(f"weights must be one positive number per task, got {weights!r}")
    n_parallel = max(1, n_parallel or min(4, os.cpu_count() or 1))
    if log_file and resume:
        for tu in tuners:
            tu.resume(os.fspath(log_file))
    progress_of: list[list[float]] = [[] for _ in tuners]
    order = list(range(len(tuners)))
    # Local runners stay open across a task's rounds (each round is only n_parallel trials,
    # and a fresh runner forks its workers again); the least recently used beyond a few are
    # closed, so that a graph's dozen tasks do not keep two dozen workers alive.
    open_runners: dict[int, LocalRunner] = {}
    progress = progress and not any(isinstance(cb, _ProgressBar) for cb in callbacks)
    bar = _bar(tuners[0].task, n_trial, progress)
    try:
        _schedule_rounds(
            tuners, n_trial, weight, n_parallel, progress_of, order, open_runners,
            measure_option, log_file, runner, bar, early_stopping, callbacks,
        )  # fmt: skip
    finally:
        if bar is not None:
            bar.close()
        _close_bars(callbacks)
        for r in open_runners.values():
            r.close()
    # A task that measured nothing new (n_trial 0, or a log covering its space) returns what
    # apply_history_best applies from the log, not the cheapest record resumed (possibly an
    # unverified trial its verification did not choose).
    resumed = bool(log_file and resume)
    if not verify:
        return [tu.best_record if tu.trials or not resumed else tu.resumed_best for tu in tuners]
    bests = []
    for tu in tuners:
        if tu.trials:
            bests.append(tu.verify(log_file))
        else:
            bests.append(tu.resumed_best if resumed else tu.best_record)
        _log_verification(tu, callbacks)
    return bests


_OPEN_RUNNERS = 4


def _schedule_rounds(
    tuners: list[Tuner], n_trial: int, weight: list[float], n_parallel: int,
    progress_of: list[list[float]], order: list[int], open_runners: dict[int, LocalRunner],
    measure_option: MeasureOption | None, log_file: Any, runner: Any, bar: Any,
    early_stopping: int | None, callbacks: Sequence[Any] = (),
) -> None:  # fmt: skip
    """``tune_tasks``' rounds: each goes to the task of largest expected gain."""
    spent = 0
    while spent < n_trial:
        live = [k for k in order if tuners[k].has_next()]
        if not live:
            break
        fresh = [k for k in live if not progress_of[k]]
        if fresh:
            k = fresh[0]
        else:

            def gain(k: int) -> float:
                hist = progress_of[k]
                before = hist[-2] if len(hist) > 1 else math.inf
                now = hist[-1]
                if not math.isfinite(now):
                    return 1.0
                rel = (before - now) / before if math.isfinite(before) else 1.0
                return weight[k] * now * (rel + 0.05 / len(hist))

            k = max(live, key=gain)
        step = min(n_parallel, n_trial - spent)
        before = tuners[k].trials
        task_runner = runner
        if runner == "local":
            task_runner = open_runners.pop(k, None) or LocalRunner(
                tuners[k].task, n_parallel=n_parallel, option=measure_option,
                seed=tuners[k].seed or 0,
            )  # fmt: skip
            open_runners[k] = task_runner  # the most recently used last
            while len(open_runners) > _OPEN_RUNNERS:
                open_runners.pop(next(iter(open_runners))).close()
        if bar is not None and len(tuners) > 1:
            bar.set_description(f"tuning {tuners[k].task.name} ({k + 1}/{len(tuners)})")
        tuners[k].tune(
            step,
            measure_option,
            None,
            log_file,
            n_parallel,
            task_runner,
            progress=bar is not None,
            resume=False,
            verify=False,
            callbacks=callbacks,
            _shared_bar=bar,
            _round=True,
        )
        spent += max(1, tuners[k].trials - before)
        progress_of[k].append(tuners[k].best_cost)
        # Stop once every task went ``early_stopping`` trials (that many rounds of
        # n_parallel, at least one) without improving: its last rounds + 1 bests are equal
        # (the first of them is the best the quiet rounds failed to beat).
        quiet = max(1, -(-early_stopping // n_parallel)) if early_stopping is not None else 0
        if early_stopping is not None and all(
            len(h) > quiet and len(set(h[-(quiet + 1) :])) == 1 for h in progress_of
        ):
            break
