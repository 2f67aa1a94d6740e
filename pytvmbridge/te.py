"""The tensor-expression language: placeholders, computes, reductions and scalar math.

Names and behaviour follow classic TVM (``tvm.placeholder``, ``tvm.compute``, ``tvm.sum``), so
TVM code runs with ``import pytvmbridge as tvm``. Python numbers combine with an expression by
taking its dtype (NumPy's rule for Python scalars); two expressions of different dtypes need an
explicit ``astype``.

Example:
    >>> import pytvmbridge.te as te
    >>> n = te.var("n")
    >>> A = te.placeholder((n, 4), name="A")
    >>> k = te.reduce_axis((0, 4), name="k")
    >>> B = te.compute((n,), lambda i: te.sum(A[i, k] * 2.0, axis=k), name="B")
    >>> B.shape, B.dtype
    ((n,), 'float32')
    >>> B.op.body
    [sum((A[i, k] * 2.0), axis=[k])]
"""

from __future__ import annotations

import builtins
import inspect
import numbers
from collections.abc import Callable, Sequence
from typing import Any

from . import _core
from . import schedule as schedule  # TVM code names tvm.te.schedule.Schedule
from .error import TVMTypeError
from .schedule import Schedule, Stage, create_schedule

Expr = _core.Expr
Var = _core.Var
IntImm = _core.IntImm
FloatImm = _core.FloatImm
IterVar = _core.IterVar
Range = _core.Range
Tensor = _core.Tensor
Operation = _core.Operation

# This module defines sum, max, min, all, any, abs and round as TVM does; inside it, Python's own
# are reached through `builtins`.

# An expression, or a Python/NumPy number that becomes a constant of the matching dtype.
ExprLike = Expr | int | float | bool
# A dtype: a name such as "float32", a NumPy dtype or scalar type, or a torch dtype.
DType = Any
# A shape: one size, or a sequence of sizes (ints or integer expressions).
ShapeLike = ExprLike | Sequence[ExprLike]
# One reduce axis or several.
AxisLike = IterVar | Sequence[IterVar]


def var(name: str = "v", dtype: DType = "int32") -> Var:
    """A symbolic scalar, typically a dimension bound from the arrays' shapes at call time.

    Example:
        >>> import pytvmbridge.te as te
        >>> n = te.var("n")
        >>> n.name, n.dtype
        ('n', 'int32')
    """
    _check_name(name, "var")
    return _core.var(name, dtype)


def size_var(name: str = "size", dtype: DType = "int32") -> Var:
    """A symbolic size; the same as :func:`var` (TVM's name for a non-negative var).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.size_var("m").dtype
        'int32'
    """
    _check_name(name, "size_var")
    return _core.var(name, dtype)


def const(value: int | float | bool, dtype: DType | None = None) -> Expr:
    """A constant. Without a dtype: ``int`` -> int32 (int64 if it does not fit), ``float`` ->
    float32, ``bool`` -> bool. With a dtype the value is converted as NumPy's ``astype`` would;
    an integer out of the dtype's range raises ``OverflowError``.

    Example:
        >>> import pytvmbridge.te as te
        >>> te.const(3).dtype, te.const(1.5).dtype, te.const(2, "float16").dtype
        ('int32', 'float32', 'float16')
    """
    return _core.const(value, dtype)


def convert(value: Any) -> Any:
    """An expression from a number (``int`` -> int32 constant, ``float`` -> float32, an
    expression as is); a list or tuple becomes a list of converted items.

    Example:
        >>> import pytvmbridge.te as te
        >>> te.convert(56)
        56
        >>> te.convert([1, 2.5])
        [1, 2.5]
    """
    if isinstance(value, (list, tuple)):
        return [convert(v) for v in value]
    return _core.convert(value)


