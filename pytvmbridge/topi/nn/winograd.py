"""3x3 convolution by Winograd's minimal filtering: F(2x2, 3x3) and F(4x4, 3x3).

A stride-1 3x3 convolution computes each ``m x m`` tile of its output from an
``(m + 2) x (m + 2)`` tile of its input. Winograd's algorithm (Lavin and Gray, "Fast Algorithms
for Convolutional Neural Networks", 2015) does it as

    Y = A^T [ (G g G^T) * (B^T d B) ] A

with ``*`` elementwise: per tile and per pair of channels, ``(m + 2)^2`` multiplications instead
of ``9 m^2`` (2.25x fewer for m = 2, 4x for m = 4). Summed over the input channels, the products
become ``(m + 2)^2`` independent matrix products, one per point of the transformed tile:

1. the data transform ``V = B^T d B`` of every input tile (``"winograd_data_transform"``),
2. ``M[a] = V[a] U[a]`` over the input channels, with ``U = G g G^T`` the kernel transformed
   once ahead of time (``"conv2d_winograd_NCHWc"``, the stage that does the arithmetic),
3. the inverse transform ``Y = A^T M A`` back to output pixels (``"winograd_inverse_transform"``),
   into which automatic schedules fuse the bias, activation and residual epilogue.

The transforms are sums of a few input values with small constant coefficients, written out
per point of the tile (``B^T`` has two non-zeros a row for m = 2, at most four for m = 4); which
sum a point takes is a tree of comparisons on the tile's loop indices, resolved by a branch.
The layouts are channel-blocked (``NCHW[x]c``), as :func:`conv2d_NCHWc`'s: the matrix products
run over vectors of output channels like a 1x1 convolution.

F(4x4, 3x3) rounds more (its matrices hold 4, 5 and 1/24): float32 results differ from a direct
convolution's by about 1e-6 of the output's scale, F(2x2, 3x3)'s by less.

Example:
    >>> import numpy as np, torch, pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> X = tvm.placeholder((1, 8, 10, 10), name="X")
    >>> W = tvm.placeholder((16, 8, 3, 3), name="W")
    >>> Y = topi.nn.conv2d_winograd_nchw(X, W, 1, 1, 1, tile_size=2)
    >>> f = tvm.build(tvm.auto_schedule([Y]), [X, W, Y])
    >>> x, w = torch.randn(1, 8, 10, 10), torch.randn(16, 8, 3, 3)
    >>> y = torch.empty(1, 16, 10, 10)
    >>> f(x, w, y)
    >>> bool(torch.allclose(y, torch.nn.functional.conv2d(x, w, padding=1), atol=1e-4))
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ... import te
from ...error import TVMTypeError, TVMValueError
from .. import tag
from ..transform import layout_transform
from ..utils import Tensor, check_ndim, check_tensor, const_int, get_const_int, positive_pair
from .pad import PaddingArg, get_pad_tuple, pad

__all__ = [
    "WINOGRAD_TILE_SIZES",
    "conv2d_winograd_nchw",
    "conv2d_winograd_nchwc",
    "conv2d_winograd_weight_transform",
    "winograd_tile_size",
    "winograd_transform_matrices",
]

WINOGRAD_TILE_SIZES = (2, 4)
"""The output tile sizes ``m`` of F(m x m, 3 x 3) implemented."""

# Lavin and Gray's matrices, exact: B^T (data), G (kernel), A^T (output) for each tile size.
_F = Fraction
_MATRICES: dict[int, tuple[list[list[Any]], list[list[Any]], list[list[Any]]]] = {
    2: (
        [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
        [[1, 0, 0], [_F(1, 2), _F(1, 2), _F(1, 2)], [_F(1, 2), _F(-1, 2), _F(1, 2)], [0, 0, 1]],
        [[1, 1, 1, 0], [0, 1, -1, -1]],
    ),
    4: (
        [
            [4, 0, -5, 0, 1, 0],
            [0, -4, -4, 1, 1, 0],
            [0, 4, -4, -1, 1, 0],
            [0, -2, -1, 2, 1, 0],
            [0, 2, -1, -2, 1, 0],
            [0, 4, 0, -5, 0, 1],
        ],
        [
            [_F(1, 4), 0, 0],
            [_F(-1, 6), _F(-1, 6), _F(-1, 6)],
            [_F(-1, 6), _F(1, 6), _F(-1, 6)],
            [_F(1, 24), _F(1, 12), _F(1, 6)],
            [_F(1, 24), _F(-1, 12), _F(1, 6)],
            [0, 0, 1],
        ],
        [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
    ),
}


def _check_tile_size(tile_size: Any) -> int:
    m = const_int(tile_size)
    if m is None or m not in WINOGRAD_TILE_SIZES:
        raise TVMValueError(
            f"tile_size must be one of {WINOGRAD_TILE_SIZES} (F(m x m, 3 x 3)), found {tile_size!r}"
        )
    return m


def winograd_transform_matrices(tile_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A, B, G)`` of F(m x m, 3 x 3), float64, as TVM names them: the output of a tile is
    ``A.T @ ((G @ g @ G.T) * (B.T @ d @ B)) @ A`` for a 3x3 kernel ``g`` and an
    ``(m + 2) x (m + 2)`` input tile ``d`` (cross-correlation, as ``conv2d`` computes).

    Example:
        >>> import numpy as np
        >>> A, B, G = winograd_transform_matrices(2)
        >>> d, g = np.arange(16.0).reshape(4, 4), np.ones((3, 3))
        >>> (A.T @ ((G @ g @ G.T) * (B.T @ d @ B)) @ A).tolist()
        [[45.0, 54.0], [81.0, 90.0]]
    """
    bt, g, at = _MATRICES[_check_tile_size(tile_size)]
    as_array = lambda rows: np.array([[float(v) for v in row] for row in rows])  # noqa: E731
    return as_array(at).T, as_array(bt).T, as_array(g)


