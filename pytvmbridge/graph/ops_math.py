"""ATen converters: elementwise mathematics beyond ops.py's table.

Rounding, log1p/expm1, elu, sign, powers and remainders with tensor operands, inverse
trigonometric and hyperbolic functions, tensor clamp bounds, tests of floats (isnan, signbit)
and logical operators.

Registered into :data:`pytvmbridge.graph.ops.CONVERTERS` when :mod:`pytvmbridge.graph.ops` is
imported.

Every floating operator here computes a float16/bfloat16 tensor in float32 and rounds once, as
PyTorch's CPU kernels do: a single math function is widened by the code generator itself, a
formula of several steps (elu, ``round(decimals=)``) through :func:`.ops.in_float32`. The
transcendental functions (``atan2``, ``tan``, ``asin``...) call the C library's, accurate to an
ulp or two, as PyTorch's do. Results follow PyTorch where it differs from C or NumPy:
``sign(NaN)`` is 0, ``remainder`` takes the divisor's sign (an exact 0 keeps the dividend's,
``remainder(-4., 2.)`` is -0.0), ``round`` rounds halves to even.

Example:
    >>> import torch
    >>> from pytvmbridge.graph.ops import CONVERTERS
    >>> torch.ops.aten.expm1.default in CONVERTERS, torch.ops.aten.atan2.default in CONVERTERS
    (True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .. import te, topi
from ..topi.broadcast import broadcast_index, broadcast_shape
from .layout import through_blocks
from .ops import ACCEPTS, ELEMENTWISE, OTHER_DTYPES, _register, _scalar, in_float32
from .promotion import INTEGER_DTYPES, integer_operands, number

aten = torch.ops.aten

ExprFn = Callable[..., te.Expr]


def _map(x: te.Tensor, fn: ExprFn, name: str) -> te.Tensor:
    """``fn`` applied to every element of ``x`` (an injective stage)."""
    return te.compute(x.shape, lambda *i: fn(x[i]), name=f"T_{name}", tag="injective")


def _zip(fn: ExprFn, name: str, *operands: Any) -> te.Tensor:
    """``fn`` of the operands' elements, tensors broadcast together; a Python number takes the
    first tensor's dtype (PyTorch's rule for a number beside a tensor of a floating dtype)."""
    tensors = [a for a in operands if isinstance(a, te.Tensor)]
    shape: list = list(tensors[0].shape)
    for t in tensors[1:]:
        shape = broadcast_shape(shape, t.shape, name)
    values = [_scalar(a, tensors[0]) for a in operands]

    def fcompute(*i: Any) -> te.Expr:
        args = [v[broadcast_index(v, shape, i)] if isinstance(v, te.Tensor) else v for v in values]
        return fn(*args)

    return te.compute(shape, fcompute, name=f"T_{name}", tag="injective")


def _floating(node: torch.fx.Node, *positions: int) -> bool:
    """Whether the tensor arguments at ``positions`` of ``node`` are of a floating dtype."""
    vals = [node.args[p].meta["val"] for p in positions if isinstance(node.args[p], torch.fx.Node)]
    return all(v.dtype.is_floating_point for v in vals)


# --- one float tensor in, one out: a math function of each element -----------------------------

_FUNCTIONS: dict[Any, ExprFn] = {
    aten.log1p.default: te.log1p,
    aten.expm1.default: te.expm1,
    aten.log2.default: te.log2,
    aten.log10.default: te.log10,
    aten.exp2.default: te.exp2,
    aten.floor.default: te.floor,
    aten.ceil.default: te.ceil,
    aten.round.default: te.round,  # halves to even, as PyTorch's
    aten.trunc.default: te.trunc,
    aten.tan.default: te.tan,
    aten.atan.default: te.atan,
    aten.asin.default: te.asin,
    aten.acos.default: te.acos,
    aten.sinh.default: te.sinh,
    aten.cosh.default: te.cosh,
    aten.asinh.default: te.asinh,
    aten.acosh.default: te.acosh,
    aten.atanh.default: te.atanh,
    aten.erfc.default: te.erfc,
}


def _function_converter(fn: ExprFn, name: str) -> Callable[..., te.Tensor]:
    @through_blocks
    def convert(x: te.Tensor) -> te.Tensor:
        return _map(x, fn, name)

    return convert


for _target, _fn in _FUNCTIONS.items():
    _register(_target)(_function_converter(_fn, _target.__name__.split(".")[0]))


@_register(aten.sign.default, aten.sgn.default)
@through_blocks
def _sign(x: te.Tensor) -> te.Tensor:
    # PyTorch's sign of NaN is 0 (not NaN as NumPy's), and of -0.0 is +0.0; of a bool, itself.
    if x.dtype == "bool":
        return topi.identity(x)

    def fn(v: te.Expr) -> te.Expr:
        one, zero = te.const(1, v.dtype), te.const(0, v.dtype)
        if v.dtype.startswith("uint"):
            return te.select(v > zero, one, zero)
        return te.select(v > zero, one, te.select(v < zero, te.const(-1, v.dtype), zero))

    return _map(x, fn, "sign")


# (DeBERTa-v2's log-bucketed relative positions take the sign of integer distances)
for _target in (aten.sign.default, aten.sgn.default):
    OTHER_DTYPES[_target] = (*INTEGER_DTYPES, torch.bool)


@_register(aten.round.decimals)
@through_blocks
@in_float32
def _round_decimals(x: te.Tensor, decimals: int = 0) -> te.Tensor:
    # PyTorch's order: scale by a power of ten, round halves to even, undo the scaling (a
    # division for decimals > 0, so that 0.35 * 10 / 10 is 0.35 again, a product below 0).
    if decimals == 0:
        return _map(x, te.round, "round")
    scale = te.const(10.0 ** abs(decimals), x.dtype)
    if decimals > 0:
        return _map(x, lambda v: te.round(v * scale) / scale, "round")
    return _map(x, lambda v: te.round(v / scale) * scale, "round")


# 10 ** 309 and beyond overflow a double (PyTorch's scale becomes inf, its result NaN): those
# stay in PyTorch
ACCEPTS[aten.round.decimals] = lambda node: (
    isinstance(node.kwargs.get("decimals", 0), int) and abs(node.kwargs.get("decimals", 0)) <= 300
)


@_register(aten.elu.default)
@through_blocks
@in_float32
def _elu(x: te.Tensor, alpha: Any = 1, scale: Any = 1, input_scale: Any = 1) -> te.Tensor:
    """``aten.elu`` (ELU, SELU and CELU): ``scale * x`` above 0, else
    ``alpha * scale * expm1(input_scale * x)``; a NaN stays NaN."""
    negative = te.const(float(alpha) * float(scale), x.dtype)
    positive = te.const(float(scale), x.dtype)
    inner = te.const(float(input_scale), x.dtype)

    def fn(v: te.Expr) -> te.Expr:
        return te.select(v <= te.const(0.0, v.dtype), te.expm1(v * inner) * negative, v * positive)

    return _map(x, fn, "elu")


# --- powers, remainders, angles, bounds: two (or three) operands, broadcast -------------------


@_register(aten.pow.Tensor_Tensor)
@through_blocks
def _pow_tensors(x: te.Tensor, exponent: te.Tensor) -> te.Tensor:
    return _zip(te.power, "pow", x, exponent)


@_register(aten.pow.Scalar)
@through_blocks
def _pow_number(base: Any, exponent: te.Tensor) -> te.Tensor:
    # The base is rounded to the tensor's dtype first (PyTorch wraps it in a tensor of the
    # result's dtype): 0.1 ** x of a float16 x raises float16(0.1).
    return _zip(te.power, "pow", _scalar(base, exponent), exponent)


ACCEPTS[aten.pow.Tensor_Tensor] = lambda node: _floating(node, 0, 1)
ACCEPTS[aten.pow.Scalar] = lambda node: isinstance(node.args[0], (int, float))


def _integer_remainder(fn: Callable, x: Any, other: Any) -> te.Tensor | None:
    """``fn`` of integer operands (promoted to one dtype, promotion.py), else None; a divisor
    of 0 gives 0 (PyTorch raises; a kernel cannot)."""
    like = x if isinstance(x, te.Tensor) else other
    if not like.dtype.startswith(("int", "uint")):
        return None

    def operand(v: Any) -> Any:
        if isinstance(v, te.Tensor):
            return v
        if isinstance(v, te.Expr):  # a symbolic size (roll over a dynamic length)
            return v if v.dtype == like.dtype else v.astype(like.dtype)
        return number(v, like.dtype)

    return fn(operand(x), operand(other))


@_register(aten.fmod.Tensor, aten.fmod.Scalar)
@through_blocks
def _fmod(x: te.Tensor, other: Any) -> te.Tensor:
    """C's ``fmod``: the remainder with the dividend's sign (exact, no rounding); of integers,
    truncated division's."""
    integer = _integer_remainder(topi.trunc_mod, x, other)
    return integer if integer is not None else _zip(te.fmod, "fmod", x, other)


