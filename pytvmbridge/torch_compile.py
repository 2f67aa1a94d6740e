"""PyTorchTVM's ``compile(model, option)`` and ``load(export_dir)`` (API.md section 7).

``compile`` exports the model with ``torch.export`` (the sizes named in ``input_infos`` become
symbolic dimensions: one compiled kernel for every size, no shape buckets), lowers its ATen graph
with parameters lifted as inputs to pytvmbridge, and returns a :class:`CompiledModel`: a
``torch.nn.Module`` whose forward is the ``pytvmbridge::run_module`` custom op
(:mod:`pytvmbridge.torch_library`), so it composes with ``torch.compile``, ``torch.export`` and
``torch.save``. With ``export_dir`` it also writes the compiled module there; ``load(export_dir)``
brings it back in another process without compiling.

The graph goes through the graph compiler of ``pytvmbridge.graph`` (``compile_graph``): one
kernel for the whole graph when every operator is supported. Otherwise the operators it does not
support run in PyTorch, as Inductor and torch_tvm do: the supported ones are grouped into
partitions (:mod:`pytvmbridge.graph.partition`), each compiled to a kernel, and the model runs a
recorded program of kernel calls and PyTorch operators (``strict: True`` raises
:class:`UnsupportedOperatorError` naming the first such operator instead). The model returns
what eager returns: the same nesting of tuples, lists and dicts, and views (``return y, y.t()``)
made by the same view operators (:mod:`pytvmbridge.graph.replay`), sharing storage as in eager.

Inputs may be float32, float64, float16 or bfloat16 (``default_dtype``, or a third entry of an
``input_infos`` pair), or integer and bool tensors (an embedding's indices).

Export directory layout: ``module.ptb`` (the compiled code, ``runtime.load_module`` reads it;
a partitioned model has one file per kernel, listed in the plan), ``constants.pt`` (the lifted
parameters and buffers, ``torch.save``) and ``plan.json`` (which kernel argument each input and
constant is, which outputs are returned, the program of a partitioned model, the options).

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
import importlib
import inspect
import json
import operator
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.utils._pytree as pytree

from . import progress
from .build import Module
from .error import TVMNotImplementedError, TVMTypeError, TVMValueError
from .graph.compiler import UnsupportedOperatorError
from .graph.replay import (
    Ref,
    Step,
    apply_op,
    decode,
    decode_step,
    encode,
    encode_step,
    op_name,
    resolve,
    substitute,
)
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
    "strict",
)
#: The dtypes an input may have (``default_dtype``, or the third entry of an input's info).
DTYPES = (
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
)
#: The example size given to a symbolic dimension while exporting (any size >= 2 would do).
EXAMPLE_SIZE = 8
#: The least size a named (symbolic) dimension is exported for: torch.export specializes 0 and 1.
MIN_NAMED_SIZE = 2


class CompiledModel(torch.nn.Module):
    """A compiled model: ``forward(*inputs)`` runs its kernel through ``pytvmbridge::run_module``.

    ``plan["args"]`` says, for each kernel input, whether it is the model input ``k``
    (``["input", k]``) or the constant ``k`` (``["const", k]``); ``plan["outputs"]`` which kernel
    output each flat model output is (None: ``plan["views"]`` makes it as a view of another
    output or an input); ``plan["out_spec"]`` how the flat outputs nest (``torch.utils._pytree``).

    A model with operators left to PyTorch has several kernels (``kernels``) and runs
    ``plan["steps"]`` instead: kernel calls and PyTorch operators, each reading model inputs,
    constants and earlier results (:class:`~pytvmbridge.graph.replay.Ref`).
    """

    def __init__(
        self,
        module: Module | Sequence[Module],
        constants: Sequence[torch.Tensor],
        plan: dict[str, Any],
        *,
        code: bytes | Sequence[bytes | None] | None = None,
        own_constants: bool = False,
        out_spec: Any = None,
    ):
        # `code`: the module's saved bytes if at hand (one per module); `own_constants`: the
        # constants are fresh tensors of nobody else (just loaded), so they are kept rather than
        # copied; `out_spec`: the outputs' TreeSpec when plan["out_spec"] has none (a container
        # JSON cannot name).
        super().__init__()
        modules = [module] if isinstance(module, Module) else list(module)
        codes = list(code) if isinstance(code, (list, tuple)) else [code] * len(modules)
        if "steps" in plan:
            self.kernels = torch.nn.ModuleList(
                TorchModule(m, c) for m, c in zip(modules, codes, strict=True)
            )
        else:
            self.kernel = TorchModule(modules[0], codes[0])
        for k, c in enumerate(constants):
            c = c.detach().contiguous()
            self.register_buffer(f"const{k}", c if own_constants else c.clone())
        self.num_constants = len(constants)
        self.plan = plan
        if out_spec is None and plan.get("out_spec") is not None:
            out_spec = _load_out_spec(plan)
        self._out_spec = out_spec
        self._prepare()

    def _prepare(self) -> None:
        """The plan's recorded steps with their operators resolved, once (torch.compile and
        torch.export then see ATen operators as constants)."""
        plan = self.plan
        self._views = {
            int(k): [_prepared(decode_step(d)) for d in v] for k, v in plan.get("views", {}).items()
        }
        self._steps = [
            ("kernel", d["kernel"], tuple(decode(a) for a in d["args"]), {})
            if "kernel" in d
            else ("op", *_prepared(decode_step(d)))
            for d in plan.get("steps", [])
        ]
        self._outputs = [decode(o) for o in plan["outputs"]] if "steps" in plan else []

    def __getstate__(self) -> dict[str, Any]:
        # Resolved operators do not pickle (and need not: the plan says them).
        state = dict(self.__dict__)
        for key in ("_views", "_steps", "_outputs", "_inputs_passed"):
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._prepare()

    def forward(self, *inputs: torch.Tensor) -> Any:
        expected = self.plan["num_inputs"]
        if len(inputs) != expected:
            raise TVMTypeError(f"compiled model takes {expected} input(s), got {len(inputs)}")
        if not (
            torch.jit.is_tracing() or torch.compiler.is_compiling() or torch.compiler.is_exporting()
        ):  # traced by torch.export/jit.trace/dynamo: symbolic sizes, checked by their guards
            self._check_inputs(inputs)
        if "steps" in self.plan:
            results = self._run_steps(inputs)
        else:
            args = [
                inputs[k] if kind == "input" else getattr(self, f"const{k}")
                for kind, k in self.plan["args"]
            ]
            k = self.kernel
            outs = torch.ops.pytvmbridge.run_module(k.code, k.key, k.spec, args)
            results = [None if i is None else outs[i] for i in self.plan["outputs"]]
            if self._views:
                env = self._env(inputs)
                env.update((("out", j), r) for j, r in enumerate(results) if r is not None)
                for j, steps in self._views.items():
                    for n, (fn, args_, kwargs) in enumerate(steps):
                        args_, kwargs_ = substitute(args_, env), substitute(kwargs, env)
                        env[("step", n)] = apply_op(fn, args_, kwargs_)
                    results[j] = env[("step", len(steps) - 1)]
        if self._out_spec is not None:
            return pytree.tree_unflatten(results, self._out_spec)
        return results[0] if len(results) == 1 else tuple(results)  # (saved without out_spec)

    def _check_references(self) -> None:
        """Every input, constant, output, step and kernel a loaded plan refers to exists (a
        damaged plan.json raises here, not at the first call)."""
        plan = self.plan

        def count(value: Any, what: str) -> int:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TVMValueError(f"{what} must be an int >= 0, found {value!r}")
            return value

        n_in = count(plan["num_inputs"], "num_inputs")
        n_kernels = len(self.kernels) if "steps" in plan else 1
        n_out = len(plan["outputs"])
        if "steps" not in plan:  # one kernel: each output is one of its outputs, or a view
            for j, i in enumerate(plan["outputs"]):
                if i is not None and count(i, f"outputs[{j}]") >= self.kernel.num_outputs:
                    raise TVMValueError(
                        f"outputs[{j}] is kernel output {i} (there are {self.kernel.num_outputs})"
                    )
            for kind, k in plan.get("args", []):
                if kind not in ("input", "const"):
                    raise TVMValueError(f"a kernel argument is {kind!r}, not 'input' or 'const'")
                count(k, f"kernel argument ({kind!r}, {k!r})")

        def check(value: Any, steps_before: int) -> None:
            if isinstance(value, Ref):
                limit = {"in": n_in, "const": self.num_constants, "step": steps_before}.get(
                    value.kind, n_out
                )
                if not 0 <= value.index < limit:
                    raise TVMValueError(f"{value} refers to nothing (there are {limit})")
            elif isinstance(value, (list, tuple)):
                for v in value:
                    check(v, steps_before)
            elif isinstance(value, dict):
                for v in value.values():
                    check(v, steps_before)

        for kind, k in plan.get("args", []):
            check(Ref("in" if kind == "input" else "const", int(k)), 0)
        for j, (kind, fn, args, kwargs) in enumerate(self._steps):
            if kind == "kernel" and not 0 <= int(fn) < n_kernels:
                raise TVMValueError(f"step {j} calls kernel {fn} (there are {n_kernels})")
            check((args, kwargs), j)
        check(self._outputs, len(self._steps))
        for steps in self._views.values():
            for n, (_fn, args, kwargs) in enumerate(steps):
                check((args, kwargs), n)

    def _check_inputs(self, inputs: Sequence[Any]) -> None:
        """Each input against its ``input_infos`` entry, named as the user named it (the
        kernel's own checks would name its arguments, which include the weights)."""
        infos = self.plan.get("input_infos")
        if not infos:
            return  # saved before the plan kept them
        # Shapes and dtypes that passed before pass again: one dict lookup on the call path.
        try:
            key = tuple([(x.dtype, x.shape, x.is_cpu) for x in inputs])
        except AttributeError:
            key = None
        passed = self.__dict__.setdefault("_inputs_passed", set())
        if key in passed:
            return
        sizes: dict[str, tuple[int, str]] = {}
        for k, (x, (name, shape, dtype)) in enumerate(zip(inputs, infos, strict=True)):
            what = f"compiled model: input {k} ('{name}')"
            if not isinstance(x, torch.Tensor):
                raise TVMTypeError(f"{what} must be a torch.Tensor, found {type(x).__name__}")
            if not x.is_cpu:  # (a meta tensor would reach the kernel's fake implementation)
                raise TVMValueError(
                    f"{what} is on device '{x.device}'; the compiled model runs on CPU tensors"
                )
            if str(x.dtype).removeprefix("torch.") != dtype:
                raise TVMTypeError(f"{what} must be {dtype}, found {x.dtype}")
            if x.dim() != len(shape):
                raise TVMValueError(
                    f"{what} must have {len(shape)} dimension(s) {tuple(shape)}, found shape "
                    f"{tuple(x.shape)}"
                )
            for d, (want, got) in enumerate(zip(shape, x.shape, strict=True)):
                if isinstance(want, str):
                    if got < MIN_NAMED_SIZE:
                        self._warn_small_size(what, want, got)
                    seen = sizes.setdefault(want, (got, f"input {k} ('{name}') dimension {d}"))
                    if seen[0] != got:
                        raise TVMValueError(
                            f"{what}: size '{want}' is {seen[0]} (from {seen[1]}) but {got} in "
                            f"dimension {d} (shape {tuple(x.shape)})"
                        )
                elif got != want:
                    raise TVMValueError(
                        f"{what}: expected size {want} in dimension {d}, found {got} (shape "
                        f"{tuple(x.shape)}; input_infos gave {tuple(shape)})"
                    )
        if key is not None and all(isinstance(x, torch.Tensor) for x in inputs):
            if len(passed) >= 64:  # a bound, for models called with ever new sizes
                passed.clear()
            passed.add(key)

    def _warn_small_size(self, what: str, size: str, got: int) -> None:
        """Once per model: a named size below the range it was exported for. Its graph is the
        one for sizes of 2 and more (torch.export assumes 0 and 1 away, as torch.compile does
        until it recompiles), which gives the eager results unless the model treats such a
        size specially."""
        if self.__dict__.get("_small_size_warned"):
            return
        self.__dict__["_small_size_warned"] = True
        warnings.warn(
            f"{what}: size '{size}' is {got}, but the model was exported for '{size}' of "
            f"{MIN_NAMED_SIZE} or more (torch.export assumes sizes 0 and 1 away); it runs that "
            "graph, which differs from eager PyTorch where the model treats the size specially "
            f"(a squeeze() of that dimension, a Python branch on it); if it does, compile it "
            f"with the size given as {got}",
            UserWarning,
            stacklevel=_caller_stacklevel(),
        )

    def _env(self, inputs: Sequence[torch.Tensor]) -> dict[tuple[str, int], Any]:
        env: dict[tuple[str, int], Any] = {("in", i): x for i, x in enumerate(inputs)}
        for k in range(self.num_constants):
            env[("const", k)] = getattr(self, f"const{k}")
        return env

    def _run_steps(self, inputs: Sequence[torch.Tensor]) -> list[Any]:
        env = self._env(inputs)
        for j, (kind, fn, args, kwargs) in enumerate(self._steps):
            args = substitute(args, env)
            if kind == "kernel":
                k = self.kernels[fn]
                result = torch.ops.pytvmbridge.run_module(k.code, k.key, k.spec, list(args))
            else:
                result = apply_op(fn, args, substitute(kwargs, env))
            env[("step", j)] = result
        return [substitute(o, env) for o in self._outputs]

    def __prepare_scriptable__(self) -> torch.nn.Module:
        """What ``torch.jit.script(compiled)`` compiles (TorchScript cannot take ``*inputs``):
        ``forward(x) -> Tensor`` for a model of one input and one output, else
        ``forward(inputs: List[Tensor]) -> List[Tensor]``. Both call the same custom op, so the
        scripted module runs the same code, and ``torch.jit.save``/``load`` carry its bytes
        (a process that loads it must ``import pytvmbridge`` first, which registers the op).
        ``torch.jit.trace(compiled, example)`` works too, keeping the original signature.

        A model that runs operators in PyTorch, or returns views of its outputs, runs a
        recorded program that TorchScript cannot express: scripting it raises
        ``NotImplementedError`` (``torch.jit.trace`` and ``torch.export`` take it).
        """
        if "steps" in self.plan or self._views:
            what = "runs operators in PyTorch" if "steps" in self.plan else "returns views"
            raise TVMNotImplementedError(
                f"torch.jit.script: this compiled model {what} (a recorded program of steps "
                "that TorchScript cannot express); use torch.jit.trace(model, example) or "
                "torch.export.export(model, example)"
            )
        single = self.plan["num_inputs"] == 1 and len(self.plan["outputs"]) == 1
        return (_ScriptedSingle if single else _ScriptedList)(self)


def _prepared(step: Step) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    return resolve(step.target), step.args, dict(step.kwargs)


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


def _found(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # True is no count


def _dtype_name(value: Any, what: str) -> str:
    """``value`` (a name such as ``"float16"`` or a ``torch.dtype``) as one of :data:`DTYPES`."""
    name = str(value).removeprefix("torch.") if isinstance(value, (str, torch.dtype)) else None
    name = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
            "int": "int32"}.get(name, name)  # fmt: skip
    if name not in DTYPES:
        raise TVMValueError(f"compile: {what} must be one of {list(DTYPES)}, found {_found(value)}")
    return name


def _parse_options(option: Mapping[str, Any] | None) -> dict[str, Any]:
    if option is not None and not isinstance(option, Mapping):
        raise TVMTypeError(
            "compile: option must be a dict of PyTorchTVM options such as "
            f"{{'input_infos': [('x', ('batch', 3))]}}, found {type(option).__name__}"
        )
    option = dict(option or {})
    unknown = sorted(set(option) - set(OPTION_KEYS), key=str)
    if unknown:
        raise TVMValueError(
            f"compile: unknown option(s) {unknown}; expected some of {list(OPTION_KEYS)}"
        )
    default = _dtype_name(option.get("default_dtype", "float32"), "option 'default_dtype'")
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
            or not all(
                (_is_int(d) and d >= 0) or (isinstance(d, str) and d.isidentifier())
                for d in info[1]
            )
        ):
            raise TVMValueError(
                f"compile: input_infos[{k}] must be (name, shape) or (name, shape, dtype) with "
                f"ints >= 0 or size names (identifiers) in the shape, got {info!r}"
            )
        dtype = (
            _dtype_name(info[2], f"the dtype of input_infos[{k}]") if len(info) == 3 else default
        )
        parsed.append((info[0], tuple(info[1]), dtype))
    option["input_infos"] = parsed
    option["default_dtype"] = default
    for key, low in (("num_outputs", 1), ("tuning_n_trials", 0)):
        value = option.get(key)
        if value is not None and (not _is_int(value) or value < low):
            raise TVMValueError(
                f"compile: option {key!r} must be an int >= {low}, found {_found(value)}"
            )
    for key in ("export_dir", "tuning_log_file"):
        value = option.get(key)
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise TVMValueError(
                f"compile: option {key!r} must be a path (str or os.PathLike), "
                f"found {_found(value)}"
            )
    strict = option.get("strict", False)
    if not isinstance(strict, bool):
        raise TVMValueError(
            f"compile: option 'strict' must be True or False, found {_found(strict)}"
        )
    return option


