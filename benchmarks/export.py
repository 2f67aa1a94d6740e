"""Compile once, load anywhere (issue 13): an exported model loaded in a fresh process against
compiling it from scratch, and the latency of the loaded model against eager PyTorch and against
the model compiled in-process.

The model is a 3-layer MLP (batch symbolic) until the graph compiler (pytvmbridge.graph) lands,
after which `--model resnet18`-style models can be added here. Load and compile times are
measured in fresh processes, excluding `import torch` and `import pytvmbridge`; latencies are
medians of repeated calls. JSON goes to benchmarks/results/export.json.

    .venv/bin/python benchmarks/export.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import torch

from pytvmbridge import torch_compile as ptc

MODEL = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 10),
).eval()
"""
OPTION = {"input_infos": [("x", ("batch", 256))]}

IN_FRESH_PROCESS = """
import json, time, torch
import pytvmbridge
from pytvmbridge import torch_compile as ptc
{model}
t0 = time.perf_counter()
m = {action}
t1 = time.perf_counter()
print(json.dumps({{"seconds": t1 - t0}}))
"""


def fresh(action: str, env: dict[str, str]) -> float:
    code = IN_FRESH_PROCESS.format(model=MODEL, action=action)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]


def latency(fn, x, repeat: int) -> float:
    with torch.no_grad():
        for _ in range(3):
            fn(x)
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn(x)
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    args = parser.parse_args()
    rounds = 2 if args.quick else 5
    repeat = 20 if args.quick else 200
    export_dir = tempfile.mkdtemp(prefix="ptb-bench-export-")
    # Compiling from scratch: no compile cache, so every round really compiles.
    no_cache = {"PYTVMBRIDGE_CACHE": "0"}
    compile_s = [fresh(f"ptc.compile(model, {OPTION!r})", no_cache) for _ in range(rounds)]
    namespace: dict = {}
    exec(MODEL, namespace)
    model = namespace["model"]
    compiled = ptc.compile(model, {**OPTION, "export_dir": export_dir})
    load_s = [fresh(f"ptc.load({export_dir!r})", no_cache) for _ in range(rounds)]
    loaded = ptc.load(export_dir)
    results = {}
    rows = [
        ("compile from scratch (fresh process)", statistics.median(compile_s)),
        ("load(export_dir) (fresh process)", statistics.median(load_s)),
    ]
    for batch in (1, 64):
        x = torch.randn(batch, 256)
        torch.testing.assert_close(loaded(x), model(x), atol=1e-4, rtol=1e-4)
        rows += [
            (f"batch {batch}: eager PyTorch", latency(model, x, repeat)),
            (f"batch {batch}: compiled in-process", latency(compiled, x, repeat)),
            (f"batch {batch}: loaded", latency(loaded, x, repeat)),
        ]
    print(f"{'case':<45} {'median ms':>10}")
    for name, seconds in rows:
        results[name] = seconds * 1e3
        print(f"{name:<45} {seconds * 1e3:>10.3f}")
    out = Path(__file__).parent / "results" / "export.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"model": "mlp 256-512-512-10", "median_ms": results}, indent=1))


if __name__ == "__main__":
    main()
