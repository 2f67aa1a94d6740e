"""AutoTVM code written for TVM, and logs written by hand: TVM's classic names
(``measure_option``, ``LocalBuilder``/``LocalRunner``, ``callback.log_to_file`` and
``progress_bar``, ``record.load_from_file``/``pick_best``, ``task.config_space``), the
tune_simple_template tutorial end to end, records that parse but are malformed, and kernels
tuned with the wrong number of example inputs."""

from __future__ import annotations

import io
import json
import logging
import math
import re
import time
import warnings

import numpy as np
import pytest

import pytvmbridge as tvm
import tests.python.test_autotvm  # noqa: F401  (registers the test templates)
from pytvmbridge import autotvm
from pytvmbridge.autotvm import record
from pytvmbridge.autotvm.measure import OK, TIMEOUT, MeasureOption, resolve_measure_option

FAST = MeasureOption(repeat=1, min_repeat_ms=1)


@autotvm.template("compat/matmul")
def matmul(N, L, M, dtype):
    """TVM's tune_simple_template tutorial template, as written there (``te`` is ``tvm``)."""
    A = tvm.placeholder((N, L), name="A", dtype=dtype)
    B = tvm.placeholder((L, M), name="B", dtype=dtype)
    k = tvm.reduce_axis((0, L), name="k")
    C = tvm.compute((N, M), lambda i, j: tvm.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = tvm.create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, k, yi, xi)
    return s, [A, B, C]


@tvm.kernel
def scale(A):
    return tvm.compute(A.shape, lambda i: A[i] * 3.0 + 1.0, name="B")


X = np.arange(1024, dtype="float32")


def _scale_task():
    [task] = autotvm.extract_tasks(scale, X)
    return task


def _good(task, config=None, cost=1e-3, **kw):
    config = task.space.default() if config is None else config
    return record.make_record(
        task.workload_key, task.description, task.kind, "llvm", config, [cost], 0,
        flop=task.flop, **kw,
    )  # fmt: skip


def _write(path, lines):
    with open(path, "w") as f:
        for line in lines:
            f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")


# --- 1. malformed records: skipped with one warning, never chosen, never a crash ---------------

_GOOD_COSTS = [1e-3]


def _bad_records(task):
    good = _good(task)
    return {
        "minimal": (
            {"workload": task.workload_key, "config": {}, "target": "llvm"},
            "'target' must be an object with a string 'name', got 'llvm'",
        ),
        "costs_str": (dict(good, costs=["x"]), "'costs' must be a list of numbers, got ['x']"),
        "costs_int": (dict(good, costs=5), "'costs' must be a list of numbers, got 5"),
        "config_list": (dict(good, config=[1, 2]), "'config' must be an object, got [1, 2]"),
        "verified_str": (dict(good, verified="x"), "'verified' must be a finite number, got 'x'"),
        "nan": (
            dict(good, costs=[math.nan]),
            "costs of a valid record must be positive finite seconds, got [nan]",
        ),
        "inf": (
            dict(good, costs=[math.inf]),
            "costs of a valid record must be positive finite seconds, got [inf]",
        ),
        "negative": (
            dict(good, costs=[-1e-9]),
            "costs of a valid record must be positive finite seconds, got [-1e-09]",
        ),
        "empty": (
            dict(good, costs=[]),
            "costs of a valid record must be positive finite seconds, got []",
        ),
        "stage_not_object": (
            dict(good, config={"B": "x"}),
            "'config' stage 'B' must map knobs to integers, got 'x'",
        ),
        "error_str": (dict(good, error="0"), "'error' must be an error code 0..6, got '0'"),
        "chosen_str": (dict(good, chosen="yes"), "'chosen' must be true or false, got 'yes'"),
    }


_CASES = [
    "minimal", "costs_str", "costs_int", "config_list", "verified_str", "nan", "inf",
    "negative", "empty", "stage_not_object", "error_str", "chosen_str",
]  # fmt: skip


