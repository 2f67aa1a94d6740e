"""Where the BERT layer's and the MLP's time goes: pieces and call-path levels, ours vs Inductor.

Two tables, all in one run, float32, ``no_grad``, Inductor with freezing as in models.py:

- **BERT layer pieces**: the layer cut at its tensors (the QKV linear; attention from the QKV
  output to the context; the output projection + residual + layer norm; FFN1 + GELU; FFN2 +
  residual + layer norm; plus the products and norms alone), each piece a module of its own
  compiled by ``torch.compile`` with our backend and with Inductor, on the same weights and on
  the tensors the eager layer computes. The pieces add up to the whole layer when nothing is
  lost between them, so the table says which kernel the difference is in.
- **MLP call path**: one compiled call taken apart, from the outside in: the whole
  ``torch.compile`` call (Dynamo's guards, AOT autograd's wrapper), our ``CompiledGraph``
  (weight cache look-ups), the C++ bridge (output allocation) and the kernel alone writing into
  preallocated outputs; the same at the model's full size and at tiny sizes (16-32-4), where the
  kernel is about a microsecond and what is left is the call path.

    .venv/bin/python benchmarks/model_pieces.py [--batches 1,8] [--threads N] [--cpu-time]
        [--quick] [--out FILE]

Every piece's output is checked against eager PyTorch before it is timed. JSON in
benchmarks/results/model_pieces.json.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pytvmbridge as tvm
from benchmarks.models import build
from benchmarks.models.mlp import MLP
from pytvmbridge.graph import partition

_clock = time.perf_counter


def median_ms(fn: Callable[[], Any], rounds: int, calls: int) -> float:
    """Median over ``rounds`` of the mean time of ``calls`` back-to-back calls, in ms."""
    fn()
    samples = []
    for _ in range(rounds):
        start = _clock()
        for _ in range(calls):
            fn()
        samples.append((_clock() - start) / calls * 1e3)
    return statistics.median(samples)


class _Piece(nn.Module):
    """One part of a BertLayer's forward, reading the layer's own submodules."""

    def __init__(self, layer: nn.Module, name: str) -> None:
        super().__init__()
        self.layer, self.name = layer, name

    def heads(self, t: torch.Tensor) -> torch.Tensor:
        b, s, _ = t.shape
        return t.reshape(b, s, self.layer.heads, self.layer.head_dim).transpose(1, 2)

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        m, n = self.layer, self.name
        if n == "qkv":
            return m.qkv(xs[0])
        if n in ("attention", "scores_softmax"):
            b, s, h3 = xs[0].shape
            q, k, v = (self.heads(t) for t in xs[0].split(h3 // 3, dim=-1))
            probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(m.head_dim), dim=-1)
            if n == "scores_softmax":
                return probs
            return (probs @ v).transpose(1, 2).reshape(b, s, h3 // 3)
        if n == "out_proj":
            return m.out(xs[0])
        if n == "out_proj_norm":
            return m.norm1(xs[1] + m.out(xs[0]))
        if n == "ffn1_gelu":
            return nn.functional.gelu(m.ffn1(xs[0]))
        if n == "ffn2":
            return m.ffn2(xs[0])
        if n == "ffn2_norm":
            return m.norm2(xs[1] + m.ffn2(xs[0]))
        if n == "layer_norm":
            return m.norm2(xs[0])
        raise ValueError(f"unknown piece {n!r}")


def bert_pieces(layer: nn.Module, x: torch.Tensor) -> dict[str, tuple[nn.Module, tuple]]:
    """Each piece with the eager layer's own tensors at its inputs."""
    p = {n: _Piece(layer, n) for n in ("qkv", "attention", "out_proj_norm", "ffn1_gelu")}
    qkv = p["qkv"](x)
    ctx = p["attention"](qkv)
    x1 = p["out_proj_norm"](ctx, x)
    g = p["ffn1_gelu"](x1)
    inputs = {
        "qkv": (x,),
        "attention": (qkv,),
        "out_proj_norm": (ctx, x),
        "ffn1_gelu": (x1,),
        "ffn2_norm": (g, x1),
        "scores_softmax": (qkv,),
        "out_proj": (ctx,),
        "ffn2": (g,),
        "layer_norm": (x1,),
    }
    return {n: (_Piece(layer, n), args) for n, args in inputs.items()}


# The pieces that add up to the layer; the others are parts of them, timed to locate a gap.
WHOLE = ("qkv", "attention", "out_proj_norm", "ffn1_gelu", "ffn2_norm")


def _compiled(module: nn.Module, backend: str) -> Any:
    torch._dynamo.reset()
    return torch.compile(module, backend=backend)