def winograd_tile_size(batch: Any, out_h: int, out_w: int) -> int:
    """The tile size the graph compiler uses for a stride-1 3x3 float32 convolution of this
    output size (0: a direct convolution does better).

    F(4x4) (4x fewer multiplications) wherever its tiles give each of the 36 matrix products
    at least 16 rows; else F(2x2) (2.25x fewer) where its tiles give 16 rows; else direct:
    with fewer rows a product is bound by reading the transformed kernel (16/9 or 4x the size
    of the kernel) and the transforms do not pay.

    ``benchmarks/winograd.py`` (each variant blocked and automatically scheduled, a ReLU fused,
    float32, 2 threads, AMD EPYC with AVX-512), direct / F(2x2) / F(4x4) ms: batch 1, 64
    channels at 56 x 56: 1.04 / 0.58 / 0.33; 128 at 28 x 28: 1.02 / 0.50 / 0.29; 256 at
    14 x 14 (16 tiles of F(4x4)): 1.01 / 0.47 / 0.40; 512 at 7 x 7 (4 tiles of F(4x4), 16 of
    F(2x2)): 1.08 / 0.77 / 1.03. Batch 8, 512 at 7 x 7 (32 tiles of F(4x4)): 8.21 / 5.40 /
    4.34. ``batch`` is None for a dynamic batch: it then counts as 1.

    Example:
        >>> [winograd_tile_size(1, size, size) for size in (56, 14, 7, 2)]
        [4, 4, 2, 0]
    """
    images = batch if isinstance(batch, int) and batch > 0 else 1
    for m in (4, 2):
        if images * -(-out_h // m) * -(-out_w // m) >= 16:
            return m
    return 0


def _tree(index: Any, values: Sequence[Any], lo: int = 0) -> Any:
    """``values[index - lo]`` as a balanced tree of ``if_then_else`` on a loop index: log2(n)
    comparisons, each side only evaluated when taken."""
    if len(values) == 1:
        return values[0]
    half = len(values) // 2
    return te.if_then_else(
        index < lo + half, _tree(index, values[:half], lo), _tree(index, values[half:], lo + half)
    )


def _weighted_sum(terms: Sequence[tuple[Any, Any]], dtype: str) -> Any:
    """``sum(c * x)`` over the non-zero coefficients, adding or subtracting where ``c`` is +-1."""
    out = None
    for coef, value in terms:
        if coef == 0:
            continue
        if abs(coef) != 1:
            value = value * te.const(float(abs(coef)), dtype)
        if out is None:
            out = value if coef > 0 else te.const(0.0, dtype) - value
        else:
            out = out + value if coef > 0 else out - value
    return te.const(0.0, dtype) if out is None else out


def _block_of(t: Tensor, what: str) -> int:
    return get_const_int(t.shape[-1], f"the channel block of {what}")


def conv2d_winograd_nchwc(
    data: Tensor,
    kernel: Tensor,
    padding: PaddingArg,
    tile_size: int,
    out_dtype: str | None = None,
) -> Tensor:
    """Stride-1 3x3 convolution of blocked ``data`` ``[N, C/bi, H, W, bi]`` with a transformed,
    blocked ``kernel`` ``[m + 2, m + 2, K/bo, C, bo]`` (:func:`conv2d_winograd_weight_transform`
    of the OIHW kernel, its output channels cut into blocks of ``bo``); returns the blocked
    output ``[N, K/bo, OH, OW, bo]``. Any of ``N``, ``H`` and ``W`` may be symbolic.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X = tvm.placeholder((tvm.var("n"), 2, 14, 14, 8))
        >>> U = tvm.placeholder((6, 6, 2, 16, 16))
        >>> topi.nn.conv2d_winograd_nchwc(X, U, 1, 4).shape
        (n, 2, 14, 14, 16)
    """
    m = _check_tile_size(tile_size)
    check_tensor(data, "data of conv2d_winograd_nchwc")
    check_tensor(kernel, "kernel of conv2d_winograd_nchwc")
    check_ndim(data, 5, "data of conv2d_winograd_nchwc", "NCHW[x]c")
    check_ndim(kernel, 5, "kernel of conv2d_winograd_nchwc", "[m + 2, m + 2, K/b, C, b]")
    if data.dtype != kernel.dtype:
        raise TVMTypeError(
            f"conv2d_winograd_nchwc: data is {data.dtype} and kernel is {kernel.dtype}; cast one"
        )
    alpha = m + 2
    n, c_blocks, in_h, in_w, in_block = data.shape
    in_block = _block_of(data, "data of conv2d_winograd_nchwc")
    out_block = _block_of(kernel, "kernel of conv2d_winograd_nchwc")
    k_alpha = (const_int(kernel.shape[0]), const_int(kernel.shape[1]))
    in_c = const_int(c_blocks) * in_block if const_int(c_blocks) is not None else None
    if k_alpha != (alpha, alpha) or const_int(kernel.shape[3]) != in_c:
        raise TVMValueError(
            f"conv2d_winograd_nchwc: kernel of shape {tuple(kernel.shape)} does not match "
            f"tile_size {m} and data {tuple(data.shape)} (expected [{alpha}, {alpha}, K/b, "
            f"{in_c}, b])"
        )
    out_blocks = kernel.shape[2]
    top, left, bottom, right = get_pad_tuple(padding, (3, 3))
    out_h, out_w = in_h + top + bottom - 2, in_w + left + right - 2
    const_h, const_w = const_int(out_h), const_int(out_w)
    if (const_h is not None and const_h < 1) or (const_w is not None and const_w < 1):
        raise TVMValueError(
            f"conv2d_winograd_nchwc: the 3x3 window does not fit the padded input "
            f"({in_h} + {top} + {bottom} by {in_w} + {left} + {right})"
        )
    # Symbolic image sizes: as many tiles as cover the output, the last ones partial.
    tiles_h, tiles_w = (
        -(-c // m) if c is not None else te.floordiv(d + (m - 1), m)
        for c, d in ((const_h, out_h), (const_w, out_w))
    )
    dtype = out_dtype or data.dtype
    # Padded to whole tiles: rows [-top, tiles_h * m + 2 - top) of the input.
    padded = pad(
        data,
        [0, 0, top, left, 0],
        [0, 0, tiles_h * m + 2 - in_h - top, tiles_w * m + 2 - in_w - left, 0],
        name="winograd_pad",
    )
    bt, _, at = (np.array([[float(v) for v in row] for row in mat]) for mat in _MATRICES[m])
    tile_shape = (n, c_blocks, tiles_h, tiles_w, in_block)

    def fdata(eps: Any, nu: Any, i: Any, cb: Any, ty: Any, tx: Any, lane: Any) -> Any:
        d = [[padded[i, cb, ty * m + p, tx * m + q, lane] for q in range(alpha)]
             for p in range(alpha)]  # fmt: skip
        # Row e of B^T d, shared by the points (e, *) once the points are unrolled.
        rows = [
            [
                _weighted_sum([(bt[e, p], d[p][q]) for p in range(alpha)], dtype)
                for q in range(alpha)
            ]
            for e in range(alpha)
        ]

        def point(e: int, u: int) -> Any:
            return _weighted_sum([(bt[u, q], rows[e][q]) for q in range(alpha)], dtype)

        return _tree(eps, [_tree(nu, [point(e, u) for u in range(alpha)]) for e in range(alpha)])

    transformed = te.compute(
        (alpha, alpha, *tile_shape),
        fdata,
        name="winograd_data",
        tag=tag.WINOGRAD_DATA,
        attrs={"tile_size": m},
    )
    rco = te.reduce_axis((0, c_blocks), name="rco")
    rci = te.reduce_axis((0, in_block), name="rci")

    def fproduct(eps: Any, nu: Any, i: Any, kb: Any, ty: Any, tx: Any, lane: Any) -> Any:
        value = transformed[eps, nu, i, rco, ty, tx, rci]
        return te.sum(value * kernel[eps, nu, kb, rco * in_block + rci, lane], axis=[rco, rci])

    product = te.compute(
        (alpha, alpha, n, out_blocks, tiles_h, tiles_w, out_block),
        fproduct,
        name="winograd_product",
        tag=tag.CONV2D_WINOGRAD_NCHWC,
        attrs={
            "tile_size": m,
            "layout": f"NCHW{in_block}c",
            "out_layout": f"NCHW{out_block}c",
            "padding": [top, left, bottom, right],
        },
    )

    def finverse(i: Any, kb: Any, y: Any, x: Any, lane: Any) -> Any:
        ty, tx = te.floordiv(y, m), te.floordiv(x, m)

        # Row r of A^T M, shared by the pixels (r, *) once they are unrolled.
        rows = [
            [
                _weighted_sum(
                    [(at[r, p], product[p, q, i, kb, ty, tx, lane]) for p in range(alpha)], dtype
                )
                for q in range(alpha)
            ]
            for r in range(m)
        ]

        def pixel(r: int, s: int) -> Any:
            return _weighted_sum([(at[s, q], rows[r][q]) for q in range(alpha)], dtype)

        dy, dx = te.floormod(y, m), te.floormod(x, m)
        return _tree(dy, [_tree(dx, [pixel(r, s) for s in range(m)]) for r in range(m)])

    return te.compute(
        (n, out_blocks, out_h, out_w, out_block),
        finverse,
        name="winograd_inverse",
        tag=tag.WINOGRAD_INVERSE,
        attrs={"tile_size": m},
    )


def conv2d_winograd_weight_transform(kernel: Tensor, tile_size: int) -> Tensor:
    """An OIHW 3x3 ``kernel`` ``[K, C, 3, 3]`` transformed for F(m x m, 3 x 3): ``G g G^T`` per
    pair of channels, ``[m + 2, m + 2, K, C]`` (TVM's function and layout).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> W = tvm.placeholder((16, 8, 3, 3))
        >>> topi.nn.conv2d_winograd_weight_transform(W, 4).shape
        (6, 6, 16, 8)
    """
    m = _check_tile_size(tile_size)
    check_tensor(kernel, "kernel of conv2d_winograd_weight_transform")
    check_ndim(kernel, 4, "kernel of conv2d_winograd_weight_transform", "OIHW")
    if (const_int(kernel.shape[2]), const_int(kernel.shape[3])) != (3, 3):
        raise TVMValueError(
            f"conv2d_winograd_weight_transform: the kernel must be 3x3, found {tuple(kernel.shape)}"
        )
    alpha = m + 2
    g = np.array([[float(v) for v in row] for row in _MATRICES[m][1]])
    dtype = kernel.dtype

    def fcompute(eps: Any, nu: Any, k: Any, c: Any) -> Any:
        def point(e: int, u: int) -> Any:
            terms = [(g[e, p] * g[u, q], kernel[k, c, p, q]) for p in range(3) for q in range(3)]
            return _weighted_sum(terms, dtype)

        return _tree(eps, [_tree(nu, [point(e, u) for u in range(alpha)]) for e in range(alpha)])

    return te.compute(
        (alpha, alpha, kernel.shape[0], kernel.shape[1]),
        fcompute,
        name="winograd_kernel",
        tag=tag.INJECTIVE,
    )


def conv2d_winograd_nchw(
    data: Tensor,
    kernel: Tensor,
    strides: int | Sequence[int],
    padding: PaddingArg,
    dilation: int | Sequence[int],
    out_dtype: str | None = None,
    pre_computed: bool = False,
    tile_size: int | None = None,
) -> Tensor:
    """NCHW 3x3 convolution (stride 1, dilation 1, ungrouped) by Winograd's algorithm (TVM's
    signature); ``kernel`` is OIHW ``[K, C, 3, 3]``, or with ``pre_computed`` already
    transformed, ``[m + 2, m + 2, K, C]``. ``tile_size`` (2 or 4) defaults to the transformed
    kernel's, or to :func:`winograd_tile_size`'s choice, or 2 where that is none. Internally
    the channels are blocked (:func:`conv2d_winograd_nchwc`); the data is packed into blocks
    and the result unpacked by stored copies.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X = tvm.placeholder((1, 16, 28, 28))
        >>> W = tvm.placeholder((32, 16, 3, 3))
        >>> topi.nn.conv2d_winograd_nchw(X, W, 1, 1, 1).shape
        (1, 32, 28, 28)
    """
    check_tensor(data, "data of conv2d_winograd_nchw")
    check_tensor(kernel, "kernel of conv2d_winograd_nchw")
    check_ndim(data, 4, "data of conv2d_winograd_nchw", "NCHW")
    if positive_pair(strides, "strides of conv2d_winograd_nchw") != (1, 1):
        raise TVMValueError(f"conv2d_winograd_nchw computes stride 1 only, found {strides!r}")
    if positive_pair(dilation, "dilation of conv2d_winograd_nchw") != (1, 1):
        raise TVMValueError(f"conv2d_winograd_nchw computes dilation 1 only, found {dilation!r}")
    n, in_c, in_h, in_w = data.shape
    pads = get_pad_tuple(padding, (3, 3))
    if tile_size is None and pre_computed:
        tile_size = get_const_int(kernel.shape[0], "the transformed kernel's tile") - 2
    if tile_size is None:
        out_h = get_const_int(in_h, "the data's height") + pads[0] + pads[2] - 2
        out_w = get_const_int(in_w, "the data's width") + pads[1] + pads[3] - 2
        tile_size = winograd_tile_size(const_int(n), out_h, out_w) or 2
    m = _check_tile_size(tile_size)
    if pre_computed:
        check_ndim(kernel, 4, "kernel of conv2d_winograd_nchw", "[m + 2, m + 2, K, C]")
        transformed = kernel
    else:
        check_ndim(kernel, 4, "kernel of conv2d_winograd_nchw", "OIHW")
        transformed = conv2d_winograd_weight_transform(kernel, m)
    out_c = get_const_int(transformed.shape[2], "the kernel's output channels")
    in_c = get_const_int(in_c, "the data's channels")
    if const_int(transformed.shape[3]) != in_c:
        raise TVMValueError(
            f"conv2d_winograd_nchw: the kernel has {transformed.shape[3]} input channels, the "
            f"data {in_c}"
        )
    in_block = next(b for b in (16, 8, 4, 2, 1) if in_c % b == 0)
    out_block = next(b for b in (16, 8, 4, 2, 1) if out_c % b == 0)
    blocked = layout_transform(data, "NCHW", f"NCHW{in_block}c")
    kb = te.compute(
        (m + 2, m + 2, out_c // out_block, in_c, out_block),
        lambda e, u, ko, c, ki: transformed[e, u, ko * out_block + ki, c],
        name="winograd_kernel_blocks",
        tag=tag.INJECTIVE,
    )
    out = conv2d_winograd_nchwc(blocked, kb, pads, m, out_dtype)
    return layout_transform(out, f"NCHW{out_block}c", "NCHW")
