"""compile_graph(): an ATen-level FX graph whose operators are all supported -> CompiledGraph.

The whole graph becomes one tensor-expression graph (one placeholder per tensor input, one
topi computation per operator), scheduled by ``auto_schedule`` as a whole (so elementwise
chains are inlined and bias/batch-norm/activation/residual epilogues fuse into the convolution or
matmul that feeds them) and compiled into one LLVM function: running the graph is one call from
Python into C++. A dimension that is symbolic in the FX graph (``s0``) becomes a size variable of
the kernel, bound from the input arrays at each call, so one compilation serves every size.

A symbolic size that a guard pins (``s1*s2`` where PyTorch asserted ``s1*s2 == 12``, as a
flatten before a linear layer does under ``dynamic=True``) is that constant in the kernel.

Tensors of float32, float64, float16 and bfloat16 are compiled (each operator computes in its
inputs' dtype; matrix products and convolutions of 16-bit floats accumulate in float32 and round
once, as PyTorch's CPU kernels do). An output that eager returns as a view of another output or
of an input (``return y, y.t()``) is not computed by the kernel: it is made from its base after
the kernel by the same view operators (:mod:`.replay`), so it shares the base's storage as in
eager.

``CompiledGraph`` keeps its state as plain data: the compiled Module, which graph inputs it takes
(``tensor_inputs``), how each symbolic size is found (``size_bindings``) and each output's
shape, as integers or sympy expressions over the sizes (``output_shapes``).

Example:
    >>> import torch
    >>> from pytvmbridge.graph import compile_graph
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> gm = make_fx(lambda x, y: torch.relu(x + y))(torch.ones(3), torch.ones(3))
    >>> cg = compile_graph(gm, [torch.ones(3), -torch.ones(3) * 2])
    >>> cg(torch.tensor([1.0, 2.0, 3.0]), torch.ones(3) * -2)
    tensor([0., 0., 1.])
"""

from __future__ import annotations

import contextvars
import functools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch

from .. import cache, te
from ..autoschedule import auto_schedule
from ..autotvm.graph_tuning import graph_tuning
from ..build import Module
from ..error import TVMNotImplementedError, TVMTypeError, TVMValueError
from ..kernel import _operations  # one walk over the operation graph
from ..schedule import create_schedule
from ..topi.utils import const_int
from .fold import Derived, DerivedCache, FoldPlan, Source, plan_folds
from .layout import (
    blocking,
    conv_block,
    host_block,
    winograd_shape,
    winograd_tile,
    winograd_weights,
)
from .linear import fold_linear_views
from .ops import CONVERTERS, PREPARE
from .promotion import DTYPE_NAMES
from .read_through import plan_read_through
from .replay import Step, alias_replays, run_steps
from .traced_sizes import in_sizes, size_hint
from .views import cancel_view_pairs

#: The floating-point dtypes the graph compiler computes in.
FLOAT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
# Every dtype a kernel reads or writes (promotion.py's names); integers and bool only through
# the operators that take them (ops.OTHER_DTYPES: indices, masks, casts, integer arithmetic).
_DTYPES = DTYPE_NAMES


@dataclass(frozen=True)
class PermutedInput:
    """A kernel argument that is graph input ``index`` seen in its memory order:
    ``input.permute(dims)``, a row-major view of a tensor whose layout is dense but not
    row-major (``channels_last``). The kernel reads it through an inlined view back to the
    graph's order of dimensions, so it runs its compact variant on such inputs instead of the
    strided one (which would gather every vector)."""

    index: int
    dims: tuple[int, ...]


@dataclass(frozen=True)
class SizeCarrier:
    """A kernel argument that carries symbolic-int graph input ``index`` as its length (an
    array of that many bytes, never read): the kernel binds its size variables from its
    arguments' shapes only."""

    index: int


@functools.lru_cache(maxsize=64)
def _size_carrier(length: int) -> torch.Tensor:
    return torch.empty(length, dtype=torch.uint8)


def memory_order(val: Any) -> tuple[int, ...] | None:
    """The order of ``val``'s dimensions from the largest stride to the smallest when its layout
    is dense but not row-major (channels_last: ``(0, 2, 3, 1)``), else None (row-major, gaps,
    overlaps). Symbolic strides (a dynamic batch) are ordered by the values traced and checked
    as expressions: ``(s0, 4, 5, 4)`` with strides ``(4, 1, 16*s0, 4*s0)`` is dense in the order
    ``(2, 3, 0, 1)``.

    Example:
        >>> import torch
        >>> memory_order(torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last))
        (0, 2, 3, 1)
        >>> memory_order(torch.empty(2, 3)) is None
        True
    """
    if not isinstance(val, torch.Tensor) or val.dim() < 2:
        return None
    strides = [_expr(x) for x in val.stride()]
    shape = [_expr(x) for x in val.shape]
    if any(x is None for x in strides + shape):
        return None
    hints = [_hint(x) for x in val.stride()]
    order = tuple(sorted(range(val.dim()), key=lambda d: (-hints[d], d)))

    def dense_in(dims: Sequence[int]) -> bool:
        expected: sympy.Expr = sympy.Integer(1)
        for d in reversed(dims):
            if shape[d] == 1:  # any stride will do
                continue
            if sympy.simplify(strides[d] - expected) != 0:
                return False
            expected = expected * shape[d]
        return True

    if dense_in(range(val.dim())) or not dense_in(order):
        return None  # row-major (up to sizes of 1), or not dense
    return order