def placeholder(shape: ShapeLike, dtype: DType = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor. ``shape`` entries are ints, integer vars or constant expressions.

    Example:
        >>> import pytvmbridge.te as te
        >>> A = te.placeholder((te.var("n"), 3), dtype="float16", name="A")
        >>> A.ndim, A.dtype, A.shape
        (2, 'float16', (n, 3))
    """
    _check_name(name, "placeholder")
    return _core.placeholder(shape, "float32" if dtype is None else dtype, name)


def _check_name(name: Any, what: str) -> None:
    """TypeError naming the function for a name that is not a str (not pybind11's signature
    dump)."""
    if not isinstance(name, str):
        raise TVMTypeError(f"name of {what} must be a str, got {type(name).__name__} {name!r}")


def _dims(shape: ShapeLike) -> int:
    if isinstance(shape, (Expr, int, float)) or not hasattr(shape, "__iter__"):
        return 1
    return len(tuple(shape))


def _axis_names(fcompute: Callable[..., Any], ndim: int, name: str) -> list[str] | None:
    """The names of fcompute's parameters (the axes are named after them, as in TVM), after
    checking that it takes one index per dimension."""
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):  # some builtins have no signature: let the call decide
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p for p in params if p.kind in kinds]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    variadic = builtins.any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params)
    if len(required) > ndim or (not variadic and len(positional) < ndim):
        count = (
            f"{len(required)}"
            if variadic or len(required) == len(positional)
            else (f"{len(required)} to {len(positional)}")
        )
        raise TVMTypeError(
            f"compute {name!r} has {ndim} dimension(s) but fcompute takes {count} "
            f"argument(s); it needs one index argument per dimension, e.g. lambda i, j: ..."
        )
    names = [p.name for p in positional[:ndim]]
    return names + [f"i{d}" for d in range(len(names), ndim)]


def compute(
    shape: ShapeLike,
    fcompute: Callable[..., Any],
    name: str = "compute",
    tag: str = "",
    attrs: dict[str, Any] | None = None,
) -> Any:
    """A tensor whose element at ``(i, j, ...)`` is ``fcompute(i, j, ...)``.

    ``fcompute`` takes one index variable per dimension (named after its parameters) and returns
    an expression, or a list/tuple of expressions for several outputs (then a list of tensors is
    returned). A reduction (``sum``, ``max``...) must be the whole returned expression. ``tag``
    (a string such as ``"elemwise"`` or ``"conv2d_nchw"``) and ``attrs`` (a dict of str to int,
    float, str or list of ints) annotate the operation, as in TVM: automatic schedules read them
    from ``op.tag`` and ``op.attrs``.

    Example:
        >>> import pytvmbridge.te as te
        >>> A = te.placeholder((3, 4), name="A")
        >>> B = te.compute((3, 4), lambda i, j: A[i, j] + 1.0, name="B", tag="elemwise")
        >>> B.op.axis[1].name, B.op.body, B.op.tag
        ('j', [(A[i, j] + 1.0)], 'elemwise')
    """
    _check_name(name, "compute")
    if not isinstance(tag, str):
        raise TVMTypeError(f"tag of compute {name!r} must be a str, got {type(tag).__name__}")
    if not callable(fcompute):
        raise TVMTypeError(f"fcompute of compute {name!r} must be callable, got {fcompute!r}")
    names = _axis_names(fcompute, _dims(shape), name)
    outputs = _core.compute(shape, fcompute, name, names, tag, attrs)
    return outputs[0] if len(outputs) == 1 else outputs


def reduce_axis(dom: Any, name: str = "rv") -> IterVar:
    """A reduction variable over the half-open range ``[lo, hi)`` given as ``dom=(lo, hi)``
    (ints or int32 expressions) or a :class:`Range`.

    Example:
        >>> import pytvmbridge.te as te
        >>> k = te.reduce_axis((0, 16), name="k")
        >>> k.dom.min, k.dom.extent, k.kind
        (0, 16, 'reduce')
    """
    if isinstance(dom, (tuple, list)):  # whole-number floats (N / bn) are extents, as in TVM
        dom = type(dom)(_whole(v) for v in dom)
    _check_name(name, "reduce_axis")
    return _core.reduce_axis(dom, name)


def _is_axis(axis: Any) -> bool:
    return isinstance(axis, (IterVar, list, tuple))


def _reduce(kind: str, expr: ExprLike, axis: Any, where: ExprLike | None) -> Expr:
    if axis is None:
        raise TVMTypeError(f"{kind}() needs axis=: a reduce_axis or a list of them")
    if _is_axis(axis):
        return _core.reduce(kind, expr, axis, where)
    # TVM's reducers also combine two expressions element-wise: tvm.max(a, b).
    if where is not None:
        raise TVMTypeError(f"{kind}(a, b) combines two values and takes no where=")
    if kind in ("max", "min"):
        return getattr(_core, kind)(expr, axis)
    if not isinstance(expr, Expr) and not isinstance(axis, Expr):
        expr = _core.convert(expr)
    return expr + axis if kind == "sum" else expr * axis


def sum(
    expr: ExprLike, axis: AxisLike | ExprLike | None = None, where: ExprLike | None = None
) -> Expr:
    """The sum of ``expr`` over one or several reduce axes, optionally only where ``where``
    holds; ``sum(a, b)`` with two values is ``a + b``.

    Example:
        >>> import pytvmbridge.te as te
        >>> A = te.placeholder((8,), name="A")
        >>> k = te.reduce_axis((0, 8), name="k")
        >>> te.sum(A[k], axis=k, where=k > 2)
        sum(A[k], axis=[k], where=(k > 2))
    """
    return _reduce("sum", expr, axis, where)


def prod(
    expr: ExprLike, axis: AxisLike | ExprLike | None = None, where: ExprLike | None = None
) -> Expr:
    """The product of ``expr`` over reduce axes (identity 1); ``prod(a, b)`` is ``a * b``.

    Example:
        >>> import pytvmbridge.te as te
        >>> A = te.placeholder((8,), name="A")
        >>> k = te.reduce_axis((0, 8), name="k")
        >>> te.prod(A[k], axis=[k])
        prod(A[k], axis=[k])
    """
    return _reduce("prod", expr, axis, where)


def max(
    expr: ExprLike, axis: AxisLike | ExprLike | None = None, where: ExprLike | None = None
) -> Expr:
    """The maximum of ``expr`` over reduce axes (identity: the dtype's lowest value), or the
    element-wise maximum of two values: ``max(a, b)``.

    Example:
        >>> import pytvmbridge.te as te
        >>> x = te.var("x", "float32")
        >>> te.max(x, 0.0)
        max(x, 0.0)
    """
    return _reduce("max", expr, axis, where)


def min(
    expr: ExprLike, axis: AxisLike | ExprLike | None = None, where: ExprLike | None = None
) -> Expr:
    """The minimum of ``expr`` over reduce axes (identity: the dtype's largest value), or the
    element-wise minimum of two values: ``min(a, b)``.

    Example:
        >>> import pytvmbridge.te as te
        >>> A = te.placeholder((4, 8), name="A")
        >>> k = te.reduce_axis((0, 8), name="k")
        >>> te.compute((4,), lambda i: te.min(A[i, k], axis=k), name="M").op.body
        [min(A[i, k], axis=[k])]
    """
    return _reduce("min", expr, axis, where)


def _unary(name: str, doc_example: str) -> Callable[[ExprLike], Expr]:
    def function(x: ExprLike) -> Expr:
        return _core.call_intrinsic(name, x)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (
        f"Element-wise ``{name}`` of a float expression (NumPy's ``{doc_example}``).\n\n"
        "    Example:\n"
        "        >>> import pytvmbridge.te as te\n"
        f"        >>> te.{name}(te.var('x', 'float32'))\n"
        f"        {name}(x)\n"
    )
    return function


exp = _unary("exp", "np.exp")
exp2 = _unary("exp2", "np.exp2")
log = _unary("log", "np.log")
log2 = _unary("log2", "np.log2")
log10 = _unary("log10", "np.log10")
log1p = _unary("log1p", "np.log1p")
sqrt = _unary("sqrt", "np.sqrt")
rsqrt = _unary("rsqrt", "1 / np.sqrt")
sin = _unary("sin", "np.sin")
cos = _unary("cos", "np.cos")
tan = _unary("tan", "np.tan")
tanh = _unary("tanh", "np.tanh")
sigmoid = _unary("sigmoid", "1 / (1 + np.exp(-x))")
erf = _unary("erf", "scipy.special.erf")
floor = _unary("floor", "np.floor")
ceil = _unary("ceil", "np.ceil")
round = _unary("round", "np.round")
trunc = _unary("trunc", "np.trunc")


def abs(x: ExprLike) -> Expr:
    """Element-wise absolute value of an integer or float expression.

    Example:
        >>> import pytvmbridge.te as te
        >>> te.abs(te.var("i"))
        abs(i)
    """
    return _core.call_intrinsic("abs", x)


def isnan(x: ExprLike) -> Expr:
    """A bool expression, true where the float ``x`` is NaN.

    Example:
        >>> import pytvmbridge.te as te
        >>> te.isnan(te.var("x", "float64")).dtype
        'bool'
    """
    return _core.call_intrinsic("isnan", x)


def power(x: ExprLike, y: ExprLike) -> Expr:
    """``x ** y`` for floats (the same as the ``**`` operator).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.power(te.var("x", "float32"), 2)
        power(x, 2.0)
    """
    return _core.call_intrinsic("power", x, y)


def fmod(x: ExprLike, y: ExprLike) -> Expr:
    """The float remainder of ``x / y`` with the sign of ``x`` (C's fmod, NumPy's ``np.fmod``).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.fmod(te.var("x", "float32"), 3.0)
        fmod(x, 3.0)
    """
    return _core.call_intrinsic("fmod", x, y)


def if_then_else(cond: ExprLike, t: ExprLike, f: ExprLike) -> Expr:
    """``t`` where ``cond`` holds, else ``f``; only the chosen side is evaluated, so it may guard
    a read that would be out of bounds.

    Example:
        >>> import pytvmbridge.te as te
        >>> A = te.placeholder((8,), name="A")
        >>> B = te.compute((8,), lambda i: te.if_then_else(i > 0, A[i - 1], 0.0), name="B")
        >>> B.op.body
        [if_then_else((i > 0), A[(i - 1)], 0.0)]
    """
    return _core.if_then_else(cond, t, f)


def select(cond: ExprLike, t: ExprLike, f: ExprLike) -> Expr:
    """``t`` where ``cond`` holds, else ``f``; both sides are evaluated (no branch), so both must
    be safe to compute.

    Example:
        >>> import pytvmbridge.te as te
        >>> x = te.var("x", "float32")
        >>> te.select(x > 0, x, 0.0)
        select((x > 0.0), x, 0.0)
    """
    return _core.select(cond, t, f)


def all(*conds: ExprLike) -> Expr:
    """The logical and of several bool conditions (``True`` when there are none).

    Example:
        >>> import pytvmbridge.te as te
        >>> i, j = te.var("i"), te.var("j")
        >>> te.all(i < 4, j < 4, i < j)
        (((i < 4) && (j < 4)) && (i < j))
    """
    return _core.all(*conds)


def any(*conds: ExprLike) -> Expr:
    """The logical or of several bool conditions (``False`` when there are none).

    Example:
        >>> import pytvmbridge.te as te
        >>> i = te.var("i")
        >>> te.any(i < 1, i > 6)
        ((i < 1) || (i > 6))
    """
    return _core.any(*conds)


def max_value(dtype: DType) -> Expr:
    """The largest finite value of a dtype (the identity of a ``min`` reduction).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.max_value("int8"), te.max_value("float16")
        (127i8, 65504.0f16)
    """
    return _core.max_value(dtype)


def min_value(dtype: DType) -> Expr:
    """The smallest finite value of a dtype (the identity of a ``max`` reduction).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.min_value("int16")
        -32768i16
    """
    return _core.min_value(dtype)


def floordiv(a: ExprLike, b: ExprLike) -> Expr:
    """Division rounding toward minus infinity (Python's ``//``); for floats ``floor(a / b)``.

    Example:
        >>> import pytvmbridge.te as te
        >>> te.floordiv(te.var("i"), 4)
        floordiv(i, 4)
    """
    return _core.floordiv(a, b)


def floormod(a: ExprLike, b: ExprLike) -> Expr:
    """The remainder of :func:`floordiv`, with the sign of ``b`` (Python's ``%``).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.floormod(te.var("i"), 4)
        floormod(i, 4)
    """
    return _core.floormod(a, b)


def truncdiv(a: ExprLike, b: ExprLike) -> Expr:
    """Integer division rounding toward zero (C's ``/``).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.truncdiv(te.var("i"), 4)
        (i / 4)
    """
    return _core.truncdiv(a, b)


def truncmod(a: ExprLike, b: ExprLike) -> Expr:
    """The remainder of :func:`truncdiv`, with the sign of ``a`` (C's ``%``).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.truncmod(te.var("i"), 4)
        (i % 4)
    """
    return _core.truncmod(a, b)


def bitwise_and(a: ExprLike, b: ExprLike) -> Expr:
    """Bitwise and of two integer expressions (the ``&`` operator, ``np.bitwise_and``); the
    logical and of two bool expressions.

    Example:
        >>> import pytvmbridge.te as te
        >>> te.bitwise_and(te.var("i"), 3)
        (i & 3)
    """
    return _core.bitwise_and(a, b)


def bitwise_or(a: ExprLike, b: ExprLike) -> Expr:
    """Bitwise or of two integer expressions (the ``|`` operator, ``np.bitwise_or``); the logical
    or of two bool expressions.

    Example:
        >>> import pytvmbridge.te as te
        >>> te.bitwise_or(te.var("i"), 4)
        (i | 4)
    """
    return _core.bitwise_or(a, b)


def bitwise_xor(a: ExprLike, b: ExprLike) -> Expr:
    """Bitwise exclusive or of two integer expressions (the ``^`` operator,
    ``np.bitwise_xor``); for two bool expressions, whether they differ.

    Example:
        >>> import pytvmbridge.te as te
        >>> te.bitwise_xor(te.var("i"), 1)
        (i ^ 1)
    """
    return _core.bitwise_xor(a, b)


def bitwise_not(a: ExprLike) -> Expr:
    """Bitwise complement of an integer expression (the ``~`` operator, ``np.invert``); the
    logical not of a bool expression.

    Example:
        >>> import pytvmbridge.te as te
        >>> te.bitwise_not(te.var("u", "uint8"))
        ~u
    """
    return _core.bitwise_not(a)


def shift_left(a: ExprLike, b: ExprLike) -> Expr:
    """``a << b`` of integer expressions (``np.left_shift``). As in NumPy, an amount ``b`` that
    is negative or at least the bit width shifts every bit out and gives 0.

    Example:
        >>> import pytvmbridge.te as te
        >>> te.shift_left(1, te.var("i"))
        (1 << i)
    """
    return _core.shift_left(a, b)


def shift_right(a: ExprLike, b: ExprLike) -> Expr:
    """``a >> b`` of integer expressions (``np.right_shift``): arithmetic (sign-filling) for
    signed dtypes, logical for unsigned ones. As in NumPy, an amount ``b`` that is negative or at
    least the bit width gives 0, or -1 for a negative signed ``a``.

    Example:
        >>> import pytvmbridge.te as te
        >>> te.shift_right(te.var("i"), 2)
        (i >> 2)
    """
    return _core.shift_right(a, b)


# ---- TVM's other names for the language (classic TVM code uses them) ----


def indexdiv(a: ExprLike, b: ExprLike) -> Expr:
    """Index division: floor division (TVM lowers ``indexdiv`` to ``floordiv``).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.indexdiv(te.var("i"), 8)
        floordiv(i, 8)
    """
    return floordiv(a, b)


def indexmod(a: ExprLike, b: ExprLike) -> Expr:
    """Index remainder: floor modulo, non-negative for a positive divisor.

    Example:
        >>> import pytvmbridge.te as te
        >>> te.indexmod(te.var("i"), 8)
        floormod(i, 8)
    """
    return floormod(a, b)


def _is_int(x: Any) -> bool:
    dtype = x.dtype if isinstance(x, Expr) else ("int" if isinstance(x, int) else "float")
    return str(dtype).startswith(("int", "uint"))


def div(a: ExprLike, b: ExprLike) -> Expr:
    """C division: truncating for two integers, true division otherwise (TVM's ``tir.div``).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.div(te.var("i"), 8), te.div(te.var("x", "float32"), 2.0)
        ((i / 8), (x / 2.0))
    """
    if _is_int(a) and _is_int(b):
        return truncdiv(a, b)
    return _core.convert(a) / b if not isinstance(a, Expr) else a / b  # type: ignore[no-any-return]


def add(a: ExprLike, b: ExprLike) -> Expr:
    """``a + b`` (TVM's function form).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.add(te.var("i"), 1)
        (i + 1)
    """
    return _core.convert(a) + b  # type: ignore[no-any-return]


def subtract(a: ExprLike, b: ExprLike) -> Expr:
    """``a - b`` (TVM's function form).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.subtract(te.var("i"), 1)
        (i - 1)
    """
    return _core.convert(a) - b  # type: ignore[no-any-return]


def multiply(a: ExprLike, b: ExprLike) -> Expr:
    """``a * b`` (TVM's function form).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.multiply(te.var("i"), 3)
        (i * 3)
    """
    return _core.convert(a) * b  # type: ignore[no-any-return]


def nearbyint(x: ExprLike) -> Expr:
    """Round to the nearest integer, halves to even (TVM's ``nearbyint``; the same as
    :func:`round`).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.nearbyint(te.var("x", "float32"))
        round(x)
    """
    return round(x)


def isinf(x: ExprLike) -> Expr:
    """A bool expression, true where the float ``x`` is infinite (``np.isinf``).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.isinf(te.var("x", "float32")).dtype
        'bool'
    """
    e = _core.convert(x)
    if not str(e.dtype).startswith(("float", "bfloat")):
        return _core.const(False, "bool")
    return abs(e) == float("inf")  # type: ignore[no-any-return]


def isfinite(x: ExprLike) -> Expr:
    """A bool expression, true where ``x`` is neither infinite nor NaN (``np.isfinite``).

    Example:
        >>> import pytvmbridge.te as te
        >>> te.isfinite(te.var("x", "float32")).dtype
        'bool'
    """
    e = _core.convert(x)
    if not str(e.dtype).startswith(("float", "bfloat")):
        return _core.const(True, "bool")
    return ~isnan(e) & ~isinf(e)  # type: ignore[no-any-return]


class _OperationKind(type):
    """Makes ``isinstance(op, PlaceholderOp)`` test the kind of a (single C++ class) Operation."""

    _prefix = ""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Operation) and repr(obj).startswith(cls._prefix)


class PlaceholderOp(metaclass=_OperationKind):
    """The operation of a placeholder, for ``isinstance(A.op, te.PlaceholderOp)``.

    Example:
        >>> import pytvmbridge.te as te
        >>> A = te.placeholder((4,), name="A")
        >>> isinstance(A.op, te.PlaceholderOp), isinstance(A.op, te.ComputeOp)
        (True, False)
    """

    _prefix = "PlaceholderOp("


class ComputeOp(metaclass=_OperationKind):
    """The operation of a compute, for ``isinstance(B.op, te.ComputeOp)``.

    Example:
        >>> import pytvmbridge.te as te
        >>> A = te.placeholder((4,), name="A")
        >>> isinstance(te.compute((4,), lambda i: A[i], name="B").op, te.ComputeOp)
        True
    """

    _prefix = "ComputeOp("


class ExternOp(metaclass=_OperationKind):
    """The operation of an extern stage (``te.extern``), for ``isinstance(B.op, te.ExternOp)``:
    neither a placeholder nor a compute.

    Example:
        >>> import pytvmbridge.te as te
        >>> A = te.placeholder((4,), name="A")
        >>> B = te.extern((4,), [A], lambda i, o: te.call_packed("f", i[0], o[0]), name="B")
        >>> isinstance(B.op, te.ExternOp), isinstance(B.op, te.PlaceholderOp)
        (True, False)
    """

    _prefix = "ExternOp("


class TensorSlice:
    """``A[i]`` of a tensor with more dimensions: ``A[i][j]`` reads ``A[i, j]`` (TVM's chained
    indexing).

    Example:
        >>> import pytvmbridge.te as te
        >>> A = te.placeholder((3, 4), name="A")
        >>> A[1][2]
        A[1, 2]
    """

    def __init__(self, tensor: Tensor, indices: tuple[Any, ...]) -> None:
        self.tensor = tensor
        self.indices = indices

    def __getitem__(self, key: Any) -> Any:
        more = key if isinstance(key, tuple) else (key,)
        return _tensor_getitem(self.tensor, self.indices + more)

    @property
    def dtype(self) -> str:
        """The element dtype of the tensor."""
        return str(self.tensor.dtype)

    def asobject(self) -> Any:
        """The read itself, when every index is given."""
        return self.tensor[self.indices]

    def __repr__(self) -> str:
        return f"TensorSlice({self.tensor.name}, {list(self.indices)})"

    def _incomplete(self, *_: Any) -> Any:
        """Used as a value (in arithmetic, or returned by a compute): a TypeError saying how
        many indices the tensor needs."""
        t = self.tensor
        given = ", ".join(str(i) for i in self.indices)
        raise TVMTypeError(
            f"{t.name}[{given}] gives {len(self.indices)} of the {t.ndim} indices of tensor "
            f"'{t.name}' (shape {tuple(t.shape)}); index all of them to read an element"
        )


for _op in (
    "add sub mul truediv floordiv mod pow and or xor lshift rshift lt le gt ge".split()
    + "radd rsub rmul rtruediv rfloordiv rmod rpow rand ror rxor rlshift rrshift".split()
    + "neg pos abs invert".split()
):
    setattr(TensorSlice, f"__{_op}__", TensorSlice._incomplete)


_tensor_read = Tensor.__getitem__


def _tensor_getitem(self: Tensor, key: Any) -> Any:
    count = len(key) if isinstance(key, (tuple, list)) else 1
    if 0 < count < self.ndim and not isinstance(key, slice):
        return TensorSlice(self, tuple(key) if isinstance(key, (tuple, list)) else (key,))
    return _tensor_read(self, key)


Tensor.__getitem__ = _tensor_getitem


def _whole(value: Any) -> Any:
    """A Python float that is a whole number (``N / bn``) as an int, as TVM takes extents; a
    NumPy integer as a Python int (an extent of ``np.int64(4)`` is 4, not an int64 axis)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, int):
        return int(value)
    return value


# ---- the rest of the math library (TC's builtins and TVM's tir math), by name ----


def _math(name: str, arity: int, meaning: str) -> Callable[..., Expr]:
    """A te function calling the C++ math function ``name`` (ir/math.h) with ``arity`` float
    arguments; Python numbers take the expressions' dtype."""

    def function(*args: ExprLike) -> Expr:
        if len(args) != arity:
            raise TVMTypeError(f"{name}() takes {arity} argument(s), got {len(args)}")
        return _core.math_function(name, *args)

    params = ", ".join("te.var('x', 'float32')" if k == 0 else "1.0" for k in range(arity))
    function.__name__ = function.__qualname__ = name
    function.__module__ = __name__
    function.__doc__ = (
        f"Element-wise ``{name}`` of float expressions: {meaning}.\n\n"
        "    Example:\n"
        "        >>> import pytvmbridge.te as te\n"
        f"        >>> te.{name}({params}).dtype\n"
        "        'float32'\n"
    )
    return function


acos = _math("acos", 1, "the inverse cosine (``np.arccos``)")
acosh = _math("acosh", 1, "the inverse hyperbolic cosine (``np.arccosh``)")
asin = _math("asin", 1, "the inverse sine (``np.arcsin``)")
asinh = _math("asinh", 1, "the inverse hyperbolic sine (``np.arcsinh``)")
atan = _math("atan", 1, "the inverse tangent (``np.arctan``)")
atanh = _math("atanh", 1, "the inverse hyperbolic tangent (``np.arctanh``)")
atan2 = _math("atan2", 2, "the angle of the point (x2, x1) (``np.arctan2(x1, x2)``)")
cbrt = _math("cbrt", 1, "the cube root (``np.cbrt``)")
copysign = _math("copysign", 2, "x1 with the sign of x2 (``np.copysign``)")
cosh = _math("cosh", 1, "the hyperbolic cosine (``np.cosh``)")
cospi = _math("cospi", 1, "``cos(pi * x)``, exact at integers and half-integers")
cyl_bessel_i0 = _math("cyl_bessel_i0", 1, "the modified Bessel function I0 (``np.i0``)")
cyl_bessel_i1 = _math("cyl_bessel_i1", 1, "the modified Bessel function I1")
erfc = _math("erfc", 1, "the complementary error function ``1 - erf(x)``, accurate for large x")
erfcinv = _math("erfcinv", 1, "the inverse of erfc, on (0, 2)")
erfcx = _math("erfcx", 1, "the scaled complementary error function ``exp(x**2) * erfc(x)``")
erfinv = _math("erfinv", 1, "the inverse error function, on (-1, 1)")
exp10 = _math("exp10", 1, "``10 ** x``")
expm1 = _math("expm1", 1, "``exp(x) - 1``, accurate near 0 (``np.expm1``)")
fabs = _math("fabs", 1, "the absolute value (C's name, ``np.fabs``)")
fdim = _math("fdim", 2, "the positive difference ``max(x1 - x2, 0)``")
fdivide = _math("fdivide", 2, "the quotient ``x1 / x2``")
fma = _math("fma", 3, "``x1 * x2 + x3`` with one rounding")
hypot = _math("hypot", 2, "``sqrt(x1**2 + x2**2)`` without overflow (``np.hypot``)")
j0 = _math("j0", 1, "the Bessel function of the first kind of order 0")
j1 = _math("j1", 1, "the Bessel function of the first kind of order 1")
lgamma = _math("lgamma", 1, "the logarithm of the absolute value of the gamma function")
logb = _math("logb", 1, "the binary exponent of x, as a float (``floor(log2(|x|))``)")
nextafter = _math("nextafter", 2, "the next float after x1 toward x2 (``np.nextafter``)")
norm3d = _math("norm3d", 3, "the length of a 3-vector, without overflow")
norm4d = _math("norm4d", 4, "the length of a 4-vector, without overflow")
normcdf = _math("normcdf", 1, "the standard normal cumulative distribution function")
normcdfinv = _math("normcdfinv", 1, "the inverse of normcdf, on (0, 1)")
rcbrt = _math("rcbrt", 1, "``1 / cbrt(x)``")
remainder = _math("remainder", 2, "the IEEE remainder ``x1 - round_even(x1 / x2) * x2``")
rhypot = _math("rhypot", 2, "``1 / hypot(x1, x2)``")
rnorm3d = _math("rnorm3d", 3, "``1 / norm3d(x1, x2, x3)``")
rnorm4d = _math("rnorm4d", 4, "``1 / norm4d(x1, x2, x3, x4)``")
sinh = _math("sinh", 1, "the hyperbolic sine (``np.sinh``)")
sinpi = _math("sinpi", 1, "``sin(pi * x)``, exact at integers and half-integers")
tgamma = _math("tgamma", 1, "the gamma function (``math.gamma``)")
y0 = _math("y0", 1, "the Bessel function of the second kind of order 0")
y1 = _math("y1", 1, "the Bessel function of the second kind of order 1")

_MATH_NAMES = (
    "acos acosh asin asinh atan atanh atan2 cbrt copysign cosh cospi cyl_bessel_i0 "
    "cyl_bessel_i1 erfc erfcinv erfcx erfinv exp10 expm1 fabs fdim fdivide fma hypot j0 j1 "
    "lgamma logb nextafter norm3d norm4d normcdf normcdfinv rcbrt remainder rhypot rnorm3d "
    "rnorm4d sinh sinpi tgamma y0 y1"
).split()

__all__ = [
    "ComputeOp",
    "Expr",
    "ExternOp",
    "FloatImm",
    "IntImm",
    "IterVar",
    "Operation",
    "PlaceholderOp",
    "Range",
    "Schedule",
    "Stage",
    "Tensor",
    "TensorSlice",
    "Var",
    "abs",
    "acos",
    "acosh",
    "add",
    "all",
    "any",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "cbrt",
    "ceil",
    "compute",
    "const",
    "convert",
    "copysign",
    "cos",
    "cosh",
    "cospi",
    "create_schedule",
    "cyl_bessel_i0",
    "cyl_bessel_i1",
    "div",
    "erf",
    "erfc",
    "erfcinv",
    "erfcx",
    "erfinv",
    "exp",
    "exp2",
    "exp10",
    "expm1",
    "fabs",
    "fdim",
    "fdivide",
    "floor",
    "floordiv",
    "floormod",
    "fma",
    "fmod",
    "hypot",
    "if_then_else",
    "indexdiv",
    "indexmod",
    "isfinite",
    "isinf",
    "isnan",
    "j0",
    "j1",
    "lgamma",
    "log",
    "log1p",
    "log2",
    "log10",
    "logb",
    "max",
    "max_value",
    "min",
    "min_value",
    "multiply",
    "nearbyint",
    "nextafter",
    "norm3d",
    "norm4d",
    "normcdf",
    "normcdfinv",
    "placeholder",
    "power",
    "prod",
    "rcbrt",
    "reduce_axis",
    "remainder",
    "rhypot",
    "rnorm3d",
    "rnorm4d",
    "round",
    "rsqrt",
    "select",
    "shift_left",
    "shift_right",
    "sigmoid",
    "sin",
    "sinh",
    "sinpi",
    "size_var",
    "sqrt",
    "subtract",
    "sum",
    "tan",
    "tanh",
    "tgamma",
    "trunc",
    "truncdiv",
    "truncmod",
    "var",
    "y0",
    "y1",
]

# Operations beyond compute, each in its own module: user-defined reducers and scans.
from .reducer import CommReducer, comm_reducer  # noqa: E402
from .scan import scan  # noqa: E402

__all__ += ["CommReducer", "comm_reducer", "scan"]
from .extern import call_packed, extern  # noqa: E402

__all__ += ["call_packed", "extern"]


def gradient(output: Tensor, inputs: Any, head: Tensor | None = None) -> Any:
    """Reverse-mode gradients of ``output`` with respect to ``inputs`` (TVM's ``te.gradient``);
    see :func:`pytvmbridge.autodiff.gradient`.

    Example:
        >>> import pytvmbridge.te as te
        >>> A = te.placeholder((4,), name="A")
        >>> te.gradient(te.compute((4,), lambda i: A[i] * A[i], name="B"), [A])[0].shape
        (4,)
    """
    from .autodiff import gradient as _gradient

    return _gradient(output, inputs, head)
