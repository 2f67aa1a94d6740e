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
    assert len(asked) == 2 and asked[1][0] is not asked[0][0]  # the tuned module, built once
    assert scale.compilations == 2
    np.testing.assert_allclose(scale(x), want, rtol=1e-6, atol=1e-6)
    assert len(asked) == 3 and asked[2][0] is asked[0][0]  # back to the default module
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


# --- a damaged graph guard verdict ------------------------------------------------------------


def _guard_case():
    """A small graph, a point of its space, and the verdict line the guard writes on it (the
    tuned graph lost: the analytical schedule kept)."""
    from pytvmbridge.autotvm import graph_tuning

    A = tvm.placeholder((16, 16), name="A")
    B = tvm.compute((16, 16), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    outputs = [A, B]
    config = {"B": {"vectorize": 1}}  # the guard only times it (faked below)
    verdict = {
        "graph_guard": graph_tuning._guard_key(outputs, [config], "llvm"),
        "kept": False,
        "choice": -1,
        "ratio": 1.2,
        "wins": 0,
        "ratios": [1.2],
        "wins_each": [0],
        "rounds": 7,
        "analytical_s": [1e-3] * 7,
        "tuned_s": [[1.2e-3] * 7],
    }
    return outputs, config, verdict


def _set(**fields):
    def damage(v):
        return {**v, **fields}

    return damage


def _drop(*keys):
    def damage(v):
        return {k: x for k, x in v.items() if k not in keys}

    return damage


@pytest.mark.parametrize(
    "damage, why",
    [
        (_drop("kept", "choice"), r"'kept' must be true or false, found None"),
        (_set(kept=True, choice="0"), r"'choice' must be an integer >= -1, found '0'"),
        (_set(kept=True, choice=0.0), r"'choice' must be an integer >= -1, found 0\.0"),
        (_set(kept=True, choice=3), r"'choice' 3 is not one of the 1 candidates"),
        (_set(kept=True), r"'kept' True contradicts 'choice' -1"),
        (_set(analytical_s=[]), r"'analytical_s' must be a list of positive times, found \[\]"),
        (_drop("ratios"), r"'ratios' must be a list of 1 numbers"),
        (_set(wins_each=[True]), r"'wins_each' must be a list of 1 counts"),
    ],
)
def test_a_damaged_guard_verdict_is_skipped_and_the_guard_times_again(
    tmp_path, monkeypatch, damage, why
):
    from pytvmbridge.autotvm import graph_tuning, measure

    outputs, config, good = _guard_case()
    calls = []

    def fake(bench, configs, rounds, *rest):
        calls.append(len(configs))
        return [[1.0] * rounds, [0.5] * rounds]  # the tuned graph twice as fast every round

    monkeypatch.setattr(measure, "measure_in_process", fake)
    # control: the intact verdict (the analytical schedule kept) is reused, nothing is timed
    intact = tmp_path / "intact.json"
    intact.write_text(json.dumps(good) + "\n")
    graph_tuning._verdicts.clear()
    assert graph_tuning.guard(outputs, config, log=str(intact)) is None
    assert calls == []
    # the damaged line is skipped with a warning; the guard times the graphs as with no verdict
    log = tmp_path / "damaged.json"
    log.write_text(json.dumps(damage(good)) + "\n")
    graph_tuning._verdicts.clear()
    with pytest.warns(UserWarning, match=r"damaged\.json:1: not a valid graph guard verdict"):
        assert graph_tuning.guard(outputs, config, log=str(log)) == config
    assert calls == [2]
    lines = log.read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["choice"] == 0
    # the next compile (a fresh process) reads the new verdict and times nothing
    graph_tuning._verdicts.clear()
    with pytest.warns(UserWarning, match=why):
        assert graph_tuning.guard(outputs, config, log=str(log), progress=True) == config
    assert calls == [2]


def test_a_guard_verdict_line_that_is_not_json_is_skipped(tmp_path, monkeypatch):
    from pytvmbridge.autotvm import graph_tuning, measure

    outputs, config, good = _guard_case()
    monkeypatch.setattr(
        measure, "measure_in_process", lambda bench, configs, rounds, *rest: [[1.0] * rounds] * 2
    )
    log = tmp_path / "cut.json"
    log.write_bytes(json.dumps(good)[:60].encode() + b"\xff\n")  # cut, and not UTF-8
    graph_tuning._verdicts.clear()
    with pytest.warns(UserWarning, match=r"cut\.json:1: not a JSON graph guard verdict"):
        assert graph_tuning.guard(outputs, config, log=str(log)) is None  # equal times: lost


# --- what tuning returns when it measures nothing new -----------------------------------------


def test_tuning_nothing_new_returns_the_record_apply_history_best_applies(tmp_path):
    from pytvmbridge.autotvm import dispatch

    task = autotvm.task.create("test_tuple_knob", args=(1024,))
    configs = list(task.space.grid())
    assert len(configs) == 6

    def rec(config, costs, **kw):
        return record.make_record(
            task.workload_key, task.description, "template", "llvm", config, costs, 0, **kw
        )

    # the search's cheapest trial is configs[5]; the verification chose configs[1]
    trials = [
        rec(c, [t]) for c, t in zip(configs, [6e-3, 5e-3, 4e-3, 3e-3, 2e-3, 1e-3], strict=True)
    ]
    batch = 1234.5
    verification = [
        rec(configs[0], [2.0e-3] * 3, verified=batch, chosen=False),
        rec(configs[1], [1.8e-3] * 3, verified=batch, chosen=True),
        rec(configs[5], [1.9e-3] * 3, verified=batch, chosen=False),
    ]
    log = tmp_path / "covered.json"
    record.append(log, trials + verification)
    n_lines = len(log.read_text().splitlines())
    want = task.canonical(configs[1])
    applied = autotvm.apply_history_best(log).best(task.workload_key, task.target)
    assert task.canonical(applied["config"]) == want

    def returned(best):
        assert best is not None and best["chosen"] is True
        return task.canonical(best["config"])

    assert returned(autotvm.tune(task, n_trial=0, log_file=log, progress=False)) == want
    assert (
        returned(autotvm.tune(task, n_trial=0, log_file=log, progress=False, verify=False)) == want
    )
    tuner = autotvm.RandomTuner(task)
    assert returned(tuner.tune(0, log_file=log, progress=False, verify=False)) == want
    # the log covers the space: a grid search with trials to spare measures nothing
    best = autotvm.tune(
        task, n_trial=4, tuner="grid", log_file=log, n_parallel=1, progress=False,
        measure_option=FAST,
    )  # fmt: skip
    assert returned(best) == want
    # @kernel(tune=N, tuning_log_file=log)'s path
    assert task.canonical(dispatch.config_for(task, 4, log, progress=False)) == want
    assert len(log.read_text().splitlines()) == n_lines  # nothing measured, nothing logged


# --- measurement settings that cannot work ----------------------------------------------------


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: MeasureOption(timeout=float("inf")), r"MeasureOption: timeout must be a finite"),
        (
            lambda: MeasureOption(timeout=1e10),
            r"MeasureOption: timeout must be a finite .*got 10000000000\.0",
        ),
        (lambda: MeasureOption(min_repeat_ms=float("inf")), r"MeasureOption: min_repeat_ms must"),
        (lambda: MeasureOption(min_repeat_ms=float("nan")), r"min_repeat_ms must be a number >= 0"),
        (lambda: MeasureOption(build_timeout=float("inf")), r"MeasureOption: build_timeout must"),
        (lambda: MeasureOption(cooldown_interval=1e9), r"MeasureOption: cooldown_interval must"),
        (lambda: autotvm.LocalRunner(timeout=float("inf")), r"LocalRunner: timeout must be a fin"),
        (lambda: autotvm.LocalRunner(min_repeat_ms=float("inf")), r"LocalRunner: min_repeat_ms"),
        (lambda: autotvm.LocalRunner(number=0), r"LocalRunner: number must be an integer >= 1"),
        (lambda: autotvm.LocalBuilder(timeout=1e10), r"LocalBuilder: timeout must be a finite"),
    ],
)
def test_measurement_settings_past_any_clock_are_refused(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_long_but_finite_settings_and_an_infinite_slow_factor_stay_accepted():
    opt = MeasureOption(timeout=3600, min_repeat_ms=60000, slow_factor=float("inf"))
    assert (opt.timeout, opt.min_repeat_ms, opt.slow_factor) == (3600, 60000, float("inf"))
    assert autotvm.LocalRunner(timeout=86400).option.timeout == 86400


def test_an_interrupted_wait_leaves_no_worker_answer_in_the_pipe():
    # The wait for a measurement fails (as poll's OverflowError did for a huge timeout) after
    # the worker got the request: its answer must not be read as the next build's.
    task = autotvm.auto_task(_scale_task, (1024,))
    config = task.space.default()
    with autotvm.LocalRunner(task, n_parallel=1, option=FAST) as runner:
        pending = runner.submit([config])
        [(_, k)] = pending[1]
        conn = runner._workers[k][1]
        polls = []

        def poll(timeout=0.0, real=conn.poll):
            polls.append(timeout)
            if len(polls) == 2:  # the measurement's wait, its request sent
                raise OverflowError("timestamp too large to convert to C _PyTime_t")
            return real(timeout)

        conn.poll = poll
        with pytest.raises(OverflowError):
            runner.collect(pending)
        assert len(polls) == 2
        [r] = runner.run([config])
        assert (r.error_name, r.error_msg) == ("OK", "") and len(r.costs) == FAST.repeat


# --- tuning log paths -------------------------------------------------------------------------


def test_apply_history_best_checks_what_it_is_given(tmp_path):
    with pytest.raises(ValueError, match=r"logs\[0\] '.*' is a directory, not a tuning log"):
        autotvm.apply_history_best(tmp_path)
    for bad, name in [(None, "NoneType"), (5, "int"), (b"log.json", "bytes")]:
        with pytest.raises(TypeError, match=rf"logs must be a log file path .*, got {name}$"):
            autotvm.apply_history_best(bad)
    with pytest.raises(TypeError, match=r"logs\[1\] must be a tuning log path .*, got int"):
        autotvm.apply_history_best([str(tmp_path / "a.json"), 5])
    # a missing file holds no records (a log the first tuning run writes)
    assert autotvm.apply_history_best(tmp_path / "none.json").best("w0") is None
    # records themselves are taken, a damaged one skipped with a warning
    good = _records(2)
    bad = {**good[0], "costs": "fast"}
    with pytest.warns(UserWarning, match=r"logs\[2\] is not a valid tuning record"):
        ctx = autotvm.apply_history_best([*good, bad])
    assert [ctx.best(f"w{k}")["config"] for k in range(2)] == [{"B": {"k": 0}}, {"B": {"k": 1}}]


def test_exiting_an_apply_history_best_never_entered_is_a_clear_error(tmp_path):
    ctx = autotvm.apply_history_best(tmp_path / "none.json")
    with pytest.raises(ValueError, match=r"this context is not active in this thread"):
        ctx.__exit__(None, None, None)
    with ctx:
        assert record.current() is ctx
    assert record.current() is None
    with pytest.raises(ValueError, match=r"not active"):
        ctx.__exit__(None, None, None)  # exited already


def test_tuning_log_file_options_are_checked(tmp_path):
    from pytvmbridge.autotvm import graph_tuning

    assert record.context_for_option(None) is None
    with pytest.raises(ValueError, match=r"tuning_log_file '.*' is a directory"):
        record.context_for_option(tmp_path)
    with pytest.raises(TypeError, match=r"tuning_log_file must be a tuning log path .*, got int"):
        record.context_for_option(5)
    with pytest.raises(ValueError, match=r"options\['tuning_log_file'\] '.*' is a directory"):
        graph_tuning.graph_tuning(None, "llvm", {"tuning_log_file": str(tmp_path)})

    @tvm.kernel(tuning_log_file=str(tmp_path))
    def double(A):
        return tvm.compute(A.shape, lambda i: A[i] * 2.0, name="B")

    with pytest.raises(ValueError, match=r"tuning_log_file '.*' is a directory"):
        double(np.ones(64, "float32"))


# --- template knobs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"axis": 16, "num_outputs": 1.5}, TypeError, r"'x': num_outputs must be an integer >= 1"),
        ({"axis": 16, "num_outputs": "2"}, TypeError, r"'x': num_outputs must be an integer"),
        ({"axis": 16, "num_outputs": 0}, ValueError, r"'x': num_outputs must be an integer >= 1"),
        ({"axis": 16, "max_factor": 0}, ValueError, r"'x': max_factor must be an integer >= 1"),
        ({"axis": 16, "max_factor": 2.5}, TypeError, r"'x': max_factor must be an integer >= 1"),
        ({"axis": -4}, ValueError, r"'x': axis extent must be >= 0, got -4"),
        ({"axis": True}, TypeError, r"'x': axis must be an IterVar or an int extent"),
    ],
)
def test_define_split_refuses_bad_arguments_naming_the_knob(kwargs, error, message):
    with pytest.raises(error, match=message):
        autotvm.ConfigSpace().define_split("x", **kwargs)