def _expr(value: Any) -> sympy.Expr | None:
    """An int or SymInt as a sympy expression (None for anything else)."""
    if isinstance(value, int):
        return sympy.Integer(value)
    if isinstance(value, torch.SymInt):
        return value.node.expr
    return None


def _hint(value: Any) -> int:
    """The value traced for an int or SymInt (its size hint; 0 where it has none)."""
    hint = size_hint(value if isinstance(value, torch.SymInt) else int(value))
    return 0 if hint is None else hint


class UnsupportedOperatorError(TVMNotImplementedError):
    """A model uses an operator (or dtype, or form of arguments) that pytvmbridge does not
    compile, where it may not run in PyTorch instead: under ``strict=True``, or for an input a
    compiled model must take as a tensor. A ``NotImplementedError`` and a ``TVMError``."""


class UnsupportedGraphError(UnsupportedOperatorError):
    """A graph handed to :func:`compile_graph` holds an operator or value it cannot convert
    (the partitioner hands it only supported ones; a caller that compiles a whole graph gets
    this, an :class:`UnsupportedOperatorError`)."""


# Sizes the graph's inputs carry only shifted (see _shifted_sizes), replaced while a graph is
# converted: symbol -> (new symbol - offset).
_SIZE_SUBSTITUTIONS: contextvars.ContextVar[dict[Any, Any] | None] = contextvars.ContextVar(
    "_SIZE_SUBSTITUTIONS", default=None
)


def _substituted(expr: Any) -> Any:
    subs = _SIZE_SUBSTITUTIONS.get()
    return expr.xreplace(subs) if subs and isinstance(expr, sympy.Basic) else expr


def _shifted_sizes(placeholders: Sequence[torch.fx.Node]) -> dict[Any, Any]:
    """Symbols that no tensor input has as a dimension but one has shifted (``s - 2``: a
    convolution's output handed to the next partition, under ``dynamic=True``): each becomes
    a new symbol for that dimension plus the shift, so the kernel binds it from that
    dimension (sizes are bound from plain dimensions only; the partition used to run in
    PyTorch, "sizes ['s'] cannot be bound from the inputs")."""
    plain: set[Any] = set()
    shifted: dict[Any, Any] = {}
    for node in placeholders:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        for dim in val.shape:
            if not isinstance(dim, torch.SymInt):
                continue
            expr = dim.node.expr
            if isinstance(expr, sympy.Symbol):
                plain.add(expr)
            elif isinstance(expr, sympy.Add) and len(expr.free_symbols) == 1:
                (symbol,) = expr.free_symbols
                offset = expr - symbol
                if isinstance(offset, sympy.Integer) and symbol not in shifted:
                    shifted[symbol] = offset
    subs = {}
    for symbol, offset in shifted.items():
        if symbol in plain:
            continue
        shift = f"plus{int(offset)}" if offset > 0 else f"minus{-int(offset)}"
        subs[symbol] = sympy.Symbol(f"{symbol}_{shift}", integer=True, positive=True) - offset
    return subs


def _sym_to_expr(expr: Any, size_vars: dict[str, te.Var]) -> Any:
    """A sympy expression over symbolic sizes -> a TE expression over size variables."""
    expr = _substituted(expr)
    if isinstance(expr, (int, sympy.Integer)):
        return int(expr)
    if isinstance(expr, sympy.Symbol):
        name = str(expr)
        if name not in size_vars:
            size_vars[name] = te.size_var(name)
        return size_vars[name]
    if isinstance(expr, sympy.Add):
        terms = [_sym_to_expr(a, size_vars) for a in expr.args]
        out = terms[0]
        for t in terms[1:]:
            out = out + t
        return out
    if isinstance(expr, sympy.Mul):
        terms = [_sym_to_expr(a, size_vars) for a in expr.args]
        out = terms[0]
        for t in terms[1:]:
            out = out * t
        return out
    kind = type(expr).__name__
    if kind in ("Pow", "PowByNatural"):
        # a square image's H * W is one symbol squared
        base, exponent = expr.args
        if isinstance(exponent, sympy.Integer) and 0 < int(exponent) <= 8:
            factor = _sym_to_expr(base, size_vars)
            out = factor
            for _ in range(int(exponent) - 1):
                out = out * factor
            return out
    elif kind in _SIZE_FUNCTIONS:
        return _SIZE_FUNCTIONS[kind](*(_sym_to_expr(a, size_vars) for a in expr.args))
    raise UnsupportedGraphError(f"symbolic size expression {expr} is not supported")


# PyTorch's integer size functions (torch.utils._sympy.functions), on sizes (non-negative; the
# divisors positive, where Python's and floor's remainder agree).
_SIZE_FUNCTIONS: dict[str, Any] = {
    "FloorDiv": te.floordiv,
    "CleanDiv": te.floordiv,  # a division PyTorch knows to be exact
    "CeilDiv": lambda a, b: te.floordiv(a + b - 1, b),
    "PythonMod": te.floormod,
    "Mod": te.floormod,
    "Max": lambda *args: functools.reduce(te.max, args),
    "Min": lambda *args: functools.reduce(te.min, args),
}


