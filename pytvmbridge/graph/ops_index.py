"""ATen converters: indexing, dtype casts, integer tensors and constructed tensors.

- **Integer and bool tensors** enter kernels through the operators that take them (registered
  in :data:`.ops.OTHER_DTYPES` here): views and copies of any dtype; arithmetic, comparisons,
  ``where`` and ``cat`` with PyTorch's type promotion (:mod:`.promotion`: ``positions + 0.5``
  is float32, ``mask * x`` reads the bool mask as 0/1); integer division by zero gives 0 in a
  kernel where PyTorch raises (a kernel cannot raise).
- **Casts**: ``_to_copy`` with a dtype (to bool: nonzero; float to integer truncates).
- **Constructed tensors**: ``arange``, ``full``, ``full_like`` (the dtype PyTorch traced).
- **Indexing**: ``embedding``, ``index_select``, ``gather``, ``index.Tensor`` with integer
  index tensors (bool masks, whose result size depends on the data, stay in PyTorch),
  ``flip``, ``repeat``. A negative index counts from the end as in PyTorch; an index still out
  of range is clamped to the nearest end (PyTorch raises; a kernel cannot, and must not read
  outside the tensor).

Example:
    >>> import torch
    >>> from pytvmbridge.graph.ops import CONVERTERS
    >>> torch.ops.aten.embedding.default in CONVERTERS
    True
"""

from __future__ import annotations

from typing import Any

import torch

from .. import te, topi
from ..topi.utils import const_int, same_dim
from .ops import ACCEPTS, CONVERTERS, OTHER_DTYPES, PREPARE, _axis, _register, in_float32
from .ops_math import _zip
from .promotion import (
    DTYPE_NAMES,
    INTEGER_DTYPES,
    TO_OPERANDS,
    TO_RESULT,
    cast_to,
    number,
    promote,
)

aten = torch.ops.aten

_ANY_DTYPE = (*INTEGER_DTYPES, torch.bool)


def _allow(target: Any, dtypes: tuple[torch.dtype, ...]) -> None:
    """Let ``target`` read and give ``dtypes`` besides the floating ones (kept with any the
    table already lists)."""
    have = OTHER_DTYPES.get(target, ())
    OTHER_DTYPES[target] = have + tuple(d for d in dtypes if d not in have)


def _result_dtype(
    node: torch.fx.Node, args: tuple, kwargs: dict, shape: list[Any] | None = None
) -> tuple[tuple, dict]:
    """PREPARE step: the converter gets the traced result's dtype as ``result_dtype``."""
    return args, {**kwargs, "result_dtype": DTYPE_NAMES[node.meta["val"].dtype]}


def _result_dtype_and_shape(
    node: torch.fx.Node, args: tuple, kwargs: dict, shape: list[Any] | None = None
) -> tuple[tuple, dict]:
    """PREPARE step: the traced result's dtype and shape (``result_shape``, sizes as TE)."""
    args, kwargs = _result_dtype(node, args, kwargs)
    return args, {**kwargs, "result_shape": shape}


def _example_of(value: Any) -> Any:
    return value.meta.get("val") if isinstance(value, torch.fx.Node) else value


def _traced_dtype_known(node: torch.fx.Node) -> bool:
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and val.dtype in DTYPE_NAMES


# --- views, copies and arithmetic of any dtype ------------------------------------------------

_VIEWS = (
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.permute.default,
    aten.t.default,
    aten.transpose.int,
    aten.expand.default,
    aten.unsqueeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.slice.Tensor,
    aten.select.int,
    aten.split.Tensor,
    aten.split_with_sizes.default,
    aten.clone.default,
    aten.alias.default,
    aten.cat.default,
)
for _target in _VIEWS:
    _allow(_target, _ANY_DTYPE)

# bool operands of arithmetic read as 0/1; a bool result of arithmetic (bool + bool) is not
# computed here: its operands would be promoted to bool, not added
_ARITHMETIC = TO_RESULT - {aten.cat.default, aten.where.self}
# (cumulative sums and products of integers and bools: int64, as PyTorch's)
for _target in _ARITHMETIC:
    _allow(_target, _ANY_DTYPE)
for _target in (*TO_OPERANDS, aten.where.self):
    _allow(_target, _ANY_DTYPE)
_allow(aten.relu.default, INTEGER_DTYPES)  # (cumprod's backward clamps integer positions)


