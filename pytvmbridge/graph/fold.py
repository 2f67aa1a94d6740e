"""Weight transforms folded out of the kernel: computed once in PyTorch, again only on change.

A model's parameters reach the graph compiler as graph inputs (PyTorch >= 2.5 lifts them), so
left alone every call would redo what only depends on them: the transpose and panel packing of
a linear layer's weight, the batch-norm scale folded into the convolution before it, the
panels of a convolution weight. Inductor's freezing treats parameters as constants for this; a
``torch.compile`` backend cannot assume they stay constant, so this module does the next best
thing: the kernel takes the *transformed* tensor as an argument (a :class:`Derived` input, a
plain description of how to compute it from graph inputs), and :class:`DerivedCache` computes
it in PyTorch on the first call and again only when one of its source tensors changes (another
object or storage, or an in-place update, which bumps the version counter). Training, where the
parameters change every step, stays correct: each step recomputes the folded tensors once.

:func:`plan_folds` finds the patterns in an ATen-level FX graph:

- a linear layer, ``addmm(bias, x, permute(W, [1, 0]))`` / ``mm(x, t(W))`` with ``W`` a graph
  input: the kernel reads ``W`` packed as ``[N / b, K, b]`` panels (``topi.nn.dense_pack``; b
  is 64 with AVX-512 when it divides ``N``, else 32),
  or, when ``N`` is no multiple of 32 (a 10-class classifier), transposed once to ``[K, N]``
  (contiguous rows of ``W^T``: the product's vectors along ``N`` are loads, not gathers);
- a convolution followed by inference batch norm (``_native_batch_norm_legit_no_training``),
  with every parameter a graph input: the kernel runs one convolution with weight
  ``W * gamma / sqrt(var + eps)`` (per output channel) and bias ``(b - mean) * scale + beta``.

Example:
    >>> import torch
    >>> d = Derived("dense_pack", (0,), (2,))
    >>> materialize(d, [torch.arange(8.0).reshape(4, 2)]).shape
    torch.Size([2, 2, 2])
    >>> cache = DerivedCache()
    >>> w = torch.ones(4, 2)
    >>> cache.get(0, d, [w]) is cache.get(0, d, [w])
    True
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import torch

from ..topi.nn.dense import dense_pack_block
from . import unseen_writes
from .huge_pages import huge_page_copy
from .prepack import pack_weight

aten = torch.ops.aten

Source = Union[int, "Derived", None]
"""A kernel argument's origin: a graph-input index, a derived tensor, or None (absent)."""


@dataclass(frozen=True)
class Derived:
    """A tensor computed from graph inputs by a weight transform (see :func:`materialize`).

    ``kind`` names the transform, ``sources`` are graph-input indices or other ``Derived``
    values (``None`` for an absent optional tensor), ``params`` its constant arguments.
    """

    kind: str
    sources: tuple[Source, ...]
    params: tuple[Any, ...] = ()

    def leaves(self) -> list[int]:
        """The graph inputs this tensor depends on, in order."""
        out: list[int] = []
        for s in self.sources:
            if isinstance(s, Derived):
                out.extend(s.leaves())
            elif s is not None:
                out.append(s)
        return out


