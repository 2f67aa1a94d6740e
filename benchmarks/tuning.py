"""Autotuning against the analytical schedules and PyTorch eager, in one run.

Workloads: ResNet-18's distinct conv2d layers (batch 1, NCHW), a BERT-base matmul (the FFN's
128x768 @ 768x3072) and SGEMM 1024^3. For each: the analytical schedule (``auto_schedule``'s
default point), the best tuned schedule after 64, 256 and 1000 trials (checkpoints of one
tuning run, read from its log), PyTorch eager (oneDNN / MKL) timed in the same run with the
same thread count, and the wall time of tuning. The tuner is the XGBoost-guided evolutionary
search over ``auto_schedule_space``'s knobs; candidates are measured in worker processes.

    .venv/bin/python benchmarks/tuning.py [--quick] [--threads N] [--trials 64,256,1000]
                                          [--budget-s 400] [--only conv,bert,sgemm]

The whole run must fit in about 8 minutes, so tuning has a time budget (``--budget-s``,
shared by the workloads in proportion to their FLOPs, at least 10 s each): a workload whose
budget runs out stops before its last checkpoint, and the table says how many trials it got
(a checkpoint beyond that shows the best at the end). A search space smaller than the trial
count is exhausted early (the row says so). ``--quick``: two small workloads, 8 trials.
The final timings re-measure the analytical and the best tuned schedule in this process,
interleaved with PyTorch (medians). JSON goes to benchmarks/results/tuning.json.
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


def final_timings(task: Any, configs: dict[str, Any], torch_fn: Any) -> dict[str, float]:
    """Median seconds per call of each configuration and of PyTorch, interleaved (three rounds)
    so that load changes hit every column alike."""
    import numpy as np
    import torch

    import pytvmbridge as tvm
    from pytvmbridge.autotvm.measure import make_inputs

    inputs = make_inputs(task, seed=0)
    outs = [np.zeros(s, d) for (s, d), o in zip(task.arg_shapes, task.is_output, strict=True) if o]
    arrays = [x if x is not None else outs[0] for x in inputs]
    mods = {}
    for label, config in configs.items():
        s, args = task.instantiate(config)
        mods[label] = tvm.build(s, args)
    torch_in = [torch.from_numpy(x) for x in inputs if x is not None]
    samples: dict[str, list[float]] = {k: [] for k in [*configs, "torch"]}
    for _ in range(3):
        for label, mod in mods.items():
            samples[label].append(_median_time(lambda mod=mod: mod(*arrays)))
        with torch.no_grad():
            samples["torch"].append(_median_time(lambda: torch_fn(*torch_in)))
    return {k: statistics.median(v) for k, v in samples.items()}


def tune_one(w: dict[str, Any], checkpoints: list[int], budget_s: float, log: str) -> dict:
    from pytvmbridge import autotvm
    from pytvmbridge.autotvm import record

    task = autotvm.auto_task(w["func"], w["args"], name=w["name"], flop=w["flop"])
    tuner = autotvm.EvolutionaryTuner(task, seed=0)
    opt = autotvm.MeasureOption(repeat=3, min_repeat_ms=10, timeout=30)
    start = time.perf_counter()
    runner = autotvm.LocalRunner(task, option=opt)
    n_parallel = runner.n_parallel
    try:
        while tuner.trials < checkpoints[-1] and tuner.has_next():
            if time.perf_counter() - start > budget_s:
                break
            before = tuner.trials
            tuner.tune(n_parallel, log_file=log, runner=runner, progress=False, resume=False)
            if tuner.trials == before:
                break
    finally:
        runner.close()
    wall = time.perf_counter() - start
    recs = [r for r in record.load(log) if r["workload"] == task.workload_key]
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
        "best_at": best_at,
        "errors": sum(r["error"] != 0 for r in recs),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--threads", type=int, default=0, help="0: all cores")
    ap.add_argument("--trials", default="64,256,1000")
    ap.add_argument("--budget-s", type=float, default=400.0)
    ap.add_argument("--only", default="conv,bert,sgemm")
    args = ap.parse_args()
    import torch

    import pytvmbridge as tvm
    from pytvmbridge.autotvm import record

    if args.threads:
        tvm.set_num_threads(args.threads)
        torch.set_num_threads(args.threads)
    else:
        torch.set_num_threads(tvm.get_num_threads())
    checkpoints = [8] if args.quick else [int(x) for x in args.trials.split(",")]
    budget = 30.0 if args.quick else args.budget_s
    ws = workloads(args.quick, set(args.only.split(",")))
    total_flop = sum(w["flop"] for w in ws)
    rows = []
    log = os.path.join(tempfile.mkdtemp(), "tuning.json")
    t_all = time.perf_counter()
    for w in ws:
        share = max(10.0, budget * w["flop"] / total_flop)
        res = tune_one(w, checkpoints, share, log)
        configs = {"analytical": None}
        for cp in checkpoints:
            configs[f"tuned@{cp}"] = res["best_at"].get(cp)
        times = final_timings(res["task"], configs, w["torch"])
        row = {
            "workload": w["name"],
            "group": w["group"],
            "flop": w["flop"],
            "trials": res["trials"],
            "space": res["space"],
            "exhausted": res["exhausted"],
            "errors": res["errors"],
            "tuning_wall_s": res["wall_s"],
            "ms": {k: v * 1e3 for k, v in times.items()},
        }
        rows.append(row)
        last = f"tuned@{checkpoints[-1]}"
        print(
            f"{w['name']:34s} trials {res['trials']:5d}/{res['space']:<6d} "
            f"analytical {row['ms']['analytical']:8.3f} ms  tuned {row['ms'][last]:8.3f} ms  "
            f"torch {row['ms']['torch']:8.3f} ms  tuning {res['wall_s']:6.1f} s",
            flush=True,
        )
    print()
    head = ["workload", "trials", "analytical ms"] + [f"tuned@{c} ms" for c in checkpoints]
    head += ["torch ms", "tuned vs torch", "tuning s"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    last = f"tuned@{checkpoints[-1]}"
    for r in rows:
        ms = r["ms"]
        trials = f"{r['trials']}" + (" (all)" if r["exhausted"] else "")
        cells = [r["workload"], trials, f"{ms['analytical']:.3f}"]
        cells += [f"{ms[f'tuned@{c}']:.3f}" for c in checkpoints]
        speedup = ms["torch"] / ms[last]
        cells += [f"{ms['torch']:.3f}", f"{speedup:.2f}x", f"{r['tuning_wall_s']:.0f}"]
        print("| " + " | ".join(cells) + " |")

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
    out = Path(__file__).parent / "results" / "tuning.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "quick": args.quick,
                "threads": tvm.get_num_threads(),
                "cpu": record.cpu_name(),
                "checkpoints": checkpoints,
                "rows": rows,
                "summary": summary,
                "wall_s": wall,
            },
            indent=1,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