def _python_remainder(a: te.Expr, b: te.Expr) -> te.Expr:
    # PyTorch's kernel: fmod, then one divisor more where a nonzero remainder's sign differs
    # from the divisor's (an exact 0 keeps fmod's sign: remainder(-4., 2.) is -0.0).
    mod = te.fmod(a, b)
    zero = te.const(0.0, mod.dtype)
    differ = te.all(mod != zero, (b < zero) != (mod < zero))
    return te.select(differ, mod + b, mod)


@_register(aten.remainder.Tensor, aten.remainder.Scalar)
@through_blocks
def _remainder(x: te.Tensor, other: Any) -> te.Tensor:
    """Python's ``%``: the remainder with the divisor's sign (of integers, floored
    division's)."""
    integer = _integer_remainder(topi.floor_mod, x, other)
    if integer is not None:
        return integer
    if isinstance(x, te.Tensor) and isinstance(other, (int, float)):
        # PyTorch rounds the number to the tensor's dtype first (0.7 as bfloat16 is 0.69921875),
        # then computes in float32: rounded after the cast to float32 it was a divisor off
        other = number(other, x.dtype)
    return _float_remainder(x, other)


@in_float32
def _float_remainder(x: Any, other: Any) -> te.Tensor:
    return _zip(_python_remainder, "remainder", x, other)


