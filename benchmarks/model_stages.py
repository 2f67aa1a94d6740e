"""Where a compiled graph's time goes, stage by stage: the BERT layer's one kernel, cut up.

``model_pieces.py`` compiles parts of the layer as graphs of their own; this takes the *one*
kernel our backend builds for the whole layer and times it up to each stage it writes to memory
(a matrix product, its epilogue, a packing or transposing copy, a softmax or a layer norm):
prefix ``k`` is a kernel computing every stage up to and including the ``k``-th cut, with that
stage as its output, and the stage's time is prefix ``k`` minus prefix ``k - 1`` (medians of
interleaved rounds). A product cut before its epilogue is scheduled without it, so the epilogue's
row shows what fusing it costs. Rows of products also show GFLOP/s.

``--knob STAGE:KNOB=VALUE`` (repeatable; ``STAGE`` matches the stage key and its ``#2``, ``#3``
... repeats) builds every prefix a second time with those scheduler knobs
(``pytvmbridge.auto_schedule_space``) and times both, interleaved, in a second column: an A/B of
a schedule choice, stage by stage, in one process.

    .venv/bin/python benchmarks/model_stages.py [--batch 8] [--threads N] [--cpu-time]
        [--rounds 7] [--knob T_dense_pack:parallel_depth=2 ...] [--small]

The last prefix (the whole layer) is checked against eager PyTorch before timing; the inputs
are the compiled layer's own kernel arguments (its input and derived weights).
"""

from __future__ import annotations

import argparse
import copy
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pytvmbridge as tvm
from benchmarks.models import build
from pytvmbridge import cache
from pytvmbridge.schedule import create_schedule
from pytvmbridge.te import PlaceholderOp

# Rules whose stage is written to memory at the root of the kernel (the others are inlined,
# attached inside one of these, or a product's register block).
CUT_RULES = ("tiled_reduction", "epilogue", "injective", "row_group")


def capture_kernel(model: torch.nn.Module, x: torch.Tensor) -> tuple[list[Any], list[Any], Any]:
    """The layer compiled by our backend: its kernel's arguments (tensor-expression
    placeholders and outputs), the torch tensors it was called with, and the compiled graph."""
    from pytvmbridge.graph import partition

    built: list[list[Any]] = []
    graphs: list[Any] = []
    real_build, real_compile = cache.build_auto, partition.compile_graph

    def build_spy(args: Any, *a: Any, **k: Any) -> Any:
        built.append(list(args))
        return real_build(args, *a, **k)

    def compile_spy(*a: Any, **k: Any) -> Any:
        graphs.append(real_compile(*a, **k))
        return graphs[-1]

    cache.build_auto, partition.compile_graph = build_spy, compile_spy
    try:
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="pytvmbridge", dynamic=False)
        compiled(x)
    finally:
        cache.build_auto, partition.compile_graph = real_build, real_compile
    if len(graphs) != 1:
        raise RuntimeError(f"expected one compiled partition, got {len(graphs)}")
    graph = graphs[0]
    seen: list[tuple] = []
    call = type(graph).__call__
    type(graph).__call__ = lambda self, *a: seen.append(a) or call(self, *a)
    try:
        compiled(x)
    finally:
        type(graph).__call__ = call
    values = [
        seen[0][s] if type(s) is int else graph._derived.get(k, s, seen[0])
        for k, s in enumerate(graph.kernel_sources)
    ]
    return built[-1], values, compiled


def cuts(outputs: list[Any]) -> list[tuple[str, str, Any]]:
    """(stage key, rule, tensor) of each stage written at the kernel's root, producers first."""
    space = tvm.auto_schedule_space(outputs)
    s = create_schedule([t.op for t in outputs])
    count: dict[str, int] = {}
    found = []
    for st in s.stages:
        n = count[st.op.name] = count.get(st.op.name, 0) + 1
        key = st.op.name if n == 1 else f"{st.op.name}#{n}"
        rule = space["rules"].get(key)
        if rule in CUT_RULES and st.op.num_outputs == 1:
            found.append((key, rule, st.op.output(0)))
    return found


def build_prefixes(
    inputs: list[Any],
    outputs: list[Any],
    stages: list[tuple[str, str, Any]],
    values: list[torch.Tensor],
    config: dict | None = None,
) -> list[tuple[Any, list[torch.Tensor]]]:
    """One kernel per cut, computing everything up to it with the cut stage as its output, and
    its arguments (``values`` for ``inputs``, then a fresh output tensor). ``config`` (a point
    of the whole kernel's space) gives the knobs of the stages a prefix has."""
    kernels = []
    for k, (_, _, tensor) in enumerate(stages):
        sub = [t for t in outputs if t is tensor] or [tensor]
        space = tvm.auto_schedule_space(sub)["default"]
        point = None
        if config is not None:
            point = {
                s: {n: v for n, v in config.get(s, c).items() if n in c} for s, c in space.items()
            }
        module = cache.build_auto(inputs + sub, name=f"prefix_{k}", config=point)
        out = torch.empty([int(d) for d in tensor.shape])
        kernels.append((module, [*values, out]))
    return kernels


