"""The graph backend's training path: backward ATen operators that the core decompositions
leave whole (``convolution_backward``, ``avg_pool2d_backward``,
``max_pool2d_with_indices_backward``) are converted by differentiating the forward operator's
computation with ``te.gradient``, so AOT autograd's backward graph is compiled by the same
machinery as ``@kernel`` gradients instead of running in PyTorch.

Max pooling routes each output's gradient to the one input element PyTorch's forward recorded
(the first maximum of its window, in row-major order), where the gradient of a max would give it
to every tied maximum (after a ReLU, a window of zeros is common). So a training forward computes
that index too (``max_pool2d_with_indices`` gives int64 indices, the ones PyTorch computes), and
the backward is ``te.gradient`` of the pooling written as a read through the recorded index: a
gather over the windows that cover each input element. ReLU's gradient decomposes into
``where(le(y, 0), scalar_tensor(0), g)``: both are converted here too.

The converters join :data:`pytvmbridge.graph.ops.CONVERTERS` when that table is imported.

Example:
    >>> import torch
    >>> from pytvmbridge.graph.ops import CONVERTERS
    >>> torch.ops.aten.max_pool2d_with_indices_backward.default in CONVERTERS
    True
"""

from __future__ import annotations

from typing import Any

import torch

from .. import te, topi
from ..graph import ops
from ..graph.layout import blocking
from ..graph.promotion import DTYPE_NAMES, number
from ..graph.traced_sizes import in_sizes
from .gradient import gradient

aten = torch.ops.aten


def convolution_backward(
    grad_output: te.Tensor,
    x: te.Tensor,
    w: te.Tensor,
    bias_sizes: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    transposed: bool,
    output_padding: Any,
    groups: int,
    output_mask: Any,
) -> tuple[Any, Any, Any]:
    """(grad_input, grad_weight, grad_bias) of ``aten.convolution``; masked-off results are None.

    Example:
        >>> from pytvmbridge import te
        >>> g = te.placeholder((1, 2, 4, 4), name="g")
        >>> x = te.placeholder((1, 3, 4, 4), name="x")
        >>> w = te.placeholder((2, 3, 3, 3), name="w")
        >>> dx, dw, db = convolution_backward(
        ...     g, x, w, [2], [1], [1], [1], False, [0], 1, [True, True, True])
        >>> dx.shape, dw.shape, db.shape
        ((1, 3, 4, 4), (2, 3, 3, 3), (2,))
    """
    forward = ops.CONVERTERS[aten.convolution.default]  # the forward operator's computation
    # in NCHW: the gradient of the blocked form (NCHWc, graph/layout.py) differentiates through
    # its packing and unpacking (one training step of a small CNN: 12 ms against 2.6 ms)
    with blocking(0):
        out = forward(x, w, None, stride, padding, dilation, transposed, output_padding, groups)
    want = [t for t, m in zip((x, w), output_mask[:2], strict=True) if m]
    grads = iter(gradient(out, want, in_sizes(grad_output, list(out.shape))) if want else [])
    dx = next(grads) if output_mask[0] else None
    dw = next(grads) if output_mask[1] else None
    db = topi.sum(grad_output, axis=(0, 2, 3)) if output_mask[2] else None
    return (dx, dw, db)


def _conv_backward_accepts(node: torch.fx.Node) -> bool:
    args = node.args
    return len(args[2].meta["val"].shape) == 4 and not args[7]


def avg_pool2d_backward(
    grad_output: te.Tensor,
    x: te.Tensor,
    kernel: Any,
    stride: Any,
    padding: Any,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Any,
) -> te.Tensor:
    """The input gradient of ``aten.avg_pool2d``.

    Example:
        >>> from pytvmbridge import te
        >>> g = te.placeholder((1, 1, 2, 2), name="g")
        >>> x = te.placeholder((1, 1, 4, 4), name="x")
        >>> avg_pool2d_backward(g, x, [2, 2], [2, 2], [0, 0], False, True, None).shape
        (1, 1, 4, 4)
    """
    forward = ops.CONVERTERS[aten.avg_pool2d.default]
    with blocking(0):
        out = forward(x, kernel, stride, padding, ceil_mode, count_include_pad)
    return gradient(out, x, grad_output)