def pinned_size(dim: Any) -> int | None:
    """The constant a guard pins the compound symbolic size ``dim`` to, else None.

    Under ``dynamic=True`` every dimension is symbolic, and a flatten before a linear layer
    makes PyTorch assert ``s1*s2 == 12`` (the layer's input width) rather than specialize
    ``s1`` and ``s2``. The kernel may take that product as the constant: every call the
    compiled graph serves satisfies the guard. A plain symbol is left symbolic (a guard that
    pinned it would have replaced it by its value already).
    """
    if not isinstance(dim, torch.SymInt):
        return None
    node = dim.node
    expr = node.expr
    if isinstance(expr, (sympy.Symbol, sympy.Integer)) or not expr.free_symbols:
        return None
    try:  # ShapeEnv's static evaluation, with the guards recorded so far as axioms
        hint = node.hint
        if hint is None:
            return None
        proved = node.shape_env._maybe_evaluate_static(sympy.Eq(expr, int(hint)))
    except Exception:  # a private API of PyTorch's: without it, the size stays symbolic
        return None
    return int(hint) if proved is sympy.true else None


def _dim_value(dim: Any, size_vars: dict[str, te.Var]) -> Any:
    if isinstance(dim, torch.SymInt):
        pinned = pinned_size(dim)
        if pinned is not None:
            return pinned
        return _sym_to_expr(dim.node.expr, size_vars)
    return int(dim)


def _shape_spec(shape: Sequence[Any]) -> list[Any]:
    """Shape as ints and sympy expressions (plain data: picklable, evaluable later)."""
    out: list[Any] = []
    for d in shape:
        pinned = pinned_size(d)
        if pinned is not None:
            out.append(pinned)
        elif isinstance(d, torch.SymInt):
            out.append(d.node.expr)
        else:
            out.append(int(d))
    return out


@dataclass
class CompiledGraph:
    """A compiled graph: call it with the graph's inputs to get its outputs.

    ``kernel_sources[k]`` says what the Module's k-th argument is: a graph-input index, or a
    :class:`~.fold.Derived` weight transform of graph inputs (a packed or batch-norm-folded
    weight, computed once and cached until its sources change); the outputs follow.
    ``size_bindings`` maps each size symbol to ``(input, dim)`` or ``(input, None)`` (a
    symbolic-int input); ``output_shapes`` holds ints or sympy expressions of those symbols;
    ``output_tuple`` says whether the graph returns a tuple (else one tensor).
    ``output_of[k]`` is the Module output that graph output ``k`` is, or None when
    ``output_replays[k]`` makes it as a view of another output or an input (:mod:`.replay`).
    """

    module: Module
    num_inputs: int
    kernel_sources: list[Source]
    size_bindings: dict[str, tuple[int, int | None]]
    output_shapes: list[list[Any]]
    output_dtypes: list[torch.dtype]
    output_of: list[int | None]  # graph output -> index into the Module's outputs
    output_tuple: bool
    # Per Module output: None, or the dims that make the output (computed in its memory order,
    # traced channels_last) a view in the graph's order of dimensions, with eager's strides.
    output_views: tuple[tuple[int, ...] | None, ...] = ()
    # Graph output -> the view operators that make it from its base (see the class docstring).
    output_replays: dict[int, tuple[Step, ...]] = field(default_factory=dict)
    _derived: DerivedCache = field(default_factory=DerivedCache, repr=False, compare=False)

    @property
    def tensor_inputs(self) -> list[int]:
        """The graph inputs passed to the kernel as they are (or permuted to their memory
        order: :class:`PermutedInput`)."""
        return [
            s if isinstance(s, int) else s.index
            for s in self.kernel_sources
            if isinstance(s, (int, PermutedInput))
        ]

    @property
    def derived_inputs(self) -> list[Derived]:
        """The weight transforms computed outside the kernel (see :mod:`.fold`)."""
        return [s for s in self.kernel_sources if isinstance(s, Derived)]

    def _caller(self) -> Any:
        """The Module's C++ bridge to PyTorch, made on first use: given the kernel's inputs it
        binds the sizes, computes the output shapes, allocates the outputs with PyTorch's
        allocator and runs, all in one call (no per-output work in Python)."""
        caller = self.__dict__.get("_bridge")
        if caller is None:
            from .. import _core, frameworks

            caller = _core.Caller()
            caller._bridge(self.module, frameworks.get("torch"))
            self.__dict__["_bridge"] = caller
        return caller

    def __getstate__(self) -> dict[str, Any]:
        # The bridge is a cache of the call path (made again on first use), not state.
        state = dict(self.__dict__)
        state.pop("_bridge", None)
        return state

    def __call__(self, *args: Any) -> Any:
        if len(args) != self.num_inputs:
            raise TVMTypeError(f"compiled graph takes {self.num_inputs} inputs, found {len(args)}")
        derived = self._derived
        kernel_args = [
            args[s]
            if type(s) is int
            else args[s.index].permute(s.dims)
            if type(s) is PermutedInput
            else _size_carrier(int(args[s.index]))
            if type(s) is SizeCarrier
            else derived.get(k, s, args)
            for k, s in enumerate(self.kernel_sources)
        ]
        # Symbolic-int inputs (a batch size passed as a number) are not kernel arguments; the
        # kernel binds its size variables from the arrays' shapes.
        try:
            outs = self._caller()(*kernel_args)
        except TypeError:
            outs = self._caller()(*self._traced_dtypes(kernel_args))
        n_out = len(self.output_shapes)
        if n_out == 1:
            outs = (outs,)
        if self.output_views:
            outs = tuple(
                o if dims is None else o.permute(dims)
                for o, dims in zip(outs, self.output_views, strict=True)
            )
        if self.output_replays:
            return self._with_views(args, outs)
        if self.output_tuple:
            return tuple(outs[i] for i in self.output_of)
        return outs[self.output_of[0]]

    def _traced_dtypes(self, kernel_args: list[Any]) -> list[Any]:
        """The arguments cast to the floating dtypes the graph was traced with, where a tensor
        arrives in another one: a PyTorch operator left in PyTorch can return a dtype its
        trace did not say (layer norm's mean and rstd are float32 for bfloat16 activations
        with float32 weights, where the trace says bfloat16). Called only when the kernel
        refused its arguments; anything else is raised as it was."""
        wanted = self.module.arg_dtypes
        fixed, changed = [], False
        for k, a in enumerate(kernel_args):
            want = getattr(torch, wanted[k], None)
            if (
                isinstance(a, torch.Tensor)
                and isinstance(want, torch.dtype)
                and a.dtype != want
                and a.dtype.is_floating_point
                and want.is_floating_point
            ):
                a, changed = a.to(want), True
            fixed.append(a)
        if not changed:
            raise
        return fixed

    def _with_views(self, args: Sequence[Any], outs: Sequence[torch.Tensor]) -> Any:
        """The graph's outputs, those eager returns as views made from their bases."""
        results = [None if i is None else outs[i] for i in self.output_of]
        env: dict[tuple[str, int], Any] = {("in", i): a for i, a in enumerate(args)}
        env.update((("out", k), r) for k, r in enumerate(results) if r is not None)
        for k, steps in self.output_replays.items():
            results[k] = run_steps(steps, env)
        return tuple(results) if self.output_tuple else results[0]


