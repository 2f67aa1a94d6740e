"""``plot(log)``: best-so-far throughput against trials, one line per workload (matplotlib).

Example:
    >>> import os, tempfile
    >>> from pytvmbridge import autotvm
    >>> from pytvmbridge.autotvm import record
    >>> path = os.path.join(tempfile.mkdtemp(), "log.json")
    >>> record.append(path, [record.make_record("w", "mm", "auto", "llvm", {}, [c], 0, flop=2e9)
    ...                      for c in (2.0, 1.0, 1.5)])
    >>> ax = autotvm.plot(path)
    >>> [[float(y) for y in line.get_ydata()] for line in ax.get_lines()]
    [[1.0, 2.0, 2.0]]
"""

from __future__ import annotations

import math
import os
from typing import Any

from . import record

__all__ = ["best_so_far", "plot"]


def best_so_far(log: str | os.PathLike[str]) -> dict[str, tuple[str, list[float]]]:
    """Workload -> (description, best GFLOPS (or 1/seconds without a flop count) after each
    trial, in log order; error records count as trials)."""
    curves: dict[str, tuple[str, list[float]]] = {}
    for r in record.load(log, verified=False):
        _, ys = curves.setdefault(r["workload"], (r.get("description", r["workload"]), []))
        cost = record.record_cost(r)
        flop = r.get("flop") or 0.0
        value = 0.0 if math.isinf(cost) else (flop / cost / 1e9 if flop else 1.0 / cost)
        ys.append(max(value, ys[-1] if ys else 0.0))
    return curves


def plot(log: str | os.PathLike[str], ax: Any = None) -> Any:
    """Draws best-so-far against trials for every workload in ``log``; returns the axes."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(6, 4))
    curves = best_so_far(log)
    has_flop = any(r.get("flop") for r in record.load(log, verified=False))
    for desc, ys in curves.values():
        ax.plot(range(1, len(ys) + 1), ys, label=desc)
    ax.set_xlabel("trials")
    ax.set_ylabel("best GFLOPS so far" if has_flop else "best runs per second so far")
    ax.set_title(f"tuning: {os.path.basename(os.fspath(log))}")
    if curves:
        ax.legend(fontsize="small")
    return ax
