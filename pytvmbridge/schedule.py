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
from .extern import ExternBuffer as Buffer  # TVM's te.schedule.Buffer (te.extern's buffers)

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
    extent 1 (a ``Singleton`` relation), returned; also on a 0-d stage, which has no loop
    otherwise, so that another stage can be computed at it.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((4, 5), name="A")
        >>> B = tvm.compute((4, 5), lambda i, j: A[i, j], name="B")
        >>> s = tvm.create_schedule(B.op)
        >>> single = s[B].fuse()
        >>> single.dom.extent, len(s[B].leaf_iter_vars)
        (1, 3)
        >>> isinstance(s[B].relations[0], tvm.te.schedule.Singleton)
        True
    """
    return _fuse(self, *args)


class Split(tuple):  # type: ignore[type-arg]
    """TVM's split relation: ``parent`` -> (``outer``, ``inner``) by ``factor`` or ``nparts``.

    Also the tuple ``("split", parent, outer, inner, factor, nparts)``.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((8,), name="A")
        >>> B = tvm.compute((8,), lambda i: A[i], name="B")
        >>> s = tvm.create_schedule(B.op)
        >>> _ = s[B].split(B.op.axis[0], factor=4)
        >>> rel = s[B].relations[0]
        >>> rel.parent.name, rel.inner.name, int(rel.factor)
        ('i', 'i.inner', 4)
    """

    __slots__ = ()
    parent = property(lambda self: self[1])
    outer = property(lambda self: self[2])
    inner = property(lambda self: self[3])
    factor = property(lambda self: self[4])
    nparts = property(lambda self: self[5])


class Fuse(tuple):  # type: ignore[type-arg]
    """TVM's fuse relation: (``outer``, ``inner``) -> ``fused``; also the tuple
    ``("fuse", outer, inner, fused)``.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((2, 3), name="A")
        >>> B = tvm.compute((2, 3), lambda i, j: A[i, j], name="B")
        >>> s = tvm.create_schedule(B.op)
        >>> f = s[B].fuse(*B.op.axis)
        >>> s[B].relations[0].fused.name == f.name, f.dom.extent
        (True, 6)
    """

    __slots__ = ()
    outer = property(lambda self: self[1])
    inner = property(lambda self: self[2])
    fused = property(lambda self: self[3])


class Singleton(tuple):  # type: ignore[type-arg]
    """TVM's singleton relation made by ``fuse()`` with no axis: a new loop ``iter`` of extent 1;
    also the tuple ``("singleton", iter)``.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((), name="A")
        >>> B = tvm.compute((), lambda: A() + 1.0, name="B")
        >>> s = tvm.create_schedule(B.op)
        >>> single = s[B].fuse()
        >>> rel = s[B].relations[0]
        >>> isinstance(rel, tvm.te.schedule.Singleton), rel.iter.name, single.dom.extent
        (True, 'singleton', 1)
    """

    __slots__ = ()
    iter = property(lambda self: self[1])


_RELATION_CLASSES = {"split": Split, "fuse": Fuse, "singleton": Singleton}
_relations = Stage.relations


def _stage_relations(self: Stage) -> list[Any]:
    return [_RELATION_CLASSES[rel[0]](rel) for rel in _relations.__get__(self)]


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
        return
    if not isinstance(var, IterVar):
        raise TVMTypeError(
            f"pragma({pragma_type!r}): var must be a loop axis (IterVar) of stage "
            f"'{self.op.name}', got {type(var).__name__}"
        )
    if not any(var == v for v in self.leaf_iter_vars):
        raise TVMValueError(
            f"pragma({pragma_type!r}): {var.var} is not a loop of stage '{self.op.name}' "
            f"(its loops: {', '.join(str(v.var) for v in self.leaf_iter_vars)})"
        )


def _stage_set_scope(self: Stage, scope: str) -> None:
    """TVM's memory scope of a stage (``"global"``, ``"local"``, ``"shared"``): on a CPU
    every scope is ordinary memory, so this is accepted and has no effect."""
    if not isinstance(scope, str):
        raise TVMTypeError(f"scope must be a string, got {type(scope).__name__}")


def _check_stage_axis(self: Stage, what: str, axis: Any) -> None:
    if not isinstance(axis, IterVar):
        raise TVMTypeError(
            f"{what}: axis must be a loop axis (IterVar) of stage '{self.op.name}', "
            f"got {type(axis).__name__}"
        )
    if not any(axis == v for v in self.all_iter_vars):
        raise TVMValueError(f"{what}: {axis.var} is not an axis of stage '{self.op.name}'")


def _stage_storage_align(self: Stage, axis: Any, factor: int, offset: int) -> None:
    """TVM's row padding of a stage's buffer (the stride of ``axis``'s dimension made
    ``offset`` modulo ``factor``, against shared-memory bank conflicts): accepted and checked,
    with no effect here (buffers stay compact; the values computed are the same).

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((8, 6), name="A")
        >>> B = tvm.compute((8, 6), lambda i, j: A[i, j] * 2.0, name="B")
        >>> C = tvm.compute((8, 6), lambda i, j: B[i, j] + 1.0, name="C")
        >>> s = tvm.create_schedule(C.op)
        >>> s[B].storage_align(B.op.axis[0], 16, 1)
    """
    _check_stage_axis(self, "storage_align", axis)
    for name, v, low in (("factor", factor, 1), ("offset", offset, 0)):
        if not isinstance(v, int) or isinstance(v, bool) or v < low:
            raise TVMValueError(f"storage_align: {name} must be an int >= {low}, got {v!r}")


def _stage_double_buffer(self: Stage) -> None:
    """TVM's double buffering of a GPU shared-memory stage: accepted, with no effect on a CPU
    (hardware prefetching plays that part; see :meth:`prefetch`)."""


def _stage_bind(self: Stage, ivar: Any, thread_ivar: Any) -> None:
    """TVM's binding of a loop to a GPU thread index: refused (pytvmbridge compiles for CPUs);
    ``parallel(axis)`` spreads a loop over CPU threads."""
    raise TVMValueError(
        f"bind() maps a loop of stage '{self.op.name}' to GPU threads ({thread_ivar}); "
        "pytvmbridge compiles for CPUs: use s[T].parallel(axis) to run a loop on threads"
    )


# TVM's IterVar types (IterVar.iter_type, IterVarAttr.iter_type), as te.schedule.IterVar.X.
IterVar = _core.IterVar
for _name, _value in [
    ("DataPar", 0),
    ("ThreadIndex", 1),
    ("CommReduce", 2),
    ("Ordered", 3),
    ("Opaque", 4),
    ("Unrolled", 5),
    ("Vectorized", 6),
    ("Parallelized", 7),
    ("Tensorized", 8),
]:
    setattr(IterVar, _name, _value)
_ITER_TYPE_OF_KIND = {
    "unrolled": IterVar.Unrolled,
    "vectorized": IterVar.Vectorized,
    "parallel": IterVar.Parallelized,
}


class IterVarAttr:
    """TVM's annotation of one loop of a stage, as ``s[T].iter_var_attrs[axis]`` gives it:
    ``iter_type`` is ``IterVar.Unrolled``, ``Vectorized`` or ``Parallelized``."""

    def __init__(self, iter_type: int):
        self.iter_type = iter_type
        self.pragma_keys: list[Any] = []
        self.pragma_values: list[Any] = []

    def __repr__(self) -> str:
        return f"IterVarAttr(iter_type={self.iter_type})"


def _stage_iter_var_attrs(self: Stage) -> dict[Any, IterVarAttr]:
    """The annotated loops of the stage (TVM's ``iter_var_attrs``): axis -> :class:`IterVarAttr`.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((8,), name="A")
        >>> B = tvm.compute((8,), lambda i: A[i], name="B")
        >>> s = tvm.create_schedule(B.op)
        >>> xo, xi = s[B].split(B.op.axis[0], factor=4)
        >>> s[B].vectorize(xi)
        >>> s[B].iter_var_attrs[xi].iter_type == tvm.te.schedule.IterVar.Vectorized
        True
    """
    out = {}
    for iv in self.leaf_iter_vars:
        kind = _ITER_TYPE_OF_KIND.get(self.iter_var_kind(iv))
        if kind is not None:
            out[iv] = IterVarAttr(kind)
    return out


Stage.iter_var_attrs = property(_stage_iter_var_attrs)
Stage.split = _stage_split
Stage.fuse = _stage_fuse
Stage.relations = property(_stage_relations, doc="The stage's Split/Fuse/Singleton relations.")
Stage.pragma = _stage_pragma
Stage.set_scope = _stage_set_scope
Stage.storage_align = _stage_storage_align
Stage.double_buffer = _stage_double_buffer
Stage.bind = _stage_bind
Schedule.normalize = lambda self: self

__all__ = [
    "Buffer",
    "Fuse",
    "IterVar",
    "IterVarAttr",
    "Schedule",
    "Singleton",
    "Split",
    "Stage",
    "create_schedule",
]
