"""Where compiled kernels spend their time, loop by loop.

Inside ``with profile_loops() as prof:`` every call of a compiled kernel (a ``@kernel``, a
``build``, a TC def, a graph compiled by ``torch.compile(..., backend="pytvmbridge")``, which is
one kernel) and every parallel loop in it is timed, call by call. A call is named "<kernel>
call" and includes its loops; what a call takes beyond its loops is its serial code and the
call's own work (argument checks, the thread pool's start and end). A loop is named after its
kernel and its place among the kernel's parallel loops, in the order ``lower()`` prints them
("fused_0 loop 3": the fourth ``parallel`` loop of ``fused_0``; "f (strided) loop 0" when strided
arrays made ``f`` run its generic version). A parallel loop nested in another runs serially
inside it and is timed too, so its time is part of the outer loop's as well. Setting
``PYTVMBRIDGE_LOOP_PROFILE=1`` in the environment does the same for a whole process and prints
the table on stderr at exit.

Serial code between the loops is not timed, and kernels compiled by an older pytvmbridge (a
module loaded from an old file or cache entry) run untimed.
"""

from __future__ import annotations

import contextlib
import html
import statistics
from collections.abc import Iterator
from dataclasses import dataclass

from . import _core
from .error import TVMValueError

__all__ = ["LoopProfile", "LoopTiming", "profile_loops"]


@dataclass(frozen=True)
class LoopTiming:
    """One parallel loop's wall times over the profiled calls, in milliseconds.

    Example:
        >>> LoopTiming("f loop 0", 64, 2, 3.0, 1.5, 1.0, 2.0).median_ms
        1.5
    """

    name: str
    iterations: int  # of its last call (1 for a whole kernel call)
    calls: int
    total_ms: float
    median_ms: float
    min_ms: float
    max_ms: float
    is_call: bool = False  # a whole kernel call ("<kernel> call"), its loops included


class LoopProfile:
    """The calls and loops timed in a ``profile_loops()`` block, in the order each first ended
    (a kernel's loops, then its call); filled when the block ends. Iterable, indexable by
    position or by name; ``str()`` is a table, and a notebook shows it as one.

    Example:
        >>> prof = LoopProfile()
        >>> len(prof), prof.total_ms
        (0, 0.0)
    """

    def __init__(self) -> None:
        self.records: list[LoopTiming] = []

    def _fill(self, raw: list[dict]) -> None:
        # Two kernels of one name (every compiled graph's is "fused_0": a model with a graph
        # break has two) keep separate records; the second one's names get " [2]", and so on.
        seen: dict[str, int] = {}
        for r in raw:
            ms = [t * 1e3 for t in r["seconds"]] or [0.0]
            name = r["name"]
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:
                name = f"{name} [{seen[name]}]"
            self.records.append(
                LoopTiming(
                    name=name,
                    iterations=int(r["iterations"]),
                    calls=int(r["calls"]),
                    total_ms=r["total_seconds"] * 1e3,
                    median_ms=statistics.median(ms),
                    min_ms=min(ms),
                    max_ms=max(ms),
                    is_call=r["name"].endswith(" call"),
                )
            )

    @property
    def total_ms(self) -> float:
        """The time of the kernel calls, summed (the loops' if no call was timed: a kernel
        loaded from an old file)."""
        calls = [r.total_ms for r in self.records if r.is_call]
        return float(sum(calls) if calls else sum(r.total_ms for r in self.records))

    def __iter__(self) -> Iterator[LoopTiming]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, key: int | str) -> LoopTiming:
        if isinstance(key, str):
            for r in self.records:
                if r.name == key:
                    return r
            names = ", ".join(repr(r.name) for r in self.records) or "none"
            raise KeyError(f"no loop named {key!r} in this profile (loops: {names})")
        return self.records[key]

    def _rows(self) -> list[tuple[str, ...]]:
        total = self.total_ms or 1.0
        return [
            (
                r.name,
                "" if r.is_call else str(r.iterations),
                str(r.calls),
                f"{r.median_ms:.4f}",
                f"{r.min_ms:.4f}",
                f"{r.total_ms:.3f}",
                f"{100 * r.total_ms / total:.1f}",
            )
            for r in self.records
        ]

    _HEADER = ("loop", "iterations", "calls", "median ms", "min ms", "total ms", "%")

    def table(self) -> str:
        """The profile as a text table, one row per loop."""
        rows = [self._HEADER, *self._rows()]
        widths = [max(len(row[c]) for row in rows) for c in range(len(self._HEADER))]
        lines = [
            "  ".join(cell.ljust(w) if c == 0 else cell.rjust(w)
                      for c, (cell, w) in enumerate(zip(row, widths, strict=True)))
            for row in rows
        ]  # fmt: skip
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table() if self.records else "no compiled kernel ran"

    def __repr__(self) -> str:
        return f"<LoopProfile: {len(self.records)} rows, {self.total_ms:.3f} ms>"

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self._HEADER)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
            for row in self._rows()
        )
        return f"<table><tr>{head}</tr>{body}</table>"


@contextlib.contextmanager
def profile_loops() -> Iterator[LoopProfile]:
    """Times every call of a compiled kernel, and each parallel loop in it, inside the block.

    Example:
        >>> import numpy as np
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((64, 64), name="A")
        >>> B = tvm.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="B")
        >>> s = tvm.create_schedule(B.op)
        >>> s[B].parallel(B.op.axis[0])
        >>> f = tvm.build(s, [A, B], name="double")
        >>> a = np.ones((64, 64), "float32")
        >>> b = np.empty_like(a)
        >>> with tvm.profile_loops() as prof:
        ...     f(a, b)
        >>> [(r.name, r.iterations, r.calls) for r in prof]
        [('double loop 0', 64, 1), ('double call', 1, 1)]
    """
    if _core._loop_profile_enabled():
        raise TVMValueError(
            "profile_loops(): the loop profile is already on (an enclosing profile_loops() "
            "block, or PYTVMBRIDGE_LOOP_PROFILE in the environment); one at a time"
        )
    prof = LoopProfile()
    _core._set_loop_profile(True)
    try:
        yield prof
    finally:
        prof._fill(_core._loop_profile_records())
        _core._set_loop_profile(False)
