"""ATen converters: reductions beyond ops.py's sums and means: variance, vector norms,
products, any/all, arg-reductions, max/min with indices, cumulative sums and products.

Registered into :data:`pytvmbridge.graph.ops.CONVERTERS` when :mod:`pytvmbridge.graph.ops` is
imported. Each follows PyTorch's CPU kernel where its numerics show: variance is two passes
(the mean, then the squared deviations: a one-pass ``E[x^2] - E[x]^2`` of ``1e4 + randn`` rows
loses every digit) accumulated in float64, as PyTorch's Welford kernel accumulates in double;
cumulative sums and products of float32 accumulate in float64 as PyTorch's do; norms of
16-bit floats accumulate in float32 as PyTorch's do. Products of 16-bit floats accumulate in
float32 too and round once, where PyTorch's CPU kernel rounds every partial product to 16 bits
(its ``prod`` of float16 ``[300, 300, 1e-3]`` is inf, ours 90.06): more accurate, not
bit-equal. Float64 cumulative sums reassociate across 16-element blocks (a sum that overflows
inside a block gives NaN where PyTorch's running sum gives inf). Indices (argmax, max.dim)
are the first occurrence of the extreme, a NaN being the extreme, as PyTorch's are.

Example:
    >>> import torch
    >>> from pytvmbridge.graph.ops import CONVERTERS
    >>> torch.ops.aten.var_mean.correction in CONVERTERS
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from .. import te, topi
from ..topi.utils import accumulate_dtype
from ..topi.utils import prod as _product
from .ops import ACCEPTS, OTHER_DTYPES, _axis, _register
from .promotion import INTEGER_DTYPES

aten = torch.ops.aten

_FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _input(node: torch.fx.Node) -> Any:
    return node.args[0].meta["val"]


def _floating_input(node: torch.fx.Node) -> bool:
    return _input(node).dtype in _FLOATS


def _no_dtype(node: torch.fx.Node) -> bool:
    return node.kwargs.get("dtype") is None


def _axes(x: te.Tensor, dims: Any) -> list[int]:
    """Reduced axes: all for None or [] (var's and norm's rule), else the given ones."""
    if dims is None or (not isinstance(dims, int) and not list(dims)):
        return list(range(len(x.shape)))
    dims = [dims] if isinstance(dims, int) else dims
    return sorted({_axis(d, len(x.shape)) for d in dims})


def _as_1d(x: te.Tensor) -> te.Tensor:
    """A 0-d tensor as one element (PyTorch reduces a 0-d tensor over dim None, 0 or -1)."""
    return topi.reshape(x, [1])


def _count(x: te.Tensor, axes: list[int], dtype: str) -> Any:
    count = _product([x.shape[d] for d in axes])
    return te.const(float(count), dtype) if isinstance(count, int) else count.astype(dtype)


def _keep_index(index: tuple, axes: list[int]) -> tuple:
    """An index of a keepdims reduction's result from an index of its input."""
    return tuple(0 if d in axes else v for d, v in enumerate(index))


def _dropped(x: te.Tensor, axes: list[int], keepdim: bool) -> te.Tensor:
    """A keepdims result with ``axes`` squeezed away unless ``keepdim``."""
    if keepdim or not axes:
        return x
    shape = [n for d, n in enumerate(x.shape) if d not in axes]
    return te.compute(
        shape,
        lambda *i: x[_keep_index(_spread(i, axes, len(x.shape)), axes)],
        name=f"{x.op.name}_squeezed",
        tag=topi.tag.INJECTIVE,
    )


def _spread(index: tuple, axes: list[int], ndim: int) -> tuple:
    """An index of a squeezed result as an index with 0 at the squeezed axes."""
    it = iter(index)
    return tuple(0 if d in axes else next(it) for d in range(ndim))


# --- variance --------------------------------------------------------------------------------


def var_mean(
    x: te.Tensor, dim: Any = None, correction: Any = None, keepdim: bool = False
) -> tuple[te.Tensor, te.Tensor]:
    """PyTorch's variance and mean over ``dim``: the squared deviations from the mean summed
    and divided by ``max(n - correction, 0)`` (a division by 0 gives NaN or inf, as PyTorch
    does), both accumulated in float64 and rounded to x's dtype once."""
    dtype, scalar = x.dtype, not x.shape
    if scalar:
        x, dim, keepdim = _as_1d(x), None, False
    axes = _axes(x, dim)
    wide = topi.cast(x, "float64")
    count = _count(x, axes, "float64")
    total = topi.sum(wide, axes, keepdims=True)
    mean = te.compute(
        total.shape, lambda *i: total[i] / count, name="var_mean", tag=topi.tag.ELEMWISE
    )

    def squared(*i: Any) -> Any:
        deviation = wide[i] - mean[_keep_index(i, axes)]
        return deviation * deviation

    deviations = te.compute(x.shape, squared, name="var_deviation", tag=topi.tag.ELEMWISE)
    squares = topi.sum(deviations, axes, keepdims=True)
    correction = 1 if correction is None else correction
    dof = te.max(count - te.const(float(correction), "float64"), te.const(0.0, "float64"))
    var = te.compute(
        squares.shape,
        lambda *i: (squares[i] / dof).astype(dtype),
        name="var",
        tag=topi.tag.ELEMWISE,
    )
    mean = topi.cast(mean, dtype)
    var, mean = _dropped(var, axes, keepdim), _dropped(mean, axes, keepdim)
    if scalar:
        var, mean = topi.reshape(var, []), topi.reshape(mean, [])
    return var, mean


