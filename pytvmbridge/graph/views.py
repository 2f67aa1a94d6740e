"""A reshape there and back around an elementwise operation, removed before import.

A linear layer on a (batch, sequence, features) input is ``view`` to two dimensions, ``addmm``,
``view`` back; with an activation between two such layers the FX graph holds
``view(gelu(view(addmm, [b, s, n])), [b * s, n])``. Converted as written, the activation reads
the matrix product through two reshapes, at ``(i // s) * s + i % s`` rather than ``i``, and the
tiled-reduction rule (which fuses an elementwise consumer reading the product at its own
indices) leaves it as a separate pass over the whole product. The pair of views cancels: the
activation applies to the product directly, and becomes its epilogue.

The same holds for a chain of such operations, no-op ``expand`` s and softmaxes over the last
dimension when the views keep that dimension (each row of the reshaped tensor is a row of the
source): attention's ``view(expand(softmax(view(bmm) / c)))`` becomes ``softmax(bmm / c)``, so
the scaling is the batched product's epilogue and the softmax reads the product in place.

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


def _traced_shape(node: Any) -> tuple[Any, ...] | None:
    """The traced shape of ``node``: ints, and for a symbolic size its sympy expression (two
    sizes are the same when their expressions are, ``s0 * s1`` and ``s1 * s0`` alike); None
    when ``node`` is no tensor."""
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor):
        return None
    return tuple(d if isinstance(d, int) else d.node.expr for d in val.shape)


def _size_reads(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The ``sym_size`` nodes reading ``node``'s sizes (a symbolic trace reads a view's sizes
    from the view itself)."""
    return [u for u in node.users if u.op == "call_function" and u.target is aten.sym_size.int]


def _replace_uses(node: torch.fx.Node, value: Any) -> None:
    """Every use of ``node`` replaced by ``value``, a node or a number."""
    if isinstance(value, torch.fx.Node):
        node.replace_all_uses_with(value)
        return
    for user in list(node.users):
        user.args = torch.fx.node.map_arg(user.args, lambda a: value if a is node else a)
        user.kwargs = torch.fx.node.map_arg(user.kwargs, lambda a: value if a is node else a)


def _is_view(node: Any) -> bool:
    """A view used once, besides reads of its sizes that its own shape argument answers."""
    if not (
        isinstance(node, torch.fx.Node)
        and node.op == "call_function"
        and node.target in _VIEWS
        and len(node.users) - len(_size_reads(node)) == 1
    ):
        return False
    shape = node.args[1] if len(node.args) > 1 else None
    return all(
        isinstance(shape, (list, tuple)) and shape[u.args[1]] != -1 for u in _size_reads(node)
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


_SOFTMAXES = {aten._softmax.default, aten._log_softmax.default}


def _row_softmax(node: Any) -> bool:
    """A softmax over the last dimension, used once."""
    if not isinstance(node, torch.fx.Node) or node.op != "call_function":
        return False
    if node.target not in _SOFTMAXES or len(node.users) != 1:
        return False
    shape = _traced_shape(node)
    return shape is not None and node.args[1] in (-1, len(shape) - 1) and not node.args[2]


def _noop_expand(node: Any) -> bool:
    """An ``expand`` to its input's own shape, used once."""
    return (
        isinstance(node, torch.fx.Node)
        and node.op == "call_function"
        and node.target is aten.expand.default
        and len(node.users) == 1
        and isinstance(node.args[0], torch.fx.Node)
        and _traced_shape(node) is not None
        and _traced_shape(node) == _traced_shape(node.args[0])
    )


def _chain_between_views(outer: torch.fx.Node) -> tuple[list[torch.fx.Node], Any] | None:
    """The operations between ``outer`` (a view) and the inner view they read, innermost
    first, and that inner view; None unless every one is elementwise of one tensor, a no-op
    expand or a last-dimension softmax, with at least one elementwise or softmax."""
    chain: list[torch.fx.Node] = []
    node = outer.args[0]
    while True:
        if _elementwise_of_one(node) or _row_softmax(node) or _noop_expand(node):
            chain.append(node)
            node = node.args[0]
        elif _is_view(node) and chain:
            break
        else:
            return None
    if all(_noop_expand(n) for n in chain):
        return None
    return chain[::-1], node


def cancel_view_pairs(gm: torch.fx.GraphModule) -> int:
    """Rewrites ``view(f(view(a, s)), shape(a))`` into ``f(a)`` for elementwise ``f``, or a
    chain of them with no-op expands and last-dimension softmaxes when the views keep the last
    dimension (each intermediate used once); returns how many were rewritten."""
    graph = gm.graph
    count = 0
    for outer in list(graph.nodes):
        if outer.op != "call_function" or outer.target not in _VIEWS:
            continue
        found = _chain_between_views(outer)
        if found is None:
            continue
        chain, inner = found
        source = inner.args[0]
        shape = _traced_shape(source)
        if shape is None or shape != _traced_shape(outer):
            continue
        softmax = any(n.target in _SOFTMAXES for n in chain)
        if softmax and (not shape or shape[-1] != (_traced_shape(inner) or (None,))[-1]):
            continue  # the views regroup the rows: a softmax would see other rows
        value = source
        with graph.inserting_before(outer):
            for n in chain:
                if _noop_expand(n):
                    continue
                args = (value, *n.args[1:])
                if n.target in _SOFTMAXES:
                    args = (value, len(shape) - 1, *n.args[2:])
                applied = graph.call_function(n.target, args, dict(n.kwargs))
                applied.meta = dict(outer.meta)
                value = applied
        outer.replace_all_uses_with(value)
        for size in _size_reads(inner):  # the size the view was asked for
            _replace_uses(size, inner.args[1][size.args[1]])
            graph.erase_node(size)
        for dead in [outer, *chain[::-1], inner]:
            graph.erase_node(dead)
        count += 1
    if count:
        graph.lint()
        gm.recompile()
    return count


__all__ = ["cancel_view_pairs"]