# PyTorch refuses these of a bool tensor (an error at run time, which a compiled kernel would
# not raise): they stay in PyTorch
_NO_BOOL_OPERAND = {aten.sub.Tensor, aten.sub.Scalar, aten.rsub.Scalar, aten.neg.default}


# Of bools, PyTorch's * and min are "and", + and max are "or" (isfinite and logaddexp decompose
# into a product of two masks).
_BOOL_LOGIC = {
    aten.mul.Tensor: topi.logical_and,
    aten.minimum.default: topi.logical_and,
    aten.add.Tensor: topi.logical_or,
    aten.maximum.default: topi.logical_or,
}


def _bool_logic(target: Any, numeric: Any) -> Any:
    logic = _BOOL_LOGIC[target]

    def convert(a: Any, b: Any, **kwargs: Any) -> Any:
        if isinstance(a, te.Tensor) and isinstance(b, te.Tensor) and a.dtype == b.dtype == "bool":
            return logic(a, b)
        return numeric(a, b, **kwargs)

    return convert


for _target in _BOOL_LOGIC:
    CONVERTERS[_target] = _bool_logic(_target, CONVERTERS[_target])


def _arithmetic_accepts(node: torch.fx.Node, before: Any = None) -> bool:
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor) and val.dtype == torch.bool:
        # and/or of two bool tensors (an alpha of 1)
        operands = [getattr(_example_of(a), "dtype", None) for a in node.args[:2]]
        return (
            node.target in _BOOL_LOGIC
            and operands == [torch.bool, torch.bool]
            and node.kwargs.get("alpha", 1) == 1
        )
    if node.target in _NO_BOOL_OPERAND and any(
        getattr(a.meta.get("val"), "dtype", None) == torch.bool for a in node.all_input_nodes
    ):
        return False
    return before is None or bool(before(node))


_MODS = {aten.fmod.Tensor, aten.fmod.Scalar, aten.remainder.Tensor, aten.remainder.Scalar}
# ops.py's checks of these operators, defined before it imports this module (fmod and
# remainder check their integer operands themselves: ops_math.py)
for _target in _ARITHMETIC - _MODS:
    _before = ACCEPTS.get(_target)
    ACCEPTS[_target] = lambda node, _b=_before: _arithmetic_accepts(node, _b)
for _target in TO_RESULT | TO_OPERANDS:
    PREPARE[_target] = promote


def _floor_divide_floats(a: te.Expr, b: te.Expr) -> te.Expr:
    # PyTorch's rule, not floor(a / b): the quotient of a - fmod(a, b), which is exact, moved
    # down one where the remainder's sign differs from the divisor's and rounded to the nearest
    # integer (floor(a / b) is off by one where a / b rounds up to an integer: 1 // 0.1 is 9)
    zero, one = te.const(0.0, a.dtype), te.const(1.0, a.dtype)
    mod = te.fmod(a, b)
    quotient = (a - mod) / b
    quotient = te.select(te.all(mod != zero, (b < zero) != (mod < zero)), quotient - one, quotient)
    floored = te.floor(quotient)
    rounded = te.select(quotient - floored > te.const(0.5, a.dtype), floored + one, floored)
    signed_zero = te.copysign(zero, a / b)
    result = te.select(quotient != zero, rounded, signed_zero)
    return te.select(b == zero, a / b, result)


@_register(aten.div.Tensor_mode)
def _div_mode(a: Any, b: Any, rounding_mode: str | None = None) -> te.Tensor:
    like = a if isinstance(a, te.Tensor) else b
    if not like.dtype.startswith(("float", "bfloat")):
        a, b = (number(v, like.dtype) if not isinstance(v, te.Tensor) else v for v in (a, b))
        return (topi.floor_divide if rounding_mode == "floor" else topi.trunc_divide)(a, b)
    return _div_floats(a, b, rounding_mode=rounding_mode)


@in_float32
def _div_floats(a: Any, b: Any, rounding_mode: str | None = None) -> te.Tensor:
    if rounding_mode == "trunc":
        return _zip(lambda x, y: te.trunc(x / y), "trunc_divide", a, b)
    return _zip(_floor_divide_floats, "floor_divide", a, b)


def _div_mode_accepts(node: torch.fx.Node) -> bool:
    mode = node.kwargs.get("rounding_mode", node.args[2] if len(node.args) > 2 else None)
    return mode in ("trunc", "floor")


