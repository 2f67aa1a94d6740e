"""Matrix products: ``dense`` (``data @ weight.T``), ``matmul`` and ``batch_matmul``.

Each is one reduction compute tagged ``"dense"``, ``"matmul"`` or ``"batch_matmul"`` (what
automatic schedules tile), plus a separate broadcast stage for a bias, which they fuse into the
epilogue. ``out_dtype`` widens the operands before multiplying (int8 inputs, int32 result).
Sizes may be symbolic (a ``var("n")`` batch).

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> X = tvm.placeholder((tvm.var("n"), 3), name="X")
    >>> W = tvm.placeholder((2, 3), name="W")
    >>> Y = topi.nn.dense(X, W)
    >>> Y.shape, Y.op.tag
    ((n, 2), 'dense')
    >>> f = tvm.build(tvm.create_schedule(Y.op), [X, W, Y])
    >>> x = np.ones((1, 3), "float32"); w = np.arange(6, dtype="float32").reshape(2, 3)
    >>> y = np.empty((1, 2), "float32"); f(x, w, y); y.tolist()
    [[3.0, 12.0]]
"""

from __future__ import annotations

from typing import Any

from ... import te
from ...error import TVMTypeError, TVMValueError
from .. import tag
from ..broadcast import broadcast_shape
from ..utils import Tensor, cast_to, check_ndim, check_tensor, const_int, same_dim


def _check_k(ka: Any, kb: Any, what: str, a: Tensor, b: Tensor) -> None:
    if not same_dim(ka, kb):
        raise TVMValueError(
            f"{what}: the reduced dimensions differ: {ka} of {a.name!r} {tuple(a.shape)} "
            f"against {kb} of {b.name!r} {tuple(b.shape)}"
        )


def _check_dtypes(a: Tensor, b: Tensor, what: str) -> None:
    if a.dtype != b.dtype:
        raise TVMTypeError(
            f"{what}: {a.name!r} is {a.dtype} and {b.name!r} is {b.dtype}; cast one of them"
        )


def _add_bias(out: Tensor, bias: Tensor | None, what: str) -> Tensor:
    if bias is None:
        return out
    check_tensor(bias, f"bias of {what}")
    check_ndim(bias, 1, f"bias of {what}")
    if not same_dim(bias.shape[0], out.shape[-1]):
        raise TVMValueError(
            f"bias of {what} must have {out.shape[-1]} elements (the output's last dimension), "
            f"found shape {tuple(bias.shape)}"
        )
    return te.compute(
        out.shape,
        lambda *i: out[i] + cast_to(bias[i[-1]], out.dtype),
        name=f"{out.name}_bias",
        tag=tag.BROADCAST,
    )


def dense(
    data: Tensor, weight: Tensor, bias: Tensor | None = None, out_dtype: str | None = None
) -> Tensor:
    """``data @ weight.T (+ bias)``: ``data`` is (batch, in_dim), ``weight`` (out_dim, in_dim),
    ``bias`` (out_dim,), as in ``torch.nn.functional.linear``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X, W = tvm.placeholder((4, 3), name="X"), tvm.placeholder((5, 3), name="W")
        >>> topi.nn.dense(X, W, tvm.placeholder((5,), name="b")).shape
        (4, 5)
    """
    check_tensor(data, "data of dense")
    check_tensor(weight, "weight of dense")
    check_ndim(data, 2, "data of dense", "batch, in_dim")
    check_ndim(weight, 2, "weight of dense", "out_dim, in_dim")
    _check_dtypes(data, weight, "dense")
    _check_k(data.shape[1], weight.shape[1], "dense", data, weight)
    out_dtype = out_dtype or data.dtype
    k = te.reduce_axis((0, data.shape[1]), name="k")
    mat = te.compute(
        (data.shape[0], weight.shape[0]),
        lambda i, j: te.sum(
            cast_to(data[i, k], out_dtype) * cast_to(weight[j, k], out_dtype), axis=k
        ),
        name="T_dense",
        tag=tag.DENSE,
    )
    return _add_bias(mat, bias, "dense")


def _host_pack_block() -> int:
    # The width of the register tile auto_schedule gives a matrix product on this host: 6 x 4
    # vectors with AVX-512's 32 registers (64 float32), which on pre-packed BERT layers measured
    # 0.97-1.12x PyTorch against 0.88-1.08x for 32-wide panels (8 x 2, one thread). Other hosts
    # keep 32 (four AVX2 or eight SSE vectors).
    from ... import _core

    return 64 if _core.host_cpu_features().get("avx512f") else 32


DENSE_PACK_BLOCK = _host_pack_block()
"""Default panel width of :func:`pack_dense_weight` on this host: the width of the register tile
``auto_schedule`` picks for a dense layer (64 float32 with AVX-512, else 32)."""


# Rows one pass of the 64-wide panels' 6 x 4 AVX-512 tile covers, and of the 32-wide panels'
# 8 x 2 tile (see dense_pack_block).
_WIDE_TILE_ROWS, _NARROW_TILE_ROWS = 6, 8


