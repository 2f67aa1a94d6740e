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
SETTLE_SECONDS = 0.3


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


def interleaved_medians(candidates, repeat: int, min_time: float) -> dict[str, float]:
    """Median seconds per call of each candidate; every round times every candidate once, after
    a pause that lets other libraries' spinning thread pools go idle (as in gemm.py)."""
    number = {}
    for name, fn in candidates.items():
        fn()
        start = time.perf_counter()
        fn()
        number[name] = max(1, int(min_time / max(time.perf_counter() - start, 1e-9)))
    rounds = {name: [] for name in candidates}
    for _ in range(repeat):
        for name, fn in candidates.items():
            time.sleep(SETTLE_SECONDS)
            fn()
            start = time.perf_counter()
            for _ in range(number[name]):
                fn()
            rounds[name].append((time.perf_counter() - start) / number[name])
    return {name: statistics.median(r) for name, r in rounds.items()}


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
    print(f"relu(a * b + c), {n} float32, {args.threads} thread(s), median of {repeat} rounds")
    candidates = {
        "pytvmbridge fused": lambda: f(a, b, c, d),
        "torch eager": lambda: torch.relu(ta * tb + tc),
        "torch eager (out=, in place)": lambda: torch.relu_(torch.addcmul(tc, ta, tb, out=td)),
        "numpy": lambda: np.maximum(a * b + c, 0),
        "numpy (out=, in place)": lambda: np.maximum(
            np.add(np.multiply(a, b, out=d), c, out=d), 0, out=d
        ),
        "copy (torch, same bytes)": lambda: tdst.copy_(tsrc),
        "copy (numpy, same bytes)": lambda: np.copyto(dst, src),
    }
    results = []
    for name, seconds in interleaved_medians(candidates, repeat, min_time).items():
        gbps = kernel_bytes / seconds / 1e9
        results.append({"name": name, "seconds": seconds, "gb_per_s": gbps})
        print(f"{name:>30}: {seconds * 1e3:8.3f} ms  {gbps:7.2f} GB/s", flush=True)

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
