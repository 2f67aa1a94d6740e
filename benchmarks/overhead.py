"""Call overhead: one call of a 3-argument kernel on 4-element arrays, every way it can be called.

Prints, in one run, the median time of one call of ``C = A + B`` (float32, 4 elements) through
the Module itself and through each bridge and ``@kernel``, on torch, NumPy and JAX arrays (MXNet
when it is installed), next to ``torch.add``, ``np.add`` and ``jnp.add`` timed in the same run
(rows interleaved), with two ratios: to ``torch.add(x, y, out=z)``, and to the framework's own
allocating ``add(x, y)`` (the issue-16 targets: ``@kernel`` and ``to_pytorch`` allocating calls
<= 1.0x ``torch.add(x, y)``, NumPy <= 2x ``np.add(x, y)``, JAX <= 1.2x ``jnp.add``). JSON goes
to benchmarks/results/overhead.json.

    .venv/bin/python benchmarks/overhead.py [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import pytvmbridge as tvm
from pytvmbridge.bridges import to_jax, to_mxnet, to_numpy, to_pytorch
from pytvmbridge.kernel import kernel


def build_add() -> Any:
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    B = tvm.placeholder((n,), name="B")
    C = tvm.compute((n,), lambda i: A[i] + B[i], name="C")
    return tvm.build(tvm.create_schedule(C.op), [A, B, C], name="vadd")


@kernel
def add(A, B):
    return tvm.compute(A.shape, lambda i: A[i] + B[i], name="C")


class NoGrad:
    """A row timed with PyTorch's grad mode off (``torch.no_grad()`` around the timing loop)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *args: Any) -> Any:
        import torch

        with torch.no_grad():
            return self.fn(*args)


def _time_calls(fn: Callable[..., Any], args: tuple[Any, ...], number: int) -> float:
    """Mean time of ``number`` calls of ``fn(*args)``, in µs."""
    if isinstance(fn, NoGrad):
        import torch

        with torch.no_grad():
            return _time_calls(fn.fn, args, number)
    start = time.perf_counter()
    for _ in range(number):
        fn(*args)
    return (time.perf_counter() - start) / number * 1e6


def interleaved_samples(
    rows: list[tuple[str, str, Callable[..., Any], tuple[Any, ...]]], number: int, rounds: int
) -> list[list[float]]:
    """Per row, ``rounds`` samples of the mean time of ``number`` calls, in µs.

    The rows take turns within each round, so that a change in the machine's load during the
    run touches every row alike and the ratios stay comparable.
    """
    for _, _, fn, args in rows:
        fn(*args)  # warm up (and compile, for @kernel)
    samples: list[list[float]] = [[] for _ in rows]
    for _ in range(rounds):
        for k, (_, _, fn, args) in enumerate(rows):
            samples[k].append(_time_calls(fn, args, number))
    return samples


def interleaved_medians(
    rows: list[tuple[str, str, Callable[..., Any], tuple[Any, ...]]], number: int, rounds: int
) -> list[float]:
    """Median over ``rounds`` of the mean time of ``number`` calls of each row, in µs."""
    return [statistics.median(s) for s in interleaved_samples(rows, number, rounds)]


