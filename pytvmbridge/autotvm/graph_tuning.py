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

import hashlib
import json
import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..error import TVMTypeError, TVMValueError
from . import record

__all__ = [
    "anchor_signature",
    "blocked_conv_tasks",
    "extract_graph_tasks",
    "graph_config",
    "graph_tuning",
    "guard",
]

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


def _subgraph(
    gm: torch.fx.GraphModule, anchor: torch.fx.Node
) -> tuple[torch.fx.GraphModule, dict[str, str]]:
    """``anchor`` alone: its view producers copied, every other input a placeholder named by
    its position (``input0``...: the task's workload key must not depend on what the model
    calls its weights); returns the subgraph and ``gm``'s name of each placeholder."""
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
    original: dict[str, str] = {}
    for n in gm.graph.nodes:  # graph order: placeholders first, producers before users
        if n in inputs:
            env[n] = graph.placeholder(f"input{len(original)}")
            env[n].meta = dict(n.meta)
            original[env[n].name] = n.name
    for n in gm.graph.nodes:
        if n in members:
            env[n] = graph.node_copy(n, lambda m: env[m])
    graph.output(env[anchor])
    return torch.fx.GraphModule(torch.nn.Module(), graph), original


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


class _BlockedConvRecipe:
    """A convolution the graph computes blocked (``T_conv2d_NCHWc``, see
    :mod:`pytvmbridge.graph.layout`), rebuilt alone from what its operation records: the same
    data layout (a blocked source read through its unpack view, or NCHW), the same pre-packed
    weight, its bias epilogue; the task's output is the blocked tensor the graph's next
    operators read (build arguments: data, weight, [bias,] output)."""

    def __init__(self, op: Any, bias: Any) -> None:
        data, weight = op.input_tensors
        if data.op.name == "pad_temp":  # the padding stage is the task's too
            data = data.op.input_tensors[0]
        attrs = dict(op.attrs)
        self.block = int(str(attrs["layout"])[4:-1])
        self.stride = tuple(int(v) for v in attrs["strides"])
        self.padding = tuple(int(v) for v in attrs["padding"][:2])
        self.dilation = tuple(int(v) for v in attrs["dilation"])
        self.groups = int(attrs["groups"])
        extents = {iv.var.name: int(iv.dom.extent) for iv in op.reduce_axis}
        self.data_shape = tuple(int(d) for d in data.shape)
        self.weight_shape = tuple(int(d) for d in weight.shape)
        self.has_bias = bias is not None
        panels = self.weight_shape[0] * (self.weight_shape[4] if len(self.weight_shape) == 5 else 1)
        # the real output channels (the bias has one per channel; a last panel may be padded)
        self.out_c = int(bias.shape[0]) if bias is not None else panels
        if self.groups != 1:
            self.in_c = self.out_c
        elif "rco" in extents:
            self.in_c = extents["rco"] * extents["rci"]
        else:
            self.in_c = extents["rc"]

    def __call__(self) -> list[Any]:
        from .. import te
        from ..graph.layout import blocked_source, blocking, conv2d_nchwc, unpack

        # Placeholders named by role, not as in the model: the workload key hashes the names.
        packed = len(self.weight_shape) == 5
        padded = {}
        if packed and self.weight_shape[0] * self.weight_shape[4] != self.out_c:
            padded["weight"] = self.out_c
        data = te.placeholder(self.data_shape, "float32", name="data")
        x = unpack(data, self.in_c) if len(self.data_shape) == 5 else data
        w = te.placeholder(self.weight_shape, "float32", name="weight")
        b = te.placeholder((self.out_c,), "float32", name="bias") if self.has_bias else None
        with blocking(0, padded):
            y = conv2d_nchwc(x, w, b, self.stride, self.padding, self.dilation, self.groups,
                             self.block)  # fmt: skip
        return [data, w, *([b] if b is not None else []), blocked_source(y)]


def _bias_of(op: Any, readers: dict[Any, list[Any]]) -> Any:
    """The 1-d tensor a broadcast add of ``op``'s output adds (its bias epilogue), else None."""
    for reader in readers.get(op, []):
        if reader.name != "T_add":
            continue
        others = [t for t in reader.input_tensors if t.op != op]
        if len(others) == 1 and len(others[0].shape) == 1 and _is_placeholder(others[0]):
            return others[0]
    return None