def _dense_pack(w: torch.Tensor, block: int) -> torch.Tensor:
    n, k = w.shape
    return w.reshape(n // block, block, k).permute(0, 2, 1).contiguous()


def _transpose(w: torch.Tensor) -> torch.Tensor:
    return w.t().contiguous()


def _conv_pack(w: torch.Tensor, width: int) -> torch.Tensor:
    return pack_weight(w, width)


def _winograd_pack(w: torch.Tensor, width: int, tile_size: int) -> torch.Tensor:
    """OIHW 3x3 -> ``G w G^T`` per channel pair, blocked ``[m + 2, m + 2, O/width, I, width]``
    (``topi.nn.conv2d_winograd_nchwc``'s kernel), computed in float64."""
    from ..topi.nn.winograd import winograd_transform_matrices

    g = torch.from_numpy(winograd_transform_matrices(tile_size)[2])
    u = torch.einsum("ap,oipq,bq->aboi", g, w.double(), g)
    alpha, _, o, i = u.shape
    u = u.reshape(alpha, alpha, o // width, width, i).permute(0, 1, 2, 4, 3)
    return u.to(w.dtype).contiguous()


def _bn_scale(gamma: torch.Tensor | None, var: torch.Tensor, eps: float) -> torch.Tensor:
    scale = torch.rsqrt(var + eps)
    return scale if gamma is None else scale * gamma


def _bn_weight(w: torch.Tensor, gamma: Any, var: torch.Tensor, eps: float) -> torch.Tensor:
    return (w * _bn_scale(gamma, var, eps).reshape(-1, *([1] * (w.dim() - 1)))).contiguous()


def _bn_bias(bias: Any, gamma: Any, beta: Any, mean: torch.Tensor, var: torch.Tensor,
             eps: float) -> torch.Tensor:  # fmt: skip
    shifted = -mean if bias is None else bias - mean
    out = shifted * _bn_scale(gamma, var, eps)
    return (out if beta is None else out + beta).contiguous()


_TRANSFORMS: dict[str, Callable[..., torch.Tensor]] = {
    "dense_pack": _dense_pack,  # (W,), (block,)
    "transpose": _transpose,  # (W,), ()
    "conv_pack": _conv_pack,  # (W,), (width,)
    "winograd_pack": _winograd_pack,  # (W,), (width, tile size)
    "bn_weight": _bn_weight,  # (W, gamma, var), (eps,)
    "bn_bias": _bn_bias,  # (bias, gamma, beta, mean, var), (eps,)
}


def materialize(derived: Derived, inputs: Sequence[Any] | Mapping[int, Any]) -> torch.Tensor:
    """Compute ``derived`` from the graph inputs ``inputs`` (a sequence, or a mapping from
    input index to value), with no gradient recorded.

    Example:
        >>> import torch
        >>> w = torch.ones(2, 1, 1, 1); var = torch.full((2,), 3.0)
        >>> materialize(Derived("bn_weight", (0, None, 1), (1.0,)), [w, var]).flatten().tolist()
        [0.5, 0.5]
    """
    args = [
        materialize(s, inputs) if isinstance(s, Derived) else (None if s is None else inputs[s])
        for s in derived.sources
    ]
    with torch.no_grad():
        args = [a.detach() if isinstance(a, torch.Tensor) else a for a in args]
        return _TRANSFORMS[derived.kind](*args, *derived.params)


def _version(t: torch.Tensor) -> int:
    """The tensor's version counter; -1 for an inference tensor (a model made under
    ``torch.inference_mode()``), which has none: such a tensor cannot be written outside
    inference mode, so its derived copies stay valid until it is replaced."""
    return -1 if t.is_inference() else t._version


class DerivedCache:
    """Derived tensors by kernel-argument position; recomputed when a source tensor changes.

    A source counts as changed when it is another tensor object, its storage moved, its version
    counter moved, or a fused optimizer step ran since (:mod:`.unseen_writes`). Sources are held
    by weak reference: the cache does not keep a dropped model's weights alive, and an entry
    goes with its sources (the compiled graph outlives the model it was traced from: Dynamo
    keeps it with the code of ``forward``)."""

    def __init__(self) -> None:
        # position -> (stamps: (weak source, version, address, input index), fused steps, value)
        self._entries: dict[int, tuple[list[tuple[Any, int, int, int]], int, torch.Tensor]] = {}
        unseen_writes.watch()

    def get(self, position: int, derived: Derived, inputs: Sequence[Any]) -> torch.Tensor:
        # Called for every derived argument on every call of a compiled graph: the check is
        # one loop over the stamps, nothing recomputed.
        entry = self._entries.get(position)
        if entry is not None and entry[1] == unseen_writes.fused_steps:
            for source, version, ptr, index in entry[0]:
                current = inputs[index]
                if (
                    current is not source()
                    or (version >= 0 and current._version != version)  # (-1: no counter)
                    or current.data_ptr() != ptr
                ):
                    break
            else:
                return entry[2]
        # Read on every call, from beyond L2 when large: huge pages spare the page walks.
        value = huge_page_copy(materialize(derived, inputs))
        drop = self._dropper(position)
        stamps = [
            (weakref.ref(inputs[i], drop), _version(inputs[i]), inputs[i].data_ptr(), i)
            for i in derived.leaves()
        ]
        self._entries[position] = (stamps, unseen_writes.fused_steps, value)
        return value

    def _dropper(self, position: int) -> Callable[[Any], None]:
        # called when a source is collected: its entry (a weight-sized copy) goes too, unless
        # the position holds a newer entry by then
        cache = weakref.ref(self)

        def dropped(source: Any) -> None:
            me = cache()
            entry = me._entries.get(position) if me is not None else None
            if entry is not None and any(s[0] is source for s in entry[0]):
                del me._entries[position]

        return dropped

    def clear(self) -> None:
        self._entries.clear()

    # A compiled graph pickles with an empty cache: the entries are made again on first use
    # (weak references do not pickle, and the sources are another process's tensors).
    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]


# --- finding the patterns in an FX graph --------------------------------------------------------

DENSE_BLOCK = 32
"""The narrowest panel width of packed linear weights; each weight takes
``topi.nn.dense.dense_pack_block`` of its output count (64, the AVX-512 register tile's width,
when it divides it)."""

_TRANSPOSES = (aten.permute.default, aten.t.default)


@dataclass
class FoldPlan:
    """What :func:`plan_folds` found: derived kernel inputs and the nodes that read them.

    ``derived`` maps a derived input's name to ``(Derived, static shape)``; ``rewrites`` maps an
    FX node to a converter ``fn(value, derived_tensors)`` replacing its usual one (``value``
    converts an FX argument, ``derived_tensors`` maps names to the TE placeholders).
    ``conv_weights`` names the derived inputs used as ungrouped convolution weights (they can be
    packed further, see the compiler).
    """

    derived: dict[str, tuple[Derived, list[int]]] = field(default_factory=dict)
    rewrites: dict[torch.fx.Node, Callable[..., Any]] = field(default_factory=dict)
    conv_weights: set[str] = field(default_factory=set)
    # convolution node -> the name of its batch-norm-folded weight
    folded_conv_weights: dict[torch.fx.Node, str] = field(default_factory=dict)

    def add(self, base: str, spec: tuple[Derived, list[int]]) -> str:
        """Adds a derived input named ``base``, or ``base_1``, ``base_2``... when ``base`` is
        another transform already (one weight read by two layers that transform it
        differently: a convolution shared by two batch norms, a linear weight at two row
        counts); the same transform twice is one input. Returns the name it has."""
        name, k = base, 0
        while name in self.derived and self.derived[name] != spec:
            k += 1
            name = f"{base}_{k}"
        self.derived[name] = spec
        return name


def _static_shape(node: Any) -> list[int] | None:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or val.dtype != torch.float32:
        return None
    if not all(isinstance(d, int) for d in val.shape):
        return None
    return list(val.shape)


def _rows(x: Any) -> int | None:
    """The row count of a linear layer's input (every dimension but the last), when static:
    the panel width depends on it (see ``dense_pack_block``)."""
    shape = _static_shape(x)
    return math.prod(shape[:-1]) if shape is not None and len(shape) >= 2 else None


def _is_weight_transpose(node: Any, inputs: dict[torch.fx.Node, int]) -> bool:
    if not isinstance(node, torch.fx.Node) or node.target not in _TRANSPOSES:
        return False
    source = node.args[0]
    if source not in inputs or len(_static_shape(source) or []) != 2:
        return False
    return node.target is aten.t.default or list(node.args[1]) == [1, 0]


def _plan_dense(gm: torch.fx.GraphModule, inputs: dict[torch.fx.Node, int], plan: FoldPlan) -> None:
    from .. import topi

    for node in gm.graph.nodes:
        if node.target is aten.linear.default:
            _plan_linear(node, inputs, plan)
            continue
        if node.target is aten.addmm.default:
            bias, x, wt = node.args[:3]
            if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1:
                continue
            if len(node.args) > 3:
                continue
        elif node.target is aten.mm.default:
            bias, (x, wt) = None, node.args
        else:
            continue
        if not _is_weight_transpose(wt, inputs):
            continue
        weight = wt.args[0]
        n, k = _static_shape(weight)
        one_d_bias = bias is not None and len(bias.meta["val"].shape) == 1
        block = dense_pack_block(n, _rows(x))
        if not block:
            _plan_transposed(plan, node, inputs[weight], f"{weight.name}_t", [k, n], x, bias)
            continue
        name = plan.add(
            f"{weight.name}_dense",
            (
                Derived("dense_pack", (inputs[weight],), (block,)),
                [n // block, _static_shape(weight)[1], block],
            ),
        )

        def convert(value: Callable, derived: dict, x=x, bias=bias, name=name, one_d=one_d_bias):
            out = topi.nn.dense_pack(value(x), derived[name], value(bias) if one_d else None)
            return out if bias is None or one_d else topi.add(out, value(bias))

        plan.rewrites[node] = convert


def _plan_linear(node: Any, inputs: dict[torch.fx.Node, int], plan: FoldPlan) -> None:
    """``aten.linear(x, W, b)`` (from :func:`.linear.fold_linear_views`) with ``W`` a graph
    input: ``W`` packed in panels as :func:`_plan_dense` packs it, or transposed once when no
    panel width divides ``N``."""
    from .linear import linear_packed, linear_transposed

    x, weight = node.args[:2]
    bias = node.args[2] if len(node.args) > 2 else None
    if weight not in inputs:
        return
    n, k = _static_shape(weight)
    block = dense_pack_block(n, _rows(x))
    if not block:
        name = plan.add(f"{weight.name}_t", (Derived("transpose", (inputs[weight],)), [k, n]))
        compute = linear_transposed
    else:
        name = plan.add(
            f"{weight.name}_dense",
            (Derived("dense_pack", (inputs[weight],), (block,)), [n // block, k, block]),
        )
        compute = linear_packed

    def convert(value: Callable, derived: dict, x=x, bias=bias, name=name, compute=compute):
        return compute(value(x), derived[name], None if bias is None else value(bias))

    plan.rewrites[node] = convert


def _plan_transposed(
    plan: FoldPlan, node: Any, weight: int, name: str, shape: list[int], x: Any, bias: Any
) -> None:
    """``node`` reads its weight transposed once, ``[K, N]``: ``x @ W^T (+ bias)``."""
    from .. import topi

    name = plan.add(name, (Derived("transpose", (weight,)), shape))

    def convert(value: Callable, derived: dict, x=x, bias=bias, name=name) -> Any:
        out = topi.nn.matmul(value(x), derived[name])
        return out if bias is None else topi.add(out, value(bias))

    plan.rewrites[node] = convert


def _plan_conv_bn(
    gm: torch.fx.GraphModule, inputs: dict[torch.fx.Node, int], plan: FoldPlan
) -> None:
    from .ops import CONVERTERS

    # the table's converter (ops_spatial.py's: 1-d and transposed ones too, 2-d by ops.py's)
    convolution = CONVERTERS[aten.convolution.default]
    for node in gm.graph.nodes:
        if node.target is not aten._native_batch_norm_legit_no_training.default:
            continue
        conv, gamma, beta, mean, var, _momentum, eps = node.args
        if not isinstance(conv, torch.fx.Node) or conv.target is not aten.convolution.default:
            continue
        if len(conv.users) != 1 or conv.args[6]:  # other readers of the conv, or transposed
            continue
        weight, bias = conv.args[1], conv.args[2]
        params = (weight, bias, gamma, beta, mean, var)
        if weight not in inputs or any(p is not None and p not in inputs for p in params):
            continue
        if mean is None or var is None or _static_shape(weight) is None:
            continue

        def src(p: Any) -> int | None:
            return None if p is None else inputs[p]

        w_name = plan.add(
            f"{weight.name}_bn",
            (
                Derived("bn_weight", (src(weight), src(gamma), src(var)), (float(eps),)),
                _static_shape(weight),
            ),
        )
        b_name = plan.add(
            f"{weight.name}_bn_bias",
            (
                Derived("bn_bias", (src(bias), src(gamma), src(beta), src(mean), src(var)),
                        (float(eps),)),
                [_static_shape(weight)[0]],
            ),
        )  # fmt: skip
        plan.folded_conv_weights[conv] = w_name
        x_shape = conv.args[0].meta["val"].shape
        if conv.args[8] == 1 and all(isinstance(d, int) for d in x_shape[1:]):
            plan.conv_weights.add(w_name)

        def convert_conv(value: Callable, derived: dict, conv=conv, w=w_name, b=b_name) -> Any:
            x, _, _, stride, padding, dilation, transposed, out_pad, groups = conv.args
            return convolution(value(x), derived[w], derived[b], stride, padding, dilation,
                               transposed, out_pad, groups)  # fmt: skip

        plan.rewrites[conv] = convert_conv
        plan.rewrites[node] = lambda value, derived, conv=conv: (value(conv), None, None)


def plan_folds(gm: torch.fx.GraphModule) -> FoldPlan:
    """The weight transforms of ``gm`` to fold out of the kernel (see the module docstring).

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> f = lambda x, w, b: torch.nn.functional.linear(x, w, b)
        >>> gm = make_fx(f)(torch.ones(2, 8), torch.ones(64, 8), torch.ones(64))
        >>> [d.kind for d, _ in plan_folds(gm).derived.values()]
        ['dense_pack']
    """
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    inputs = {n: i for i, n in enumerate(placeholders) if _static_shape(n) is not None}
    plan = FoldPlan()
    _plan_dense(gm, inputs, plan)
    _plan_conv_bn(gm, inputs, plan)
    return plan


__all__ = [
    "DENSE_BLOCK",
    "Derived",
    "DerivedCache",
    "FoldPlan",
    "Source",
    "materialize",
    "plan_folds",
]