def _convert_arg(value: Any, env: dict[torch.fx.Node, Any], size_vars: dict) -> Any:
    if isinstance(value, torch.fx.Node):
        if value in env:
            return env[value]
        raise UnsupportedGraphError(f"value {value.name} is not available")
    if isinstance(value, (list, tuple)):
        return type(value)(_convert_arg(v, env, size_vars) for v in value)
    if isinstance(value, torch.SymInt):
        return _dim_value(value, size_vars)
    return value


# Operators whose shape argument is the result's shape (-1 allowed).
_SHAPE_FROM_META = {
    torch.ops.aten.view.default,
    torch.ops.aten._unsafe_view.default,
    torch.ops.aten.reshape.default,
    torch.ops.aten.expand.default,
}


def import_graph(
    gm: torch.fx.GraphModule,
    prepacked: dict[str, int] | None = None,
    plan: FoldPlan | None = None,
    permuted: frozenset[str] = frozenset(),
) -> tuple[list[Any], list[Any], dict[str, te.Var]]:
    """Convert every node of ``gm`` to TE: returns (placeholders, outputs, size variables).

    Placeholders are TE tensors (tensor inputs), TE expressions (symbolic-int inputs) or None,
    one per graph input, followed by one TE tensor per derived input of ``plan`` (default:
    :func:`~.fold.plan_folds` of ``gm``), which also replaces the converters of the nodes that
    read them. ``prepacked`` names convolution weights (graph inputs or derived inputs)
    declared packed (``[O/w, I, kh, kw, w]``, value ``w``; see :mod:`.prepack`).
    ``permuted`` names tensor inputs whose example is dense in another order of its dimensions
    (:func:`memory_order`): each is declared in that order and read through a view.
    """
    prepacked = prepacked or {}
    plan = plan_folds(gm) if plan is None else plan
    size_vars: dict[str, te.Var] = {}
    env: dict[torch.fx.Node, Any] = {}
    inputs: list[Any] = []
    outputs: list[Any] = []
    derived: dict[str, te.Tensor] = {}
    for dname, (_, dshape) in plan.derived.items():
        if dname in prepacked:
            dshape = _packed_shape(dname, list(dshape), prepacked[dname])
        derived[dname] = te.placeholder(list(dshape), "float32", name=dname)

    def value(arg: Any) -> Any:
        return _convert_arg(arg, env, size_vars)

    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if node.op == "placeholder":
            if isinstance(val, torch.Tensor):
                if val.dtype not in _DTYPES:
                    raise UnsupportedGraphError(f"input {node.name} has dtype {val.dtype}")
                shape = [_dim_value(d, size_vars) for d in val.shape]
                order = memory_order(val) if node.name in permuted else None
                if node.name in prepacked:
                    shape = _packed_shape(node.name, shape, prepacked[node.name])
                    order = None
                if order is not None:
                    stored = te.placeholder(
                        [shape[d] for d in order], _DTYPES[val.dtype], name=node.name
                    )
                    # The graph's order of dimensions over the stored one; inlined into every
                    # reader by the automatic schedule.
                    env[node] = te.compute(
                        shape,
                        lambda *i, t=stored, o=order: t[tuple(i[d] for d in o)],
                        name=f"{node.name}_view",
                        tag="injective",
                    )
                    inputs.append(stored)
                    continue
                env[node] = te.placeholder(shape, _DTYPES[val.dtype], name=node.name)
            elif isinstance(val, torch.SymInt):
                env[node] = _dim_value(val, size_vars)
            elif isinstance(val, (int, float)):
                env[node] = val
            else:
                raise UnsupportedGraphError(f"input {node.name} has no tensor metadata")
            inputs.append(env[node])
        elif node.op == "call_function" and node in plan.rewrites:
            env[node] = plan.rewrites[node](value, derived)
        elif node.op == "call_function":
            if node.target not in CONVERTERS:
                raise UnsupportedGraphError(f"operator {node.target} is not supported")
            args = _convert_arg(node.args, env, size_vars)
            kwargs = {k: _convert_arg(v, env, size_vars) for k, v in node.kwargs.items()}
            if node.target in _SHAPE_FROM_META and isinstance(val, torch.Tensor) and args[1:]:
                # The traced result's shape, not the argument's: no -1 left to infer, and a
                # size a guard pins is that constant (see pinned_size).
                args = (args[0], [_dim_value(d, size_vars) for d in val.shape], *args[2:])
            if node.target is torch.ops.aten.slice.Tensor and isinstance(val, torch.Tensor):
                # the traced extent of the sliced axis (see ops._slice)
                axis = node.args[1] if len(node.args) > 1 else 0
                kwargs["extent"] = _dim_value(val.shape[axis], size_vars)
            if node.target is not operator.getitem:
                kwargs.pop("memory_format", None)
            if node.target in _CONFORMED and isinstance(val, torch.Tensor):
                args = _conformed(node, args, val, size_vars)
            prepare = PREPARE.get(node.target)
            if prepare is not None:
                shape = None
                if isinstance(val, torch.Tensor):
                    shape = [_dim_value(d, size_vars) for d in val.shape]
                args, kwargs = prepare(node, args, kwargs, shape)
            try:
                env[node] = CONVERTERS[node.target](*args, **kwargs)
            except Exception as err:
                # Which node failed: a caller may leave just that one to PyTorch.
                err.fx_node = node.name
                raise
        elif node.op == "output":
            result = node.args[0]
            nodes = list(result) if isinstance(result, (list, tuple)) else [result]
            outputs = [env[n] for n in nodes]
        else:
            raise UnsupportedGraphError(f"node kind {node.op} ({node.name}) is not supported")
    return inputs + list(derived.values()), outputs, size_vars


