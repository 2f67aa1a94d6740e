"""Forward-mode derivative of one scalar expression with respect to one tensor read.

A compute body such as ``A[i, k] * B[k, j]`` is differentiated with respect to a *site*: a
tensor and the (structurally compared) indices it is read at. Zero is ``None`` all the way
through, so terms that cannot contribute vanish before any code is built (the zero elimination
that keeps Jacobian-sized intermediates out of the gradient).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .. import _core
from ..error import TVMValueError

Expr = Any  # an IR expression (or a Python float standing for a constant)
D = Expr | None  # a derivative: None means exactly zero


class NotDifferentiable(TVMValueError):
    """An expression uses something without a derivative (lgamma, a custom reducer...)."""


def site_key(tensor: Any, indices: list[Any]) -> tuple[Any, str]:
    """The identity of a tensor read: the tensor and its indices' printed form."""
    return (tensor, repr(list(indices)))


def fn(name: str, *args: Expr) -> Expr:
    """A call of the math function ``name`` (ir/math.h)."""
    return _core.math_function(name, *args)


def add(a: D, b: D) -> D:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def neg(a: D) -> D:
    return None if a is None else -a


def mul(a: D, b: D) -> D:
    if a is None or b is None:
        return None
    if isinstance(a, float) and a == 1.0:
        return b
    if isinstance(b, float) and b == 1.0:
        return a
    return a * b


def const(value: float, dtype: str) -> Expr:
    return _core.const(value, dtype)


def sign(x: Expr) -> Expr:
    t = x.dtype
    return _core.select(x > 0, const(1.0, t), _core.select(x < 0, const(-1.0, t), const(0.0, t)))


_SQRT_PI = math.sqrt(math.pi)


# d f(x) / dx for the one-argument math functions, as an expression of x (and y = f(x)).
_UNARY: dict[str, Callable[[Expr, Expr], Expr] | None] = {
    "exp": lambda x, y: y,
    "exp2": lambda x, y: y * math.log(2.0),
    "exp10": lambda x, y: y * math.log(10.0),
    "expm1": lambda x, y: y + 1.0,
    "log": lambda x, y: 1.0 / x,
    "log2": lambda x, y: 1.0 / (x * math.log(2.0)),
    "log10": lambda x, y: 1.0 / (x * math.log(10.0)),
    "log1p": lambda x, y: 1.0 / (x + 1.0),
    "sqrt": lambda x, y: 0.5 / y,
    "rsqrt": lambda x, y: -0.5 * y / x,
    "cbrt": lambda x, y: 1.0 / (3.0 * y * y),
    "sin": lambda x, y: fn("cos", x),
    "cos": lambda x, y: -fn("sin", x),
    "tan": lambda x, y: 1.0 + y * y,
    "tanh": lambda x, y: 1.0 - y * y,
    "sigmoid": lambda x, y: y * (1.0 - y),
    "sinh": lambda x, y: fn("cosh", x),
    "cosh": lambda x, y: fn("sinh", x),
    "asin": lambda x, y: fn("rsqrt", 1.0 - x * x),
    "acos": lambda x, y: -fn("rsqrt", 1.0 - x * x),
    "atan": lambda x, y: 1.0 / (1.0 + x * x),
    "asinh": lambda x, y: fn("rsqrt", x * x + 1.0),
    "acosh": lambda x, y: fn("rsqrt", x * x - 1.0),
    "atanh": lambda x, y: 1.0 / (1.0 - x * x),
    "erf": lambda x, y: (2.0 / _SQRT_PI) * fn("exp", -(x * x)),
    "erfc": lambda x, y: (-2.0 / _SQRT_PI) * fn("exp", -(x * x)),
    "erfcx": lambda x, y: 2.0 * x * y - 2.0 / _SQRT_PI,
    "erfinv": lambda x, y: (_SQRT_PI / 2.0) * fn("exp", y * y),
    "erfcinv": lambda x, y: (-_SQRT_PI / 2.0) * fn("exp", y * y),
    "normcdfinv": lambda x, y: math.sqrt(2.0 * math.pi) * fn("exp", 0.5 * y * y),
    "normcdf": lambda x, y: (1.0 / math.sqrt(2.0 * math.pi)) * fn("exp", -0.5 * x * x),
    "abs": lambda x, y: sign(x),
    "fabs": lambda x, y: sign(x),
    "j0": lambda x, y: -fn("j1", x),
    "j1": lambda x, y: _core.select(x == 0.0, const(0.5, x.dtype), fn("j0", x) - fn("j1", x) / x),
    "y0": lambda x, y: -fn("y1", x),
    "y1": lambda x, y: fn("y0", x) - fn("y1", x) / x,
    "cyl_bessel_i0": lambda x, y: fn("cyl_bessel_i1", x),
    "cyl_bessel_i1": lambda x, y: _core.select(
        x == 0.0, const(0.5, x.dtype), fn("cyl_bessel_i0", x) - fn("cyl_bessel_i1", x) / x
    ),
    "sinpi": lambda x, y: math.pi * fn("cospi", x),
    "cospi": lambda x, y: -math.pi * fn("sinpi", x),
    # piecewise constant: zero almost everywhere (PyTorch's convention)
    "floor": None,
    "ceil": None,
    "round": None,
    "trunc": None,
    "round_half_away": None,
    "logb": None,
    "isnan": None,
    # integer bit operations (never reached: integer expressions have no derivative), listed so
    # that they are known not to have one
    "bitwise_not": None,
}

