"""One training step (forward, then ``loss.backward()``) through the graph backend against PyTorch
eager, in the same run: ``torch.compile(model, backend="pytvmbridge", options={"strict": True})``,
so every operator of AOT autograd's forward and backward graphs is compiled (convolution and
max pooling backward by ``te.gradient``) or the run fails.

Models in training mode (batch norm with batch statistics): a small ReLU/max-pool CNN and the
test-size versions of ``benchmarks/models/`` (MLP, BERT encoder layer, ResNet-18, MobileNetV2),
batch 8, float32. The gradients are checked against eager's before timing. Median ms of a whole
step (parameters' gradients zeroed untimed); JSON to benchmarks/results/training.json.

    .venv/bin/python benchmarks/training.py [--threads N] [--cpu-time] [--rounds R]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import pytvmbridge as tvm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.models import build

_clock: Callable[[], float] = time.perf_counter


def small_cnn() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(64 * 8 * 8, 10),
    )
    return model, torch.randn(8, 3, 32, 32)


def models() -> list[tuple[str, Callable[[], tuple[torch.nn.Module, torch.Tensor]]]]:
    out: list[tuple[str, Callable[[], tuple[torch.nn.Module, torch.Tensor]]]] = [
        ("CNN relu/max-pool 8x3x32x32", small_cnn)
    ]
    for name, label in (
        ("mlp", "MLP (32-64-10)"),
        ("bert_layer", "BERT layer (64 hidden, seq 16)"),
        ("resnet18", "ResNet-18 (width 8, 32x32)"),
        ("mobilenet_v2", "MobileNetV2 (0.25, 3 stages, 32x32)"),
    ):
        out.append((label, lambda name=name: build(name, batch=8, small=True)))
    return out


def step(model: Any, x: torch.Tensor, head: torch.Tensor) -> list[torch.Tensor]:
    out = model(x)
    (out * head).sum().backward()
    return [out.detach(), *(p.grad for p in model.parameters())]


def median_ms(model: Any, x: torch.Tensor, head: torch.Tensor, rounds: int) -> float:
    times = []
    for k in range(rounds + 3):
        model.zero_grad(set_to_none=True)
        start = _clock()
        step(model, x, head)
        if k >= 3:
            times.append(_clock() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="threads for both sides")
    parser.add_argument("--cpu-time", action="store_true", help="time process CPU time")
    parser.add_argument("--rounds", type=int, default=20)
    opts = parser.parse_args()
    global _clock
    if opts.cpu_time:
        _clock = time.process_time
    if opts.threads:
        tvm.set_num_threads(opts.threads)
    torch.set_num_threads(tvm.get_num_threads())
    rows = []
    for label, make in models():
        model, x = make()
        model.train()
        twin = copy.deepcopy(model)
        with torch.no_grad():
            head = torch.linspace(-1.0, 1.0, model(x).numel()).reshape(model(x).shape)
        eager_ms = median_ms(twin, x, head, opts.rounds)
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="pytvmbridge", options={"strict": True})
        start = time.perf_counter()
        model.zero_grad(set_to_none=True)
        step(compiled, x, head)
        compile_s = time.perf_counter() - start
        # gradients against eager's from the same weights (batch norm's running statistics
        # moved during the timed rounds: compare on a fresh pair)
        fresh, ref = copy.deepcopy(twin), copy.deepcopy(twin)
        torch._dynamo.reset()
        check = torch.compile(fresh, backend="pytvmbridge", options={"strict": True})
        for got, want in zip(step(check, x, head), step(ref, x, head), strict=True):
            torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-4)
        ours_ms = median_ms(compiled, x, head, opts.rounds)
        rows.append(
            {
                "model": label,
                "eager_ms": eager_ms,
                "ours_ms": ours_ms,
                "ratio": ours_ms / eager_ms,
                "compile_s": compile_s,
            }
        )
        print(
            f"{label:38} eager {eager_ms:8.2f}  ours {ours_ms:8.2f}  "
            f"ours/eager {ours_ms / eager_ms:5.2f}  first step {compile_s:5.1f} s",
            flush=True,
        )
    out = Path(__file__).parent / "results" / "training.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "threads": torch.get_num_threads(),
                "clock": "process CPU time" if opts.cpu_time else "wall",
                "rows": rows,
            },
            indent=2,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