@pytest.mark.parametrize("case", _CASES)
def test_a_malformed_record_is_skipped_with_one_warning_and_the_kernel_runs(tmp_path, case):
    task = _scale_task()
    assert sorted(_bad_records(task)) == sorted(_CASES)
    bad, reason = _bad_records(task)[case]
    good = _good(task)
    log = tmp_path / "log.json"
    _write(log, [bad, good])  # the malformed one first: it would win the tie or the NaN
    scale.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with autotvm.apply_history_best(str(log)) as ctx:
            out = scale(X)
            chosen = ctx.best(task.workload_key)
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert messages == [f"{log}:1: not a valid tuning record: {reason}, skipped"]
    np.testing.assert_array_equal(np.asarray(out), X * 3.0 + 1.0)
    assert chosen == good
    # the check is the one record_cost and best_records use: never chosen, whatever the source
    assert record.record_problem(bad) == reason
    assert record.record_cost(bad) == math.inf
    assert record.best_records([bad, good])[task.workload_key] == good


def test_a_nan_record_never_beats_a_valid_one_in_best_records():
    task = _scale_task()
    good = _good(task, cost=5e-3)
    for cost in (math.nan, math.inf, -1.0, 0.0):
        bad = dict(_good(task, cost=1e-9), costs=[cost])
        assert record.best_records([bad, good])[task.workload_key] is good
        assert record.best_records([good, bad])[task.workload_key] is good
    assert record.record_cost(good) == 5e-3


def test_a_template_record_whose_config_is_not_an_object_is_skipped(tmp_path):
    task = autotvm.task.create("compat/matmul", args=(16, 16, 16, "float32"))
    good = _good(task, {"tile_y": [4, 4], "tile_x": [2, 8]})
    bad = dict(good, config="x")
    log = tmp_path / "t.json"
    _write(log, [bad, good])
    with pytest.warns(UserWarning) as caught:
        with autotvm.apply_history_best(str(log)):
            s, args = matmul(16, 16, 16, "float32")
    assert [str(w.message) for w in caught] == [
        f"{log}:1: not a valid tuning record: 'config' must be an object, got 'x', skipped"
    ]
    # the good record's point was applied: the template split y by 4 and x by 8
    want = str(tvm.lower(*task.instantiate(good["config"]), simple_mode=True))
    assert str(tvm.lower(s, args, simple_mode=True)) == want


def test_a_template_record_with_a_knob_value_the_template_lacks_falls_back(tmp_path):
    # a log from an older version of the template: the value is no longer a candidate
    task = autotvm.task.create("compat/matmul", args=(16, 16, 16, "float32"))
    log = tmp_path / "old.json"
    _write(log, [_good(task, {"tile_y": [3, 5], "tile_x": [16, 1]})])
    with pytest.warns(UserWarning, match=r"does not fit the template's knobs \(config: knob "):
        with autotvm.apply_history_best(str(log)):
            s, args = matmul(16, 16, 16, "float32")
    default = str(tvm.lower(*task.instantiate(None), simple_mode=True))
    assert str(tvm.lower(s, args, simple_mode=True)) == default
    rng = np.random.default_rng(0)
    a, b = rng.random((16, 16), "float32"), rng.random((16, 16), "float32")
    c = np.zeros((16, 16), "float32")
    tvm.build(s, args)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_other_lines_of_a_log(tmp_path):
    task = _scale_task()
    good = _good(task)
    tvm_line = {"input": ["llvm", "matmul", [512], {}], "config": {}, "result": [[1e-3], 0]}
    log = tmp_path / "mixed.json"
    # a graph guard verdict (no workload): another kind of line, skipped silently
    _write(log, [{"graph_guard": "abc", "kept": True}, good, tvm_line, 5])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert list(record.load(log)) == [good]
    assert [str(w.message) for w in caught] == [
        f"{log}:3: a TVM AutoTVM record (pytvmbridge reads its own record format), skipped",
        f"{log}:4: not a valid tuning record: a JSON number, not an object, skipped",
    ]


def test_a_log_of_many_malformed_lines_warns_a_bounded_number_of_times(tmp_path):
    log = tmp_path / "many.json"
    _write(log, [{"workload": "w", "config": 1}] * 14)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert list(record.load(log)) == []
    messages = [str(w.message) for w in caught]
    assert len(messages) == 11
    assert messages[0].startswith(f"{log}:1: not a valid tuning record: 'config' must be")
    assert messages[9].startswith(f"{log}:10: ")
    assert messages[10] == f"{log}: 4 more lines that are not valid tuning records skipped"


