"""ATen operators -> topi computations: the table the graph compiler and the partitioner share.

Each entry maps an ATen overload (``torch.ops.aten.X.overload``) to a converter taking the
already converted arguments (TE tensors for tensor arguments, TE expressions for symbolic sizes,
plain Python values otherwise) and returning a TE tensor, or a tuple for operators with several
results (positions the graph compiler cannot produce are ``None``). An operator that is not in
the table, or whose converter's ``accepts`` check refuses the node, stays in PyTorch.

Matrix products and convolutions of float16/bfloat16 tensors accumulate in float32 and round
once (:func:`in_float32`), as PyTorch's CPU kernels do, and so do products and quotients with a
Python number; every other operator computes in its tensors' dtype.

Example:
    >>> import torch
    >>> from pytvmbridge.graph.ops import CONVERTERS
    >>> torch.ops.aten.relu.default in CONVERTERS
    True
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import torch

from .. import te, topi
from ..topi.utils import const_int
from .layout import (
    active_lanes,
    blocked_source,
    conv2d_nchw_from_blocks,
    conv2d_nchwc,
    max_pool_nchwc,
    packed_out_channels,
    through_blocks,
    weight_block,
    winograd_weights,
)
from .prepack import conv2d_prepacked
from .promotion import number

aten = torch.ops.aten
Converter = Callable[..., Any]

CONVERTERS: dict[Any, Converter] = {}
# Results of a multi-output operator the converter produces (others must be unused).
PRODUCED_RESULTS: dict[Any, tuple[int, ...]] = {}
# Extra per-node checks (argument values the converter cannot handle).
ACCEPTS: dict[Any, Callable[[torch.fx.Node], bool]] = {}
# Tensors other than float32 an operator takes or gives (max pooling's int64 indices).
OTHER_DTYPES: dict[Any, tuple[torch.dtype, ...]] = {}
# Steps run on a node's converted (args, kwargs) before its converter, given the FX node and
# its traced result's shape (sizes as TE, None for a non-tensor result): what the converter
# needs from the traced node itself (the dtype operands are promoted to, a constructor's result
# dtype and shape).
PREPARE: dict[Any, Callable[[torch.fx.Node, tuple, dict, Any], tuple[tuple, dict]]] = {}


def _register(*targets: Any, results: tuple[int, ...] | None = None) -> Callable:
    def wrap(fn: Converter) -> Converter:
        for target in targets:
            CONVERTERS[target] = fn
            if results is not None:
                PRODUCED_RESULTS[target] = results
        return fn

    return wrap


def _scalar(value: Any, like: te.Tensor) -> Any:
    """A Python number as a constant of ``like``'s dtype (a tensor stays as it is)."""
    if isinstance(value, (bool, int, float)):
        return number(value, like.dtype)
    if isinstance(value, te.Expr) and value.dtype != like.dtype:
        # a symbolic size (int32 or int64) beside a tensor of another dtype: clamp(positions,
        # max=x.shape[0] - 1) of int64 positions
        return value.astype(like.dtype)
    return value


def _axis(dim: int, ndim: int) -> int:
    return dim + ndim if dim < 0 else dim


def _pair(value: Any) -> tuple[int, int]:
    value = list(value) if isinstance(value, (list, tuple)) else [value]
    return (value[0], value[0]) if len(value) == 1 else (value[0], value[1])


_NARROW_FLOATS = ("float16", "bfloat16")


def in_float32(fn: Converter) -> Converter:
    """``fn`` computed in float32 when its tensors are float16/bfloat16, rounded once at the
    end, as PyTorch's CPU kernels compute them ("opmath"): matrix products and convolutions
    accumulate in float32 (summed in 16 bits, a long dot product is off by several times
    PyTorch's error), and products and quotients with a Python number use the number as a
    float32 (rounded to 16 bits first, ``x * 0.1`` was an ulp off in a fifth of the elements).
    The casts are injective stages that the automatic schedule inlines."""

    @functools.wraps(fn)
    def convert(*args: Any, **kwargs: Any) -> Any:
        dtype = next((a.dtype for a in args if isinstance(a, te.Tensor)), None)
        if dtype not in _NARROW_FLOATS:
            return fn(*args, **kwargs)
        wide = [topi.cast(a, "float32") if isinstance(a, te.Tensor) else a for a in args]
        return topi.cast(fn(*wide, **kwargs), dtype)

    return convert


