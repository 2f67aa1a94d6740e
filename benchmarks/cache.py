"""The on-disk compile cache and saved modules (issue 13's measurements).

Prints, in one run: the first call of an @kernel (a 56x56 matmul, and a small elementwise one) in
a fresh process with an empty cache (compiles) and with a filled one (loads), excluding the
interpreter start and `import pytvmbridge`; and `runtime.load_module` of a saved kernel against
`build` of the same schedule. Medians over fresh processes; JSON goes to
benchmarks/results/cache.json. The first-call rows give wall-clock time and the process's CPU
time (which a loaded machine inflates less). The child processes may write bytecode caches
(`__pycache__`) even when PYTHONDONTWRITEBYTECODE is set here, as an installed package has them:
otherwise a first call that imports a module lazily would be timed compiling Python source.

    .venv/bin/python benchmarks/cache.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

import pytvmbridge as tvm

FIRST_CALL = """
    import json, time, numpy as np
    import pytvmbridge as tvm
    from pytvmbridge import cache

    @tvm.kernel
    def matmul(x, y):
        k = tvm.reduce_axis((0, x.shape[1]), name="k")
        return tvm.compute((x.shape[0], y.shape[1]),
                           lambda i, j: tvm.sum(x[i, k] * y[k, j], axis=k), name="z")

    @tvm.kernel
    def scale_shift(x):
        return tvm.compute(x.shape, lambda i: x[i] * 2.0 + 1.0, name="y")

    x = np.ones((56, 56), "float32"); v = np.ones(1000, "float32")
    c0 = time.process_time(); t0 = time.perf_counter(); matmul(x, x)
    c1 = time.process_time(); t1 = time.perf_counter(); scale_shift(v)
    c2 = time.process_time(); t2 = time.perf_counter()
    print(json.dumps({"matmul": t1 - t0, "elementwise": t2 - t1, "matmul_cpu": c1 - c0,
                      "elementwise_cpu": c2 - c1, **cache.stats()}))
"""


def first_calls(cache_dir: str, rounds: int, clear_each: bool) -> dict[str, list[float]]:
    keys = ("matmul", "elementwise", "matmul_cpu", "elementwise_cpu")
    out: dict[str, list[float]] = {k: [] for k in keys}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTVMBRIDGE_CACHE_DIR"] = cache_dir
    for _ in range(rounds):
        if clear_each:
            for path in Path(cache_dir).rglob("*.ptb"):
                path.unlink()
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(FIRST_CALL)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        result = json.loads(proc.stdout)
        expected_hits = 0 if clear_each else 2
        assert result["hits"] == expected_hits, result
        for k in keys:
            out[k].append(result[k])
    return out


def load_vs_build(rounds: int) -> dict[str, list[float]]:
    n = tvm.var("n")
    A = tvm.placeholder((n, 64), name="A")
    W = tvm.placeholder((64, 64), name="W")
    k = tvm.reduce_axis((0, 64), name="k")
    C = tvm.compute((n, 64), lambda i, j: tvm.sum(A[i, k] * W[k, j], axis=k), name="C")
    s = tvm.create_schedule(C.op)
    tvm.auto_schedule(s)
    path = os.path.join(tempfile.mkdtemp(), "dense.ptb")
    tvm.build(s, [A, W, C], name="dense").export_library(path)
    times: dict[str, list[float]] = {"build": [], "load_module": []}
    for _ in range(rounds):
        t0 = time.perf_counter()
        tvm.build(s, [A, W, C], name="dense")
        t1 = time.perf_counter()
        tvm.runtime.load_module(path)
        t2 = time.perf_counter()
        times["build"].append(t1 - t0)
        times["load_module"].append(t2 - t1)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    args = parser.parse_args()
    rounds = 3 if args.quick else 15
    cache_dir = tempfile.mkdtemp(prefix="ptb-bench-cache-")
    first_calls(cache_dir, 1, clear_each=True)  # bytecode caches written, not timed
    cold = first_calls(cache_dir, rounds, clear_each=True)
    warm = first_calls(cache_dir, rounds, clear_each=False)
    loads = load_vs_build(rounds * 4)
    rows = [
        ("@kernel 56x56 matmul, first call, empty cache", cold["matmul"]),
        ("@kernel 56x56 matmul, first call, cached", warm["matmul"]),
        ("@kernel 56x56 matmul, first call, cached (CPU time)", warm["matmul_cpu"]),
        ("@kernel elementwise, first call, empty cache", cold["elementwise"]),
        ("@kernel elementwise, first call, cached", warm["elementwise"]),
        ("@kernel elementwise, first call, cached (CPU time)", warm["elementwise_cpu"]),
        ("build() of a dense kernel", loads["build"]),
        ("runtime.load_module() of it", loads["load_module"]),
    ]
    print(f"{'case':<56} {'median ms':>10}")
    results = {}
    for name, values in rows:
        median = statistics.median(values) * 1e3
        results[name] = {"median_ms": median, "samples_ms": [v * 1e3 for v in values]}
        print(f"{name:<56} {median:>10.2f}")
    out = Path(__file__).parent / "results" / "cache.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"rounds": rounds, "results": results}, indent=1))
    np.testing.assert_array_less(0, [r["median_ms"] for r in results.values()])


if __name__ == "__main__":
    main()
