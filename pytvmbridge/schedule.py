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
from .error import TVMTypeError, TVMValueError

Schedule = _core.Schedule
Stage = _core.Stage
if not Schedule.__doc__:
    Schedule.__doc__ = (
        "The schedule of a set of outputs: ``s[T]`` is the Stage of tensor T; ``cache_write``, "
        "``cache_read`` and ``rfactor`` rewrite the data flow. Made by ``create_schedule``."
    )
if not Stage.__doc__:
    Stage.__doc__ = (
        "How one operation is computed: its loops (``split``, ``tile``, ``fuse``, ``reorder``), "
        "their kinds (``vectorize``, ``parallel``, ``unroll``) and where it is computed "
        "(``compute_at``, ``compute_inline``, ``compute_root``)."
    )


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


# ---- TVM's calling forms of the stage primitives ----

_split = Stage.split
_fuse = Stage.fuse

# Pragmas that name a loop kind set it, as TVM's Stage.pragma does; the others are hints for
# TVM's own code generator (auto_unroll_max_step, parallel_launch_point...), accepted and
# ignored: LLVM decides unrolling, and parallel loops always use the thread pool.
_PRAGMA_KINDS = {"vectorize": "vectorize", "unroll": "unroll", "parallel": "parallel"}


def _stage_split(
    self: Stage,
    parent: Any,
    factor: Any = None,
    nparts: Any = None,
    disable_predication: bool = False,
) -> tuple[Any, Any]:
    """Split ``parent`` into (outer, inner) by ``factor`` (the inner extent) or ``nparts``.

    ``disable_predication`` is accepted as in TVM; the guard of a non-dividing split stays (it
    costs one test in the last tile), so the result is correct either way.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((10,), name="A")
        >>> B = tvm.compute((10,), lambda i: A[i], name="B")
        >>> s = tvm.create_schedule(B.op)
        >>> [iv.name for iv in s[B].split(B.op.axis[0], 4, disable_predication=True)]
        ['i.outer', 'i.inner']
    """
    del disable_predication
    return _split(self, parent, factor, nparts)  # type: ignore[no-any-return]


def _stage_fuse(self: Stage, *args: Any) -> Any:
    """Fuse adjacent axes into one loop. With no axis, TVM's meaning: a new outermost loop of
    extent 1 (a singleton), returned.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((4, 5), name="A")
        >>> B = tvm.compute((4, 5), lambda i, j: A[i, j], name="B")
        >>> s = tvm.create_schedule(B.op)
        >>> single = s[B].fuse()
        >>> single.dom.extent, len(s[B].leaf_iter_vars)
        (1, 3)
    """
    if args:
        return _fuse(self, *args)
    leaves = self.leaf_iter_vars
    if not leaves:
        raise TVMValueError(
            f"fuse() on stage '{self.op.name}': it has no loops to nest a loop around"
        )
    outer, _ = _split(self, leaves[0], None, 1)
    return outer


def _stage_pragma(self: Stage, var: Any, pragma_type: str, pragma_value: Any = None) -> None:
    """Annotate loop ``var``: ``"vectorize"``, ``"unroll"`` and ``"parallel"`` set its kind,
    as in TVM; other pragmas are hints for TVM's code generator, accepted and ignored.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((16,), name="A")
        >>> B = tvm.compute((16,), lambda i: A[i], name="B")
        >>> s = tvm.create_schedule(B.op)
        >>> s[B].pragma(B.op.axis[0], "auto_unroll_max_step", 16)
        >>> s[B].pragma(B.op.axis[0], "unroll")
    """
    del pragma_value
    if not isinstance(pragma_type, str):
        raise TVMTypeError(f"pragma_type must be a string, got {type(pragma_type).__name__}")
    kind = _PRAGMA_KINDS.get(pragma_type)
    if kind is not None:
        getattr(self, kind)(var)


def _stage_set_scope(self: Stage, scope: str) -> None:
    """TVM's memory scope of a stage (``"global"``, ``"local"``, ``"shared"``): on a CPU
    every scope is ordinary memory, so this is accepted and has no effect."""
    if not isinstance(scope, str):
        raise TVMTypeError(f"scope must be a string, got {type(scope).__name__}")


Stage.split = _stage_split
Stage.fuse = _stage_fuse
Stage.pragma = _stage_pragma
Stage.set_scope = _stage_set_scope
Schedule.normalize = lambda self: self

__all__ = ["Schedule", "Stage", "create_schedule"]
