"""Tuning wired into the graph backend and pytvmbridge.torch.compile: tasks of a compiled graph,
tuning_n_trials / tuning_log_file, replay of a log's best records."""

from __future__ import annotations

import json
import random
import warnings

import pytest
import torch

import pytvmbridge.torch as ptt
from pytvmbridge.autotvm import record
from pytvmbridge.autotvm.graph_tuning import extract_graph_tasks, graph_config
from pytvmbridge.graph.compiler import import_graph


class ConvNet(torch.nn.Module):
    """Two identical 3x3 convolutions and one 1x1: two distinct convolution workloads."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.c = torch.nn.Conv2d(8, 16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


def _aten_graph(model: torch.nn.Module, x: torch.Tensor) -> torch.fx.GraphModule:
    params = dict(model.named_parameters())
    names = list(params)

    def f(x, *ps):
        return torch.func.functional_call(model, dict(zip(names, ps, strict=True)), (x,))

    from torch.fx.experimental.proxy_tensor import make_fx

    return make_fx(f)(x, *[p.detach() for p in params.values()])


def _model_and_input():
    torch.manual_seed(0)
    return ConvNet().eval(), torch.randn(1, 8, 12, 12)


def test_one_task_per_distinct_workload():
    model, x = _model_and_input()
    gm = _aten_graph(model, x)
    tasks = extract_graph_tasks(gm)
    assert [t.name for t, _ in tasks] == ["conv2d", "conv2d"]
    # Each task's arguments: the activation, the OIHW weight, the bias, then the output.
    shapes = [{s for s, _ in t.arg_shapes} for t, _ in tasks]
    assert shapes[0] == {(1, 8, 12, 12), (8, 8, 3, 3), (8,)}
    assert shapes[1] == {(1, 8, 12, 12), (16, 8, 1, 1), (16,), (1, 16, 12, 12)}
    assert tasks[0][0].workload_key != tasks[1][0].workload_key


def _non_default_point(task, seed=0):
    rng = random.Random(seed)
    default = task.space.default()
    for _ in range(200):
        c = task.canonical(task.space.sample(rng))
        if c != default and c["T_conv2d_nchw"] != default["T_conv2d_nchw"]:
            return c
    raise AssertionError("no non-default point found")


def test_log_records_become_the_graph_schedule(tmp_path):
    model, x = _model_and_input()
    gm = _aten_graph(model, x)
    (task3, _), _ = extract_graph_tasks(gm)
    good = _non_default_point(task3, 1)
    wrong = _non_default_point(task3, 2)
    log = tmp_path / "log.json"
    mk = record.make_record
    rec = [
        mk(task3.workload_key, task3.description, "auto", "llvm", good, [2e-6], 0),
        # an error record and a faster record of another CPU: never chosen
        mk(task3.workload_key, task3.description, "auto", "llvm", wrong, [1e-6], 4, "wrong"),
    ]
    other = mk(task3.workload_key, task3.description, "auto", "llvm", wrong, [1e-7], 0)
    other["target"]["cpu"] = "some other CPU"
    record.append(log, [*rec, other])
    _, outputs, _ = import_graph(gm)
    # verify=False: whether the guard keeps the point is a timing (its own test fakes it)
    config = graph_config(gm, outputs, tuning_log_file=log, verify=False)
    # Both 3x3 convolutions (stages T_conv2d_nchw and #2) take the logged point's knobs.
    for stage in ("T_conv2d_nchw", "T_conv2d_nchw#2"):
        for knob, value in good["T_conv2d_nchw"].items():
            assert config[stage][knob] == value, (stage, knob)
    # ... and the compiled model still computes the convolutions.
    torch._dynamo.reset()
    f = torch.compile(model, backend="pytvmbridge", options={"tuning_log_file": str(log)})
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the 1x1 workload has no record: it warns
        torch.testing.assert_close(f(x), model(x), rtol=1e-4, atol=1e-4)


def test_backend_tunes_then_replays_without_measuring_again(tmp_path):
    model, x = _model_and_input()
    log = tmp_path / "tuned.json"
    opts = {"tuning_log_file": str(log), "tuning_n_trials": 6}
    torch._dynamo.reset()
    with torch.no_grad():
        f = torch.compile(model, backend="pytvmbridge", options=opts)
        torch.testing.assert_close(f(x), model(x), rtol=1e-4, atol=1e-4)
    recs = list(record.load(log, verified=False))
    assert len(recs) == 6
    workloads = {t.workload_key for t, _ in extract_graph_tasks(_aten_graph(model, x))}
    # the compiled graph's weights are pre-packed: its tasks' keys differ from the plain graph's,
    # but there are as many (two distinct convolutions), each tuned at least once
    assert len({r["workload"] for r in recs}) == len(workloads) == 2
    assert all(r["error"] == 0 for r in recs)
    torch._dynamo.reset()
    with torch.no_grad():
        g = torch.compile(model, backend="pytvmbridge", options=opts)
        torch.testing.assert_close(g(x), model(x), rtol=1e-4, atol=1e-4)
    # the budget is spent: nothing measured again
    assert len(list(record.load(log, verified=False))) == 6


def test_torch_compile_option_tunes(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 48), torch.nn.ReLU(), torch.nn.Linear(48, 16))
    log = tmp_path / "mlp.json"
    option = {"input_infos": [("x", (8, 32))], "tuning_n_trials": 4, "tuning_log_file": str(log)}
    compiled = ptt.compile(model.eval(), option)
    x = torch.randn(8, 32)
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    recs = list(record.load(log, verified=False))
    assert len(recs) == 4
    assert {r["description"].split("(")[0] for r in recs} == {"addmm"}


def test_missing_record_warns_and_falls_back(tmp_path):
    model, x = _model_and_input()
    log = tmp_path / "empty.json"
    log.write_text(json.dumps({"note": "not a record"}) + "\n")
    torch._dynamo.reset()
    f = torch.compile(model, backend="pytvmbridge", options={"tuning_log_file": str(log)})
    with torch.no_grad(), pytest.warns(UserWarning, match="no valid record"):
        y = f(x)
    torch.testing.assert_close(y, model(x), rtol=1e-4, atol=1e-4)


def test_bad_tuning_options():
    with pytest.raises(ValueError, match="tuning_n_trials"):
        from pytvmbridge.graph.backend import BackendOptions

        BackendOptions.parse({"tuning_n_trials": -1})


class BlockedNet(torch.nn.Module):
    """Convolutions with 32 output channels: the graph computes them blocked (NCHWc), the
    second and third reading the blocked output of the one before."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(3, 32, 3, padding=1)
        self.b = torch.nn.Conv2d(32, 32, 3, padding=1)
        self.c = torch.nn.Conv2d(32, 32, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(torch.relu(self.b(torch.relu(self.a(x)))))


def _blocked_graph():
    from pytvmbridge.graph.layout import blocking, host_block

    torch.manual_seed(0)
    model, x = BlockedNet().eval(), torch.randn(1, 3, 10, 10)
    gm = _aten_graph(model, x)
    with blocking(host_block()):
        _, outputs, _ = import_graph(gm)
    return model, x, gm, outputs


def test_blocked_convolutions_are_tuned_as_the_graph_computes_them():
    import numpy as np

    import pytvmbridge as tvm
    from pytvmbridge.autotvm.graph_tuning import blocked_conv_tasks

    _, _, _, outputs = _blocked_graph()
    tasks = blocked_conv_tasks(outputs)
    assert [t.name for t, _ in tasks] == ["conv2d_NCHWc"] * 3
    # the first reads the NCHW image, the others the blocked [N, C/b, H, W, b] activation;
    # every output is blocked
    (d0, *_), (d1, *_), (d2, *_) = (t.arg_shapes for t, _ in tasks)
    assert d0[0] == (1, 3, 10, 10) and len(d1[0]) == len(d2[0]) == 5
    assert all(len(t.arg_shapes[-1][0]) == 5 for t, _ in tasks)
    # the rebuilt 3x3 blocked task computes a convolution with its bias (checked with PyTorch)
    task = tasks[1][0]
    s, args = task.instantiate(None)
    f = tvm.build(s, args)
    rng = np.random.default_rng(0)
    data, w, b = (rng.standard_normal(shape).astype("float32") for shape, _ in task.arg_shapes[:3])
    out = np.zeros(task.arg_shapes[3][0], "float32")
    f(data, w, b, out)
    n, cb, h, wd, blk = data.shape
    x_nchw = torch.from_numpy(data).permute(0, 1, 4, 2, 3).reshape(n, cb * blk, h, wd)
    want = torch.nn.functional.conv2d(x_nchw, torch.from_numpy(w), torch.from_numpy(b), padding=1)
    got = torch.from_numpy(out).permute(0, 1, 4, 2, 3).reshape(want.shape)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def _log_a_non_default_record(task, log):
    """Writes one valid record for ``task`` whose convolution knobs differ from the analytical
    point (a seeded sample of its space) and returns that configuration."""
    rng = random.Random(3)
    default = task.space.default()
    for _ in range(200):
        good = task.canonical(task.space.sample(rng))
        if good["T_conv2d_NCHWc"] != default["T_conv2d_NCHWc"]:
            break
    mk = record.make_record
    record.append(log, [mk(task.workload_key, task.description, "auto", "llvm", good, [1e-6], 0)])
    return good


def test_blocked_task_records_become_the_graph_schedule(tmp_path):
    from pytvmbridge.autotvm.graph_tuning import blocked_conv_tasks

    model, x, gm, outputs = _blocked_graph()
    task = blocked_conv_tasks(outputs)[1][0]
    log = tmp_path / "blocked.json"
    good = _log_a_non_default_record(task, log)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the other two workloads have no record
        config = graph_config(gm, outputs, tuning_log_file=log, verify=False)
    # the graph's second blocked convolution takes the record's knobs
    for knob, value in good["T_conv2d_NCHWc"].items():
        assert config["T_conv2d_NCHWc#2"][knob] == value, knob
    # the compiled model (blocked layout, tuned) computes the model
    torch._dynamo.reset()
    f = torch.compile(model, backend="pytvmbridge", options={"tuning_log_file": str(log)})
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.testing.assert_close(f(x), model(x), rtol=1e-4, atol=1e-4)


def test_guard_keeps_a_tuned_graph_only_if_it_wins_end_to_end(tmp_path, monkeypatch):
    """The whole-graph guard: the tuned config survives only when the tuned graph beats the
    analytical one round by round (median paired ratio below 0.99 and faster in 6 of 7
    rounds); the verdict is logged and reused without timing again. Timings are faked so that
    the rule is checked against a hand calculation."""
    from pytvmbridge.autotvm import graph_tuning, measure
    from pytvmbridge.autotvm.graph_tuning import blocked_conv_tasks, guard

    _, _, gm, outputs = _blocked_graph()
    task = blocked_conv_tasks(outputs)[1][0]
    log = tmp_path / "guarded.json"
    _log_a_non_default_record(task, log)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = graph_config(gm, outputs, tuning_log_file=log, verify=False)
    assert config is not None
    calls = []

    def fake(times):
        def measure_in_process(bench, configs, rounds, *rest):
            calls.append(configs)
            # both graphs really build from the bench (placeholders first, then outputs)
            assert bench.is_output[-1] and not bench.is_output[0]
            assert all(bench.instantiate(c)[1] is bench.args for c in configs)
            return times

        return measure_in_process

    analytical = [1.0] * 7
    cases = [
        ([0.9] * 5 + [1.1] * 2, False, 5),  # median 0.9 but faster in 5 of 7: not all but a quarter
        ([0.995] * 6 + [1.2], False, 6),  # faster in 6 of 7 but median 0.995: within the 1% margin
        ([0.95] * 6 + [1.3], True, 6),  # faster in 6, median 0.95: kept
    ]
    logs = []
    for k, (tuned, kept, wins) in enumerate(cases):
        logs.append(tmp_path / f"guarded{k}.json")
        logs[-1].write_text(log.read_text())
        graph_tuning._verdicts.clear()
        monkeypatch.setattr(measure, "measure_in_process", fake([analytical, tuned]))
        assert guard(outputs, config, log=str(logs[-1])) == (config if kept else None)
        lines = logs[-1].read_text().splitlines()
        verdicts = [json.loads(line) for line in lines if "graph_guard" in line]
        assert [(v["kept"], v["wins"]) for v in verdicts] == [(kept, wins)]
        assert verdicts[0]["ratio"] == pytest.approx(sorted(tuned)[3])
    assert len(calls) == 3
    # a second compile (a fresh process: no in-memory verdicts) reads the log, times nothing
    graph_tuning._verdicts.clear()
    monkeypatch.setattr(measure, "measure_in_process", fake(None))
    assert guard(outputs, config, log=str(logs[0])) is None
    assert guard(outputs, config, log=str(logs[2])) == config
    assert len(calls) == 3
    # the whole set loses, an alternative (here the analytical point itself, a valid config)
    # wins: the alternative is kept, the verdict says which
    from pytvmbridge.autoschedule import auto_schedule_space

    alt = auto_schedule_space(list(outputs))["default"]
    assert alt != config
    slower, faster = [1.05] * 7, [0.9] * 7
    monkeypatch.setattr(measure, "measure_in_process", fake([analytical, slower, faster]))
    assert guard(outputs, config, log=str(logs[0]), alternatives=[alt]) == alt
    verdict = json.loads(logs[0].read_text().splitlines()[-1])
    assert verdict["choice"] == 1 and verdict["ratios"] == pytest.approx([1.05, 0.9])


def test_verified_ratio_of_a_chosen_record(tmp_path):
    """The guard's second candidate takes the choices whose verification found them clearly
    faster: the ratio is the chosen record's median over the analytical one's, same batch."""
    from pytvmbridge.autotvm.graph_tuning import _verified_ratio, blocked_conv_tasks

    _, _, _, outputs = _blocked_graph()
    task = blocked_conv_tasks(outputs)[1][0]
    default = task.canonical(task.space.default())
    other = task.canonical(task.space.sample(random.Random(5)))
    log = tmp_path / "v.json"
    mk = record.make_record
    key, desc = task.workload_key, task.description
    record.append(log, [
        mk(key, desc, "auto", "llvm", default, [2.0, 2.2, 2.1], 0, verified=7.0),
        mk(key, desc, "auto", "llvm", other, [1.5, 1.4, 1.6], 0, verified=7.0, chosen=True),
        # another verification's analytical record (same config, another batch): not paired
        mk(key, desc, "auto", "llvm", default, [9.0], 0, verified=3.0),
    ])  # fmt: skip
    ctx = record.apply_history_best(str(log))
    assert _verified_ratio(ctx, task) == pytest.approx(1.5 / 2.1)
    assert _verified_ratio(None, task) == float("inf")


def test_guard_builds_go_through_the_compile_cache(tmp_path, monkeypatch):
    # The guard builds the whole graph as the compiler does (its kernel arguments and name,
    # through the compile cache): the analytical graph an untuned compile stored is loaded,
    # and the compile after the verdict loads the graph the guard built.
    from pytvmbridge import cache
    from pytvmbridge.autotvm import graph_tuning

    tasks = []
    cut = graph_tuning.blocked_conv_tasks

    def spy(*a, **k):
        out = cut(*a, **k)
        tasks.append(out)
        return out

    monkeypatch.setattr(graph_tuning, "blocked_conv_tasks", spy)
    model, x = _blocked_graph()[:2]
    log = tmp_path / "cached.json"
    opts = {"tuning_log_file": str(log)}
    cache.set_dir(tmp_path / "cache")
    cache.enable(True)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # records missing: the analytical schedule
            torch._dynamo.reset()
            f = torch.compile(model, backend="pytvmbridge", options=opts)
            torch.testing.assert_close(f(x), model(x), rtol=1e-4, atol=1e-4)
            # a record for the compiled graph's second convolution, as its task is cut
            _log_a_non_default_record(tasks[-1][1][0], log)
            before = cache.stats()
            torch._dynamo.reset()
            g = torch.compile(model, backend="pytvmbridge", options=opts)
            torch.testing.assert_close(g(x), model(x), rtol=1e-4, atol=1e-4)
            after = cache.stats()
    finally:
        cache.set_dir(None)
        cache.enable(None)
    verdicts = [json.loads(line) for line in log.read_text().splitlines() if "graph_guard" in line]
    assert len(verdicts) == 1  # the guard timed the tuned graph against the analytical one
    # built by the guard: the analytical graph (loaded) and the tuned one (stored); built by the
    # compile: whichever the guard kept (loaded)
    assert after["writes"] - before["writes"] == 1
    assert after["hits"] - before["hits"] == 2
