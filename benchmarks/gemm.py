"""The GEMM optimisation ladder (TVM's "How to optimize GEMM on CPU"), timed next to
torch.matmul and NumPy's matmul in the same run with the same thread count.

Steps: the default schedule; blocking (32x32 tiles, k split by 4); vectorize; loop permutation;
array packing of B; a write cache computed at the tile with the k loop unrolled; parallel; and a
register-blocked micro-kernel (a tile of C that lives in vector registers across the k loop, B
packed in panels as wide as the tile: 8 x 32 with AVX-512's 32 registers of 16 floats, 4 x 16 with
AVX2's 16 of 8, sized from the host's features by ``register_tile``). Each step prints its median
time and GFLOPS; JSON goes to benchmarks/results/gemm.json.

    .venv/bin/python benchmarks/gemm.py [--quick] [--size 1024] [--threads N] [--steps a,b]
    .venv/bin/python benchmarks/gemm.py --auto [--shape 1024x1024x1024] [--config JSON ...]

``--auto``: the automatic scheduler's GEMM (its analytical point, and each ``--config``: knob
overrides as JSON, ``{"C/tile_rows": 8, "C/tile_vectors": 2}``, checked against NumPy) against
torch.matmul on one thread, timed by the thread's CPU time, alternating (the order rotating
every round), so that the load of a shared machine counts for neither: the way to compare a
micro-kernel or a knob with MKL on a busy machine. Prints GFLOPS and torch's time over each.

The schedule functions are imported by tests/python/test_schedule_gemm.py, which checks every
step against NumPy at sizes that are and are not multiples of the tiles.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

BN = 32  # the ladder's tile
KFACTOR = 4  # its k split
SETTLE_SECONDS = 0.3  # pause before timing each candidate (see interleaved_medians)


def _tvm():
    import pytvmbridge as tvm

    return tvm


def matmul(M: int, N: int, K: int, packed_width: int | None = None):
    """C = A @ B; with packed_width, B is first copied into panels [N / w, K, w] (array packing)."""
    tvm = _tvm()
    A = tvm.placeholder((M, K), name="A")
    B = tvm.placeholder((K, N), name="B")
    k = tvm.reduce_axis((0, K), name="k")
    if packed_width is None:
        C = tvm.compute((M, N), lambda x, y: tvm.sum(A[x, k] * B[k, y], axis=k), name="C")
        return A, B, C, None
    w = packed_width
    panels = (N + w - 1) // w
    # The last panel is padded with zeros when w does not divide N.
    packedB = tvm.compute(
        (panels, K, w),
        lambda x, y, z: tvm.if_then_else(x * w + z < N, B[y, tvm.min(x * w + z, N - 1)], 0.0),
        name="packedB",
    )
    C = tvm.compute(
        (M, N), lambda x, y: tvm.sum(A[x, k] * packedB[y // w, k, y % w], axis=k), name="C"
    )
    return A, B, C, packedB


def _operands(M: int, N: int, K: int) -> tuple:
    """Random float32 operands of an M x K @ K x N product, NumPy's result, the operands as
    torch tensors (sharing memory) and a torch output: (a, b, a @ b, ta, tb, tc)."""
    import numpy as np
    import torch

    rng = np.random.default_rng(0)
    a = rng.random((M, K), dtype=np.float32)
    b = rng.random((K, N), dtype=np.float32)
    return a, b, a @ b, torch.from_numpy(a), torch.from_numpy(b), torch.empty(M, N)


def step_default(M, N, K):
    tvm = _tvm()
    A, B, C, _ = matmul(M, N, K)
    return tvm.create_schedule(C.op), [A, B, C]


def _blocked(M, N, K, permute: bool, vectorize: bool, packed: bool):
    tvm = _tvm()
    A, B, C, packedB = matmul(M, N, K, BN if packed else None)
    s = tvm.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], BN, BN)
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, factor=KFACTOR)
    if permute:
        s[C].reorder(xo, yo, ko, xi, ki, yi)
    else:
        s[C].reorder(xo, yo, ko, ki, xi, yi)
    if vectorize:
        s[C].vectorize(yi)
    if packed:
        x, _y, z = s[packedB].op.axis
        s[packedB].vectorize(z)
        s[packedB].parallel(x)
    return s, [A, B, C]


def step_blocking(M, N, K):
    return _blocked(M, N, K, permute=False, vectorize=False, packed=False)


def step_vectorize(M, N, K):
    return _blocked(M, N, K, permute=False, vectorize=True, packed=False)


def step_permutation(M, N, K):
    return _blocked(M, N, K, permute=True, vectorize=True, packed=False)


def step_packing(M, N, K):
    return _blocked(M, N, K, permute=True, vectorize=True, packed=True)


def _write_cache(M, N, K, parallel: bool):
    tvm = _tvm()
    A, B, C, packedB = matmul(M, N, K, BN)
    s = tvm.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    xo, yo, _xi, _yi = s[C].tile(C.op.axis[0], C.op.axis[1], BN, BN)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    (k,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(k, factor=KFACTOR)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)
    if parallel:
        s[C].parallel(xo)
    x, _y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)
    return s, [A, B, C]


def step_write_cache(M, N, K):
    return _write_cache(M, N, K, parallel=False)


def step_parallel(M, N, K):
    return _write_cache(M, N, K, parallel=True)


def register_tile(features: dict[str, bool] | None = None) -> tuple[int, int]:
    """The micro-kernel's tile (rows, columns) of float32 accumulators for a host with these
    CPU features (this host's by default): two vectors wide, with as many rows as leave about
    half the vector registers to accumulators (16 of AVX-512's 32, 8 of AVX2's 16), the rest
    for the loads of B, the broadcasts of A and the pipeline's registers in flight.

        >>> register_tile({"avx512f": True, "avx2": True})
        (8, 32)
        >>> register_tile({"avx2": True})
        (4, 16)
        >>> register_tile({})
        (4, 8)
    """
    if features is None:
        from pytvmbridge import _core

        features = _core.host_cpu_features()
    if features.get("avx512f"):
        lanes, registers = 16, 32
    elif features.get("avx2") or features.get("avx"):
        lanes, registers = 8, 16
    else:
        lanes, registers = 4, 16  # SSE
    vectors = 2
    rows = registers // 2 // vectors
    return rows, vectors * lanes


def step_micro_kernel(M, N, K):
    """Register blocking: C is tiled by MR x NR (``register_tile``: from the host's vector width
    and register count) and each tile accumulates over the whole k loop in MR * NR / lanes
    vector registers (the rows unrolled, the columns two vectors), fed by one broadcast of A per
    row and two loads of packed B per k. Column panels are the outermost (parallel) loop, so a
    panel of packed B (K x NR floats) stays in L2 while every row block streams through it. No
    write cache: with constant tile offsets LLVM keeps C's tile in registers across k and
    stores it once."""
    tvm = _tvm()
    MR, NR = register_tile()
    A, B, C, packedB = matmul(M, N, K, NR)
    s = tvm.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], MR, NR)
    (k,) = s[C].op.reduce_axis
    s[C].reorder(yo, xo, k, xi, yi)
    s[C].unroll(xi)
    s[C].vectorize(yi)
    s[C].parallel(yo)
    x, _y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)
    return s, [A, B, C]


STEPS: dict[str, Callable] = {
    "default": step_default,
    "blocking": step_blocking,
    "vectorize": step_vectorize,
    "loop_permutation": step_permutation,
    "array_packing": step_packing,
    "write_cache": step_write_cache,
    "parallel": step_parallel,
    "micro_kernel": step_micro_kernel,
}


def calls_per_round(fn: Callable[[], None], min_time: float) -> int:
    """How many calls of fn last about min_time (at least one); warms fn up on the way."""
    fn()
    start = time.perf_counter()
    fn()
    return max(1, int(min_time / max(time.perf_counter() - start, 1e-9)))


def interleaved_medians(
    candidates: dict[str, Callable[[], None]], repeat: int, min_time: float
) -> dict[str, float]:
    """Median seconds per call of each candidate over `repeat` rounds. Every round times every
    candidate once, one after the other, so a drift of the machine's speed (turbo, other load)
    during the run affects all of them alike instead of favouring whoever ran first.

    Before each candidate the run pauses: the BLAS thread pools keep spinning after a call (Intel
    OpenMP for 200 ms by default, OpenBLAS similarly) and would otherwise share the cores with
    whatever is timed next."""
    number = {name: calls_per_round(fn, min_time) for name, fn in candidates.items()}
    rounds: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeat):
        for name, fn in candidates.items():
            time.sleep(SETTLE_SECONDS)
            fn()  # warm caches after the pause
            start = time.perf_counter()
            for _ in range(number[name]):
                fn()
            rounds[name].append((time.perf_counter() - start) / number[name])
    return {name: statistics.median(r) for name, r in rounds.items()}


def auto_main(shape: str, overrides: list[str], rounds: int) -> None:
    """``--auto`` (see the module documentation)."""
    import numpy as np
    import torch

    tvm = _tvm()
    from pytvmbridge import autotvm

    torch.set_num_threads(1)
    tvm.set_num_threads(1)
    dims = [int(x) for x in shape.lower().split("x")]
    M, N, K = dims if len(dims) == 3 else dims * 3

    def mm(m: int, n: int, k: int) -> list:
        A, B, C, _ = matmul(m, n, k)
        return [A, B, C]

    task = autotvm.auto_task(mm, (M, N, K))
    a, b, reference, ta, tb, tc = _operands(M, N, K)
    candidates: dict[str, Callable[[], None]] = {}
    for text in ["{}", *overrides]:
        config = task.space.default()
        for key, value in json.loads(text).items():
            stage, knob = key.rsplit("/", 1)
            config.setdefault(stage, {})[knob] = int(value)
        config = task.canonical(config)
        sch, args = task.instantiate(config)
        f = tvm.build(sch, args)
        c = np.zeros((M, N), dtype=np.float32)
        f(a, b, c)
        np.testing.assert_allclose(c, reference, rtol=1e-3, atol=1e-3 * K, err_msg=text)
        name = "analytical" if text == "{}" else text
        candidates[name] = lambda f=f, c=c: f(a, b, c)
    candidates["torch.matmul"] = lambda: torch.matmul(ta, tb, out=tc)
    print(f"GEMM {M}x{N}x{K} float32, 1 thread, thread CPU time, median of {rounds} rounds")
    print(f"analytical point: {task.space.default()}")
    names = list(candidates)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for j in range(len(names)):
            name = names[(j + r) % len(names)]
            fn = candidates[name]
            fn()
            start = time.thread_time()
            calls = 0
            while calls < 3 or time.thread_time() - start < 0.05:
                fn()
                calls += 1
            samples[name].append((time.thread_time() - start) / calls)
    torch_s = statistics.median(samples["torch.matmul"])
    for name in names:
        sec = statistics.median(samples[name])
        print(
            f"{name:>40}: {sec * 1e3:9.3f} ms {2.0 * M * N * K / sec / 1e9:8.1f} GFLOPS"
            f"  torch/this {torch_s / sec:.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--auto", action="store_true", help="auto_schedule vs torch, 1 thread")
    parser.add_argument("--shape", default="1024x1024x1024", help="--auto: MxNxK")
    parser.add_argument("--config", action="append", default=[], help="--auto: knob overrides")
    parser.add_argument("--quick", action="store_true", help="256^3 and fewer repeats")
    parser.add_argument("--rounds", type=int, default=None, help="--auto: rounds (default 7)")
    parser.add_argument("--size", type=int, default=None, help="M = N = K (default 1024)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for all")
    parser.add_argument("--steps", default=",".join(STEPS), help="comma-separated step names")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "gemm.json"))
    args = parser.parse_args()
    if args.auto:
        auto_main(args.shape, args.config, args.rounds or (3 if args.quick else 7))
        return
    size = args.size or (256 if args.quick else 1024)
    repeat = 3 if args.quick else 7
    min_time = 0.05 if args.quick else 0.3
    # BLAS thread pools read these when NumPy and PyTorch load.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    os.environ["PYTVMBRIDGE_NUM_THREADS"] = str(args.threads)

    import numpy as np
    import torch

    tvm = _tvm()
    torch.set_num_threads(args.threads)
    tvm.set_num_threads(args.threads)

    M = N = K = size
    flops = 2.0 * M * N * K
    a, b, expected, ta, tb, tc = _operands(M, N, K)

    print(f"GEMM {M}x{N}x{K} float32, {args.threads} thread(s), median of {repeat} rounds")
    candidates: dict[str, Callable[[], None]] = {
        "torch.matmul": lambda: torch.matmul(ta, tb, out=tc),
        "numpy.matmul": lambda: np.matmul(a, b, out=expected),
    }
    outputs = {}
    for name in args.steps.split(","):
        s, tensors = STEPS[name](M, N, K)
        f = tvm.build(s, tensors, name=name)
        c = outputs[name] = np.zeros((M, N), dtype=np.float32)
        candidates[name] = lambda f=f, c=c: f(a, b, c)
    # The early steps are slow at 1024^3 (seconds per call): they get one call per round.
    medians = interleaved_medians(candidates, repeat, min_time)
    reference = a @ b
    for name, c in outputs.items():
        np.testing.assert_allclose(c, reference, rtol=1e-3, atol=1e-3 * K, err_msg=name)

    results = []
    for name, seconds in medians.items():
        gflops = flops / seconds / 1e9
        results.append({"name": name, "seconds": seconds, "gflops": gflops})
        print(f"{name:>18}: {seconds * 1e3:9.3f} ms  {gflops:8.2f} GFLOPS", flush=True)

    torch_gflops = results[0]["gflops"]
    best = results[-1]
    print(f"last step ({best['name']}): {100 * best['gflops'] / torch_gflops:.1f}% of torch.matmul")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "benchmark": "gemm",
                "size": [M, N, K],
                "dtype": "float32",
                "threads": args.threads,
                "repeat": repeat,
                "statistic": "median seconds per call",
                "results": results,
                "last_step_vs_torch": best["gflops"] / torch_gflops,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