# Operators whose tensor operands share the result's sizes (broadcast ones aside; cat's along
# every axis but its own).
_CONFORMED = {
    torch.ops.aten.cat.default,
    torch.ops.aten.add.Tensor,
    torch.ops.aten.sub.Tensor,
    torch.ops.aten.mul.Tensor,
    torch.ops.aten.div.Tensor,
    torch.ops.aten.maximum.default,
    torch.ops.aten.minimum.default,
    torch.ops.aten.where.self,
}


def _conformed(node: torch.fx.Node, args: tuple, val: torch.Tensor, size_vars: dict) -> tuple:
    """``args`` with each tensor operand's symbolic sizes written as the traced result's, where
    they are other expressions of the same sizes. A stride-2 convolution then a transposed one
    give ``2 + 2 * ((s - 1) // 2)`` rows, concatenated with a skip connection of ``s`` rows:
    the trace checked them equal (a guard), topi's shape checks compare expressions and refused.
    Each renamed operand is an injective stage the automatic schedule inlines."""
    if all(isinstance(d, int) for d in val.shape):
        return args
    traced = [_dim_value(d, size_vars) for d in val.shape]
    axis = None
    if node.target is torch.ops.aten.cat.default:
        dim = args[1] if len(args) > 1 else 0
        axis = dim + val.dim() if dim < 0 else dim

    def conform(t: Any) -> Any:
        return in_sizes(t, traced, axis) if isinstance(t, te.Tensor) else t

    if axis is not None:
        return (type(args[0])(conform(t) for t in args[0]), *args[1:])
    return tuple(conform(a) for a in args)


def _stored_in_order(out: te.Tensor, order: tuple[int, ...]) -> te.Tensor:
    """``out`` with its dimensions in ``order`` (largest stride first): the kernel writes it
    row-major, so the permuted view the graph returns has the traced output's strides."""
    where = [order.index(d) for d in range(len(order))]
    return te.compute(
        [out.shape[d] for d in order],
        lambda *i: out[tuple(i[w] for w in where)],
        name=f"{out.op.name}_stored",
        tag="injective",
    )


def _permuted_inputs(gm: torch.fx.GraphModule, plan: FoldPlan) -> frozenset[str]:
    """The tensor inputs to declare in their memory order (:class:`PermutedInput`): those whose
    example is dense but not row-major, less convolution weights and the sources of weight
    transforms, which are packed from PyTorch's tensor whatever its layout."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    weights = _packable_weights(gm)
    for spec, _ in plan.derived.values():
        leaves = spec.leaves() if isinstance(spec, Derived) else [spec]
        weights.update(placeholders[i].name for i in leaves if isinstance(i, int))
    return frozenset(
        n.name
        for n in placeholders
        if n.name not in weights and memory_order(n.meta.get("val")) is not None
    )


def _packed_shape(name: str, shape: list[Any], width: int) -> list[Any]:
    """The shape of the OIHW weight ``name`` passed packed in panels of ``width`` output
    channels, ``[O/width, I, kh, kw, width]``, or Winograd-transformed in such blocks when the
    import marks it so (:func:`.layout.winograd_weights`)."""
    tile_size = winograd_weights().get(name)
    if tile_size:
        return winograd_shape(shape, width, tile_size)
    return [-(-shape[0] // width), shape[1], shape[2], shape[3], width]


def _weight_spec(name: str, source: Source, width: int, winograd: dict[str, int]) -> Derived:
    """How the kernel's packed weight ``name`` is computed from ``source``."""
    if name in winograd:
        return Derived("winograd_pack", (source,), (width, winograd[name]))
    return Derived("conv_pack", (source,), (width,))


