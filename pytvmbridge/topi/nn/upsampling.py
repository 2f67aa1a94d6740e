"""Nearest and bilinear upsampling of NCHW images, with PyTorch's source-index arithmetic.

``torch.nn.functional.interpolate`` picks each output pixel's source from a scale held in
float32 (float64 for float64 bilinear data): ``1 / scale_factor`` when a scale factor is given
(and not recomputed), else ``in / out``; ``align_corners`` bilinear uses
``(in - 1) / (out - 1)``. The scale is computed here in Python with NumPy's correctly rounded
float32 arithmetic and the per-pixel products in the kernel's float type, so the floor that
picks a source row lands on the same side of an integer as PyTorch's CPU kernel.

Example:
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> X = tvm.placeholder((1, 2, 4, 4), name="X")
    >>> topi.nn.upsample_nearest2d(X, (6, 6), (1.5, 1.5)).shape
    (1, 2, 6, 6)
    >>> topi.nn.upsample_bilinear2d(X, (8, 3), align_corners=True).shape
    (1, 2, 8, 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import te
from ...error import TVMValueError
from .. import tag
from ..utils import (
    Tensor,
    accumulate_dtype,
    cast_to,
    check_ndim,
    check_tensor,
    const_int,
    require_float,
)

Scales = Sequence[float | None] | None


def _sizes(data: Tensor, output_size: Sequence[int], what: str) -> list[tuple[int, int]]:
    check_tensor(data, f"data of {what}")
    check_ndim(data, 4, f"data of {what}", "NCHW")
    if not isinstance(output_size, Sequence) or len(output_size) != 2:
        raise TVMValueError(
            f"output_size of {what} must be a (height, width) pair, found {output_size!r}"
        )
    sizes = []
    for d, out in zip((2, 3), output_size, strict=True):
        size, out = const_int(data.shape[d]), const_int(out)
        if size is None or out is None or size < 1 or out < 1:
            raise TVMValueError(f"{what} needs constant positive image sizes, found "
                                f"{tuple(data.shape)} -> {tuple(output_size)}")  # fmt: skip
        sizes.append((size, out))
    return sizes


def _scale(size: int, out: int, scale: float | None, ftype: Any) -> Any:
    """PyTorch's ``compute_scales_value``: ``1 / scale`` rounded once to ``ftype`` when a
    positive scale is given, else ``in / out`` divided in ``ftype``."""
    if scale is not None and scale > 0:
        return ftype(1.0 / scale)
    return ftype(size) / ftype(out)


def _scale_list(scales: Scales, what: str) -> list[float | None]:
    if not scales:
        return [None, None]
    if not isinstance(scales, Sequence) or len(scales) != 2:
        raise TVMValueError(
            f"scales of {what} must be a (height, width) pair of numbers or None, found {scales!r}"
        )
    return [None if s is None else float(s) for s in scales]


def upsample_nearest2d(
    data: Tensor, output_size: Sequence[int], scales: Scales = None, exact: bool = False
) -> Tensor:
    """``F.interpolate(mode="nearest")`` (``exact=True``: ``"nearest-exact"``) of NCHW
    ``data`` to ``output_size``; ``scales`` are the (h, w) scale factors PyTorch was given, if
    any (they, not the sizes, set the source index).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.upsample_nearest2d(tvm.placeholder((1, 1, 3, 5)), (7, 2)).op.tag
        'injective'
    """
    what = "upsample_nearest2d"
    sizes = _sizes(data, output_size, what)
    f32 = np.float32

    def source(o: Any, size: int, out: int, scale: float | None) -> Any:
        if not exact and out == size:
            return o
        if not exact and out == 2 * size:
            return te.floordiv(o, 2)
        s = te.const(float(_scale(size, out, scale, f32)), "float32")
        # float32 products, as PyTorch's floorf(dst * scale): the double product of the exact
        # variant, (dst + 0.5) * scale, rounds to the same float32
        pos = cast_to(o, "float32") + te.const(0.5, "float32") if exact else cast_to(o, "float32")
        return te.min(cast_to(te.floor(pos * s), "int32"), size - 1)

    (h, oh), (w, ow) = sizes
    sh, sw = _scale_list(scales, what)

    def fcompute(n: Any, c: Any, y: Any, x: Any) -> te.Expr:
        return data[n, c, source(y, h, oh, sh), source(x, w, ow, sw)]

    return te.compute(
        (data.shape[0], data.shape[1], oh, ow), fcompute, name="T_upsample_nearest",
        tag=tag.INJECTIVE,
    )  # fmt: skip


def upsample_bilinear2d(
    data: Tensor, output_size: Sequence[int], align_corners: bool = False, scales: Scales = None
) -> Tensor:
    """``F.interpolate(mode="bilinear")`` of NCHW ``data`` to ``output_size``: each output is
    the two-by-two neighbourhood's weighted sum, interpolated along W then combined along H
    (PyTorch's order), in float32 for float16/bfloat16 data, rounded once.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.upsample_bilinear2d(tvm.placeholder((2, 3, 4, 4)), (5, 9)).shape
        (2, 3, 5, 9)
    """
    what = "upsample_bilinear2d"
    sizes = _sizes(data, output_size, what)
    require_float(data, what)
    acc = accumulate_dtype(data.dtype)
    ftype = np.float64 if acc == "float64" else np.float32

    def terms(o: Any, size: int, out: int, scale: float | None) -> tuple[Any, Any, Any]:
        """(i0, i1, lambda1) of output index ``o`` (PyTorch's compute_source_index_and_lambda)."""
        if out == size:
            return o, o, None
        if align_corners:
            ratio = ftype(size - 1) / ftype(out - 1) if out > 1 else ftype(0)
        else:
            ratio = _scale(size, out, scale, ftype)
        r = te.const(float(ratio), acc)
        pos = cast_to(o, acc)
        if align_corners:
            src = r * pos
        else:
            half = te.const(0.5, acc)
            src = te.max(r * (pos + half) - half, te.const(0.0, acc))
        i0 = te.min(cast_to(te.floor(src), "int32"), size - 1)
        lam = te.min(te.max(src - cast_to(i0, acc), te.const(0.0, acc)), te.const(1.0, acc))
        i1 = te.if_then_else(i0 < size - 1, i0 + 1, i0)
        return i0, i1, lam

    (h, oh), (w, ow) = sizes
    sh, sw = _scale_list(scales, what)
    one = te.const(1.0, acc)

    def lerp(a: Any, b: Any, lam: Any) -> Any:
        return a if lam is None else a * (one - lam) + b * lam

    def fcompute(n: Any, c: Any, y: Any, x: Any) -> te.Expr:
        y0, y1, ly = terms(y, h, oh, sh)
        x0, x1, lx = terms(x, w, ow, sw)

        def row(yy: Any) -> Any:
            return lerp(cast_to(data[n, c, yy, x0], acc), cast_to(data[n, c, yy, x1], acc), lx)

        return cast_to(lerp(row(y0), row(y1) if ly is not None else None, ly), data.dtype)

    return te.compute(
        (data.shape[0], data.shape[1], oh, ow), fcompute, name="T_upsample_bilinear",
        tag=tag.INJECTIVE,
    )  # fmt: skip
