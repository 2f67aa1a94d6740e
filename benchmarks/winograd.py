"""Winograd's 3x3 convolution against the direct one, on ResNet's stride-1 3x3 layers.

Each layer runs as the graph compiler runs it: channel-blocked data (``NCHW16c``, or 32 when two
vectors of 16 divide the channels), the weight transformed (Winograd) or packed (direct) once
ahead of time, a fused ReLU, everything ``auto_schedule``d. Per layer and batch size: the
direct blocked convolution, F(2x2, 3x3) and F(4x4, 3x3), and PyTorch's ``F.conv2d`` + ReLU
(NCHW, oneDNN) in the same run, interleaved median of 7 rounds; the tile size
``topi.nn.winograd_tile_size`` chooses is marked. Each output is checked against PyTorch.

    .venv/bin/python benchmarks/winograd.py [--batch 1,8] [--threads 2] [--out FILE]

Prints a table and writes ``benchmarks/results/winograd.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

LAYERS = [(64, 56), (128, 28), (256, 14), (512, 7)]  # (channels, image size), ResNet-18/50


def _layer(batch: int, c: int, h: int, variant: str) -> tuple[Any, Any, float, int]:
    """(compiled kernel, weight transform, compile ms, channel block) of one variant: "direct",
    "F2" or "F4"."""

    import pytvmbridge as tvm
    from pytvmbridge import te, topi
    from pytvmbridge.graph.fold import Derived
    from pytvmbridge.graph.layout import blocked_source, channel_block, conv2d_nchwc, unpack

    block = channel_block(c, 16)
    x = tvm.placeholder((batch, c // block, h, h, block), name="x")
    if variant == "direct":
        w = tvm.placeholder((c // block, c, 3, 3, block), name="w")
        y = blocked_source(conv2d_nchwc(unpack(x), w, None, (1, 1), (1, 1), (1, 1), 1, block))
        spec = Derived("conv_pack", (0,), (block,))
    else:
        tile = int(variant[1])
        w = tvm.placeholder((tile + 2, tile + 2, c // block, c, block), name="w")
        y = topi.nn.conv2d_winograd_nchwc(x, w, 1, tile)
        spec = Derived("winograd_pack", (0,), (block, tile))
    out = te.compute(y.shape, lambda *i: te.max(y(*i), te.const(0.0)), name="relu", tag="elemwise")
    start = time.perf_counter()
    f = tvm.build(tvm.auto_schedule([out]), [x, w, out])
    compile_ms = (time.perf_counter() - start) * 1e3
    return f, spec, compile_ms, block


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", default="1,8")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "winograd.json"))
    args = parser.parse_args()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYTVMBRIDGE_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import torch
    import torch.nn.functional as F

    import pytvmbridge as tvm
    from benchmarks.ops import medians
    from pytvmbridge import cache, topi
    from pytvmbridge.graph.fold import materialize

    torch.set_num_threads(args.threads)
    tvm.set_num_threads(args.threads)
    cache.disable()  # compile times measured, not loaded
    rows = []
    header = (
        f"{'layer':<22} {'batch':>5} {'torch ms':>9} {'direct ms':>10} {'F(2x2) ms':>10} "
        f"{'F(4x4) ms':>10} {'chosen':>7} {'direct/chosen':>14} {'torch/chosen':>13} "
        f"{'compile ms (direct, F2, F4)':>28}"
    )
    print(f"torch {torch.__version__}, {args.threads} threads, float32, median of 7 rounds")
    print(header)
    for batch in (int(b) for b in args.batch.split(",")):
        for c, h in LAYERS:
            x = torch.randn(batch, c, h, h)
            weight = torch.randn(c, c, 3, 3) / (3 * c**0.5)
            expected = torch.relu(F.conv2d(x, weight, padding=1))
            calls, compile_ms = {}, {}
            for variant in ("direct", "F2", "F4"):
                f, spec, ms, block = _layer(batch, c, h, variant)
                xb = x.reshape(batch, c // block, block, h, h).permute(0, 1, 3, 4, 2).contiguous()
                wt = materialize(spec, [weight])
                out = torch.empty(batch, c // block, h, h, block)
                f(xb, wt, out)
                got = out.permute(0, 1, 4, 2, 3).reshape(batch, c, h, h)
                torch.testing.assert_close(got, expected, rtol=1e-3, atol=1e-3)
                calls[variant] = lambda f=f, xb=xb, wt=wt, out=out: f(xb, wt, out)
                compile_ms[variant] = ms
            calls["torch"] = lambda x=x, w=weight: torch.relu(F.conv2d(x, w, padding=1))
            ms = {k: v * 1e3 for k, v in medians(calls, 7, 0.05, 0.05).items()}
            tile = topi.nn.winograd_tile_size(batch, h, h)
            chosen = {0: "direct", 2: "F2", 4: "F4"}[tile]
            row = {
                "layer": f"{c}x{h}x{h}->{c} k3s1",
                "batch": batch,
                "ms": ms,
                "chosen": chosen,
                "direct_over_chosen": ms["direct"] / ms[chosen],
                "torch_over_chosen": ms["torch"] / ms[chosen],
                "compile_ms": compile_ms,
            }
            rows.append(row)
            print(
                f"{row['layer']:<22} {batch:>5} {ms['torch']:>9.3f} {ms['direct']:>10.3f} "
                f"{ms['F2']:>10.3f} {ms['F4']:>10.3f} {chosen:>7} "
                f"{row['direct_over_chosen']:>14.2f} {row['torch_over_chosen']:>13.2f} "
                f"{compile_ms['direct']:>8.0f} {compile_ms['F2']:>6.0f} {compile_ms['F4']:>6.0f}"
            )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps(
            {
                "threads": args.threads,
                "cpu": platform.processor() or platform.machine(),
                "torch": torch.__version__,
                "rows": rows,
            },
            indent=1,
        )
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
