"""Where the backward time of benchmarks/autograd.py goes outside the gradient module.

For each case of benchmarks/autograd.py (float32, inputs that require grad), medians in ms of
``y.backward(g)`` run right after a fresh forward, as that benchmark times it:

- ``noop/torch``: an autograd.Function whose forward is PyTorch's and whose backward only
  allocates the input gradients (the engine, the node, the allocations);
- ``noop/torch+wait``: the same, with an untimed busy wait as long as our forward between the
  forward and the backward;
- ``noop/ours``: our @kernel's autograd node with its gradient module replaced by a no-op (all
  of our Python glue: saved tensors, shapes, allocation; none of the kernel);
- ``torch bwd``, ``ours bwd``: the real backward of each side, and ``module``: our gradient
  module alone, timed inside that backward.

If ``noop/ours`` is close to ``noop/torch+wait`` and far above ``noop/torch``, the extra time
outside the module comes from how long ago the forward ran (caches and, on a loaded machine,
the scheduler), not from the autograd node. JSON goes to benchmarks/results/autograd_overhead.json.

    .venv/bin/python benchmarks/autograd_overhead.py [--threads N] [--cpu-time] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

import pytvmbridge as tvm
from pytvmbridge.autodiff import torch_autograd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import autograd as cases_module  # the cases of benchmarks/autograd.py

_clock = time.perf_counter


def median_ms(fn: Any, setup: Any, rounds: int) -> float:
    """Median of ``fn(setup())`` in ms, ``setup`` untimed."""
    fn(setup())
    samples = []
    for _ in range(rounds):
        arg = setup()
        start = _clock()
        fn(arg)
        samples.append((_clock() - start) * 1e3)
    return statistics.median(samples)


def noop_backward(reference: Any) -> Any:
    """An autograd.Function running PyTorch's forward whose backward only allocates gradients."""

    class NoopBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *xs: Any) -> Any:
            y = reference(*[x.detach() for x in xs])
            ctx.save_for_backward(*xs, y)
            return y

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return tuple(torch.empty(x.shape) for x in ctx.saved_tensors[:-1])

    return NoopBackward.apply


def busy_wait(ms: float) -> None:
    """Spins for ``ms`` milliseconds of wall time (untimed: between forward and backward)."""
    end = time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="threads for both sides")
    parser.add_argument("--cpu-time", action="store_true", help="time process CPU time")
    parser.add_argument("--rounds", type=int, default=60, help="rounds per median")
    opts = parser.parse_args()
    global _clock
    if opts.cpu_time:
        _clock = time.process_time
    tvm.set_num_threads(opts.threads)
    torch.set_num_threads(opts.threads)
    rows = []
    for name, kernel, reference, shapes in cases_module.cases(False):
        gen = torch.Generator().manual_seed(0)
        xs = [torch.randn(*s, generator=gen).requires_grad_() for s in shapes]
        with torch.no_grad():
            grad = torch.randn(reference(*xs).shape, generator=gen)

        def fresh(forward: Any, wait_ms: float = 0.0, xs: Any = xs) -> Any:
            def setup() -> Any:
                for x in xs:
                    x.grad = None
                y = forward(*xs)
                if wait_ms:
                    busy_wait(wait_ms)
                return y

            return setup

        def backward(y: Any, grad: Any = grad) -> None:
            y.backward(grad)

        row: dict[str, Any] = {"case": name}
        row["torch_backward_ms"] = median_ms(backward, fresh(reference), opts.rounds)
        row["ours_backward_ms"] = median_ms(backward, fresh(kernel), opts.rounds)
        with torch.no_grad():
            detached = [x.detach() for x in xs]
            forward_ms = median_ms(lambda _, k=kernel, a=detached: k(*a), lambda: None, opts.rounds)
        row["ours_forward_ms"] = forward_ms
        row["noop_torch_ms"] = median_ms(backward, fresh(noop_backward(reference)), opts.rounds)
        row["noop_torch_wait_ms"] = median_ms(
            backward, fresh(noop_backward(reference), forward_ms), opts.rounds
        )
        # our node with its gradient module swapped for a timed wrapper, then for a no-op
        cache = kernel.__dict__["_grad_modules"]
        key = (torch_autograd._specs(detached), True)
        module, outputs = cache[key]
        module_ms: list[float] = []

        def timed(*args: Any, module: Any = module, out: list[float] = module_ms) -> None:
            start = _clock()
            module(*args)
            out.append((_clock() - start) * 1e3)

        try:
            cache[key] = (timed, outputs)
            median_ms(backward, fresh(kernel), opts.rounds)
            row["module_ms"] = statistics.median(module_ms)
            cache[key] = (lambda *args: None, outputs)
            row["noop_ours_ms"] = median_ms(backward, fresh(kernel), opts.rounds)
        finally:
            cache[key] = (module, outputs)
        rows.append(row)

    cols = [
        ("noop/torch", "noop_torch_ms"),
        ("noop/torch+wait", "noop_torch_wait_ms"),
        ("noop/ours", "noop_ours_ms"),
        ("ours fwd", "ours_forward_ms"),
        ("torch bwd", "torch_backward_ms"),
        ("ours bwd", "ours_backward_ms"),
        ("module", "module_ms"),
    ]
    print(f"{'case':34}" + "".join(f" {h:>15}" for h, _ in cols))
    for row in rows:
        print(f"{row['case']:34}" + "".join(f" {row[k]:15.3f}" for _, k in cols))
    out = Path(__file__).resolve().parent / "results" / "autograd_overhead.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"threads": opts.threads, "cpu_time": opts.cpu_time, "rows": rows}))


if __name__ == "__main__":
    main()
