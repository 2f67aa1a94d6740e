"""Whole models through torch.compile: pytvmbridge's backend vs eager vs Inductor with freezing.

Per model (benchmarks/models/, random weights) and batch size (1 and 8), float32, 2 threads:
median latency of eager PyTorch, of ``torch.compile(backend="inductor")`` with
``torch._inductor.config.freezing = True`` and of ``torch.compile(backend="pytvmbridge")``,
plus the compile time (first call) of each compiled variant, all in one run, under
``torch.no_grad()``. The three are compiled first and then timed in interleaved rounds (the
order rotating from round to round, each round a median over enough calls to fill its share of
the time), and each figure is the median of its rounds: a drift of the machine's speed during
the run then affects all three alike instead of whichever was timed last. Since ours and
Inductor are timed in the same rounds, each round also gives a paired ratio: the table prints
their median and range and in how many rounds ours was the faster, which tells a steady lead
from a tie, and stays right when the machine's speed drifts during the rounds (the ratio of the
two medians then need not). Prints a table and writes benchmarks/results/models.json.

    .venv/bin/python benchmarks/models.py [--quick] [--models resnet18,mlp] [--batches 1,8]
        [--threads N] [--cpu-time] [--layout NCHWc|NCHW] [--profile] [--rounds N] [--image N]
        [--seq N] [--dynamic]

``--quick``: the small test sizes of each model, batch 1 only, few repetitions (a smoke run).
``--cpu-time`` times process CPU time instead of wall time: with ``--threads 1`` it is the
figure that stays meaningful on a machine other jobs are loading (compile times stay wall).
``--layout`` is our backend's ``layout`` option (default ``NCHWc``). ``--rounds`` sets the
number of interleaved rounds (default 7; the time per model grows with it). ``--image N``
gives the image models (ResNets, MobileNetV2) N x N inputs instead of 224 x 224: sizes such as
299 make every layer's output rows odd (150, 75, 38, 19, 10); ``--seq N`` gives the BERT layer
N tokens instead of 128 (197: ViT-B/16's patches and class token). ``--dynamic`` compiles both
backends with ``dynamic=True`` (every size symbolic, one compilation for every batch, image
size and sequence length: what a server taking requests of varying sizes runs) and writes
``models_dynamic.json``.
``--profile`` also prints, per model and batch, where our compiled model spends its time: the
kernel call's and each parallel loop's median over 20 calls (``pytvmbridge.profile_loops()``;
the loops are numbered in ``lower()``'s order), after the timing rounds.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pytvmbridge as tvm
from benchmarks.models import MODELS, build, model_names

_clock = time.perf_counter


ROUNDS = 7
"""Interleaved timing rounds per model and batch (each variant's figure: the median of its
rounds' medians)."""

WARMUP_CALLS = 3
"""Untimed calls before each timed stretch: the variant timed before leaves the caches full of
its own weights and its library's idle threads spinning on the cores for a moment, which the
first calls of the next one would otherwise pay for."""


def median_ms(fn, x, min_time: float, min_runs: int, max_runs: int) -> float:
    """Median milliseconds per call of ``fn(x)`` over at least ``min_runs`` calls, going on for
    up to ``min_time`` seconds or ``max_runs`` calls."""
    for _ in range(WARMUP_CALLS):
        fn(x)
    samples, start = [], time.perf_counter()
    while len(samples) < min_runs or (
        time.perf_counter() - start < min_time and len(samples) < max_runs
    ):
        t = _clock()
        fn(x)
        samples.append((_clock() - t) * 1e3)
    return statistics.median(samples)


def interleaved_ms(
    fns: dict, x, min_time: float, min_runs: int, max_runs: int, rounds: int = ROUNDS
) -> dict:
    """Per name in ``fns``: the list of ``rounds`` rounds' :func:`median_ms`, the variants timed
    one after the other within a round and the order rotated from round to round, each round
    given ``min_time / rounds`` seconds."""
    names = list(fns)
    per_round: dict = {n: [] for n in names}
    runs = max(1, min_runs // 2)
    for r in range(rounds):
        for n in names[r % len(names) :] + names[: r % len(names)]:
            per_round[n].append(
                median_ms(fns[n], x, min_time / rounds, runs, max(runs, max_runs // rounds))
            )
    return per_round


def paired_ratios(ours: list, theirs: list) -> dict:
    """The round-by-round ratios ``ours[r] / theirs[r]`` of two variants timed in the same
    rounds: their median, extremes, and how many rounds ours was the faster. A median ratio
    near 1.0 says little alone; the rounds say whether it is a tie or a steady lead."""
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    return {
        "median": statistics.median(ratios),
        "min": min(ratios),
        "max": max(ratios),
        "rounds_faster": sum(r < 1.0 for r in ratios),
        "rounds": len(ratios),
    }


def compiled(
    model, backend: str, options: dict | None = None, reset: bool = True, dynamic: bool = False
):
    # Reset before the first compile of a model (no earlier model's caches), not between its
    # two: both compiled variants stay in Dynamo's cache for the interleaved rounds.
    if reset:
        torch._dynamo.reset()
    fn = torch.compile(model, backend=backend, options=options, dynamic=dynamic or None)
    return fn


def first_call_s(fn, x) -> float:
    # The earlier models' garbage (their compiled graphs, weights, Dynamo caches) is collected
    # first, so that a collection it triggers is not counted as this compile (a 0.1 s compile
    # read 0.4 s once, after the large models).
    gc.collect()
    start = time.perf_counter()
    fn(x)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small models, batch 1, few runs")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--batches", default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cpu-time", action="store_true", help="time process CPU time")
    parser.add_argument("--layout", default="NCHWc", choices=["NCHWc", "NCHW"])
    parser.add_argument(
        "--image", type=int, default=None, help="input size of the image models (224)"
    )
    parser.add_argument("--seq", type=int, default=None, help="sequence length of BERT (128)")
    parser.add_argument("--profile", action="store_true", help="per-loop table of ours")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved timing rounds")
    parser.add_argument("--dynamic", action="store_true", help="compile with dynamic=True")
    parser.add_argument(
        "--out",
        default=None,
        help="JSON path (results/models.json; results/models_<image>.json with --image)",
    )
    opts = parser.parse_args()
    try:
        names = model_names(opts.models)
    except ValueError as e:
        parser.error(str(e))
    global _clock
    if opts.cpu_time:
        _clock = time.process_time
    batches = [int(b) for b in (opts.batches or ("1" if opts.quick else "1,8")).split(",")]
    # Calls per variant: enough for the time (sub-millisecond models included), at least a few.
    min_time, min_runs, max_runs = (0.2, 3, 10) if opts.quick else (1.5, 5, 5000)
    torch.set_num_threads(opts.threads)
    tvm.set_num_threads(opts.threads)
    import torch._inductor.config as inductor_config

    inductor_config.freezing = True

    rows = []
    header = (
        f"{'model':<13}{'batch':>6}{'eager ms':>10}{'inductor ms':>13}{'ours ms':>10}"
        f"{'ours/ind':>10}{'paired, range':>18}{'faster':>8}{'ind compile s':>15}"
        f"{'ours compile s':>16}"
    )
    clock = "process CPU time" if opts.cpu_time else "wall time"
    shapes = "dynamic=True" if opts.dynamic else "static shapes"
    print(f"torch {torch.__version__}, {opts.threads} threads, float32, no_grad, {clock}, {shapes}")
    print(header)
    for name in names:
        for batch in batches:
            model, x = build(name, batch=batch, small=opts.quick, image=opts.image, seq=opts.seq)
            with torch.no_grad():
                ind = compiled(model, "inductor", dynamic=opts.dynamic)
                ind_compile = first_call_s(ind, x)
                ours = compiled(
                    model, "pytvmbridge", {"layout": opts.layout}, reset=False, dynamic=opts.dynamic
                )
                ours_compile = first_call_s(ours, x)
                torch.testing.assert_close(ours(x), model(x), rtol=1e-3, atol=1e-3)
                ms = interleaved_ms(
                    {"eager": model, "inductor": ind, "ours": ours},
                    x,
                    3 * min_time * opts.rounds / ROUNDS,
                    min_runs,
                    max_runs,
                    rounds=opts.rounds,
                )
                eager, ind_ms, ours_ms = (
                    statistics.median(ms[n]) for n in ("eager", "inductor", "ours")
                )
                paired = paired_ratios(ms["ours"], ms["inductor"])
            row = {
                "model": name,
                "batch": batch,
                "eager_ms": eager,
                "inductor_freezing_ms": ind_ms,
                "pytvmbridge_ms": ours_ms,
                "inductor_compile_s": ind_compile,
                "pytvmbridge_compile_s": ours_compile,
                "ours_over_inductor_per_round": paired,
            }
            rows.append(row)
            print(
                f"{name:<13}{batch:>6}{eager:>10.2f}{ind_ms:>13.2f}{ours_ms:>10.2f}"
                f"{ours_ms / ind_ms:>10.2f}"
                f"{paired['median']:>7.2f} {paired['min']:.2f}-{paired['max']:<5.2f}"
                f"{paired['rounds_faster']:>5}/{paired['rounds']:<2}"
                f"{ind_compile:>15.1f}{ours_compile:>16.1f}",
                flush=True,
            )
            if opts.profile:
                with torch.no_grad(), tvm.profile_loops() as prof:
                    for _ in range(20):
                        ours(x)
                print(prof, flush=True)
    ratios = [r["pytvmbridge_ms"] / r["inductor_freezing_ms"] for r in rows]
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"geometric mean of ours/inductor-freezing: {geomean:.2f}")
    # another image size writes its own file: the 224 table's JSON is not overwritten
    default = "models.json" if opts.image in (None, 224) else f"models_{opts.image}.json"
    if opts.dynamic:
        default = default.replace("models", "models_dynamic")
    out = Path(opts.out or Path(__file__).parent / "results" / default)
    out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "torch": torch.__version__,
        "threads": opts.threads,
        "clock": clock,
        "layout": opts.layout,
        "image": opts.image or 224,
        "seq": opts.seq or 128,
        "quick": opts.quick,
        "dynamic": opts.dynamic,
        "rows": rows,
        "geomean_ours_over_inductor_freezing": geomean,
    }
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