# --- elementwise -----------------------------------------------------------------------------

_UNARY = {
    aten.relu.default: topi.nn.relu,
    aten.sigmoid.default: topi.sigmoid,
    aten.tanh.default: topi.tanh,
    aten.exp.default: topi.exp,
    aten.log.default: topi.log,
    aten.sqrt.default: topi.sqrt,
    aten.rsqrt.default: topi.rsqrt,
    aten.neg.default: topi.negative,
    aten.abs.default: topi.abs,
    aten.erf.default: topi.erf,
    aten.sin.default: topi.sin,
    aten.cos.default: topi.cos,
    aten.clone.default: topi.identity,
    aten.alias.default: topi.identity,
    aten.silu.default: topi.nn.silu,
}
for _target, _fn in _UNARY.items():
    _register(_target)(through_blocks(lambda x, *_, _fn=_fn, **__: _fn(x)))


@_register(aten.reciprocal.default)
def _reciprocal(x: te.Tensor) -> te.Tensor:
    return topi.divide(_scalar(1.0, x), x)


@_register(aten.gelu.default)
def _gelu(x: te.Tensor, approximate: str = "none") -> te.Tensor:
    return topi.nn.gelu(x, approximate=approximate)


@_register(aten.hardtanh.default)
@through_blocks
def _hardtanh(x: te.Tensor, min_val: float = -1.0, max_val: float = 1.0) -> te.Tensor:
    return topi.clip(x, min_val, max_val)


@_register(aten.clamp.default)
@through_blocks
def _clamp(x: te.Tensor, min: float | None = None, max: float | None = None) -> te.Tensor:
    if min is not None:
        x = topi.maximum(x, _scalar(min, x))
    if max is not None:
        x = topi.minimum(x, _scalar(max, x))
    return x


@_register(aten.leaky_relu.default)
@through_blocks
def _leaky_relu(x: te.Tensor, negative_slope: float = 0.01) -> te.Tensor:
    return topi.nn.leaky_relu(x, negative_slope)


def _binary(fn: Callable) -> Converter:
    @through_blocks
    def convert(a: Any, b: Any, **kwargs: Any) -> Any:
        like = a if isinstance(a, te.Tensor) else b
        alpha = kwargs.get("alpha", 1)
        if alpha != 1:
            b = topi.multiply(_scalar(b, like), _scalar(alpha, like))
        return fn(_scalar(a, like), _scalar(b, like))

    return convert


# PyTorch's 16-bit kernels take a Python number as the tensor's dtype for + and - but as a
# float32 for * and / (their "opmath"): both are matched bit for bit.
for _targets, _fn, _wide in (
    ((aten.add.Tensor, aten.add.Scalar), topi.add, False),
    ((aten.sub.Tensor, aten.sub.Scalar), topi.subtract, False),
    ((aten.mul.Tensor, aten.mul.Scalar), topi.multiply, True),
    ((aten.div.Tensor, aten.div.Scalar), topi.divide, True),
    ((aten.maximum.default,), topi.maximum, False),
    ((aten.minimum.default,), topi.minimum, False),
):
    _register(*_targets)(in_float32(_binary(_fn)) if _wide else _binary(_fn))


# Comparisons: a bool result from float32 operands (a data-dependent branch's condition, as
# ``if h.mean() > 0.2``, is then computed in the kernel that computes h).
COMPARISONS = {
    aten.gt.Scalar: topi.greater,
    aten.gt.Tensor: topi.greater,
    aten.lt.Scalar: topi.less,
    aten.lt.Tensor: topi.less,
    aten.ge.Scalar: topi.greater_equal,
    aten.ge.Tensor: topi.greater_equal,
    aten.le.Scalar: topi.less_equal,
    aten.le.Tensor: topi.less_equal,
    aten.eq.Scalar: topi.equal,
    aten.eq.Tensor: topi.equal,
    aten.ne.Scalar: topi.not_equal,
    aten.ne.Tensor: topi.not_equal,
}
for _target, _fn in COMPARISONS.items():
    _register(_target)(_binary(_fn))