def run_bert(batch: int, quick: bool, rounds: int) -> list[dict]:
    layer, x = build("bert_layer", batch=batch, small=quick)
    rows = []
    with torch.no_grad():
        pieces = bert_pieces(layer, x)
        pieces["whole layer"] = (layer, (x,))
        for name, (module, args) in pieces.items():
            expected = module(*args)
            ours = _compiled(module, "pytvmbridge")
            torch.testing.assert_close(ours(*args), expected, rtol=1e-3, atol=1e-3)
            ind = _compiled(module, "inductor")
            calls = 1 if batch >= 8 and not quick else 3
            eager_ms = median_ms(lambda m=module, a=args: m(*a), rounds, calls)
            ind_ms = median_ms(lambda f=ind, a=args: f(*a), rounds, calls)
            ours_ms = median_ms(lambda f=ours, a=args: f(*a), rounds, calls)
            row = {"piece": name, "batch": batch, "eager_ms": eager_ms}
            row.update({"inductor_freezing_ms": ind_ms, "pytvmbridge_ms": ours_ms})
            rows.append(row)
            print(
                f"{name:<16}{batch:>6}{eager_ms:>10.2f}{ind_ms:>13.2f}{ours_ms:>10.2f}"
                f"{ours_ms / ind_ms:>10.2f}",
                flush=True,
            )
    ind_sum = sum(r["inductor_freezing_ms"] for r in rows if r["piece"] in WHOLE)
    ours_sum = sum(r["pytvmbridge_ms"] for r in rows if r["piece"] in WHOLE)
    print(f"{'sum of pieces':<16}{batch:>6}{'':>10}{ind_sum:>13.2f}{ours_sum:>10.2f}")
    return rows


def run_mlp_path(batch: int, sizes: dict, label: str, rounds: int, calls: int) -> dict:
    """The MLP's compiled call at four depths (see the module docstring), in microseconds."""
    graphs: list[Any] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        graphs.append(real(*args, **kwargs))
        return graphs[-1]

    real = partition.compile_graph
    torch.manual_seed(0)
    model = MLP(**sizes).eval()
    x = torch.randn(batch, sizes["in_features"])
    partition.compile_graph = spy
    try:
        with torch.no_grad():
            ours = _compiled(model, "pytvmbridge")
            ours(x)
    finally:
        partition.compile_graph = real
    (graph,) = graphs
    seen: list[tuple] = []
    call = type(graph).__call__
    type(graph).__call__ = lambda self, *a: seen.append(a) or call(self, *a)
    try:
        with torch.no_grad():
            ours(x)
    finally:
        type(graph).__call__ = call
    args = seen[0]
    kernel_args = [
        args[s] if type(s) is int else graph._derived.get(k, s, args)
        for k, s in enumerate(graph.kernel_sources)
    ]
    caller = graph._caller()
    outs = caller(*kernel_args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), model(x), rtol=1e-3, atol=1e-3)
        ind = _compiled(model, "inductor")
        levels = {
            "eager": lambda: model(x),
            "inductor call": lambda: ind(x),
            "torch.compile call": lambda: ours(x),
            "CompiledGraph": lambda: graph(*args),
            "C++ bridge": lambda: caller(*kernel_args),
            "kernel alone": lambda: graph.module(*kernel_args, *outs),
        }
        row = {"model": label, "batch": batch}
        row.update({k: median_ms(fn, rounds, calls) * 1e3 for k, fn in levels.items()})
    print(f"{label:<10}{batch:>6}" + "".join(f"{row[k]:>20.1f}" for k in levels), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small BERT layer, few runs")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cpu-time", action="store_true", help="time process CPU time")
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "model_pieces.json")
    )
    opts = parser.parse_args()
    global _clock
    if opts.cpu_time:
        _clock = time.process_time
    batches = [int(b) for b in opts.batches.split(",")]
    rounds = 3 if opts.quick else 9
    torch.set_num_threads(opts.threads)
    tvm.set_num_threads(opts.threads)
    import torch._inductor.config as inductor_config

    inductor_config.freezing = True
    clock = "process CPU time" if opts.cpu_time else "wall time"
    print(f"torch {torch.__version__}, {opts.threads} threads, float32, no_grad, {clock}")
    print(f"{'BERT piece':<16}{'batch':>6}{'eager ms':>10}{'inductor ms':>13}{'ours ms':>10}"
          f"{'ours/ind':>10}")  # fmt: skip
    bert = [r for b in batches for r in run_bert(b, opts.quick, rounds)]
    levels = ("eager", "inductor call", "torch.compile call", "CompiledGraph", "C++ bridge",
              "kernel alone")  # fmt: skip
    print(
        f"\nMLP call path, us per call\n{'model':<10}{'batch':>6}"
        + "".join(f"{k:>20}" for k in levels)
    )
    full = {"in_features": 784, "hidden": 1024, "num_classes": 10}
    tiny = {"in_features": 16, "hidden": 32, "num_classes": 4}
    mlp = []
    for b in batches:
        mlp.append(run_mlp_path(b, full, "full", rounds, 20 if opts.quick else 200))
        mlp.append(run_mlp_path(b, tiny, "tiny", rounds, 200 if opts.quick else 2000))
    out = Path(opts.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    result = {"torch": torch.__version__, "threads": opts.threads, "clock": clock,
              "quick": opts.quick, "bert_pieces": bert, "mlp_call_path_us": mlp}  # fmt: skip
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