ACCEPTS[aten.div.Tensor_mode] = _div_mode_accepts


# --- casts ----------------------------------------------------------------------------------


@_register(aten._to_copy.default)
def _to_copy(x: te.Tensor, result_dtype: str, **_: Any) -> te.Tensor:
    if x.dtype == result_dtype:
        return topi.identity(x)
    return cast_to(x, result_dtype)


def _to_copy_accepts(node: torch.fx.Node) -> bool:
    source = node.args[0].meta["val"]
    device = node.kwargs.get("device")
    layout = node.kwargs.get("layout")
    return (
        _traced_dtype_known(node)
        and (device is None or torch.device(device) == source.device)
        and layout in (None, torch.strided)
        and not node.kwargs.get("pin_memory")
    )


ACCEPTS[aten._to_copy.default] = _to_copy_accepts
PREPARE[aten._to_copy.default] = _result_dtype
_allow(aten._to_copy.default, _ANY_DTYPE)

# true_divide is div (a decomposition's spelling)
CONVERTERS[aten.true_divide.Tensor] = CONVERTERS[aten.div.Tensor]

# The same cast as a prim (some decompositions' backward graphs: group norm's over symbolic
# image sizes)
_CONVERT = torch.ops.prims.convert_element_type.default
_register(_CONVERT)(lambda x, dtype, result_dtype, **_: _to_copy(x, result_dtype))
ACCEPTS[_CONVERT] = lambda node: (
    isinstance(node.args[0], torch.fx.Node)
    and isinstance(node.args[0].meta.get("val"), torch.Tensor)
    and _traced_dtype_known(node)
)
PREPARE[_CONVERT] = _result_dtype
_allow(_CONVERT, _ANY_DTYPE)
MIXES_DTYPES = {aten._to_copy.default, _CONVERT}


# --- constructed tensors --------------------------------------------------------------------


def _number(value: Any, dtype: str) -> te.Expr:
    if isinstance(value, te.Expr):
        return value if value.dtype == dtype else value.astype(dtype)
    return number(value, dtype)


@_register(aten.arange.start_step, aten.arange.start, aten.arange.default)
def _arange(*args: Any, result_dtype: str, result_shape: list[Any], **_: Any) -> te.Tensor:
    numbers = [a for a in args if not isinstance(a, (torch.dtype, torch.layout, torch.device))]
    start, step = (0, 1) if len(numbers) == 1 else (numbers[0], 1)
    if len(numbers) >= 3:
        step = numbers[2]
    # PyTorch computes start + i * step in double for floating results, then rounds once
    compute = "float64" if result_dtype.startswith(("float", "bfloat")) else "int64"
    first, stride = _number(start, compute), _number(step, compute)
    return te.compute(
        result_shape,
        lambda i: cast_expr(first + i.astype(compute) * stride, result_dtype),
        name="T_arange",
        tag="injective",
    )


def cast_expr(value: te.Expr, dtype: str) -> te.Expr:
    return value if value.dtype == dtype else value.astype(dtype)


def _size_or_number(value: Any) -> bool:
    if isinstance(value, torch.fx.Node):
        return isinstance(value.meta.get("val"), torch.SymInt)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _arange_accepts(node: torch.fx.Node) -> bool:
    return (
        _traced_dtype_known(node)
        and all(_size_or_number(a) for a in node.args)
        and node.kwargs.get("layout") in (None, torch.strided)
    )


for _target in (aten.arange.start_step, aten.arange.start, aten.arange.default):
    ACCEPTS[_target] = _arange_accepts
    PREPARE[_target] = _result_dtype_and_shape
    _allow(_target, _ANY_DTYPE)


@_register(aten.full.default)
def _full(size: Any, fill_value: Any, result_dtype: str, **_: Any) -> te.Tensor:
    value = _number(fill_value, result_dtype)
    return te.compute(list(size), lambda *_i: value, name="T_full", tag="injective")


@_register(aten.full_like.default)
def _full_like(x: te.Tensor, fill_value: Any, result_dtype: str, **_: Any) -> te.Tensor:
    value = _number(fill_value, result_dtype)
    return te.compute(list(x.shape), lambda *_i: value, name="T_full", tag="injective")


def _full_accepts(node: torch.fx.Node) -> bool:
    fill = node.args[1]
    return (
        _traced_dtype_known(node)
        and isinstance(fill, (bool, int, float))
        and node.kwargs.get("layout") in (None, torch.strided)
    )


