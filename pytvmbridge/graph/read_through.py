"""Batched products that read their operands through views, not through stored copies.

Attention's products reach the graph compiler as ``bmm(view(clone(expand(permute(view(q))))),
...)``, where ``q`` is a slice of the QKV linear layer's output: PyTorch makes each operand
contiguous before ``bmm``. Converted as written, every operand is a stored copy (the
register-blocked product keeps its direct producers stored), and ``k`` is copied twice: once
transposed by the chain, once into the product's panels by the schedule. Every operation in
such a chain only moves elements, so the product can read the chain's source directly, at the
index the chain computes: ``q`` and ``v`` are then read in place (the row operand is broadcast
one element at a time, ``v``'s rows are contiguous vectors), and ``k`` is packed once, from the
linear layer's output, by the schedule itself.

:func:`plan_read_through` finds the batched products with such an operand and returns their
replacement converters (the ``rewrites`` of :class:`~.fold.FoldPlan`).

Example:
    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> f = lambda x: torch.bmm(x.transpose(1, 2).contiguous(), x)
    >>> gm = make_fx(f)(torch.ones(2, 3, 4))
    >>> len(plan_read_through(gm))
    1
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import torch

from .. import te
from ..topi import tag
from .fold import _static_shape

aten = torch.ops.aten

IndexMap = Callable[[list[Any]], list[Any]]
"""Indices into a view -> indices into its source."""

_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}
_SAME = {aten.clone.default, aten.alias.default}
_SPLITS = {aten.split_with_sizes.default, aten.split.Tensor}


_shape = _static_shape


def _groups(src: list[int], dst: list[int]) -> list[tuple[int, int, int, int]] | None:
    """Runs ``(s0, s1, d0, d1)`` with ``src[s0:s1]`` and ``dst[d0:d1]`` of equal products,
    each merging dimensions on one side into one on the other; None for any other reshape."""
    runs, s, d = [], 0, 0
    while s < len(src) and d < len(dst):
        s1, d1, ps, pd = s + 1, d + 1, src[s], dst[d]
        while ps != pd:
            if ps < pd and s1 < len(src):
                ps, s1 = ps * src[s1], s1 + 1
            elif pd < ps and d1 < len(dst):
                pd, d1 = pd * dst[d1], d1 + 1
            else:
                return None
        if s1 - s > 1 and d1 - d > 1:
            return None
        runs.append((s, s1, d, d1))
        s, d = s1, d1
    return runs if s == len(src) and d == len(dst) else None


def _view_map(src: list[int], dst: list[int]) -> IndexMap | None:
    runs = _groups(src, dst)
    if runs is None:
        return None

    def index(out: list[Any]) -> list[Any]:
        result: list[Any] = []
        for s0, s1, d0, d1 in runs:
            if s1 - s0 == 1:  # merge dst[d0:d1] into one source dimension
                flat = out[d0]
                for d in range(d0 + 1, d1):
                    flat = flat * dst[d] + out[d]
                result.append(flat)
            else:  # split one view dimension into src[s0:s1]
                flat = out[d0]
                for s in range(s0, s1):
                    inner = math.prod(src[s + 1 : s1])
                    value = flat if s == s0 else flat % (inner * src[s])
                    result.append(value // inner if inner > 1 else value)
        return result

    return index


def _step(node: torch.fx.Node) -> tuple[torch.fx.Node, IndexMap] | None:
    """The producer ``node`` reads and how its indices map to the producer's, when ``node``
    only moves elements (static shapes); else None."""
    target, args = node.target, node.args
    if node.op != "call_function" or not args or not isinstance(args[0], torch.fx.Node):
        return None
    src, out = _shape(args[0]), _shape(node)
    if target is operator.getitem:
        split = args[0]
        if split.op != "call_function" or split.target not in _SPLITS:
            return None
        source = split.args[0]
        shape = _shape(source)
        if shape is None or out is None:
            return None
        dim = split.args[2] if len(split.args) > 2 else 0
        dim = dim + len(shape) if dim < 0 else dim
        sizes = split.args[1]
        if isinstance(sizes, int):
            offset = sizes * args[1]
        else:
            offset = sum(sizes[: args[1]])
        return source, lambda i, d=dim, o=offset: [*i[:d], i[d] + o, *i[d + 1 :]]
    if src is None or out is None:
        return None
    if target in _SAME:
        return args[0], lambda i: list(i)
    if target is aten.permute.default:
        dims = [d % len(src) for d in args[1]]

        def permuted(i: list[Any], dims: list[int] = dims) -> list[Any]:
            result: list[Any] = [None] * len(dims)
            for k, d in enumerate(dims):
                result[d] = i[k]
            return result

        return args[0], permuted
    if target is aten.transpose.int:
        a, b = args[1] % len(src), args[2] % len(src)

        def swapped(i: list[Any], a: int = a, b: int = b) -> list[Any]:
            i = list(i)
            i[a], i[b] = i[b], i[a]
            return i

        return args[0], swapped
    if target is aten.expand.default:
        lead = len(out) - len(src)
        return args[0], lambda i, lead=lead, src=src, out=out: [
            0 if src[k] == 1 and out[k + lead] != 1 else i[k + lead] for k in range(len(src))
        ]
    if target in _VIEWS:
        mapping = _view_map(src, out)
        return None if mapping is None else (args[0], mapping)
    return None


def _through(node: Any) -> tuple[Any, IndexMap | None]:
    """The first producer of ``node`` that computes values, and the composed index map from
    ``node``'s indices to it (None: ``node`` itself computes)."""
    maps: list[IndexMap] = []
    while isinstance(node, torch.fx.Node):
        step = _step(node)
        if step is None:
            break
        node, mapping = step
        maps.append(mapping)
    if not maps:
        return node, None

    def composed(i: list[Any], maps: list[IndexMap] = maps) -> list[Any]:
        for m in maps:
            i = m(i)
        return i

    return node, composed