def _check_arity(model: torch.nn.Module, count: int) -> None:
    """Raise ``ValueError`` when ``input_infos`` lists more or fewer inputs than the model's
    ``forward`` takes (torch.export's own message names no option)."""
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):  # no signature to read: torch.export checks
        return
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        most = None
    else:
        most = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    least = sum(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        for p in params
    )
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    takes = f"{type(model).__name__}.forward takes " + (
        f"{least} to {most}" if most is not None and most != least else
        f"at least {least}" if most is None else str(least)
    ) + f" input(s) {tuple(names)}"  # fmt: skip
    if count < least or (most is not None and count > most):
        raise TVMValueError(f"compile: option 'input_infos' lists {count} input(s), but {takes}")


def _example(sizes: list[int], dtype: str) -> torch.Tensor:
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        return torch.randn(sizes).to(getattr(torch, dtype))
    return torch.zeros(sizes, dtype=getattr(torch, dtype))  # indices: 0 is in every range


def _from_torchscript(model: Any, infos: list[tuple[str, tuple[Any, ...], str]]) -> Any:
    """A traced or scripted module (the RFC's ``compile(traced, option)``) as a GraphModule of
    ATen operators, through PyTorch's TorchScript converter, which torch.export then takes."""
    from torch._export.converter import TS2EPConverter

    examples = tuple(
        _example([EXAMPLE_SIZE if isinstance(d, str) else d for d in shape], dtype)
        for _name, shape, dtype in infos
    )
    try:
        return TS2EPConverter(model, examples).convert().module()
    except Exception as err:
        raise TVMValueError(
            f"compile: this TorchScript module could not be converted ({type(err).__name__}: "
            f"{err}); pass the torch.nn.Module itself (it is exported with torch.export)"
        ) from err