def product_flops(tensor: Any) -> float:
    """2 x output elements x reduction length for a product (0 for other stages)."""
    red = tensor.op.reduce_axis
    if not red:
        return 0.0
    out = math.prod(int(d) for d in tensor.shape)
    return 2.0 * out * math.prod(int(r.dom.extent) for r in red)


def with_knobs(default: dict, knobs: list[tuple[str, str, int]]) -> dict:
    """The scheduler's default point with ``knobs`` set on every stage they name."""
    point = copy.deepcopy(default)
    for stage, knob, value in knobs:
        for key, choice in point.items():
            if (key == stage or key.startswith(stage + "#")) and knob in choice:
                choice[knob] = value
    return point


def parse_knob(text: str) -> tuple[str, str, int]:
    """``STAGE:KNOB=VALUE`` -> (stage, knob, value)."""
    stage, _, rest = text.partition(":")
    knob, _, value = rest.partition("=")
    if not stage or not knob or not value:
        raise argparse.ArgumentTypeError(f"expected STAGE:KNOB=VALUE, got {text!r}")
    return stage, knob, int(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cpu-time", action="store_true", help="time process CPU time")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--small", action="store_true", help="the small BERT layer (smoke run)")
    parser.add_argument("--knob", type=parse_knob, action="append", default=[])
    opts = parser.parse_args()
    clock: Callable[[], float] = time.process_time if opts.cpu_time else time.perf_counter
    torch.set_num_threads(opts.threads)
    tvm.set_num_threads(opts.threads)
    layer, x = build("bert_layer", batch=opts.batch, small=opts.small)
    with torch.no_grad():
        args, values, compiled = capture_kernel(layer, x)
        expected = layer(x)
        torch.testing.assert_close(compiled(x), expected, rtol=1e-3, atol=1e-3)
    inputs = [a for a in args if isinstance(a.op, PlaceholderOp)]
    outputs = [a for a in args if not isinstance(a.op, PlaceholderOp)]
    inputs_values = values[: len(inputs)]
    stages = cuts(outputs)
    variants: list[dict | None] = [None]
    if opts.knob:
        default = tvm.auto_schedule_space(outputs)["default"]
        variants.append(with_knobs(default, opts.knob))

    kernels = [build_prefixes(inputs, outputs, stages, inputs_values, c) for c in variants]
    # The last prefix is the layer: check it.
    for row in kernels:
        module, tensors = row[-1]
        module(*tensors)
        torch.testing.assert_close(tensors[-1], expected, rtol=1e-3, atol=1e-3)

    samples = [[[] for _ in stages] for _ in variants]
    calls = 3
    for r in range(opts.rounds):
        order = list(range(len(stages)))
        if r % 2:
            order.reverse()
        for k in order:
            for v in range(len(variants)):
                module, tensors = kernels[v][k]
                module(*tensors)
                start = clock()
                for _ in range(calls):
                    module(*tensors)
                samples[v][k].append((clock() - start) / calls * 1e3)
    medians = [[statistics.median(s) for s in var] for var in samples]
    what = "process CPU time" if opts.cpu_time else "wall time"
    print(
        f"BERT layer b{opts.batch}, one kernel cut at its stages, {opts.threads} threads, "
        f"{what}, medians of {opts.rounds} rounds; stage = prefix minus the one before"
    )
    head = f"{'stage':<24}{'rule':<17}{'ms':>8}{'GFLOP/s':>9}"
    if len(variants) > 1:
        head += f"{'knobs ms':>10}{'GFLOP/s':>9}"
    print(head)
    for k, (key, rule, tensor) in enumerate(stages):
        line = f"{key:<24}{rule:<17}"
        for med in medians:
            ms = med[k] - (med[k - 1] if k else 0.0)
            flops = product_flops(tensor)
            rate = f"{flops / ms / 1e6:9.0f}" if flops and ms > 0 else f"{'':>9}"
            line += f"{ms:8.2f}{rate}" if med is medians[0] else f"{ms:10.2f}{rate}"
        print(line)
    total = "".join(f"{med[-1]:8.2f}{'':>9}" if i == 0 else f"{med[-1]:10.2f}"
                    for i, med in enumerate(medians))  # fmt: skip
    print(f"{'whole kernel':<41}{total}")
    if opts.knob:
        print("knobs: " + ", ".join(f"{s}:{k}={v}" for s, k, v in opts.knob))


if __name__ == "__main__":
    main()