def _pool_window(
    kernel: Any, stride: Any, padding: Any, dilation: Any
) -> tuple[tuple[int, int], ...]:
    pair = ops._pair
    kernel = pair(kernel)
    stride = pair(stride) if stride else kernel
    return kernel, stride, pair(padding), pair(dilation)


def _window_reads(
    x: te.Tensor, window: tuple[tuple[int, int], ...], fn: Any
) -> tuple[Any, list[Any]]:
    """(``at``, the window's reduce axes): ``at(y, x)`` is ``fn(inside, iy, ix)`` over the window
    of output (y, x), ``iy``/``ix`` the input row and column read, ``inside`` false where they
    fall in the padding."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = window
    h, w = x.shape[2], x.shape[3]
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")

    def at(y: Any, xx: Any) -> Any:
        iy = y * sh + ry * dh - ph
        ix = xx * sw + rx * dw - pw
        inside = te.all(iy >= 0, iy < h, ix >= 0, ix < w)
        return fn(inside, iy, ix)

    return at, [ry, rx]


def max_pool_indices(
    x: te.Tensor, out: te.Tensor, kernel: Any, stride: Any, padding: Any, dilation: Any
) -> te.Tensor:
    """PyTorch's indices of ``max_pool2d_with_indices`` (flat positions ``iy * W + ix``), as its
    CPU kernel records them: it walks each window in row-major order and takes an element when
    it is greater than the running maximum *or is NaN*, so a window holding a NaN records its
    last NaN (the backward pass then sends the NaN its gradient), any other window its first
    element equal to the maximum.

    Example:
        >>> from pytvmbridge import te, topi
        >>> x = te.placeholder((1, 1, 4, 4), name="x")
        >>> max_pool_indices(x, topi.nn.max_pool2d(x, 2, 2), [2, 2], [], [0, 0], [1, 1]).dtype
        'int64'
    """
    w = x.shape[3]
    window = _pool_window(kernel, stride, padding, dilation)
    none, before = te.max_value("int64"), te.const(-1, "int64")

    def first_max(b: Any, ch: Any, y: Any, xx: Any) -> Any:
        def pick(inside: Any, iy: Any, ix: Any) -> Any:
            hit = te.if_then_else(inside, x[b, ch, iy, ix] == out[b, ch, y, xx], False)
            return te.if_then_else(hit, (iy * w + ix).astype("int64"), none)

        at, axes = _window_reads(x, window, pick)
        return te.min(at(y, xx), axis=axes)

    def last_nan(b: Any, ch: Any, y: Any, xx: Any) -> Any:
        def pick(inside: Any, iy: Any, ix: Any) -> Any:
            hit = te.if_then_else(inside, te.isnan(x[b, ch, iy, ix]), False)
            return te.if_then_else(hit, (iy * w + ix).astype("int64"), before)

        at, axes = _window_reads(x, window, pick)
        return te.max(at(y, xx), axis=axes)

    first = te.compute(out.shape, first_max, name="pool_first_max")
    nan = te.compute(out.shape, last_nan, name="pool_last_nan")
    return te.compute(
        out.shape,
        lambda *i: te.if_then_else(te.isnan(out[i]), nan[i], first[i]),
        name="pool_indices",
        tag="injective",
    )


def max_pool2d_with_indices(
    x: te.Tensor,
    kernel: Any,
    stride: Any = (),
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
) -> tuple[te.Tensor, te.Tensor]:
    """``aten.max_pool2d_with_indices``: the pooling (the graph compiler's own converter) and,
    for a training forward that saves them, PyTorch's indices (:func:`max_pool_indices`)."""
    out, _ = _max_pool_values(x, kernel, stride, padding, dilation, ceil_mode)
    return out, max_pool_indices(x, out, kernel, stride, padding, dilation)


def max_pool2d_with_indices_backward(
    grad_output: te.Tensor,
    x: te.Tensor,
    kernel: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    indices: te.Tensor,
) -> te.Tensor:
    """The input gradient of ``aten.max_pool2d_with_indices``: ``te.gradient`` of the pooling
    read through ``indices`` (each output is the window element at its recorded position).

    Example:
        >>> from pytvmbridge import te
        >>> g = te.placeholder((1, 1, 2, 2), name="g")
        >>> x = te.placeholder((1, 1, 4, 4), name="x")
        >>> i = te.placeholder((1, 1, 2, 2), "int64", name="i")
        >>> max_pool2d_with_indices_backward(g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, i).shape
        (1, 1, 4, 4)
    """
    w = x.shape[3]
    zero = te.const(0, x.dtype)

    def routed(b: Any, ch: Any, y: Any, xx: Any) -> Any:
        def read(inside: Any, iy: Any, ix: Any) -> Any:
            chosen = te.all(inside, indices[b, ch, y, xx] == (iy * w + ix).astype("int64"))
            return te.if_then_else(chosen, x[b, ch, iy, ix], zero)

        at, axes = _window_reads(x, _pool_window(kernel, stride, padding, dilation), read)
        return te.sum(at(y, xx), axis=axes)

    return gradient(te.compute(grad_output.shape, routed, name="pool_routed"), x, grad_output)


def scalar_tensor(value: Any, dtype: Any = None, **_: Any) -> te.Tensor:
    """``aten.scalar_tensor``: a 0-d constant of ``dtype`` (float32 by default; ReLU's gradient
    selects it, in the gradient's dtype; cross entropy's ignored-label count, an int64)."""
    constant = number(value, DTYPE_NAMES.get(dtype, "float32"))
    return te.compute((), lambda: constant, name="scalar")


def where(condition: te.Tensor, a: Any, b: Any) -> te.Tensor:
    """``aten.where.self`` with a condition computed in the same graph (a comparison)."""
    return topi.where(condition, a, b)


def _where_accepts(node: torch.fx.Node) -> bool:
    # a bool condition the kernel computes, or one it is handed (a graph input such as an
    # attention mask, or a bool PyTorch computes beside the kernel): bool inputs enter kernels
    return _bool_operand(node.args[0])


_BOOL_VIEWS = (
    aten.unsqueeze.default,
    aten.expand.default,
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.permute.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
)


def _bool_operand(node: Any) -> bool:
    """A bool tensor a kernel can read: one it computes (:func:`_bool_condition`) or any other
    bool tensor of the graph (an input, or a result left to PyTorch)."""
    if _bool_condition(node):
        return True
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return isinstance(val, torch.Tensor) and val.dtype == torch.bool


_max_pool_values = ops._max_pool  # the inference converter (values only)


def _bool_condition(node: Any) -> bool:
    """A bool the kernel computes from float tensors: a comparison, or an or of such."""
    if not isinstance(node, torch.fx.Node) or node.op != "call_function":
        return False
    if node.target in ops.COMPARISONS:
        return True
    return node.target in (aten.bitwise_or.Tensor, aten.bitwise_and.Tensor) and all(
        _bool_condition(a) for a in node.args
    )


def _bool_logic_accepts(node: torch.fx.Node) -> bool:
    return all(_bool_operand(a) for a in node.args)


def bitwise_or(a: te.Tensor, b: te.Tensor) -> te.Tensor:
    """``aten.bitwise_or.Tensor`` of two bool conditions (ReLU6's gradient: ``x <= 0 | x >= 6``)."""
    return topi.logical_or(a, b)


def bitwise_and(a: te.Tensor, b: te.Tensor) -> te.Tensor:
    """``aten.bitwise_and.Tensor`` of two bool conditions (hardsigmoid's gradient:
    ``(x > -3) & (x < 3)``)."""
    return topi.logical_and(a, b)


def native_layer_norm(
    x: te.Tensor, shape: Any, weight: Any, bias: Any, eps: float
) -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    """``aten.native_layer_norm``: the normalised output (the graph compiler's converter) and,
    for a training forward that saves them, the mean and reciprocal deviation its backward
    reads (shape ``(..., 1, ..., 1)``)."""
    out = ops._layer_norm(x, shape, weight, bias, eps)[0]
    axes = list(range(len(x.shape) - len(shape), len(x.shape)))
    mean, rstd = ops.norm_statistics(x, axes, eps)
    return out, mean, rstd


def batch_norm_training(
    x: te.Tensor,
    weight: Any,
    bias: Any,
    running_mean: te.Tensor,
    running_var: te.Tensor,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[te.Tensor, ...]:
    """``aten._native_batch_norm_legit_functional`` in training: normalised by the batch's
    statistics over (N, H, W); results (out, mean, 1 / std, new running mean, new running
    variance (unbiased), as PyTorch updates them)."""
    axes = [0, *range(2, len(x.shape))]
    mean, rstd = ops.norm_statistics(x, axes, eps)
    out = topi.multiply(topi.subtract(x, mean), rstd)
    channel = [1, -1] + [1] * (len(x.shape) - 2)
    if weight is not None:
        out = topi.multiply(out, topi.reshape(weight, channel))
    if bias is not None:
        out = topi.add(out, topi.reshape(bias, channel))
    count = 1
    for a in axes:
        count *= int(x.shape[a])
    flat_mean = topi.reshape(mean, [x.shape[1]])
    centred = topi.subtract(x, mean)
    var_sum = topi.sum(topi.multiply(centred, centred), axis=axes)
    keep = te.const(1.0 - momentum, x.dtype)
    new_mean = topi.add(
        topi.multiply(running_mean, keep), topi.multiply(flat_mean, te.const(momentum, x.dtype))
    )
    unbiased = te.const(momentum / max(count - 1, 1), x.dtype)
    new_var = topi.add(topi.multiply(running_var, keep), topi.multiply(var_sum, unbiased))
    return out, flat_mean, topi.reshape(rstd, [x.shape[1]]), new_mean, new_var


def _batch_norm_accepts(node: torch.fx.Node) -> bool:
    # training with running statistics and static sizes (the unbiased count is a constant)
    x = node.args[0].meta["val"]
    return bool(node.args[5]) and all(isinstance(d, int) for d in x.shape)


def register() -> None:
    """Adds the converters to the graph compiler's table (idempotent)."""
    ops.CONVERTERS[aten.convolution_backward.default] = convolution_backward
    ops.PRODUCED_RESULTS[aten.convolution_backward.default] = (0, 1, 2)
    ops.ACCEPTS[aten.convolution_backward.default] = _conv_backward_accepts
    ops.CONVERTERS[aten.avg_pool2d_backward.default] = avg_pool2d_backward
    ops.ACCEPTS[aten.avg_pool2d_backward.default] = lambda node: node.args[7] is None
    ops.CONVERTERS[aten.max_pool2d_with_indices.default] = max_pool2d_with_indices
    ops.PRODUCED_RESULTS[aten.max_pool2d_with_indices.default] = (0, 1)
    ops.OTHER_DTYPES[aten.max_pool2d_with_indices.default] = (torch.int64,)
    ops.CONVERTERS[aten.max_pool2d_with_indices_backward.default] = max_pool2d_with_indices_backward
    ops.OTHER_DTYPES[aten.max_pool2d_with_indices_backward.default] = (torch.int64,)
    ops.CONVERTERS[aten.scalar_tensor.default] = scalar_tensor
    ops.CONVERTERS[aten.where.self] = where
    ops.OTHER_DTYPES[aten.where.self] = (torch.bool,)
    ops.ACCEPTS[aten.where.self] = _where_accepts
    for target, convert in (
        (aten.bitwise_or.Tensor, bitwise_or),
        (aten.bitwise_and.Tensor, bitwise_and),
    ):
        ops.CONVERTERS[target] = convert
        ops.OTHER_DTYPES[target] = (torch.bool,)
        ops.ACCEPTS[target] = _bool_logic_accepts
    # views of a bool mask (an attention padding mask broadcast over heads and queries)
    for target in _BOOL_VIEWS:
        if target in ops.CONVERTERS and torch.bool not in ops.OTHER_DTYPES.get(target, ()):
            ops.OTHER_DTYPES[target] = (*ops.OTHER_DTYPES.get(target, ()), torch.bool)
    ops.CONVERTERS[aten.native_layer_norm.default] = native_layer_norm
    ops.PRODUCED_RESULTS[aten.native_layer_norm.default] = (0, 1, 2)
    ops.CONVERTERS[aten._native_batch_norm_legit_functional.default] = batch_norm_training
    ops.PRODUCED_RESULTS[aten._native_batch_norm_legit_functional.default] = (0, 1, 2, 3, 4)
    ops.ACCEPTS[aten._native_batch_norm_legit_functional.default] = _batch_norm_accepts


register()
