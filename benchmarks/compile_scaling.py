"""Compile time against program size (issue 9, item 9).

Three families, each timed from definition to a callable module (median of --repeat runs):

- chained stages: N elementwise stages, each reading the previous one, each its own loop nest;
- select chain: `e = if_then_else(A[i] > k, e + 1, e)` nested D deep (a DAG: each level uses
  the previous one twice, 2**D paths written out as a tree);
- TC statements: one TC def of S statements, each reading the previous one; `tc.define` alone,
  and define + first call (which compiles).

Prints a table and writes benchmarks/results/compile_scaling.json. There is no competitor:
the point is how the time grows with the size.

    .venv/bin/python benchmarks/compile_scaling.py [--quick] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

import pytvmbridge as tvm
from pytvmbridge import tc


def chained_stages(stages: int, n: int = 1024) -> None:
    A = tvm.placeholder((n,), name="A")
    T = A
    for k in range(stages):
        T = tvm.compute((n,), lambda i, T=T: T[i] * 0.5 + 1.0, name=f"T{k}")
    tvm.build(tvm.create_schedule(T.op), [A, T])


def select_chain(depth: int, n: int = 64) -> None:
    A = tvm.placeholder((n,), name="A")

    def body(i):
        e = A[i]
        for k in range(depth):
            e = tvm.if_then_else(A[i] > float(k % 5), e + 1.0, e)
        return e

    B = tvm.compute((n,), body, name="B")
    tvm.build(tvm.create_schedule(B.op), [A, B])


def tc_source(statements: int) -> str:
    lines = ["def chain(float(N) A) -> (" + ", ".join(f"T{k}" for k in range(statements)) + ") {"]
    lines.append("    T0(i) = A(i) * 0.5")
    for k in range(1, statements):
        lines.append(f"    T{k}(i) = T{k - 1}(i) * 0.5")
    lines.append("}")
    return "\n".join(lines)


def tc_define(statements: int) -> None:
    tc.define(tc_source(statements))


def tc_define_and_call(statements: int) -> None:
    tc.define(tc_source(statements))(np.ones(256, dtype="float32"))


def median_seconds(fn, size: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(size)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    families = {
        "chained stages": (chained_stages, [25, 50, 100, 200, 400]),
        "select chain depth": (select_chain, [10, 100, 1000, 5000]),
        "tc.define statements": (tc_define, [100, 1000, 5000]),
        "tc define+call statements": (tc_define_and_call, [10, 50, 100, 300]),
    }
    if args.quick:
        families = {k: (f, sizes[:2]) for k, (f, sizes) in families.items()}
    rows = []
    print(f"{'family':<28}{'size':>8}{'median s':>12}")
    for family, (fn, sizes) in families.items():
        for size in sizes:
            seconds = median_seconds(fn, size, args.repeat)
            rows.append({"family": family, "size": size, "median_s": seconds})
            print(f"{family:<28}{size:>8}{seconds:>12.3f}", flush=True)
    out = Path(__file__).parent / "results" / "compile_scaling.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"repeat": args.repeat, "rows": rows}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
