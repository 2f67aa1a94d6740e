"""A fused elementwise kernel, relu(a * b + c) over 16M float32, next to PyTorch eager, NumPy and
a plain copy of the same number of bytes (the memory bandwidth bound), all in the same run with
the same thread count. Medians; JSON goes to benchmarks/results/elementwise.json.

    .venv/bin/python benchmarks/elementwise.py [--quick] [--threads N]

The kernel moves 4 arrays (3 read, 1 written); the copy moves 2 (1 read, 1 written), so it is
timed over twice the length to move the same bytes. GB/s counts bytes read plus bytes written.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

VECTOR = 64  # elements per vectorized inner loop (4 chunks of 16 lanes)
BLOCK = 1 << 14  # elements per parallel task


def relu_fma_schedule(n):
    import pytvmbridge as tvm

    A = tvm.placeholder((n,), name="A")
    B = tvm.placeholder((n,), name="B")
    C = tvm.placeholder((n,), name="C")
    D = tvm.compute((n,), lambda i: tvm.max(A[i] * B[i] + C[i], 0.0), name="D")
    s = tvm.create_schedule(D.op)
    outer, inner = s[D].split(D.op.axis[0], factor=BLOCK)
    _mid, lanes = s[D].split(inner, factor=VECTOR)
    s[D].parallel(outer)
    s[D].vectorize(lanes)
    return s, [A, B, C, D]


def median_time(fn, repeat: int, min_time: float) -> float:
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-9)
    number = max(1, int(min_time / once))
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - start) / number)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1M elements, fewer repeats")
    parser.add_argument("--size", type=int, default=None, help="elements (default 16M)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "elementwise.json")
    )
    args = parser.parse_args()
    n = args.size or ((1 << 20) if args.quick else (1 << 24))
    repeat = 3 if args.quick else 9
    min_time = 0.05 if args.quick else 0.3
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)

    import numpy as np
    import torch

    import pytvmbridge as tvm

    torch.set_num_threads(args.threads)
    tvm.set_num_threads(args.threads)

    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))
    d = np.empty(n, np.float32)
    ta, tb, tc = (torch.from_numpy(x) for x in (a, b, c))
    td = torch.empty(n)
    src = np.ones(2 * n, np.float32)
    dst = np.empty(2 * n, np.float32)
    tsrc, tdst = torch.from_numpy(src), torch.from_numpy(dst)

    s, tensors = relu_fma_schedule(n)
    f = tvm.build(s, tensors, name="relu_fma")
    f(a, b, c, d)
    np.testing.assert_allclose(d, np.maximum(a * b + c, 0), rtol=1e-6, atol=1e-6)

    kernel_bytes = 4 * 4 * n
    results = []

    def record(name: str, seconds: float, moved: int = kernel_bytes) -> None:
        gbps = moved / seconds / 1e9
        results.append({"name": name, "seconds": seconds, "gb_per_s": gbps})
        print(f"{name:>28}: {seconds * 1e3:8.3f} ms  {gbps:7.2f} GB/s", flush=True)

    print(f"relu(a * b + c), {n} float32, {args.threads} thread(s), median of {repeat} rounds")
    record("pytvmbridge fused", median_time(lambda: f(a, b, c, d), repeat, min_time))
    record("torch eager", median_time(lambda: torch.relu(ta * tb + tc), repeat, min_time))
    record(
        "torch eager (out=, in place)",
        median_time(lambda: torch.relu_(torch.addcmul(tc, ta, tb, out=td)), repeat, min_time),
    )
    record("numpy", median_time(lambda: np.maximum(a * b + c, 0), repeat, min_time))
    record("copy (torch, same bytes)", median_time(lambda: tdst.copy_(tsrc), repeat, min_time))
    record("copy (numpy, same bytes)", median_time(lambda: np.copyto(dst, src), repeat, min_time))

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "benchmark": "elementwise relu(a*b+c)",
                "elements": n,
                "dtype": "float32",
                "threads": args.threads,
                "repeat": repeat,
                "statistic": "median seconds per call",
                "bytes_moved": kernel_bytes,
                "results": results,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
