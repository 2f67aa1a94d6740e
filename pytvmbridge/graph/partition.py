"""Capability-based partitioning: supported operators are compiled, the rest stays in PyTorch.

``partition_and_compile(gm)`` groups the supported nodes of an ATen-level FX graph into maximal
partitions (``torch.fx``'s ``CapabilityBasedPartitioner``, which keeps the graph acyclic),
compiles each with :func:`compile_graph` and returns a GraphModule that calls the compiled
partitions and runs every other node with PyTorch. ``strict=True`` raises
:class:`UnsupportedOperatorError` naming the first operator that would stay in PyTorch.

A node is supported when its operator is in the table (:mod:`.ops`), its converter accepts its
arguments, and its floating-point tensors, read and computed, are of one dtype among float32,
float64, float16 and bfloat16 (no operator of the table converts between dtypes: a mixed one,
which PyTorch would promote, stays in PyTorch).

Example:
    >>> import torch
    >>> from pytvmbridge.graph.partition import unsupported_nodes
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> gm = make_fx(lambda x: torch.relu(x).logcumsumexp(0))(torch.ones(3))
    >>> [str(n.target) for n in unsupported_nodes(gm)]
    ['aten.logcumsumexp.default']
"""

from __future__ import annotations

import logging
import operator
import warnings
from typing import Any

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport

from .compiler import FLOAT_DTYPES, CompiledGraph, UnsupportedOperatorError, compile_graph
from .ops import (
    ACCEPTS,
    COMPARISONS,
    CONVERTERS,
    OTHER_DTYPES,
    PRODUCED_RESULTS,
    wider_affine_norm,
)
from .ops_index import MIXES_DTYPES
from .promotion import widens_floats
from .replay import VIEW_OPS

SUPPORTED_DTYPES = FLOAT_DTYPES


def _tensor_ok(val: Any, other: tuple[torch.dtype, ...] = ()) -> bool:
    return isinstance(val, torch.Tensor) and (val.dtype in SUPPORTED_DTYPES or val.dtype in other)


def _inputs_ok(node: torch.fx.Node) -> bool:
    other = OTHER_DTYPES.get(node.target, ())
    for arg in node.all_input_nodes:
        val = arg.meta.get("val")
        if isinstance(val, torch.Tensor) and not _tensor_ok(val, other):
            return False
    return _tensor_parameters_hold_tensors(node)