# --- 2. the wrong number of example inputs ------------------------------------------------------


def test_tuning_a_kernel_with_the_wrong_number_of_inputs_is_a_type_error():
    start = time.perf_counter()
    msg = "kernel 'scale' takes 1 input array(s), got 2 example input(s) to tune it with"
    with pytest.raises(TypeError, match=re.escape(msg)):
        autotvm.tune(scale, X, X, n_trial=2, progress=False)
    with pytest.raises(TypeError, match=re.escape(msg)):
        autotvm.extract_tasks(scale, X, X)
    with pytest.raises(TypeError, match=re.escape(msg.replace("got 2", "got 0"))):
        autotvm.extract_from_kernel(scale)
    assert time.perf_counter() - start < 5  # refused before any worker or build


def test_auto_task_with_the_wrong_number_of_arguments_is_a_type_error():
    def add(n):
        A = tvm.placeholder((n,), name="A")
        return [A, tvm.compute((n,), lambda i: A[i] + 1.0, name="B")]

    with pytest.raises(
        TypeError,
        match=re.escape("auto_task: add(n) cannot take the 2 argument(s) given (too many"),
    ):
        autotvm.auto_task(add, (64, 3))
    with pytest.raises(TypeError, match=re.escape("auto_task: add(n) cannot take the 0 argum")):
        autotvm.auto_task(add, ())
    with pytest.raises(TypeError, match=r"for the @kernel 'scale' use autotvm\.extract_tasks"):
        autotvm.auto_task(scale, (X,))


# --- 3. TVM's classic names ---------------------------------------------------------------------


def test_config_space_is_the_tasks_space():
    task = autotvm.task.create("compat/matmul", args=(16, 16, 16, "float32"), target="llvm")
    assert task.config_space is task.space
    assert len(task.config_space) == 25  # 5 splits of 16 for each axis
    text = str(task.config_space)
    assert text.startswith("ConfigSpace (len=25, space_map=\n")
    assert "tile_y: split [[16, 1], [8, 2], [4, 4], [2, 8], [1, 16]] len=5" in text


