"""Schedules: how each stage's loops are ordered, split, vectorized and parallelised.

Example:
    >>> import pytvmbridge as tvm
    >>> A = tvm.placeholder((16,), name="A")
    >>> B = tvm.compute((16,), lambda i: A[i] * 2.0, name="B")
    >>> s = tvm.create_schedule(B.op)
    >>> s[B].op.name
    'B'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _core

Schedule = _core.Schedule
Stage = _core.Stage


def create_schedule(ops: Any | Sequence[Any]) -> Schedule:
    """Create the default schedule for one operation (or tensor) or a list of them.

    Every stage is computed at root with its loops in axis order, reduce axes innermost.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((4,), name="A")
        >>> B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
        >>> len(tvm.create_schedule(B.op).stages)
        2
    """
    return _core.create_schedule(ops)


__all__ = ["Schedule", "Stage", "create_schedule"]