# integer tensors (and ints) too: ops_index.py lets them in, promotion.py casts to one dtype
for _target in (aten.fmod.Tensor, aten.remainder.Tensor):
    ACCEPTS[_target] = lambda node: _floating(node, 0, 1) or integer_operands(node)


def _number_or_size(node: torch.fx.Node) -> bool:
    other = node.args[1]
    if isinstance(other, torch.fx.Node):  # a symbolic size, of an integer tensor only
        return isinstance(other.meta.get("val"), torch.SymInt) and integer_operands(node)
    return isinstance(other, (int, float))


for _target in (aten.fmod.Scalar, aten.remainder.Scalar):
    ACCEPTS[_target] = _number_or_size


@_register(aten.atan2.default)
@through_blocks
def _atan2(y: te.Tensor, x: te.Tensor) -> te.Tensor:
    return _zip(te.atan2, "atan2", y, x)


@_register(aten.copysign.Tensor)
@through_blocks
def _copysign(x: te.Tensor, other: te.Tensor) -> te.Tensor:
    return _zip(te.copysign, "copysign", x, other)


@_register(aten.hypot.default)
@through_blocks
def _hypot(x: te.Tensor, other: te.Tensor) -> te.Tensor:
    return _zip(te.hypot, "hypot", x, other)


@_register(aten.clamp.Tensor)
@through_blocks
def _clamp_tensor(x: te.Tensor, min: Any = None, max: Any = None) -> te.Tensor:
    """``clamp`` with tensor bounds, broadcast with ``x``: ``min(max(x, lo), hi)`` (a bound
    above the other gives ``hi``); a NaN in ``x`` or a bound gives NaN (te.max's rule, as
    PyTorch's)."""
    operands = [x] + [b for b in (min, max) if b is not None]

    def clamp(v: te.Expr, *bounds: te.Expr) -> te.Expr:
        rest = list(bounds)
        if min is not None:
            v = te.max(v, rest.pop(0))
        if max is not None:
            v = te.min(v, rest.pop(0))
        return v

    return _zip(clamp, "clamp", *operands)