def cases() -> list[tuple[str, str, Callable[..., Any], tuple[Any, ...]]]:
    """(framework, what, function, arguments) for every row of the table."""
    m = build_add()
    rows: list[tuple[str, str, Callable[..., Any], tuple[Any, ...]]] = []
    have = {name: importlib.util.find_spec(name) is not None for name in ("torch", "jax", "mxnet")}

    if have["torch"]:
        import torch

        x, y, z = torch.rand(4), torch.rand(4), torch.empty(4)
        f = to_pytorch(m)
        rows += [
            ("torch", "torch.add(x, y, out=z)", lambda a, b, c: torch.add(a, b, out=c), (x, y, z)),
            ("torch", "torch.add(x, y)", torch.add, (x, y)),
            ("torch", "module(x, y, z)", m, (x, y, z)),
            ("torch", "to_pytorch(module)(x, y, z)", f, (x, y, z)),
            ("torch", "to_pytorch(module)(x, y) -> z", f, (x, y)),
            ("torch", "@kernel add(x, y) -> z", add, (x, y)),
            ("torch", "torch.add(x, y), no_grad", NoGrad(torch.add), (x, y)),
            ("torch", "@kernel add(x, y) -> z, no_grad", NoGrad(add), (x, y)),
        ]

    a, b, c = (np.random.rand(4).astype("float32") for _ in range(3))
    g = to_numpy(m)
    rows += [
        ("numpy", "np.add(x, y, out=z)", lambda p, q, r: np.add(p, q, out=r), (a, b, c)),
        ("numpy", "np.add(x, y)", np.add, (a, b)),
        ("numpy", "module(x, y, z)", m, (a, b, c)),
        ("numpy", "to_numpy(module)(x, y, z)", g, (a, b, c)),
        ("numpy", "to_numpy(module)(x, y) -> z", g, (a, b)),
        ("numpy", "@kernel add(x, y) -> z", add, (a, b)),
    ]
    na, nb, nc = tvm.nd.array(a), tvm.nd.array(b), tvm.nd.empty((4,), "float32")
    rows.append(("nd", "module(x, y, z)", m, (na, nb, nc)))

    if have["jax"]:
        import jax.numpy as jnp

        ja, jb = jnp.asarray(a), jnp.asarray(b)
        h = to_jax(m)
        rows += [
            ("jax", "jnp.add(x, y)", jnp.add, (ja, jb)),
            ("jax", "module(x, y, z=nd.NDArray)", m, (ja, jb, nc)),
            ("jax", "to_jax(module)(x, y) -> z", h, (ja, jb)),
            ("jax", "@kernel add(x, y) -> z", add, (ja, jb)),
        ]

    if have["mxnet"]:
        import mxnet as mx

        mxa, mxb, mxc = mx.nd.ones((4,)), mx.nd.ones((4,)), mx.nd.empty((4,))
        k = to_mxnet(m)
        rows += [
            (
                "mxnet",
                "mx.nd.elemwise_add(x, y, out=z) (async)",
                lambda p, q, r: mx.nd.elemwise_add(p, q, out=r),
                (mxa, mxb, mxc),
            ),
            ("mxnet", "to_mxnet(module)(x, y, z)", k, (mxa, mxb, mxc)),
            ("mxnet", "to_mxnet(module)(x, y) -> z", k, (mxa, mxb)),
        ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    opts = parser.parse_args()
    number, rounds = (1000, 5) if opts.quick else (2000, 51)

    rows = cases()
    samples = interleaved_samples(rows, number, rounds)
    # The minimum too: on a loaded machine a row's samples are bimodal (a quiet slot or not),
    # and the minima compare the calls' own costs.
    results = [
        {"framework": framework, "call": what, "us": statistics.median(s), "min_us": min(s)}
        for (framework, what, _, _), s in zip(rows, samples, strict=True)
    ]
    base = next((r["us"] for r in results if r["call"] == "torch.add(x, y, out=z)"), None)
    own = {
        fw: next((r["us"] for r in results if r["call"] == call), None)
        for fw, call in [
            ("torch", "torch.add(x, y)"),
            ("numpy", "np.add(x, y)"),
            ("jax", "jnp.add(x, y)"),
        ]
    }
    targets = {"torch": 1.0, "numpy": 2.0, "jax": 1.2}

    print(f"one call, 4 float32 elements: median of {rounds} interleaved rounds of {number} calls")
    own_min = {
        fw: next((r["min_us"] for r in results if r["call"] == call), None)
        for fw, call in [
            ("torch", "torch.add(x, y)"),
            ("numpy", "np.add(x, y)"),
            ("jax", "jnp.add(x, y)"),
        ]
    }
    print(
        f"{'framework':<9} {'call':<36} {'µs':>7} {'/ add(out=)':>12} {'/ own add(x, y)':>16}"
        f" {'min µs':>8} {'min / own':>9}"
    )
    for r in results:
        ratio = f"{r['us'] / base:.2f}x" if base else "-"
        r["vs_torch_add_out"] = r["us"] / base if base else None
        mine = own.get(r["framework"])
        r["vs_own_add"] = r["us"] / mine if mine else None
        mark = ""
        if mine and r["call"].endswith("-> z") and r["framework"] in targets:
            mark = " ok" if r["vs_own_add"] <= targets[r["framework"]] else " over target"
        vs_own = f"{r['vs_own_add']:.2f}x{mark}" if mine else "-"
        mine_min = own_min.get(r["framework"])
        r["min_vs_own_add"] = r["min_us"] / mine_min if mine_min else None
        min_ratio = f"{r['min_vs_own_add']:.2f}x" if mine_min else "-"
        print(
            f"{r['framework']:<9} {r['call']:<36} {r['us']:7.3f} {ratio:>12} {vs_own:>16}"
            f" {r['min_us']:8.3f} {min_ratio:>9}"
        )

    out = Path(__file__).parent / "results" / "overhead.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "machine": platform.machine(),
        "processor": platform.processor(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "number": number,
        "rounds": rounds,
        "statistic": "median (and min) over interleaved rounds of the mean of `number` calls",
    }
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