for _target in (aten.full.default, aten.full_like.default):
    ACCEPTS[_target] = _full_accepts
    PREPARE[_target] = _result_dtype
    _allow(_target, _ANY_DTYPE)


@_register(aten.empty.memory_format, aten.empty_permuted.default, aten.empty_like.default)
def _empty(*_: Any, result_dtype: str, result_shape: list[Any], **__: Any) -> te.Tensor:
    # Uninitialised memory in PyTorch (a backward fills it: atanh's `1 - x**2` starts from an
    # empty_permuted filled by full_like); zeros here, so nothing reads garbage.
    zero = number(0, result_dtype)
    return te.compute(result_shape, lambda *_i: zero, name="T_empty", tag="injective")


for _target in (aten.empty.memory_format, aten.empty_permuted.default, aten.empty_like.default):
    ACCEPTS[_target] = lambda node: (
        _traced_dtype_known(node) and node.kwargs.get("layout") in (None, torch.strided)
    )
    PREPARE[_target] = _result_dtype_and_shape
    _allow(_target, _ANY_DTYPE)


# --- indexing -------------------------------------------------------------------------------


def _position(index: te.Expr, size: Any) -> te.Expr:
    """An index read from a tensor as a position along an axis of ``size``: negative counts
    from the end (PyTorch), and what is still outside ``[0, size)`` is clamped."""
    wide = "int64"
    index = cast_expr(index, wide)
    n = cast_expr(size, wide) if isinstance(size, te.Expr) else te.const(int(size), wide)
    zero = te.const(0, wide)
    index = te.if_then_else(index < zero, index + n, index)
    return te.min(te.max(index, zero), n - te.const(1, wide))


def _index_tensor_ok(value: Any) -> bool:
    val = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
    return isinstance(val, torch.Tensor) and val.dtype in (torch.int64, torch.int32)


@_register(aten.embedding.default)
def _embedding(weight: te.Tensor, indices: te.Tensor, *_: Any, **__: Any) -> te.Tensor:
    rows = weight.shape[0]
    ndim = len(indices.shape)

    def row(*i: Any) -> te.Expr:
        return weight[_position(indices[i[:ndim]], rows), i[ndim]]

    return te.compute([*indices.shape, weight.shape[1]], row, name="T_embedding", tag="injective")


ACCEPTS[aten.embedding.default] = lambda node: (
    _index_tensor_ok(node.args[1]) and len(node.args[0].meta["val"].shape) == 2
)


@_register(aten.index_select.default)
def _index_select(x: te.Tensor, dim: int, index: te.Tensor) -> te.Tensor:
    axis = _axis(dim, len(x.shape)) if x.shape else 0
    if not x.shape:
        return te.compute([index.shape[0]], lambda i: x[()], name="T_index_select")
    shape = list(x.shape)
    shape[axis] = index.shape[0] if index.shape else 1

    def select(*i: Any) -> te.Expr:
        picked = index[i[axis]] if index.shape else index[()]
        return x[(*i[:axis], _position(picked, x.shape[axis]), *i[axis + 1 :])]

    return te.compute(shape, select, name="T_index_select", tag="injective")


ACCEPTS[aten.index_select.default] = lambda node: _index_tensor_ok(node.args[2])


@_register(aten.gather.default)
def _gather(x: te.Tensor, dim: int, index: te.Tensor, **_: Any) -> te.Tensor:
    if not x.shape:
        return te.compute(list(index.shape), lambda *i: x[()], name="T_gather")
    axis = _axis(dim, len(x.shape))

    def pick(*i: Any) -> te.Expr:
        at = list(i)
        at[axis] = _position(index[i], x.shape[axis])
        return x[tuple(at)]

    return te.compute(list(index.shape), pick, name="T_gather", tag="injective")


ACCEPTS[aten.gather.default] = lambda node: (
    _index_tensor_ok(node.args[2])
    and len(node.args[2].meta["val"].shape) == len(node.args[0].meta["val"].shape)
)


