"""FX nodes recorded as plain data and run again in PyTorch: views of outputs, fallback nodes.

A compiled kernel writes fresh tensors, where eager PyTorch returns *views*: ``return y, y.t()``
gives two tensors sharing one storage. The graph compiler therefore leaves such an output out
of the kernel and records the chain of view operators that makes it from its base (another
output, or an input) as :class:`Step` s, run again in PyTorch after the kernel on the real
tensors: the result is the same view eager returns (same storage, strides, ``_base``).
``pytvmbridge.torch.compile`` records the nodes it leaves to PyTorch the same way (its plan is
JSON: :func:`encode` / :func:`decode`).

A step's arguments are plain values (numbers, lists, dtypes...) and :class:`Ref` s to values
known when it runs (an input, an output, an earlier step's result). Operators are named as
strings (``"aten::view.default"``, ``"operator.mul"``), so the record pickles and serializes.

Example:
    >>> import torch
    >>> steps = [Step("aten::t.default", (Ref("out", 0),))]
    >>> y = torch.zeros(2, 3)
    >>> v = run_steps(steps, {("out", 0): y})
    >>> v.shape, v._base is y
    (torch.Size([3, 2]), True)
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ..error import TVMValueError

aten = torch.ops.aten

#: Operators whose result is a view of their first argument (or, for ``reshape``, whatever
#: eager gives: a view when the strides allow it). Replayed as written, they alias as in eager.
VIEW_OPS = frozenset(
    {
        aten.view.default,
        aten._unsafe_view.default,
        aten.reshape.default,
        aten.alias.default,
        aten.t.default,
        aten.permute.default,
        aten.transpose.int,
        aten.select.int,
        aten.slice.Tensor,
        aten.expand.default,
        aten.unsqueeze.default,
        aten.squeeze.default,
        aten.squeeze.dim,
        aten.squeeze.dims,
    }
)

#: Size arithmetic (a symbolic batch read with ``sym_size`` and combined): cheap, replayable.
SIZE_OPS = frozenset(
    {
        aten.sym_size.int,
        operator.add,
        operator.sub,
        operator.mul,
        operator.floordiv,
        operator.mod,
        operator.neg,
    }
)

_OPERATORS = {f"operator.{f.__name__}": f for f in SIZE_OPS if f.__module__ == "_operator"}
_OPERATORS["operator.getitem"] = operator.getitem


@dataclass(frozen=True)
class Ref:
    """A value known when a step runs: ``("in", i)`` an input, ``("out", k)`` an output,
    ``("step", j)`` the result of step ``j`` (the keys of :func:`run_steps`' environment)."""

    kind: str
    index: int

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, self.index)


@dataclass(frozen=True)
class Step:
    """One operator call: ``target`` (:func:`op_name`) applied to ``args`` and ``kwargs``."""

    target: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __hash__(self) -> int:  # kwargs is a dict: hash the rest (steps are never mutated)
        return hash((self.target, repr(self.args)))


def op_name(target: Any) -> str:
    """A stable name for an FX call target: ``"aten::view.default"`` or ``"operator.mul"``.

    Example:
        >>> op_name(torch.ops.aten.view.default), op_name(operator.mul)
        ('aten::view.default', 'operator.mul')
    """
    if isinstance(target, torch._ops.OpOverload):
        return f"{target._schema.name}.{target._overloadname}"
    name = f"operator.{getattr(target, '__name__', '')}"
    if _OPERATORS.get(name) is target:
        return name
    raise TVMValueError(f"operator {target} cannot be recorded (not an ATen operator)")


@functools.cache
def resolve(name: str) -> Any:
    """The callable that :func:`op_name` named.

    Example:
        >>> resolve("aten::relu.default") is torch.ops.aten.relu.default
        True
    """
    if name in _OPERATORS:
        return _OPERATORS[name]
    namespace, _, rest = name.partition("::")
    packet, _, overload = rest.partition(".")
    try:
        return getattr(getattr(getattr(torch.ops, namespace), packet), overload or "default")
    except (AttributeError, RuntimeError) as err:
        raise TVMValueError(f"operator {name!r} is not known to this PyTorch ({err})") from None


