"""Forward + backward of conv2d, matmul, layer norm and softmax: @kernel with derived gradients
(te.gradient, auto-scheduled) against PyTorch eager autograd, in the same run.

Each case runs ``y = f(*inputs); y.backward(g)`` on float32 tensors that require grad. The
table gives medians of forward alone and of backward alone (each round runs the forward
untimed, then times ``backward``: a difference of two noisy medians was meaningless).
The issue's target: derived backward within 1.5x of PyTorch's (geometric mean over the cases).
JSON goes to benchmarks/results/autograd.json.

    .venv/bin/python benchmarks/autograd.py [--quick] [--threads N] [--cpu-time]

``--cpu-time`` times process CPU time instead of wall time: with ``--threads 1`` it is the
figure that stays meaningful on a machine other jobs are loading.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

import pytvmbridge as tvm
from pytvmbridge import te, topi


def conv3x3(x, w):
    """Same-padded 3x3 convolution, NCHW/OIHW (a constant window: @kernel shapes are symbolic)."""
    n, c, h, wd = x.shape
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")

    def read(b, ch, y, xx):
        inside = te.all(y >= 0, y < h, xx >= 0, xx < wd)
        return te.if_then_else(inside, x[b, ch, y, xx], 0.0)

    return te.compute(
        (n, w.shape[0], h, wd),
        lambda b, f, y, xx: te.sum(
            read(b, rc, y + ry - 1, xx + rx - 1) * w[f, rc, ry, rx], [rc, ry, rx]
        ),
        name="conv",
    )


def cases(quick: bool):
    s = 1 if quick else 2
    return [
        (
            f"conv2d {4 * s}x32x28x28, 64x32x3x3",
            tvm.kernel(conv3x3, name="conv"),
            lambda x, w: F.conv2d(x, w, padding=1),
            [(4 * s, 32, 28, 28), (64, 32, 3, 3)],
        ),
        (
            f"matmul {128 * s}x512 @ 512x256",
            tvm.kernel(lambda a, b: topi.matmul(a, b), name="mm"),
            lambda a, b: a @ b,
            [(128 * s, 512), (512, 256)],
        ),
        (
            f"layer_norm {256 * s}x768",
            tvm.kernel(lambda x, g, b: topi.nn.layer_norm(x, g, b), name="ln"),
            lambda x, g, b: F.layer_norm(x, (768,), g, b),
            [(256 * s, 768), (768,), (768,)],
        ),
        (
            f"softmax {256 * s}x1024",
            tvm.kernel(lambda x: topi.nn.softmax(x), name="softmax"),
            lambda x: torch.softmax(x, -1),
            [(256 * s, 1024)],
        ),
    ]


_clock = time.perf_counter


def median_ms(fn, rounds: int, setup=None) -> float:
    """Median of ``fn(setup())`` in ms; ``setup`` (untimed) runs before every round."""
    fn(setup() if setup else None)
    samples = []
    for _ in range(rounds):
        arg = setup() if setup else None
        start = _clock()
        fn(arg)
        samples.append((_clock() - start) * 1e3)
    return statistics.median(samples)


def measure(f, shapes, rounds):
    gen = torch.Generator().manual_seed(0)
    xs = [torch.randn(*s, generator=gen).requires_grad_() for s in shapes]
    with torch.no_grad():
        g = torch.randn(f(*xs).shape, generator=gen)

    def fresh_forward():
        for x in xs:
            x.grad = None
        return f(*xs)

    fwd = median_ms(lambda _: f(*xs), rounds)
    bwd = median_ms(lambda y: y.backward(g), rounds, setup=fresh_forward)
    return fwd, bwd, [x.grad.clone() for x in xs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds")
    parser.add_argument("--threads", type=int, default=None, help="threads for both sides")
    parser.add_argument("--cpu-time", action="store_true", help="time process CPU time")
    opts = parser.parse_args()
    rounds = 5 if opts.quick else 30
    global _clock
    if opts.cpu_time:
        _clock = time.process_time
    if opts.threads:
        tvm.set_num_threads(opts.threads)
    # the same number of threads on both sides (PyTorch's default can oversubscribe the cores)
    torch.set_num_threads(tvm.get_num_threads())
    rows = []
    # PyTorch first, for every case, before any pytvmbridge kernel runs: pytvmbridge's worker
    # threads keep spinning for a while after a kernel, and on a small machine that starves
    # PyTorch's own threads (its backward measured 100x slower right after our kernels).
    all_cases = cases(opts.quick)
    reference_runs = [measure(reference, shapes, rounds) for _, _, reference, shapes in all_cases]
    for (name, kernel, _, shapes), (t_fwd, t_bwd, t_grads) in zip(
        all_cases, reference_runs, strict=True
    ):
        k_fwd, k_bwd, k_grads = measure(kernel, shapes, rounds)
        for a, b in zip(k_grads, t_grads, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-3)
        rows.append(
            {
                "case": name,
                "shapes": shapes,
                "torch_forward_ms": t_fwd,
                "torch_backward_ms": t_bwd,
                "ours_forward_ms": k_fwd,
                "ours_backward_ms": k_bwd,
            }
        )
    heads = ("torch fwd", "torch bwd", "ours fwd", "ours bwd", "bwd ratio")
    print(f"{'case':34}" + "".join(f" {h:>10}" for h in heads))
    for r in rows:
        r["backward_ratio"] = r["ours_backward_ms"] / r["torch_backward_ms"]
        print(
            f"{r['case']:34} {r['torch_forward_ms']:10.3f} {r['torch_backward_ms']:10.3f} "
            f"{r['ours_forward_ms']:10.3f} {r['ours_backward_ms']:10.3f} "
            f"{r['backward_ratio']:9.2f}x"
        )
    geo = math.exp(statistics.mean(math.log(r["backward_ratio"]) for r in rows))
    print(
        f"geometric mean of backward time ours/torch: {geo:.2f}x (target <= 1.5x); "
        "times in ms, medians"
    )
    out = Path(__file__).parent / "results" / "autograd.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "quick": opts.quick,
                "threads": torch.get_num_threads(),
                "clock": "process CPU time" if opts.cpu_time else "wall",
                "rows": rows,
                "geomean_backward_ratio": geo,
            },
            indent=2,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
