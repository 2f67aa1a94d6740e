"""A reshape there and back around an elementwise operation, removed before import.

A linear layer on a (batch, sequence, features) input is ``view`` to two dimensions, ``addmm``,
``view`` back; with an activation between two such layers the FX graph holds
``view(gelu(view(addmm, [b, s, n])), [b * s, n])``. Converted as written, the activation reads
the matrix product through two reshapes, at ``(i // s) * s + i % s`` rather than ``i``, and the
tiled-reduction rule (which fuses an elementwise consumer reading the product at its own
indices) leaves it as a separate pass over the whole product. The pair of views cancels: the
activation applies to the product directly, and becomes its epilogue.

Example:
    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> f = lambda m: torch.relu(m.view(2, 3, 4)).view(6, 4)
    >>> gm = make_fx(f)(torch.ones(6, 4))
    >>> cancel_view_pairs(gm)
    1
    >>> [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"]
    ['relu.default']
"""

from __future__ import annotations

from typing import Any

import torch

aten = torch.ops.aten

_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}


def _static_shape(node: Any) -> tuple[int, ...] | None:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or not all(isinstance(d, int) for d in val.shape):
        return None
    return tuple(val.shape)


def _is_view(node: Any) -> bool:
    return (
        isinstance(node, torch.fx.Node)
        and node.op == "call_function"
        and node.target in _VIEWS
        and len(node.users) == 1
    )


def _elementwise_of_one(node: Any) -> bool:
    """An elementwise operator whose only tensor argument is its first (the others numbers)."""
    from .ops import ELEMENTWISE

    if not isinstance(node, torch.fx.Node) or node.op != "call_function":
        return False
    if node.target not in ELEMENTWISE or len(node.users) != 1 or not node.args:
        return False
    rest = list(node.args[1:]) + list(node.kwargs.values())
    return isinstance(node.args[0], torch.fx.Node) and not any(
        isinstance(a, torch.fx.Node) for a in rest
    )


def cancel_view_pairs(gm: torch.fx.GraphModule) -> int:
    """Rewrites ``view(f(view(a, s)), shape(a))`` into ``f(a)`` for elementwise ``f`` (static
    shapes, each intermediate used once); returns how many were rewritten."""
    graph = gm.graph
    count = 0
    for outer in list(graph.nodes):
        if outer.op != "call_function" or outer.target not in _VIEWS:
            continue
        fn = outer.args[0]
        if not _elementwise_of_one(fn) or not _is_view(fn.args[0]):
            continue
        inner = fn.args[0]
        source = inner.args[0]
        shape = _static_shape(source)
        if shape is None or shape != _static_shape(outer):
            continue
        with graph.inserting_before(outer):
            applied = graph.call_function(fn.target, (source, *fn.args[1:]), dict(fn.kwargs))
        applied.meta = dict(outer.meta)
        outer.replace_all_uses_with(applied)
        for dead in (outer, fn, inner):
            graph.erase_node(dead)
        count += 1
    if count:
        graph.lint()
        gm.recompile()
    return count


__all__ = ["cancel_view_pairs"]