def substitute(value: Any, env: Mapping[tuple[str, int], Any]) -> Any:
    """``value`` (an argument, a list, a dict of them) with each :class:`Ref` replaced by its
    value in ``env``.

    Example:
        >>> substitute([Ref("in", 0), 2], {("in", 0): "x"})
        ['x', 2]
    """
    if isinstance(value, Ref):
        return env[value.key]
    if isinstance(value, (list, tuple)):
        return type(value)(substitute(v, env) for v in value)
    if isinstance(value, dict):
        return {k: substitute(v, env) for k, v in value.items()}
    return value


# View operators taking the result's shape, which a base of other strides may not allow.
_SHAPE_VIEWS = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default)


def apply_op(fn: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """``fn(*args, **kwargs)``, except that a recorded ``view`` of a base whose strides differ
    from the traced ones (an input passed transposed, a result PyTorch laid out otherwise) gives
    the values reshaped, as the ``reshape`` that eager's trace recorded as a view would.

    Example:
        >>> x = torch.arange(6.0).reshape(2, 3).t()  # not viewable as (6,)
        >>> apply_op(torch.ops.aten.view.default, (x, [6]), {}).tolist()
        [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    """
    try:
        return fn(*args, **kwargs)
    except RuntimeError:
        if fn not in _SHAPE_VIEWS:
            raise
        return args[0].reshape(args[1])


def run_steps(steps: Sequence[Step], env: Mapping[tuple[str, int], Any], first: int = 0) -> Any:
    """Run ``steps`` in order (step ``j`` is ``("step", first + j)`` for later steps) and
    return the last result; ``env`` gives the inputs and outputs the steps read.

    Example: see the module's docstring.
    """
    env = dict(env)
    result = None
    for j, step in enumerate(steps):
        args = substitute(step.args, env)
        kwargs = substitute(dict(step.kwargs), env)
        result = apply_op(resolve(step.target), args, kwargs)
        env[("step", first + j)] = result
    return result


def _view_chain(node: torch.fx.Node) -> tuple[list[torch.fx.Node], Any]:
    """The view operators from ``node`` back to the first value that is no view (the base)."""
    chain = []
    while isinstance(node, torch.fx.Node) and node.op == "call_function":
        if node.target not in VIEW_OPS:
            break
        chain.append(node)
        node = node.args[0]
    return chain[::-1], node


def alias_replays(
    out_nodes: Sequence[Any], placeholders: Sequence[torch.fx.Node]
) -> dict[int, tuple[Step, ...]]:
    """Graph outputs that eager returns as views of another output or of an input: output
    position -> the steps that make it from that base (the last step's result).

    The base is named ``Ref("out", k)`` (graph output ``k``, which the kernel computes) or
    ``Ref("in", i)``; sizes the views read are inputs or size arithmetic over them, recorded
    as steps too. An output whose chain reads anything else is left to the kernel.

    Example:
        >>> from torch.fx.experimental.proxy_tensor import make_fx
        >>> def f(x):
        ...     y = torch.relu(x)
        ...     return y, y.t(), torch.relu(x)
        >>> gm = make_fx(f)(torch.ones(2, 3))
        >>> outs = list(next(n for n in gm.graph.nodes if n.op == "output").args[0])
        >>> places = [n for n in gm.graph.nodes if n.op == "placeholder"]
        >>> alias_replays(outs, places)
        {1: (Step(target='aten::t.default', args=(Ref(kind='out', index=0),), kwargs={}),)}
    """
    inputs = {node: i for i, node in enumerate(placeholders)}
    computed: dict[torch.fx.Node, int] = {}
    chains: dict[int, tuple[list[torch.fx.Node], Any]] = {}
    for k, node in enumerate(out_nodes):
        chain, base = _view_chain(node) if isinstance(node, torch.fx.Node) else ([], node)
        if chain:
            chains[k] = (chain, base)
        elif isinstance(node, torch.fx.Node) and node not in inputs:
            computed.setdefault(node, k)
    replays: dict[int, tuple[Step, ...]] = {}
    for k, (chain, base) in chains.items():
        if base in computed:
            start = Ref("out", computed[base])
        elif base in inputs and isinstance(base.meta.get("val"), torch.Tensor):
            start = Ref("in", inputs[base])
        else:
            continue
        steps = _record(chain, start, inputs)
        if steps is not None:
            replays[k] = tuple(steps)
    return replays


def _record(
    chain: list[torch.fx.Node], start: Ref, inputs: Mapping[torch.fx.Node, int]
) -> list[Step] | None:
    """``chain`` (views applied to ``start``) as steps, with the size arithmetic its arguments
    read; None when an argument is something else (a tensor the kernel computes)."""
    steps: list[Step] = []
    done: dict[torch.fx.Node, Ref] = {chain[0].args[0]: start}

    def arg(value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return type(value)(arg(v) for v in value)
        if not isinstance(value, torch.fx.Node):
            return value
        if value in done:
            return done[value]
        if value in inputs and not isinstance(value.meta.get("val"), torch.Tensor):
            return Ref("in", inputs[value])
        if value.op != "call_function" or value.target not in SIZE_OPS:
            raise LookupError(value.name)
        return add(value)

    def add(node: torch.fx.Node) -> Ref:
        args = arg(node.args)
        kwargs = {k: arg(v) for k, v in node.kwargs.items()}
        steps.append(Step(op_name(node.target), tuple(args), kwargs))
        done[node] = Ref("step", len(steps) - 1)
        return done[node]

    try:
        for node in chain:
            add(node)
    except LookupError:
        return None
    return steps


# --- JSON ----------------------------------------------------------------------------------

_DTYPE_NAMES = {
    getattr(torch, n): n
    for n in (
        "float16 bfloat16 float32 float64 int8 int16 int32 int64 uint8 bool complex64 complex128"
    ).split()
}


# What a Ref may name: an input, an output, a constant, an earlier step.
_REF_KINDS = ("in", "out", "const", "step")


def encode(value: Any) -> Any:
    """``value`` (a step argument) as JSON data: refs, dtypes, devices, layouts and memory
    formats become one-key objects, tuples lists.

    Example:
        >>> encode([Ref("in", 0), torch.float16, 2.5])
        [{'ref': ['in', 0]}, {'dtype': 'float16'}, 2.5]
    """
    if isinstance(value, Ref):
        return {"ref": [value.kind, value.index]}
    if isinstance(value, torch.dtype):
        return {"dtype": _DTYPE_NAMES[value]}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, torch.layout):
        return {"layout": str(value).removeprefix("torch.")}
    if isinstance(value, torch.memory_format):
        return {"memory_format": str(value).removeprefix("torch.")}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TVMValueError(f"argument {value!r} ({type(value).__name__}) cannot be recorded")


def decode(value: Any) -> Any:
    """The inverse of :func:`encode` (lists stay lists: ATen takes them for int[] arguments).

    Example:
        >>> decode({"dtype": "float16"}), decode({"ref": ["out", 1]})
        (torch.float16, Ref(kind='out', index=1))
    """
    if isinstance(value, dict):
        ((key, data),) = value.items()
        if key == "ref":
            if data[0] not in _REF_KINDS or not isinstance(data[1], int) or data[1] < 0:
                raise TVMValueError(f"not a reference to a value: {value!r}")
            return Ref(str(data[0]), int(data[1]))
        if key == "dtype":
            if data not in _DTYPE_NAMES.values():
                raise TVMValueError(f"unknown dtype {data!r}")
            return getattr(torch, data)
        if key == "device":
            return torch.device(data)
        # A layout or memory format, by its name (nothing else of torch's namespace).
        kind = torch.layout if key == "layout" else torch.memory_format
        found = getattr(torch, data, None) if isinstance(data, str) else None
        if key not in ("layout", "memory_format") or not isinstance(found, kind):
            raise TVMValueError(f"not a recorded argument: {value!r}")
        return found
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def encode_step(step: Step) -> dict[str, Any]:
    """A step as JSON data (see :func:`encode`)."""
    return {
        "op": step.target,
        "args": encode(list(step.args)),
        "kwargs": {k: encode(v) for k, v in step.kwargs.items()},
    }


def decode_step(data: Mapping[str, Any]) -> Step:
    """The inverse of :func:`encode_step`; the operator must exist in this PyTorch."""
    resolve(data["op"])
    return Step(
        data["op"],
        tuple(decode(a) for a in data["args"]),
        {k: decode(v) for k, v in data.get("kwargs", {}).items()},
    )


__all__ = [
    "SIZE_OPS",
    "VIEW_OPS",
    "Ref",
    "Step",
    "alias_replays",
    "decode",
    "decode_step",
    "encode",
    "encode_step",
    "op_name",
    "resolve",
    "run_steps",
    "substitute",
]
