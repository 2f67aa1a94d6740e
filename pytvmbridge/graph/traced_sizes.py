"""Symbolic sizes the trace made equal, written differently.

A stride-2 convolution then a transposed one give ``2 + 2 * ((s - 1) // 2)`` rows; the skip
connection they are concatenated with has ``s``. Dynamo's guards made the two equal (the model
runs only where they are), but topi's shape checks compare expressions, and refused the
concatenation, the residual sum or a gradient's head. :func:`in_sizes` writes a tensor's sizes
as the ones the trace gives its reader, as an injective stage the automatic schedule inlines.

Example:
    >>> from pytvmbridge import te
    >>> s = te.var("s")
    >>> t = te.placeholder((2, 2 + 2 * te.floordiv(s - 1, 2)), name="t")
    >>> in_sizes(t, [2, s]).shape
    (2, s)
"""

from __future__ import annotations

from typing import Any

from .. import te
from ..topi.utils import const_int, same_dim


def size_hint(dim: Any) -> int | None:
    """A traced size as an int: the int itself, or a SymInt's value at tracing (its hint);
    None where the trace has none.

    Example:
        >>> size_hint(3), size_hint("n")
        (3, None)
    """
    if isinstance(dim, int):
        return dim
    hint = getattr(getattr(dim, "node", None), "hint", None)
    return int(hint) if hint is not None else None


def in_sizes(t: te.Tensor, sizes: list[Any], keep_axis: int | None = None) -> te.Tensor:
    """``t`` with ``sizes`` (aligned to its last dimensions) where its own are other symbolic
    expressions; constant sizes and ``keep_axis`` (a concatenation's) stay as they are, and so
    does ``t`` where nothing differs or a constant disagrees (not the same shape: the reader's
    checks say so)."""
    if len(t.shape) > len(sizes):
        return t
    lead = len(sizes) - len(t.shape)  # broadcasting aligns the trailing dimensions
    new, renamed = list(t.shape), False
    for d, extent in enumerate(t.shape):
        want = sizes[lead + d]
        if lead + d == keep_axis or same_dim(extent, want):
            continue
        if const_int(extent) is not None:
            if const_int(want) is not None and const_int(want) != const_int(extent):
                return t
            continue  # a constant (1 broadcasts)
        new[d], renamed = want, True
    if not renamed:
        return t
    return te.compute(new, lambda *i: t[i], name=f"{t.op.name}_sized", tag="injective")


__all__ = ["in_sizes"]