def _export(model: Any, infos: list[tuple[str, tuple[Any, ...], str]]) -> Any:
    converted = isinstance(model, torch.jit.ScriptModule)
    if converted:  # as traced: in the mode it was traced in
        model = _from_torchscript(model, infos)
    if not isinstance(model, torch.nn.Module):
        raise TVMTypeError(f"compile: expected a torch.nn.Module, got {type(model).__name__}")
    _check_arity(model, len(infos))
    dims: dict[str, Any] = {}
    examples, dynamic = [], []
    for _name, shape, dtype in infos:
        sizes, spec = [], {}
        for d, size in enumerate(shape):
            if isinstance(size, str):
                dims.setdefault(size, torch.export.Dim(size, min=MIN_NAMED_SIZE))
                spec[d] = dims[size]
                sizes.append(EXAMPLE_SIZE)
            else:
                sizes.append(size)
        examples.append(_example(sizes, dtype))
        dynamic.append(spec or None)
    was_training = model.training
    if not converted:
        model.eval()
    try:
        try:
            ep = torch.export.export(model, tuple(examples), dynamic_shapes=tuple(dynamic))
        except torch._dynamo.exc.UserError as err:
            found = re.search(r"Constraints violated \(([^)]*)\)", str(err))
            if found is None:
                raise
            names = ", ".join(f"'{n.strip()}'" for n in found.group(1).split(","))
            detail = next((ln.strip() for ln in str(err).splitlines() if "guard" in ln), "")
            raise TVMValueError(
                f"compile: input_infos names the size(s) {names}, but the model cannot run "
                f"every such size from {MIN_NAMED_SIZE} up with one graph (strided layers "
                "bring an intermediate size down to 1, or the model branches on the size); "
                "give those dimensions as numbers in input_infos (a named batch size alone "
                f"usually works). PyTorch's export said: {detail}"
            ) from None
        except RuntimeError as err:
            if not dims:
                raise
            names = ", ".join(f"'{n}'" for n in dims)
            raise TVMValueError(
                f"compile: the model could not run on the example input export traces, with "
                f"each named size of input_infos ({names}) at {EXAMPLE_SIZE} "
                f"({type(err).__name__}: {err}); a model that needs a larger input along a "
                "named dimension (strided layers or pooling that bring it below 1) is "
                "compiled with that dimension given as a number in input_infos"
            ) from err
    finally:
        if not converted:
            model.train(was_training)
    ep = ep.run_decompositions()
    _drop_metadata_asserts(ep.graph_module)
    return ep, examples