def test_measure_option_builder_and_runner():
    opt = autotvm.measure_option(
        builder=autotvm.LocalBuilder(timeout=7, n_parallel=2),
        runner=autotvm.LocalRunner(number=5, repeat=2, min_repeat_ms=3, timeout=9,
                                   cooldown_interval=0),
    )  # fmt: skip
    assert set(opt) == {"builder", "runner"}
    option, n_parallel = resolve_measure_option(opt)
    assert (option.number, option.repeat, option.min_repeat_ms) == (5, 2, 3)
    assert (option.timeout, option.build_timeout, option.cooldown_interval) == (9, 7, 0)
    assert n_parallel == 2
    assert resolve_measure_option(opt, 3)[1] == 3  # tune's own n_parallel wins
    # TVM's defaults, and "local" for them
    option, n_parallel = resolve_measure_option(autotvm.measure_option("local", "local"))
    assert (option.number, option.repeat, option.min_repeat_ms, option.timeout) == (4, 3, 0, 10)
    assert (option.cooldown_interval, option.build_timeout, n_parallel) == (0.1, 10, None)


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: autotvm.measure_option(builder="rpc"), ValueError, "builder must be 'local'"),
        (lambda: autotvm.measure_option(runner="rpc"), ValueError, "runner must be 'local'"),
        (lambda: autotvm.measure_option(builder=5), TypeError, "builder must be an autotvm"),
        (lambda: autotvm.LocalRunner(10), TypeError, "got 10 as its first argument"),
        (lambda: autotvm.LocalRunner(number=0), ValueError, "number must be an integer >= 1"),
        (lambda: autotvm.LocalRunner(n_parallel=2), TypeError, "takes no n_parallel"),
        (lambda: autotvm.LocalBuilder(timeout=0), ValueError, "timeout must be a number > 0"),
        (lambda: autotvm.LocalBuilder(build_func="ndk"), ValueError, "build_func must be"),
        (
            lambda: autotvm.LocalRunner(autotvm.task.create("test_matmul", args=(16,)), number=5),
            TypeError,
            r"takes its settings as option=MeasureOption\(...\), not TVM's keywords \(number\)",
        ),
    ],
)
def test_bad_tvm_measure_settings(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_a_runner_without_a_task_only_describes_the_measurement():
    runner = autotvm.LocalRunner(number=2)
    with pytest.raises(ValueError, match="this LocalRunner has no task"):
        runner.run([{}])
    runner.close()  # nothing to stop
    with pytest.warns(UserWarning, match="enable_cpu_cache_flush has no effect"):
        autotvm.LocalRunner(enable_cpu_cache_flush=True)


def test_the_builders_timeout_is_the_builds(tmp_path):
    # mode 2 hangs while the template runs, which is the build phase
    task = autotvm.task.create("test_faulty", args=(64,))
    option, _ = resolve_measure_option(
        autotvm.measure_option(
            builder=autotvm.LocalBuilder(timeout=1),
            runner=autotvm.LocalRunner(timeout=30, cooldown_interval=0),
        )
    )
    with autotvm.LocalRunner(task, n_parallel=1, option=option) as runner:
        [r] = runner.run([{"mode": 2}])
    assert (r.error, r.error_msg) == (TIMEOUT, "building took longer than 1 s (killed)")


def test_cooldown_interval_rests_after_each_candidate():
    task = autotvm.task.create("test_matmul", args=(16,))
    option = MeasureOption(repeat=1, min_repeat_ms=0, number=1, cooldown_interval=0.3)
    configs = [task.space.default(), {**task.space.default(), "vec": 1}]
    with autotvm.LocalRunner(task, n_parallel=2, option=option) as runner:
        start = time.perf_counter()
        results = runner.run(configs)
        elapsed = time.perf_counter() - start
    assert [r.error for r in results] == [OK, OK]
    assert elapsed >= 0.6


def test_tune_calls_the_callbacks_after_each_batch_as_tvm_does(tmp_path):
    # every point of this space builds different code: no batch loses a duplicate
    task = autotvm.task.create("compat/matmul", args=(16, 16, 16, "float32"))
    calls = []
    flops_seen = []

    def spy(tuner, inputs, results):
        calls.append((tuner, list(inputs), list(results)))
        flops_seen.append(tuner.best_flops)

    out = io.StringIO()
    log = tmp_path / "cb.json"
    tuner = autotvm.tuner.RandomTuner(task)
    best = tuner.tune(
        n_trial=4,
        measure_option=autotvm.measure_option(
            builder=autotvm.LocalBuilder(n_parallel=2),
            runner=autotvm.LocalRunner(number=2, repeat=3, min_repeat_ms=1, cooldown_interval=0),
        ),
        callbacks=[
            spy,
            autotvm.callback.log_to_file(str(log)),
            autotvm.callback.progress_bar(4, prefix="[mm]", out=out),
        ],
    )
    assert [len(inputs) for _, inputs, _ in calls] == [2, 2]  # LocalBuilder(n_parallel=2)
    assert len(calls[0][2][0].costs) == 3  # the first is never cut short
    configs = [json.dumps(i.config, sort_keys=True) for _, ins, _ in calls for i in ins]
    assert len(set(configs)) == 4
    for tuner_seen, inputs, results in calls:
        assert tuner_seen is tuner
        for inp, res in zip(inputs, results, strict=True):
            assert isinstance(inp, autotvm.MeasureInput)
            assert (inp.target, inp.task) == ("llvm", task)
            assert inp.config == task.canonical(inp.config) == res.config
            # repeat=3 timings; one for a candidate cut short as much slower than the best
            assert res.error_no == OK and len(res.costs) == (1 if res.cut_short else 3)
            assert res.all_cost == res.build_s + res.measure_s > 0
    # log_to_file: the four trials, then the verification's records, the choice among them
    recs = list(record.load(log))
    trials = [r for r in recs if "verified" not in r]
    assert [r["config"] for r in trials] == [i.config for _, ins, _ in calls for i in ins]
    assert record.best_records(recs)[task.workload_key] == best
    assert best["chosen"] is True
    # progress_bar: TVM's line, the best as the tuner had it, ended by " Done."
    text = out.getvalue()
    last = text.split("\r")[-1]
    pattern = r"\[mm\] Current/Best: +(\d+\.\d\d)/ *(\d+\.\d\d) GFLOPS \| Progress: \(4/4\) \| "
    m = re.fullmatch(pattern + r"\d+\.\d\d s Done\.\n", last)
    assert m, text
    assert m.group(2) == f"{flops_seen[-1] / 1e9:.2f}"
    assert text.count("Progress:") == len(calls)


def test_log_to_file_takes_an_open_file_and_progress_bar_is_silent_at_debug(tmp_path):
    task = autotvm.task.create("compat/matmul", args=(16, 16, 16, "float32"))
    f = io.StringIO()
    out = io.StringIO()
    logger = logging.getLogger("autotvm")
    level = logger.level
    logger.setLevel(logging.DEBUG)  # TVM's rule: the per-trial log lines instead of the bar
    try:
        autotvm.tuner.GridSearchTuner(task).tune(
            n_trial=2, measure_option=FAST, n_parallel=1, verify=False,
            callbacks=[autotvm.callback.log_to_file(f), autotvm.callback.progress_bar(2, out=out)],
        )  # fmt: skip
    finally:
        logger.setLevel(level)
    lines = f.getvalue().splitlines()
    assert len(lines) == 2
    assert [json.loads(x)["config"] for x in lines] == list(task.space.grid())[:2]
    assert out.getvalue() == ""


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"callbacks": print}, TypeError, r"callbacks must be a list of functions .* \(put it"),
        ({"callbacks": [5]}, TypeError, "callbacks must be functions callback"),
        ({"si_prefix": "X"}, ValueError, "si_prefix must be one of"),
        ({"log_file": [print]}, TypeError, r"TVM's callbacks list goes in callbacks=\[\.\.\.\]"),
        ({"measure_option": {"runner": 1}}, TypeError, "measure_option must be an autotvm"),
    ],
)
def test_bad_callbacks_are_refused_before_any_work(kwargs, error, message):
    task = autotvm.task.create("test_matmul", args=(16,))
    with pytest.raises(error, match=message):
        autotvm.RandomTuner(task).tune(n_trial=2, **kwargs)
    with pytest.raises(error, match=message):
        autotvm.tune(task, n_trial=2, progress=False, **kwargs)
    with pytest.raises(ValueError, match="log protocol must be 'json'"):
        autotvm.callback.log_to_file("x.log", protocol="pickle")


