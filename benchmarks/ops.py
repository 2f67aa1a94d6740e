"""Every pytvmbridge.topi operator on ResNet-18 and BERT-base layer shapes, auto-scheduled
(no schedule written by hand, no search), next to PyTorch eager in the same run.

For each operator and batch size (1 and 8, float32, the same thread count for both) it prints
the median time of each, the ratio (PyTorch time / pytvmbridge time: above 1 is faster), the
achieved bandwidth of memory-bound operators as a fraction of a plain copy of the same bytes
measured in the same run (the bytes the operator must read and write: every input and output
byte, or only the part it reads for take, split and strided_slice; the copy reads half of
them and writes the other half), PyTorch's own fraction next to it, GFLOPS for matmuls and
convolutions, and the time auto_schedule + build took. JSON goes to benchmarks/results/ops.json.

    .venv/bin/python benchmarks/ops.py [--quick] [--threads 2] [--only conv,dense] [--batch 1,8]
        [--cpu-time]

``--cpu-time`` times each call by the calling thread's CPU time, one thread for both libraries:
on a machine shared with other work, wall times (and 2-thread runs) measure the machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Case:
    name: str  # operator and shape
    kind: str  # "compute" (flops matter) or "memory" (bandwidth matters)
    build: Callable[[], tuple[list[Any], list[Any]]]  # -> (placeholders, outputs)
    torch_fn: Callable[..., Any]  # takes the torch inputs, returns the output
    flops: float = 0.0
    # Turns the inputs made for pytvmbridge's placeholders into torch_fn's, once, untimed (a
    # pre-packed weight back to PyTorch's layout).
    torch_inputs: Callable[..., list[Any]] | None = None
    # Bytes the operator has to move when it reads only part of an input (take reads the
    # table's gathered rows, split one third of its input, strided_slice every other row);
    # takes the inputs and outputs. None: every input and output byte counts.
    moved: Callable[[list[Any], list[Any]], int] | None = None


def cases(batch: int) -> list[Case]:
    """The operators of issue 11 on the layer shapes of ResNet-18 (NCHW) and BERT-base
    (sequence 128, hidden 768, 12 heads) for one batch size."""
    import torch
    import torch.nn.functional as F

    import pytvmbridge as tvm
    from pytvmbridge import topi

    ph = tvm.placeholder
    out: list[Case] = []
    b, seq, hid = batch, 128, 768

    def add(name, kind, build, torch_fn, flops=0.0, torch_inputs=None, moved=None):
        out.append(Case(f"{name} b{batch}", kind, build, torch_fn, flops, torch_inputs, moved))

    # ---- convolutions (ResNet-18) ----
    for c, h, o, k, s, p in [
        (3, 224, 64, 7, 2, 3),
        (64, 56, 64, 3, 1, 1),
        (64, 56, 128, 3, 2, 1),
        (128, 28, 128, 3, 1, 1),
        (256, 14, 256, 3, 1, 1),
        (512, 7, 512, 3, 1, 1),
        (64, 56, 128, 1, 2, 0),
    ]:
        oh = (h + 2 * p - k) // s + 1
        add(
            f"conv2d {c}x{h}x{h}->{o} k{k}s{s}",
            "compute",
            lambda c=c, h=h, o=o, k=k, s=s, p=p: _io(
                [ph((b, c, h, h), name="x"), ph((o, c, k, k), name="w")],
                lambda x, w: topi.nn.conv2d(x, w, strides=s, padding=p),
            ),
            lambda x, w, s=s, p=p: F.conv2d(x, w, stride=s, padding=p),
            2.0 * b * o * oh * oh * c * k * k,
        )
    add(
        "conv2d+bias+relu 64x56x56 k3",
        "compute",
        lambda: _io(
            [ph((b, 64, 56, 56), name="x"), ph((64, 64, 3, 3), name="w"), ph((64,), name="bias")],
            lambda x, w, bias: topi.nn.relu(
                topi.nn.bias_add(topi.nn.conv2d(x, w, strides=1, padding=1), bias)
            ),
        ),
        lambda x, w, bias: F.relu(F.conv2d(x, w, bias, padding=1)),
        2.0 * b * 64 * 56 * 56 * 64 * 9,
    )
    add(
        "depthwise conv2d 128x28x28 k3",
        "compute",
        lambda: _io(
            [ph((b, 128, 28, 28), name="x"), ph((128, 1, 3, 3), name="w")],
            lambda x, w: topi.nn.conv2d(x, w, padding=1, groups=128),
        ),
        lambda x, w: F.conv2d(x, w, padding=1, groups=128),
        2.0 * b * 128 * 28 * 28 * 9,
    )
    # ---- matrix products (BERT-base) ----
    m = b * seq
    for n, kk in [(768, 768), (3072, 768), (768, 3072)]:
        add(
            f"dense {m}x{kk}->{n}",
            "compute",
            lambda n=n, kk=kk: _io(
                [ph((m, kk), name="x"), ph((n, kk), name="w"), ph((n,), name="bias")],
                lambda x, w, bias: topi.nn.dense(x, w, bias),
            ),
            lambda x, w, bias: F.linear(x, w, bias),
            2.0 * m * n * kk,
        )
    # The same layers with the constant weight packed once ahead of time (dense_pack), as a
    # model compiled by the graph backend runs them; PyTorch gets the weight in its own layout.
    from pytvmbridge.topi.nn.dense import DENSE_PACK_BLOCK as block

    def unpack(x, wp, bias):
        return [x, wp.permute(0, 2, 1).reshape(-1, wp.shape[1]).contiguous(), bias]

    for n, kk in [(768, 768), (3072, 768), (768, 3072)]:
        add(
            f"dense pre-packed {m}x{kk}->{n}",
            "compute",
            lambda n=n, kk=kk: _io(
                [
                    ph((m, kk), name="x"),
                    ph((n // block, kk, block), name="wp"),
                    ph((n,), name="bias"),
                ],
                lambda x, wp, bias: topi.nn.dense_pack(x, wp, bias),
            ),
            lambda x, w, bias: F.linear(x, w, bias),
            2.0 * m * n * kk,
            unpack,
        )
    add(
        f"dense+gelu pre-packed {m}x768->3072",
        "compute",
        lambda: _io(
            [
                ph((m, 768), name="x"),
                ph((3072 // block, 768, block), name="wp"),
                ph((3072,), name="bias"),
            ],
            lambda x, wp, bias: topi.nn.gelu(topi.nn.dense_pack(x, wp, bias)),
        ),
        lambda x, w, bias: F.gelu(F.linear(x, w, bias)),
        2.0 * m * 3072 * 768,
        unpack,
    )
    add(
        "batch_matmul QK^T 12x128x64",
        "compute",
        lambda: _io(
            [ph((12 * b, seq, 64), name="q"), ph((12 * b, seq, 64), name="k")],
            lambda q, k: topi.nn.batch_matmul(q, k),
        ),
        lambda q, k: torch.bmm(q, k.transpose(1, 2)),
        2.0 * 12 * b * seq * seq * 64,
    )
    if batch == 1:
        add(
            "matmul 1024^3",
            "compute",
            lambda: _io(
                [ph((1024, 1024), name="a"), ph((1024, 1024), name="b")],
                lambda x, y: topi.matmul(x, y),
            ),
            lambda x, y: torch.matmul(x, y),
            2.0 * 1024**3,
        )
    # ---- elementwise and broadcast ----
    act = (b, seq, hid)
    ew: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
        ("relu", topi.nn.relu, F.relu),
        ("gelu", topi.nn.gelu, F.gelu),
        (
            "gelu tanh",
            lambda x: topi.nn.gelu(x, approximate="tanh"),
            lambda x: F.gelu(x, approximate="tanh"),
        ),
        ("silu", topi.nn.silu, F.silu),
        ("sigmoid", topi.nn.sigmoid, torch.sigmoid),
        ("tanh", topi.nn.tanh, torch.tanh),
        ("hardswish", topi.nn.hardswish, F.hardswish),
        ("leaky_relu", topi.nn.leaky_relu, F.leaky_relu),
        ("exp", topi.exp, torch.exp),
        ("clip", lambda x: topi.clip(x, -1.0, 1.0), lambda x: torch.clamp(x, -1.0, 1.0)),
        ("cast f16", lambda x: topi.cast(x, "float16"), lambda x: x.to(torch.float16)),
    ]
    for name, tf, pf in ew:
        add(f"{name} {act}", "memory", lambda tf=tf: _io([ph(act, name="x")], tf), pf)
    add(
        f"add (residual) {act}",
        "memory",
        lambda: _io([ph(act, name="x"), ph(act, name="y")], topi.add),
        torch.add,
    )
    add(
        f"add (bias broadcast) {act}",
        "memory",
        lambda: _io([ph(act, name="x"), ph((hid,), name="y")], topi.add),
        torch.add,
    )
    add(
        f"where {act}",
        "memory",
        lambda: _io(
            [ph(act, name="x"), ph(act, name="y")],
            lambda x, y: topi.where(topi.greater(x, y), x, y),
        ),
        lambda x, y: torch.where(x > y, x, y),
    )
    # ---- reductions and normalisations ----
    add(
        f"sum last axis {act}",
        "memory",
        lambda: _io([ph(act, name="x")], lambda x: topi.sum(x, axis=-1)),
        lambda x: x.sum(-1),
    )
    add(
        f"max last axis {act}",
        "memory",
        lambda: _io([ph(act, name="x")], lambda x: topi.max(x, axis=-1)),
        lambda x: x.amax(-1),
    )
    add(
        f"mean axis 1 {act}",
        "memory",
        lambda: _io([ph(act, name="x")], lambda x: topi.mean(x, axis=1)),
        lambda x: x.mean(1),
    )
    add(
        f"sum all {act}",
        "memory",
        lambda: _io([ph(act, name="x")], lambda x: topi.sum(x)),
        lambda x: x.sum(),
    )
    add(
        f"argmax last axis {act}",
        "memory",
        lambda: _io([ph(act, name="x")], lambda x: topi.argmax(x, axis=-1)),
        lambda x: x.argmax(-1),
    )
    att = (b, 12, seq, seq)
    add(
        f"softmax {att}",
        "memory",
        lambda: _io([ph(att, name="x")], lambda x: topi.nn.softmax(x, axis=-1)),
        lambda x: torch.softmax(x, -1),
    )
    add(
        f"log_softmax {att}",
        "memory",
        lambda: _io([ph(att, name="x")], lambda x: topi.nn.log_softmax(x, axis=-1)),
        lambda x: torch.log_softmax(x, -1),
    )
    add(
        f"layer_norm {act}",
        "memory",
        lambda: _io(
            [ph(act, name="x"), ph((hid,), name="g"), ph((hid,), name="b")],
            lambda x, g, bb: topi.nn.layer_norm(x, g, bb, axis=[-1]),
        ),
        lambda x, g, bb: F.layer_norm(x, (hid,), g, bb),
    )
    img = (b, 64, 56, 56)
    add(
        f"batch_norm {img}",
        "memory",
        lambda: _io(
            [ph(img, name="x"), *(ph((64,), name=n) for n in ("g", "be", "mu", "var"))],
            lambda x, g, be, mu, var: topi.nn.batch_norm(x, g, be, mu, var)[0],
        ),
        lambda x, g, be, mu, var: F.batch_norm(x, mu, var, g, be),
    )
    add(
        f"group_norm 32 groups {img}",
        "memory",
        lambda: _io(
            [ph(img, name="x"), ph((64,), name="g"), ph((64,), name="be")],
            lambda x, g, be: topi.nn.group_norm(x, g, be, num_groups=32),
        ),
        lambda x, g, be: F.group_norm(x, 32, g, be),
    )
    # ---- pooling ----
    stem = (b, 64, 112, 112)
    add(
        f"max_pool2d 3x3 s2 {stem}",
        "memory",
        lambda: _io([ph(stem, name="x")], lambda x: topi.nn.max_pool2d(x, (3, 3), (2, 2), (1, 1))),
        lambda x: F.max_pool2d(x, 3, 2, 1),
    )
    add(
        f"avg_pool2d 2x2 s2 {img}",
        "memory",
        lambda: _io([ph(img, name="x")], lambda x: topi.nn.avg_pool2d(x, (2, 2), (2, 2), (0, 0))),
        lambda x: F.avg_pool2d(x, 2, 2),
    )
    last = (b, 512, 7, 7)
    add(
        f"adaptive_avg_pool2d {last}",
        "memory",
        lambda: _io([ph(last, name="x")], lambda x: topi.nn.adaptive_avg_pool2d(x, (1, 1))),
        lambda x: F.adaptive_avg_pool2d(x, 1),
    )
    # ---- layout and indexing ----
    heads = (b, seq, 12, 64)
    add(
        f"transpose heads {heads}",
        "memory",
        lambda: _io([ph(heads, name="x")], lambda x: topi.transpose(x, (0, 2, 1, 3))),
        lambda x: x.permute(0, 2, 1, 3).contiguous(),
    )
    # K^T of attention as a tensor of its own, and a feature map to channels-last: the last
    # axis moves, so each output vector reads across the input's rows.
    add(
        f"transpose last two {act}",
        "memory",
        lambda: _io([ph(act, name="x")], lambda x: topi.transpose(x, (0, 2, 1))),
        lambda x: x.transpose(1, 2).contiguous(),
    )
    add(
        f"NCHW -> NHWC {img}",
        "memory",
        lambda: _io([ph(img, name="x")], lambda x: topi.transpose(x, (0, 2, 3, 1))),
        lambda x: x.permute(0, 2, 3, 1).contiguous(),
    )
    add(
        f"reshape {act}",
        "memory",
        lambda: _io([ph(act, name="x")], lambda x: topi.reshape(x, (b, seq, 12, 64))),
        lambda x: x.reshape(b, seq, 12, 64).clone(),
    )
    add(
        f"concatenate 2x{act}",
        "memory",
        lambda: _io(
            [ph(act, name="x"), ph(act, name="y")], lambda x, y: topi.concatenate([x, y], axis=-1)
        ),
        lambda x, y: torch.cat([x, y], -1),
    )
    add(
        f"split 3 {(b, seq, 3 * hid)}",
        "memory",
        lambda: _io([ph((b, seq, 3 * hid), name="x")], lambda x: topi.split(x, 3, axis=-1)[1]),
        lambda x: torch.split(x, hid, -1)[1].contiguous(),
        moved=lambda ins, outs: 2 * _nbytes(outs[0]),  # one third of the input is read
    )
    add(
        f"strided_slice {img}",
        "memory",
        lambda: _io(
            [ph(img, name="x")],
            lambda x: topi.strided_slice(x, [0, 0, 0, 0], [b, 64, 56, 56], [1, 1, 2, 2]),
        ),
        lambda x: x[:, :, ::2, ::2].contiguous(),
        # every other row is read (each of its cache lines), the others are skipped
        moved=lambda ins, outs: _nbytes(ins[0]) // 2 + _nbytes(outs[0]),
    )
    add(
        f"pad {img}",
        "memory",
        lambda: _io([ph(img, name="x")], lambda x: topi.nn.pad(x, [0, 0, 1, 1], [0, 0, 1, 1])),
        lambda x: F.pad(x, (1, 1, 1, 1)),
    )
    add(
        f"broadcast_to {(b, 1, hid)}->{act}",
        "memory",
        lambda: _io([ph((b, 1, hid), name="x")], lambda x: topi.broadcast_to(x, act)),
        lambda x: x.expand(*act).contiguous(),
    )
    add(
        f"take (embedding) 30522x768, ids {(b, seq)}",
        "memory",
        lambda: _io(
            [ph((30522, hid), name="table"), ph((b, seq), dtype="int64", name="ids")],
            lambda t, i: topi.take(t, i, axis=0),
        ),
        lambda t, i: F.embedding(i, t),
        # the ids and the rows they select (read once each), and the output
        moved=lambda ins, outs: _nbytes(ins[1]) + 2 * _nbytes(outs[0]),
    )
    return out


def _io(placeholders: list[Any], fn: Callable[..., Any]) -> tuple[list[Any], list[Any]]:
    result = fn(*placeholders)
    outputs = list(result) if isinstance(result, (list, tuple)) else [result]
    return placeholders, outputs


def _nbytes(t: Any) -> int:
    return t.numel() * t.element_size()


def _torch_input(p: Any, torch: Any) -> Any:
    shape = [int(d) for d in p.shape]
    if p.dtype == "int64":
        return torch.randint(0, shape[0] if shape else 1, shape) % 30522
    return torch.randn(shape)


def medians(
    candidates: dict[str, Callable[[], Any]],
    repeat: int,
    min_time: float,
    settle: float,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Median seconds per call, every round timing every candidate once (interleaved, so
    drifts of the machine's speed affect all alike); a pause before each lets the other
    library's thread pool go idle. ``clock`` is wall time, or the calling thread's CPU time
    (``--cpu-time``: one thread, so the time the machine's other work takes is not counted)."""
    number = {}
    for name, fn in candidates.items():
        fn()
        start = clock()
        fn()
        number[name] = max(1, int(min_time / max(clock() - start, 1e-9)))
    rounds: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeat):
        for name, fn in candidates.items():
            time.sleep(settle)
            fn()
            start = clock()
            for _ in range(number[name]):
                fn()
            rounds[name].append((clock() - start) / number[name])
    return {name: statistics.median(r) for name, r in rounds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="time the calling thread's CPU time with one thread each (for a loaded machine)",
    )
    parser.add_argument("--batch", default="1,8")
    parser.add_argument("--only", default="", help="comma-separated substrings of op names")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "ops.json"))
    args = parser.parse_args()
    if args.cpu_time:
        args.threads = 1
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTVMBRIDGE_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import numpy as np
    import torch

    import pytvmbridge as tvm

    torch.set_num_threads(args.threads)
    tvm.set_num_threads(args.threads)
    repeat, min_time, settle = (3, 0.02, 0.02) if args.quick else (7, 0.05, 0.05)
    only = [s for s in args.only.split(",") if s]
    started = time.perf_counter()
    rows = []
    clock = time.thread_time if args.cpu_time else time.perf_counter
    print(
        f"{args.threads} threads, float32, median of {repeat} interleaved rounds"
        + (", thread CPU time" if args.cpu_time else ", wall time")
    )
    print(
        f"{'operator':52} {'ptb ms':>9} {'torch ms':>9} {'ratio':>6} {'%copy':>6} {'torch':>6} "
        f"{'GFLOPS':>7} {'sched+build ms (cpu)':>20}"
    )
    # One small kernel compiled first, untimed: the process's one-time start-up (LLVM's
    # target set-up, the vector math tables, first imports) is not the first operator's.
    warm = tvm.placeholder((64,), name="warm")
    warm_out = tvm.topi.nn.relu(warm)
    tvm.build(tvm.auto_schedule([warm_out]), [warm, warm_out])
    for batch in [int(x) for x in args.batch.split(",")]:
        for case in cases(batch):
            if only and not any(s in case.name for s in only):
                continue
            # The previous operator's timing loop ended a moment ago: let both libraries' idle
            # threads stop spinning first, so the compile is timed alone (its CPU time had
            # counted their spinning too: 175 ms of process CPU in 122 ms of wall time).
            time.sleep(0.25)
            start, cpu_start = time.perf_counter(), time.process_time()
            placeholders, outputs = case.build()
            s = tvm.auto_schedule(outputs)
            f = tvm.build(s, placeholders + outputs, name="op")
            compile_ms = (time.perf_counter() - start) * 1e3
            # CPU time too: on a loaded machine the wall time also counts waiting for a core.
            compile_cpu_ms = (time.process_time() - cpu_start) * 1e3
            inputs = [_torch_input(p, torch) for p in placeholders]
            results = [
                torch.empty([int(d) for d in t.shape], dtype=getattr(torch, t.dtype))
                for t in outputs
            ]
            f(*inputs, *results)
            torch_args = case.torch_inputs(*inputs) if case.torch_inputs else inputs
            expected = case.torch_fn(*torch_args)
            np.testing.assert_allclose(
                results[0].float().numpy(),
                expected.float().numpy(),
                rtol=2e-3,
                atol=2e-3,
                err_msg=case.name,
            )
            moved = (
                case.moved(inputs, results)
                if case.moved
                else sum(_nbytes(x) for x in inputs + results)
            )
            # The source holds data: a never-written torch.empty maps the kernel's shared zero
            # page, which every read then finds in the cache (that copy of a (8, 128, 768)
            # float32 tensor took 155 us on one thread against 275 us from written memory).
            src = torch.rand(moved // 8, dtype=torch.float32)
            dst = torch.empty_like(src)
            timed = medians(
                {
                    "ptb": lambda f=f, inputs=inputs, results=results: f(*inputs, *results),
                    "torch": lambda case=case, args=torch_args: case.torch_fn(*args),
                    "copy": lambda dst=dst, src=src: dst.copy_(src),
                },
                repeat,
                min_time,
                settle,
                clock,
            )
            ratio = timed["torch"] / timed["ptb"]
            copy_fraction = timed["copy"] / timed["ptb"]
            gflops = case.flops / timed["ptb"] / 1e9 if case.flops else math.nan
            row = {
                "op": case.name,
                "kind": case.kind,
                "batch": batch,
                "ptb_seconds": timed["ptb"],
                "torch_seconds": timed["torch"],
                "copy_seconds": timed["copy"],
                "ratio": ratio,
                "fraction_of_copy_bandwidth": copy_fraction,
                # PyTorch's own fraction: how far the copy is a reachable bound for this op
                "torch_fraction_of_copy_bandwidth": timed["copy"] / timed["torch"],
                "gflops": None if math.isnan(gflops) else gflops,
                "schedule_and_build_ms": compile_ms,
                "schedule_and_build_cpu_ms": compile_cpu_ms,
            }
            rows.append(row)
            print(
                f"{case.name[:52]:52} {timed['ptb'] * 1e3:9.3f} {timed['torch'] * 1e3:9.3f} "
                f"{ratio:6.2f} {100 * copy_fraction:5.0f}% "
                f"{100 * timed['copy'] / timed['torch']:5.0f}% "
                f"{'' if math.isnan(gflops) else f'{gflops:7.1f}':>7} "
                f"{compile_ms:12.0f} ({compile_cpu_ms:4.0f})",
                flush=True,
            )
    if not rows:
        return
    geo = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
    compute = [r for r in rows if r["kind"] == "compute"]
    memory = [r for r in rows if r["kind"] == "memory"]
    slowest = max(rows, key=lambda r: r["schedule_and_build_ms"])
    summary = {
        "geomean_ratio": geo,
        "compute_ops_below_0.8x": [r["op"] for r in compute if r["ratio"] < 0.8],
        "memory_ops_below_90pct_of_copy": [
            r["op"] for r in memory if r["fraction_of_copy_bandwidth"] < 0.9
        ],
        "slowest_schedule_and_build": [slowest["op"], slowest["schedule_and_build_ms"]],
        "wall_seconds": time.perf_counter() - started,
    }
    print(f"geometric mean of ratios: {geo:.2f} over {len(rows)} operator runs")
    if compute:
        print(
            f"compute-bound ops: {len(compute) - len(summary['compute_ops_below_0.8x'])} of "
            f"{len(compute)} at >= 0.8x PyTorch; below: {summary['compute_ops_below_0.8x']}"
        )
    if memory:
        print(
            f"memory-bound ops: {len(memory) - len(summary['memory_ops_below_90pct_of_copy'])} "
            f"of {len(memory)} at >= 90% of copy bandwidth; median "
            f"{100 * statistics.median(r['fraction_of_copy_bandwidth'] for r in memory):.0f}%"
        )
    print(
        f"slowest schedule+build: {slowest['schedule_and_build_ms']:.0f} ms ({slowest['op']}); "
        f"whole run {summary['wall_seconds']:.0f} s"
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "benchmark": "ops",
                "threads": args.threads,
                "clock": "thread CPU time" if args.cpu_time else "wall time",
                "statistic": "median seconds per call",
                "geomean_ratio": geo,
                "summary": summary,
                "results": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