def blocked_conv_tasks(outputs: list[Any], target: str = "llvm") -> list[tuple[Any, str]]:
    """The tuning tasks of the blocked convolutions among ``outputs``' computation (a graph
    imported with the NCHWc layout): ``(task, anchor signature)``, one per distinct workload,
    each task rebuilt from the graph's operation and kept only when it computes the same
    workload (the same signature)."""
    from ..graph.layout import DEPTHWISE_NCHWC_TAG
    from ..schedule import create_schedule
    from ..topi import tag
    from .task import Task

    s = create_schedule([t.op for t in outputs])
    readers: dict[Any, list[Any]] = {}
    for st in s.stages:
        for t in getattr(st.op, "input_tensors", []):
            readers.setdefault(t.op, []).append(st.op)
    tasks: list[tuple[Any, str]] = []
    seen: set[str] = set()
    for st in s.stages:
        op = st.op
        if getattr(op, "tag", None) not in (tag.CONV2D_NCHWC, DEPTHWISE_NCHWC_TAG):
            continue
        sig = anchor_signature(op)
        if sig is None or sig in seen:
            continue
        try:
            recipe = _BlockedConvRecipe(op, _bias_of(op, readers))
            task = Task("conv2d_NCHWc", recipe, (), target, "auto")
            rebuilt = _anchor_op(recipe()[-1:])
        except Exception:  # an operation this recipe does not rebuild: not tuned
            continue
        if rebuilt is None or anchor_signature(rebuilt) != sig:
            continue
        seen.add(sig)
        tasks.append((task, sig))
    return tasks


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
        sub, original = _subgraph(gm, node)
        packed = {k: prepacked[g] for k, g in original.items() if g in prepacked}
        recipe = _SubgraphRecipe(sub, packed)
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
    verify: bool = True,
    build_args: list[Any] | None = None,
    name: str = "",
) -> dict[str, dict[str, int]] | None:
    """The ``auto_schedule`` config of a whole graph (``outputs``, imported from ``gm``) from its
    tasks' best records: tuned now when ``tuning_n_trials`` exceeds the trials already in the
    log, read from ``tuning_log_file`` or the active ``apply_history_best``. ``None``: the
    analytical schedule (nothing tuned applies). ``verify``: the tuned graph is used only if it
    beats the analytical one end to end (:func:`guard`; ``build_args`` and ``name``, the
    compiler's kernel arguments and name, let its builds go through the compile cache)."""
    from ..autoschedule import auto_schedule_space
    from ..schedule import create_schedule
    from .space import repair
    from .tuner import tune_tasks

    log = os.fspath(tuning_log_file) if tuning_log_file else None
    # The tasks in the form the graph computes them: the blocked convolutions cut from the
    # graph itself, the other operators from their FX nodes; a task whose workload the graph
    # does not compute (an FX convolution the graph computes blocked) is left out.
    pairs = blocked_conv_tasks(list(outputs), target)
    s = create_schedule([t.op for t in outputs])
    signatures = [anchor_signature(st.op) for st in s.stages]
    anchors = set(signatures)
    known = {sig for _, sig in pairs}
    pairs += [
        (t, sig)
        for t, sig in extract_graph_tasks(gm, prepacked, target)
        if sig in anchors and sig not in known
    ]
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
        # a workload the model runs several times weighs as much in its time
        weights = [signatures.count(sig) for _, sig in pairs]
        bests = tune_tasks(tasks, remaining, log_file=log, progress=progress, weights=weights)
    ctx = record.current() or record.context_for_option(log)
    chosen: dict[str, Any] = {}
    for (task, sig), best in zip(pairs, bests, strict=True):
        config = ctx.lookup(task) if ctx is not None else (best or {}).get("config")
        if config is not None and config != task.space.default():
            chosen[sig] = (task, config)
    if not chosen:
        return None
    keyed = stage_keys(s)
    graph_keys = {st.op: k for st, k in keyed}

    def query(c: Any) -> Any:
        return auto_schedule_space(list(outputs), target=target, config=c)

    def merge(sigs: set[str]) -> Any:
        merged: dict[str, dict[str, int]] = {}
        for st, key in keyed:
            sig = anchor_signature(st.op)
            if sig not in sigs:
                continue
            task, config = chosen[sig]
            merged.update(_translate(config, task.func(), st.op, key, graph_keys))
        return repair(query, merged)["default"] if merged else None

    try:
        tuned = merge(set(chosen))
    except ValueError as err:  # a point the whole graph refuses: keep the analytical schedule
        warnings.warn(f"tuning log not applied to the graph ({err})", stacklevel=2)
        return None
    if tuned is None or not (verify and verify_graphs):
        return tuned
    # A second candidate for the guard: only the choices their verification found clearly
    # faster alone (paired ratio <= STRONG), should the whole set lose in the graph.
    alternatives = []
    strong = {sig for sig, (task, _) in chosen.items() if _verified_ratio(ctx, task) <= STRONG}
    if strong and strong != set(chosen):
        try:
            alternatives.append(merge(strong))
        except ValueError:
            pass
    return guard(
        list(outputs),
        tuned,
        target,
        log,
        progress,
        alternatives=alternatives,
        build_args=build_args,
        name=name,
    )