@_register(aten.rsub.Scalar)
def _rsub(a: te.Tensor, b: Any, alpha: Any = 1) -> te.Tensor:
    return topi.subtract(_scalar(b, a), topi.multiply(a, _scalar(alpha, a)) if alpha != 1 else a)


@_register(aten.pow.Tensor_Scalar)
def _pow(x: te.Tensor, exponent: Any) -> te.Tensor:
    if exponent == 2:
        return topi.multiply(x, x)
    if exponent == 0.5:
        return topi.sqrt(x)
    return topi.power(x, _scalar(exponent, x))


# Elementwise operators (with one tensor argument and numbers, or with several tensors of
# broadcast shapes): what a reshape commutes with (see :mod:`.views`).
ELEMENTWISE = (
    set(_UNARY)
    | set(COMPARISONS)
    | {
        aten.reciprocal.default,
        aten.gelu.default,
        aten.hardtanh.default,
        aten.clamp.default,
        aten.leaky_relu.default,
        aten.rsub.Scalar,
        aten.pow.Tensor_Scalar,
        aten.add.Tensor,
        aten.add.Scalar,
        aten.sub.Tensor,
        aten.sub.Scalar,
        aten.mul.Tensor,
        aten.mul.Scalar,
        aten.div.Tensor,
        aten.div.Scalar,
    }
) - {aten.clone.default, aten.alias.default}


# --- matrix products and convolution ---------------------------------------------------------


@_register(aten.convolution.default)
@in_float32
def convolution(
    x: te.Tensor,
    w: te.Tensor,
    bias: te.Tensor | None,
    stride: Any,
    padding: Any,
    dilation: Any,
    transposed: bool,
    output_padding: Any,
    groups: int,
) -> te.Tensor:
    """``aten.convolution`` (2-d, not transposed); a 5-d ``w`` is a weight passed packed as
    ``[O/w, I, kh, kw, w]`` panels (see :mod:`.prepack`, groups = 1). Inside
    :func:`.layout.blocking`, a convolution with a multiple of the block as output channels
    (ungrouped or depthwise) is computed in the blocked layout (:mod:`.layout`)."""
    block = _blocked(x, w, groups, active_lanes())
    if block:
        return conv2d_nchwc(x, w, bias, _pair(stride), _pair(padding), _pair(dilation), groups,
                            block)  # fmt: skip
    source = blocked_source(x)
    if source is not None and groups == 1:
        out = conv2d_nchw_from_blocks(source, w, _pair(stride), _pair(padding), _pair(dilation))
    elif len(w.shape) == 5:
        out = conv2d_prepacked(x, w, _pair(stride), _pair(padding), _pair(dilation))
    else:
        out = topi.nn.conv2d(x, w, _pair(stride), _pair(padding), _pair(dilation), groups=groups)
    return out if bias is None else topi.nn.bias_add(out, bias, axis=1)


def _blocked(x: te.Tensor, w: te.Tensor, groups: int, lanes: int) -> int:
    """The output block of a convolution, :func:`.layout.conv_block` on TE shapes (0: NCHW)."""
    if not lanes:
        return 0
    if w.op.name in winograd_weights():  # [m + 2, m + 2, O/b, I, b]: chosen blocked
        return const_int(w.shape[4])
    dims = [const_int(d) for d in (*w.shape[:4], x.shape[1])]
    if None in dims:
        return 0
    if len(w.shape) == 5:  # pre-packed: O/width panels
        dims[0] = packed_out_channels(w)
    block = weight_block(dims[0], dims[1], dims[4], groups, lanes)
    if len(w.shape) == 4:  # a padded block reads whole panels: only from a packed weight
        return block if dims[0] % max(block, 1) == 0 else 0
    return block if const_int(w.shape[4]) == block else 0