def test_tune_a_kernel_with_tvms_measure_option_and_callbacks(tmp_path):
    log = tmp_path / "k.json"
    best = autotvm.tune(
        scale, X, n_trial=2, tuner="random", progress=False,
        measure_option=autotvm.measure_option(
            builder=autotvm.LocalBuilder(n_parallel=1),
            runner=autotvm.LocalRunner(number=3, repeat=1, min_repeat_ms=1, cooldown_interval=0),
        ),
        callbacks=[autotvm.callback.log_to_file(str(log))],
    )  # fmt: skip
    assert best["error"] == OK
    assert record.best_records(record.load(log))[best["workload"]] == best
    scale.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with autotvm.apply_history_best(str(log)) as ctx:
            np.testing.assert_array_equal(np.asarray(scale(X)), X * 3.0 + 1.0)
    assert ctx.best(best["workload"]) == best
    # the workload has a record: no "using the default schedule" note, no skipped line
    assert not [
        w for w in caught if "apply_history_best" in str(w.message) or ".json" in str(w.message)
    ]


def test_load_from_file_gives_input_result_pairs(tmp_path):
    task = autotvm.task.create("test_matmul", args=(16,))
    log = tmp_path / "pairs.json"
    recs = [
        _good(task, task.space.default(), 2e-3, build_s=0.5, measure_s=0.25),
        record.make_record(task.workload_key, task.description, "template", "llvm",
                           {"tile_j": [8, 2]}, [], 4, "wrong"),
    ]  # fmt: skip
    record.append(log, recs)
    pairs = list(record.load_from_file(log))
    assert len(pairs) == 2
    (inp, res), (_, res2) = pairs
    assert isinstance(inp, autotvm.MeasureInput)
    assert (inp.target, inp.config) == ("llvm", recs[0]["config"])
    assert (inp.task.name, inp.task.workload_key, inp.task.kind) == (
        "test_matmul", task.workload_key, "template"
    )  # fmt: skip
    assert inp.task.flop == task.flop
    assert (res.costs, res.error_no, res.all_cost, res.timestamp) == (
        [2e-3], 0, 0.75, recs[0]["timestamp"]
    )  # fmt: skip
    assert (res2.error_no, res2.error_name, res2.error_msg) == (4, "WRONG_ANSWER", "wrong")
    # encode writes the pair back as a record of the same measurement
    back = json.loads(record.encode(inp, res))
    for key in ("workload", "config", "costs", "error", "kind", "timestamp", "flop"):
        assert back[key] == recs[0][key]


