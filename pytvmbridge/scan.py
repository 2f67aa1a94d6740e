"""Scans (TVM's ``te.scan``): recurrences along the first axis, such as a cumulative sum or a
recurrent state update, written with a state placeholder that stands for earlier time steps."""

from __future__ import annotations

from typing import Any

from . import _core


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def scan(
    init: Any,
    update: Any,
    state_placeholder: Any,
    inputs: Any = None,
    name: str = "scan",
    tag: str = "",
    attrs: dict[str, Any] | None = None,
) -> Any:
    """A recurrence over the first axis, as TVM's ``te.scan``.

    ``state_placeholder`` (a placeholder shaped like the result) stands for the result at
    earlier time steps: ``update`` is a compute over the whole result shape reading it at
    ``t - 1`` (or earlier), and ``init`` gives the first time steps (its first dimension says
    how many). Lists of the three give a scan with several outputs. ``inputs``, ``tag`` and
    ``attrs`` are accepted for TVM compatibility and ignored.

    The time loop runs outermost and serially; ``s[update]`` schedules the scan's loops (split,
    vectorize, parallel... of the other axes); ``op.scan_axis`` is the time axis. The update may
    be a reduction (it then runs as a stage of its own, and ``s[update]`` is that stage).
    Computes between the state and the update (TVM's scan group, which may reduce:
    ``h2h(t, i) = sum(state(t - 1, k) * W(i, k))``) run inside the time loop from the first step
    the update computes: by default each at the outermost loop of its single consumer, or where
    ``compute_at`` puts them (in ``s[update]``), or inlined.

    Example:
        >>> import numpy as np
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import te
        >>> m, n = te.var("m"), te.var("n")
        >>> X = te.placeholder((m, n), name="X")
        >>> s_state = te.placeholder((m, n))
        >>> s_init = te.compute((1, n), lambda _, i: X[0, i])
        >>> s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
        >>> s_scan = te.scan(s_init, s_update, s_state, inputs=[X])
        >>> f = tvm.build(tvm.create_schedule(s_scan.op), [X, s_scan])
        >>> x = np.arange(6, dtype="float32").reshape(3, 2)
        >>> out = np.zeros_like(x); f(x, out); out
        array([[0., 1.],
               [2., 4.],
               [6., 9.]], dtype=float32)
    """
    del inputs, tag, attrs
    outs = _core.scan(name, _as_list(init), _as_list(update), _as_list(state_placeholder))
    return outs if isinstance(update, (tuple, list)) else outs[0]


def _scan_axis(op: Any) -> Any:
    """TVM's ``ScanOp.scan_axis``: the time axis of a scan's operation."""
    axis = _core.scan_axis(op)
    if axis is None:
        raise AttributeError(f"{op!r} is not a scan; only a scan's operation has scan_axis")
    return axis


_core.Operation.scan_axis = property(_scan_axis)  # type: ignore[attr-defined]

__all__ = ["scan"]
