"""Tuning a compiled graph: one task per distinct operator workload, the best configs mapped back.

The graph compiler (``pytvmbridge.graph.compile_graph``) schedules a whole model as one
tensor-expression graph. Tuning it works per operator, as AutoTVM and Ansor do:

1. **Extraction:** every matrix product or convolution node of the FX graph (the operators
   whose schedule matters) becomes a small FX graph of its own (the node, the view operators
   feeding it, placeholders for everything else, convolution weights in the same pre-packed
   layout as in the model) whose tensor expression is the task's computation. Nodes with the
   same workload (the same anchor signature: operator, shapes, reduction extents, attributes)
   share one task, so ResNet-18's 20 convolutions are 11 tasks.
2. **Tuning:** ``tune_tasks`` splits ``tuning_n_trials`` across the tasks by expected gain,
   logging to ``tuning_log_file`` (records already there count toward the budget, so compiling
   again with the same log measures nothing more).
3. **Replay:** each task's best record (``apply_history_best`` semantics: this CPU, valid
   records, verified ones first) is translated to the whole graph's stage names (the task's
   ``T_conv2d_nchw`` becomes the model's ``T_conv2d_nchw#7``, its input ``pad_temp`` the
   model's ``pad_temp#6``) for every node of that workload, and the merged point is repaired
   against the whole graph's space; a task whose best is its analytical point keeps the
   model's analytical schedule.

Example:
    >>> import torch
    >>> from torch.fx.experimental.proxy_tensor import make_fx
    >>> from pytvmbridge.autotvm.graph_tuning import extract_graph_tasks
    >>> gm = make_fx(lambda x, w: torch.relu(x @ w) @ w)(torch.ones(8, 16), torch.ones(16, 16))
    >>> [t.description for t, _ in extract_graph_tasks(gm)]
    ['mm([8, 16]:float32, [16, 16]:float32, [8, 16]:float32)']
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import torch

from ..error import TVMTypeError, TVMValueError
from . import record

__all__ = ["anchor_signature", "extract_graph_tasks", "graph_config", "graph_tuning"]

_aten = torch.ops.aten
ANCHORS = {
    _aten.convolution.default: "conv2d",
    _aten.mm.default: "mm",
    _aten.addmm.default: "addmm",
    _aten.bmm.default: "bmm",
}
# Producers copied into a task with its anchor (they are inlined into the anchor's reads).
_VIEWS = {
    _aten.t.default,
    _aten.permute.default,
    _aten.view.default,
    _aten._unsafe_view.default,
    _aten.reshape.default,
    _aten.expand.default,
    _aten.unsqueeze.default,
    _aten.squeeze.dim,
    _aten.squeeze.dims,
    _aten.alias.default,
}


def stage_keys(s: Any) -> list[tuple[Any, str]]:
    """``(stage, key)`` for each stage of a fresh schedule, keyed as ``auto_schedule`` names
    them: the operation's name, repeated names numbered ``#2``, ``#3``... in producer-first
    order."""
    seen: dict[str, int] = {}
    out = []
    for st in s.stages:
        n = seen[st.op.name] = seen.get(st.op.name, 0) + 1
        out.append((st, st.op.name if n == 1 else f"{st.op.name}#{n}"))
    return out


def _dims(shape: Any) -> tuple[Any, ...]:
    return tuple(int(d) if hasattr(d, "value") or isinstance(d, int) else str(d) for d in shape)


def anchor_signature(op: Any) -> str | None:
    """What identifies an anchor operation's workload inside any graph (``None`` for an
    operation without a reduction): its name, tag, output and input shapes, reduction extents
    and attributes."""
    if not getattr(op, "reduce_axis", None):
        return None
    ins = [(_dims(t.shape), str(t.dtype)) for t in op.input_tensors]
    red = [str(iv.dom.extent) for iv in op.reduce_axis]
    attrs = sorted((k, repr(v)) for k, v in dict(op.attrs or {}).items())
    out = _dims(op.output(0).shape)
    return repr((op.name, op.tag, out, ins, red, attrs))


def _subgraph(gm: torch.fx.GraphModule, anchor: torch.fx.Node) -> torch.fx.GraphModule:
    """``anchor`` alone: its view producers copied, every other input a placeholder (named as
    in ``gm``, so a pre-packed weight keeps its name)."""
    members: set[torch.fx.Node] = set()
    inputs: list[torch.fx.Node] = []

    def visit(n: torch.fx.Node) -> None:
        if n in members or n in inputs:
            return
        if n is anchor or (n.op == "call_function" and n.target in _VIEWS):
            members.add(n)
            for m in n.all_input_nodes:
                visit(m)
        else:
            inputs.append(n)

    visit(anchor)
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for n in gm.graph.nodes:  # graph order: placeholders first, producers before users
        if n in inputs:
            env[n] = graph.placeholder(n.name)
            env[n].meta = dict(n.meta)
    for n in gm.graph.nodes:
        if n in members:
            env[n] = graph.node_copy(n, lambda m: env[m])
    graph.output(env[anchor])
    return torch.fx.GraphModule(torch.nn.Module(), graph)


class _SubgraphRecipe:
    """A task's computation: the anchor's FX subgraph imported afresh (tensor inputs, then the
    output)."""

    def __init__(self, gm: torch.fx.GraphModule, prepacked: dict[str, int]) -> None:
        self.gm, self.prepacked = gm, prepacked

    def __call__(self) -> list[Any]:
        from .. import te
        from ..graph.compiler import import_graph

        inputs, outputs, _ = import_graph(self.gm, self.prepacked)
        return [x for x in inputs if isinstance(x, te.Tensor)] + list(outputs)


def _anchor_op(tensors: list[Any]) -> Any:
    """The one reduction operation among the computation of ``tensors`` (found from the
    outputs back through their producers)."""
    seen: set[Any] = set()
    stack, found = [t.op for t in tensors], []
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if getattr(op, "reduce_axis", None):
            found.append(op)
        stack += [t.op for t in getattr(op, "input_tensors", [])]
    return found[0] if len(found) == 1 else None


def extract_graph_tasks(
    gm: torch.fx.GraphModule, prepacked: dict[str, int] | None = None, target: str = "llvm"
) -> list[tuple[Any, str]]:
    """The tuning tasks of an ATen-level FX graph: ``(task, anchor signature)``, one per
    distinct workload of a convolution or matrix product, in graph order. Nodes with symbolic
    sizes are skipped (there is no size to measure at). ``prepacked``: weight inputs the graph
    compiler passes packed (name -> panel width)."""
    from .task import Task

    prepacked = dict(prepacked or {})
    tasks: list[tuple[Any, str]] = []
    seen: set[str] = set()
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target not in ANCHORS:
            continue
        sub = _subgraph(gm, node)
        names = {n.name for n in sub.graph.nodes if n.op == "placeholder"}
        recipe = _SubgraphRecipe(sub, {k: w for k, w in prepacked.items() if k in names})
        try:
            tensors = recipe()
            op = _anchor_op(tensors[-1:])
            sig = anchor_signature(op) if op is not None else None
            if sig is None or sig in seen:
                continue
            task = Task(ANCHORS[node.target], recipe, (), target, "auto")
        except Exception:  # symbolic sizes, or a node the importer refuses alone: not tuned
            continue
        seen.add(sig)
        tasks.append((task, sig))
    return tasks


def _translate(
    task_config: dict[str, dict[str, int]], task_outputs: list[Any], graph_anchor: Any,
    graph_key: str, graph_keys: dict[Any, str],
) -> dict[str, dict[str, int]]:  # fmt: skip
    """The task's best point in the graph's stage names (the anchor, its sub-stages such as
    ``.local``/``.packed``, and the stages computing its inputs)."""
    from ..schedule import create_schedule

    s = create_schedule([t.op for t in task_outputs if not _is_placeholder(t)])
    keys = stage_keys(s)
    anchor = _anchor_op(task_outputs[-1:])
    task_keys = {st.op: k for st, k in keys}
    rename = {task_keys[anchor]: graph_key}
    for t_in, g_in in zip(anchor.input_tensors, graph_anchor.input_tensors, strict=True):
        tk, gk = task_keys.get(t_in.op), graph_keys.get(g_in.op)
        if tk is not None and gk is not None and not _is_placeholder(t_in):
            rename[tk] = gk
    out: dict[str, dict[str, int]] = {}
    for stage, knobs in task_config.items():
        for tk, gk in rename.items():
            if stage == tk or stage.startswith(tk + "."):
                out[gk + stage[len(tk) :]] = dict(knobs)
    return out


def _is_placeholder(t: Any) -> bool:
    from ..te import PlaceholderOp

    return isinstance(t.op, PlaceholderOp)


def _logged_trials(log: str | None, tasks: list[Any]) -> int:
    if not log or not os.path.exists(log):
        return 0
    keys = {t.workload_key for t in tasks}
    return sum(1 for r in record.load(log, verified=False) if r["workload"] in keys)


def graph_config(
    gm: torch.fx.GraphModule,
    outputs: list[Any],
    target: str = "llvm",
    prepacked: dict[str, int] | None = None,
    tuning_log_file: str | os.PathLike[str] | None = None,
    tuning_n_trials: int = 0,
    progress: bool = True,
) -> dict[str, dict[str, int]] | None:
    """The ``auto_schedule`` config of a whole graph (``outputs``, imported from ``gm``) from its
    tasks' best records: tuned now when ``tuning_n_trials`` exceeds the trials already in the
    log, read from ``tuning_log_file`` or the active ``apply_history_best``. ``None``: the
    analytical schedule (nothing tuned applies)."""
    from ..autoschedule import auto_schedule_space
    from ..schedule import create_schedule
    from .space import repair
    from .tuner import tune_tasks

    log = os.fspath(tuning_log_file) if tuning_log_file else None
    pairs = extract_graph_tasks(gm, prepacked, target)
    if not pairs:
        if tuning_n_trials and any(n.target in ANCHORS for n in gm.graph.nodes):
            warnings.warn(
                "tuning_n_trials: the graph's convolutions and matrix products have symbolic "
                "sizes, so there is nothing to measure at; using the analytical schedule",
                stacklevel=2,
            )
        return None
    tasks = [t for t, _ in pairs]
    bests: list[Any] = [None] * len(tasks)
    remaining = int(tuning_n_trials or 0) - _logged_trials(log, tasks)
    if remaining > 0:
        bests = tune_tasks(tasks, remaining, log_file=log, progress=progress)
    ctx = record.current() or record.context_for_option(log)
    chosen: dict[str, Any] = {}
    for (task, sig), best in zip(pairs, bests, strict=True):
        config = ctx.lookup(task) if ctx is not None else (best or {}).get("config")
        if config is not None and config != task.space.default():
            chosen[sig] = (task, config)
    if not chosen:
        return None
    s = create_schedule([t.op for t in outputs])
    keyed = stage_keys(s)
    graph_keys = {st.op: k for st, k in keyed}
    merged: dict[str, dict[str, int]] = {}
    for st, key in keyed:
        sig = anchor_signature(st.op)
        if sig not in chosen:
            continue
        task, config = chosen[sig]
        merged.update(_translate(config, task.func(), st.op, key, graph_keys))
    if not merged:
        return None

    def query(c: Any) -> Any:
        return auto_schedule_space(list(outputs), target=target, config=c)

    try:
        return repair(query, merged)["default"]
    except ValueError as err:  # a point the whole graph refuses: keep the analytical schedule
        warnings.warn(f"tuning log not applied to the graph ({err})", stacklevel=2)
        return None


def graph_tuning(
    gm: torch.fx.GraphModule, target: str, options: dict[str, Any]
) -> Callable[[list[Any], dict[str, int]], Any] | None:
    """For ``compile_graph``: ``None`` when nothing is tuned (no ``tuning_n_trials``, no
    ``tuning_log_file``, no active ``apply_history_best``), else a function ``(outputs,
    prepacked) -> config`` (see :func:`graph_config`)."""
    log = options.get("tuning_log_file")
    n = options.get("tuning_n_trials") or 0
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise TVMValueError(f"options['tuning_n_trials'] must be an int >= 0, found {n!r}")
    if log is not None and not isinstance(log, (str, os.PathLike)):
        raise TVMTypeError(f"options['tuning_log_file'] must be a path, found {type(log).__name__}")
    if not n and not log and record.current() is None:
        return None

    def config(outputs: list[Any], prepacked: dict[str, int]) -> Any:
        return graph_config(gm, outputs, target, prepacked, log, n)

    return config