# The two-operand bit operations, likewise without a derivative.
_BITWISE = {"bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"}


def digamma(x: Expr) -> Expr:
    """psi(x) = d lgamma(x) / dx as an expression (no math library has it as a function).

    Reflection ``psi(x) = psi(1 - x) - pi / tan(pi x)`` below 1/2, then the recurrence
    ``psi(z) = psi(z + 6) - sum_{k<6} 1 / (z + k)`` and the asymptotic series at ``w = z + 6``
    (``log w - 1/(2w) - sum B_2n / (2n w^2n)``, to w^-12: below 1e-13 relative for w >= 6).
    """
    t = x.dtype
    reflect = x < 0.5
    z = _core.select(reflect, const(1.0, t) - x, x)
    shift = None
    for k in range(6):
        term = 1.0 / (z + float(k))
        shift = term if shift is None else shift + term
    w = z + 6.0
    inv2 = 1.0 / (w * w)
    # B_2n / (2n): 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760
    series = inv2 * (
        1.0 / 12
        - inv2
        * (
            1.0 / 120
            - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760))))
        )
    )
    psi = fn("log", w) - 0.5 / w - series - shift
    return _core.select(reflect, psi - math.pi / fn("tan", math.pi * x), psi)


_UNARY["lgamma"] = lambda x, y: digamma(x)
_UNARY["tgamma"] = lambda x, y: y * digamma(x)

# Functions without a derivative (none left: kept for extensions of the math library).
_NO_DERIVATIVE: set[str] = set()


def _binary(name: str, a: Expr, b: Expr, da: D, db: D, y: Expr) -> D:
    if name in _BITWISE:
        return None
    if name == "power":
        # b * a^(b - 1) is 0 * inf at a = b = 0: zero there, as PyTorch's pow backward has it
        dy_da = (
            None
            if da is None
            else mul(da, _select(b == 0.0, None, b * fn("power", a, b - 1.0), y.dtype))
        )
        # log(a) is only needed when the exponent varies. PyTorch's convention: 0 at a = 0 with
        # b >= 0 (where a^b is 0 or 1 and flat in b from the right), NaN for a negative base.
        dy_db = (
            None
            if db is None
            else mul(db, _select((a == 0.0) & (b >= 0.0), None, y * fn("log", a), y.dtype))
        )
        return add(dy_da, dy_db)
    if name == "fmod":
        return add(da, neg(mul(db, fn("trunc", a / b))))
    if name == "floor_divide":  # piecewise constant (floats' //)
        return None
    if name == "floor_mod":  # a - floor_divide(a, b) * b (floats' %)
        return add(da, neg(mul(db, fn("floor_divide", a, b))))
    if name == "remainder":
        return add(da, neg(mul(db, _core.math_function("round", a / b))))
    if name == "atan2":  # atan2(a, b) = angle of (b, a)
        r2 = a * a + b * b
        return add(mul(da, b / r2), mul(db, -a / r2))
    if name == "hypot":
        return add(mul(da, a / y), mul(db, b / y))
    if name == "copysign":
        return mul(da, sign(a) * sign(y))
    if name == "fdim":
        return _select(a > b, add(da, neg(db)), None, y.dtype)
    if name == "nextafter":
        return da
    raise NotDifferentiable(f"te.gradient: no derivative for {name}()")


def _select(cond: Expr, t: D, f: D, dtype: str, lazy: bool = False) -> D:
    if t is None and f is None:
        return None
    pick = _core.if_then_else if lazy else _core.select
    t = const(0.0, dtype) if t is None else (const(t, dtype) if isinstance(t, float) else t)
    f = const(0.0, dtype) if f is None else (const(f, dtype) if isinstance(f, float) else f)
    return pick(cond, t, f)


def _tensors_read(e: Expr, found: set[Any] | None = None) -> set[Any]:
    """The tensors ``e`` reads (an empty set for constants and variables)."""
    found = set() if found is None else found
    parts = _core.expr_parts(e)
    if parts[0] == "TensorRead":
        found.add(parts[1])
    for part in parts[1:]:
        for item in part if isinstance(part, list) else [part]:
            if isinstance(item, _core.Expr):
                _tensors_read(item, found)
    return found