def _tensor_parameters_hold_tensors(node: torch.fx.Node) -> bool:
    """False where sizes stand for every Tensor parameter: ``torch.div(x.size(1), n,
    rounding_mode="trunc")`` traces to ``div.Tensor_mode(s0, s1)``, a 0-d tensor computed from
    sizes alone, which converters written for tensors cannot take (``x * s0``, a size beside a
    tensor, is a scalar operand they do take)."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return True
    held = [
        isinstance(arg.meta.get("val"), torch.Tensor)
        for param, arg in zip(schema.arguments, node.args, strict=False)
        if isinstance(param.type, torch.TensorType) and isinstance(arg, torch.fx.Node)
    ]
    return not held or any(held)


def _one_float_dtype(node: torch.fx.Node) -> bool:
    """Whether the floating-point tensors ``node`` reads and computes share one dtype."""
    val = node.meta.get("val")
    values = [a.meta.get("val") for a in node.all_input_nodes]
    values += list(val) if isinstance(val, (tuple, list)) else [val]
    dtypes = {v.dtype for v in values if isinstance(v, torch.Tensor) and v.dtype.is_floating_point}
    return len(dtypes) <= 1


def _mixes_dtypes(node: torch.fx.Node) -> bool:
    """Whether ``node`` may read floating dtypes other than the one it computes in."""
    return node.target in MIXES_DTYPES or widens_floats(node) or wider_affine_norm(node)


def is_supported(node: torch.fx.Node) -> bool:
    """Whether the graph compiler converts ``node`` (an ATen call with float tensors of one
    dtype: float32, float64, float16 or bfloat16)."""
    if node.op != "call_function" or node.target not in CONVERTERS:
        return False
    val = node.meta.get("val")
    if isinstance(val, (torch.SymInt, torch.SymFloat)):
        # Size arithmetic (group norm's H * W of symbolic sizes): computed in the kernel from
        # its tensors' shapes when every reader is compiled too. Left out, it split the graph
        # into partitions whose inputs have derived sizes no kernel can bind.
        return bool(node.users) and all(
            user.op == "call_function" and is_supported(user) for user in node.users
        )
    if node.target is operator.getitem:
        source = node.args[0]
        return (
            isinstance(source, torch.fx.Node)
            and source.target in PRODUCED_RESULTS
            and node.args[1] in PRODUCED_RESULTS[source.target]
            and is_supported(source)
        )
    if node.target in PRODUCED_RESULTS:
        wanted = PRODUCED_RESULTS[node.target]
        for user in node.users:
            if user.target is not operator.getitem or user.args[1] not in wanted:
                return False
        if not isinstance(val, (tuple, list)) or not all(
            val[i] is None or _tensor_ok(val[i], OTHER_DTYPES.get(node.target, ()))
            for i in wanted
            if i < len(val)
        ):  # None: a result masked off (convolution_backward's output_mask)
            return False
    elif not _tensor_ok(val, OTHER_DTYPES.get(node.target, ())) and not (
        node.target in COMPARISONS and isinstance(val, torch.Tensor) and val.dtype == torch.bool
    ):
        return False
    mixes = _mixes_dtypes(node)
    if not _inputs_ok(node) or (not mixes and not _one_float_dtype(node)):
        return False
    check = ACCEPTS.get(node.target)
    try:
        return check is None or bool(check(node))
    except Exception:  # an argument of an unexpected form: leave the node to PyTorch
        return False


def _is_tensor_op(node: torch.fx.Node) -> bool:
    val = node.meta.get("val")
    if isinstance(val, (tuple, list)):
        return any(isinstance(v, torch.Tensor) for v in val)
    return isinstance(val, torch.Tensor)


def unsupported_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The tensor operators of ``gm`` that would stay in PyTorch, in graph order."""
    return [
        n
        for n in gm.graph.nodes
        if n.op == "call_function" and not is_supported(n) and _is_tensor_op(n)
    ]