def _conv_accepts(node: torch.fx.Node) -> bool:
    args = node.args
    return len(args[1].meta["val"].shape) == 4 and not args[6]


ACCEPTS[aten.convolution.default] = _conv_accepts


@_register(aten.mm.default)
@in_float32
def _mm(a: te.Tensor, b: te.Tensor) -> te.Tensor:
    return topi.nn.matmul(a, b)


@_register(aten.addmm.default)
@in_float32
def _addmm(bias: te.Tensor, a: te.Tensor, b: te.Tensor, beta: Any = 1, alpha: Any = 1) -> Any:
    out = topi.nn.matmul(a, b)
    if alpha != 1:
        out = topi.multiply(out, _scalar(alpha, out))
    if beta == 0:  # PyTorch ignores the input then: its NaN and inf do not spread
        return out
    if beta != 1:
        bias = topi.multiply(bias, _scalar(beta, bias))
    return topi.add(out, bias)


@_register(aten.linear.default)
@in_float32
def _linear(x: te.Tensor, w: te.Tensor, bias: te.Tensor | None = None) -> te.Tensor:
    from .linear import linear

    return linear(x, w, bias)


@_register(aten.bmm.default)
@in_float32
def _bmm(a: te.Tensor, b: te.Tensor) -> te.Tensor:
    return topi.nn.batch_matmul(a, b, transpose_b=False)


# --- normalisation, pooling, softmax, reductions --------------------------------------------


@_register(aten._native_batch_norm_legit_no_training.default, results=(0,))
def _batch_norm(x: te.Tensor, weight: Any, bias: Any, mean: Any, var: Any, momentum: Any, eps: Any):
    out = topi.nn.batch_norm(
        x, weight, bias, mean, var, axis=1, epsilon=eps,
        center=bias is not None, scale=weight is not None,
    )[0]  # fmt: skip
    return (out, None, None)


def norm_statistics(x: te.Tensor, axes: list[int], eps: float) -> tuple[te.Tensor, te.Tensor]:
    """Mean and 1 / sqrt(biased variance + eps) over ``axes``, kept as size-1 dimensions: what
    a training forward of a norm saves for its backward (layer, batch, group and instance
    norm's converters)."""
    mean = topi.mean(x, axis=axes, keepdims=True)
    centred = topi.subtract(x, mean)
    var = topi.mean(topi.multiply(centred, centred), axis=axes, keepdims=True)
    return mean, topi.rsqrt(topi.add(var, te.const(eps, x.dtype)))


@_register(aten.native_layer_norm.default, results=(0,))
def _layer_norm(x: te.Tensor, shape: Any, weight: Any, bias: Any, eps: float) -> tuple:
    axes = list(range(len(x.shape) - len(shape), len(x.shape)))
    affine = [p for p in (weight, bias) if isinstance(p, te.Tensor)]
    if any(p.dtype != x.dtype for p in affine):
        # A 16-bit input with float32 weights (autocast): normalised and scaled in float32,
        # rounded once to the input's dtype, as PyTorch's mixed-type kernel does
        wide = topi.nn.layer_norm(topi.cast(x, "float32"), weight, bias, axis=axes, epsilon=eps)
        return (topi.cast(wide, x.dtype), None, None)
    return (topi.nn.layer_norm(x, weight, bias, axis=axes, epsilon=eps), None, None)


def wider_affine_norm(node: torch.fx.Node) -> bool:
    """Whether ``node`` is a layer norm of a 16-bit input with float32 weight and bias (what
    ``torch.autocast`` hands a LayerNorm after a linear layer) whose statistics nothing reads:
    eager's mixed-type kernel gives them in float32 where the trace says the input's dtype,
    so a training forward stays in PyTorch."""
    if node.target is not aten.native_layer_norm.default:
        return False
    x = node.args[0].meta.get("val")
    if not isinstance(x, torch.Tensor) or str(x.dtype).removeprefix("torch.") not in (
        _NARROW_FLOATS
    ):
        return False
    affine = [a.meta.get("val") for a in node.args[2:4] if isinstance(a, torch.fx.Node)]
    if not all(isinstance(p, torch.Tensor) and p.dtype == torch.float32 for p in affine):
        return False
    return all(user.target is operator.getitem and user.args[1] == 0 for user in node.users)