def _drop_metadata_asserts(gm: torch.fx.GraphModule) -> None:
    """Removes export's checks of a tensor's dtype and device at each ``.to()``
    (``aten._assert_tensor_metadata``): they hold by construction, since the compiled model
    checks its inputs' dtypes when it binds them, and as nodes without a traced value they kept
    the graph from compiling as one kernel (and strict from compiling at all)."""
    asserts = [
        n
        for n in gm.graph.nodes
        if n.op == "call_function" and n.target is torch.ops.aten._assert_tensor_metadata.default
    ]
    for node in asserts:
        gm.graph.erase_node(node)
    if asserts:
        gm.recompile()


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


def _check_outputs(ep: Any) -> None:
    """Refuse a model that updates buffers in ``forward`` (a compiled model computes outputs)."""
    from torch.export.graph_signature import OutputKind

    for spec in ep.graph_signature.output_specs:
        if spec.kind != OutputKind.USER_OUTPUT:
            raise UnsupportedOperatorError(
                f"compile: the model's forward updates {spec.target!r} ({spec.kind.name}); a "
                "compiled model only computes its outputs"
            )


def _placeholder_values(
    ep: Any, examples: list[torch.Tensor], constants: list[torch.Tensor]
) -> list[torch.Tensor]:
    """Each placeholder's example value: a user input's example, or the constant."""
    from torch.export.graph_signature import InputKind

    user, consts = iter(examples), iter(constants)
    return [
        next(user) if spec.kind == InputKind.USER_INPUT else next(consts)
        for spec in ep.graph_signature.input_specs
    ]