_CONVOLUTION = torch.ops.aten.convolution.default


def _packable_weights(gm: torch.fx.GraphModule) -> set[str]:
    """Tensor inputs used only as the weight of ungrouped 2-d convolutions (static shapes)."""
    names = set()
    for node in gm.graph.nodes:
        if node.op != "placeholder" or not node.users:
            continue
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor) or val.dim() != 4:
            continue
        if all(
            u.target is _CONVOLUTION and u.args[1] is node and u.args[0] is not node
            and u.args[8] == 1 and not u.args[6]
            and all(isinstance(d, int) for d in u.args[0].meta["val"].shape[1:])
            for u in node.users
        ):  # fmt: skip
            names.add(node.name)
    return names


def _schedule(outputs: list[te.Tensor], target: str, config: Any = None) -> Any:
    s = create_schedule([t.op for t in outputs])
    auto_schedule(s, target, config)
    return s


def _unique_outputs(outputs: list[te.Tensor]) -> tuple[list[te.Tensor], list[int]]:
    """Distinct computed outputs (an output that is a graph input is copied), and the position
    of each graph output among them."""
    unique: list[te.Tensor] = []
    output_of: list[int] = []
    for out in outputs:
        if isinstance(out.op, te.PlaceholderOp):
            out = te.compute(out.shape, lambda *i, o=out: o[i], name="copy")
        match = next((k for k, u in enumerate(unique) if u is out), None)
        if match is None:
            unique.append(out)
            match = len(unique) - 1
        output_of.append(match)
    return unique, output_of


def _graph_nodes(gm: torch.fx.GraphModule) -> tuple[list[torch.fx.Node], list[torch.fx.Node], bool]:
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    result = out_node.args[0]
    is_tuple = isinstance(result, (list, tuple))
    return placeholders, list(result) if is_tuple else [result], is_tuple


def compile_graph(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    target: str = "llvm",
    name: str = "graph",
    **options: Any,
) -> CompiledGraph:
    """Compile an ATen-level FX graph (every operator supported) into one kernel.

    ``example_inputs`` are used only where the graph's nodes lack ``meta["val"]`` (a graph from
    ``torch.fx.symbolic_trace``): the graph is then run once on them to record shapes. Raises
    :class:`UnsupportedGraphError` naming the first operator it cannot convert; an error raised
    while converting a node carries that node's name as ``err.fx_node``.

    ``alias_outputs=False`` computes the outputs that eager returns as views (``y.t()`` of an
    output ``y``) as copies in the kernel, instead of making them as views after it.

    Example:
        >>> import torch
        >>> gm = torch.fx.symbolic_trace(lambda a, b: torch.ops.aten.mm.default(a, b))
        >>> cg = compile_graph(gm, [torch.ones(2, 3), torch.ones(3, 4)])
        >>> cg(torch.ones(2, 3), torch.ones(3, 4)).tolist()[0]
        [3.0, 3.0, 3.0, 3.0]
    """
    # sizes the inputs carry only shifted are replaced while the graph is converted (see
    # _shifted_sizes)
    token = _SIZE_SUBSTITUTIONS.set(_shifted_sizes(_graph_nodes(gm)[0]))
    try:
        return _compile_graph(gm, example_inputs, target=target, name=name, **options)
    finally:
        _SIZE_SUBSTITUTIONS.reset(token)


