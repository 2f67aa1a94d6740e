"""Automatic schedules: a fast schedule for any computation, with no search.

``auto_schedule(outputs)`` returns a schedule made by rules (csrc/autoschedule/): injective
intermediates inlined; matmul- and convolution-like reductions register-blocked from the
target's vector width and register count, with the streamed operand packed and elementwise
consumers (bias, batch norm, residual add, activation) fused into the tile's epilogue; other
reductions given vector accumulators (rfactor) and parallel parts; outputs vectorized and run
in parallel. It takes milliseconds and is deterministic.

Every decision is a knob. ``auto_schedule_space`` lists them with their candidates and the
analytical default; ``auto_schedule(..., config=point)`` applies any point, which is a plain
JSON-able dict, so a tuner can search the space and a chosen point can be logged and replayed.

Example:
    >>> import numpy as np
    >>> import pytvmbridge as tvm
    >>> A = tvm.placeholder((64, 64), name="A")
    >>> B = tvm.placeholder((64, 64), name="B")
    >>> k = tvm.reduce_axis((0, 64), name="k")
    >>> C = tvm.compute((64, 64), lambda i, j: tvm.sum(A[i, k] * B[k, j], axis=k), name="C")
    >>> s = tvm.auto_schedule(C)
    >>> f = tvm.build(s, [A, B, C])
    >>> a, b = np.ones((64, 64), "float32"), np.ones((64, 64), "float32")
    >>> c = np.empty((64, 64), "float32"); f(a, b, c); float(c[0, 0])
    64.0
    >>> tvm.auto_schedule_space(C)["rules"]["C"]
    'tiled_reduction'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _core
from .schedule import Schedule, create_schedule

__all__ = ["auto_schedule", "auto_schedule_space"]


def _schedule_of(s_or_outputs: Any) -> Schedule:
    if isinstance(s_or_outputs, _core.Schedule):
        return s_or_outputs
    items = s_or_outputs if isinstance(s_or_outputs, (list, tuple)) else [s_or_outputs]
    ops = [t.op if isinstance(t, _core.Tensor) else t for t in items]
    return create_schedule(list(ops))


def auto_schedule(
    s_or_outputs: Any | Sequence[Any],
    target: str = "llvm",
    config: dict[str, dict[str, Any]] | None = None,
) -> Schedule:
    """Schedule a computation automatically; returns the schedule, ready for ``build``.

    ``s_or_outputs`` is a fresh schedule (from ``create_schedule``; it is modified in place) or
    the output tensor(s)/operation(s). ``target`` is the ``build`` target the tiles are sized
    for. ``config`` (optional) sets knobs: ``{stage: {knob: value}}`` as in
    ``auto_schedule_space(...)["default"]``; knobs it leaves out keep their defaults.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((1024,), name="A")
        >>> B = tvm.compute((1024,), lambda i: tvm.exp(A[i]) + 1.0, name="B")
        >>> s = tvm.auto_schedule(B)
        >>> [s[B].iter_var_kind(v) for v in s[B].leaf_iter_vars]
        ['for', 'vectorized']
        >>> "ramp(" in str(tvm.lower(s, [A, B]))  # vector loads and stores
        True
    """
    s = _schedule_of(s_or_outputs)
    _core.auto_schedule(s, target, config)
    return s


def auto_schedule_space(
    s_or_outputs: Any | Sequence[Any],
    target: str = "llvm",
    config: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The knobs the automatic scheduler decides for a computation, and its default point.

    Returns ``{"default": point, "knobs": {stage: {knob: [candidates]}}, "rules": {stage:
    rule}}``; ``point`` is ``{stage: {knob: value}}``, JSON-able, accepted by
    ``auto_schedule(config=...)``. The knobs listed are those on the path the given ``config``
    (default: the analytical choice) takes: turning a stage's ``inline`` off, for instance,
    brings that stage's own knobs in. A fresh schedule passed here is left unscheduled.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((4096, 256), name="A")
        >>> k = tvm.reduce_axis((0, 256), name="k")
        >>> S = tvm.compute((4096,), lambda i: tvm.sum(A[i, k], axis=k), name="S")
        >>> space = tvm.auto_schedule_space(S)
        >>> space["knobs"]["S"]["vector_rfactor"]
        [0, 1]
        >>> tvm.auto_schedule(S, config=space["default"]) is not None
        True
    """
    if isinstance(s_or_outputs, _core.Schedule):
        s_or_outputs = [op for op in s_or_outputs.outputs]
    s = _schedule_of(s_or_outputs)
    chosen, knobs = _core.auto_schedule(s, target, config)
    rules = {stage: point.pop("rule") for stage, point in chosen.items()}
    return {"default": chosen, "knobs": knobs, "rules": rules}