def _tuning(option: dict[str, Any]) -> dict[str, Any]:
    return {k: option[k] for k in ("tuning_n_trials", "tuning_log_file") if option.get(k)}


def _foreign_weights(cg: Any, is_constant: Any) -> bool:
    """Whether a weight transform of ``cg`` reads a graph input that is no constant (it could
    not be computed once, here)."""
    return any(
        not is_constant(i) for s in cg.kernel_sources if not isinstance(s, int) for i in s.leaves()
    )


# No weight transforms (computed once from constants) and no packed weights: for a graph whose
# weights are inputs or computed in PyTorch.
_PLAIN_WEIGHTS = {"fold_weights": False, "prepack_weights": False}


def _compile_whole(
    ep: Any, values: list[torch.Tensor], sources: list[list[Any]], option: dict[str, Any]
) -> tuple[Any, list[int]]:
    """One kernel for the whole graph: (CompiledGraph, the placeholders it takes, by index)."""
    from .graph import compile_graph

    # Inputs the graph never reads (BatchNorm's num_batches_tracked in eval) are dropped first.
    gm = copy.deepcopy(ep.graph_module)
    keep = []
    for i, node in enumerate([n for n in gm.graph.nodes if n.op == "placeholder"]):
        if node.users:
            keep.append(i)
        else:
            gm.graph.erase_node(node)
    gm.recompile()
    kept = [values[i] for i in keep]
    cg = compile_graph(copy.deepcopy(gm), kept, name="compiled_model", **_tuning(option))
    if _foreign_weights(cg, lambda i: sources[keep[i]][0] == "const"):
        # A weight passed as a model input: the kernel reads it as it is.
        cg = compile_graph(gm, kept, name="compiled_model", **_tuning(option), **_PLAIN_WEIGHTS)
    return cg, keep


def _plan_whole(
    cg: Any, keep: list[int], sources: list[list[Any]], constants: list[torch.Tensor]
) -> dict[str, Any]:
    """The plan of a one-kernel model (``constants`` gets the derived weights)."""
    from .graph.fold import materialize

    args = []
    for source in cg.kernel_sources:
        if isinstance(source, int):
            args.append(list(sources[keep[source]]))
            continue
        # Weights the kernel takes transformed (packed, batch norm folded): computed once here
        # from the constants they depend on.
        values = {i: constants[sources[keep[i]][1]] for i in source.leaves()}
        constants.append(materialize(source, values))
        args.append(["const", len(constants) - 1])

    def placeholder(ref: Ref) -> Ref:
        kind, k = sources[keep[ref.index]]
        return Ref("in" if kind == "input" else "const", k)

    views = {
        str(pos): [encode_step(_map_refs(step, {"in": placeholder})) for step in steps]
        for pos, steps in cg.output_replays.items()
    }
    plan: dict[str, Any] = {"args": args, "outputs": list(cg.output_of)}
    if views:
        plan["views"] = views
    return plan


def _caller_stacklevel() -> int:
    """The ``stacklevel`` of a warning raised in this package that points at the user's line:
    past this package's frames and torch.nn.Module's call machinery (a fixed count pointed at
    ``torch/nn/modules/module.py``'s ``forward_call``)."""
    import os
    import sys

    ours = os.path.dirname(os.path.abspath(__file__))
    torch_modules = os.path.dirname(os.path.abspath(torch.nn.modules.module.__file__))
    level, frame = 1, sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not (path.startswith(ours + os.sep) or path.startswith(torch_modules + os.sep)):
            return level
        frame = frame.f_back
        level += 1
    return level