@_register(aten.var.correction)
def _var(x: te.Tensor, dim: Any = None, *, correction: Any = None, keepdim: bool = False) -> Any:
    return var_mean(x, dim, correction, keepdim)[0]


@_register(aten.var_mean.correction, results=(0, 1))
def _var_mean(
    x: te.Tensor, dim: Any = None, *, correction: Any = None, keepdim: bool = False
) -> tuple[te.Tensor, te.Tensor]:
    return var_mean(x, dim, correction, keepdim)


# --- vector norms ----------------------------------------------------------------------------


def vector_norm(x: te.Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False) -> te.Tensor:
    """``torch.linalg.vector_norm``: ``sum(|x|**ord) ** (1/ord)`` over ``dim``; ord inf and
    -inf are the largest and smallest ``|x|``, ord 0 the count of nonzeros (NaN included).
    16-bit floats accumulate in float32, others in their own dtype, as PyTorch's kernel."""
    dtype, scalar = x.dtype, not x.shape
    if scalar:
        x, dim, keepdim = _as_1d(x), None, False
    axes = _axes(x, dim)
    acc = accumulate_dtype(dtype)
    ord = float(ord)

    def term(fn: Callable[[Any], Any]) -> te.Tensor:
        return te.compute(
            x.shape, lambda *i: fn(x[i].astype(acc)), name="norm_term", tag=topi.tag.ELEMWISE
        )

    if ord == math.inf:
        out = topi.max(term(te.abs), axes, keepdims=keepdim)
    elif ord == -math.inf:
        out = topi.min(term(te.abs), axes, keepdims=keepdim)
    elif ord == 0:
        zero, one = te.const(0.0, acc), te.const(1.0, acc)
        out = topi.sum(term(lambda v: te.select(v != zero, one, zero)), axes, keepdims=keepdim)
    elif ord == 1:
        out = topi.sum(term(te.abs), axes, keepdims=keepdim)
    elif ord == 2:
        out = topi.sqrt(topi.sum(term(lambda v: v * v), axes, keepdims=keepdim))
    else:
        p = te.const(ord, acc)
        total = topi.sum(term(lambda v: te.power(te.abs(v), p)), axes, keepdims=keepdim)
        out = topi.power(total, te.const(1.0 / ord, acc))
    out = topi.cast(out, dtype)
    return topi.reshape(out, []) if scalar else out


@_register(aten.linalg_vector_norm.default)
def _vector_norm(
    x: te.Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
) -> te.Tensor:
    return vector_norm(x, ord, dim, keepdim)


def _norm_accepts(node: torch.fx.Node) -> bool:
    # the extreme of nothing is an error in PyTorch; an empty sum is left to it as well
    empty = any(isinstance(n, int) and n == 0 for n in _input(node).shape)
    order = node.args[1] if len(node.args) > 1 else node.kwargs.get("ord", 2)
    return _no_dtype(node) and not empty and isinstance(order, (int, float))


ACCEPTS[aten.linalg_vector_norm.default] = _norm_accepts


# --- products, any/all, max/min of everything -----------------------------------------------


def _whole(fn: Callable[..., te.Tensor]) -> Callable[..., te.Tensor]:
    def convert(x: te.Tensor, dim: Any = None, keepdim: bool = False, **_: Any) -> te.Tensor:
        if not x.shape:  # a 0-d tensor reduced over dim 0 or -1: itself
            return fn(x, [], keepdims=False)
        if isinstance(dim, int):
            dim = [dim]
        axes = None if dim is None else [_axis(d, len(x.shape)) for d in dim]
        return fn(x, axes, keepdims=keepdim)

    return convert


_register(aten.prod.dim_int, aten.prod.default)(_whole(topi.prod))
for _target in (aten.prod.dim_int, aten.prod.default):
    ACCEPTS[_target] = lambda node: _no_dtype(node) and _floating_input(node)

# any.dims takes [] as no dimension (the result is the tensor as bool), None as all
_TRUTH = {
    aten.any.dim: topi.reduction.any,
    aten.any.dims: topi.reduction.any,
    aten.any.default: topi.reduction.any,
    aten.all.dim: topi.reduction.all,
    aten.all.dims: topi.reduction.all,
    aten.all.default: topi.reduction.all,
}
for _target, _fn in _TRUTH.items():
    _register(_target)(_whole(_fn))
    OTHER_DTYPES[_target] = (torch.bool,)
    ACCEPTS[_target] = lambda node: _floating_input(node) or _input(node).dtype == torch.bool