class _Support(OperatorSupport):
    def __init__(self, exclude: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.exclude = exclude

    def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
        return node.name not in self.exclude and is_supported(node)


class CompiledPartition(torch.nn.Module):
    """A compiled partition inside the partitioned GraphModule (called like the submodule)."""

    def __init__(self, compiled: CompiledGraph) -> None:
        super().__init__()
        self.compiled = compiled

    def forward(self, *args: Any) -> Any:
        return self.compiled(*args)


def _op_name(node: torch.fx.Node) -> str:
    target = node.target
    return getattr(target, "__name__", None) or str(target)


def partition_and_compile(
    gm: torch.fx.GraphModule, strict: bool = False, **options: Any
) -> torch.fx.GraphModule:
    """Compile the supported parts of ``gm``; returns a GraphModule computing the same outputs.

    Example:
        >>> import torch
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> gm = make_fx(lambda x: torch.relu(x).logcumsumexp(0) + 1)(torch.ones(2))
        >>> partition_and_compile(gm)(torch.tensor([-1.0, 2.0]))
        tensor([1.0000, 3.1269])
    """
    check_strict(gm, strict)
    fused = fuse_supported(gm)
    if fused is None:
        return gm
    # Inputs laid out channels_last (as Dynamo traced them) are read in their memory order.
    options.setdefault("permute_inputs", True)
    # Sizes only symbolic-int inputs carry are bound from arrays of that length.
    options.setdefault("size_carriers", True)
    for node in list(fused.graph.nodes):
        if not is_partition(node):
            continue
        sub = getattr(fused, node.target)
        try:
            compiled = compile_graph(sub, [], name=node.target, **options)
        except Exception as err:
            if strict:
                raise
            warnings.warn(
                f"pytvmbridge: partition {node.target} runs in PyTorch ({err})", stacklevel=2
            )
            continue
        setattr(fused, node.target, CompiledPartition(compiled))
        # The generated code calls the compiled graph directly, not through the submodule's
        # nn.Module.__call__ (hooks, tracing-state checks: microseconds per call that a small
        # graph notices); the submodule stays registered, for inspection.
        node.op, node.target = "call_function", _direct_call(compiled, node.target)
    fused.recompile()
    # Generate the code now: a lazily recompiled module's forward would go through
    # GraphModule.__call__ and nn.Module.__call__ on every call.
    real_recompile = getattr(fused, "real_recompile", None)
    if real_recompile is not None:
        real_recompile()
    return fused


def check_strict(gm: torch.fx.GraphModule, strict: bool) -> None:
    """Under ``strict``, raise :class:`UnsupportedOperatorError` naming the first tensor
    operator of ``gm`` that would run in PyTorch.

    Example:
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> gm = make_fx(lambda x: torch.relu(x).logcumsumexp(0))(torch.ones(3))
        >>> try:
        ...     check_strict(gm, True)
        ... except UnsupportedOperatorError as err:
        ...     print(str(err)[:45])
        strict=True: operator logcumsumexp.default (n
    """
    if not strict:
        if _log.isEnabledFor(logging.INFO):
            _log_fallbacks(gm)
        return
    bad = unsupported_nodes(gm)
    if bad:
        raise UnsupportedOperatorError(
            f"strict=True: operator {_op_name(bad[0])} (node {bad[0].name}) is not supported by "
            f"pytvmbridge and would run in PyTorch: {why_unsupported(bad[0])}"
        )


# ``logging.getLogger("pytvmbridge.graph").setLevel(logging.INFO)`` lists, per graph, the
# operators that stay in PyTorch and why (what strict=True would raise on, without raising).
_log = logging.getLogger("pytvmbridge.graph")


def _log_fallbacks(gm: torch.fx.GraphModule) -> None:
    bad = unsupported_nodes(gm)
    if not bad:
        _log.info("graph of %d operators: all compiled", len(gm.graph.nodes))
        return
    reasons = dict.fromkeys(f"{_op_name(n)}: {why_unsupported(n)}" for n in bad)
    _log.info(
        "%d operators stay in PyTorch (%d kinds):\n  %s",
        len(bad),
        len(reasons),
        "\n  ".join(reasons),
    )


def _dtypes_of(node: torch.fx.Node) -> str:
    vals = [a.meta.get("val") for a in node.all_input_nodes] + [node.meta.get("val")]
    names = [str(v.dtype).removeprefix("torch.") for v in vals if isinstance(v, torch.Tensor)]
    return ", ".join(dict.fromkeys(names)) or "none"


def why_unsupported(node: torch.fx.Node) -> str:
    """What keeps ``node`` out of a kernel, in words (for strict's error).

    Example:
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> gm = make_fx(lambda x: torch.erfinv(x))(torch.zeros(3))
        >>> why_unsupported(next(n for n in gm.graph.nodes if n.op == "call_function"))
        "the operator is not in pytvmbridge's table"
    """
    if node.target not in CONVERTERS:
        return "the operator is not in pytvmbridge's table"
    dtypes = _dtypes_of(node)
    other = OTHER_DTYPES.get(node.target, ())
    odd = [
        v.dtype
        for v in [a.meta.get("val") for a in node.all_input_nodes] + [node.meta.get("val")]
        if isinstance(v, torch.Tensor) and v.dtype not in SUPPORTED_DTYPES and v.dtype not in other
    ]
    if odd:
        kinds = ", ".join(str(d).removeprefix("torch.") for d in dict.fromkeys(odd))
        return f"it is not converted for tensors of dtype {kinds} (its tensors: {dtypes})"
    if not _mixes_dtypes(node) and not _one_float_dtype(node):
        return (
            f"it mixes floating dtypes ({dtypes}) in a way that does not only widen them "
            "(cast the operands to one dtype first)"
        )
    return (
        f"this form of its arguments is not converted (tensors: {dtypes}; arguments: "
        f"{_describe_args(node)})"
    )


def _describe_args(node: torch.fx.Node) -> str:
    def one(a: Any) -> str:
        if isinstance(a, torch.fx.Node):
            v = a.meta.get("val")
            if isinstance(v, torch.Tensor):
                return f"tensor{tuple(v.shape)}"
            return f"{type(v).__name__} {v}"
        return repr(a)

    parts = [one(a) for a in node.args] + [f"{k}={one(v)}" for k, v in node.kwargs.items()]
    text = ", ".join(parts)
    return text if len(text) < 200 else text[:197] + "..."


def fuse_supported(
    gm: torch.fx.GraphModule, exclude: frozenset[str] = frozenset()
) -> torch.fx.GraphModule | None:
    """``gm`` (modified) with each maximal group of supported nodes, less the nodes named in
    ``exclude``, moved into a submodule ``fused_k`` called in its place
    (:func:`is_partition`); None when no group is worth a kernel call.

    Example:
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> gm = make_fx(lambda x: torch.relu(x).logcumsumexp(0) * 2)(torch.ones(3))
        >>> fused = fuse_supported(gm)
        >>> sorted(n.target for n in fused.graph.nodes if is_partition(n))
        ['fused_0', 'fused_1']
    """
    for _ in range(4):
        partitioner = CapabilityBasedPartitioner(
            gm, _Support(exclude), allows_single_node_partition=True
        )
        partitions = partitioner.propose_partitions()
        # Size arithmetic read outside its partition would be a partition output, which a
        # kernel does not give (only tensors): it stays in PyTorch, its readers take it as an
        # input.
        leaving = _sizes_read_outside(partitions)
        if not leaving:
            break
        exclude = exclude | leaving
    # A partition of only shape bookkeeping (views, getitem) is not worth a kernel call.
    partitions = [p for p in partitions if any(n.target not in _VIEW_ONLY for n in p.nodes)]
    if not partitions:
        return None
    return partitioner.fuse_partitions(partitions)


def _sizes_read_outside(partitions: list[Any]) -> frozenset[str]:
    """The size-valued (SymInt or SymFloat) nodes of ``partitions`` that a node outside their
    partition reads."""
    leaving = set()
    for p in partitions:
        for node in p.nodes:
            if isinstance(node.meta.get("val"), (torch.SymInt, torch.SymFloat)) and any(
                user not in p.nodes for user in node.users
            ):
                leaving.add(node.name)
    return frozenset(leaving)


def is_partition(node: torch.fx.Node) -> bool:
    """Whether ``node`` calls a group of supported nodes made by :func:`fuse_supported`."""
    return node.op == "call_module" and str(node.target).startswith("fused_")


def _direct_call(compiled: CompiledGraph, name: str) -> Any:
    """``compiled`` as a plain function named ``name`` (FX's code generator names the globals
    it calls after the function's ``__name__``)."""

    def call(*args: Any) -> Any:
        return compiled(*args)

    call.__name__ = call.__qualname__ = name
    return call


# (select, slice and transpose included: left to PyTorch, they return the views eager returns)
_VIEW_ONLY = {operator.getitem} | VIEW_OPS

__all__ = [
    "CompiledPartition",
    "UnsupportedOperatorError",
    "check_strict",
    "fuse_supported",
    "is_partition",
    "is_supported",
    "partition_and_compile",
    "unsupported_nodes",
]
