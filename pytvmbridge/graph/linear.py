"""Linear layers on inputs of more than two dimensions, computed without reshapes.

A ``nn.Linear`` on a ``(batch, sequence, features)`` input reaches the graph compiler as
``view(addmm(bias, view(x, [b * s, k]), permute(W, [1, 0])), [b, s, n])``. Converted as
written, the inner view is a stored copy of ``x`` (the register-blocked product keeps its
operands stored) and the outer one reads the product at ``(i // s, i % s)``, so the bias is
added in a pass of its own instead of in the product's epilogue (the epilogue must read the
product at its own indices). :func:`fold_linear_views` replaces the pattern by one
``aten.linear`` node on ``x`` itself, and the computes below read ``x`` at its own indices and
write the output in its final shape: no copy in, the bias (and a following activation) fused
into the tile's epilogue, and the consumers (attention's head split, a residual add) index a
plain ``(b, s, n)`` tensor.

Example:
    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> lin = torch.nn.Linear(8, 4)
    >>> gm = make_fx(lambda x: lin(x), pre_dispatch=False)(torch.ones(2, 3, 8))
    >>> fold_linear_views(gm)
    1
    >>> [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"]
    ['linear.default']
"""

from __future__ import annotations

from typing import Any

import torch

from .. import te
from ..topi import tag
from ..topi.utils import const_int

aten = torch.ops.aten
_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}
_TRANSPOSES = (aten.permute.default, aten.t.default)


def _shape(node: Any) -> list[Any] | None:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or val.dtype != torch.float32:
        return None
    return list(val.shape)


def _same(a: list[Any], b: list[Any]) -> bool:
    # Sizes may be symbolic (a dynamic batch): compared by their printed form, no guard added.
    return len(a) == len(b) and all(str(x) == str(y) for x, y in zip(a, b, strict=True))


def _weight_of(wt: Any) -> Any:
    """``W`` when ``wt`` is ``W`` transposed (``permute(W, [1, 0])`` or ``t(W)``, 2-d)."""
    if not isinstance(wt, torch.fx.Node) or wt.target not in _TRANSPOSES:
        return None
    w = wt.args[0]
    shape = _shape(w)
    if shape is None or len(shape) != 2:
        return None
    return w if wt.target is aten.t.default or list(wt.args[1]) == [1, 0] else None


def _match(node: torch.fx.Node) -> tuple[Any, Any, Any, torch.fx.Node] | None:
    """``(x, W, bias, outer view)`` when ``node`` is a linear layer between two views."""
    if node.target is aten.addmm.default:
        scaled = node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1
        if len(node.args) != 3 or scaled:
            return None
        bias, x2, wt = node.args
        bshape = _shape(bias)
        if bshape is None or len(bshape) != 1:
            return None
    elif node.target is aten.mm.default:
        bias, (x2, wt) = None, node.args
    else:
        return None
    weight = _weight_of(wt)
    if weight is None or not isinstance(x2, torch.fx.Node) or x2.target not in _VIEWS:
        return None
    x = x2.args[0]
    xshape, out = _shape(x), _shape(node)
    if xshape is None or out is None or len(xshape) < 3 or len(node.users) != 1:
        return None
    if not all(isinstance(d, int) for d in xshape[1:]):  # only a leading batch may be symbolic
        return None
    (outer,) = node.users
    oshape = _shape(outer)
    if outer.target not in _VIEWS or oshape is None:
        return None
    if not _same(oshape, [*xshape[:-1], out[-1]]) or str(out[-1]) != str(_shape(weight)[0]):
        return None
    return x, weight, bias, outer


def fold_linear_views(gm: torch.fx.GraphModule) -> int:
    """Rewrites ``view(addmm(b, view(x, [m, k]), W^T), [..., n])`` (or ``mm``) on an ``x`` of
    three or more dimensions into ``aten.linear(x, W, b)``; returns how many were rewritten."""
    graph = gm.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        found = _match(node)
        if found is None:
            continue
        x, weight, bias, outer = found
        inner, wt = node.args[-2], node.args[-1]
        with graph.inserting_before(outer):
            lin = graph.call_function(aten.linear.default, (x, weight, bias))
        lin.meta = dict(outer.meta)
        outer.replace_all_uses_with(lin)
        graph.erase_node(outer)
        graph.erase_node(node)
        for dead in (inner, wt):
            if not dead.users:
                graph.erase_node(dead)
        count += 1
    if count:
        graph.lint()
        gm.recompile()
    return count


def _with_bias(mat: te.Tensor, bias: te.Tensor | None) -> te.Tensor:
    """The bias as a broadcast stage of its own: the product's epilogue fuses it."""
    if bias is None:
        return mat
    return te.compute(
        mat.shape, lambda *i: mat[i] + bias[i[-1]], name=f"{mat.name}_bias", tag=tag.BROADCAST
    )


def linear_packed(x: te.Tensor, packed: te.Tensor, bias: te.Tensor | None) -> te.Tensor:
    """``x @ W^T + bias`` over ``x``'s last dimension, ``W`` given as ``[N / w, K, w]`` panels
    (``topi.nn.pack_dense_weight``'s layout): the output has ``x``'s leading dimensions."""
    block = const_int(packed.shape[2])
    n = const_int(packed.shape[0]) * block
    k = te.reduce_axis((0, x.shape[-1]), name="k")
    mat = te.compute(
        (*x.shape[:-1], n),
        lambda *i: te.sum(x[(*i[:-1], k)] * packed[i[-1] // block, k, i[-1] % block], axis=k),
        name="T_dense_pack",
        tag=tag.DENSE_PACK,
    )
    return _with_bias(mat, bias)


def linear_transposed(x: te.Tensor, wt: te.Tensor, bias: te.Tensor | None) -> te.Tensor:
    """``x @ W^T + bias`` with ``W^T`` given as it is, ``[K, N]`` (contiguous output rows)."""
    k = te.reduce_axis((0, x.shape[-1]), name="k")
    mat = te.compute(
        (*x.shape[:-1], wt.shape[1]),
        lambda *i: te.sum(x[(*i[:-1], k)] * wt[k, i[-1]], axis=k),
        name="T_matmul",
        tag=tag.MATMUL,
    )
    return _with_bias(mat, bias)


def linear(x: te.Tensor, w: te.Tensor, bias: te.Tensor | None = None) -> te.Tensor:
    """``aten.linear``: ``x @ W^T + bias`` with ``W`` as PyTorch holds it, ``[N, K]``."""
    k = te.reduce_axis((0, x.shape[-1]), name="k")
    mat = te.compute(
        (*x.shape[:-1], w.shape[0]),
        lambda *i: te.sum(x[(*i[:-1], k)] * w[i[-1], k], axis=k),
        name="T_dense",
        tag=tag.DENSE,
    )
    return _with_bias(mat, bias)


__all__ = ["fold_linear_views", "linear", "linear_packed", "linear_transposed"]