@_register(aten.index.Tensor)
def _index(x: te.Tensor, indices: Any, result_shape: list[Any], **_: Any) -> te.Tensor:
    indices = list(indices) + [None] * (len(x.shape) - len(indices))
    given = [d for d, t in enumerate(indices) if t is not None]
    broadcast_ndim = max(len(indices[d].shape) for d in given)
    # PyTorch: index tensors on adjacent dimensions put their broadcast shape where they stand;
    # separated by a sliced dimension, it goes first
    adjacent = given == list(range(given[0], given[-1] + 1))
    first = given[0] if adjacent else 0

    def pick(*i: Any) -> te.Expr:
        where = i[first : first + broadcast_ndim]
        rest = list(i[:first]) + list(i[first + broadcast_ndim :])
        at = []
        for d, index in enumerate(indices):
            if index is None:
                at.append(rest.pop(0))
                continue
            # the index tensor's dimensions are the trailing ones of the broadcast shape
            offset = broadcast_ndim - len(index.shape)
            own = [
                te.const(0, "int32") if const_int(extent) == 1 else where[offset + k]
                for k, extent in enumerate(index.shape)
            ]
            at.append(_position(index[tuple(own)], x.shape[d]))
        return x[tuple(at)]

    return te.compute(list(result_shape), pick, name="T_index", tag="injective")


def _index_accepts(node: torch.fx.Node) -> bool:
    indices = node.args[1]
    given = [t for t in indices if t is not None]
    if not given or not all(_index_tensor_ok(t) for t in given):
        return False
    shapes = [t.meta["val"].shape for t in given]
    ndim = max(len(s) for s in shapes)
    for k in range(ndim):
        # broadcast: extents of 1 and one other, constant or symbolic (compared as written)
        extents = {str(s[len(s) - ndim + k]) for s in shapes if len(s) - ndim + k >= 0}
        if len(extents - {"1"}) > 1:
            return False
    return _traced_dtype_known(node)


ACCEPTS[aten.index.Tensor] = _index_accepts
PREPARE[aten.index.Tensor] = _result_dtype_and_shape


# The most positions along the scattered axis a scatter reads per element: each output element
# tests each of them (a chain of selects), so only short index axes are compiled (max.dim's
# backward scatters one position per row).
MAX_SCATTER_POSITIONS = 8


def _scatter(x: te.Tensor, dim: int, index: te.Tensor, src: Any) -> te.Tensor:
    axis = _axis(dim, len(x.shape))
    positions = int(const_int(index.shape[axis]))

    def value(*i: Any) -> te.Expr:
        # PyTorch leaves the winner of two writes to one place undefined: the last position
        out = x[i]
        # index (and src) may be smaller than x off the axis: their reads are clamped into
        # them, and the elements past them keep x's value
        smaller = [
            d for d in range(len(i)) if d != axis and not same_dim(index.shape[d], x.shape[d])
        ]
        inside = [i[d] < index.shape[d] for d in smaller]
        for k in range(positions):
            at = list(i)
            for d in smaller:
                at[d] = te.min(i[d], index.shape[d] - 1)
            at[axis] = k
            hit = _position(index[tuple(at)], x.shape[axis]) == cast_expr(i[axis], "int64")
            new = src[tuple(at)] if isinstance(src, te.Tensor) else number(src, x.dtype)
            out = te.select(te.all(*inside, hit) if inside else hit, new, out)
        return out

    return te.compute(list(x.shape), value, name="T_scatter", tag="injective")


@_register(aten.scatter.src, aten.scatter.value)
def _scatter_converter(x: te.Tensor, dim: int, index: te.Tensor, src: Any) -> te.Tensor:
    return _scatter(x, dim, index, src)


def _scatter_accepts(node: torch.fx.Node) -> bool:
    x, index = node.args[0].meta["val"], node.args[2].meta["val"]
    if not _index_tensor_ok(node.args[2]) or x.dim() != index.dim() or x.dim() == 0:
        return False
    extent = index.shape[_axis(node.args[1], x.dim())]
    src = node.args[3]
    return (
        isinstance(extent, int)
        and 1 <= extent <= MAX_SCATTER_POSITIONS
        and all(isinstance(d, int) or d == e for d, e in zip(index.shape, x.shape, strict=True))
        and (isinstance(src, (int, float, bool)) or src.meta["val"].dtype == x.dtype)
        and not node.kwargs.get("reduce")
    )


for _target in (aten.scatter.src, aten.scatter.value):
    ACCEPTS[_target] = _scatter_accepts


