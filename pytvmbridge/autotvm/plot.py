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

import errno
import math
import os
from typing import Any

from . import record

__all__ = ["best_so_far", "plot"]


def _curves(log: str) -> dict[str, tuple[str, bool, list[float]]]:
    """Workload -> (description, whether in GFLOPS, best-so-far values), the log read once."""
    records = list(record.load(log, verified=False))
    flops: dict[str, float] = {}
    for r in records:  # a workload's flop count, from any of its records
        flops[r["workload"]] = max(flops.get(r["workload"], 0.0), float(r.get("flop") or 0.0))
    curves: dict[str, tuple[str, bool, list[float]]] = {}
    for r in records:
        flop = flops[r["workload"]]
        _, _, ys = curves.setdefault(
            r["workload"], (r.get("description", r["workload"]), flop > 0, [])
        )
        cost = record.record_cost(r)
        value = 0.0 if math.isinf(cost) else (flop / cost / 1e9 if flop else 1.0 / cost)
        ys.append(max(value, ys[-1] if ys else 0.0))
    return curves


def best_so_far(log: str | os.PathLike[str]) -> dict[str, tuple[str, list[float]]]:
    """Workload -> (description, best GFLOPS (or 1/seconds without a flop count) after each
    trial, in log order; error records count as trials)."""
    return {k: (desc, ys) for k, (desc, _, ys) in _curves(os.fspath(log)).items()}


def plot(log: str | os.PathLike[str], ax: Any = None) -> Any:
    """Draws best-so-far against trials for every workload in ``log``; returns the axes.
    Workloads with a flop count are in GFLOPS; the others (runs per second) go on a second
    y axis when both kinds are in the log."""
    path = record.check_log_path(log, "plot: log")
    if not os.path.isfile(path):
        raise FileNotFoundError(errno.ENOENT, "plot: no tuning log", path)
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(6, 4))
    curves = _curves(path)
    in_gflops = [c for c in curves.values() if c[1]]
    in_rate = [c for c in curves.values() if not c[1]]
    rate_ax = ax.twinx() if in_gflops and in_rate else ax
    for target, group in ((ax, in_gflops), (rate_ax, in_rate)):
        for desc, _, ys in group:
            style = "--" if target is not ax else "-"
            target.plot(range(1, len(ys) + 1), ys, style, label=desc)
    ax.set_xlabel("trials")
    ax.set_ylabel("best GFLOPS so far" if in_gflops else "best runs per second so far")
    if rate_ax is not ax:
        rate_ax.set_ylabel("best runs per second so far (dashed)")
    ax.set_title(f"tuning: {os.path.basename(path)}")
    if curves:
        handles, labels = ax.get_legend_handles_labels()
        if rate_ax is not ax:
            more = rate_ax.get_legend_handles_labels()
            handles, labels = handles + more[0], labels + more[1]
        ax.legend(handles, labels, fontsize="small")
    return ax