def test_define_split_limits_and_an_empty_axis():
    cfg = autotvm.ConfigSpace()
    cfg.define_split("x", 16, num_outputs=2, max_factor=4)
    assert cfg.knobs["x"] == [[16, 1], [8, 2], [4, 4]]  # inner factors 1, 2, 4 of 16
    cfg.define_split("e", 0, num_outputs=3)
    assert cfg.knobs["e"] == [[1, 1, 1]] and cfg["e"].size == [1, 1, 1]
    assert len(cfg) == 3


@pytest.mark.parametrize(
    "candidate, error, message",
    [
        ([[0, 5]], ValueError, r"'r': candidate \[0, 5\] is not an order of the 2 axes"),
        ([[0, 0]], ValueError, r"candidate \[0, 0\] is not an order"),
        ([[1]], ValueError, r"candidate \[1\] is not an order of the 2 axes"),
        ([[1.0, 0]], ValueError, r"candidate \[1\.0, 0\] is not an order"),
        ([5], TypeError, r"'r': each candidate must be a list of axis indices, got 5"),
    ],
)
def test_define_reorder_refuses_candidates_that_are_not_orders(candidate, error, message):
    with pytest.raises(error, match=message):
        autotvm.ConfigSpace().define_reorder("r", [0, 1], policy="candidate", candidate=candidate)


