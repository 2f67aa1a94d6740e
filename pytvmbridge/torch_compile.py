"""PyTorchTVM's ``compile(model, option)`` and ``load(export_dir)`` (API.md section 7).

``compile`` exports the model with ``torch.export`` (the sizes named in ``input_infos`` become
symbolic dimensions: one compiled kernel for every size, no shape buckets), lowers its ATen graph
with parameters lifted as inputs to pytvmbridge, and returns a :class:`CompiledModel`: a
``torch.nn.Module`` whose forward is the ``pytvmbridge::run_module`` custom op
(:mod:`pytvmbridge.torch_library`), so it composes with ``torch.compile``, ``torch.export`` and
``torch.save``. With ``export_dir`` it also writes the compiled module there; ``load(export_dir)``
brings it back in another process without compiling.

The graph goes through the graph compiler of ``pytvmbridge.graph`` (``compile_graph``) where it
is installed; otherwise through a small converter of this module that handles multi-layer
perceptrons (``mm``/``addmm``/``permute``/``t``, ``relu``, ``sigmoid``, ``tanh``, ``add``,
``sub``, ``mul``) and says which operator it lacks for anything else.

Export directory layout: ``module.ptb`` (the compiled code, ``runtime.load_module`` reads it),
``constants.pt`` (the lifted parameters and buffers, ``torch.save``) and ``plan.json`` (which
kernel argument each input and constant is, which outputs are returned, the options).

Example:
    >>> import tempfile, torch, pytvmbridge.torch_compile as ptc
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    >>> model = model.eval()
    >>> d = tempfile.mkdtemp()
    >>> compiled = ptc.compile(model, {"input_infos": [("x", ("batch", 4))], "export_dir": d})
    >>> x = torch.randn(5, 4)
    >>> torch.allclose(compiled(x), model(x), atol=1e-5)
    True
    >>> torch.allclose(ptc.load(d)(torch.ones(3, 4)), model(torch.ones(3, 4)), atol=1e-5)
    True
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from collections.abc import Sequence
from typing import Any

import torch

from . import te
from .build import Module
from .error import TVMNotImplementedError, TVMTypeError, TVMValueError
from .runtime import module_from_bytes
from .torch_library import TorchModule

__all__ = ["CompiledModel", "UnsupportedOperatorError", "compile", "load"]

OPTION_KEYS = (
    "input_infos",
    "default_dtype",
    "export_dir",
    "num_outputs",
    "tuning_n_trials",
    "tuning_log_file",
)
#: The example size given to a symbolic dimension while exporting (any size >= 2 would do).
EXAMPLE_SIZE = 8


class UnsupportedOperatorError(TVMNotImplementedError):
    """The model uses an operator that the graph compiler in use cannot convert."""


class CompiledModel(torch.nn.Module):
    """A compiled model: ``forward(*inputs)`` runs its kernel through ``pytvmbridge::run_module``.

    ``plan["args"]`` says, for each kernel input, whether it is the model input ``k``
    (``["input", k]``) or the constant ``k`` (``["const", k]``); ``plan["outputs"]`` which kernel
    outputs the model returns, in order.
    """

    def __init__(
        self,
        module: Module,
        constants: Sequence[torch.Tensor],
        plan: dict[str, Any],
        *,
        code: bytes | None = None,
        own_constants: bool = False,
    ):
        # `code`: the module's saved bytes if at hand; `own_constants`: the constants are fresh
        # tensors of nobody else (just loaded), so they are kept rather than copied.
        super().__init__()
        self.kernel = TorchModule(module, code)
        for k, c in enumerate(constants):
            c = c.detach().contiguous()
            self.register_buffer(f"const{k}", c if own_constants else c.clone())
        self.num_constants = len(constants)
        self.plan = plan

    def forward(self, *inputs: torch.Tensor) -> Any:
        expected = self.plan["num_inputs"]
        if len(inputs) != expected:
            raise TVMTypeError(f"compiled model takes {expected} input(s), got {len(inputs)}")
        args = [
            inputs[k] if kind == "input" else getattr(self, f"const{k}")
            for kind, k in self.plan["args"]
        ]
        k = self.kernel
        outs = torch.ops.pytvmbridge.run_module(k.code, k.key, k.spec, args)
        results = tuple(outs[i] for i in self.plan["outputs"])
        return results[0] if len(results) == 1 else results

    def __prepare_scriptable__(self) -> torch.nn.Module:
        """What ``torch.jit.script(compiled)`` compiles (TorchScript cannot take ``*inputs``):
        ``forward(x) -> Tensor`` for a model of one input and one output, else
        ``forward(inputs: List[Tensor]) -> List[Tensor]``. Both call the same custom op, so the
        scripted module runs the same code, and ``torch.jit.save``/``load`` carry its bytes
        (a process that loads it must ``import pytvmbridge`` first, which registers the op).
        ``torch.jit.trace(compiled, example)`` works too, keeping the original signature.
        """
        single = self.plan["num_inputs"] == 1 and len(self.plan["outputs"]) == 1
        return (_ScriptedSingle if single else _ScriptedList)(self)


class _Scripted(torch.nn.Module):
    """A CompiledModel in TorchScript's terms: the plan as lists of ints, constants as a list."""

    # Evaluated types (this module's annotations are strings, which TorchScript cannot read for
    # attributes); an empty list's element type could not be inferred otherwise.
    __annotations__ = {
        "key": str,
        "spec": str,
        "constants": list[torch.Tensor],
        "arg_is_input": list[bool],
        "arg_index": list[int],
        "outputs": list[int],
        "num_inputs": int,
    }

    def __init__(self, compiled: CompiledModel) -> None:
        super().__init__()
        self.register_buffer("code", compiled.kernel.code)
        self.key, self.spec = compiled.kernel.key, compiled.kernel.spec
        self.constants = [getattr(compiled, f"const{k}") for k in range(compiled.num_constants)]
        self.arg_is_input = [kind == "input" for kind, _ in compiled.plan["args"]]
        self.arg_index = [int(k) for _, k in compiled.plan["args"]]
        self.outputs = [int(k) for k in compiled.plan["outputs"]]
        self.num_inputs = int(compiled.plan["num_inputs"])

    def run(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        if len(inputs) != self.num_inputs:
            raise TVMTypeError(
                "compiled model takes " + str(self.num_inputs) + " input(s), got "
                + str(len(inputs))
            )  # fmt: skip
        args: list[torch.Tensor] = []
        for i in range(len(self.arg_index)):  # (TorchScript has no zip(..., strict=))
            k = self.arg_index[i]
            args.append(inputs[k] if self.arg_is_input[i] else self.constants[k])
        outs = torch.ops.pytvmbridge.run_module(self.code, self.key, self.spec, args)
        return [outs[k] for k in self.outputs]


class _ScriptedSingle(_Scripted):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.run([x])[0]


class _ScriptedList(_Scripted):
    def forward(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        return self.run(inputs)


def _parse_options(option: dict[str, Any] | None) -> dict[str, Any]:
    option = dict(option or {})
    unknown = sorted(set(option) - set(OPTION_KEYS))
    if unknown:
        raise TVMValueError(
            f"compile: unknown option(s) {unknown}; expected some of {list(OPTION_KEYS)}"
        )
    infos = option.get("input_infos")
    if not isinstance(infos, (list, tuple)) or not infos:
        raise TVMValueError(
            "compile: option 'input_infos' must list the inputs as (name, shape) pairs, e.g. "
            f"[('x', ('batch', 3, 224, 224))]; got {infos!r}"
        )
    parsed = []
    for k, info in enumerate(infos):
        if (
            not isinstance(info, (list, tuple))
            or len(info) not in (2, 3)
            or not isinstance(info[0], str)
            or not isinstance(info[1], (list, tuple))
            or not all(isinstance(d, (int, str)) and not isinstance(d, bool) for d in info[1])
        ):
            raise TVMValueError(
                f"compile: input_infos[{k}] must be (name, shape) or (name, shape, dtype) with "
                f"ints or size names in the shape, got {info!r}"
            )
        dtype = info[2] if len(info) == 3 else option.get("default_dtype", "float32")
        parsed.append((info[0], tuple(info[1]), str(dtype)))
    option["input_infos"] = parsed
    return option


def _export(model: Any, infos: list[tuple[str, tuple[Any, ...], str]]) -> Any:
    if isinstance(model, torch.jit.ScriptModule):
        raise TVMTypeError(
            "compile: TorchScript modules (torch.jit.trace/script) cannot be exported any more; "
            "pass the torch.nn.Module itself (it is exported with torch.export)"
        )
    if not isinstance(model, torch.nn.Module):
        raise TVMTypeError(f"compile: expected a torch.nn.Module, got {type(model).__name__}")
    dims: dict[str, Any] = {}
    examples, dynamic = [], []
    for _name, shape, dtype in infos:
        sizes, spec = [], {}
        for d, size in enumerate(shape):
            if isinstance(size, str):
                dims.setdefault(size, torch.export.Dim(size, min=2))
                spec[d] = dims[size]
                sizes.append(EXAMPLE_SIZE)
            else:
                sizes.append(size)
        examples.append(torch.randn(sizes).to(getattr(torch, dtype)))
        dynamic.append(spec or None)
    was_training = model.training
    model.eval()
    try:
        ep = torch.export.export(model, tuple(examples), dynamic_shapes=tuple(dynamic))
    finally:
        model.train(was_training)
    return ep.run_decompositions(), examples


def _lifted_inputs(ep: Any, examples: list[torch.Tensor]) -> tuple[list[Any], list[torch.Tensor]]:
    """For each placeholder of the exported graph: ("input", k) or ("const", k), and the
    constants' values."""
    from torch.export.graph_signature import InputKind

    sources, constants = [], []
    user = 0
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            sources.append(["input", user])
            user += 1
            continue
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            value = ep.state_dict.get(spec.target)
            if value is None:
                value = ep.constants[spec.target]
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            value = ep.constants[spec.target]
        else:
            raise UnsupportedOperatorError(
                f"compile: exported input of kind {spec.kind} is unsupported"
            )
        sources.append(["const", len(constants)])
        constants.append(value)
    del examples
    return sources, constants


# ---- the converter used when pytvmbridge.graph is not installed ----


def _convert_graph(gm: torch.fx.GraphModule, name: str) -> tuple[Module, list[int], list[int]]:
    """One kernel for an ATen graph of MLP operators: (module, kernel inputs as placeholder
    indices, kernel outputs in graph-output order)."""
    from .autoschedule import auto_schedule
    from .build import build
    from .schedule import create_schedule

    size_vars: dict[str, Any] = {}

    def dim(d: Any) -> Any:
        if isinstance(d, torch.SymInt):
            key = str(d.node.expr)
            if key not in size_vars:
                size_vars[key] = te.var(key)
            return size_vars[key]
        return int(d)

    env: dict[Any, Any] = {}
    placeholders = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            val = node.meta["val"]
            dtype = str(val.dtype).removeprefix("torch.")
            env[node] = te.placeholder(
                tuple(dim(d) for d in val.shape), dtype, name=f"in{len(placeholders)}"
            )
            placeholders.append(node)
        elif node.op == "call_function":
            env[node] = _convert_node(node, [env.get(a, a) for a in node.args])
        elif node.op == "output":
            outputs = [env[o] for o in node.args[0]]
    unique: list[Any] = []
    output_of = []
    for out in outputs:
        if isinstance(out.op, te.PlaceholderOp) or not isinstance(out, te.Tensor):
            out = te.compute(out.shape, lambda *i, o=out: o[i], name="copy")
        match = next((k for k, u in enumerate(unique) if u is out), None)
        if match is None:
            unique.append(out)
            match = len(unique) - 1
        output_of.append(match)
    s = create_schedule([t.op for t in unique])
    auto_schedule(s)
    inputs = [env[p] for p in placeholders]
    return build(s, inputs + unique, name=name), list(range(len(placeholders))), output_of


def _convert_node(node: torch.fx.Node, args: list[Any]) -> Any:
    aten = torch.ops.aten
    target = node.target
    if target in (aten.permute.default,):
        x, perm = args
        inverse = [perm.index(k) for k in range(len(perm))]
        return te.compute(
            tuple(x.shape[p] for p in perm),
            lambda *i: x[tuple(i[inverse[k]] for k in range(len(perm)))],
            name="permute",
        )
    if target == aten.t.default:
        (x,) = args
        return te.compute((x.shape[1], x.shape[0]), lambda i, j: x[j, i], name="t")
    if target in (aten.mm.default, aten.addmm.default):
        bias, a, b = (args[0], args[1], args[2]) if target == aten.addmm.default else (None, *args)
        k = te.reduce_axis((0, a.shape[1]), name="k")
        mm = te.compute(
            (a.shape[0], b.shape[1]), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="mm"
        )
        if bias is None:
            return mm
        if len(bias.shape) == 1:
            return te.compute(mm.shape, lambda i, j: mm[i, j] + bias[j], name="addmm")
        return te.compute(mm.shape, lambda i, j: mm[i, j] + bias[i, j], name="addmm")
    unary = {
        aten.relu.default: lambda v: te.if_then_else(v > 0, v, te.const(0.0, v.dtype)),
        aten.sigmoid.default: lambda v: te.sigmoid(v),
        aten.tanh.default: lambda v: te.tanh(v),
    }
    if target in unary:
        (x,) = args
        f = unary[target]
        return te.compute(x.shape, lambda *i: f(x[i]), name=target.__name__.split(".")[0])
    binary = {
        aten.add.Tensor: lambda a, b: a + b,
        aten.sub.Tensor: lambda a, b: a - b,
        aten.mul.Tensor: lambda a, b: a * b,
    }
    if target in binary and len(args) == 2:
        a, b = args
        f = binary[target]
        if isinstance(a, te.Tensor) and isinstance(b, te.Tensor) and len(a.shape) == len(b.shape):
            return te.compute(
                a.shape,
                lambda *i: f(
                    a[i], b[tuple(0 if _is_one(b.shape[k]) else i[k] for k in range(len(i)))]
                ),
                name="binary",
            )
        if isinstance(a, te.Tensor) and isinstance(b, (int, float)):
            return te.compute(
                a.shape, lambda *i: f(a[i], te.const(float(b), a.dtype)), name="binary"
            )
    raise UnsupportedOperatorError(
        f"compile: operator {target} is not supported without the graph compiler "
        "(pytvmbridge.graph); this converter handles mm, addmm, permute, t, relu, sigmoid, "
        "tanh, add, sub and mul"
    )


def _is_one(d: Any) -> bool:
    return isinstance(getattr(d, "value", d), int) and getattr(d, "value", d) == 1


def _compile_graph(
    ep: Any, examples: list[torch.Tensor], constants: list[torch.Tensor], option: dict[str, Any]
) -> tuple[Module, list[int | None], list[int], dict[int, Any]]:
    """(module, kernel inputs as graph-input indices (None: a derived weight), kernel outputs in
    graph-output order, kernel position -> (weight transform, kept graph-input indices))."""
    try:
        from .graph import compile_graph  # the graph compiler (issue 12), when installed
    except ImportError:
        compile_graph = None
    gm = ep.graph_module
    if compile_graph is None:
        return (*_convert_graph(gm, "compiled_model"), {})
    placeholder_values = []
    user = iter(examples)
    consts = iter(constants)
    from torch.export.graph_signature import InputKind

    for spec in ep.graph_signature.input_specs:
        placeholder_values.append(next(user) if spec.kind == InputKind.USER_INPUT else next(consts))
    # Inputs the graph never reads (BatchNorm's num_batches_tracked in eval) are dropped first.
    gm = copy.deepcopy(gm)
    keep = []
    for i, node in enumerate([n for n in gm.graph.nodes if n.op == "placeholder"]):
        if node.users:
            keep.append(i)
        else:
            gm.graph.erase_node(node)
    gm.recompile()
    tuning = {k: option[k] for k in ("tuning_n_trials", "tuning_log_file") if option.get(k)}
    cg = compile_graph(gm, [placeholder_values[i] for i in keep], name="compiled_model", **tuning)
    # Kernel arguments: graph inputs by index, and weight transforms (packed or batch-norm-folded
    # weights, pytvmbridge.graph.fold) of graph inputs, computed below once from the constants.
    kernel_inputs, derived = [], {}
    for k, source in enumerate(cg.kernel_sources):
        if isinstance(source, int):
            kernel_inputs.append(keep[source])
        else:
            kernel_inputs.append(None)
            derived[k] = (source, keep)
    return cg.module, kernel_inputs, list(cg.output_of), derived


def compile(module_or_traced: Any, option: dict[str, Any] | None = None) -> CompiledModel:
    """Compile a model with PyTorchTVM's options; the result is a ``torch.nn.Module``.

    The model is compiled for inference, as in eval mode (batch norm with its running statistics,
    dropout off; a model in training mode is compiled so, with a warning), and its outputs have
    no gradient: train with ``torch.compile(model, backend="pytvmbridge")``.

    ``option``: ``input_infos`` (a list of ``(name, shape)`` or ``(name, shape, dtype)``; a shape
    entry may be a size name such as ``"batch"``, compiled once for every size),
    ``default_dtype`` (``"float32"``), ``export_dir`` (also write the compiled model there for
    :func:`load`), ``num_outputs`` (checked against the model), ``tuning_n_trials`` (tune the
    model's convolutions and matrix products for that many trials in total before compiling,
    logged to ``tuning_log_file``) and ``tuning_log_file`` (each operator's best record there is its
    schedule; see :mod:`pytvmbridge.autotvm.graph_tuning`). Both are also recorded in the
    export's plan.

    Example:
        >>> import torch, pytvmbridge.torch_compile as ptc
        >>> model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh()).eval()
        >>> compiled = ptc.compile(model, {"input_infos": [("x", (4, 3))]})
        >>> x = torch.randn(4, 3)
        >>> torch.allclose(compiled(x), model(x), atol=1e-5)
        True
    """
    option = _parse_options(option)
    if isinstance(module_or_traced, torch.nn.Module) and module_or_traced.training:
        warnings.warn(
            "pytvmbridge.torch.compile compiles a model for inference, as in eval mode (batch "
            "norm uses its running statistics, dropout is off), but this model is in training "
            "mode; call model.eval() first, or train with torch.compile(model, "
            'backend="pytvmbridge")',
            UserWarning,
            stacklevel=2,
        )
    ep, examples = _export(module_or_traced, option["input_infos"])
    sources, constants = _lifted_inputs(ep, examples)
    module, kernel_inputs, output_of, derived = _compile_graph(ep, examples, constants, option)
    sources = list(sources)
    for position, (spec, keep) in derived.items():
        # Weights the kernel takes transformed (packed, batch norm folded): computed once here
        # from the constants they depend on.
        from .graph.fold import materialize

        leaves = {keep[i] for i in spec.leaves()}
        users = [sources[i] for i in leaves if sources[i][0] != "const"]
        if users:
            raise UnsupportedOperatorError(
                f"compile: input {users[0][1]} is used as a weight; pass weights as parameters"
            )
        values = {i: constants[sources[keep[i]][1]] for i in spec.leaves()}
        constants.append(materialize(spec, values))
        sources.append(("const", len(constants) - 1))
        kernel_inputs[position] = len(sources) - 1
    num_outputs = option.get("num_outputs")
    if num_outputs is not None and num_outputs != len(output_of):
        raise TVMValueError(
            f"compile: option num_outputs is {num_outputs}, but the model returns {len(output_of)}"
        )
    plan = {
        "num_inputs": len(option["input_infos"]),
        "args": [sources[i] for i in kernel_inputs],
        "outputs": output_of,
        "input_infos": [list(info) for info in option["input_infos"]],
    }
    used = sorted({k for kind, k in plan["args"] if kind == "const"})
    renumber = {old: new for new, old in enumerate(used)}
    plan["args"] = [[kind, renumber[k] if kind == "const" else k] for kind, k in plan["args"]]
    compiled = CompiledModel(module, [constants[k] for k in used], plan)
    if option.get("export_dir"):
        _save(compiled, module, str(option["export_dir"]), option)
    return compiled


def _save(compiled: CompiledModel, module: Module, export_dir: str, option: dict[str, Any]) -> None:
    os.makedirs(export_dir, exist_ok=True)
    module.export_library(os.path.join(export_dir, "module.ptb"))
    constants = {f"const{k}": getattr(compiled, f"const{k}") for k in range(compiled.num_constants)}
    torch.save(constants, os.path.join(export_dir, "constants.pt"))
    record = {
        "plan": compiled.plan,
        "options": {k: v for k, v in option.items() if k != "input_infos"},
    }
    with open(os.path.join(export_dir, "plan.json"), "w") as f:
        json.dump(record, f, indent=1, default=str)


def load(export_dir: str | os.PathLike[str]) -> CompiledModel:
    """The model that :func:`compile` wrote to ``export_dir``, loaded without compiling.

    Example: see the module's docstring.
    """
    export_dir = os.fspath(export_dir)
    with open(os.path.join(export_dir, "plan.json")) as f:
        record = json.load(f)
    with open(os.path.join(export_dir, "module.ptb"), "rb") as f:
        code = f.read()
    module = module_from_bytes(code, os.path.join(export_dir, "module.ptb"))
    # Memory-mapped: the weights are read as the kernel first touches them, not copied now.
    constants = torch.load(
        os.path.join(export_dir, "constants.pt"), weights_only=True, mmap=True
    )  # fmt: skip
    values = [constants[f"const{k}"] for k in range(len(constants))]
    return CompiledModel(module, values, record["plan"], code=code, own_constants=True)