def _clamp_accepts(node: torch.fx.Node) -> bool:
    bounds = [*node.args[1:], *node.kwargs.values()]
    return any(b is not None for b in bounds) and all(
        b is None or isinstance(b, torch.fx.Node) for b in bounds
    )


ACCEPTS[aten.clamp.Tensor] = _clamp_accepts


for _target in (aten.atan2.default, aten.copysign.Tensor, aten.hypot.default):
    ACCEPTS[_target] = lambda node: _floating(node, 0, 1)


# --- bool results: tests of floats, and logic --------------------------------------------------


def _truth(v: te.Expr) -> te.Expr:
    """A bool operand as it is, a float one as PyTorch reads it (nonzero, NaN included)."""
    return v if v.dtype == "bool" else v != te.const(0.0, v.dtype)


@_register(aten.logical_not.default)
def _logical_not(x: te.Tensor) -> te.Tensor:
    return _map(x, lambda v: ~_truth(v), "logical_not")


_LOGIC: dict[Any, ExprFn] = {
    aten.logical_and.default: lambda a, b: _truth(a) & _truth(b),
    aten.logical_or.default: lambda a, b: _truth(a) | _truth(b),
    aten.logical_xor.default: lambda a, b: _truth(a) != _truth(b),
}


def _logic_converter(fn: ExprFn, name: str) -> Callable[..., te.Tensor]:
    def convert(a: te.Tensor, b: te.Tensor) -> te.Tensor:
        return _zip(fn, name, a, b)

    return convert


for _target, _fn in _LOGIC.items():
    _register(_target)(_logic_converter(_fn, _target.__name__.split(".")[0]))


@_register(aten.bitwise_not.default)
def _bitwise_not(x: te.Tensor) -> te.Tensor:
    return _map(x, lambda v: ~v, "bitwise_not")


@_register(aten.bitwise_xor.Tensor)
def _bitwise_xor(a: te.Tensor, b: te.Tensor) -> te.Tensor:
    return _zip(lambda u, v: u != v, "bitwise_xor", a, b)


def _bool_tensors(node: torch.fx.Node) -> bool:
    return all(a.meta["val"].dtype == torch.bool for a in node.all_input_nodes)


ACCEPTS[aten.bitwise_not.default] = _bool_tensors
ACCEPTS[aten.bitwise_xor.Tensor] = lambda node: _bool_tensors(node) and len(node.args) == 2
for _target in (*_LOGIC, aten.logical_not.default):
    ACCEPTS[_target] = lambda node: all(isinstance(a, torch.fx.Node) for a in node.args)


@_register(aten.isnan.default)
def _isnan(x: te.Tensor) -> te.Tensor:
    return _map(x, te.isnan, "isnan")


@_register(aten.isinf.default)
def _isinf(x: te.Tensor) -> te.Tensor:
    return _map(x, te.isinf, "isinf")


@_register(aten.signbit.default)
def _signbit(x: te.Tensor) -> te.Tensor:
    # the sign bit itself: true for -0.0 and a negative NaN
    return _map(x, lambda v: te.copysign(te.const(1.0, v.dtype), v) < te.const(0.0, v.dtype),
                "signbit")  # fmt: skip


for _target in (
    *_LOGIC,
    aten.logical_not.default,
    aten.bitwise_not.default,
    aten.bitwise_xor.Tensor,
    aten.isnan.default,
    aten.isinf.default,
    aten.signbit.default,
):
    OTHER_DTYPES[_target] = (torch.bool,)
# bool results of floats only (bool is allowed above for the logical operators' inputs)
for _target in (aten.isnan.default, aten.isinf.default, aten.signbit.default):
    ACCEPTS[_target] = lambda node: _floating(node, 0)


# A reshape commutes with these as with ops.py's elementwise operators (see :mod:`.views`).
ELEMENTWISE.update(
    {
        *_FUNCTIONS,
        aten.sign.default,
        aten.sgn.default,
        aten.round.decimals,
        aten.elu.default,
        aten.fmod.Scalar,
        aten.remainder.Scalar,
    }
)
