"""Loop-structure features of a candidate, for the cost model: read from its lowered loop nest.

A fixed-length vector: loop counts by kind (serial, parallel), nesting depth, vector width and
how many statements are vectorized, unrolled bodies (statements repeated), buffers allocated
and their sizes, and the trip counts of the innermost loops. Cheap (one ``lower``), and the
same for every kind of task, so one model can learn across a task's candidates.

Example:
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge.autotvm.features import loop_features, FEATURE_NAMES
    >>> A = tvm.placeholder((64, 64), name="A")
    >>> B = tvm.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="B")
    >>> s = tvm.create_schedule(B.op)
    >>> s[B].parallel(B.op.axis[0])
    >>> f = dict(zip(FEATURE_NAMES, loop_features(str(tvm.lower(s, [A, B])))))
    >>> f["parallel_loops"], f["serial_loops"], f["max_depth"]
    (1.0, 1.0, 2.0)
"""

from __future__ import annotations

import math
import re

__all__ = ["FEATURE_NAMES", "loop_features"]

FEATURE_NAMES = [
    "serial_loops",
    "parallel_loops",
    "max_depth",
    "log_parallel_extent",
    "log_innermost_extent",
    "log_total_serial_extent",
    "vector_stmts",
    "max_lanes",
    "stores",
    "allocations",
    "log_allocated",
    "lines",
    "loads",
]

_LOOP = re.compile(r"^(\s*)(for|parallel) \((\S+), (\S+), (\S+)\) \{")
_LANES = re.compile(r"ramp\([^)]*?, (\d+)\)|x(\d+)\(")
_ALLOC = re.compile(r"allocate \S+\[\S+ \* ([^\]]+)\]")


_INT = re.compile(r"(-?\d+)(?:[iu]\d+)?u?")


def _int(text: str) -> int | None:
    """The value of a printed integer constant (``16``, ``16i64``, ``3u64``); None otherwise.

    (It used to strip the characters of "i64" and "i32" from the right, which also ate the
    constant's own digits: 16 read as 1, 56 as 5, 64, 32, 6, 4 and 3 as unknown (16).)
    """
    m = _INT.fullmatch(text)
    return int(m.group(1)) if m else None


def loop_features(lowered: str) -> list[float]:
    """The feature vector (``FEATURE_NAMES``) of a lowered function's text."""
    serial = parallel = depth = max_depth = 0
    par_extent = 1
    innermost = 1
    total_serial = 0.0
    vector_stmts = max_lanes = stores = allocations = loads = 0
    allocated = 0
    stack: list[int] = []
    lines = lowered.splitlines()
    for line in lines:
        m = _LOOP.match(line)
        if m:
            extent = _int(m.group(5)) or 16
            if m.group(2) == "parallel":
                parallel += 1
                par_extent *= extent
            else:
                serial += 1
                total_serial += math.log2(max(1, extent))
            stack.append(extent)
            depth += 1
            max_depth = max(max_depth, depth)
            innermost = extent
            continue
        if line.strip() == "}":
            if stack:
                stack.pop()
                depth -= 1
            continue
        a = _ALLOC.search(line)
        if a:
            allocations += 1
            size = 1
            for part in a.group(1).split("*"):
                size *= _int(part.strip()) or 16
            allocated += size
            continue
        if "=" in line:
            stores += 1
            loads += line.count("[") - 1
            lanes = [int(x or y) for x, y in _LANES.findall(line)]
            if lanes:
                vector_stmts += 1
                max_lanes = max(max_lanes, *lanes)
    return [
        float(serial),
        float(parallel),
        float(max_depth),
        math.log2(par_extent),
        math.log2(max(1, innermost)),
        total_serial,
        float(vector_stmts),
        float(max_lanes),
        float(stores),
        float(allocations),
        math.log2(1 + allocated),
        float(len(lines)),
        float(loads),
    ]
