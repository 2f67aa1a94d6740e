"""Render the JSON that ``ops.py`` and ``models.py`` write as the Markdown tables in README.md.

Usage::

    .venv/bin/python benchmarks/markdown_tables.py ops      # benchmarks/results/ops.json
    .venv/bin/python benchmarks/markdown_tables.py models   # benchmarks/results/models.json
    .venv/bin/python benchmarks/markdown_tables.py ops --json other.json

A ratio that meets the issue's target is printed in bold (the operator faster than PyTorch, the
model at or below Inductor with freezing); nothing is measured here.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"

MODEL_NAMES = {
    "resnet18": "ResNet-18",
    "resnet50": "ResNet-50",
    "mobilenet_v2": "MobileNetV2",
    "bert_layer": "BERT encoder layer",
    "mlp": "MLP",
    "gated": "gated (graph break)",
}


def ops_table(data: dict[str, Any]) -> str:
    """The operator table: one row per operator and batch, as ``ops.py`` measured it.

    >>> ops_table({"results": []}).splitlines()[1]
    '|---|---|---|---|---|---|---|---|---|'
    """
    lines = [
        "| operator | batch | ptb ms | torch ms | ratio | % of copy | torch % of copy | GFLOPS "
        "| schedule + build ms, wall (CPU) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["results"]:
        gflops = "" if r.get("gflops") is None else f"{r['gflops']:.1f}"
        lines.append(
            f"| {r['op']} | {r['batch']} | {r['ptb_seconds'] * 1e3:.3f} "
            f"| {r['torch_seconds'] * 1e3:.3f} | {r['ratio']:.2f} "
            f"| {100 * r['fraction_of_copy_bandwidth']:.0f}% "
            f"| {100 * r['torch_fraction_of_copy_bandwidth']:.0f}% | {gflops} "
            f"| {r['schedule_and_build_ms']:.0f} ({r['schedule_and_build_cpu_ms']:.0f}) |"
        )
    return "\n".join(lines)


def models_table(data: dict[str, Any]) -> str:
    """The model table: eager, Inductor with freezing and ours, with compile times, and the
    paired per-round ratios where the JSON has them (median, range, rounds ours was the
    faster).

    >>> models_table({"rows": []}).splitlines()[0].split(" | ")[0]
    '| model'
    """
    lines = [
        "| model | batch | eager ms | Inductor (freezing) ms | ours ms | ours / Inductor "
        "| paired per round: median (range, rounds faster) | Inductor compile s "
        "| our compile s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        ratio = r["pytvmbridge_ms"] / r["inductor_freezing_ms"]
        ours = f"{r['pytvmbridge_ms']:.2f}"
        if ratio <= 1.0:
            ours = f"**{ours}**"
        paired = r.get("ours_over_inductor_per_round")
        rounds = ""
        if paired:
            faster = f"{paired['rounds_faster']}/{paired['rounds']}"
            spread = f"{paired['min']:.2f}-{paired['max']:.2f}"
            rounds = f"{paired['median']:.2f} ({spread}, {faster})"
        lines.append(
            f"| {MODEL_NAMES.get(r['model'], r['model'])} | {r['batch']} | {r['eager_ms']:.2f} "
            f"| {r['inductor_freezing_ms']:.2f} | {ours} | {ratio:.2f} | {rounds} "
            f"| {r['inductor_compile_s']:.1f} | {r['pytvmbridge_compile_s']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", choices=["ops", "models"])
    parser.add_argument("--json", default=None, help="default: benchmarks/results/<table>.json")
    args = parser.parse_args()
    path = Path(args.json) if args.json else RESULTS / f"{args.table}.json"
    data = json.loads(path.read_text())
    print(ops_table(data) if args.table == "ops" else models_table(data))


if __name__ == "__main__":
    main()