def _min_max(kind: str, a: Expr, b: Expr, key: tuple[Any, str], dtype: str) -> D:
    """d max(a, b) (or min) with PyTorch's conventions where the two operands meet.

    Against a constant (``max(x, 0)`` is relu, ``min(max(x, lo), hi)`` hardtanh) the gradient
    stops at the kink, as ``torch.relu`` and ``F.hardtanh`` do, and passes through a NaN. Within
    one tensor (a pooling window written as a chain of maxima) a tie goes to the first operand,
    as ``F.max_pool2d``'s does to the first maximum of a window. Between different tensors a
    tie splits the gradient evenly and a NaN passes it to both, as ``torch.maximum``/
    ``torch.minimum`` do.
    """
    da, db = derivative(a, key), derivative(b, key)
    if da is None and db is None:
        return None
    a_wins, b_wins = (a > b, a < b) if kind == "Max" else (a < b, a > b)
    reads_a, reads_b = _tensors_read(a), _tensors_read(b)
    if not reads_b:  # b is a constant: da except where b is the result, ties included
        return _select(a <= b if kind == "Max" else a >= b, None, da, dtype)
    if not reads_a:
        return _select(b <= a if kind == "Max" else b >= a, None, db, dtype)
    if reads_a == reads_b and len(reads_a) == 1:  # a NaN is the result: its gradient
        return _select(b_wins | (b != b), db, da, dtype)
    # torch.maximum's rule: the larger operand takes the gradient, a tie splits it, and where
    # a NaN is involved (neither wins, not equal) both take it whole
    both = add(da, db)
    half = mul(both, 0.5)
    return _select(
        a_wins, da, _select(b_wins, db, _select(a == b, half, both, dtype), dtype), dtype
    )


def derivative(e: Expr, key: tuple[Any, str]) -> D:
    """d e / d (the read ``key``), or None where it is zero."""
    parts = _core.expr_parts(e)
    kind = parts[0]
    if kind == "TensorRead":
        return 1.0 if site_key(parts[1], parts[2]) == key else None
    if kind in ("IntImm", "FloatImm", "Var", "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or"):
        return None
    if kind == "Not":
        return None
    if not e.dtype.startswith(("float", "bfloat")) and kind != "Cast":
        return None
    if kind == "Add":
        return add(derivative(parts[1], key), derivative(parts[2], key))
    if kind == "Sub":
        return add(derivative(parts[1], key), neg(derivative(parts[2], key)))
    if kind == "Mul":
        a, b = parts[1], parts[2]
        return add(mul(derivative(a, key), b), mul(a, derivative(b, key)))
    if kind == "Div":
        a, b = parts[1], parts[2]
        da, db = derivative(a, key), derivative(b, key)
        return add(None if da is None else da / b, None if db is None else -(db * a) / (b * b))
    if kind in ("Min", "Max"):
        return _min_max(kind, parts[1], parts[2], key, e.dtype)
    if kind == "Select":
        return _select(parts[1], derivative(parts[2], key), derivative(parts[3], key), e.dtype)
    if kind == "Cast":
        inner = parts[1]
        if not (
            e.dtype.startswith(("float", "bfloat")) and inner.dtype.startswith(("float", "bfloat"))
        ):
            return None
        d = derivative(inner, key)
        return None if d is None else (d.astype(e.dtype) if hasattr(d, "astype") else d)
    if kind == "Let":
        return derivative(_core.substitute(parts[3], [(parts[1], parts[2])]), key)
    if kind in ("FloorDiv", "FloorMod", "Mod"):
        if kind == "FloorMod":  # a - floor(a / b) * b
            a, b = parts[1], parts[2]
            return add(derivative(a, key), neg(mul(derivative(b, key), fn("floor", a / b))))
        return None
    if kind == "Call":
        return _call(e, parts[1], parts[2], key)
    if kind == "Reduce":
        raise NotDifferentiable("te.gradient: a reduction nested inside an expression")
    raise NotDifferentiable(f"te.gradient: cannot differentiate a {kind} node ({e})")


def _call(e: Expr, name: str, args: list[Expr], key: tuple[Any, str]) -> D:
    if name == "if_then_else":  # guards reads outside a tensor: keep it lazy
        return _select(
            args[0], derivative(args[1], key), derivative(args[2], key), e.dtype, lazy=True
        )
    ds = [derivative(a, key) for a in args]
    if all(d is None for d in ds):
        return None
    if name in _NO_DERIVATIVE:
        raise NotDifferentiable(f"te.gradient: no derivative for {name}()")
    if len(args) == 1:
        if name not in _UNARY:
            raise NotDifferentiable(f"te.gradient: no derivative for {name}()")
        rule = _UNARY[name]
        return None if rule is None else mul(ds[0], rule(args[0], e))
    if name == "fma":
        a, b, _c = args
        return add(add(mul(ds[0], b), mul(a, ds[1])), ds[2])
    return _binary(name, args[0], args[1], ds[0], ds[1], e)
