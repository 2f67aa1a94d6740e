"""Gathered indices (TC's O(b, d) = W(I(b), d)): the cost of clamping ids into range.

Prints, in one run, the median time of an embedding lookup (B ids into a V x D float32 table)
built from te with the same default schedule, with and without the clamp that TC applies to
gathered indices, next to the TC kernel and torch.nn.functional.embedding (which checks ids and
raises). JSON goes to benchmarks/results/gather.json.

    .venv/bin/python benchmarks/gather.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

import pytvmbridge as tvm
from pytvmbridge import tc, te


def lookup(clamp: bool):
    v, d, b = te.var("V"), te.var("D"), te.var("B")
    W = te.placeholder((v, d), name="W")
    ids = te.placeholder((b,), name="I", dtype="int64")

    def row(i):
        r = ids[i].astype("int32")
        return te.max(te.min(r, v - 1), 0) if clamp else r

    O = te.compute((b, d), lambda i, j: W[row(i), j], name="O")
    return tvm.build(tvm.create_schedule(O.op), [W, ids, O])


def median_us(fn, number: int, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    opts = parser.parse_args()
    rounds = 5 if opts.quick else 15
    unclamped, clamped = lookup(False), lookup(True)
    emb = tc.define("def emb(float(V, D) W, int64(B) I) -> (O) { O(b, d) = W(I(b), d) }")
    rows = []
    for vocab, dim, batch in [(1000, 64, 512), (50000, 256, 4096)]:
        w = torch.randn(vocab, dim)
        ids = torch.randint(0, vocab, (batch,))
        out = torch.empty(batch, dim)
        number = max(10, 2_000_000 // (batch * dim))
        cases = {
            "te, no clamp": lambda w=w, ids=ids, out=out: unclamped(w, ids, out),
            "te, clamped": lambda w=w, ids=ids, out=out: clamped(w, ids, out),
            "tc (clamped)": lambda w=w, ids=ids, out=out: emb(w, ids, out=out),
            "torch embedding": lambda w=w, ids=ids: torch.nn.functional.embedding(ids, w),
        }
        for name, fn in cases.items():
            fn()
            torch.testing.assert_close(out if name != "torch embedding" else fn(), w[ids])
            us = median_us(fn, number, rounds)
            rows.append({"V": vocab, "D": dim, "B": batch, "case": name, "us": us})
    print(f"{'V':>6} {'D':>4} {'B':>5}  {'case':<16} {'median us':>10}")
    for r in rows:
        print(f"{r['V']:>6} {r['D']:>4} {r['B']:>5}  {r['case']:<16} {r['us']:>10.1f}")
    path = Path(__file__).parent / "results" / "gather.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"torch_threads": torch.get_num_threads(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
