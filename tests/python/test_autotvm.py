"""Autotuning: spaces, tuners, measurement in worker processes, logs and replay."""

from __future__ import annotations

import io
import json
import math
import os
import random
import sys
from typing import Any

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import autotvm
from pytvmbridge.autotvm import record
from pytvmbridge.autotvm.measure import (
    CRASH,
    OK,
    TIMEOUT,
    WRONG_ANSWER,
    MeasureOption,
    schedule_hash,
)

N = 64


@autotvm.template("test_matmul")
def matmul_template(n):
    A = tvm.placeholder((n, n), name="A")
    B = tvm.placeholder((n, n), name="B")
    k = tvm.reduce_axis((0, n), name="k")
    C = tvm.compute((n, n), lambda i, j: tvm.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = tvm.create_schedule(C.op)
    cfg = autotvm.get_config()
    i, j = C.op.axis
    cfg.define_split("tile_j", j, num_outputs=2)
    cfg.define_reorder("order", [i, j, k], policy="candidate", candidate=[[2, 1, 0], [0, 2, 1]])
    cfg.define_knob("vec", [0, 1])
    jo, ji = cfg["tile_j"].apply(s, C, j)
    if cfg["order"].perm == [2, 1, 0]:  # k outermost, columns: strided, scalar (the bad start)
        s[C].reorder(k, jo, ji, i)
    else:
        s[C].reorder(i, jo, k, ji)
        if cfg["vec"].val:
            s[C].vectorize(ji)
    return s, [A, B, C]


@autotvm.template("test_faulty")
def faulty_template(n):
    """mode 0: fine; 1: crashes the process; 2: hangs; 3: computes something else."""
    cfg = autotvm.get_config()
    cfg.define_knob("mode", [0, 1, 2, 3])
    mode = cfg["mode"].val
    if mode == 1:
        import ctypes

        ctypes.string_at(0)  # a segmentation fault
    if mode == 2:
        import time

        time.sleep(120)
    A = tvm.placeholder((n,), name="A")
    B = tvm.compute((n,), lambda i: A[i] * (3.0 if mode == 3 else 2.0), name="B")
    return tvm.create_schedule(B.op), [A, B]


def _matmul_ref(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


def _run(s, args, *arrays):
    f = tvm.build(s, args)
    f(*arrays)
    return arrays


def test_template_space_and_apply():
    task = autotvm.task.create("test_matmul", args=(N,))
    sp = task.space
    # tile_j: the 7 divisor pairs of 64; order: 2 candidates; vec: 2
    assert sp.knobs["tile_j"] == [[64 // f, f] for f in (1, 2, 4, 8, 16, 32, 64)]
    assert len(sp) == 7 * 2 * 2
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((N, N), "float32"), rng.standard_normal((N, N), "float32")
    for config in [sp.default(), {"tile_j": [4, 16], "order": [0, 2, 1], "vec": 1}]:
        s, args = task.instantiate(config)
        c = np.zeros((N, N), "float32")
        _run(s, args, a, b, c)
        np.testing.assert_allclose(c, _matmul_ref(a, b), rtol=1e-4, atol=1e-4)
    s, args = task.instantiate({"tile_j": [4, 16], "order": [0, 2, 1], "vec": 1})
    assert "ramp(" in str(tvm.lower(s, args))  # vectorized by 16


def test_auto_space_repairs_points():
    def mm(n):
        A = tvm.placeholder((n, n), name="A")
        B = tvm.placeholder((n, n), name="B")
        k = tvm.reduce_axis((0, n), name="k")
        return [
            A,
            B,
            tvm.compute((n, n), lambda i, j: tvm.sum(A[i, k] * B[k, j], axis=k), name="C"),
        ]

    task = autotvm.auto_task(mm, (256,))
    default = tvm.auto_schedule_space(mm(256)[2])["default"]
    assert task.space.default() == default
    # 4 vectors leave room for at most 7 rows: 14 rows is moved to the nearest allowed, 7.
    fixed = task.canonical({"C": {"tile_vectors": 4, "tile_rows": 14}})
    assert fixed["C"]["tile_vectors"] == 4 and fixed["C"]["tile_rows"] == 7
    # random points all become points the scheduler applies, with the right values
    rng = random.Random(0)
    a = np.random.default_rng(0).standard_normal((256, 256)).astype("float32")
    for _ in range(3):
        config = task.canonical(task.space.sample(rng))
        s, args = task.instantiate(config)
        c = np.zeros((256, 256), "float32")
        _run(s, args, a, a, c)
        np.testing.assert_allclose(c, _matmul_ref(a, a), rtol=1e-3, atol=1e-3)


def test_tuning_improves_on_a_bad_start_deterministically(tmp_path):
    n = 128  # the bad start (k outermost, i innermost: strided, scalar) is ~40x slower here
    task = autotvm.task.create("test_matmul", args=(n,))
    bad = {"tile_j": [n, 1], "order": [2, 1, 0], "vec": 0}
    logs = []
    for run in range(2):
        log = tmp_path / f"run{run}.json"
        opt = MeasureOption(repeat=2, min_repeat_ms=2)
        with autotvm.LocalRunner(task, n_parallel=2, option=opt) as runner:
            [start] = runner.run([task.canonical(bad)])
        assert start.error == OK
        tuner = autotvm.RandomTuner(task, seed=7)
        tuner.visited.add(json.dumps(task.canonical(bad), sort_keys=True))
        best = tuner.tune(6, measure_option=opt, log_file=log, n_parallel=2, progress=False)
        # the search's proposals (the final verification re-measures its best, which may differ)
        logs.append([r["config"] for r in record.load(log) if "verified" not in r])
        assert best is not None and best["error"] == OK
        assert record.record_cost(best) < start.cost
        assert best["config"] != task.canonical(bad)
    assert logs[0] == logs[1]  # the same seed proposes the same candidates
    assert len({json.dumps(c, sort_keys=True) for c in logs[0]}) == 6
    # the best configuration computes the product
    s, args = task.instantiate(best["config"])
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((n, n), "float32"), rng.standard_normal((n, n), "float32")
    c = np.zeros((n, n), "float32")
    _run(s, args, a, b, c)
    np.testing.assert_allclose(c, _matmul_ref(a, b), rtol=1e-4, atol=1e-4)


def test_evolutionary_tuner_uses_the_model(tmp_path):
    task = autotvm.task.create("test_matmul", args=(N,))
    tuner = autotvm.EvolutionaryTuner(task, seed=0, min_train=4)
    opt = MeasureOption(repeat=1, min_repeat_ms=1)
    best = tuner.tune(
        10, measure_option=opt, n_parallel=2, progress=False, log_file=tmp_path / "evo.json"
    )
    assert tuner.model.model is not None  # trained after 4 measurements
    recs = list(record.load(tmp_path / "evo.json", verified=False))
    assert len(recs) == 10 and best["config"] in [r["config"] for r in recs]
    assert best["chosen"]  # the final verification's choice
    assert all(len(r["features"]) == 13 for r in recs)


def test_builds_run_while_the_tuner_proposes(tmp_path):
    task = autotvm.task.create("test_matmul", args=(N,))
    opt = MeasureOption(repeat=1, min_repeat_ms=1)
    events: list[str] = []
    tuner = autotvm.RandomTuner(task, seed=1)
    propose = tuner.next_batch
    tuner.next_batch = lambda n: events.append("propose") or propose(n)
    with autotvm.LocalRunner(task, n_parallel=2, option=opt) as runner:
        submit, collect = runner.submit, runner.collect
        runner.submit = lambda configs: events.append("submit") or submit(configs)
        runner.collect = lambda *a, **k: events.append("collect") or collect(*a, **k)
        tuner.tune(5, log_file=tmp_path / "p.json", runner=runner, progress=False, verify=False)
    # the next batch is proposed while the last one builds, before its results are collected
    assert events[:4] == ["propose", "submit", "propose", "collect"]
    recs = list(record.load(tmp_path / "p.json", verified=False))
    # exactly the budget, no configuration measured twice, each checked against the reference
    assert len(recs) == 5 and len({json.dumps(r["config"], sort_keys=True) for r in recs}) == 5
    assert all(r["error"] == OK for r in recs)


def test_cpu_split_gives_timed_runs_their_own_cores(monkeypatch):
    from pytvmbridge.autotvm import measure

    # eight CPUs, two hardware threads per core: CPU c shares its core with c + 4 (mod 8)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5, 6, 7})
    monkeypatch.setattr(measure, "_core_siblings", lambda c: {c % 4, c % 4 + 4})
    monkeypatch.setattr(measure, "_cpu_quota", lambda: None)
    # the timed runs take CPUs 0 and 1; their siblings 4 and 5 are left idle
    assert measure.cpu_split(2) == ([0, 1], [2, 3, 6, 7])
    assert measure.cpu_split(1) == ([0], [1, 2, 3, 5, 6, 7])
    assert measure.cpu_split(4) is None  # the other four are the timed cores' siblings
    assert measure.cpu_split(8) is None and measure.cpu_split(9) is None
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3, 9})  # a taskset mask
    monkeypatch.setattr(measure, "_core_siblings", lambda c: {c})
    assert measure.cpu_split(1) == ([3], [9])


def _cgroup_tree(root, files):
    for path, text in files.items():
        full = root / path.lstrip("/")
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
    return str(root)


@pytest.mark.parametrize(
    "files, quota",
    [
        # cgroup v2, a container started with --cpus=2.5
        ({"/proc/self/cgroup": "0::/box\n", "/sys/fs/cgroup/box/cpu.max": "250000 100000\n"}, 2.5),
        ({"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/cpu.max": "max 100000\n"}, None),
        # v2, the process's path not visible inside the container: the mount's root
        ({"/proc/self/cgroup": "0::/host/path\n", "/sys/fs/cgroup/cpu.max": "150000 100000"}, 1.5),
        # cgroup v1 (this machine's kind), unlimited and limited
        (
            {
                "/proc/self/cgroup": "4:memory:/x\n1:cpu,cpuacct:/\n0::/\n",
                "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
                "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
            },
            None,
        ),
        (
            {
                "/proc/self/cgroup": "1:cpu:/job\n",
                "/sys/fs/cgroup/cpu/job/cpu.cfs_quota_us": "300000\n",
                "/sys/fs/cgroup/cpu/job/cpu.cfs_period_us": "100000\n",
            },
            3.0,
        ),
        ({"/proc/self/cgroup": "1:cpu:/\n"}, None),  # no files: unknown
        ({}, None),  # not Linux
    ],
)
def test_cpu_quota_reads_the_cgroup_limit(tmp_path, files, quota):
    from pytvmbridge.autotvm import measure

    assert measure._cpu_quota(_cgroup_tree(tmp_path, files)) == quota


def test_cpu_split_leaves_a_container_limit_no_cpu_to_spare(monkeypatch):
    from pytvmbridge.autotvm import measure

    # eight CPUs in the mask, but the cgroup allows two CPUs' worth of time
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.setattr(measure, "_core_siblings", lambda c: {c})
    monkeypatch.setattr(measure, "_cpu_quota", lambda: 2.0)
    assert measure.cpu_split(2) is None and measure.cpu_split(1) == ([0], [1, 2, 3, 4, 5, 6, 7])
    monkeypatch.setattr(measure, "_cpu_quota", lambda: 3.0)
    assert measure.cpu_split(2) == ([0, 1], [2, 3, 4, 5, 6, 7])


def test_overlap_is_on_by_default_only_with_cpus_to_spare(monkeypatch):
    from pytvmbridge.autotvm import measure

    task = autotvm.task.create("test_matmul", args=(N,))
    monkeypatch.setattr(measure, "cpu_split", lambda threads: None)
    with autotvm.LocalRunner(task, n_parallel=1) as runner:
        assert not runner.overlap and runner.split is None and len(runner._workers) == 1
    monkeypatch.setattr(measure, "cpu_split", lambda threads: ([0], [1]))
    with autotvm.LocalRunner(task, n_parallel=1) as runner:
        assert runner.overlap and runner.split == ([0], [1]) and len(runner._workers) == 2
    opt = MeasureOption(overlap_builds=False)
    with autotvm.LocalRunner(task, n_parallel=1, option=opt) as runner:
        assert not runner.overlap and runner.split is None


def test_builds_and_timed_runs_keep_to_their_cpus(tmp_path, monkeypatch):
    """One thread for the timed runs, the workers build on the other CPUs (the split
    cpu_split gives on this two-CPU machine; on a one-CPU machine both sets are that CPU) and
    measure on the first, and the tuner's own work during a measurement stays off it."""
    from pytvmbridge.autotvm import measure

    cpus = sorted(os.sched_getaffinity(0))
    split = ([cpus[0]], cpus[1:] or cpus[:1])
    if len(cpus) == 2:
        assert measure.cpu_split(1) == split
    monkeypatch.setattr(measure, "cpu_split", lambda threads: split if threads == 1 else None)
    task = autotvm.task.create("test_matmul", args=(N,))
    threads = tvm.get_num_threads()
    tvm.set_num_threads(1)
    try:
        opt = MeasureOption(repeat=1, min_repeat_ms=1)
        with autotvm.LocalRunner(task, n_parallel=2, option=opt) as runner:
            assert runner.split == split
            timed, builds = runner.split
            rng = random.Random(5)
            configs = [task.space.sample(rng) for _ in range(2)]
            runner.collect(runner.submit(configs), measure=False)  # built, not measured
            pids = [w[0].pid for w in runner._workers if w is not None]
            assert len(pids) == 2
            assert all(os.sched_getaffinity(p) == set(builds) for p in pids)
            seen: list[set[int]] = []
            results = runner.collect(
                runner.submit(configs), meanwhile=lambda: seen.append(os.sched_getaffinity(0))
            )
            assert seen == [set(builds)]  # the caller, while the first candidate was timed
            assert os.sched_getaffinity(0) == set(cpus)  # and given back its CPUs after
            assert all(r.error == OK and r.costs and r.measure_s > 0 for r in results)
            # the workers that measured last are on the timed CPU, with every thread
            pids = [w[0].pid for w in runner._workers if w is not None]
            for p in pids:
                for tid in os.listdir(f"/proc/{p}/task"):
                    assert os.sched_getaffinity(int(tid)) == set(timed)
        # the tuner with this runner: every record checked, the best one computes the product
        log = tmp_path / "pinned.json"
        tuner = autotvm.RandomTuner(task, seed=2)
        tuner.tune(6, log_file=log, measure_option=opt, progress=False, verify=False)
        recs = list(record.load(log, verified=False))
        assert len(recs) == 6 and all(r["error"] == OK for r in recs)
        s, args = task.instantiate(min(recs, key=record.record_cost)["config"])
        rng2 = np.random.default_rng(4)
        a, b = rng2.standard_normal((N, N), "float32"), rng2.standard_normal((N, N), "float32")
        c = np.zeros((N, N), "float32")
        _run(s, args, a, b, c)
        np.testing.assert_allclose(c, _matmul_ref(a, b), rtol=1e-4, atol=1e-4)
    finally:
        tvm.set_num_threads(threads)


def test_an_error_in_the_callers_work_during_a_measurement_leaves_the_runner_usable():
    task = autotvm.task.create("test_matmul", args=(N,))
    opt = MeasureOption(repeat=1, min_repeat_ms=1, overlap_builds=True)
    cfg = task.space.default()

    def boom() -> None:
        raise RuntimeError("proposal failed")

    with autotvm.LocalRunner(task, n_parallel=1, option=opt) as runner:
        with pytest.raises(RuntimeError, match="proposal failed"):
            runner.collect(runner.submit([cfg]), meanwhile=boom)
        assert not runner._busy
        [r] = runner.run([cfg])  # the measurement's answer was read: the pipe is in step
        assert r.error == OK and r.costs


def test_overlap_builds_the_next_batch_while_this_one_is_measured(tmp_path):
    task = autotvm.task.create("test_matmul", args=(N,))
    opt = MeasureOption(repeat=1, min_repeat_ms=1, overlap_builds=True)
    events: list[str] = []
    tuner = autotvm.RandomTuner(task, seed=1)
    with autotvm.LocalRunner(task, n_parallel=2, option=opt) as runner:
        assert len(runner._workers) == 4  # two sets of two workers
        submit, collect = runner.submit, runner.collect
        runner.submit = lambda configs: events.append("submit") or submit(configs)

        def logged_collect(*a, **k):
            events.append("collect")
            try:
                return collect(*a, **k)
            finally:
                events.append("collected")

        runner.collect = logged_collect
        tuner.tune(7, log_file=tmp_path / "o.json", runner=runner, progress=False, verify=False)
        assert not runner._busy  # every batch collected
    # the second batch is proposed and submitted while the first is measured
    assert events[:4] == ["submit", "collect", "submit", "collected"]
    recs = list(record.load(tmp_path / "o.json", verified=False))
    assert len(recs) == 7 and len({json.dumps(r["config"], sort_keys=True) for r in recs}) == 7
    # every candidate, built in either set of workers, checked against the reference
    assert all(r["error"] == OK for r in recs)
    best = min(recs, key=record.record_cost)
    s, args = task.instantiate(best["config"])
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((N, N), "float32"), rng.standard_normal((N, N), "float32")
    c = np.zeros((N, N), "float32")
    _run(s, args, a, b, c)
    np.testing.assert_allclose(c, _matmul_ref(a, b), rtol=1e-4, atol=1e-4)


def test_log_round_trip(tmp_path):
    task = autotvm.task.create("test_matmul", args=(N,))
    log = tmp_path / "log.json"
    opt = MeasureOption(repeat=2, min_repeat_ms=1)
    tuner = autotvm.GridSearchTuner(task)
    tuner.tune(3, measure_option=opt, log_file=log, n_parallel=1, progress=False)
    recs = list(record.load(log, verified=False))
    assert len(recs) == 3
    # the grid in order, less the points that build the same code as an earlier one (not
    # built or measured again)
    grid, seen, keys, skipped = [], set(), set(), 0
    for c in task.space.grid():
        c = task.canonical(c)
        if json.dumps(c, sort_keys=True) in keys:
            continue  # repaired to a point already proposed: never proposed twice
        keys.add(json.dumps(c, sort_keys=True))
        h = schedule_hash(*task.instantiate(c))
        if h not in seen:
            seen.add(h)
            grid.append(c)
        else:
            skipped += 1
        if len(grid) == 3:
            break
    assert [r["config"] for r in recs] == grid
    assert [r["schedule"] for r in recs] == [schedule_hash(*task.instantiate(c)) for c in grid]
    assert skipped > 0 and tuner.duplicates == skipped  # skipped without a build
    for r in recs:
        assert r["workload"] == task.workload_key and r["description"].startswith("test_matmul(")
        assert r["target"]["name"] == "llvm" and r["target"]["cpu"] == record.cpu_name()
        assert r["target"]["threads"] == tvm.get_num_threads()
        assert r["error"] == OK and len(r["costs"]) == 2 and all(c > 0 for c in r["costs"])
        assert set(r["versions"]) >= {"python", "pytvmbridge", "numpy"}
        assert r["flop"] == 2 * N**3
    # write back what was read: the same lines
    record.append(tmp_path / "copy.json", record.load(log))
    assert (tmp_path / "copy.json").read_text() == log.read_text()


def _rec(task, config, cost, error=OK, target="llvm", cpu=None):
    r = record.make_record(
        task.workload_key,
        task.description,
        task.kind,
        target,
        task.canonical(config),
        [cost, cost, cost],
        error,
        flop=task.flop,
    )
    if cpu is not None:
        r["target"]["cpu"] = cpu
    return r


def test_apply_history_best_picks_the_best_valid_record(tmp_path):
    task = autotvm.task.create("test_matmul", args=(N,))
    log = tmp_path / "log.json"
    cfg = lambda f, vec=1: {"tile_j": [N // f, f], "order": [0, 2, 1], "vec": vec}  # noqa: E731
    record.append(
        log,
        [
            _rec(task, cfg(2), 1.0),
            _rec(task, cfg(4), 0.5, error=WRONG_ANSWER),  # errors never count
            _rec(task, cfg(8), 0.1, target="llvm -mcpu=haswell"),  # another target
            _rec(task, cfg(16), 0.2, cpu="Some Other CPU"),  # another machine
            _rec(task, cfg(32), 0.8),  # the best valid record here
        ],
    )
    with autotvm.apply_history_best(log) as ctx:
        assert ctx.best(task.workload_key)["config"] == task.canonical(cfg(32))
        s, args = matmul_template(N)  # the template outside a tuner: the best record
        text = str(tvm.lower(s, args))
        assert "ramp(" in text and "(j.outer, 0, 2)" in text  # vectorized, split by 32
    with autotvm.apply_history_best(log, other_cpus=True) as ctx:
        assert ctx.best(task.workload_key)["config"] == task.canonical(cfg(16))
    # a workload without records: one warning, then the default schedule
    with autotvm.apply_history_best(log):
        with pytest.warns(UserWarning, match="no valid record"):
            s, args = matmul_template(32)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            s, args = matmul_template(32)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((32, 32), "float32"), rng.standard_normal((32, 32), "float32")
    c = np.zeros((32, 32), "float32")
    _run(s, args, a, b, c)
    np.testing.assert_allclose(c, _matmul_ref(a, b), rtol=1e-4, atol=1e-4)


def test_crashing_hanging_and_wrong_candidates_are_error_records(tmp_path):
    task = autotvm.task.create("test_faulty", args=(1024,))
    log = tmp_path / "faulty.json"
    opt = MeasureOption(repeat=1, min_repeat_ms=1, timeout=4)
    best = autotvm.GridSearchTuner(task).tune(
        4, measure_option=opt, log_file=log, n_parallel=2, progress=False
    )
    recs = {r["config"]["mode"]: r for r in record.load(log)}
    assert [recs[m]["error"] for m in range(4)] == [OK, CRASH, TIMEOUT, WRONG_ANSWER]
    assert "died" in recs[1]["error_msg"] and "killed" in recs[2]["error_msg"]
    assert best["config"] == {"mode": 0}  # the tuner carried on and picked the valid one


@autotvm.template("test_wrong_after_first")
def wrong_after_first(n):
    """Every mode but 0 computes something else: no candidate after the first can improve."""
    cfg = autotvm.get_config()
    cfg.define_knob("mode", [0, 1, 2, 3, 4, 5])
    A = tvm.placeholder((n,), name="A")
    B = tvm.compute((n,), lambda i: A[i] * (2.0 + cfg["mode"].val), name="B")
    return tvm.create_schedule(B.op), [A, B]


def test_early_stopping(tmp_path):
    task = autotvm.task.create("test_wrong_after_first", args=(256,))
    log = tmp_path / "early.json"
    opt = MeasureOption(repeat=1, min_repeat_ms=1)
    best = autotvm.GridSearchTuner(task).tune(
        6, measure_option=opt, early_stopping=2, log_file=log, n_parallel=1, progress=False
    )
    recs = list(record.load(log))
    search = [r for r in recs if r.get("verified") is None]
    assert [r["config"]["mode"] for r in search] == [0, 1, 2]  # 2 trials without improvement
    assert [r["error"] for r in search] == [OK, WRONG_ANSWER, WRONG_ANSWER]
    # the verification re-measures the only valid point and records it as the choice
    [check] = [r for r in recs if r.get("verified") is not None]
    assert check["config"] == {"mode": 0} and check["chosen"] and check["error"] == OK
    assert best["config"] == {"mode": 0}


def test_resume_skips_measured_candidates(tmp_path):
    task = autotvm.task.create("test_matmul", args=(N,))
    log = tmp_path / "resume.json"
    opt = MeasureOption(repeat=1, min_repeat_ms=1)
    first = autotvm.RandomTuner(task, seed=3)
    best1 = first.tune(3, measure_option=opt, log_file=log, n_parallel=1, progress=False)
    second = autotvm.RandomTuner(task, seed=3)  # the same seed would propose the same first
    best2 = second.tune(3, measure_option=opt, log_file=log, n_parallel=1, progress=False)
    recs = list(record.load(log, verified=False))
    keys = [json.dumps(r["config"], sort_keys=True) for r in recs]
    assert len(recs) == 6 and len(set(keys)) == 6
    assert best1["chosen"] and best2["chosen"] and best2["verified"] > best1["verified"]
    # the log's best is the second (latest) verification's choice
    assert record.best_records(record.load(log))[task.workload_key] == best2


def _tuned_scale(tmp_path: Any) -> tuple[Any, np.ndarray, Any, dict[str, Any]]:
    """A small @kernel tuned for 3 trials on x: (kernel, x, log path, best record)."""

    @tvm.kernel
    def scale(A):
        return tvm.compute(A.shape, lambda i: A[i] * 3.0 + 1.0, name="B")

    x = np.random.default_rng(0).standard_normal(5000).astype("float32")
    log = tmp_path / "k.json"
    best = autotvm.tune(
        scale,
        x,
        n_trial=3,
        tuner="random",
        log_file=log,
        n_parallel=1,
        progress=False,
        measure_option=MeasureOption(repeat=1, min_repeat_ms=1),
    )
    return scale, x, log, best


def test_kernel_tune_and_replay(tmp_path):
    scale, x, log, best = _tuned_scale(tmp_path)
    assert best["error"] == OK
    [task] = autotvm.extract_from_kernel(scale, x)
    assert best["workload"] == task.workload_key
    from pytvmbridge.autotvm.dispatch import kernel_config

    with autotvm.apply_history_best(log):
        _, config = kernel_config(scale, [("float32", (5000,))])
        assert config == best["config"]
        np.testing.assert_allclose(scale(x), x * 3.0 + 1.0, rtol=1e-6, atol=1e-6)
    assert kernel_config(scale, [("float32", (5000,))]) == (None, None)  # outside: default


def test_a_tuned_shape_runs_its_record_whatever_was_called_before(tmp_path):
    # Two shapes of one layout class: the one without a record, called first, must not hand
    # its (analytical) variant to the tuned one
    scale, x, log, _ = _tuned_scale(tmp_path)
    y = np.random.default_rng(1).standard_normal(7000).astype("float32")
    scale.cache_clear()
    before = scale.compilations
    with autotvm.apply_history_best(log):
        # no record: analytical; then x with its own record
        np.testing.assert_allclose(scale(y), y * 3.0 + 1.0, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(scale(x), x * 3.0 + 1.0, rtol=1e-6, atol=1e-6)
        assert scale.compilations == before + 2
        scale.module_for(x)  # the tuned variant is there already: nothing compiled
        assert scale.compilations == before + 2
        np.testing.assert_allclose(scale(y), y * 3.0 + 1.0, rtol=1e-6, atol=1e-6)  # found again
        assert scale.compilations == before + 2


def test_schedule_config_for_compilers(tmp_path):
    from pytvmbridge.autotvm.dispatch import schedule_config

    A = tvm.placeholder((256, 64), name="A")
    B = tvm.compute((256, 64), lambda i, j: tvm.exp(A[i, j]) * 2.0, name="B")
    log = tmp_path / "graph.json"
    with pytest.warns(UserWarning, match="no valid record"):  # no records yet: the default
        assert schedule_config([A, B], tuning_log_file=log) is None
    tuned = schedule_config([A, B], tuning_log_file=log, tuning_n_trials=3, progress=False)
    recs = list(record.load(log, verified=False))
    [best] = record.best_records(record.load(log)).values()
    assert len(recs) == 3 and tuned == best["config"] and best["chosen"]
    assert schedule_config([A, B], tuning_log_file=log) == tuned  # replayed from the log
    s = tvm.auto_schedule([B], config=tuned)
    a = np.random.default_rng(0).standard_normal((256, 64)).astype("float32")
    b = np.zeros_like(a)
    tvm.build(s, [A, B])(a, b)
    np.testing.assert_allclose(b, np.exp(a) * 2.0, rtol=1e-5)


def test_task_scheduler_splits_the_budget(tmp_path):
    def scale(n):
        A = tvm.placeholder((n,), name="A")
        return [A, tvm.compute((n,), lambda i: A[i] * 3.0, name="B")]

    tasks = [autotvm.auto_task(scale, (n,)) for n in (2048, 65536)]
    log = tmp_path / "tasks.json"
    bests = autotvm.tune_tasks(
        tasks,
        6,
        tuner="random",
        log_file=log,
        n_parallel=1,
        progress=False,
        measure_option=MeasureOption(repeat=1, min_repeat_ms=1),
    )
    recs = list(record.load(log, verified=False))
    counts = {t.workload_key: sum(r["workload"] == t.workload_key for r in recs) for t in tasks}
    assert sum(counts.values()) == 6 and min(counts.values()) >= 1
    assert [b["workload"] for b in bests] == [t.workload_key for t in tasks]


def test_task_scheduler_follows_weights(tmp_path):
    def scale(n):
        A = tvm.placeholder((n,), name="A")
        return [A, tvm.compute((n,), lambda i: A[i] * 3.0, name="B")]

    tasks = [autotvm.auto_task(scale, (n,)) for n in (2048, 65536)]
    log = tmp_path / "weighted.json"
    # the small task run a million times per model call: it gets the rounds after the first
    autotvm.tune_tasks(
        tasks,
        8,
        tuner="random",
        log_file=log,
        n_parallel=1,
        progress=False,
        verify=False,
        measure_option=MeasureOption(repeat=1, min_repeat_ms=1),
        weights=[1e6, 1],
    )
    recs = list(record.load(log, verified=False))
    counts = [sum(r["workload"] == t.workload_key for r in recs) for t in tasks]
    assert sum(counts) == 8 and counts[0] > counts[1] >= 1
    with pytest.raises(ValueError, match="weights"):
        autotvm.tune_tasks(tasks, 2, tuner="random", progress=False, weights=[1.0])


def test_task_scheduler_keeps_each_tasks_runner(tmp_path, monkeypatch):
    from pytvmbridge.autotvm import tuner as tuner_module

    made: list[object] = []

    class Counted(autotvm.LocalRunner):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(tuner_module, "LocalRunner", Counted)

    def scale(n):
        A = tvm.placeholder((n,), name="A")
        return [A, tvm.compute((n,), lambda i: A[i] * 3.0, name="B")]

    tasks = [autotvm.auto_task(scale, (n,)) for n in (2048, 4096)]
    log = tmp_path / "kept.json"
    opt = MeasureOption(repeat=1, min_repeat_ms=1)
    autotvm.tune_tasks(
        tasks, 6, tuner="random", log_file=log, n_parallel=1, progress=False, measure_option=opt
    )
    # six one-trial rounds over two tasks: one runner per task, not one per round
    assert len(made) == 2
    assert len(list(record.load(log, verified=False))) == 6


def test_plot_best_so_far(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    task = autotvm.task.create("test_matmul", args=(N,))
    log = tmp_path / "p.json"
    record.append(
        log,
        [_rec(task, {"tile_j": [N, 1], "order": [2, 1, 0]}, c) for c in (4.0, 2.0)]
        + [
            _rec(task, {"tile_j": [N, 1], "order": [2, 1, 0]}, 1.0, error=CRASH),
            _rec(task, {"tile_j": [N, 1], "order": [2, 1, 0]}, 3.0),
        ],
    )
    ax = autotvm.plot(log)
    [line] = ax.get_lines()
    gflops = [2 * N**3 / c / 1e9 for c in (4.0, 2.0, 2.0, 2.0)]
    np.testing.assert_allclose(line.get_ydata(), gflops)
    # a workload without a flop count goes on a second axis (runs per second), not GFLOPS
    record.append(log, [record.make_record("w2", "other", "auto", "llvm", {}, [1e-3], OK, flop=0)])
    ax = autotvm.plot(log)
    assert ax.get_ylabel() == "best GFLOPS so far"
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), gflops)
    (rate,) = [a for a in ax.figure.axes if a is not ax]
    np.testing.assert_allclose(rate.get_lines()[0].get_ydata(), [1000.0])
    with pytest.raises(FileNotFoundError, match="no tuning log"):
        autotvm.plot(tmp_path / "typo.json")
    with pytest.raises(ValueError, match="is a directory"):
        autotvm.plot(tmp_path)


def test_bad_arguments():
    task = autotvm.task.create("test_matmul", args=(N,))
    with pytest.raises(ValueError, match="tuner must be one of"):
        autotvm.tune(task, n_trial=1, tuner="annealing")
    with pytest.raises(ValueError, match="no template named"):
        autotvm.task.create("no_such_template")
    with pytest.raises(TypeError, match=r"autotvm\.tune takes"):
        autotvm.tune(42)
    with pytest.raises(ValueError, match="n_trial must be an integer >= 0, got -1"):
        autotvm.RandomTuner(task).tune(-1)
    with pytest.raises(ValueError, match="define_split policy"):
        autotvm.ConfigSpace().define_split("x", 8, policy="odd")


@pytest.mark.parametrize(
    "module",
    [
        "pytvmbridge.autotvm",
        "pytvmbridge.autotvm.space",
        "pytvmbridge.autotvm.task",
        "pytvmbridge.autotvm.features",
        "pytvmbridge.autotvm.measure",
        "pytvmbridge.autotvm.record",
        "pytvmbridge.autotvm.tuner",
        "pytvmbridge.autotvm.callback",
        "pytvmbridge.autotvm.plot",
        "pytvmbridge.autotvm.dispatch",
        "pytvmbridge.autotvm.graph_tuning",
        "pytvmbridge.tune",
    ],
)
def test_docstring_examples(module):
    import doctest
    import importlib

    import matplotlib

    matplotlib.use("Agg")
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert not math.isnan(result.attempted)


@pytest.mark.parametrize("env, shown", [(None, False), ("0", False), ("1", True)])
def test_tuning_bar_only_where_watched(tmp_path, monkeypatch, env, shown):
    # A pipe or a log file gets no bar (only carriage returns would reach it); the tuner follows
    # pytvmbridge.progress: PYTVMBRIDGE_PROGRESS=1 shows it anywhere, 0 nowhere.
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    if env is None:
        monkeypatch.delenv("PYTVMBRIDGE_PROGRESS", raising=False)
    else:
        monkeypatch.setenv("PYTVMBRIDGE_PROGRESS", env)
    err = io.StringIO()  # not a terminal
    monkeypatch.setattr(sys, "stderr", err)
    task = autotvm.task.create("test_matmul", args=(N,))
    opt = MeasureOption(repeat=1, min_repeat_ms=1)
    log = tmp_path / "log.json"
    autotvm.GridSearchTuner(task).tune(2, measure_option=opt, log_file=log, n_parallel=1)
    assert len(list(record.load(log, verified=False))) == 2
    assert ("tuning test_matmul" in err.getvalue()) == shown


def test_repeated_code_is_skipped_before_it_takes_a_worker(tmp_path):
    # The automatic space's knobs often build the same code at a shape (here, an elementwise
    # scale): the tuner hashes its proposals and hands the runner only new code, so no worker
    # slot of a batch is spent answering "duplicate" while the other builds alone.
    def scale(n):
        A = tvm.placeholder((n,), name="A")
        return [A, tvm.compute((n,), lambda i: A[i] * 3.0, name="B")]

    task = autotvm.auto_task(scale, (4096,))
    want, seen, keys, skipped = [], set(), set(), 0
    for c in task.space.grid():  # the grid in order, as GridSearchTuner walks it
        c = task.canonical(c)
        if json.dumps(c, sort_keys=True) in keys:
            continue
        keys.add(json.dumps(c, sort_keys=True))
        h = schedule_hash(*task.instantiate(c))
        if h in seen:
            skipped += 1
            continue
        seen.add(h)
        want.append(c)
        if len(want) == 4:
            break
    assert skipped > 0  # the space does repeat itself (else this test checks nothing)
    log = tmp_path / "log.json"
    answered = []
    with autotvm.LocalRunner(task, n_parallel=2, option=MeasureOption(repeat=1)) as runner:
        collect = runner.collect

        def spy(*a, **k):
            out = collect(*a, **k)
            answered.extend(out)
            return out

        runner.collect = spy
        tuner = autotvm.GridSearchTuner(task)
        tuner.tune(4, log_file=log, runner=runner, progress=False, verify=False)
    recs = list(record.load(log, verified=False))
    assert [r["config"] for r in recs] == want
    assert [r["schedule"] for r in recs] == [schedule_hash(*task.instantiate(c)) for c in want]
    assert all(r["error"] == OK for r in recs)  # each checked against the reference output
    assert not any(r.duplicate for r in answered)  # no worker answered "duplicate"
    assert tuner.duplicates == skipped


_KILLED_TUNER = """
import os, sys
from pytvmbridge import autotvm
from pytvmbridge.autotvm.measure import LocalRunner, MeasureOption
import tests.python.test_autotvm  # registers the templates

task = autotvm.task.create("test_wrong_after_first", args=(256,))
runner = LocalRunner(task, n_parallel=2, option=MeasureOption(repeat=1, min_repeat_ms=1))
results = runner.run([{"mode": 0}, {"mode": 0}])
assert [r.error for r in results] == [0, 0], results
if sys.argv[1] == "hold" and os.fork() == 0:  # a child of the tuner holding its pipe ends
    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(20)"])
print(" ".join(str(w[0].pid) for w in runner._workers), flush=True)
os.kill(os.getpid(), 9)  # the tuner dies without closing its runner
"""


def _finished(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # exited, not reaped
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("other_holder", [False, True])
def test_workers_of_a_killed_tuner_exit(other_holder, tmp_path):
    # A tuner killed mid-run (Ctrl-C twice, the OOM killer, a notebook restart) must not leave
    # its build workers behind: each held its own pipe's other end, so none ever read EOF.
    import subprocess
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "pids.txt"  # a file, not a pipe: a surviving worker would hold a pipe open
    with open(out, "w") as f:
        proc = subprocess.run(
            [sys.executable, "-c", _KILLED_TUNER, "hold" if other_holder else "alone"],
            cwd=root,
            stdout=f,
            stderr=subprocess.DEVNULL,
            timeout=120,
        )
    text = out.read_text()
    assert proc.returncode == -9, text
    pids = [int(p) for p in text.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 10
    while not all(_finished(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [p for p in pids if not _finished(p)]
    for p in left:
        os.kill(p, 9)
    assert not left, f"workers {left} outlived their tuner"


def _mm_task(n: int = 64):
    def mm(n):
        A = tvm.placeholder((n, n), name="A")
        B = tvm.placeholder((n, n), name="B")
        k = tvm.reduce_axis((0, n), name="k")
        return [A, B, tvm.compute((n, n), lambda i, j: tvm.sum(A[i, k] * B[k, j], axis=k))]

    return autotvm.auto_task(mm, (n,))


def test_time_budget_ends_the_search(tmp_path):
    task = _mm_task()
    opt = MeasureOption(repeat=1, min_repeat_ms=1)
    log = tmp_path / "log.json"
    tuner = autotvm.RandomTuner(task, seed=0)
    # no time: no batch is proposed, nothing measured
    assert tuner.tune(50, opt, log_file=log, progress=False, verify=False, time_budget_s=0) is None
    assert tuner.trials == 0 and not log.exists()
    with pytest.raises(ValueError, match="time_budget_s"):
        tuner.tune(4, opt, progress=False, time_budget_s=-1.0)
    # a generous budget: the trial count ends the search, as without one
    tuner.tune(4, opt, log_file=log, n_parallel=2, progress=False, verify=False, time_budget_s=600)
    recs = list(record.load(log, verified=False))
    assert len(recs) == 4 and all(r["error"] == OK for r in recs)


def test_worker_records_the_tuners_loop_features(tmp_path):
    # The evolutionary tuner hands the runner the loop features it computed for its proposals;
    # every record's features must still be those of the code its configuration lowers to.
    from pytvmbridge.autotvm.features import loop_features

    task = _mm_task()
    tuner = autotvm.EvolutionaryTuner(task, seed=0, min_train=4)
    opt = MeasureOption(repeat=1, min_repeat_ms=1)
    log = tmp_path / "log.json"
    tuner.tune(12, opt, log_file=log, n_parallel=2, progress=False, verify=False)
    recs = list(record.load(log, verified=False))
    assert len(recs) >= 8
    assert any(json.dumps(r["config"], sort_keys=True) in tuner._loop_features for r in recs)
    # (a build the worker did not finish in time on a loaded machine is an error record,
    # with no features: what was lowered is what the property is about)
    lowered = [r for r in recs if r["error"] == OK]
    assert len(lowered) >= 4
    for r in lowered:
        assert r["features"] == loop_features(*task.instantiate(r["config"]))


def test_canonical_points_are_cached_and_copied():
    task = _mm_task()
    fresh = _mm_task()
    rng = random.Random(3)
    for _ in range(20):
        c = task.space.sample(rng)
        first = task.canonical(c)
        again = task.canonical(c)
        assert first == again == fresh.canonical(c)  # the cache answers as a fresh space does
        again[next(iter(again))]["x"] = 1  # the caller's copy, not the cache's
        assert task.canonical(c) == first


def test_a_dropped_runner_reaps_its_workers():
    # without close() or `with`, the workers stayed as zombies until the next runner started
    import gc
    import time

    task = _mm_task(16)
    runner = autotvm.LocalRunner(
        task, n_parallel=2, option=MeasureOption(repeat=1, min_repeat_ms=1)
    )
    (result,) = runner.run([task.space.default()])
    assert result.error == 0
    pids = [w[0].pid for w in runner._workers if w is not None]
    assert pids
    del runner
    gc.collect()

    def state(pid: int) -> str:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().split()[2]
        except FileNotFoundError:
            return "gone"

    deadline = time.monotonic() + 10
    while any(state(p) != "gone" for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [state(p) for p in pids] == ["gone"] * len(pids)


def test_an_interrupt_of_the_process_group_is_the_tuners_alone():
    # Jupyter (and a terminal's Ctrl-C) signals the whole process group: each worker printed a
    # KeyboardInterrupt traceback of its own into the cell
    import subprocess
    import textwrap

    script = textwrap.dedent("""
        import os, signal, sys, threading
        import pytvmbridge as tvm
        from pytvmbridge import autotvm

        def mm(n):
            a = tvm.placeholder((n, n), name="A")
            b = tvm.placeholder((n, n), name="B")
            k = tvm.reduce_axis((0, n), name="k")
            c = tvm.compute((n, n), lambda i, j: tvm.sum(a[i, k] * b[k, j], axis=k), name="C")
            return [a, b, c]

        task = autotvm.auto_task(mm, (64,))
        tuner = autotvm.EvolutionaryTuner(task, seed=0)
        opt = autotvm.MeasureOption(repeat=1, min_repeat_ms=1)
        threading.Timer(3.0, lambda: os.killpg(os.getpgrp(), signal.SIGINT)).start()
        try:
            tuner.tune(100000, opt, n_parallel=2, progress=False, verify=False)
        except KeyboardInterrupt:
            print("interrupted in the tuner after", tuner.trials, "trials", file=sys.stderr)
    """)
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,  # a process group of its own to signal
    )
    assert "interrupted in the tuner" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
