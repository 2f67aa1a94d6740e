"""The tuner's final choice: re-measured in process against the analytical schedule, never a
lucky in-worker timing; apply_history_best follows that verification."""

from __future__ import annotations

import json

import numpy as np

import pytvmbridge as tvm
from pytvmbridge import autotvm
from pytvmbridge.autotvm import record
from pytvmbridge.autotvm.measure import measure_in_process


def matmul(n):
    A = tvm.placeholder((n, n), name="A")
    B = tvm.placeholder((n, n), name="B")
    k = tvm.reduce_axis((0, n), name="k")
    return [A, B, tvm.compute((n, n), lambda i, j: tvm.sum(A[i, k] * B[k, j], axis=k), name="C")]


# Scalar rows, no packing, no threads: several times slower than the analytical point.
SLOW = {"C": {"tile_rows": 1, "tile_vectors": 1, "pack": 0, "parallel_depth": 0}}


def test_measure_in_process_times_each_config_each_round():
    task = autotvm.auto_task(matmul, (64,))
    times = measure_in_process(task, [task.space.default(), SLOW], rounds=3, min_repeat_ms=2)
    assert [len(t) for t in times] == [3, 3]
    assert all(x > 0 for t in times for x in t)


def test_verify_rejects_a_lucky_slow_candidate(tmp_path):
    task = autotvm.auto_task(matmul, (128,))
    tuner = autotvm.RandomTuner(task, seed=0)
    default = task.canonical(task.space.default())
    slow = task.canonical(SLOW)
    assert slow != default
    # What a noisy search can leave behind: the slow candidate timed (luckily) fastest.
    tuner._observe(default, 1e-3, None)
    tuner._observe(slow, 1e-9, None)
    log = tmp_path / "verify.json"
    best = tuner.verify(log, rounds=5, min_repeat_ms=5)
    assert best["config"] == default and best["chosen"]
    medians = tuner.verified["medians"]
    assert medians[1] > medians[0]  # re-measured, the slow one is slower
    recs = list(record.load(log))
    assert sorted(json.dumps(r["config"], sort_keys=True) for r in recs) == sorted(
        json.dumps(c, sort_keys=True) for c in (default, slow)
    )
    assert all(r["verified"] == recs[0]["verified"] for r in recs)
    with autotvm.apply_history_best(log) as ctx:
        assert ctx.best(task.workload_key)["config"] == default


def test_verify_with_no_candidate_left_still_records_the_analytical_choice(tmp_path):
    # Every other candidate failed or was cut short (infinite cost), as a loaded machine can
    # leave a short search: the analytical point is re-measured and logged as the choice, and
    # apply_history_best follows it (it used to return the search's record, unverified).
    task = autotvm.auto_task(matmul, (64,))
    tuner = autotvm.RandomTuner(task, seed=0)
    default = task.canonical(task.space.default())
    tuner._observe(default, 1e-3, None)
    tuner._observe(task.canonical(SLOW), float("inf"), None)
    log = tmp_path / "verify.json"
    best = tuner.verify(log, rounds=3, min_repeat_ms=2)
    assert best["config"] == default and best["chosen"] and best["verified"] is not None
    assert len(best["costs"]) == 3 and all(c > 0 for c in best["costs"])
    [rec] = list(record.load(log))
    assert rec["config"] == default and rec["chosen"]
    with autotvm.apply_history_best(log) as ctx:
        assert ctx.best(task.workload_key)["config"] == default


def _rec(config, cost, verified=None, chosen=False, error=0):
    return record.make_record(
        "w", "w(...)", "auto", "llvm", config, [cost], error, verified=verified, chosen=chosen
    )


def test_best_records_follow_the_latest_verification():
    a, b, c = {"C": {"x": 1}}, {"C": {"x": 2}}, {"C": {"x": 3}}
    recs = [_rec(a, 1e-6), _rec(b, 5e-6, verified=1.0, chosen=True), _rec(a, 4e-6, verified=1.0)]
    # a's search timing (1e-6) is the smallest, but the verification chose b
    assert record.best_records(recs)["w"]["config"] == b
    # a later verification wins over an earlier one; error records never count
    recs += [_rec(c, 9e-6, verified=2.0, chosen=True), _rec(a, 1e-7, verified=2.0, error=4)]
    assert record.best_records(recs)["w"]["config"] == c
    # without any verification: the cheapest valid record, as before
    assert record.best_records([_rec(a, 3e-6), _rec(b, 2e-6)])["w"]["config"] == b


def test_tuning_ends_with_a_verification_including_the_analytical_point(tmp_path):
    task = autotvm.auto_task(matmul, (64,))
    log = tmp_path / "t.json"
    opt = autotvm.MeasureOption(repeat=2, min_repeat_ms=2)
    best = autotvm.tune(task, n_trial=4, tuner="random", log_file=log, measure_option=opt,
                        n_parallel=2, progress=False)  # fmt: skip
    recs = list(record.load(log))
    verified = [r for r in recs if "verified" in r]
    default = task.canonical(task.space.default())
    assert default in [r["config"] for r in verified]
    assert sum(r["chosen"] for r in verified) == 1
    chosen = next(r for r in verified if r["chosen"])
    assert best["config"] == chosen["config"]
    # the chosen schedule computes the product
    a = np.random.default_rng(0).standard_normal((64, 64)).astype("float32")
    with autotvm.apply_history_best(log):
        s, args = task.instantiate(record.best_records(recs)[task.workload_key]["config"])
    f = tvm.build(s, args)
    out = np.zeros((64, 64), "float32")
    f(a, a, out)
    np.testing.assert_allclose(out, a @ a, rtol=1e-4, atol=1e-4)
