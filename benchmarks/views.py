"""Kernels called on views whose last axis is contiguous (the strided variant's fast path),
next to the same kernel on compact arrays and PyTorch eager on the same views, in one run.

Rows: a copy and an add written into column slices of a wider array (as a concatenation
does), dense on one column chunk of a fused q/k/v projection, softmax over a slice of rows and
columns, and a row-stepped slice; and pointwise kernels on channels_last tensors, whose
memory is dense in another order of the dimensions (the compact variant runs over it, and an
output the kernel allocates keeps that layout). Before the fast path these calls took the
general strided body, whose loads along the last axis were gathers (the copy row: 330 us
against 38 us compact). Medians of interleaved rounds; JSON goes to benchmarks/results/views.json.

    .venv/bin/python benchmarks/views.py [--threads 2] [--rounds 9]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any


def _timed(fn: Any, min_s: float = 0.05) -> float:
    fn()
    runs = 1
    while True:
        start = time.perf_counter()
        for _ in range(runs):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_s:
            return elapsed / runs
        runs *= 2


def cases(torch: Any, tvm: Any, topi: Any) -> list[dict[str, Any]]:
    def build(outputs: list[Any], inputs: list[Any]) -> Any:
        return tvm.build(tvm.auto_schedule(outputs), [*inputs, *outputs])

    out = []
    b, t, d = 8, 128, 768
    x = tvm.placeholder((b, t, d), name="x")
    copy = build([tvm.compute(x.shape, lambda *i: x[i], name="y")], [x])
    src = torch.rand(b, t, 2 * d)[..., d:]
    dst = torch.empty(b, t, 2 * d)[..., :d]
    src_c, dst_c = src.contiguous(), torch.empty(b, t, d)
    out.append(
        dict(
            name="copy (8, 128, 768) into a column slice",
            ours=lambda: copy(src, dst),
            compact=lambda: copy(src_c, dst_c),
            torch=lambda: dst.copy_(src),
        )
    )
    y = tvm.placeholder((b, t, d), name="y")
    add = build([topi.add(x, y)], [x, y])
    other = torch.rand(b, t, 3 * d)[..., d : 2 * d]
    other_c = other.contiguous()
    out.append(
        dict(
            name="add (8, 128, 768), all three column slices",
            ours=lambda: add(src, other, dst),
            compact=lambda: add(src_c, other_c, dst_c),
            torch=lambda: torch.add(src, other, out=dst),
        )
    )
    q = tvm.placeholder((t, d), name="q")
    w = tvm.placeholder((d, d), name="w")
    dense = build([topi.nn.dense(q, w)], [q, w])
    qkv = torch.rand(t, 3 * d)
    chunk = qkv[:, d : 2 * d]
    chunk_c, weight, res = chunk.contiguous(), torch.rand(d, d), torch.empty(t, d)
    out.append(
        dict(
            name="dense 128x768 @ 768x768, q/k/v chunk",
            ours=lambda: dense(chunk, weight, res),
            compact=lambda: dense(chunk_c, weight, res),
            torch=lambda: torch.nn.functional.linear(chunk, weight),
        )
    )
    s_in = tvm.placeholder((b, 12, 100, 100), name="s")
    softmax = build([topi.nn.softmax(s_in, axis=-1)], [s_in])
    scores = torch.rand(b, 12, 128, 128)[:, :, :100, :100]
    scores_c, probs = scores.contiguous(), torch.empty(b, 12, 100, 100)
    out.append(
        dict(
            name="softmax (8, 12, 100, 100) of a (.., 128, 128) slice",
            ours=lambda: softmax(scores, probs),
            compact=lambda: softmax(scores_c, probs),
            torch=lambda: torch.softmax(scores, -1),
        )
    )
    rows = torch.randn(b, 64, 112, 56)[:, :, ::2]  # every other row
    rows_c, relu_out = rows.contiguous(), torch.empty(b, 64, 56, 56)
    r = tvm.placeholder((b, 64, 56, 56), name="r")
    relu = build([topi.nn.relu(r)], [r])
    out.append(
        dict(
            name="relu (8, 64, 56, 56) of every other row",
            ours=lambda: relu(rows, relu_out),
            compact=lambda: relu(rows_c, relu_out),
            torch=lambda: torch.relu(rows),
        )
    )
    # channels_last: every stride permuted, memory dense. A pointwise kernel runs its compact
    # variant over it; the output it allocates is channels_last too, as torch's is.
    cl = torch.randn(b, 64, 56, 56).to(memory_format=torch.channels_last)
    cl_c, cl_out = cl.contiguous(), torch.empty_like(cl)
    out.append(
        dict(
            name="relu (8, 64, 56, 56) channels_last, out given",
            ours=lambda: relu(cl, cl_out),
            compact=lambda: relu(cl_c, relu_out),
            torch=lambda: torch.relu(cl),
        )
    )
    relu_torch = tvm.to_pytorch(relu)
    out.append(
        dict(
            name="relu (8, 64, 56, 56) channels_last, allocated",
            ours=lambda: relu_torch(cl),
            compact=lambda: relu_torch(cl_c),
            torch=lambda: torch.relu(cl),
        )
    )
    cl2 = torch.randn(b, 64, 56, 56).to(memory_format=torch.channels_last)
    cl2_c, cl_tmp = cl2.contiguous(), torch.empty_like(cl2)
    r2 = tvm.placeholder((b, 64, 56, 56), name="r2")
    residual = build([topi.nn.relu(topi.add(r, r2))], [r, r2])
    out.append(
        dict(
            name="relu(x + y) (8, 64, 56, 56) channels_last",
            ours=lambda: residual(cl, cl2, cl_out),
            compact=lambda: residual(cl_c, cl2_c, relu_out),
            # into a buffer of its own, as ours writes into cl_out (no allocation either side)
            torch=lambda: torch.add(cl, cl2, out=cl_tmp).relu_(),
        )
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "views.json"))
    args = parser.parse_args()
    os.environ["PYTVMBRIDGE_NUM_THREADS"] = str(args.threads)
    import torch

    import pytvmbridge as tvm
    from pytvmbridge import topi

    torch.set_num_threads(args.threads)
    rows = []
    print(f"{args.threads} threads, float32, median of {args.rounds} interleaved rounds")
    print(f"{'kernel on a view':52} {'ours us':>9} {'compact':>9} {'torch us':>9} {'vs torch':>8}")
    for case in cases(torch, tvm, topi):
        times: dict[str, list[float]] = {"ours": [], "compact": [], "torch": []}
        for _ in range(args.rounds):
            for key in times:
                times[key].append(_timed(case[key]))
        med = {k: statistics.median(v) for k, v in times.items()}
        row = {
            "name": case["name"],
            "ours_seconds": med["ours"],
            "compact_seconds": med["compact"],
            "torch_seconds": med["torch"],
            "ratio": med["torch"] / med["ours"],
        }
        rows.append(row)
        print(
            f"{case['name'][:52]:52} {med['ours'] * 1e6:9.1f} {med['compact'] * 1e6:9.1f} "
            f"{med['torch'] * 1e6:9.1f} {row['ratio']:8.2f}",
            flush=True,
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps({"benchmark": "views", "threads": args.threads, "rows": rows}, indent=1)
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