def _compile_graph(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    target: str,
    name: str,
    **options: Any,
) -> CompiledGraph:
    placeholders, out_nodes, is_tuple = _graph_nodes(gm)
    if any("val" not in n.meta for n in gm.graph.nodes if n.op != "output"):
        from torch.fx.passes.shape_prop import ShapeProp

        ShapeProp(gm).propagate(*example_inputs)
        for n in gm.graph.nodes:
            if "tensor_meta" in n.meta and "val" not in n.meta:
                tm = n.meta["tensor_meta"]
                n.meta["val"] = torch.empty_strided(
                    tm.shape, tm.stride, dtype=tm.dtype, device="meta"
                )
            elif "val" not in n.meta and n.op == "placeholder":
                n.meta["val"] = example_inputs[placeholders.index(n)]
    if _float_dtypes(gm) - {torch.float32}:
        # The blocked layout, packed and Winograd weights are made for float32 vectors; other
        # float dtypes are computed in PyTorch's layout (and their casts stay inlined).
        options = {**options, "layout": "NCHW", "prepack_weights": False, "winograd": False}
    # Tuning tasks are cut from the graph as it is computed (blocked convolutions included); the
    # rewrites of linear layers and batched products below are left out of a tuned graph.
    tuning = graph_tuning(gm, target, options)
    if tuning is None:
        fold_linear_views(gm)  # a linear layer on a 3-d input, without its two reshapes
    cancel_view_pairs(gm)  # an activation between two 3-d linear layers: the product's epilogue
    placeholders, out_nodes, is_tuple = _graph_nodes(gm)
    plan = plan_folds(gm) if options.get("fold_weights", True) else FoldPlan()
    if tuning is None:  # batched products read their operands' view chains in place
        plan.rewrites.update(plan_read_through(gm))
    lanes = _layout_lanes(options, target)
    permuted = _permuted_inputs(gm, plan) if options.get("permute_inputs") else frozenset()
    winograd: dict[str, int] = {}
    with blocking(lanes):
        inputs, outputs, size_vars = import_graph(gm, plan=plan, permuted=permuted)
        prepacked = _conv_panel_widths(gm, plan, outputs, target, options)
        prepacked.update(_blocked_weights(gm, plan, lanes))
        if options.get("winograd", True):
            winograd = _winograd_weights(gm, plan, lanes)
    if prepacked:
        # Weights whose output channels the panels pad (see layout.channel_block).
        out_channels = {n.name: n.meta["val"].shape[0] for n in placeholders if n.name in prepacked}
        out_channels.update({k: shape[0] for k, (_, shape) in plan.derived.items()})
        padded = {k: out_channels[k] for k, w in prepacked.items() if out_channels[k] % w}
        with blocking(lanes, padded, winograd):
            inputs, outputs, size_vars = import_graph(gm, prepacked, plan, permuted)
    derived = dict(zip(plan.derived, inputs[len(placeholders) :], strict=True))
    inputs = inputs[: len(placeholders)]
    for node, out in zip(out_nodes, outputs, strict=True):
        if not isinstance(out, te.Tensor):
            raise UnsupportedGraphError(f"output {node} is not a computed tensor")

    replays = alias_replays(out_nodes, placeholders) if options.get("alias_outputs", True) else {}
    if len(replays) == len(out_nodes):
        # Nothing left for the kernel (every output views an input): the views are computed
        # as copies, since a kernel needs an output.
        replays = {}
    kept = [k for k in range(len(out_nodes)) if k not in replays]
    unique, kept_of = _unique_outputs([outputs[k] for k in kept])
    output_of: list[int | None] = [None] * len(out_nodes)
    for k, u in zip(kept, kept_of, strict=True):
        output_of[k] = u
    out_meta = []
    for k in range(len(unique)):
        node = out_nodes[output_of.index(k)]
        out_meta.append(node.meta["val"])
    output_views: list[tuple[int, ...] | None] = [None] * len(unique)
    if options.get("permute_inputs"):  # eager lays these out channels_last: stored so, viewed
        for k, out in enumerate(unique):
            order = memory_order(out_meta[k])
            if order is None or len(order) != len(out.shape):
                continue
            unique[k] = _stored_in_order(out, order)
            output_views[k] = tuple(order.index(d) for d in range(len(order)))

    # Kernel arguments: the graph inputs and derived tensors the outputs read (a weight whose
    # every use was folded into a derived tensor is not passed).
    used = {hash(op) for op in _operations(unique)}
    sources: list[Source] = []
    kernel_args: list[te.Tensor] = []
    for i, v in enumerate(inputs):
        if isinstance(v, te.Tensor) and hash(v.op) in used:
            val = placeholders[i].meta["val"]
            order = memory_order(val) if placeholders[i].name in permuted else None
            sources.append(i if order is None else PermutedInput(i, order))
            kernel_args.append(v)
    for dname, tensor in derived.items():
        if hash(tensor.op) in used:
            spec = plan.derived[dname][0]
            if dname in prepacked:
                spec = _weight_spec(dname, spec, prepacked[dname], winograd)
            sources.append(spec)
            kernel_args.append(tensor)
    for i, node in enumerate(placeholders):
        if node.name in prepacked and hash(inputs[i].op) in used:
            spec = _weight_spec(node.name, i, prepacked[node.name], winograd)
            sources[sources.index(i)] = spec
    # The kernel binds its sizes from the dimensions of the arrays passed to it: a size that
    # only a symbolic-int input or an input the kernel does not read carries (a gradient's
    # batch, in a backward that reads no full-size tensor) cannot be bound, and the partition
    # runs in PyTorch.
    passed = {
        s if type(s) is int else s.index for s in sources if isinstance(s, (int, PermutedInput))
    }
    bindings: dict[str, tuple[int, int | None]] = {}
    needed: set[str] = set()
    for i, node in enumerate(placeholders):
        val = node.meta["val"]
        if i not in passed or not isinstance(val, torch.Tensor):
            continue
        for d, dim in enumerate(val.shape):
            if isinstance(dim, torch.SymInt):
                expr = _substituted(dim.node.expr)
                needed |= {str(x) for x in expr.free_symbols}
                if isinstance(expr, sympy.Symbol):
                    bindings.setdefault(str(expr), (i, d))
    for meta in out_meta:
        for dim in meta.shape:
            if isinstance(dim, torch.SymInt):
                needed |= {str(x) for x in _substituted(dim.node.expr).free_symbols}
    missing = needed - set(bindings)
    # (Only where the caller is CompiledGraph itself: an export's plan lists tensors.)
    for i, node in enumerate(placeholders if options.get("size_carriers") else ()):
        # A size only a symbolic-int input carries (F.interpolate to another tensor's size, a
        # tensor the partition does not read): the kernel binds it from a byte array of that
        # length, passed for the input (SizeCarrier).
        val = node.meta["val"]
        if not isinstance(val, torch.SymInt):
            continue
        symbol = str(_substituted(val.node.expr))
        if symbol in missing and symbol in size_vars:
            sources.append(SizeCarrier(i))
            kernel_args.append(te.placeholder((size_vars[symbol],), "uint8", f"size_{symbol}"))
            bindings[symbol] = (i, None)
            missing.discard(symbol)
    if missing:
        raise UnsupportedGraphError(f"sizes {sorted(missing)} cannot be bound from the inputs")

    # Tuning options / apply_history_best: each operator's best record (autotvm.graph_tuning).
    # A batch-norm-folded weight "W_bn" is packed like the task's convolution weight "W".
    aliases = {
        conv.args[1].name: prepacked[folded]
        for conv, folded in plan.folded_conv_weights.items()
        if folded in prepacked
    }
    config = None
    if tuning:  # the kernel's own arguments and name: the guard's builds go through the cache
        config = tuning(unique, {**aliases, **prepacked}, kernel_args + unique, name)
    # _schedule(unique, target, config) through the on-disk cache, keyed before scheduling: a
    # partition another process compiled is loaded.
    module = cache.build_auto(kernel_args + unique, target=target, name=name, config=config)
    return CompiledGraph(
        module=module,
        num_inputs=len(placeholders),
        kernel_sources=sources,
        size_bindings=bindings,
        output_shapes=[_shape_spec(m.shape) for m in out_meta],
        output_dtypes=[m.dtype for m in out_meta],
        output_of=output_of,
        output_tuple=is_tuple,
        output_views=tuple(output_views) if any(output_views) else (),
        output_replays=replays,
    )