def dense_pack_block(out_dim: int, rows: int | None = None) -> int:
    """The panel width to pre-pack a dense weight of ``out_dim`` outputs with: the host's
    :data:`DENSE_PACK_BLOCK` when it divides ``out_dim``, else 32 when that does, else 0 (no
    whole panels: keep the weight unpacked). ``rows``, the product's row count when it is a known
    constant (the batch), picks 32 for 7 or 8 rows where the host's block is 64: the 64-wide
    panels' 6 x 4 tile then reads every panel twice (6 rows, then the last 1 or 2), the 32-wide
    panels' 8 x 2 tile once (one thread, CPU time, weights streamed from L3, 1024->1024 at 8
    rows: 209 against 236 us; 7 rows 225 against 238 us; 1, 4, 16 and 32 rows within 2%).

    Example:
        >>> from pytvmbridge.topi.nn.dense import dense_pack_block
        >>> dense_pack_block(96), dense_pack_block(10), dense_pack_block(1024, rows=8)
        (32, 0, 32)
    """
    narrow = rows is not None and _WIDE_TILE_ROWS < rows <= _NARROW_TILE_ROWS
    for block in (32,) if narrow else (DENSE_PACK_BLOCK, 32):
        if out_dim % block == 0:
            return block
    return 0


def pack_dense_weight(weight: Tensor, block: int | None = None) -> Tensor:
    """A dense weight (out_dim, in_dim) as panels (out_dim / block, in_dim, block), the layout
    :func:`dense_pack` reads (TVM's ``NC[block]n``): the ``block`` outputs one register tile
    computes are contiguous for every input element. Build and run it once for a constant weight
    (as TVM's ``dense_pack`` and the NCHWc convolutions do), not on every call. ``block``
    defaults to :func:`dense_pack_block` of ``out_dim``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.pack_dense_weight(tvm.placeholder((64, 3), name="W"), 32).shape
        (2, 3, 32)
    """
    check_tensor(weight, "weight of pack_dense_weight")
    check_ndim(weight, 2, "weight of pack_dense_weight", "out_dim, in_dim")
    if block is None:
        rows = const_int(weight.shape[0])
        block = (dense_pack_block(rows) if rows is not None else 0) or 32
    size = const_int(block)
    if size is None or size < 1:
        raise TVMValueError(f"pack_dense_weight: block must be a positive int, got {block!r}")
    block = size
    out_dim = const_int(weight.shape[0])
    if out_dim is None or out_dim % block:
        raise TVMValueError(
            f"pack_dense_weight: out_dim {weight.shape[0]} of weight {weight.name!r} must be a "
            f"constant multiple of block {block}"
        )
    return te.compute(
        (out_dim // block, weight.shape[1], block),
        lambda p, k, lane: weight[p * block + lane, k],
        name=f"{weight.name}_packed",
        tag=tag.INJECTIVE,
    )


def dense_pack(
    data: Tensor, packed_weight: Tensor, bias: Tensor | None = None, out_dtype: str | None = None
) -> Tensor:
    """:func:`dense` with the weight pre-packed by :func:`pack_dense_weight`: ``data`` is
    (batch, in_dim), ``packed_weight`` (out_dim / block, in_dim, block), the result
    (batch, out_dim). ``auto_schedule`` reads one panel per register tile, with no copy of the
    weight on each call.

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X, W = tvm.placeholder((4, 3), name="X"), tvm.placeholder((64, 3), name="W")
        >>> Wp = tvm.placeholder((2, 3, 32), name="Wp")
        >>> Y = topi.nn.dense_pack(X, Wp)
        >>> Y.shape, Y.op.tag
        ((4, 64), 'dense_pack')
        >>> P = topi.nn.pack_dense_weight(W, 32)
        >>> pack = tvm.build(tvm.create_schedule(P.op), [W, P])  # once, for a constant weight
        >>> f = tvm.build(tvm.auto_schedule(Y), [X, Wp, Y])
        >>> x = np.ones((4, 3), "float32"); w = np.arange(192, dtype="float32").reshape(64, 3)
        >>> wp = np.empty((2, 3, 32), "float32"); pack(w, wp)
        >>> y = np.empty((4, 64), "float32"); f(x, wp, y); bool((y == x @ w.T).all())
        True
    """
    check_tensor(data, "data of dense_pack")
    check_tensor(packed_weight, "packed_weight of dense_pack")
    check_ndim(data, 2, "data of dense_pack", "batch, in_dim")
    check_ndim(packed_weight, 3, "packed_weight of dense_pack", "out_dim / block, in_dim, block")
    _check_dtypes(data, packed_weight, "dense_pack")
    _check_k(data.shape[1], packed_weight.shape[1], "dense_pack", data, packed_weight)
    block = const_int(packed_weight.shape[2])
    panels = const_int(packed_weight.shape[0])
    if block is None or panels is None:
        raise TVMValueError(
            f"dense_pack: the panels of packed_weight {packed_weight.name!r} must have constant "
            f"sizes, found shape {tuple(packed_weight.shape)}"
        )
    out_dtype = out_dtype or data.dtype
    k = te.reduce_axis((0, data.shape[1]), name="k")
    mat = te.compute(
        (data.shape[0], panels * block),
        lambda i, j: te.sum(
            cast_to(data[i, k], out_dtype)
            * cast_to(packed_weight[j // block, k, j % block], out_dtype),
            axis=k,
        ),
        name="T_dense_pack",
        tag=tag.DENSE_PACK,
    )
    return _add_bias(mat, bias, "dense_pack")


def matmul(
    tensor_a: Tensor,
    tensor_b: Tensor,
    bias: Tensor | None = None,
    out_dtype: str | None = None,
    transpose_a: bool = False,
    transpose_b: bool = False,
) -> Tensor:
    """``op(a) @ op(b) (+ bias)`` of two matrices, where ``op`` transposes when asked: ``a`` is
    (M, K) or, transposed, (K, M); ``b`` is (K, N) or (N, K).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> A, B = tvm.placeholder((3, 4), name="A"), tvm.placeholder((5, 4), name="B")
        >>> topi.nn.matmul(A, B, transpose_b=True).shape
        (3, 5)
    """
    check_tensor(tensor_a, "tensor_a of matmul")
    check_tensor(tensor_b, "tensor_b of matmul")
    check_ndim(tensor_a, 2, "tensor_a of matmul")
    check_ndim(tensor_b, 2, "tensor_b of matmul")
    _check_dtypes(tensor_a, tensor_b, "matmul")
    a, b = tensor_a, tensor_b
    m, ka = (a.shape[1], a.shape[0]) if transpose_a else (a.shape[0], a.shape[1])
    n, kb = (b.shape[0], b.shape[1]) if transpose_b else (b.shape[1], b.shape[0])
    _check_k(ka, kb, "matmul", a, b)
    out_dtype = out_dtype or a.dtype
    k = te.reduce_axis((0, ka), name="k")

    def fcompute(i: Any, j: Any) -> te.Expr:
        av = a[k, i] if transpose_a else a[i, k]
        bv = b[j, k] if transpose_b else b[k, j]
        return te.sum(cast_to(av, out_dtype) * cast_to(bv, out_dtype), axis=k)

    mat = te.compute(
        (m, n),
        fcompute,
        name="T_matmul",
        tag=tag.MATMUL,
        attrs={"transpose_a": int(transpose_a), "transpose_b": int(transpose_b)},
    )
    return _add_bias(mat, bias, "matmul")


def batch_matmul(
    tensor_a: Tensor,
    tensor_b: Tensor,
    oshape: Any = None,
    out_dtype: str | None = None,
    transpose_a: bool = False,
    transpose_b: bool = True,
) -> Tensor:
    """Batched ``op(a[b]) @ op(b[b])`` of 3-d tensors; by default ``b`` is transposed, as in
    TVM: ``a`` (batch, M, K), ``b`` (batch, N, K). A batch of 1 broadcasts against the other.
    ``oshape`` is accepted for TVM compatibility and must be None or the computed shape.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> A = tvm.placeholder((tvm.var("b"), 3, 4), name="A")
        >>> B = tvm.placeholder((1, 5, 4), name="B")
        >>> topi.nn.batch_matmul(A, B).shape
        (b, 3, 5)
    """
    check_tensor(tensor_a, "tensor_a of batch_matmul")
    check_tensor(tensor_b, "tensor_b of batch_matmul")
    check_ndim(tensor_a, 3, "tensor_a of batch_matmul", "batch, M, K")
    check_ndim(tensor_b, 3, "tensor_b of batch_matmul", "batch, N, K")
    _check_dtypes(tensor_a, tensor_b, "batch_matmul")
    a, b = tensor_a, tensor_b
    m, ka = (a.shape[2], a.shape[1]) if transpose_a else (a.shape[1], a.shape[2])
    n, kb = (b.shape[1], b.shape[2]) if transpose_b else (b.shape[2], b.shape[1])
    _check_k(ka, kb, "batch_matmul", a, b)
    batch = broadcast_shape([a.shape[0]], [b.shape[0]], "batch_matmul")[0]
    shape = [batch, m, n]
    if oshape is not None and [const_int(d) for d in oshape] != [const_int(d) for d in shape]:
        raise TVMValueError(f"batch_matmul: oshape {tuple(oshape)} differs from {tuple(shape)}")
    out_dtype = out_dtype or a.dtype
    k = te.reduce_axis((0, ka), name="k")

    def fcompute(t: Any, i: Any, j: Any) -> te.Expr:
        ta = 0 if const_int(a.shape[0]) == 1 and const_int(batch) != 1 else t
        tb = 0 if const_int(b.shape[0]) == 1 and const_int(batch) != 1 else t
        av = a[ta, k, i] if transpose_a else a[ta, i, k]
        bv = b[tb, j, k] if transpose_b else b[tb, k, j]
        return te.sum(cast_to(av, out_dtype) * cast_to(bv, out_dtype), axis=k)

    return te.compute(
        shape,
        fcompute,
        name="T_batch_matmul",
        tag=tag.BATCH_MATMUL,
        attrs={"transpose_a": int(transpose_a), "transpose_b": int(transpose_b)},
    )
