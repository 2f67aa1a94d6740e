"""Compile time and per-call overhead (issue 3's measurements).

Prints, in one run: the time from definition to a callable module for the seed's 56x56 matmul,
and the time of one call of a 3-argument kernel on 4-element torch and NumPy arrays next to
torch.add(x, y, out=z) and np.add(x, y, out=z). Medians over repeated rounds; JSON goes to
benchmarks/results/compile_and_call.json.

    .venv/bin/python benchmarks/compile_and_call.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

import pytvmbridge as tvm


def build_matmul(n: int = 56):
    N = tvm.convert(n)
    X = tvm.placeholder((N, N), name="X")
    Y = tvm.placeholder((N, N), name="Y")
    k = tvm.reduce_axis((0, N), name="k")
    Z = tvm.compute((N, N), lambda i, j: tvm.sum(X[i, k] * Y[k, j], axis=k))
    s = tvm.create_schedule(Z.op)
    return tvm.build(s, [X, Y, Z], target_host="llvm", name="fadd")


def build_add():
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    B = tvm.placeholder((n,), name="B")
    C = tvm.compute((n,), lambda i: A[i] + B[i], name="C")
    return tvm.build(tvm.create_schedule(C.op), [A, B, C], name="vadd")


def per_call_us(fn, args, number: int, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            fn(*args)
        samples.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    opts = parser.parse_args()
    compile_runs = 5 if opts.quick else 20
    number, rounds = (2000, 5) if opts.quick else (20000, 15)

    build_matmul()  # first build initialises LLVM; time the steady state
    compile_ms = statistics.median(
        (lambda t0: (build_matmul(), (time.perf_counter() - t0) * 1e3)[1])(time.perf_counter())
        for _ in range(compile_runs)
    )

    f = build_add()
    tx, ty, tz = (torch.rand(4) for _ in range(3))
    nx, ny, nz = (np.random.rand(4).astype("float32") for _ in range(3))
    rows = [
        ("module(torch x, y, z)", per_call_us(f, (tx, ty, tz), number, rounds)),
        (
            "torch.add(x, y, out=z)",
            per_call_us(lambda a, b, c: torch.add(a, b, out=c), (tx, ty, tz), number, rounds),
        ),
        ("module(numpy x, y, z)", per_call_us(f, (nx, ny, nz), number, rounds)),
        (
            "np.add(x, y, out=z)",
            per_call_us(lambda a, b, c: np.add(a, b, out=c), (nx, ny, nz), number, rounds),
        ),
    ]
    torch_add = rows[1][1]

    print(
        f"definition -> callable, 56x56 matmul (median of {compile_runs}): {compile_ms:.1f} ms"
        "   (target < 50 ms)"
    )
    print()
    print(f"{'one call, 4-element float32 arrays':<38}{'median µs':>10}{'vs torch.add':>14}")
    for name, us in rows:
        print(f"{name:<38}{us:>10.2f}{us / torch_add:>13.2f}x")
    out = Path(__file__).with_name("results")
    out.mkdir(exist_ok=True)
    (out / "compile_and_call.json").write_text(
        json.dumps(
            {
                "compile_ms_median": compile_ms,
                "call_us_median": dict(rows),
                "torch_threads": torch.get_num_threads(),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