# Width of the panels a streamed operand read through a strided view is copied into: a multiple
# of every target's vector width (the tile reads whole panels, as from a pre-packed weight).
PANEL = 32


def _contiguous(index: IndexMap, n: int) -> bool:
    """Whether consecutive columns of the viewed operand (last index, ``0 .. n-1``) are
    consecutive elements of its source's last dimension: its vectors are then plain loads."""
    base = index([0, 0, 0])
    for j in range(1, n):
        at = index([0, 0, j])
        if at[:-1] != base[:-1] or at[-1] != base[-1] + j:
            return False
    return True


def _streamed(b: te.Tensor, index: IndexMap | None, shape: list[int]) -> Callable[..., Any]:
    """How the product reads its streamed operand ``[T, K, N]``: in place when it is the
    source itself or its columns are contiguous there, else from panels ``[T, N / w, K, w]``
    copied from the source in one pass (the schedule would otherwise pack the whole source)."""
    if index is None:
        return lambda t, r, j: b[t, r, j]
    if _contiguous(index, shape[2]):
        return lambda t, r, j: b[tuple(index([t, r, j]))]
    t_n, k_n, n_n = shape
    w = PANEL if n_n % PANEL == 0 else n_n
    panels = te.compute(
        (t_n, n_n // w, k_n, w),
        lambda t, p, r, lane: b[tuple(index([t, r, p * w + lane]))],
        name="T_batch_matmul_panels",
        tag=tag.INJECTIVE,
    )
    return lambda t, r, j: panels[t, j // w, r, j % w]


def plan_read_through(gm: torch.fx.GraphModule) -> dict[torch.fx.Node, Callable[..., Any]]:
    """Converters for the ``bmm`` nodes of ``gm`` with an operand that is a view chain: the
    product reads the chain's source (see the module docstring)."""
    rewrites: dict[torch.fx.Node, Callable[..., Any]] = {}
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is not aten.bmm.default:
            continue
        shape = _shape(node)
        a_shape, b_shape = _shape(node.args[0]), _shape(node.args[1])
        if shape is None or a_shape is None or b_shape is None or a_shape[0] != b_shape[0]:
            continue
        a_src, a_map = _through(node.args[0])
        b_src, b_map = _through(node.args[1])
        if a_map is None and b_map is None:
            continue

        def convert(value: Callable, derived: dict, a=(a_src, a_map), b=(b_src, b_map),
                    shape=shape, b_shape=b_shape, k=a_shape[2]) -> te.Tensor:  # fmt: skip
            a_t = value(a[0])
            a_at = a[1] or (lambda i: i)
            b_at = _streamed(value(b[0]), b[1], b_shape)
            r = te.reduce_axis((0, k), name="k")
            return te.compute(
                shape,
                lambda t, i, j: te.sum(a_t[tuple(a_at([t, i, r]))] * b_at(t, r, j), axis=r),
                name="T_batch_matmul",
                tag=tag.BATCH_MATMUL,
            )

        rewrites[node] = convert
    return rewrites


__all__ = ["PANEL", "plan_read_through"]