def _map_refs(value: Any, mapping: Mapping[str, Any]) -> Any:
    """``value`` (a step, a ref, a list...) with the refs of the kinds in ``mapping`` replaced
    by ``mapping[kind](ref)``."""
    if isinstance(value, Step):
        kwargs = {k: _map_refs(v, mapping) for k, v in value.kwargs.items()}
        return Step(value.target, _map_refs(value.args, mapping), kwargs)
    if isinstance(value, Ref):
        return mapping[value.kind](value) if value.kind in mapping else value
    if isinstance(value, (list, tuple)):
        return type(value)(_map_refs(v, mapping) for v in value)
    return value


def _plan_partitioned(
    ep: Any,
    sources: list[list[Any]],
    constants: list[torch.Tensor],
    option: dict[str, Any],
) -> tuple[list[Module], dict[str, Any]]:
    """The kernels and plan of a model whose unsupported operators run in PyTorch: the
    supported ones are grouped into partitions, each compiled to a kernel (a partition that
    fails to compile is left to PyTorch too, with a warning); the plan's steps call them and
    the PyTorch operators in graph order (``constants`` gets the derived weights)."""
    from .graph import compile_graph
    from .graph.fold import materialize
    from .graph.partition import fuse_supported, is_partition

    strict = option.get("strict", False)
    known = {n.name for n in ep.graph_module.graph.nodes}
    exclude: set[str] = set()
    while True:  # each round leaves one more failing partition to PyTorch
        fused = fuse_supported(copy.deepcopy(ep.graph_module), frozenset(exclude))
        fused = fused if fused is not None else copy.deepcopy(ep.graph_module)
        graphs: dict[torch.fx.Node, Any] = {}
        failed = False
        for node in fused.graph.nodes:
            if not is_partition(node):
                continue
            sub = getattr(fused, node.target)
            name = f"compiled_model_{node.target}"
            try:
                cg = compile_graph(copy.deepcopy(sub), [], name=name, **_tuning(option))

                def constant(
                    i: int, node: torch.fx.Node = node, fused: torch.fx.GraphModule = fused
                ) -> bool:
                    arg = node.args[i]
                    return arg.op == "placeholder" and _source(fused, arg, sources)[0] == "const"

                if _foreign_weights(cg, constant):
                    cg = compile_graph(sub, [], name=name, **_tuning(option), **_PLAIN_WEIGHTS)
            except Exception as err:
                if strict:
                    raise
                ops = sorted({str(n.target) for n in sub.graph.nodes if n.op == "call_function"})
                failing = getattr(err, "fx_node", None)  # the node whose conversion failed
                if failing is not None:
                    ops = [str(n.target) for n in sub.graph.nodes if n.name == failing]
                warnings.warn(
                    f"pytvmbridge.torch.compile: {', '.join(ops)} run in PyTorch ({err})",
                    UserWarning,
                    stacklevel=3,
                )
                names = {failing} if failing is not None else {
                    n.name for n in sub.graph.nodes if n.op == "call_function"
                }  # fmt: skip
                if not names & known - exclude:  # (no progress: never loop forever)
                    raise
                exclude.update(names)
                failed = True
                break
            graphs[node] = cg
        if not failed:
            break

    modules: list[Module] = []
    steps: list[dict[str, Any]] = []
    fallback: list[str] = []
    refs: dict[torch.fx.Node, Any] = {}

    def arg(value: Any) -> Any:
        if isinstance(value, torch.fx.Node):
            return refs[value]
        if isinstance(value, (list, tuple)):
            return type(value)(arg(v) for v in value)
        return value

    def add(step: Step | dict[str, Any]) -> Ref:
        steps.append(encode_step(step) if isinstance(step, Step) else step)
        return Ref("step", len(steps) - 1)

    outputs: list[Any] = []
    for node in fused.graph.nodes:
        if node.op == "placeholder":
            kind, k = _source(fused, node, sources)
            refs[node] = Ref("in" if kind == "input" else "const", k)
        elif node in graphs:
            cg = graphs[node]
            part = [arg(a) for a in node.args]  # the partition's inputs, in its order
            kernel_args = []
            for source in cg.kernel_sources:
                if isinstance(source, int):
                    kernel_args.append(part[source])
                    continue
                values = {i: constants[part[i].index] for i in source.leaves()}
                constants.append(materialize(source, values))
                kernel_args.append(Ref("const", len(constants) - 1))
            kernel = add({"kernel": len(modules), "args": encode(kernel_args)})
            modules.append(cg.module)
            results: list[Any] = [
                None if i is None else add(Step("operator.getitem", (kernel, i)))
                for i in cg.output_of
            ]
            for pos, replay in cg.output_replays.items():
                first = len(steps)
                for step in replay:
                    last = add(_map_refs(step, {
                        "in": lambda r, part=part: part[r.index],
                        "out": lambda r, results=results: results[r.index],
                        "step": lambda r, first=first: Ref("step", first + r.index),
                    }))  # fmt: skip
                results[pos] = last
            refs[node] = tuple(results) if cg.output_tuple else results[0]
        elif node.op == "call_function":
            source = refs.get(node.args[0]) if node.args else None
            if node.target is operator.getitem and isinstance(source, tuple):
                refs[node] = source[node.args[1]]  # a result of a compiled partition
                continue
            try:
                target = op_name(node.target)
            except TVMValueError as err:
                raise UnsupportedOperatorError(f"compile: node {node.name}: {err}") from None
            if isinstance(node.meta.get("val"), torch.Tensor):
                fallback.append(target)
            refs[node] = add(
                Step(target, arg(node.args), {k: arg(v) for k, v in node.kwargs.items()})
            )
        elif node.op == "output":
            outputs = list(arg(node.args[0]))
        else:
            raise UnsupportedOperatorError(
                f"compile: graph node {node.name} ({node.op}) cannot be run by a compiled model"
            )
    plan = {
        "steps": steps,
        "outputs": encode(outputs),
        "fallback_ops": sorted(set(fallback)),
    }
    return modules, plan


