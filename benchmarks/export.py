"""Compile once, load anywhere (issue 13): an exported ResNet-18 loaded in a fresh process
against compiling it from scratch, and the latency of the loaded model against eager PyTorch and
against the model compiled in-process.

Fresh-process times exclude the interpreter start and `import torch`: "load" is
`pytvmbridge.torch.load(export_dir)` alone, "import + load" adds `import pytvmbridge` (the issue's
target, load under 0.2 s, is stated excluding only `import torch`). Compiling from scratch runs
with the compile cache off. Latencies are medians of repeated calls at batch 1 (the model is
exported for 1x3x224x224). Child processes may write bytecode caches, as an installed package has
them. `--model mlp` measures a 3-layer MLP with a symbolic batch instead. JSON goes to
benchmarks/results/export.json.

    .venv/bin/python benchmarks/export.py [--quick] [--model resnet18|mlp]
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

HERE = Path(__file__).resolve().parent
MODELS = {
    "resnet18": (
        f"""
import sys, torch
sys.path.insert(0, {str(HERE)!r})
from models.resnet import resnet18
torch.manual_seed(0)
model = resnet18().eval()
""",
        {"input_infos": [("x", (1, 3, 224, 224))]},
        [(1, 3, 224, 224)],
    ),
    "mlp": (
        """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
    torch.nn.Linear(512, 10),
).eval()
""",
        {"input_infos": [("x", ("batch", 256))]},
        [(1, 256), (64, 256)],
    ),
}

IN_FRESH_PROCESS = """
import json, time, torch
{model}
t0 = time.perf_counter()
import pytvmbridge
from pytvmbridge import torch_compile as ptc
t1 = time.perf_counter()
m = {action}
t2 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "action": t2 - t1}}))
"""


def fresh(model: str, action: str, env: dict[str, str]) -> dict[str, float]:
    code = IN_FRESH_PROCESS.format(model=model, action=action)
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**base, **env},
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


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
    parser.add_argument("--model", choices=sorted(MODELS), default="resnet18")
    args = parser.parse_args()
    model_code, option, shapes = MODELS[args.model]
    compile_rounds = 1 if args.quick else 3
    load_rounds = 3 if args.quick else 10
    repeat = 10 if args.quick else 100
    export_dir = tempfile.mkdtemp(prefix="ptb-bench-export-")
    # Compiling from scratch: no compile cache, so every round really compiles.
    no_cache = {"PYTVMBRIDGE_CACHE": "0"}
    compile_s = [
        fresh(model_code, f"ptc.compile(model, {option!r})", no_cache)["action"]
        for _ in range(compile_rounds)
    ]
    namespace: dict = {}
    exec(model_code, namespace)
    model = namespace["model"]
    compiled = ptc.compile(model, {**option, "export_dir": export_dir})
    fresh(model_code, f"ptc.load({export_dir!r})", no_cache)  # bytecode caches written
    loads = [fresh(model_code, f"ptc.load({export_dir!r})", no_cache) for _ in range(load_rounds)]
    loaded = ptc.load(export_dir)
    rows = [
        ("compile from scratch (fresh process)", statistics.median(compile_s)),
        ("load(export_dir) (fresh process)", statistics.median(r["action"] for r in loads)),
        (
            "import pytvmbridge + load (fresh process)",
            statistics.median(r["import"] + r["action"] for r in loads),
        ),
    ]
    for shape in shapes:
        x = torch.randn(*shape)
        with torch.no_grad():
            torch.testing.assert_close(loaded(x), model(x), atol=1e-4, rtol=1e-4)
            torch.testing.assert_close(compiled(x), model(x), atol=1e-4, rtol=1e-4)
        batch = shape[0]
        rows += [
            (f"batch {batch}: eager PyTorch", latency(model, x, repeat)),
            (f"batch {batch}: compiled in-process", latency(compiled, x, repeat)),
            (f"batch {batch}: loaded", latency(loaded, x, repeat)),
        ]
    print(f"{args.model}, torch threads {torch.get_num_threads()}")
    print(f"{'case':<45} {'median ms':>10}")
    results = {}
    for name, seconds in rows:
        results[name] = seconds * 1e3
        print(f"{name:<45} {seconds * 1e3:>10.3f}")
    out = HERE / "results" / "export.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"model": args.model, "median_ms": results}, indent=1))


if __name__ == "__main__":
    main()