def _float_dtypes(gm: torch.fx.GraphModule) -> set[torch.dtype]:
    """The floating-point dtypes of the tensors ``gm`` reads and computes."""
    dtypes = set()
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        for v in val if isinstance(val, (tuple, list)) else (val,):
            if isinstance(v, torch.Tensor) and v.dtype.is_floating_point:
                dtypes.add(v.dtype)
    return dtypes


def _layout_lanes(options: dict, target: str) -> int:
    """The vector lanes the NCHWc layout's blocks are made of (0: NCHW throughout); option
    ``layout``."""
    layout = options.get("layout", "NCHWc")
    if layout not in ("NCHWc", "NCHW"):
        raise TVMValueError(f"option layout must be 'NCHWc' or 'NCHW', found {layout!r}")
    if layout == "NCHW" or not options.get("prepack_weights", True) or target != "llvm":
        return 0
    return host_block()


def _weights_by(
    gm: torch.fx.GraphModule, plan: FoldPlan, choice: Callable[[torch.fx.Node], int]
) -> dict[str, int]:
    """Convolution weights -> ``choice`` of their convolution node (0: none): graph inputs read
    only as the weight of convolutions that all make the same choice, and the
    batch-norm-folded weights of such convolutions (one convolution each)."""
    chosen = {n: choice(n) for n in gm.graph.nodes if n.target is _CONVOLUTION}
    out: dict[str, int] = {}
    for node, value in chosen.items():
        weight = node.args[1]
        folded = plan.folded_conv_weights.get(node)
        if not value:
            continue
        if folded is not None:
            # one folded weight may serve several convolutions (the same weight and batch
            # norm at two strides): all of them must want the same transform
            if all(
                chosen.get(c) == value for c, f in plan.folded_conv_weights.items() if f == folded
            ):
                out[folded] = value
        elif weight.op == "placeholder" and all(
            chosen.get(u) == value and u.args[1] is weight and u.args[0] is not weight
            for u in weight.users
        ):
            out[weight.name] = value
    return out


def _blocked_weights(gm: torch.fx.GraphModule, plan: FoldPlan, lanes: int) -> dict[str, int]:
    """The weights of the convolutions computed blocked (see :mod:`.layout`), to pass packed
    in panels of their output block (name -> block)."""
    return _weights_by(gm, plan, lambda n: conv_block(n, lanes)) if lanes else {}


def _winograd_weights(gm: torch.fx.GraphModule, plan: FoldPlan, lanes: int) -> dict[str, int]:
    """The convolution weights to pass Winograd-transformed (:func:`.layout.winograd_tile`):
    name -> tile size."""
    return _weights_by(gm, plan, lambda n: winograd_tile(n, lanes)) if lanes else {}


def _conv_panel_widths(
    gm: torch.fx.GraphModule, plan: FoldPlan, outputs: list[Any], target: str, options: dict
) -> dict[str, int]:
    """Convolution weights (graph inputs or derived) to pass packed: name -> panel width.

    The width is the one ``auto_schedule`` picks when it packs the weight inside the kernel
    (a trial schedule of the whole graph tells); the weight is then declared packed instead.
    """
    if not options.get("prepack_weights", True):
        return {}
    packable = _packable_weights(gm) | plan.conv_weights
    if not packable or not all(isinstance(o, te.Tensor) for o in outputs):
        return {}
    # Placeholders that are symbolic sizes (a dynamic batch read by a view) or 0-d (a training
    # step counter) have no channels.
    channels = {
        n.name: n.meta["val"].shape[0]
        for n in gm.graph.nodes
        if n.op == "placeholder"
        and isinstance(n.meta.get("val"), torch.Tensor)
        and n.meta["val"].dim()
    }
    channels.update({name: shape[0] for name, (_, shape) in plan.derived.items()})
    widths: dict[str, int] = {}
    trial = _schedule(_unique_outputs(outputs)[0], target)
    for stage in trial.stages:
        weight = stage.op.name.removesuffix(".packed")
        if stage.op.name.endswith(".packed") and weight in packable:
            shape = stage.op.output(0).shape
            width = const_int(shape[-1]) if len(shape) == 5 else None
            if width is not None and channels[weight] % width == 0:
                widths[weight] = width
    return widths


__all__ = [
    "FLOAT_DTYPES",
    "CompiledGraph",
    "UnsupportedGraphError",
    "UnsupportedOperatorError",
    "compile_graph",
    "import_graph",
    "pinned_size",
]