# A task's choice whose verification ratio (chosen / analytical, alone) is at most this makes
# the guard's second candidate: the clear wins without the marginal ones.
STRONG = 0.95


def _verified_ratio(ctx: Any, task: Any) -> float:
    """The paired ratio (median time of the chosen record over the analytical point's, from the
    same verification) of the record ``ctx`` applies to ``task``; ``inf`` when unknown."""
    best = ctx.best(task.workload_key, task.target) if ctx is not None else None
    if best is None or best.get("verified") is None:
        return float("inf")
    default = json.dumps(task.canonical(task.space.default()), sort_keys=True)
    for r in getattr(ctx, "_records", []):
        same = r.get("verified") == best["verified"] and r["workload"] == task.workload_key
        if same and json.dumps(r["config"], sort_keys=True) == default:
            analytical = record.record_cost(r)
            return record.record_cost(best) / analytical if analytical > 0 else float("inf")
    return float("inf")


class _GraphBench:
    """A whole graph seen as :func:`~.measure.measure_in_process` sees a task: every placeholder
    its computation reads, then its computed outputs, built at a given ``auto_schedule``
    config."""

    def __init__(
        self, outputs: list[Any], target: str, build_args: list[Any] | None = None, name: str = ""
    ) -> None:
        self.outputs = [t for t in outputs if not _is_placeholder(t)]
        self.target = target
        # The compiler's own build arguments and kernel name: built as it builds the graph
        # (through the compile cache), the analytical graph timed here is the one an untuned
        # compile stored, and the one the guard keeps is stored for the compile that follows.
        self._build_as = (list(build_args), name) if build_args and name else None
        seen: set[Any] = set()
        inputs: list[Any] = []
        stack = [t.op for t in reversed(self.outputs)]
        while stack:
            op = stack.pop()
            if op in seen:
                continue
            seen.add(op)
            for t in getattr(op, "input_tensors", []):
                if _is_placeholder(t):
                    if t.op not in seen:
                        seen.add(t.op)
                        inputs.append(t)
                else:
                    stack.append(t.op)
        self.args = inputs + self.outputs
        if self._build_as is not None:
            given = self._build_as[0]
            same = len(given) == len(self.args) and {t.op for t in given} == {
                t.op for t in self.args
            }
            if same and all(not _is_placeholder(t) for t in given[len(inputs) :]):
                self.args = given
            else:
                self._build_as = None
        self.is_output = [False] * len(inputs) + [True] * len(self.outputs)
        self.arg_shapes = [(tuple(int(d) for d in t.shape), str(t.dtype)) for t in self.args]
        # integer inputs are zeros: an index is then in range whatever it indexes
        self.int_high = 1

    def instantiate(self, config: Any) -> tuple[Any, list[Any]]:
        from ..autoschedule import auto_schedule
        from ..schedule import create_schedule

        s = create_schedule([t.op for t in self.outputs])
        auto_schedule(s, target=self.target, config=config)
        return s, self.args

    def build(self, config: Any) -> Any:
        """The module of the graph at ``config``, built as ``instantiate`` + ``build`` would
        be, through the compile cache when the compiler's arguments are known."""
        from .. import cache
        from ..build import build

        if self._build_as is None:
            s, args = self.instantiate(config)
            return build(s, args, target=self.target)
        args, name = self._build_as
        return cache.build_auto(args, target=self.target, name=name, config=config)