def test_pick_best_keeps_the_best_record_per_workload_target_and_cpu(tmp_path):
    a = autotvm.task.create("test_matmul", args=(16,))
    b = _scale_task()
    d = a.space.default()
    a_recs = [_good(a, {**d, "vec": v}, t) for v, t in [(0, 3e-3), (1, 1e-3)]]
    far = _good(a, d, 1e-6)
    far["target"]["cpu"] = "another CPU"  # best there, not here: kept for that CPU
    b_recs = [_good(b, b.space.default(), t) for t in (2e-3, 5e-3)]
    log = tmp_path / "all.json"
    record.append(log, [a_recs[0], b_recs[0], far, a_recs[1], b_recs[1]])
    out = tmp_path / "best.json"
    assert record.pick_best(log, out) == 3
    assert list(record.load(out)) == [b_recs[0], far, a_recs[1]]
    # an existing output takes part: its better record of `a` stays, the rest is replaced
    better = _good(a, {**d, "tile_j": [8, 2]}, 5e-4)
    _write(out, [better])
    assert record.pick_best(log, out) == 3
    assert list(record.load(out)) == [b_recs[0], far, better]
    # and an open file works as TVM's does
    f = io.StringIO()
    assert record.pick_best(log, f) == 3
    assert [json.loads(x) for x in f.getvalue().splitlines()] == [b_recs[0], far, a_recs[1]]


def test_tvm_tune_simple_template_tutorial_end_to_end(tmp_path):
    # TVM's tutorial, with one changed import line (and sizes small enough for a test)
    N, L, M = 32, 32, 32
    task = autotvm.task.create("compat/matmul", args=(N, L, M, "float32"), target="llvm")
    assert "tile_x: split" in str(task.config_space)
    measure_option = autotvm.measure_option(builder="local", runner=autotvm.LocalRunner(number=5))
    log_file = str(tmp_path / "matmul.log")
    out = io.StringIO()
    tuner = autotvm.tuner.RandomTuner(task)
    tuner.tune(
        n_trial=8,
        measure_option=measure_option,
        callbacks=[
            autotvm.callback.progress_bar(8, prefix="[Task 1/1]", out=out),
            autotvm.callback.log_to_file(log_file),
        ],
    )
    assert "Progress: (8/8)" in out.getvalue() and out.getvalue().endswith(" Done.\n")
    chosen = record.best_records(record.load(log_file))[task.workload_key]
    assert len([r for r in record.load(log_file) if "verified" not in r]) == 8

    with autotvm.apply_history_best(log_file):
        with tvm.target.Target("llvm"):
            s, arg_bufs = matmul(N, L, M, "float32")
            func = tvm.build(s, arg_bufs)

    # the schedule built is the chosen record's
    want = tvm.lower(*task.instantiate(chosen["config"]), simple_mode=True)
    assert str(tvm.lower(s, arg_bufs, simple_mode=True)) == str(want)
    a_np = np.random.uniform(size=(N, L)).astype(np.float32)
    b_np = np.random.uniform(size=(L, M)).astype(np.float32)
    c_np = a_np.dot(b_np)
    c_tvm = tvm.nd.empty(c_np.shape)
    func(tvm.nd.array(a_np), tvm.nd.array(b_np), c_tvm)
    np.testing.assert_allclose(c_np, c_tvm.numpy(), rtol=1e-4)