def test_define_reorder_keeps_valid_candidates():
    cfg = autotvm.ConfigSpace()
    cfg.define_reorder("r", ["i", "j", "k"], policy="candidate", candidate=[(2, 1, 0), [0, 2, 1]])
    assert cfg.knobs["r"] == [[2, 1, 0], [0, 2, 1]]


@autotvm.template("test_split_any_extent")
def split_any_extent_template(n):
    cfg = autotvm.get_config()
    A = tvm.placeholder((n,), name="A")
    B = tvm.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = tvm.create_schedule(B.op)
    cfg.define_split("x", B.op.axis[0], num_outputs=2)
    cfg["x"].apply(s, B, B.op.axis[0])
    return s, [A, B]


def test_a_template_over_an_empty_tensor_runs_outside_tuning():
    s, args = split_any_extent_template(0)
    f = tvm.build(s, args)
    b = np.empty(0, "float32")
    f(np.empty(0, "float32"), b)
    assert b.shape == (0,)
    assert len(autotvm.task.create("test_split_any_extent", args=(0,)).space) == 1
    assert len(autotvm.task.create("test_split_any_extent", args=(12,)).space) == 6


@autotvm.template("test_returns_no_schedule")
def returns_no_schedule_template(what):
    A = tvm.placeholder((8,), name="A")
    B = tvm.compute((8,), lambda i: A[i] + 1.0, name="B")
    s = tvm.create_schedule(B.op)
    return {"int": 5, "one": s, "swapped": ([A, B], s)}[what]


@pytest.mark.parametrize(
    "what, found", [("int", "int 5"), ("one", "Schedule"), ("swapped", "tuple")]
)
def test_a_template_returning_something_else_is_named(what, found):
    with pytest.raises(
        TypeError,
        match=rf"template 'test_returns_no_schedule' must return \(schedule, build_args\).*"
        rf"got {found}",
    ):
        autotvm.task.create("test_returns_no_schedule", args=(what,))