@_register(aten.index_put.default)
def _index_put(
    x: te.Tensor, indices: Any, values: te.Tensor, accumulate: bool = False
) -> te.Tensor:
    """``x[..., index, ...] = values`` along the one dimension ``indices`` holds a tensor for
    (functionalised ``index_copy_``: a static KV cache written at the new tokens' positions),
    as :func:`_scatter`: each element tests the few positions written; the last one wins as
    PyTorch's undefined order of repeated writes, or all add up with ``accumulate``."""
    axis = next(d for d, t in enumerate(indices) if t is not None)
    index = indices[axis]
    positions = int(const_int(index.shape[0]))
    written = list(x.shape)
    written[axis] = positions
    if [str(d) for d in values.shape] != [str(d) for d in written]:
        values = topi.broadcast_to(values, written)
    zero = number(0, x.dtype)

    def value(*i: Any) -> te.Expr:
        out = x[i]
        for k in range(positions):
            hit = _position(index[k], x.shape[axis]) == cast_expr(i[axis], "int64")
            new = values[(*i[:axis], k, *i[axis + 1 :])]
            out = out + te.select(hit, new, zero) if accumulate else te.select(hit, new, out)
        return out

    return te.compute(list(x.shape), value, name="T_index_put", tag="injective")


def _index_put_accepts(node: torch.fx.Node) -> bool:
    x, indices, values = node.args[0].meta["val"], node.args[1], node.args[2]
    given = [t for t in indices if t is not None]
    if len(given) != 1 or not _index_tensor_ok(given[0]) or x.dim() == 0:
        return False
    index = given[0].meta["val"]
    return (
        index.dim() == 1
        and index.dtype != torch.bool  # a mask picks a data-dependent number of places
        and isinstance(index.shape[0], int)
        and 1 <= index.shape[0] <= MAX_SCATTER_POSITIONS
        and isinstance(values, torch.fx.Node)
        and values.meta["val"].dtype == x.dtype
        and values.meta["val"].dim() <= x.dim()
    )


ACCEPTS[aten.index_put.default] = _index_put_accepts


@_register(aten.copy.default)
def _copy(x: te.Tensor, src: te.Tensor, non_blocking: bool = False) -> te.Tensor:
    """``x`` with ``src`` copied in (functionalised ``x.copy_(src)``: a running statistic
    written back, circular padding's wrapped border): ``src`` broadcast to ``x``'s shape and
    cast to its dtype."""
    out = topi.broadcast_to(src, list(x.shape)) if list(src.shape) != list(x.shape) else src
    return cast_to(topi.identity(out) if out is src else out, x.dtype)


ACCEPTS[aten.copy.default] = lambda node: isinstance(node.args[1], torch.fx.Node)


@_register(aten.slice_scatter.default)
def _slice_scatter(
    x: te.Tensor, src: te.Tensor, dim: int = 0, start: Any = None, end: Any = None, step: int = 1
) -> te.Tensor:
    """``x`` with ``x[..., start:end:step, ...] = src`` along ``dim`` (functionalised slice
    assignment)."""
    axis = _axis(dim, len(x.shape))
    size = int(const_int(x.shape[axis]))
    first, _, _ = slice(start, end, step).indices(size)
    count = int(const_int(src.shape[axis]))

    def value(*i: Any) -> te.Expr:
        offset = i[axis] - first
        j = te.floordiv(offset, step) if step != 1 else offset
        inside = te.all(offset >= 0, j < count, te.floormod(offset, step) == 0)
        at = list(i)
        at[axis] = te.min(te.max(j, 0), count - 1)  # clamped: read only where inside
        return te.select(inside, src[tuple(at)], x[i])

    return te.compute(list(x.shape), value, name="T_slice_scatter", tag="injective")


def _slice_scatter_accepts(node: torch.fx.Node) -> bool:
    x, src = node.args[0].meta["val"], node.args[1].meta["val"]
    dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
    axis = _axis(dim, x.dim())
    bounds = [*node.args[3:6], *(node.kwargs.get(k) for k in ("start", "end", "step"))]
    step = node.args[5] if len(node.args) > 5 else node.kwargs.get("step", 1)
    return (
        x.dtype == src.dtype
        and isinstance(x.shape[axis], int)
        and isinstance(src.shape[axis], int)
        and all(b is None or isinstance(b, int) for b in bounds)
        and isinstance(step, int)
        and step >= 1
    )


ACCEPTS[aten.slice_scatter.default] = _slice_scatter_accepts


@_register(aten.flip.default)
def _flip(x: te.Tensor, dims: Any) -> te.Tensor:
    out = x
    for d in dims:
        out = topi.flip(out, _axis(d, len(x.shape)))
    return out