def _source(fused: torch.fx.GraphModule, node: torch.fx.Node, sources: list[list[Any]]) -> Any:
    """``sources`` entry of the placeholder ``node`` of ``fused`` (its position)."""
    placeholders = [n for n in fused.graph.nodes if n.op == "placeholder"]
    return sources[placeholders.index(node)]


def _renumber_constants(plan: dict[str, Any]) -> list[int]:
    """Renumber the constants ``plan`` reads as 0, 1, ... in place; returns the old numbers."""
    used: set[int] = set()

    def walk(value: Any, mapping: dict[int, int] | None) -> Any:
        if isinstance(value, dict) and set(value) == {"ref"} and value["ref"][0] == "const":
            if mapping is None:
                used.add(value["ref"][1])
                return value
            return {"ref": ["const", mapping[value["ref"][1]]]}
        if isinstance(value, list):
            return [walk(v, mapping) for v in value]
        if isinstance(value, dict):
            return {k: walk(v, mapping) for k, v in value.items()}
        return value

    keys = [k for k in ("views", "steps", "outputs") if k in plan]
    for key in keys:
        walk(plan[key], None)
    used.update(k for kind, k in plan.get("args", []) if kind == "const")
    old = sorted(used)
    mapping = {o: n for n, o in enumerate(old)}
    for key in keys:
        plan[key] = walk(plan[key], mapping)
    if "args" in plan:
        plan["args"] = [[kind, mapping[k] if kind == "const" else k] for kind, k in plan["args"]]
    return old


def compile(module_or_traced: Any, option: dict[str, Any] | None = None) -> CompiledModel:
    """Compile a model with PyTorchTVM's options; the result is a ``torch.nn.Module``.

    ``module_or_traced``: a ``torch.nn.Module`` (exported with ``torch.export``), or a module
    made by ``torch.jit.trace``/``torch.jit.script`` (converted to ATen operators by PyTorch's
    TorchScript converter first, and compiled in the mode it was traced in).

    The model is compiled for inference, as in eval mode (batch norm with its running statistics,
    dropout off; a model in training mode is compiled so, with a warning), and its outputs have
    no gradient: train with ``torch.compile(model, backend="pytvmbridge")``.

    ``option``: ``input_infos`` (a list of ``(name, shape)`` or ``(name, shape, dtype)``; a shape
    entry may be a size name such as ``"batch"``, compiled once for every size),
    ``default_dtype`` (the inputs' dtype when their info names none: ``"float32"``, the default,
    ``"float64"``, ``"float16"``, ``"bfloat16"``, or an integer or bool dtype, :data:`DTYPES`),
    ``export_dir`` (also write the compiled model there for :func:`load`), ``num_outputs``
    (checked against the model's outputs, counted flat), ``tuning_n_trials`` (tune the model's
    convolutions and matrix products for that many trials in total before compiling, logged to
    ``tuning_log_file``), ``tuning_log_file`` (each operator's best record there is its schedule;
    see :mod:`pytvmbridge.autotvm.graph_tuning`; both are also recorded in the export's plan) and
    ``strict`` (raise :class:`UnsupportedOperatorError` naming the first operator that would run
    in PyTorch, instead of running it there). A wrong option raises ``ValueError`` (or
    ``TypeError`` for an ``option`` that is no dict) naming it, what it takes and what it was.

    Example:
        >>> import torch, pytvmbridge.torch_compile as ptc
        >>> model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh()).eval()
        >>> compiled = ptc.compile(model, {"input_infos": [("x", (4, 3))]})
        >>> x = torch.randn(4, 3)
        >>> torch.allclose(compiled(x), model(x), atol=1e-5)
        True
    """
    from .graph.partition import check_strict, unsupported_nodes

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
    # a bar once it lasts over a second (export, decomposition and the builds)
    with progress.busy(f"pytvmbridge: compiling {type(module_or_traced).__name__}"):
        ep, examples = _export(module_or_traced, option["input_infos"])
        _check_outputs(ep)
        sources, constants = _lifted_inputs(ep, examples)
        strict = option.get("strict", False)
        check_strict(ep.graph_module, strict)
        plan = None
        if not unsupported_nodes(ep.graph_module):
            values = _placeholder_values(ep, examples, constants)
            try:
                cg, keep = _compile_whole(ep, values, sources, option)
            except Exception as err:
                if strict:
                    raise
                warnings.warn(
                    f"pytvmbridge.torch.compile: the graph did not compile as one kernel ({err}); "
                    "compiling its parts, and running in PyTorch what does not compile",
                    UserWarning,
                    stacklevel=2,
                )
            else:
                modules = [cg.module]
                plan = _plan_whole(cg, keep, sources, constants)
        if plan is None:
            modules, plan = _plan_partitioned(ep, sources, constants, option)
            if not modules:
                warnings.warn(
                    "pytvmbridge.torch.compile: no operator of this model is compiled; it runs in "
                    "PyTorch",
                    UserWarning,
                    stacklevel=2,
                )
    num_outputs = option.get("num_outputs")
    returned = len(plan["outputs"])
    if num_outputs is not None and num_outputs != returned:
        raise TVMValueError(
            f"compile: option num_outputs is {num_outputs}, but the model returns {returned}"
        )
    used = _renumber_constants(plan)
    out_spec = ep.call_spec.out_spec
    plan.update({
        "num_inputs": len(option["input_infos"]),
        "input_infos": [list(info) for info in option["input_infos"]],
    })  # fmt: skip
    try:
        plan["out_spec"] = pytree.treespec_dumps(out_spec)
        plan["out_spec_modules"] = _container_modules(out_spec)
    except Exception:  # a container JSON cannot name (a namedtuple): kept in memory only
        plan["out_spec"] = None
    compiled = CompiledModel(
        modules if "steps" in plan else modules[0],
        [constants[k] for k in used],
        plan,
        out_spec=out_spec,
    )
    if option.get("export_dir"):
        if plan["out_spec"] is None:
            raise TVMNotImplementedError(
                f"compile: the model's outputs are nested in a container ({out_spec.type}) "
                "that cannot be written to export_dir; return tuples, lists or dicts, or "
                "register the namedtuple with torch.utils._pytree._register_namedtuple"
            )
        _save(compiled, modules, str(option["export_dir"]), option)
    return compiled


