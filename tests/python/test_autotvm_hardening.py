"""Tuning from a new user's side: damaged logs, bad arguments, a kernel called before its
log is applied, early stopping over several tasks, and the FLOP counts the GFLOPS shown
come from."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import pytvmbridge as tvm
import tests.python.test_autotvm  # noqa: F401  (registers the templates)
from pytvmbridge import autotvm, tc
from pytvmbridge.autotvm import record
from pytvmbridge.autotvm.measure import OK, MeasureOption

FAST = MeasureOption(repeat=1, min_repeat_ms=1)


def _records(n):
    # an automatic scheduler's point is {stage: {knob: int}} (record.record_problem checks it)
    return [
        record.make_record(f"w{k}", f"demo{k}()", "auto", "llvm", {"B": {"k": k}}, [1e-3], 0)
        for k in range(n)
    ]


def test_append_after_a_cut_line_keeps_the_new_record(tmp_path):
    log = tmp_path / "cut.json"
    first, second = _records(2)
    record.append(log, [first])
    with open(log, "a") as f:
        f.write(json.dumps(second)[:40])  # a crash in the middle of a line
    third = record.make_record("w2", "demo2()", "auto", "llvm", {"B": {"k": 2}}, [2e-3], 0)
    record.append(log, [third])
    with pytest.warns(UserWarning, match=r"cut\.json:2: not a JSON record"):
        loaded = list(record.load(log))
    assert [r["config"] for r in loaded] == [{"B": {"k": 0}}, {"B": {"k": 2}}]


def test_a_line_that_is_not_utf8_is_skipped_with_a_warning(tmp_path):
    log = tmp_path / "bytes.json"
    a, b = _records(2)
    record.append(log, [a])
    with open(log, "ab") as f:
        f.write(b'{"workload": "\xff\xfe"}\n')
    record.append(log, [b])
    with pytest.warns(UserWarning, match=r"bytes\.json:2: not a JSON record"):
        loaded = list(record.load(log))
    assert [r["workload"] for r in loaded] == ["w0", "w1"]


def test_a_deeply_nested_line_and_knobs_past_int64_are_skipped(tmp_path):
    # Python's JSON parser raised RecursionError on the first; the second reached the
    # automatic scheduler, whose C++ knobs are int64, as pybind11's RuntimeError
    log = tmp_path / "odd.json"
    a, b = _records(2)
    huge = record.make_record("w9", "demo9()", "auto", "llvm", {"B": {"k": 2**70}}, [1e-3], 0)
    record.append(log, [a])
    with open(log, "a") as f:
        f.write("[" * 100000 + "\n")
        f.write(json.dumps(huge) + "\n")
    record.append(log, [b])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = list(record.load(log))
    assert [r["workload"] for r in loaded] == ["w0", "w1"]
    text = [str(w.message) for w in caught]
    assert any("odd.json:2: not a JSON record" in t for t in text), text
    assert any("odd.json:3: not a valid tuning record" in t for t in text), text


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"n_trial": 1.5}, ValueError, "n_trial must be an integer >= 0, got 1.5"),
        ({"n_trial": True}, ValueError, "n_trial must be an integer >= 0, got True"),
        ({"n_parallel": 0}, ValueError, "n_parallel must be an integer >= 1 or None, got 0"),
        ({"early_stopping": 0}, ValueError, "early_stopping must be an integer >= 1 or None"),
        ({"measure_option": {"repeat": 1}}, TypeError, "measure_option must be an autotvm"),
        ({"tuner": 5}, TypeError, "tuner must be one of .* or a Tuner subclass, got 5"),
    ],
)
def test_bad_tuning_arguments_are_refused_before_any_work(kwargs, error, message):
    task = autotvm.task.create("test_matmul", args=(16,))
    args = {"n_trial": 2, "progress": False, **kwargs}
    with pytest.raises(error, match=message):
        autotvm.tune(task, **args)
    if "tuner" not in kwargs:
        with pytest.raises(error, match=message):
            autotvm.RandomTuner(task).tune(**args)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"repeat": 0}, "repeat must be an integer >= 1, got 0"),
        ({"repeat": 2.5}, "repeat must be an integer >= 1"),
        ({"timeout": -1}, "timeout must be a number > 0, got -1"),
        ({"min_repeat_ms": -5}, "min_repeat_ms must be a number >= 0"),
        ({"slow_factor": 0.5}, "slow_factor must be a number >= 1"),
        ({"overlap_builds": "yes"}, "overlap_builds must be True, False or None"),
    ],
)
def test_bad_measure_options_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MeasureOption(**kwargs)


def test_early_stopping_counts_trials_the_same_over_tasks(tmp_path):
    # Only mode 0 is valid: after it, `early_stopping` trials without improvement end the
    # search, whether one task is tuned alone or through the task scheduler.
    task = autotvm.task.create("test_wrong_after_first", args=(256,))
    log = tmp_path / "tasks.json"
    autotvm.tune_tasks(
        [task], 6, tuner="grid", log_file=log, early_stopping=2, n_parallel=1,
        measure_option=FAST, progress=False, verify=False,
    )  # fmt: skip
    modes = [r["config"]["mode"] for r in record.load(log)]
    assert modes == [0, 1, 2]


def test_apply_history_best_reaches_a_kernel_called_before(tmp_path):
    @tvm.kernel
    def scale(A):
        return tvm.compute(A.shape, lambda i: A[i] * 3.0 + 1.0, name="B")

    x = np.random.default_rng(1).standard_normal(4096).astype("float32")
    log = tmp_path / "k.json"
    best = autotvm.tune(
        scale, x, n_trial=2, tuner="random", log_file=log, n_parallel=1, progress=False,
        measure_option=FAST,
    )  # fmt: skip
    assert best["error"] == OK
    scale.cache_clear()
    asked = []
    variant = scale._variant

    def spy(*specs):
        found = variant(*specs)
        asked.append(found)
        return found

    scale._variant = spy  # what the C++ call path asks for a layout class it has not cached
    want = x * 3.0 + 1.0
    np.testing.assert_allclose(scale(x), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(scale(x), want, rtol=1e-6, atol=1e-6)
    assert len(asked) == 1  # the second call ran the cached default variant
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the log has this workload: no miss warning
        with autotvm.apply_history_best(log):
            np.testing.assert_allclose(scale(x), want, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(scale(x), want, rtol=1e-6, atol=1e-6)
    assert len(asked) == 2 and asked[1] is not asked[0]  # the tuned variant, built once
    assert scale.compilations == 2
    np.testing.assert_allclose(scale(x), want, rtol=1e-6, atol=1e-6)
    assert len(asked) == 3 and asked[2] is asked[0]  # back to the default variant
    assert scale.compilations == 2


def test_flop_count_includes_intermediate_stages_and_symbolic_sizes():
    def matmul_relu(n):
        A = tvm.placeholder((n, n), name="A")
        B = tvm.placeholder((n, n), name="B")
        k = tvm.reduce_axis((0, n), name="k")
        C = tvm.compute((n, n), lambda i, j: tvm.sum(A[i, k] * B[k, j], axis=k), name="C")
        return [A, B, tvm.compute((n, n), lambda i, j: tvm.max(C[i, j], 0.0), name="D")]

    assert autotvm.auto_task(matmul_relu, (32,)).flop == 2 * 32**3 + 32**2
    mm = tc.define("def mm(float(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k) * B(k,n) }")
    a, b = np.ones((8, 16), "float32"), np.ones((16, 5), "float32")
    [task] = autotvm.extract_from_tc(mm, a, b)
    assert task.flop == 2 * 8 * 16 * 5


@autotvm.template("test_tuple_knob")
def tuple_knob_template(n):
    cfg = autotvm.get_config()
    cfg.define_knob("tile", [(4, 1), (8, 2), (16, 4)])
    cfg.define_knob("flag", np.array([0, 1]))  # NumPy scalars: taken as Python ints
    A = tvm.placeholder((n,), name="A")
    B = tvm.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = tvm.create_schedule(B.op)
    tile, inner = cfg["tile"].val  # a tuple, as defined, also when replayed from a log
    assert isinstance(cfg["tile"].val, tuple) and type(cfg["flag"].val) is int
    _, vec = s[B].split(B.op.axis[0], factor=tile * inner)
    if cfg["flag"].val:
        s[B].vectorize(vec)
    return s, [A, B]


def test_tuple_knobs_round_trip_the_log(tmp_path):
    task = autotvm.task.create("test_tuple_knob", args=(1024,))
    log = tmp_path / "tuple.json"
    autotvm.GridSearchTuner(task).tune(
        6, measure_option=FAST, log_file=log, n_parallel=1, progress=False, verify=False
    )
    recs = list(record.load(log))
    assert len(recs) == 6 and all(r["error"] == OK for r in recs)
    assert {tuple(r["config"]["tile"]) for r in recs} == {(4, 1), (8, 2), (16, 4)}
    # Read back: every record is already measured, and replays with the tuple
    again = autotvm.GridSearchTuner(task)
    assert again.resume(str(log)) == 6
    s, args = task.instantiate(recs[-1]["config"])
    f = tvm.build(s, args)
    a, b = np.arange(1024, dtype="float32"), np.empty(1024, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_knob_candidates_a_log_cannot_hold_are_refused():
    cfg = autotvm.ConfigSpace()
    with pytest.raises(TypeError, match=r"candidate \{1, 2\} cannot be written to a tuning log"):
        cfg.define_knob("s", [{1, 2}])
    with pytest.raises(TypeError, match="candidates must be a list of values, got 'abc'"):
        cfg.define_knob("t", "abc")


def test_tune_tasks_shows_one_bar_over_its_whole_budget(tmp_path, monkeypatch):
    import io
    import sys

    monkeypatch.setenv("PYTVMBRIDGE_PROGRESS", "1")
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)

    def scale(n):
        A = tvm.placeholder((n,), name="A")
        return [A, tvm.compute((n,), lambda i: A[i] * 3.0, name="B")]

    tasks = [autotvm.auto_task(scale, (n,), name=f"scale{n}") for n in (1024, 4096)]
    autotvm.tune_tasks(
        tasks, 4, tuner="random", log_file=tmp_path / "bar.json", n_parallel=1,
        measure_option=FAST, verify=False,
    )  # fmt: skip
    text = err.getvalue()
    import re

    # one bar over the 4 trials, not one per one-trial round (0/1, 1/1, 0/1...)
    counts = [(int(a), int(b)) for a, b in re.findall(r" (\d+)/(\d+) \[", text)]
    assert {b for _, b in counts} == {4} and (4, 4) in counts
    done = [a for a, _ in counts]
    assert done == sorted(done)  # never started again from 0
    assert "tuning scale1024 (1/2)" in text and "tuning scale4096 (2/2)" in text


def test_log_file_in_a_new_folder_is_made_and_a_directory_is_refused_up_front(tmp_path):
    @tvm.kernel
    def triple(A):
        return tvm.compute(A.shape, lambda i: A[i] * 3.0, name="B")

    x = np.arange(256, dtype="float32")
    log = tmp_path / "logs" / "nested" / "triple.json"
    best = autotvm.tune(
        triple, x, n_trial=2, tuner="random", log_file=log, n_parallel=1, progress=False,
        measure_option=FAST,
    )  # fmt: skip
    assert best["error"] == OK
    assert len(list(record.load(log))) >= 2
    with autotvm.apply_history_best(log):
        np.testing.assert_array_equal(triple(x), x * 3.0)
    with pytest.raises(ValueError, match=r"log_file .* is a directory; give a file path"):
        autotvm.tune(triple, x, n_trial=2, log_file=tmp_path, progress=False)
    with pytest.raises(TypeError, match="log_file must be a path or None, got int"):
        autotvm.tune(triple, x, n_trial=2, log_file=3, progress=False)
    tasks = [autotvm.auto_task(lambda n: _scale_task(n), (64,), name="s64")]
    with pytest.raises(ValueError, match=r"log_file .* is a directory"):
        autotvm.tune_tasks(tasks, 2, log_file=tmp_path, progress=False)


def _scale_task(n):
    A = tvm.placeholder((n,), name="A")
    return [A, tvm.compute((n,), lambda i: A[i] * 3.0, name="B")]
