"""Loop-structure features of a candidate, for the cost model: read from its loop nest.

A fixed-length vector (``FEATURE_NAMES``): loop counts by kind (serial, parallel), nesting
depth, the parallel extent, the innermost and total serial extents, how many statements are
vectorized and how wide, stores, loads, allocations and their sizes, and the amount of code. The
same for every kind of task, so one model can learn across a task's candidates.

Computed in C++ (``csrc/autoschedule/loop_features.cc``) from the loop nest lowered up to
unrolling and vectorizing: a loop marked unrolled counts once per copy it would become, one
marked vectorized as the lanes of its statements. A heavily unrolled candidate's nest is a few
dozen nodes there and thousands of statements after those two passes, so the features cost a
fraction of a full ``lower`` (the tuner ranks several candidates for each it measures; they
used to be parsed from the printed IR of a full lowering, most of the tuner's own time).

Example:
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge.autotvm.features import loop_features, FEATURE_NAMES
    >>> A = tvm.placeholder((64, 64), name="A")
    >>> B = tvm.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="B")
    >>> s = tvm.create_schedule(B.op)
    >>> s[B].parallel(B.op.axis[0])
    >>> jo, ji = s[B].split(B.op.axis[1], factor=8)
    >>> s[B].vectorize(ji)
    >>> f = dict(zip(FEATURE_NAMES, loop_features(s, [A, B])))
    >>> f["parallel_loops"], f["serial_loops"], f["max_depth"], f["max_lanes"]
    (1.0, 1.0, 2.0, 8.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import _core
from ..error import TVMTypeError

__all__ = ["FEATURE_NAMES", "loop_features"]

FEATURE_NAMES: list[str] = list(_core.loop_feature_names())


def loop_features(schedule: Any, args: Sequence[Any] | None = None) -> list[float]:
    """The feature vector (``FEATURE_NAMES``) of ``schedule`` over ``args``, or of a function
    ``lower()`` returned (``args`` omitted).

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((16,), name="A")
        >>> B = tvm.compute((16,), lambda i: A[i] + 1.0, name="B")
        >>> s = tvm.create_schedule(B.op)
        >>> loop_features(s, [A, B]) == loop_features(tvm.lower(s, [A, B]))
        True
    """
    if isinstance(schedule, _core.LoweredFunc):
        if args is not None:
            raise TVMTypeError("loop_features(lowered): a lowered function takes no args")
        return list(_core.lowered_loop_features(schedule))
    if not isinstance(schedule, _core.Schedule):
        raise TVMTypeError(
            "loop_features() takes a schedule and its arguments, or a lowered function; got "
            f"{type(schedule).__name__}"
        )
    if args is None:
        raise TVMTypeError("loop_features(schedule, args): the schedule's arguments are missing")
    return list(_core.loop_features(schedule, list(args)))
