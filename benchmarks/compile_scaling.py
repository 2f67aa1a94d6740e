"""Compile time against program size (issue 9, items 5 and 9).

Five families, each timed from definition to a callable module (median of --repeat runs, wall
and CPU time of this process):

- chained stages: N elementwise stages, each reading the previous one, each its own loop nest;
- select chain: `e = if_then_else(A[i] > k, e + 1, e)` nested D deep (a DAG: each level uses
  the previous one twice, 2**D paths if it were written out as a tree);
- sum of reads: Python's `sum()` over D reads `A[i + k]`, a D-deep chain of adds;
- tc.define: parsing and checking one TC def of S statements, each reading the previous one;
- TC define + build: the same def translated, auto-scheduled and compiled (`.build()`: compile
  time only, without allocating and filling S outputs; the compile cache is off, so each run
  compiles).

Prints a table and writes benchmarks/results/compile_scaling.json. There is no competitor: the
point is how the time grows with the size. The full run takes a few minutes on an idle machine;
--quick runs the two smallest sizes of each family once.

    .venv/bin/python benchmarks/compile_scaling.py [--quick] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pytvmbridge as tvm
from pytvmbridge import cache, tc


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


def sum_of_reads(depth: int, n: int = 8) -> None:
    A = tvm.placeholder((n + depth,), name="A")
    B = tvm.compute((n,), lambda i: sum(A[i + k] for k in range(depth)), name="B")
    tvm.build(tvm.create_schedule(B.op), [A, B])


def tc_define(statements: int) -> None:
    tc.define(tc_source(statements))


def tc_define_and_build(statements: int) -> None:
    tc.define(tc_source(statements)).build()


def median_seconds(fn: Callable[[int], None], size: int, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of `fn(size)` over `repeat` runs."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn(size)
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return statistics.median(walls), statistics.median(cpus)


FAMILIES: dict[str, tuple[Callable[[int], None], list[int]]] = {
    "chained stages": (chained_stages, [25, 50, 100, 200, 400]),
    "select chain depth": (select_chain, [10, 100, 1000, 5000]),
    "sum() of reads depth": (sum_of_reads, [500, 1000, 2000, 4000, 8000]),
    "tc.define statements": (tc_define, [1000, 5000, 20000]),
    "TC define+build statements": (tc_define_and_build, [10, 50, 100, 300]),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small sizes per family, once")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    repeat = 1 if args.quick else args.repeat
    # TC's build goes through the on-disk compile cache: every repeat (and every later run)
    # would time a cache load, not a compile.
    cache.disable()
    families = FAMILIES
    if args.quick:
        families = {k: (f, sizes[:2]) for k, (f, sizes) in FAMILIES.items()}
    rows = []
    print(f"{'family':<28}{'size':>8}{'wall s':>10}{'cpu s':>10}")
    for family, (fn, sizes) in families.items():
        fn(sizes[0])  # warm-up: imports, first JIT set-up
        for size in sizes:
            wall, cpu = median_seconds(fn, size, repeat)
            rows.append({"family": family, "size": size, "wall_s": wall, "cpu_s": cpu})
            print(f"{family:<28}{size:>8}{wall:>10.3f}{cpu:>10.3f}", flush=True)
    out = Path(__file__).parent / "results" / "compile_scaling.json"
    out.parent.mkdir(exist_ok=True)
    meta = {
        "repeat": repeat,
        "quick": args.quick,
        "cpus": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
        "machine": platform.processor() or platform.machine(),
    }
    out.write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
