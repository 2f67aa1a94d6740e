"""The graph backend's training path: backward ATen operators that the core decompositions
leave whole (``convolution_backward``, ``avg_pool2d_backward``) are converted by differentiating
the forward operator's computation with ``te.gradient``, so AOT autograd's backward graph is
compiled by the same machinery as ``@kernel`` gradients instead of running in PyTorch.

The converters join :data:`pytvmbridge.graph.ops.CONVERTERS` when that table is imported.
``max_pool2d_with_indices_backward`` stays in PyTorch: it takes int64 indices (the graph compiler
takes float32 tensors only) and routes each gradient to the one recorded index, where the
derived gradient would share it between tied maxima.

Example:
    >>> import torch
    >>> from pytvmbridge.graph.ops import CONVERTERS
    >>> torch.ops.aten.convolution_backward.default in CONVERTERS
    True
"""

from __future__ import annotations

from typing import Any

import torch

from .. import te, topi
from ..graph import ops
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
    out = forward(x, w, None, stride, padding, dilation, transposed, output_padding, groups)
    want = [t for t, m in zip((x, w), output_mask[:2], strict=True) if m]
    grads = iter(gradient(out, want, grad_output) if want else [])
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
    out = forward(x, kernel, stride, padding, ceil_mode, count_include_pad)
    return gradient(out, x, grad_output)


def register() -> None:
    """Adds the converters to the graph compiler's table (idempotent)."""
    ops.CONVERTERS[aten.convolution_backward.default] = convolution_backward
    ops.PRODUCED_RESULTS[aten.convolution_backward.default] = (0, 1, 2)
    ops.ACCEPTS[aten.convolution_backward.default] = _conv_backward_accepts
    ops.CONVERTERS[aten.avg_pool2d_backward.default] = avg_pool2d_backward
    ops.ACCEPTS[aten.avg_pool2d_backward.default] = lambda node: node.args[7] is None


register()
