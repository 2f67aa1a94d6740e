"""Scalar expressions under TVM's ``tvm.tir`` names, for code written for TVM 0.7 and later.

The functions are the tensor-expression language's (``te``, which also has TVM's
``indexdiv``, ``indexmod`` and ``div``); this module adds the node constructors ``Select``,
``Cast``, ``Max`` and ``Min`` (as functions). The node classes (``Var``, ``IntImm``,
``FloatImm``...) serve ``isinstance`` checks.

Example:
    >>> import pytvmbridge as tvm
    >>> i = tvm.tir.Var("i", "int32")
    >>> tvm.tir.indexmod(i, 4), tvm.tir.indexdiv(i, 4)
    (floormod(i, 4), floordiv(i, 4))
    >>> isinstance(tvm.tir.const(2), tvm.tir.IntImm)
    True
"""

from __future__ import annotations

from . import _core, te
from .extern import ExternBuffer as Buffer  # what te.extern's fcompute receives
from .te import *  # noqa: F403  (every scalar function of te is also a tir function)
from .te import DType, ExprLike

PrimExpr = _core.Expr
SizeVar = _core.Var
StringImm = str


def Select(cond: ExprLike, true_value: ExprLike, false_value: ExprLike) -> _core.Expr:
    """TVM's Select node: both sides evaluated, one picked (:func:`te.select`).

    Example:
        >>> import pytvmbridge as tvm
        >>> x = tvm.var("x", "float32")
        >>> tvm.tir.Select(x > 0, x, 0.0)
        select((x > 0.0), x, 0.0)
    """
    return te.select(cond, true_value, false_value)


def Cast(dtype: DType, value: ExprLike) -> _core.Expr:
    """TVM's Cast node: ``value`` converted to ``dtype``.

    Example:
        >>> import pytvmbridge as tvm
        >>> tvm.tir.Cast("float32", tvm.var("i")).dtype
        'float32'
    """
    return te.convert(value).astype(dtype)  # type: ignore[no-any-return]


def Max(a: ExprLike, b: ExprLike) -> _core.Expr:
    """TVM's Max node: the element-wise maximum.

    Example:
        >>> import pytvmbridge as tvm
        >>> tvm.tir.Max(tvm.var("i"), 0)
        max(i, 0)
    """
    return te.max(a, b)


def Min(a: ExprLike, b: ExprLike) -> _core.Expr:
    """TVM's Min node: the element-wise minimum.

    Example:
        >>> import pytvmbridge as tvm
        >>> tvm.tir.Min(tvm.var("i"), 7)
        min(i, 7)
    """
    return te.min(a, b)


def likely(cond: ExprLike) -> _core.Expr:
    """TVM's branch-probability hint; the condition itself here (LLVM predicts branches).

    Example:
        >>> import pytvmbridge as tvm
        >>> tvm.tir.likely(tvm.var("i") < 4)
        (i < 4)
    """
    return te.convert(cond)  # type: ignore[no-any-return]


__all__ = [
    *te.__all__,
    "Buffer",
    "Cast",
    "Max",
    "Min",
    "PrimExpr",
    "Select",
    "SizeVar",
    "StringImm",
    "likely",
]
