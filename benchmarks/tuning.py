"""Autotuning against the analytical schedules and PyTorch eager, in one run.

Workloads: ResNet-18's distinct conv2d layers (batch 1, NCHW), a BERT-base matmul (the FFN's
128x768 @ 768x3072) and SGEMM 1024^3. For each: the analytical schedule (``auto_schedule``'s
default point), the best tuned schedule after 64, 256 and 1000 trials (checkpoints of one
tuning run, read from its log), PyTorch eager (oneDNN / MKL) timed in the same run with the
same thread count, and the wall time of tuning. The tuner is the XGBoost-guided evolutionary
search over ``auto_schedule_space``'s knobs; candidates are measured in worker processes.

    .venv/bin/python benchmarks/tuning.py [--quick] [--threads N] [--trials 64,256,1000]
                                          [--budget-s 400] [--only conv,bert,sgemm]
                                          [--match 128x28x28->128,SGEMM]
    .venv/bin/python benchmarks/tuning.py --resnet [--quick] [--resnet-trials 300]
                                          [--model resnet50 --batch 8]
    .venv/bin/python benchmarks/tuning.py --pipeline-ab [--quick]

The whole run must fit in about 8 minutes, so tuning has a time budget (``--budget-s``,
shared by the workloads in proportion to their FLOPs, at least 10 s each): a workload whose
budget runs out stops before its last checkpoint, and the table says how many trials it got
(a checkpoint beyond that shows the best at the end). A search space smaller than the trial
count is exhausted early (the row says so). ``--quick``: two small workloads, 8 trials.
Each tuning run ends with the tuner's verification (``Tuner.verify``: the analytical point
and the best candidates re-measured together in this process); its choice is the "final"
column. The final timings then re-measure the analytical, the checkpoints' and the final
schedule in this process, interleaved with PyTorch (medians). Tuning throughput: trials per
second of wall time, and the time spent building (summed over the parallel workers) and
measuring (one candidate at a time). JSON goes to benchmarks/results/tuning.json.

``--match``: only the workloads whose name contains one of these comma-separated strings
(a subset for development; the budget is still shared by FLOPs among those run). The second
table also gives the verification's own paired ratio (chosen over analytical, median of the
rounds) next to the final timing's, and how many proposals were skipped because their code
had been measured already ("dup").

``--resnet``: ResNet-18 (batch 1; another model of benchmarks/models/ with ``--model NAME
--batch N``) end to end through ``torch.compile``: eager, Inductor with
freezing, pytvmbridge untuned, then pytvmbridge with ``options={"tuning_n_trials": N,
"tuning_log_file": log}`` (the graph's distinct convolution and matmul workloads tuned with the
budget split by the task scheduler, the whole-graph guard deciding what is kept, then compiled
with the log), and the same log replayed without the guard; every variant is compiled first,
then all are timed interleaved (7 rounds, the order rotating, medians), with the paired
tuned/untuned ratios and the guard's verdicts (target: tuned at least 10% below Inductor).
JSON: benchmarks/results/tuning_resnet18.json (``tuning_<model>_b<batch>.json`` for another
model; its target is the graph backend's, at or below Inductor).

``--pipeline-ab``: the search's wall time on conv2d 128x28x28 k3s1 (40 trials, three rounds,
the order rotating) with the runner seen through ``run`` only, with the batch's builds
overlapping the tuner's next proposals (``LocalRunner.submit/collect``, the default), and with
the next batch built while this one is measured (``MeasureOption(overlap_builds=True)``); the
share of each spent measuring; and how much slower a kernel times while two candidates compile
than alone (10 paired rounds). JSON: benchmarks/results/tuning_pipeline.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

RESNET18_CONVS = [  # (in channels, size, out channels, kernel, stride, padding)
    (3, 224, 64, 7, 2, 3),
    (64, 56, 64, 3, 1, 1),
    (64, 56, 128, 3, 2, 1),
    (64, 56, 128, 1, 2, 0),
    (128, 28, 128, 3, 1, 1),
    (128, 28, 256, 3, 2, 1),
    (256, 14, 256, 3, 1, 1),
    (256, 14, 512, 3, 2, 1),
    (512, 7, 512, 3, 1, 1),
]


def conv_workload(c: int, h: int, o: int, k: int, s: int, p: int) -> list[Any]:
    import pytvmbridge as tvm
    from pytvmbridge import topi

    x = tvm.placeholder((1, c, h, h), name="x")
    w = tvm.placeholder((o, c, k, k), name="w")
    return [x, w, topi.nn.conv2d(x, w, strides=s, padding=p)]


def matmul_workload(m: int, k: int, n: int) -> list[Any]:
    import pytvmbridge as tvm

    a = tvm.placeholder((m, k), name="A")
    b = tvm.placeholder((k, n), name="B")
    r = tvm.reduce_axis((0, k), name="k")
    return [a, b, tvm.compute((m, n), lambda i, j: tvm.sum(a[i, r] * b[r, j], axis=r), name="C")]


def workloads(quick: bool, only: set[str]) -> list[dict[str, Any]]:
    import torch.nn.functional as F

    out = []
    convs = RESNET18_CONVS[1:3] if quick else RESNET18_CONVS
    if "conv" in only:
        for c, h, o, k, s, p in convs:
            oh = (h + 2 * p - k) // s + 1
            out.append(
                {
                    "name": f"conv2d {c}x{h}x{h}->{o} k{k}s{s}",
                    "group": "conv",
                    "func": conv_workload,
                    "args": (c, h, o, k, s, p),
                    "torch": lambda x, w, s=s, p=p: F.conv2d(x, w, stride=s, padding=p),
                    "flop": 2.0 * o * oh * oh * c * k * k,
                }
            )
    mms = [("BERT FFN matmul 128x768x3072", "bert", 128, 768, 3072)]
    mms += [("SGEMM 1024^3", "sgemm", 256 if quick else 1024, 0, 0)]
    for name, group, m, k, n in mms:
        if group not in only or (quick and group == "bert"):
            continue
        if group == "sgemm":
            m = k = n = m
            name = f"SGEMM {m}^3"
        out.append(
            {
                "name": name,
                "group": group,
                "func": matmul_workload,
                "args": (m, k, n),
                "torch": lambda a, b: a @ b,
                "flop": 2.0 * m * k * n,
            }
        )
    return out


SETTLE_SECONDS = 0.3  # idle time before each timing: the previous kernel's threads go to sleep


def _median_time(fn: Any, min_s: float = 0.2, reps: int = 7) -> float:
    time.sleep(SETTLE_SECONDS)
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    number = max(1, int(min_s / reps / one))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def final_timings(
    task: Any, configs: dict[str, Any], torch_fn: Any, rounds: int = 4
) -> tuple[dict[str, float], float]:
    """Median seconds per call of each configuration and of PyTorch, and the median over rounds
    of the final schedule's time over the analytical one's (a paired ratio: the two timed in the
    same round). Labels whose configurations build the same code (``schedule_hash``: the final
    choice is often the analytical point itself) share one module and one timing: timing the
    same code twice only measures noise. The order rotates every round (each entry is timed
    first once in a while), so that a position, such as coming right after PyTorch, favours
    none of them."""
    import numpy as np
    import torch

    import pytvmbridge as tvm
    from pytvmbridge.autotvm.measure import make_inputs, schedule_hash

    inputs = make_inputs(task, seed=0)
    outs = [np.zeros(s, d) for (s, d), o in zip(task.arg_shapes, task.is_output, strict=True) if o]
    arrays = [x if x is not None else outs[0] for x in inputs]
    mods: dict[str, Any] = {}
    code_of: dict[str, str] = {}
    for label, config in configs.items():
        s, args = task.instantiate(config)
        h = schedule_hash(s, args, task.target)
        if h not in mods:
            mods[h] = tvm.build(s, args)
        code_of[label] = h
    torch_in = [torch.from_numpy(x) for x in inputs if x is not None]
    entries: list[tuple[str, Any]] = [(h, lambda m=m: m(*arrays)) for h, m in mods.items()]
    entries.append(("torch", lambda: torch_fn(*torch_in)))
    samples: dict[str, list[float]] = {k: [] for k, _ in entries}
    for r in range(rounds):
        for j in range(len(entries)):
            key, fn = entries[(j + r) % len(entries)]
            with torch.no_grad():
                samples[key].append(_median_time(fn))
    times = {label: statistics.median(samples[h]) for label, h in code_of.items()}
    times["torch"] = statistics.median(samples["torch"])
    final, analytical = samples[code_of["final"]], samples[code_of["analytical"]]
    paired = statistics.median(f / a for f, a in zip(final, analytical, strict=True))
    return times, paired


def tune_one(
    w: dict[str, Any], checkpoints: list[int], budget_s: float, log: str, overlap: bool = True
) -> dict:
    from pytvmbridge import autotvm
    from pytvmbridge.autotvm import record

    task = autotvm.auto_task(w["func"], w["args"], name=w["name"], flop=w["flop"])
    tuner = autotvm.EvolutionaryTuner(task, seed=0)
    # overlap_builds None: builds beside the measurements where CPUs are to spare
    opt = autotvm.MeasureOption(
        repeat=3, min_repeat_ms=10, timeout=30, overlap_builds=None if overlap else False
    )
    start = time.perf_counter()
    runner = autotvm.LocalRunner(task, option=opt)
    n_parallel = runner.n_parallel
    try:
        # One call with the budget: the tuner proposes the next batch while this one builds.
        # (This loop used to call tune() for one batch at a time to check the clock, so the
        # pipeline never filled: each proposal waited for the last measurement, and the
        # workers for each proposal.)
        tuner.tune(
            checkpoints[-1],
            log_file=log,
            runner=runner,
            progress=False,
            resume=False,
            verify=False,
            time_budget_s=max(0.0, budget_s - (time.perf_counter() - start)),
        )
    finally:
        runner.close()
    search_wall = time.perf_counter() - start
    final = tuner.verify(log)
    wall = time.perf_counter() - start
    verified = tuner.verified or {}
    recs = [r for r in record.load(log, verified=False) if r["workload"] == task.workload_key]
    best_at: dict[int, Any] = {}
    best, best_cfg = math.inf, None
    for n, r in enumerate(recs, 1):
        c = record.record_cost(r)
        if c < best:
            best, best_cfg = c, r["config"]
        for cp in checkpoints:
            if n == min(cp, len(recs)):
                best_at[cp] = best_cfg
    return {
        "task": task,
        "trials": len(recs),
        "space": len(task.space),
        "exhausted": not tuner.has_next(),
        "wall_s": wall,
        "search_wall_s": search_wall,
        "verify_s": wall - search_wall,
        "build_s": sum(r.get("build_s", 0.0) for r in recs),
        "measure_s": sum(r.get("measure_s", 0.0) for r in recs),
        "n_parallel": n_parallel,
        "final": final["config"] if final else None,
        "verify_ratio": verified["ratios"][verified["chosen"]] if verified else 1.0,
        "duplicates": tuner.duplicates,
        "best_at": best_at,
        "errors": sum(r["error"] != 0 for r in recs),
    }


def _latency_ms(fn: Any, x: Any, min_s: float, min_runs: int = 5) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < min_s / 4:  # warm up (Inductor settles after a while)
        fn(x)
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < min_runs or time.perf_counter() - start < min_s:
        t0 = time.perf_counter()
        fn(x)
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def _interleaved_ms(
    fns: dict[str, Any], x: Any, rounds: int, min_s: float
) -> dict[str, list[float]]:
    """Milliseconds per call of each function, one median per round, the functions timed in
    turn within each round (the order rotating), so that a change of load hits them alike."""
    names = list(fns)
    per_round = min_s / rounds
    out: dict[str, list[float]] = {n: [] for n in names}
    for n in names:  # warm up (Inductor settles after a while)
        _latency_ms(fns[n], x, per_round, 3)
    for r in range(rounds):
        for j in range(len(names)):
            n = names[(j + r) % len(names)]
            out[n].append(_latency_ms(fns[n], x, per_round, 3))
    return out


LABELS = {
    "resnet18": "ResNet-18",
    "resnet50": "ResNet-50",
    "bert_layer": "BERT layer",
    "mobilenet_v2": "MobileNetV2",
    "mlp": "MLP",
}


def resnet_main(args: argparse.Namespace) -> None:
    """A whole model end to end (ResNet-18 batch 1 unless ``--model``/``--batch`` say
    otherwise): eager, Inductor with freezing, ours untuned, tuned (with the whole-graph
    guard) and tuned without the guard, timed interleaved."""
    import sys

    import torch
    import torch._inductor.config as inductor_config

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import pytvmbridge as tvm
    from benchmarks.models import build
    from pytvmbridge.autotvm import graph_tuning, record

    threads = args.threads or tvm.get_num_threads()
    tvm.set_num_threads(threads)
    torch.set_num_threads(threads)
    inductor_config.freezing = True
    trials = 16 if args.quick else args.resnet_trials
    min_s = 0.3 if args.quick else 2.0
    rounds = 3 if args.quick else 7
    model_name, batch = args.model, args.batch
    label = f"{LABELS.get(model_name, model_name)}{' (small)' if args.quick else ''}, batch {batch}"
    log = args.resnet_log or os.path.join(tempfile.mkdtemp(), f"{model_name}_b{batch}.json")
    model, x = build(model_name, batch=batch, small=args.quick)
    model.eval()
    first_call_s: dict[str, float] = {}
    tuned_opts = {"tuning_log_file": log, "tuning_n_trials": trials}
    variants: list[tuple[str, str | None, dict | None]] = [
        ("eager", None, None),
        ("inductor_freezing", "inductor", None),
        ("ours_untuned", "pytvmbridge", None),
        ("ours_tuned", "pytvmbridge", tuned_opts),
        # the same log replayed without the whole-graph guard (what the guard prevents); its
        # options differ from the tuned ones, else dynamo would reuse the tuned compilation
        ("ours_tuned_unguarded", "pytvmbridge", {"tuning_log_file": log}),
    ]
    fns: dict[str, Any] = {}
    torch._dynamo.reset()
    with torch.no_grad():
        ref = model(x)
        for name, backend, options in variants:
            # No dynamo reset between the variants: each compiled function keeps its own
            # entry (guarded by its backend) and is called again in the timing rounds below.
            fn = (
                model if backend is None else torch.compile(model, backend=backend, options=options)
            )
            graph_tuning.verify_graphs = name != "ours_tuned_unguarded"
            t0 = time.perf_counter()
            out = fn(x)
            first_call_s[name] = time.perf_counter() - t0
            graph_tuning.verify_graphs = True
            torch.testing.assert_close(out, ref, rtol=1e-3, atol=1e-3)
            fns[name] = fn
            print(f"{name:22s} compiled (first call {first_call_s[name]:.1f} s)", flush=True)
        times = _interleaved_ms(fns, x, rounds, min_s * len(fns))
    ms = {n: statistics.median(t) for n, t in times.items()}
    for n, t in times.items():
        print(f"{n:22s} {ms[n]:8.2f} ms  (rounds: {', '.join(f'{v:.2f}' for v in t)})")
    paired = statistics.median(
        a / b for a, b in zip(times["ours_tuned"], times["ours_untuned"], strict=True)
    )
    paired_ung = statistics.median(
        a / b for a, b in zip(times["ours_tuned_unguarded"], times["ours_untuned"], strict=True)
    )
    recs = list(record.load(log, verified=False))
    tasks = {r["workload"] for r in recs}
    verdicts = []
    with open(log) as f:
        verdicts = [v for v in map(json.loads, f) if "graph_guard" in v]
    ratio = ms["ours_tuned"] / ms["inductor_freezing"]
    print()
    print("| model | eager ms | Inductor+freezing ms | ours untuned ms | ours tuned ms "
          "| tuned unguarded ms | tuned / Inductor | tuned / untuned (paired) "
          "| unguarded / untuned (paired) | trials (tasks) | tuning+compile s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {label} | {ms['eager']:.2f} | "
        f"{ms['inductor_freezing']:.2f} | {ms['ours_untuned']:.2f} | {ms['ours_tuned']:.2f} | "
        f"{ms['ours_tuned_unguarded']:.2f} | {ratio:.2f} | {paired:.3f} | {paired_ung:.3f} | "
        f"{len(recs)} ({len(tasks)}) | {first_call_s['ours_tuned']:.0f} |"
    )
    for v in verdicts:
        pairs = zip(v.get("ratios", [v["ratio"]]), v.get("wins_each", [v["wins"]]), strict=True)
        tried = ", ".join(f"{r:.3f} (faster in {w} of {v['rounds']})" for r, w in pairs)
        which = {-1: "analytical kept", 0: "all tuned tasks kept", 1: "clear wins only kept"}
        print(f"guard: tuned/analytical {tried}: {which[v.get('choice', 0 if v['kept'] else -1)]}"
              f" ({v['guard_s']:.1f} s)")  # fmt: skip
    # Issue 14's target for ResNet-18 b1 is 10% below Inductor; for the other models the graph
    # backend's (issue 12): at or below it, the tuning log used where the analytical is not.
    goal = 0.9 if (model_name, batch) == ("resnet18", 1) else 1.0
    print(f"target: tuned <= {goal:.2f} x Inductor with freezing: "
          f"{'met' if ratio <= goal else 'missed'}")  # fmt: skip
    print(f"{threads} threads; CPU {record.cpu_name()}; log {log}")
    default = (model_name, batch) == ("resnet18", 1)
    stem = "tuning_resnet18" if default else f"tuning_{model_name}_b{batch}"
    out = Path(__file__).parent / "results" / f"{stem}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "quick": args.quick,
                "model": model_name,
                "batch": batch,
                "threads": threads,
                "cpu": record.cpu_name(),
                "trials": len(recs),
                "tasks": len(tasks),
                "ms": ms,
                "rounds_ms": times,
                "tuned_over_untuned_paired": paired,
                "unguarded_over_untuned_paired": paired_ung,
                "guard": verdicts,
                "first_call_s": first_call_s,
                "tuned_over_inductor_freezing": ratio,
                "torch": torch.__version__,
            },
            indent=1,
        )
    )
    print(f"wrote {out}")


class _RunOnly:
    """A LocalRunner seen through ``run`` alone: the tuner then proposes each batch only after
    the last one was built and measured (the behaviour before submit/collect)."""

    def __init__(self, runner: Any) -> None:
        self.runner, self.n_parallel = runner, runner.n_parallel

    @property
    def known_schedules(self) -> set[str]:
        return self.runner.known_schedules

    @known_schedules.setter
    def known_schedules(self, value: set[str]) -> None:
        self.runner.known_schedules = value

    def run(self, configs: list[Any], best: float | None = None) -> list[Any]:
        return self.runner.run(configs, best)


def _build_disturbance(task: Any, rounds: int) -> list[float]:
    """Per round: the task's analytical schedule timed (in this process, this run's threads)
    while two worker processes compile other candidates, over the same timed alone just
    before: what building ahead during a measurement does to the measurement."""
    import random

    import numpy as np

    from pytvmbridge import autotvm
    from pytvmbridge.autotvm.measure import _outputs, _run, make_inputs
    from pytvmbridge.build import build

    s, targs = task.instantiate(None)
    module = build(s, targs, target=task.target)
    inputs, outs = make_inputs(task), _outputs(task)
    _run(module, task, inputs, outs)

    def timed() -> float:
        costs = []
        for _ in range(3):
            t0 = time.perf_counter()
            for _ in range(4):
                _run(module, task, inputs, outs)
            costs.append((time.perf_counter() - t0) / 4)
        return float(np.median(costs))

    rng = random.Random(0)
    ratios = []
    cpus = os.sched_getaffinity(0)
    with autotvm.LocalRunner(task, n_parallel=2) as runner:
        if runner.split is not None:  # timed on the timed runs' CPUs, the builds on the rest
            os.sched_setaffinity(0, runner.split[0])
        try:
            runner.collect(runner.submit([task.space.default()] * 2), measure=False)  # warm
            for _ in range(rounds):
                time.sleep(0.05)
                alone = timed()
                pending = runner.submit([task.canonical(task.space.sample(rng)) for _ in range(2)])
                time.sleep(0.01)  # the workers are compiling
                during = timed()
                runner.collect(pending, measure=False)
                ratios.append(during / alone)
        finally:
            os.sched_setaffinity(0, cpus)
    return ratios


def pipeline_main(args: argparse.Namespace) -> None:
    """Search wall time on conv2d 128x28x28 k3s1, three ways, the order rotating: the runner
    seen through ``run`` only, builds overlapping the tuner's proposals
    (``LocalRunner.submit/collect``), and the next batch built while this one is measured
    (``MeasureOption(overlap_builds=True)``); and how much a build disturbs a timed run."""
    import xgboost  # noqa: F401  (imported once, outside the timings)

    import pytvmbridge as tvm
    from pytvmbridge import autotvm
    from pytvmbridge.autotvm.measure import cpu_split
    from pytvmbridge.autotvm.tuner import make_tuner

    if args.threads:
        tvm.set_num_threads(args.threads)
    split = None if args.no_overlap else cpu_split(tvm.get_num_threads())
    print(f"{tvm.get_num_threads()} threads; CPUs for timed runs / builds: "
          f"{split if split else 'not split (none to spare)'}")  # fmt: skip
    task = autotvm.auto_task(conv_workload, (128, 28, 128, 3, 1, 1), name="conv2d")
    autotvm.LocalRunner(task).close()  # the reference outputs, computed once
    n = 16 if args.quick else 40
    modes = ("run only", "pipelined", "overlap")
    rows = []
    for rep in range(2 if args.quick else 3):
        for j in range(len(modes)):
            mode = modes[(j + rep) % len(modes)]
            tuner = make_tuner("evolutionary", task, rep)
            log = os.path.join(tempfile.mkdtemp(), "ab.json")
            option = autotvm.MeasureOption(overlap_builds=mode == "overlap")
            with autotvm.LocalRunner(task, option=option) as runner:
                t0 = time.perf_counter()
                tuner.tune(n, progress=False, verify=False, log_file=log,
                           runner=runner if mode != "run only" else _RunOnly(runner))  # fmt: skip
                wall = time.perf_counter() - t0
            recs = [json.loads(line) for line in open(log)]
            measure = sum(r["measure_s"] for r in recs)
            rows.append({"mode": mode, "rep": rep, "wall_s": wall, "measure_s": measure,
                         "trials": tuner.trials, "duplicates": tuner.duplicates})  # fmt: skip
            print(f"{mode:9s} round {rep}: {tuner.trials} trials ({tuner.duplicates} duplicates "
                  f"skipped), search wall {wall:6.2f} s, measurement {measure:5.2f} s "
                  f"({measure / wall:.0%} of the wall)", flush=True)  # fmt: skip
    for mode in modes:
        mine = [r for r in rows if r["mode"] == mode]
        share = sum(r["measure_s"] for r in mine) / sum(r["wall_s"] for r in mine)
        print(f"{mode:9s} median wall {statistics.median(r['wall_s'] for r in mine):6.2f} s, "
              f"measurement {share:.0%} of the wall")  # fmt: skip
    disturb = _build_disturbance(task, 4 if args.quick else 10)
    print(
        f"a kernel timed while two candidates compile / timed alone: median "
        f"{statistics.median(disturb):.2f} (rounds: {', '.join(f'{r:.2f}' for r in disturb)})"
    )
    out = Path(__file__).parent / "results" / f"tuning_pipeline_t{tvm.get_num_threads()}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"workload": task.description, "rows": rows,
                               "threads": tvm.get_num_threads(), "cpu_split": split,
                               "build_disturbance": disturb}, indent=1))  # fmt: skip
    print(f"wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--resnet", action="store_true", help="a whole model end to end (see above)")
    ap.add_argument("--model", default="resnet18", help="with --resnet: benchmarks/models/ name")
    ap.add_argument("--batch", type=int, default=1, help="with --resnet: batch size")
    ap.add_argument("--resnet-trials", type=int, default=300)
    ap.add_argument("--resnet-log", default=None, help="tuning log (default: a fresh one)")
    ap.add_argument("--threads", type=int, default=0, help="0: all cores")
    ap.add_argument(
        "--no-overlap",
        action="store_true",
        help="builds wait for the measurements even where CPUs are to spare (for the A/B)",
    )
    ap.add_argument("--trials", default="64,256,1000")
    ap.add_argument("--budget-s", type=float, default=400.0)
    ap.add_argument("--only", default="conv,bert,sgemm")
    ap.add_argument("--match", default="", help="comma-separated name substrings (a subset)")
    ap.add_argument("--pipeline-ab", action="store_true", help="builds overlapping proposals")
    args = ap.parse_args()
    if args.pipeline_ab:
        pipeline_main(args)
        return
    if args.resnet:
        resnet_main(args)
        return
    import torch

    import pytvmbridge as tvm
    from pytvmbridge.autotvm import record

    if args.threads:
        tvm.set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    else:
        torch.set_num_threads(tvm.get_num_threads())
    from pytvmbridge.autotvm.measure import cpu_split

    split = None if args.no_overlap else cpu_split(tvm.get_num_threads())
    print(
        f"{tvm.get_num_threads()} threads; CPUs for timed runs / for builds and the tuner: "
        f"{split if split else 'not split (none to spare: builds wait for the measurements)'}"
    )
    checkpoints = [8] if args.quick else [int(x) for x in args.trials.split(",")]
    budget = 30.0 if args.quick else args.budget_s
    ws = workloads(args.quick, set(args.only.split(",")))
    if args.match:
        ws = [w for w in ws if any(m and m in w["name"] for m in args.match.split(","))]
    total_flop = sum(w["flop"] for w in ws)
    rows = []
    log = os.path.join(tempfile.mkdtemp(), "tuning.json")
    t_all = time.perf_counter()
    for w in ws:
        share = max(10.0, budget * w["flop"] / total_flop)
        res = tune_one(w, checkpoints, share, log, overlap=not args.no_overlap)
        configs = {"analytical": None}
        for cp in checkpoints:
            configs[f"tuned@{cp}"] = res["best_at"].get(cp)
        configs["final"] = res["final"]
        times, paired = final_timings(res["task"], configs, w["torch"])
        row = {
            "workload": w["name"],
            "group": w["group"],
            "flop": w["flop"],
            "trials": res["trials"],
            "space": res["space"],
            "exhausted": res["exhausted"],
            "errors": res["errors"],
            "tuning_wall_s": res["wall_s"],
            "search_wall_s": res["search_wall_s"],
            "verify_s": res["verify_s"],
            "build_s": res["build_s"],
            "measure_s": res["measure_s"],
            "verify_ratio": res["verify_ratio"],
            "final_over_analytical_paired": paired,
            "duplicates": res["duplicates"],
            "trials_per_s": res["trials"] / res["search_wall_s"],
            "ms": {k: v * 1e3 for k, v in times.items()},
        }
        rows.append(row)
        print(
            f"{w['name']:34s} trials {res['trials']:5d}/{res['space']:<6d} "
            f"analytical {row['ms']['analytical']:8.3f} ms  final {row['ms']['final']:8.3f} ms  "
            f"torch {row['ms']['torch']:8.3f} ms  tuning {res['wall_s']:6.1f} s "
            f"({row['trials_per_s']:.2f} trials/s; build {res['build_s']:.1f} s over "
            f"{res['n_parallel']} workers, measure {res['measure_s']:.1f} s)",
            flush=True,
        )
    print()
    head = ["workload", "trials", "analytical ms"] + [f"tuned@{c} ms" for c in checkpoints]
    head += ["final ms", "torch ms", "final vs torch", "tuning s"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    last = "final"
    for r in rows:
        ms = r["ms"]
        trials = f"{r['trials']}" + (" (all)" if r["exhausted"] else "")
        cells = [r["workload"], trials, f"{ms['analytical']:.3f}"]
        cells += [f"{ms[f'tuned@{c}']:.3f}" for c in checkpoints]
        speedup = ms["torch"] / ms[last]
        cells += [f"{ms['final']:.3f}", f"{ms['torch']:.3f}", f"{speedup:.2f}x"]
        cells += [f"{r['tuning_wall_s']:.0f}"]
        print("| " + " | ".join(cells) + " |")
    print()
    print("| workload | trials (dup) | search wall s | trials/s | build s (sum) | measure s (sum) "
          "| measure share of wall | verify s | verify: final/analytical "
          "| final timing: final/analytical |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ms = r["ms"]
        print(
            f"| {r['workload']} | {r['trials']} ({r['duplicates']}) | {r['search_wall_s']:.1f} | "
            f"{r['trials_per_s']:.2f} | {r['build_s']:.1f} | {r['measure_s']:.1f} | "
            f"{r['measure_s'] / r['search_wall_s']:.0%} | {r['verify_s']:.1f} | "
            f"{r['verify_ratio']:.2f} | {r['final_over_analytical_paired']:.2f} |"
        )
    throughput = {
        "trials": sum(r["trials"] for r in rows),
        "search_wall_s": sum(r["search_wall_s"] for r in rows),
        "build_s": sum(r["build_s"] for r in rows),
        "measure_s": sum(r["measure_s"] for r in rows),
    }
    throughput["trials_per_s"] = throughput["trials"] / throughput["search_wall_s"]
    print(
        f"throughput: {throughput['trials']} trials in {throughput['search_wall_s']:.0f} s "
        f"({throughput['trials_per_s']:.2f} trials/s); building {throughput['build_s']:.0f} s "
        f"(summed over workers), measuring {throughput['measure_s']:.0f} s "
        f"({throughput['measure_s'] / throughput['search_wall_s']:.0%} of the wall time)"
    )
    worse = [r["workload"] for r in rows if r["final_over_analytical_paired"] > 1.05]
    print(f"final slower than analytical by > 5% when re-measured: {worse or 'none'}")

    def geomean(xs: list[float]) -> float:
        return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")

    summary = {}
    for group in ("conv", "bert", "sgemm"):
        g = [r for r in rows if r["group"] == group]
        if g:
            summary[group] = {
                "tuned_vs_torch_geomean": geomean([r["ms"]["torch"] / r["ms"][last] for r in g]),
                "analytical_vs_torch_geomean": geomean(
                    [r["ms"]["torch"] / r["ms"]["analytical"] for r in g]
                ),
            }
            g_sum = summary[group]
            print(
                f"{group}: tuned/torch speedup geomean {g_sum['tuned_vs_torch_geomean']:.2f}x"
                f" (analytical {g_sum['analytical_vs_torch_geomean']:.2f}x)"
            )
    wall = time.perf_counter() - t_all
    print(f"total wall time {wall:.0f} s; {tvm.get_num_threads()} threads; CPU {record.cpu_name()}")
    name = f"tuning_t{args.threads}.json" if args.threads else "tuning.json"
    if args.no_overlap:
        name = name.replace(".json", "_no_overlap.json")
    out = Path(__file__).parent / "results" / name
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "quick": args.quick,
                "threads": tvm.get_num_threads(),
                "cpu_split": split,
                "cpu": record.cpu_name(),
                "checkpoints": checkpoints,
                "rows": rows,
                "summary": summary,
                "throughput": throughput,
                "wall_s": wall,
            },
            indent=1,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