def _guard_key(outputs: list[Any], config: Any, target: str) -> str:
    """What a guard verdict is about: the graph (every stage's operation, tag and output shape)
    and the tuned config it was measured with."""
    from .. import get_num_threads
    from ..schedule import create_schedule

    s = create_schedule([t.op for t in outputs if not _is_placeholder(t)])
    stages = [(st.op.name, getattr(st.op, "tag", ""), _dims(st.op.output(0).shape))
              for st in s.stages]  # fmt: skip
    text = repr((stages, json.dumps(config, sort_keys=True), target, get_num_threads()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# False: a log's records are applied to a graph without the end-to-end check (benchmarks set it
# to show what the guard prevents).
verify_graphs = True

# Verdicts of this process (graph compiled under apply_history_best without a log to write to).
_verdicts: dict[str, dict[str, Any]] = {}


def _verdict_problem(v: dict[str, Any], n_candidates: int) -> str | None:
    """Why ``v`` (a ``graph_guard`` line of this graph) is not a verdict ``guard`` can use, or
    ``None``: the fields it reads, of the types it writes them (``record_problem``'s rule for
    ordinary records), so that a damaged or hand-edited line cannot raise inside the guard."""

    def real(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)

    def count(x: Any) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and x >= 0

    kept, choice = v.get("kept"), v.get("choice")
    if not isinstance(kept, bool):
        return f"'kept' must be true or false, found {kept!r}"
    if not count(choice) and choice != -1:
        return f"'choice' must be an integer >= -1, found {choice!r}"
    if choice >= n_candidates:
        return f"'choice' {choice} is not one of the {n_candidates} candidates"
    if kept != (choice >= 0):
        return f"'kept' {kept} contradicts 'choice' {choice}"
    ratios, wins = v.get("ratios"), v.get("wins_each")
    if not isinstance(ratios, list) or len(ratios) != n_candidates or not all(map(real, ratios)):
        return (
            f"'ratios' must be a list of {n_candidates} numbers (one a candidate), found {ratios!r}"
        )
    if not isinstance(wins, list) or len(wins) != n_candidates or not all(map(count, wins)):
        return (
            f"'wins_each' must be a list of {n_candidates} counts (one a candidate), found {wins!r}"
        )
    if not count(v.get("rounds")) or not v["rounds"]:
        return f"'rounds' must be an integer >= 1, found {v.get('rounds')!r}"
    times = v.get("analytical_s")
    if not isinstance(times, list) or not times or not all(real(t) and t > 0 for t in times):
        return f"'analytical_s' must be a list of positive times, found {times!r}"
    return None


def _logged_verdict(log: str | None, key: str, n_candidates: int = 1) -> dict[str, Any] | None:
    """The latest usable verdict on the graph ``key`` (this process's, else ``log``'s), or
    ``None``. A line of this graph that is not a usable verdict (see ``_verdict_problem``; not
    JSON, not UTF-8) is skipped with a warning, as ``record.load`` skips a damaged record: the
    guard then times the graphs again rather than fail (a failed compile runs the partition in
    PyTorch)."""
    if key in _verdicts:
        return _verdicts[key]
    if not log or not os.path.exists(log):
        return None
    found = None
    with open(log, "rb") as f:  # bytes: a line that is not UTF-8 is one damaged line
        for n, raw in enumerate(f, 1):
            if b'"graph_guard"' not in raw or key.encode() not in raw:
                continue
            try:
                r = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                warnings.warn(f"{log}:{n}: not a JSON graph guard verdict, skipped", stacklevel=3)
                continue
            if not isinstance(r, dict) or r.get("graph_guard") != key:
                continue
            why = _verdict_problem(r, n_candidates)
            if why is not None:
                warnings.warn(
                    f"{log}:{n}: not a valid graph guard verdict ({why}), skipped", stacklevel=3
                )
                continue
            found = r  # the latest verdict wins
    return found


def guard(
    outputs: list[Any],
    config: Any,
    target: str = "llvm",
    log: str | None = None,
    progress: bool = False,
    rounds: int = 7,
    min_repeat_ms: float = 50.0,
    margin: float = 0.01,
    alternatives: Sequence[Any] = (),
    build_args: list[Any] | None = None,
    name: str = "",
) -> Any:
    """``config`` (the tuned point of a whole graph) if the graph built with it beats the
    analytical graph end to end, else the best of ``alternatives`` that does, else ``None``
    (the analytical schedule).

    Each task's choice was verified alone, against its own analytical point, with its inputs
    hot in cache and nothing else running; inside the model its layer runs after others, on
    other cache contents, so a set of choices that each win alone can still lose together.
    This guard builds the whole graphs and times them interleaved in this process
    (:func:`~.measure.measure_in_process`, ``rounds`` rounds, the order rotating); a tuned
    graph passes only if the median of its per-round ratios to the analytical one is below
    ``1 - margin`` and it was faster in all but a quarter of the rounds; of several that pass,
    the lowest median wins. The verdict is appended to ``log`` (a ``graph_guard`` line, keyed
    by the graph and the configs) and reused: the same graph compiled again with the same log
    measures nothing more."""
    from .measure import measure_in_process

    candidates = [config, *[c for c in alternatives if c is not None and c != config]]
    key = _guard_key(outputs, candidates, target)
    verdict = _logged_verdict(log, key, len(candidates))
    if verdict is None:
        t0 = time.perf_counter()
        try:
            bench = _GraphBench(outputs, target, build_args, name)
            times = measure_in_process(bench, [None, *candidates], rounds, min_repeat_ms)
        except Exception as err:  # symbolic sizes, or a graph not built here: the analytical
            warnings.warn(f"tuning guard: timing the graph failed ({err}); analytical schedule",
                          stacklevel=2)  # fmt: skip
            return None
        ratios, wins = [], []
        for k in range(1, len(times)):
            paired = sorted(b / a for a, b in zip(times[0], times[k], strict=True))
            ratios.append(float(paired[len(paired) // 2]))
            wins.append(sum(p < 1.0 for p in paired))
        passed = [
            k for k in range(len(candidates))
            if ratios[k] < 1.0 - margin and wins[k] >= rounds - rounds // 4
        ]  # fmt: skip
        choice = min(passed, key=lambda k: ratios[k]) if passed else -1
        shown = max(choice, 0)
        verdict = {
            "graph_guard": key,
            "kept": choice >= 0,
            "choice": choice,
            "ratio": ratios[shown],
            "wins": wins[shown],
            "ratios": ratios,
            "wins_each": wins,
            "rounds": rounds,
            "analytical_s": times[0],
            "tuned_s": times[1:],
            "guard_s": time.perf_counter() - t0,
            "timestamp": time.time(),
        }
        _verdicts[key] = verdict
        if log:
            record.append(log, [verdict])
    choice = verdict["choice"]
    if progress:
        med = sorted(verdict["analytical_s"])[len(verdict["analytical_s"]) // 2]
        names = ["all tuned tasks", "the clear wins only"]
        tried = ", ".join(
            f"{names[min(k, 1)]} {r:.3f} (faster in {w})"
            for k, (r, w) in enumerate(zip(verdict["ratios"], verdict["wins_each"], strict=True))
        )
        print(
            f"tuning guard: tuned graph / analytical, median of {verdict['rounds']} paired "
            f"rounds (analytical {med * 1e3:.2f} ms): {tried}: "
            f"{names[min(choice, 1)] + ' kept' if choice >= 0 else 'analytical kept'}",
            flush=True,
        )
    return candidates[choice] if choice >= 0 and choice < len(candidates) else None


def graph_tuning(
    gm: torch.fx.GraphModule, target: str, options: dict[str, Any]
) -> Callable[..., Any] | None:
    """For ``compile_graph``: ``None`` when nothing is tuned (no ``tuning_n_trials``, no
    ``tuning_log_file``, no active ``apply_history_best``), else a function ``(outputs,
    prepacked, build_args, name) -> config`` (see :func:`graph_config`)."""
    log = options.get("tuning_log_file")
    n = options.get("tuning_n_trials") or 0
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise TVMValueError(f"options['tuning_n_trials'] must be an int >= 0, found {n!r}")
    if log is not None and not isinstance(log, (str, os.PathLike)):
        raise TVMTypeError(f"options['tuning_log_file'] must be a path, found {type(log).__name__}")
    if log:  # a directory: refused now, not read as a log with no records
        record.check_log_path(log, "options['tuning_log_file']")
    if not n and not log and record.current() is None:
        return None

    def config(
        outputs: list[Any],
        prepacked: dict[str, int],
        build_args: list[Any] | None = None,
        name: str = "",
    ) -> Any:
        return graph_config(
            gm, outputs, target, prepacked, log, n, build_args=build_args, name=name
        )

    return config