def _nonempty_float(node: torch.fx.Node) -> bool:
    val = _input(node)
    # integers too: the extremes and their indices of integer tensors (a sequence's last token,
    # ``lengths.max()``), exact in any order
    numeric = val.dtype in _FLOATS or val.dtype in INTEGER_DTYPES
    return numeric and not any(isinstance(n, int) and n == 0 for n in val.shape)


_register(aten.max.default)(_whole(topi.max))
_register(aten.min.default)(_whole(topi.min))
ACCEPTS[aten.max.default] = ACCEPTS[aten.min.default] = _nonempty_float
OTHER_DTYPES[aten.max.default] = OTHER_DTYPES[aten.min.default] = INTEGER_DTYPES
for _target in (aten.amax.default, aten.amin.default):  # (ops.py's converters)
    OTHER_DTYPES[_target] = INTEGER_DTYPES


# --- argmax/argmin and max/min with indices --------------------------------------------------


def _arg(is_max: bool) -> Callable[..., te.Tensor]:
    fn = topi.argmax if is_max else topi.argmin

    def convert(x: te.Tensor, dim: Any = None, keepdim: bool = False) -> te.Tensor:
        axis = None if dim is None else (_axis(dim, len(x.shape)) if x.shape else dim)
        return topi.cast(fn(x, axis, keepdims=keepdim), "int64")

    return convert


def _index_fits(node: torch.fx.Node) -> bool:
    """Whether the indices fit topi's int32: an index along one axis does (a symbolic axis of
    2**31 or more is refused when the kernel binds it); a flat index (argmax with dim None)
    only when every size is constant, since symbolic ones may multiply past it."""
    shape = _input(node).shape
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if dim is None and len(shape) > 1 and not all(isinstance(n, int) for n in shape):
        return False
    numel = 1
    for n in shape:
        numel *= n if isinstance(n, int) else 1
    return _nonempty_float(node) and numel < 2**31


_register(aten.argmax.default)(_arg(True))
_register(aten.argmin.default)(_arg(False))
for _target in (aten.argmax.default, aten.argmin.default):
    OTHER_DTYPES[_target] = INTEGER_DTYPES
    ACCEPTS[_target] = _index_fits


def _extreme_with_index(is_max: bool) -> Callable[..., tuple[te.Tensor, te.Tensor]]:
    fn = topi.argmax if is_max else topi.argmin

    def convert(x: te.Tensor, dim: int, keepdim: bool = False) -> tuple[te.Tensor, te.Tensor]:
        if not x.shape:  # a 0-d tensor: itself, at index 0
            return topi.identity(x), topi.cast(fn(x), "int64")
        axis = _axis(dim, len(x.shape))
        # a bool mask's first True (False) as the extreme of its 0/1 bytes
        index = fn(topi.cast(x, "uint8") if x.dtype == "bool" else x, axis, keepdims=True)
        # The value read at the index: one reduction for both results, and the value is the
        # element the index names (the first of equal maxima, a NaN where there is one).
        value = te.compute(
            index.shape,
            lambda *i: x[(*i[:axis], index[i], *i[axis + 1 :])],
            name=f"{x.op.name}_{'max' if is_max else 'min'}_value",
            tag=topi.tag.INJECTIVE,
        )
        value, index = _dropped(value, [axis], keepdim), _dropped(index, [axis], keepdim)
        return value, topi.cast(index, "int64")

    return convert


_register(aten.max.dim, results=(0, 1))(_extreme_with_index(True))
_register(aten.min.dim, results=(0, 1))(_extreme_with_index(False))


def _bool_or_index_fits(node: torch.fx.Node) -> bool:
    # a bool input too (cumprod's backward finds each row's first zero with max.dim of a mask)
    val = _input(node)
    if val.dtype == torch.bool and all(isinstance(n, int) and n > 0 for n in val.shape):
        return val.numel() < 2**31
    return _index_fits(node)


for _target in (aten.max.dim, aten.min.dim):
    OTHER_DTYPES[_target] = (*INTEGER_DTYPES, torch.bool)
    ACCEPTS[_target] = _bool_or_index_fits


# --- cumulative sums and products ------------------------------------------------------------


def _cumulative(fn: Callable[..., te.Tensor]) -> Callable[..., te.Tensor]:
    def convert(x: te.Tensor, dim: int, *, dtype: Any = None) -> te.Tensor:
        if not x.shape:
            return topi.identity(x)
        # float32 accumulates in float64, as PyTorch's CPU kernel does (its acc_type is
        # double): a float32 running sum of 10^5 elements drifts by 1e-3
        wide = topi.cast(x, "float64") if x.dtype == "float32" else x
        out = fn(wide, _axis(dim, len(x.shape)))
        return topi.cast(out, x.dtype) if out.dtype != x.dtype else out

    return convert


_register(aten.cumsum.default)(_cumulative(topi.cumsum))
_register(aten.cumprod.default)(_cumulative(topi.cumprod))
for _target in (aten.cumsum.default, aten.cumprod.default):
    # integer and bool inputs too (cumprod's backward counts zeros with a bool cumsum): they
    # arrive cast to the int64 result (promotion.py), registered in ops_index.py
    ACCEPTS[_target] = lambda node: _no_dtype(node)
