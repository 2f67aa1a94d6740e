"""Binary operators with NumPy broadcasting, and ``where``.

Shapes are aligned from the right; a dimension of size 1 stretches to the other's size.
Symbolic dimensions broadcast when they are the same var (or one side is the constant 1).
Either operand may be a number or a scalar expression; two numbers give an expression. A number
with a tensor follows NumPy's rule for Python scalars: it takes the tensor's dtype (a float with
a float16 tensor is float16, an int with an int8 tensor int8, an int with a float tensor that
float), except a float with an integer tensor, which computes in float32. Both tensors must have
the same dtype (cast one with :func:`topi.cast`).

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> n = tvm.var("n")
    >>> A = tvm.placeholder((n, 3), name="A")
    >>> b = tvm.placeholder((3,), name="b")
    >>> C = topi.add(A, b)
    >>> C.shape, C.op.tag
    ((n, 3), 'broadcast')
    >>> f = tvm.build(tvm.create_schedule(C.op), [A, b, C])
    >>> a = np.ones((2, 3), "float32"); bb = np.arange(3, dtype="float32")
    >>> c = np.empty((2, 3), "float32"); f(a, bb, c); c.tolist()
    [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import te
from ..error import TVMTypeError, TVMValueError
from . import tag
from .utils import Tensor, const_int, is_float, same_dim

# A number an operand may be: Python's, or a NumPy scalar (np.float32(1.5), np.int64(2)).
Number = int | float | bool | np.integer | np.floating | np.bool_
_NUMBERS = (int, float, np.integer, np.floating, np.bool_)
Operand = Tensor | te.Expr | Number
BinaryFn = Callable[[te.Expr, te.Expr], te.Expr]


def broadcast_shape(shape1: Sequence[Any], shape2: Sequence[Any], what: str = "broadcast") -> list:
    """The shape two shapes broadcast to (NumPy's rule); ValueError if they do not.

    Example:
        >>> from pytvmbridge.topi.broadcast import broadcast_shape
        >>> broadcast_shape((4, 1, 3), (5, 1))
        [4, 5, 3]
    """
    out: list[Any] = []
    n1, n2 = len(shape1), len(shape2)
    for k in range(1, max(n1, n2) + 1):
        if k > n1:
            out.append(shape2[n2 - k])
            continue
        if k > n2:
            out.append(shape1[n1 - k])
            continue
        a, b = shape1[n1 - k], shape2[n2 - k]
        if same_dim(a, b) or const_int(b) == 1:
            out.append(a)
        elif const_int(a) == 1:
            out.append(b)
        else:
            raise TVMValueError(
                f"{what}: shapes {tuple(shape1)} and {tuple(shape2)} do not broadcast "
                f"(dimension {a} against {b}; symbolic dimensions must be the same var)"
            )
    out.reverse()
    return [const_int(d) if const_int(d) is not None else d for d in out]


def broadcast_index(x: Tensor, out_shape: Sequence[Any], index: Sequence[Any]) -> list:
    """The index into ``x`` for output ``index`` when ``x`` is broadcast to ``out_shape``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge.topi.broadcast import broadcast_index
        >>> i, j = tvm.var("i"), tvm.var("j")
        >>> broadcast_index(tvm.placeholder((1, 3)), (2, 3), (i, j))
        [0, j]
    """
    skip = len(out_shape) - x.ndim
    out = []
    for d in range(x.ndim):
        if const_int(x.shape[d]) == 1 and const_int(out_shape[skip + d]) != 1:
            out.append(te.const(0, "int32"))
        else:
            out.append(index[skip + d])
    return out


def _operand(x: Operand, what: str) -> Tensor | te.Expr | Number:
    """``x`` as a tensor, an expression or a number; a number is kept as it is, not made a
    constant: the expression operators give it the other operand's dtype (te's rule, NumPy's for
    Python scalars). A float32/int32 constant made here would not mix with a float16 or int8
    tensor."""
    if isinstance(x, (te.Tensor, te.Expr)):
        return x
    if isinstance(x, _NUMBERS):
        return x
    raise TVMTypeError(
        f"{what} must be a Tensor, an expression or a number, found {type(x).__name__}"
    )


def _binary(name: str, fn: BinaryFn, lhs: Operand, rhs: Operand) -> Tensor | te.Expr:
    a, b = _operand(lhs, f"lhs of {name}"), _operand(rhs, f"rhs of {name}")
    a_tensor, b_tensor = isinstance(a, te.Tensor), isinstance(b, te.Tensor)
    if not a_tensor and not b_tensor:
        if not isinstance(a, te.Expr) and not isinstance(b, te.Expr):
            # Two numbers: constants of their default dtypes (int32, float32), an expression.
            a, b = te.convert(a), te.convert(b)
        return fn(a, b)
    if a_tensor and b_tensor:
        if a.dtype != b.dtype:
            raise TVMTypeError(
                f"{name}: lhs {a.name!r} is {a.dtype} and rhs {b.name!r} is {b.dtype}; "
                "cast one of them with topi.cast"
            )
        shape = broadcast_shape(a.shape, b.shape, name)
        return te.compute(
            shape,
            lambda *i: fn(a[broadcast_index(a, shape, i)], b[broadcast_index(b, shape, i)]),
            name=f"T_{name}",
            tag=tag.BROADCAST,
        )
    if a_tensor:
        return te.compute(a.shape, lambda *i: fn(a[i], b), name=f"T_{name}", tag=tag.ELEMWISE)
    return te.compute(b.shape, lambda *i: fn(a, b[i]), name=f"T_{name}", tag=tag.ELEMWISE)


def _make(
    name: str, fn: BinaryFn, doc: str, dtype: str = "float32"
) -> Callable[[Operand, Operand], Any]:
    def op(lhs: Operand, rhs: Operand) -> Tensor | te.Expr:
        return _binary(name, fn, lhs, rhs)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (
        f"{doc}, elementwise with broadcasting.\n\n"
        "    Example:\n"
        "        >>> import pytvmbridge as tvm\n"
        "        >>> from pytvmbridge import topi\n"
        f"        >>> A = tvm.placeholder((2, 3), {dtype!r}, name='A')\n"
        f"        >>> topi.{name}(A, tvm.placeholder((2, 1), {dtype!r}, name='B')).shape\n"
        "        (2, 3)\n"
    )
    return op


def _divide(a: te.Expr | Number, b: te.Expr | Number) -> te.Expr:
    # TVM's divide: true division for floats, truncating division for integers (C's `/`). A
    # number operand counts by its kind: a Python float divides an integer tensor truly.
    def floating(v: te.Expr | Number) -> bool:
        if isinstance(v, te.Expr):
            return is_float(v.dtype)
        return not isinstance(v, (int, np.integer, np.bool_))

    return a / b if floating(a) or floating(b) else te.truncdiv(a, b)


def _trunc_mod(a: te.Expr | Number, b: te.Expr | Number) -> te.Expr:
    # Floats: C's fmod (TVM's mod of floats, torch.fmod), the remainder with the sign of a.
    if any(isinstance(v, te.Expr) and is_float(v.dtype) for v in (a, b)):
        return te.fmod(a, b)
    return te.truncmod(a, b)


def _trunc_div(a: te.Expr | Number, b: te.Expr | Number) -> te.Expr:
    # Floats: the quotient rounded toward zero (torch.div(rounding_mode="trunc")).
    if any(isinstance(v, te.Expr) and is_float(v.dtype) for v in (a, b)):
        return te.trunc(a / b)
    return te.truncdiv(a, b)


def _power(a: te.Expr, b: te.Expr) -> te.Expr:
    return te.power(a, b)


add = _make("add", lambda a, b: a + b, "``lhs + rhs``")
subtract = _make("subtract", lambda a, b: a - b, "``lhs - rhs``")
multiply = _make("multiply", lambda a, b: a * b, "``lhs * rhs``")
divide = _make(
    "divide", _divide, "``lhs / rhs`` (true division for floats; rounds toward zero for integers)"
)
floor_divide = _make("floor_divide", te.floordiv, "``lhs // rhs`` (rounds toward -inf)", "int32")
trunc_divide = _make(
    "trunc_divide", _trunc_div, "``lhs / rhs`` rounded toward zero (for floats too)", "int32"
)
floor_mod = _make(
    "floor_mod", te.floormod, "``lhs % rhs`` with the sign of rhs (Python's)", "int32"
)
mod = _make(
    "mod",
    _trunc_mod,
    "The remainder with the sign of lhs (C's ``%``, TVM's mod; ``fmod`` for floats)",
    "int32",
)
trunc_mod = _make(
    "trunc_mod", _trunc_mod, "The remainder with the sign of lhs (C's ``%``, ``fmod``)", "int32"
)
power = _make("power", _power, "``lhs ** rhs`` for floats")
maximum = _make("maximum", lambda a, b: te.max(a, b), "The larger of lhs and rhs")
minimum = _make("minimum", lambda a, b: te.min(a, b), "The smaller of lhs and rhs")
equal = _make("equal", lambda a, b: a == b, "``lhs == rhs`` as bool")
not_equal = _make("not_equal", lambda a, b: a != b, "``lhs != rhs`` as bool")
less = _make("less", lambda a, b: a < b, "``lhs < rhs`` as bool")
less_equal = _make("less_equal", lambda a, b: a <= b, "``lhs <= rhs`` as bool")
greater = _make("greater", lambda a, b: a > b, "``lhs > rhs`` as bool")
greater_equal = _make("greater_equal", lambda a, b: a >= b, "``lhs >= rhs`` as bool")


def _logical(name: str, fn: Callable[[te.Expr, te.Expr], te.Expr]) -> Callable[..., te.Expr]:
    # & and | of integers are bitwise: the logical operators take bools only (as logical_not)
    def apply(a: te.Expr | Number, b: te.Expr | Number) -> te.Expr:
        for v in (a, b):
            dtype = v.dtype if isinstance(v, te.Expr) else type(v).__name__
            if dtype not in ("bool", "bool_"):
                raise TVMTypeError(
                    f"{name} needs bool operands, found {dtype}; compare first (x != 0), or "
                    "use the bitwise operators for integers"
                )
        return fn(a, b)

    return apply


logical_and = _make(
    "logical_and",
    _logical("logical_and", lambda a, b: a & b),
    "Logical and of bool tensors",
    "bool",
)
logical_or = _make(
    "logical_or", _logical("logical_or", lambda a, b: a | b), "Logical or of bool tensors", "bool"
)
logical_xor = _make(
    "logical_xor",
    _logical("logical_xor", lambda a, b: a != b),
    "Logical xor of bool tensors",
    "bool",
)
# Integer tensors (bool ones too, logically); a float operand is a TypeError naming the
# operator and the dtype. Shifts by an amount outside [0, bits) give NumPy's results (te.shift_*).
bitwise_and = _make("bitwise_and", te.bitwise_and, "``lhs & rhs`` of integers", "int32")
bitwise_or = _make("bitwise_or", te.bitwise_or, "``lhs | rhs`` of integers", "int32")
bitwise_xor = _make("bitwise_xor", te.bitwise_xor, "``lhs ^ rhs`` of integers", "int32")
left_shift = _make("left_shift", te.shift_left, "``lhs << rhs`` of integers", "int32")
right_shift = _make(
    "right_shift",
    te.shift_right,
    "``lhs >> rhs`` of integers (sign-filling for signed dtypes)",
    "int32",
)


def broadcast_to(data: Tensor, shape: Sequence[Any]) -> Tensor:
    """``data`` broadcast to ``shape`` (NumPy's ``np.broadcast_to``, as a new tensor).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.broadcast_to(tvm.placeholder((3, 1), name="A"), (2, 3, 4)).shape
        (2, 3, 4)
    """
    if not isinstance(data, te.Tensor):
        raise TVMTypeError(f"data of broadcast_to must be a Tensor, found {type(data).__name__}")
    shape = list(shape)
    if len(shape) < data.ndim or broadcast_shape(data.shape, shape, "broadcast_to") != [
        const_int(d) if const_int(d) is not None else d for d in shape
    ]:
        raise TVMValueError(f"broadcast_to: shape {tuple(data.shape)} cannot broadcast to {shape}")
    return te.compute(
        shape,
        lambda *i: data[broadcast_index(data, shape, i)],
        name="T_broadcast_to",
        tag=tag.BROADCAST,
    )


def where(condition: Tensor, x: Operand, y: Operand) -> Tensor:
    """``x`` where ``condition`` is true, else ``y``, all three broadcast together.

    ``condition`` is a bool tensor (or any tensor: nonzero means true); ``x`` and ``y`` tensors or
    numbers of one dtype.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> c = tvm.placeholder((2, 3), "bool", name="c")
        >>> topi.where(c, tvm.placeholder((3,), name="x"), 0.0).shape
        (2, 3)
    """
    if not isinstance(condition, te.Tensor):
        raise TVMTypeError(f"condition of where must be a Tensor, found {type(condition).__name__}")
    xs = _operand(x, "x of where")
    ys = _operand(y, "y of where")
    shape = list(condition.shape)
    tensors = [t for t in (xs, ys) if isinstance(t, te.Tensor)]
    for t in tensors:
        shape = broadcast_shape(shape, t.shape, "where")
    if len(tensors) == 2 and tensors[0].dtype != tensors[1].dtype:
        raise TVMTypeError(
            f"where: x is {tensors[0].dtype} and y is {tensors[1].dtype}; cast one with topi.cast"
        )
    dtype = tensors[0].dtype if tensors else None

    def value(v: Tensor | te.Expr | Number, i: Sequence[Any]) -> te.Expr:
        if isinstance(v, te.Tensor):
            return v[broadcast_index(v, shape, i)]
        if not isinstance(v, te.Expr):
            return te.convert(v) if dtype is None else te.const(v, dtype)
        return v.astype(dtype) if dtype is not None and v.dtype != dtype else v

    def fcompute(*i: Any) -> te.Expr:
        c = condition[broadcast_index(condition, shape, i)]
        if c.dtype != "bool":
            c = c != te.const(0, c.dtype)
        return te.select(c, value(xs, i), value(ys, i))

    return te.compute(shape, fcompute, name="T_where", tag=tag.BROADCAST)
