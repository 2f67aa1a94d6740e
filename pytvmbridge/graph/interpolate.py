"""``F.interpolate`` under ``torch.compile`` computing what eager computes.

PyTorch's ``upsample_*2d`` operators carry Python kernels that split them into
``arange``/multiply/``floor``/index operators during AOT tracing, whatever the decomposition
table says (the backend converts those, ``ops_index.py``). The split differs from the C++ kernel
eager runs where the kernel takes a shortcut: nearest copies an axis whose output size equals
its input's and takes ``o >> 1`` for an output of exactly twice the input, whatever the scale
factor; bilinear copies along an axis whose output size equals its input's. The split resamples
with the given scale instead (``scale_factor=1.1`` of a 7 x 7 image: eager's copy against a
resampling, 8.0 apart; Inductor shares it: pytorch#175154, #198201). The scale factor only
matters where the kernel uses it, so :func:`interpolate_as_eager` passes none for those axes:
the split then resamples with the sizes' own ratio, 1 or 1/2, which is the copy and ``o >> 1``
exactly (checked against eager over scales 0.5 to 3, per axis too, in the tests). Before AOT
autograd, each ``F.interpolate`` call of the Dynamo graph is pointed at it. Over a symbolic
image height or width the shortcut depends on the size the call brings, and the result is
PyTorch's split's (as ``aot_eager``'s and Inductor's).

Example:
    >>> import torch
    >>> x = torch.arange(49.0).reshape(1, 1, 7, 7)
    >>> bool((interpolate_as_eager(x, scale_factor=1.1) == torch.nn.functional.interpolate(
    ...     x, scale_factor=1.1)).all())
    True
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

aten = torch.ops.aten


def _pair(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value, value]


def interpolate_as_eager(
    input: torch.Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> torch.Tensor:
    """``F.interpolate``, with the scale factors the eager kernel ignores left out (see the
    module's notes): 4-d nearest and bilinear of constant sizes given a scale factor; anything
    else is ``F.interpolate`` itself."""
    # constant image sizes (a symbolic batch or channel count is fine): whether the kernel's
    # shortcut applies is known here. Over a symbolic height or width it is known only when the
    # kernel runs, and the call is PyTorch's (its split resamples there too, as Inductor does).
    static = input.dim() == 4 and all(isinstance(d, int) for d in input.shape[2:])
    if (
        input.dim() != 4
        or antialias
        or not static
        or mode not in ("nearest", "bilinear")
        or scale_factor is None
        or size is not None
        or recompute_scale_factor
    ):
        return F.interpolate(
            input, size, scale_factor, mode, align_corners, recompute_scale_factor, antialias
        )
    factors = [float(s) for s in _pair(scale_factor)]
    sizes = [int(input.shape[2 + d]) for d in range(2)]
    # the .vec kernel's output size: floor(input size * scale) in double
    out_size = [math.floor(sizes[d] * factors[d]) for d in range(2)]
    scales: list[float | None] = list(factors)
    if mode == "nearest":
        for d in range(2):
            if out_size[d] in (sizes[d], 2 * sizes[d]):
                scales[d] = None
        return aten.upsample_nearest2d.default(input, out_size, *scales)
    for d in range(2):
        if out_size[d] == sizes[d]:
            scales[d] = None
    return aten.upsample_bilinear2d.default(input, out_size, bool(align_corners), *scales)


def match_eager_interpolate(gm: torch.fx.GraphModule) -> None:
    """Points each ``F.interpolate`` call of the Dynamo graph ``gm`` at
    :func:`interpolate_as_eager` (in place)."""
    changed = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is F.interpolate:
            node.target = interpolate_as_eager
            changed = True
    if changed:
        gm.recompile()


__all__ = ["interpolate_as_eager", "match_eager_interpolate"]
