"""int32 against int64 size variables: compile time and call time of the same kernels (the
elementwise benchmark's relu(a * b + c) and a row-sum reduction), next to NumPy in the same run.

This is the measurement behind the choice in pytvmbridge/kernel.py: @kernel uses int32 sizes
unless an input has 2**31 elements or more (then int64). Run:
    .venv/bin/python benchmarks/index_types.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np

BLOCK = 1 << 14
VECTOR = 64


def relu_fma(tvm, dtype: str):
    n = tvm.var("n", dtype)
    A, B, C = (tvm.placeholder((n,), name=x) for x in "ABC")
    D = tvm.compute((n,), lambda i: tvm.max(A[i] * B[i] + C[i], 0.0), name="D")
    s = tvm.create_schedule(D.op)
    outer, inner = s[D].split(D.op.axis[0], factor=BLOCK)
    _mid, lanes = s[D].split(inner, factor=VECTOR)
    s[D].parallel(outer)
    s[D].vectorize(lanes)
    return s, [A, B, C, D]


def row_sum(tvm, dtype: str):
    n, m = tvm.var("n", dtype), tvm.var("m", dtype)
    A = tvm.placeholder((n, m), name="A")
    k = tvm.reduce_axis((0, m), name="k")
    R = tvm.compute((n,), lambda i: tvm.sum(A[i, k], axis=k), name="R")
    s = tvm.create_schedule(R.op)
    s[R].parallel(R.op.axis[0])
    return s, [A, R]


def median_seconds(fn, repeat: int, min_time: float) -> float:
    fn()
    start = time.perf_counter()
    fn()
    number = max(1, int(min_time / max(time.perf_counter() - start, 1e-9)))
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - start) / number)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    import pytvmbridge as tvm

    repeat, min_time = (5, 0.05) if args.quick else (15, 0.2)
    rng = np.random.default_rng(0)
    n = 1 << 24
    a, b, c = (rng.random(n, dtype=np.float32) for _ in range(3))
    d = np.empty(n, np.float32)
    mat = rng.random((4096, 4096), dtype=np.float32)
    r = np.empty(4096, np.float32)
    rows = []
    for kernel, arrays, numpy_fn in (
        ("relu(a*b+c), 16M float32", (a, b, c, d), lambda: np.maximum(a * b + c, 0, out=d)),
        ("row sum, 4096x4096 float32", (mat, r), lambda: np.sum(mat, axis=1, out=r)),
    ):
        make = relu_fma if kernel.startswith("relu") else row_sum
        timings = {}
        for dtype in ("int32", "int64"):
            compile_s = []
            for _ in range(3):
                start = time.perf_counter()
                s, targs = make(tvm, dtype)
                f = tvm.build(s, targs)
                compile_s.append(time.perf_counter() - start)
            timings[dtype] = (
                statistics.median(compile_s),
                median_seconds(lambda f=f, x=arrays: f(*x), repeat, min_time),
            )
        numpy_s = median_seconds(numpy_fn, repeat, min_time)
        rows.append(
            {
                "kernel": kernel,
                "compile_ms_int32": timings["int32"][0] * 1e3,
                "compile_ms_int64": timings["int64"][0] * 1e3,
                "call_ms_int32": timings["int32"][1] * 1e3,
                "call_ms_int64": timings["int64"][1] * 1e3,
                "call_ms_numpy": numpy_s * 1e3,
            }
        )
    print("| kernel | compile int32 / int64 (ms) | call int32 / int64 (ms) | numpy (ms) |")
    print("|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['kernel']} | {row['compile_ms_int32']:.1f} / {row['compile_ms_int64']:.1f} "
            f"| {row['call_ms_int32']:.2f} / {row['call_ms_int64']:.2f} "
            f"| {row['call_ms_numpy']:.2f} |"
        )
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    path = os.path.join(os.path.dirname(__file__), "results", "index_types.json")
    with open(path, "w") as fh:
        json.dump({"rows": rows, "quick": args.quick}, fh, indent=2)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