@_register(aten.max_pool2d_with_indices.default, results=(0,))
def _max_pool(
    x: te.Tensor,
    kernel: Any,
    stride: Any = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> tuple:
    kernel = _pair(kernel)
    stride = _pair(stride) if stride else kernel
    source = blocked_source(x)
    if source is not None:
        out = max_pool_nchwc(source, kernel, stride, _pair(padding), _pair(dilation), ceil_mode,
                             x.shape[1])  # fmt: skip
        if out is not None:
            return (out, None)
    out = topi.nn.pool2d(x, kernel, stride, _pair(dilation), _pair(padding), "max", ceil_mode)
    return (out, None)


@_register(aten.avg_pool2d.default)
def _avg_pool(
    x: te.Tensor,
    kernel: Any,
    stride: Any = (),
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: Any = None,
) -> te.Tensor:
    kernel = _pair(kernel)
    stride = _pair(stride) if stride else kernel
    return topi.nn.avg_pool2d(x, kernel, stride, _pair(padding), ceil_mode, count_include_pad)


ACCEPTS[aten.avg_pool2d.default] = lambda node: len(node.args) < 7 or node.args[6] is None


@_register(aten._adaptive_avg_pool2d.default)
def _adaptive_avg_pool(x: te.Tensor, output_size: Any) -> te.Tensor:
    return topi.nn.adaptive_avg_pool2d(x, _pair(output_size))


def _reduction(fn: Callable) -> Converter:
    def convert(x: te.Tensor, dims: Any = None, keepdim: bool = False, **_: Any) -> te.Tensor:
        if not x.shape:  # a 0-d tensor reduced over dim 0 or -1 (as PyTorch allows): itself
            return topi.identity(x)
        dims = [dims] if isinstance(dims, int) else dims
        axes = None if not dims else [_axis(d, len(x.shape)) for d in dims]
        return fn(x, axes, keepdims=keepdim)

    return convert


_register(aten.mean.dim, aten.mean.default)(_reduction(topi.mean))
_register(aten.sum.default)(_reduction(topi.sum))
_register(aten.sum.dim_IntList)(_reduction(topi.sum))
_register(aten.amax.default)(_reduction(topi.max))
_register(aten.amin.default)(_reduction(topi.min))
# A dtype= argument is the dtype the reduction computes in: its input arrives cast to it
# (promotion.py), so the converters ignore it.


@_register(aten._softmax.default)
def _softmax(x: te.Tensor, dim: int, half_to_float: bool = False) -> te.Tensor:
    return _over_last_of_0d(topi.nn.softmax, x, dim)


@_register(aten._log_softmax.default)
def _log_softmax(x: te.Tensor, dim: int, half_to_float: bool = False) -> te.Tensor:
    return _over_last_of_0d(topi.nn.log_softmax, x, dim)


def _over_last_of_0d(fn: Callable, x: te.Tensor, dim: int) -> te.Tensor:
    """``fn(x, axis=dim)``; a 0-d ``x`` (PyTorch takes dim 0 or -1 there) as one element."""
    if x.shape:
        return fn(x, axis=_axis(dim, len(x.shape)))
    return topi.reshape(fn(topi.reshape(x, [1]), axis=0), [])


# --- shapes and layouts ----------------------------------------------------------------------


@_register(aten.view.default, aten._unsafe_view.default, aten.reshape.default)
def _view(x: te.Tensor, shape: Any) -> te.Tensor:
    return topi.reshape(x, list(shape))


@_register(aten.permute.default)
def _permute(x: te.Tensor, dims: Any) -> te.Tensor:
    return topi.transpose(x, [_axis(d, len(x.shape)) for d in dims])


@_register(aten.t.default)
def _t(x: te.Tensor) -> te.Tensor:
    return topi.transpose(x, [1, 0]) if len(x.shape) == 2 else topi.identity(x)


@_register(aten.transpose.int)
def _transpose(x: te.Tensor, dim0: int, dim1: int) -> te.Tensor:
    axes = list(range(len(x.shape)))
    a, b = _axis(dim0, len(axes)), _axis(dim1, len(axes))
    axes[a], axes[b] = axes[b], axes[a]
    return topi.transpose(x, axes)


@_register(aten.expand.default)
def _expand(x: te.Tensor, shape: Any) -> te.Tensor:
    lead = len(shape) - len(x.shape)
    target = [
        x.shape[i - lead] if (isinstance(s, int) and s == -1) else s for i, s in enumerate(shape)
    ]
    return topi.broadcast_to(x, target)


@_register(aten.unsqueeze.default)
def _unsqueeze(x: te.Tensor, dim: int) -> te.Tensor:
    return topi.expand_dims(x, _axis(dim, len(x.shape) + 1))


@_register(aten.squeeze.dim, aten.squeeze.dims)
def _squeeze(x: te.Tensor, dims: Any) -> te.Tensor:
    if not x.shape:  # a 0-d tensor: nothing to squeeze (PyTorch takes dim 0 or -1)
        return topi.identity(x)
    dims = [dims] if isinstance(dims, int) else list(dims)
    axes = [_axis(d, len(x.shape)) for d in dims]
    # TE shapes hold IntImm, not int: const_int reads both (a symbolic size is never squeezed,
    # as PyTorch squeezes only dimensions that are 1)
    axes = [a for a in axes if const_int(x.shape[a]) == 1]
    return topi.squeeze(x, axes) if axes else topi.identity(x)


@_register(aten.cat.default)
def _cat(tensors: Any, dim: int = 0) -> te.Tensor:
    tensors = list(tensors)
    if len({len(t.shape) for t in tensors}) > 1:
        # PyTorch's legacy rule: 1-d empty tensors (torch.empty(0)) are skipped beside others
        tensors = [t for t in tensors if not (len(t.shape) == 1 and const_int(t.shape[0]) == 0)]
    return topi.concatenate(tensors, axis=_axis(dim, len(tensors[0].shape)))


@_register(aten.slice.Tensor)
def _slice(
    x: te.Tensor,
    dim: int = 0,
    start: Any = None,
    end: Any = None,
    step: int = 1,
    *,
    extent: Any = None,
) -> Any:
    axis = _axis(dim, len(x.shape))
    start = 0 if start is None else start
    end = None if end is None or (isinstance(end, int) and end >= 2**62) else end
    symbolic = const_int(x.shape[axis]) is None or isinstance(start, te.Expr)
    symbolic = symbolic or isinstance(end, te.Expr)
    if extent is not None and symbolic and (isinstance(start, te.Expr) or start >= 0) and step > 0:
        # On a symbolic axis, or with bounds that are symbolic sizes (a UNet's crop
        # x[..., :skip.shape[2]], positions[:seq]), the traced graph knows the extent (x[:, :4]
        # of a size guarded to be 4 or more is 4), where strided_slice alone says min(4, n),
        # which does not broadcast against 4. (A symbolic start is non-negative: the trace
        # guarded its sign; ACCEPTS.)
        def read(*i: Any) -> Any:
            def at(v: Any) -> Any:
                symbolic_start = isinstance(start, te.Expr) and start.dtype != v.dtype
                return v * step + (start.astype(v.dtype) if symbolic_start else start)

            return x[tuple(at(v) if d == axis else v for d, v in enumerate(i))]

        shape = [extent if d == axis else n for d, n in enumerate(x.shape)]
        return te.compute(shape, read, name="T_strided_slice", tag=topi.tag.INJECTIVE)
    return topi.strided_slice(x, [start], [end], [step], axes=[axis])


def _slice_accepts(node: torch.fx.Node) -> bool:
    def known(a: Any) -> bool:
        if isinstance(a, torch.fx.Node):  # a symbolic size: non-negative where traced
            val = a.meta.get("val")
            hint = getattr(getattr(val, "node", None), "hint", None)
            return isinstance(val, torch.SymInt) and hint is not None and hint >= 0
        return isinstance(a, int) or a is None

    step = node.args[4] if len(node.args) > 4 else 1
    return all(known(a) for a in node.args[2:4]) and isinstance(step, int)


ACCEPTS[aten.slice.Tensor] = _slice_accepts


@_register(aten.split_with_sizes.default, aten.split.Tensor)
def _split(x: te.Tensor, sizes: Any, dim: int = 0) -> tuple:
    axis = _axis(dim, len(x.shape))
    if isinstance(sizes, int):  # split.Tensor: equal chunks of `sizes`
        total = x.shape[axis]
        sizes = [min(sizes, total - start) for start in range(0, total, sizes)]
    outs, start = [], 0
    for size in sizes:
        outs.append(topi.strided_slice(x, [start], [start + size], [1], axes=[axis]))
        start += size
    return tuple(outs)


def _split_accepts(node: torch.fx.Node) -> bool:
    size = (
        node.args[0]
        .meta["val"]
        .shape[_axis(node.args[2] if len(node.args) > 2 else 0, node.args[0].meta["val"].dim())]
    )
    sizes = node.args[1]
    return isinstance(size, int) and (
        isinstance(sizes, int) or all(isinstance(s, int) for s in sizes)
    )


for _target in (aten.split_with_sizes.default, aten.split.Tensor):
    ACCEPTS[_target] = _split_accepts
    PRODUCED_RESULTS[_target] = tuple(range(64))


@_register(aten.select.int)
def _select(x: te.Tensor, dim: int, index: int) -> te.Tensor:
    axis = _axis(dim, len(x.shape))
    size = x.shape[axis]
    if index < 0:
        index = index + size
    # A direct read rather than a slice then a squeeze: the squeeze cannot prove a slice of a
    # symbolic dimension has length 1.
    shape = [d for k, d in enumerate(x.shape) if k != axis]
    return te.compute(
        shape,
        lambda *i: x[(*i[:axis], index, *i[axis:])],
        name="T_select",
        tag="injective",
    )


ACCEPTS[aten.select.int] = lambda node: isinstance(node.args[2], int)


@_register(operator.getitem)
def _getitem(values: Any, index: int) -> Any:
    return values[index]


# --- sizes -----------------------------------------------------------------------------------
# A symbolic size read from a tensor (``x.reshape(x.shape[0], -1)`` under torch.export) and the
# arithmetic on it: a size expression of the kernel. Their results are ints, never tensors, so
# the partitioner leaves them out of partitions (a partition takes the size as an input); a
# whole graph compiled at once (pytvmbridge.torch.compile) converts them here.


@_register(aten.sym_size.int)
def _sym_size(x: te.Tensor, dim: int) -> Any:
    return x.shape[_axis(dim, len(x.shape))]


for _fn in (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod):
    _register(_fn)(_fn)  # TE expressions and ints both implement them (// and % floor)


@_register(operator.truediv)
def _size_ratio(a: Any, b: Any) -> Any:
    """``a / b`` of sizes, a double as Python divides them: F.interpolate's scale under
    dynamic sizes (input size / output size), which a tensor then reads as a scalar."""
    if not isinstance(a, te.Expr) and not isinstance(b, te.Expr):
        return a / b
    a, b = (v.astype("float64") if isinstance(v, te.Expr) else float(v) for v in (a, b))
    return a / b


# The training path: backward operators left whole by the decompositions, derived by te.gradient.
from ..autodiff import graph_grads  # noqa: E402, F401  (registers its converters here)
from . import ops_math, ops_reductions, ops_spatial  # noqa: E402, F401  (likewise)

# isort: split
# Last: it extends converters registered above to integer and bool tensors.
from . import ops_index  # noqa: E402, F401

__all__ = [
    "ACCEPTS",
    "COMPARISONS",
    "CONVERTERS",
    "ELEMENTWISE",
    "OTHER_DTYPES",
    "PREPARE",
    "PRODUCED_RESULTS",
    "in_float32",
    "norm_statistics",
]
