"""Replaying a tuning log builds the schedule that was measured, and the final verification
only trusts a candidate that beats the analytical point round by round."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import autotvm
from pytvmbridge.autotvm import record
from pytvmbridge.autotvm import tuner as tuner_mod
from pytvmbridge.autotvm.dispatch import schedule_config
from pytvmbridge.autotvm.measure import schedule_hash


def matmul(n):
    A = tvm.placeholder((n, n), name="A")
    B = tvm.placeholder((n, n), name="B")
    k = tvm.reduce_axis((0, n), name="k")
    return [A, B, tvm.compute((n, n), lambda i, j: tvm.sum(A[i, k] * B[k, j], axis=k), name="C")]


def _tuned_log(tmp_path, n=64, trials=6):
    task = autotvm.auto_task(matmul, (n,))
    log = tmp_path / "mm.json"
    opt = autotvm.MeasureOption(repeat=2, min_repeat_ms=2)
    tuner = autotvm.RandomTuner(task, seed=3)
    tuner.tune(trials, opt, log_file=log, n_parallel=2, progress=False)
    return task, log


@pytest.fixture(scope="module")
def tuned_log(tmp_path_factory):
    """One tuning run, read (never written) by the tests below: each tuning takes seconds."""
    return _tuned_log(tmp_path_factory.mktemp("replay"))


def test_every_record_replays_to_the_schedule_it_measured(tuned_log):
    task, log = tuned_log
    recs = [r for r in record.load(log) if r["error"] == 0]
    assert len(recs) >= 6  # the search's trials and the verification's re-measurements
    hashes = set()
    for r in recs:
        assert len(r["schedule"]) == 16
        # the configuration read back from the JSON log builds exactly what was timed
        assert schedule_hash(*task.instantiate(r["config"])) == r["schedule"]
        hashes.add(r["schedule"])
    assert len(hashes) > 1  # distinct candidates really are distinct schedules


def test_apply_history_best_builds_the_measured_schedule_and_computes_the_product(tuned_log):
    task, log = tuned_log
    best = record.best_records(record.load(log))[task.workload_key]
    assert best["chosen"]  # the verification's choice
    # what a compiler does under apply_history_best: fresh tensors, the config it is given
    args = matmul(64)
    with autotvm.apply_history_best(log):
        config = schedule_config(args)
    assert config == best["config"]
    s = tvm.create_schedule(args[2].op)
    tvm.auto_schedule(s, config=config)
    assert schedule_hash(s, args) == best["schedule"]
    f = tvm.build(s, args)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 64)).astype("float32")
    b = rng.standard_normal((64, 64)).astype("float32")
    c = np.zeros((64, 64), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


# Scalar rows, no packing, no threads: a schedule different from the analytical one.
OTHER = {"C": {"tile_rows": 1, "tile_vectors": 1, "pack": 0, "parallel_depth": 0}}


def test_verify_leaves_out_a_config_that_no_longer_builds_what_was_measured(tmp_path):
    task = autotvm.auto_task(matmul, (64,))
    tuner = autotvm.RandomTuner(task, seed=0)
    default = task.canonical(task.space.default())
    other = task.canonical(OTHER)
    default_rec = {"schedule": schedule_hash(*task.instantiate(default)), "error": 0,
                   "costs": [1e-3]}  # fmt: skip
    tuner._observe(default, 1e-3, default_rec)
    # its record says another schedule was timed (a log from a changed scheduler)
    tuner._observe(other, 1e-9, {"schedule": "0123456789abcdef"})
    with pytest.warns(UserWarning, match="not the measured 0123456789abcdef"):
        best = tuner.verify(tmp_path / "v.json", rounds=2, min_repeat_ms=1)
    # nothing left to compare with: the analytical point stands, re-measured alone and logged
    # as the verification's choice
    assert best["config"] == default and best["chosen"] and tuner.best_config == default
    assert tuner.verified["configs"] == [default] and tuner.verified["chosen"] == 0
    [rec] = list(record.load(tmp_path / "v.json"))
    assert rec["config"] == default and rec["chosen"] and rec["schedule"] == default_rec["schedule"]


def _fake_times(monkeypatch, times):
    def fake(task, configs, rounds, min_repeat_ms, seed, settle_s):
        assert len(configs) == len(times) and rounds == len(times[0])
        return times

    monkeypatch.setattr(tuner_mod, "measure_in_process", fake)


def _tuner_with(task, n_candidates):
    tuner = autotvm.RandomTuner(task, seed=0)
    default = task.canonical(task.space.default())
    tuner._observe(default, 1e-3, None)
    import random

    rng = random.Random(5)
    while len(tuner.history) < n_candidates + 1:
        c = tuner._fresh(task.space.sample(rng))
        if c is not None:
            tuner._observe(c, 1e-4 * len(tuner.history), None)
    return tuner


def test_verify_needs_a_win_in_most_rounds_not_only_a_lower_median(monkeypatch, tmp_path):
    task = autotvm.auto_task(matmul, (64,))
    tuner = _tuner_with(task, 2)
    base = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    # candidate 1: a lower median, but slower in three of the seven rounds (a bimodal timing)
    bimodal = [0.8, 0.8, 0.8, 0.8, 1.9, 1.9, 1.9]
    # candidate 2: 1% faster in every round (within the margin)
    marginal = [0.99] * 7
    _fake_times(monkeypatch, [base, bimodal, marginal])
    best = tuner.verify(tmp_path / "a.json")
    assert tuner.verified["chosen"] == 0
    assert best["config"] == task.canonical(task.space.default())
    assert tuner.verified["ratios"][1] == pytest.approx(0.8)
    assert tuner.verified["ratios"][2] == pytest.approx(0.99)


def test_verify_takes_a_candidate_faster_in_most_rounds(monkeypatch, tmp_path):
    task = autotvm.auto_task(matmul, (64,))
    tuner = _tuner_with(task, 3)
    base = [1.0, 1.2, 1.0, 1.1, 1.0, 1.0, 1.3]  # drifting load hits every config alike
    steady = [0.9 * b for b in base]  # 10% faster, round by round
    steady[3] = 1.2  # one noisy round is allowed
    better = [0.85 * b for b in base]
    better[0] = better[1] = 5.0  # faster overall, but slower in two rounds: too often
    _fake_times(monkeypatch, [base, better, steady, base])
    best = tuner.verify(tmp_path / "b.json")
    assert tuner.verified["chosen"] == 2
    assert best["config"] == tuner.verified["configs"][2]
    recs = list(record.load(tmp_path / "b.json"))
    assert [r["chosen"] for r in recs] == [False, False, True, False]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a verified choice: no fallback warning
        with autotvm.apply_history_best(tmp_path / "b.json") as ctx:
            assert ctx.best(task.workload_key)["config"] == tuner.verified["configs"][2]