@_register(aten.repeat.default)
def _repeat(x: te.Tensor, repeats: Any) -> te.Tensor:
    return topi.tile(x, list(repeats))


ACCEPTS[aten.repeat.default] = lambda node: all(isinstance(r, int) and r >= 1 for r in node.args[1])


@_register(aten.lift_fresh_copy.default)
def _lift_fresh_copy(x: te.Tensor) -> te.Tensor:
    return topi.identity(x)


def _storage_layout(
    node: torch.fx.Node, args: tuple, kwargs: dict, shape: list[Any] | None = None
) -> tuple[tuple, dict]:
    """PREPARE step: the traced strides and storage offset of the node's tensor operand."""
    val = node.args[0].meta["val"]
    return args, {
        **kwargs,
        "source_strides": tuple(int(s) for s in val.stride()),
        "source_offset": int(val.storage_offset()),
    }


@_register(aten.as_strided.default)
def _as_strided(
    x: te.Tensor,
    size: Any,
    stride: Any,
    storage_offset: int | None = None,
    *,
    source_strides: tuple[int, ...],
    source_offset: int,
) -> te.Tensor:
    """``x.as_strided(size, stride, storage_offset)``: each element read from the storage
    position its strides give, mapped back to ``x``'s index through ``x``'s traced strides
    (a dense tensor's: ``_as_strided_accepts``). PyTorch's decompositions emit it to restride
    size-1 dimensions (adaptive pooling of a channels_last tensor), which is ``x`` itself."""
    size, stride = [int(n) for n in size], [int(s) for s in stride]
    offset = (source_offset if storage_offset is None else int(storage_offset)) - source_offset
    extents = [const_int(n) for n in x.shape]
    kept = [(n, s) for n, s in zip(size, stride, strict=True) if n != 1]
    if offset == 0 and kept == [
        (n, s) for n, s in zip(extents, source_strides, strict=True) if n != 1
    ]:
        return topi.reshape(x, size) if size != extents else topi.identity(x)

    def fcompute(*i: Any) -> te.Expr:
        position = offset
        for index, step, extent in zip(i, stride, size, strict=True):
            if extent != 1 and step != 0:
                position = index * step + position
        # A dense tensor's strides: each dimension's is the product of the faster ones' sizes.
        return x[
            [
                te.floormod(te.floordiv(position, step), n) if n != 1 else 0
                for n, step in zip(extents, source_strides, strict=True)
            ]
        ]

    return te.compute(size, fcompute, name="T_as_strided", tag="injective")


def _dense(sizes: Any, strides: Any) -> bool:
    """Whether the elements fill consecutive storage positions, each once (any dimension
    order; size-1 dimensions' strides do not matter)."""
    expected = 1
    for n, step in sorted((p for p in zip(sizes, strides, strict=True) if p[0] != 1), key=_second):
        if step != expected:
            return False
        expected *= n
    return True


def _second(pair: tuple) -> Any:
    return pair[1]


def _as_strided_accepts(node: torch.fx.Node) -> bool:
    source, size, stride = node.args[0].meta["val"], node.args[1], node.args[2]
    offset = node.args[3] if len(node.args) > 3 else None
    offset = source.storage_offset() if offset is None else offset
    numbers = [*size, *stride, offset, *source.shape, *source.stride(), source.storage_offset()]
    if not all(isinstance(v, int) for v in numbers) or any(s < 0 for s in stride):
        return False
    if 0 in size or source.numel() == 0 or not _dense(source.shape, source.stride()):
        return False  # a source with gaps: storage positions that are none of its elements
    last = offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
    return source.storage_offset() <= offset and last < source.storage_offset() + source.numel()


ACCEPTS[aten.as_strided.default] = _as_strided_accepts
PREPARE[aten.as_strided.default] = _storage_layout


for _target in (
    aten.as_strided.default,
    aten.index_put.default,
    aten.copy.default,
    aten.slice_scatter.default,
    aten.scatter.src,
    aten.scatter.value,
    aten.lift_fresh_copy.default,
    aten.scalar_tensor.default,
    aten.embedding.default,
    aten.index_select.default,
    aten.gather.default,
    aten.index.Tensor,
    aten.flip.default,
    aten.repeat.default,
    aten.div.Tensor_mode,
):
    _allow(_target, _ANY_DTYPE)

__all__ = ["MIXES_DTYPES", "cast_expr"]
