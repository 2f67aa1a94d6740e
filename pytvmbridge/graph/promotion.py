"""PyTorch's type promotion for the graph compiler: the operands of an arithmetic operator, a
comparison, ``where`` or ``cat`` cast to the dtype PyTorch computes it in.

topi's binary operators take operands of one dtype. PyTorch promotes: an int64 position plus a
float32 offset is float32, a bool mask times a float32 tensor is float32, the sum of a bool
tensor is int64, ``int_tensor > 0.5`` compares in float32. The traced node knows the answer (its
result's dtype; for a comparison, ``torch.result_type`` of its operands), so each operand that
differs is cast to it before the converter runs. A cast is an injective stage the automatic
schedule inlines. Mixed floating-point dtypes are not promoted here: such a node stays in
PyTorch (the partitioner's one-float-dtype rule), since PyTorch's 16-bit kernels compute in
float32 with the wider operand unrounded.

Example:
    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> from pytvmbridge.graph.promotion import computation_dtype
    >>> gm = make_fx(lambda i, x: i + x, tracing_mode="fake")(
    ...     torch.arange(3), torch.ones(3))
    >>> add = next(n for n in gm.graph.nodes if n.op == "call_function")
    >>> computation_dtype(add)
    torch.float32
"""

from __future__ import annotations

from typing import Any

import torch

from .. import te, topi

aten = torch.ops.aten

#: Integer dtypes a kernel reads and computes (bool is separate: masks and conditions).
INTEGER_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)

DTYPE_NAMES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int16: "int16",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
}

# Operators computed in their result's dtype.
TO_RESULT = {
    aten.add.Tensor,
    aten.add.Scalar,
    aten.sub.Tensor,
    aten.sub.Scalar,
    aten.mul.Tensor,
    aten.mul.Scalar,
    aten.div.Tensor,
    aten.div.Scalar,
    aten.div.Tensor_mode,
    aten.true_divide.Tensor,
    aten.maximum.default,
    aten.minimum.default,
    aten.rsub.Scalar,
    aten.neg.default,
    aten.abs.default,
    aten.clamp.default,
    aten.sum.default,
    aten.sum.dim_IntList,
    aten.mean.default,
    aten.mean.dim,
    aten.cat.default,
    aten.where.self,
    aten.fmod.Tensor,
    aten.fmod.Scalar,
    aten.remainder.Tensor,
    aten.remainder.Scalar,
    aten.cumsum.default,
    aten.cumprod.default,
}
# Operators computed in their operands' promoted dtype, with a bool result.
TO_OPERANDS = {
    getattr(getattr(aten, name), overload)
    for name in ("gt", "lt", "ge", "le", "eq", "ne")
    for overload in ("Tensor", "Scalar")
}


# Floating dtypes each converts to exactly (every value representable): a narrower operand cast
# to the result's dtype is what PyTorch computes with.
_EXACTLY_IN = {
    torch.float16: {torch.float32, torch.float64},
    torch.bfloat16: {torch.float32, torch.float64},
    torch.float32: {torch.float64},
}


def widens_floats(node: torch.fx.Node) -> bool:
    """Whether ``node`` (an operator promoted here) mixes floating dtypes only by widening: every
    floating operand converts exactly to the dtype it is computed in (``half * float32`` in
    float32, an RMS norm's float32 statistics times its half input). A narrower result, from a
    0-d tensor of a wider dtype beside a dimensioned one (PyTorch keeps the tensor's dtype and
    computes with the 0-d value unrounded), is not."""
    if node.target not in TO_RESULT and node.target not in TO_OPERANDS:
        return False
    dtype = computation_dtype(node)
    if dtype is None or not dtype.is_floating_point:
        return False
    values = [_example(v) for v in node.all_input_nodes]
    return all(
        v.dtype == dtype or not v.dtype.is_floating_point or dtype in _EXACTLY_IN.get(v.dtype, ())
        for v in values
        if isinstance(v, torch.Tensor)
    )


def _example(value: Any) -> Any:
    """The traced value of an FX argument (a FakeTensor, or a Python number as it is)."""
    if isinstance(value, torch.fx.Node):
        return value.meta.get("val")
    return value


def computation_dtype(node: torch.fx.Node) -> torch.dtype | None:
    """The dtype PyTorch computes ``node`` in, or None when it is not one this module promotes
    (or the traced values are missing)."""
    if node.target in TO_OPERANDS:
        a, b = (_example(v) for v in node.args[:2])
        if a is None or b is None:
            return None
        return torch.result_type(a, b)
    val = node.meta.get("val")
    if node.target in TO_RESULT and isinstance(val, torch.Tensor):
        return val.dtype
    return None


def integer_operands(node: torch.fx.Node) -> bool:
    """Whether ``node``'s first two arguments are integer tensors or Python ints."""
    values = [_example(v) for v in node.args[:2]]
    return all(
        (isinstance(v, torch.Tensor) and v.dtype in INTEGER_DTYPES)
        or (isinstance(v, (int, torch.SymInt)) and not isinstance(v, bool))
        for v in values
    )


def number(value: Any, dtype: str) -> te.Expr:
    """A Python number as PyTorch converts it to a tensor of ``dtype``: to an integer dtype
    with wraparound (``uint8_tensor + (-1)`` adds 255, ``int8_tensor % 300`` takes 44), a
    float truncated toward zero; to bool, nonzero.

    Example:
        >>> number(-1, "uint8").value, number(300, "int8").value, number(2.7, "int32").value
        (255, 44, 2)
    """
    if isinstance(value, te.Expr):  # a symbolic size (scalar_tensor(H * W) of group norm's grad)
        if dtype == "bool":
            return value != te.const(0, value.dtype)
        return value if value.dtype == dtype else value.astype(dtype)
    if dtype == "bool":
        return te.const(bool(value), "bool")
    if dtype.startswith(("float", "bfloat")):
        return te.const(float(value), dtype)
    bits = int(dtype.lstrip("uint"))
    whole = int(value)  # ValueError/OverflowError for NaN/inf: the caller refuses the node
    whole %= 1 << bits
    if dtype.startswith("int") and whole >= 1 << (bits - 1):
        whole -= 1 << bits
    return te.const(whole, dtype)


def cast_to(value: te.Tensor, dtype: str) -> te.Tensor:
    """``value`` in ``dtype`` (to bool: nonzero, as PyTorch converts)."""
    if value.dtype == dtype:
        return value
    if dtype == "bool":
        return topi.not_equal(value, te.const(0, value.dtype))
    return topi.cast(value, dtype)


def promote(
    node: torch.fx.Node, args: tuple, kwargs: dict, shape: list[Any] | None = None
) -> tuple[tuple, dict]:
    """``args`` with each tensor operand cast to :func:`computation_dtype` (a PREPARE step of
    :mod:`.ops`); ``where``'s condition stays bool."""
    dtype = computation_dtype(node)
    if dtype is None or dtype not in DTYPE_NAMES:
        return args, kwargs
    name = DTYPE_NAMES[dtype]
    skip = 1 if node.target is aten.where.self else 0

    def cast(value: Any) -> Any:
        if isinstance(value, te.Tensor):
            return cast_to(value, name)
        if isinstance(value, (list, tuple)):
            return type(value)(cast(v) for v in value)
        return value

    return (*args[:skip], *(cast(a) for a in args[skip:])), kwargs


__all__ = [
    "DTYPE_NAMES",
    "INTEGER_DTYPES",
    "TO_OPERANDS",
    "TO_RESULT",
    "cast_to",
    "computation_dtype",
    "integer_operands",
    "number",
    "promote",
    "widens_floats",
]