def _container_modules(spec: Any) -> list[str]:
    """The modules defining the output containers that are not Python's own (a Hugging Face
    model's ``ModelOutput`` dataclasses): a new process must import them before the saved
    TreeSpec can be read, since importing is what registers them with pytree."""
    found: set[str] = set()
    pending = [spec]
    while pending:
        node = pending.pop()
        if node.type is not None and node.type.__module__ not in ("builtins", "collections"):
            found.add(node.type.__module__)
        pending.extend(node.children())
    return sorted(found)


def _load_out_spec(plan: dict[str, Any]) -> Any:
    for name in plan.get("out_spec_modules", ()):
        try:
            importlib.import_module(name)
        except ImportError as err:
            raise ModuleNotFoundError(
                f"load: the model's outputs are nested in a container defined in module "
                f"{name!r}, which cannot be imported here ({err}); install it",
                name=name,
            ) from err
    try:
        return pytree.treespec_loads(plan["out_spec"])
    except NotImplementedError as err:  # a container type pytree does not know
        raise TVMValueError(
            f"load: the model's outputs are nested in a container this process has not "
            f"registered with torch.utils._pytree ({err}); import the module that defines it "
            "before loading"
        ) from err


def _save(
    compiled: CompiledModel, modules: list[Module], export_dir: str, option: dict[str, Any]
) -> None:
    os.makedirs(export_dir, exist_ok=True)
    files = [f"module{'' if k == 0 else k}.ptb" for k in range(len(modules))]
    for module, name in zip(modules, files, strict=True):
        module.export_library(os.path.join(export_dir, name))
    constants = {f"const{k}": getattr(compiled, f"const{k}") for k in range(compiled.num_constants)}
    torch.save(constants, os.path.join(export_dir, "constants.pt"))
    plan = dict(compiled.plan)
    if "steps" in plan:
        plan["modules"] = files
    record = {
        "plan": plan,
        "options": {k: v for k, v in option.items() if k != "input_infos"},
    }
    with open(os.path.join(export_dir, "plan.json"), "w") as f:
        json.dump(record, f, indent=1, default=str)


def load(export_dir: str | os.PathLike[str]) -> CompiledModel:
    """The model that :func:`compile` wrote to ``export_dir``, loaded without compiling.

    Example: see the module's docstring.
    """
    export_dir = os.fspath(export_dir)
    try:
        return _load(export_dir)
    except (KeyError, IndexError, TypeError, AttributeError, RecursionError, ValueError) as err:
        if isinstance(err, TVMValueError) and str(err).startswith(export_dir):
            raise
        raise TVMValueError(
            f"{export_dir}: not a valid pytvmbridge.torch.compile export (plan.json: "
            f"{type(err).__name__}: {err})"
        ) from err


def _load(export_dir: str) -> CompiledModel:
    with open(os.path.join(export_dir, "plan.json")) as f:
        record = json.load(f)
    plan = record["plan"]
    modules, codes = [], []
    for name in plan.pop("modules", None) or ["module.ptb"]:
        if not isinstance(name, str) or os.path.basename(name) != name or name in (".", ".."):
            raise TVMValueError(f"module file {name!r} is not a file name in the export")
        path = os.path.join(export_dir, name)
        with open(path, "rb") as f:
            code = f.read()
        modules.append(module_from_bytes(code, path))
        codes.append(code)
    # Memory-mapped: the weights are read as the kernel first touches them, not copied now.
    constants = torch.load(
        os.path.join(export_dir, "constants.pt"), weights_only=True, mmap=True
    )  # fmt: skip
    values = [constants[f"const{k}"] for k in range(len(constants))]
    if "steps" not in plan:
        modules, codes = modules[0], codes[0]
    model = CompiledModel(modules, values, plan, code=codes, own_constants=True)
    model._check_references()
    return model
