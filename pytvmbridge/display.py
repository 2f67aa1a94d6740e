"""How pytvmbridge objects show themselves in Jupyter (HTML) and in the IPython console (text).

One module draws everything; the classes only point here (``install()`` attaches the hooks):

* tensors and operations: name, dtype and shape, the compute expression, axes, inputs;
* schedules (and single stages, ``s[C]``): each stage's loop nest with its split/fuse
  relations, loop annotations (parallel, vectorized, unrolled) and the stages computed inside
  its loops;
* ``lower()`` results: the loop nest, highlighted, with parallel loops and vector statements
  marked;
* modules: signature, target, compile time, and the loop nest, assembly and LLVM IR in
  collapsed ``<details>`` blocks;
* Tensor Comprehensions defs: the signature, inputs, outputs and the stage each statement
  became; a ``TCError`` shows the offending source line with a caret instead of a Python
  traceback (``_render_traceback_``).

The HTML uses inline styles only: no scripts, no stylesheets, nothing fetched, and only CSS
that JupyterLab's sanitiser keeps (plain properties, ``rgba`` alphas written ``0.x``), so it
reads the same in an untrusted notebook. Text keeps the theme's colour; marks are translucent
backgrounds, readable on light and dark themes, and always carry a word as well as a colour.
Every piece of text is escaped with ``html.escape``.

Example:
    >>> import pytvmbridge as tvm
    >>> A = tvm.placeholder((4, 8), name="A")
    >>> B = tvm.compute((4, 8), lambda i, j: A[i, j] * 2.0, name="B")
    >>> print(tvm.display.text(B))
    Tensor B: float32[4, 8] (compute)
      B[i, j] = (A[i, j] * 2.0)
      axes: i in [0, 4), j in [0, 8)
      inputs: A float32[4, 8]
    >>> "<b>Tensor B</b>" in B._repr_html_()
    True
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _core
from .error import TVMTypeError

# ---------------------------------------------------------------------------------------------
# Styles. Translucent colours sit on any background; text keeps the theme's own colour.

_RGB = {
    "parallel": "234,88,12",  # orange
    "vectorized": "37,99,235",  # blue
    "vector": "37,99,235",
    "unrolled": "22,163,74",  # green
    "attach": "147,51,234",  # purple
    "inline": "120,120,120",  # grey
    "output": "219,39,119",  # pink
    "error": "220,38,38",  # red
}
_BOX = (
    "font-family:monospace;font-size:13px;line-height:1.45;border:1px solid rgba(127,127,127,0.4);"
    "border-radius:4px;padding:6px 10px;margin:2px 0;background:transparent;"
    "max-width:100%;overflow-x:auto"
)
_MUTED = "opacity:0.7"
_KEYWORD = "font-weight:bold;color:rgb(168,85,247)"  # violet: readable on white and on black
_NUMBER = "color:rgb(8,145,178)"  # cyan
_CODE = "margin:4px 0;padding:0;background:transparent;font-family:monospace"
_TABLE = "border-collapse:collapse;margin:4px 0;font-family:monospace;font-size:13px"
_CELL = "padding:1px 10px 1px 0;text-align:left;border:none;background:transparent"
_SOURCE_LINES = 1000  # assembly and LLVM IR are cut after this many lines (get_source has all)
_NEST_LINES = 400  # loop nests too (each line is a styled row: a few hundred bytes of HTML)
# ... and after this many bytes of rows: a highlighted line of an unrolled body runs to kilobytes
# (a span per token), and a tuned 128x128 matmul's 163-line nest was 215 KB of a notebook
_NEST_BYTES = 48_000


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _badge(word: str, kind: str) -> str:
    rgb = _RGB.get(kind, _RGB["inline"])
    return (
        f'<span style="display:inline-block;padding:0 5px;margin:0 2px;border-radius:3px;'
        f"font-size:85%;background:rgba({rgb},0.18);border:1px solid rgba({rgb},0.6)"
        f'">{_e(word)}</span>'
    )


def _box(title: str, subtitle: str, body: str) -> str:
    return (
        f'<div style="{_BOX}"><div><b>{_e(title)}</b> '
        f'<span style="{_MUTED}">{_e(subtitle)}</span></div>{body}</div>'
    )


def _details(summary: str, body: str, open_: bool = False) -> str:
    return (
        f'<details{" open" if open_ else ""}><summary style="cursor:pointer">{_e(summary)}'
        f"</summary>{body}</details>"
    )


def _table(rows: Iterable[Sequence[str]], header: Sequence[str] = ()) -> str:
    head = "".join(f'<th style="{_CELL};{_MUTED}">{_e(h)}</th>' for h in header)
    head = f"<tr>{head}</tr>" if head else ""
    body = "".join(
        "<tr>" + "".join(f'<td style="{_CELL}">{cell}</td>' for cell in row) + "</tr>"
        for row in rows
    )
    return f'<table style="{_TABLE}">{head}{body}</table>'


# ---------------------------------------------------------------------------------------------
# Code highlighting: the loop IR and compute expressions are tokenised, each token escaped.

_KEYWORDS = frozenset(
    "def for parallel vectorized unrolled allocate if else let sum prod max min ramp".split()
)
_TOKEN = re.compile(
    r"(?P<space>\s+)|(?P<number>\d+(?:\.\d*)?(?:e[+-]?\d+)?(?:[iuf]\d+|bf16)?\b)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_.]*)|(?P<other>.)",
    re.S,
)


def _highlight(code: str) -> str:
    out = []
    for m in _TOKEN.finditer(code):
        token = m.group()
        if m.lastgroup == "number":
            out.append(f'<span style="{_NUMBER}">{_e(token)}</span>')
        elif m.lastgroup == "name" and token in _KEYWORDS:
            out.append(f'<span style="{_KEYWORD}">{_e(token)}</span>')
        else:
            out.append(_e(token))
    return "".join(out)


def _code_block(code: str) -> str:
    return f'<pre style="{_CODE}">{_highlight(code)}</pre>'


def _plain_block(code: str, limit: int = _SOURCE_LINES) -> str:
    lines = code.splitlines()
    note = ""
    if len(lines) > limit:
        note = f"\n... {len(lines) - limit} more lines: see get_source()"
        lines = lines[:limit]
    return f'<pre style="{_CODE}">{_e(chr(10).join(lines) + note)}</pre>'


# ---------------------------------------------------------------------------------------------
# Tensors and operations.


def _shape_text(shape: Iterable[Any]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _is_compute(op: Any) -> bool:
    return bool(op.body)  # a placeholder has no body


def _range_text(iv: Any) -> str:
    dom = iv.dom
    lo = str(dom.min)
    hi = str(dom.extent) if lo == "0" else f"{dom.min} + {dom.extent}"
    return f"{iv.name} in [{lo}, {hi})"


def _op_lines(op: Any) -> list[str]:
    """The compute's definition: one line per output, ``C[i, j] = expression``."""
    if not _is_compute(op):
        return []
    index = ", ".join(iv.name for iv in op.axis)
    lines = []
    for v, body in enumerate(op.body):
        target = op.name if op.num_outputs == 1 else f"{op.name}.v{v}"
        lines.append(f"{target}[{index}] = {body}")
    return lines


def _op_facts(op: Any) -> list[tuple[str, str]]:
    if not _is_compute(op):
        return []
    facts = [("axes", ", ".join(_range_text(iv) for iv in op.axis))]
    if op.reduce_axis:
        facts.append(("reduce axes", ", ".join(_range_text(iv) for iv in op.reduce_axis)))
    inputs = [f"{t.name} {t.dtype}{_shape_text(t.shape)}" for t in op.input_tensors]
    if inputs:
        facts.append(("inputs", ", ".join(dict.fromkeys(inputs))))
    return facts


def _tensor_of(obj: Any) -> tuple[Any, Any]:
    """(tensor, op) for a Tensor, or (first output, op) for an Operation."""
    if isinstance(obj, _core.Tensor):
        return obj, obj.op
    return obj.output(0), obj


def _tensor_title(obj: Any) -> tuple[str, str]:
    tensor, op = _tensor_of(obj)
    kind = "compute" if _is_compute(op) else "extern" if op.input_tensors else "placeholder"
    if isinstance(obj, _core.Tensor):
        index = f" output {tensor.value_index}" if op.num_outputs > 1 else ""
        return f"Tensor {tensor.name}", f"{tensor.dtype}{_shape_text(tensor.shape)} ({kind}{index})"
    return f"{kind.capitalize()}Op {op.name}", f"{tensor.dtype}{_shape_text(tensor.shape)}"


def _tensor_html(obj: Any) -> str:
    """HTML for a Tensor or an Operation: header, compute expression, axes and inputs."""
    _, op = _tensor_of(obj)
    title, subtitle = _tensor_title(obj)
    body = ""
    lines = _op_lines(op)
    if lines:
        body += _code_block("\n".join(lines))
        body += _table([f'<span style="{_MUTED}">{_e(k)}</span>', _e(v)] for k, v in _op_facts(op))
    return _box(title, subtitle, body)


def _tensor_text(obj: Any) -> str:
    """Text for a Tensor or an Operation (the console's pretty form)."""
    _, op = _tensor_of(obj)
    title, subtitle = _tensor_title(obj)
    out = [f"{title}: {subtitle}"]
    out += [f"  {line}" for line in _op_lines(op)]
    out += [f"  {k}: {v}" for k, v in _op_facts(op)]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Schedules: a tree of rows shared by the HTML and the text forms.


@dataclass
class _Row:
    depth: int
    kind: str  # "stage", "loop", "body", "relation", "note"
    text: str
    marks: list[tuple[str, str]] = field(default_factory=list)  # (word, colour kind)


def _relation_text(rel: tuple[Any, ...]) -> str:
    if rel[0] == "split":
        _, parent, outer, inner, factor, nparts = rel
        by = f"factor {factor}" if factor is not None else f"nparts {nparts}"
        return f"split {parent.name} -> {outer.name}, {inner.name} ({by})"
    if rel[0] == "singleton":
        return f"singleton -> {rel[1].name} (a loop of extent 1)"
    _, outer, inner, fused = rel
    return f"fuse {outer.name}, {inner.name} -> {fused.name}"


def _stage_rows(stage: Any, depth: int, attached: dict[Any, list[Any]], out: list[_Row]) -> None:
    marks = []
    scoped = stage.attach_type == "scope"
    if scoped:
        where = f"{stage.attach_stage.op.name}.{stage.attach_ivar.name}"
        marks.append((f"computed at {where}", "attach"))
    if stage.scope != "global":
        marks.append((f"scope {stage.scope}", "inline"))
    op = stage.op
    out.append(_Row(depth, "stage", f"stage {op.name}", marks))
    if scoped:
        # Bound inference narrows an attached stage's loops to what its consumer reads.
        out.append(_Row(depth + 1, "note", "loop ranges inferred from the consumer at lower()"))
    for rel in stage.relations:
        out.append(_Row(depth + 1, "relation", _relation_text(rel)))
    inner = depth + 1
    for iv in stage.leaf_iter_vars:
        kind = stage.iter_var_kind(iv)
        reduce = [("reduce", "inline")] if iv.kind == "reduce" else []
        extent = "" if scoped and iv.kind != "reduce" else f" in [0, {iv.dom.extent})"
        out.append(_Row(inner, "loop", f"{kind} {iv.name}{extent}", reduce))
        inner += 1
        for child in attached.get(iv, []):
            _stage_rows(child, inner, attached, out)
    for line in _op_lines(op):
        out.append(_Row(inner, "body", line))


def _schedule_rows(s: Any) -> list[_Row]:
    attached: dict[Any, list[Any]] = {}
    for stage in s.stages:
        if stage.attach_type == "scope":
            attached.setdefault(stage.attach_ivar, []).append(stage)
    rows: list[_Row] = []
    inputs = [st.op for st in s.stages if not _is_compute(st.op) and not st.op.input_tensors]
    if inputs:
        text = ", ".join(
            f"{op.name} {op.output(0).dtype}{_shape_text(op.output(0).shape)}" for op in inputs
        )
        rows.append(_Row(0, "note", f"inputs: {text}"))
    inlined = [st.op.name for st in s.stages if st.attach_type == "inline"]
    if inlined:
        rows.append(_Row(0, "note", f"inlined into their consumers: {', '.join(inlined)}"))
    for stage in s.stages:
        if stage.attach_type == "root" and _is_compute(stage.op):
            _stage_rows(stage, 0, attached, rows)
        elif not _is_compute(stage.op) and stage.op.input_tensors:  # an extern stage
            reads = ", ".join(t.name for t in stage.op.input_tensors)
            rows.append(
                _Row(0, "stage", f"extern stage {stage.op.name}", [(f"reads {reads}", "attach")])
            )
    # stages attached to an axis that is no leaf any more (fused or split afterwards: lower()
    # refuses or follows it) are still shown, at the top
    leaves = {iv for st in s.stages for iv in st.leaf_iter_vars}
    for ivar, stages in attached.items():
        if ivar not in leaves:
            for stage in stages:
                _stage_rows(stage, 0, attached, rows)
    return rows


def _schedule_title(s: Any) -> tuple[str, str]:
    outputs = ", ".join(op.name for op in s.outputs)
    computes = sum(1 for st in s.stages if _is_compute(st.op))
    return "Schedule", f"{computes} compute stage(s), output {outputs}"


def _rows_html(rows: Iterable[_Row]) -> str:
    parts = []
    for row in rows:
        style = f"padding-left:{row.depth * 1.5}em;white-space:pre"
        marks = "".join(_badge(word, kind) for word, kind in row.marks)
        if row.kind == "stage":
            content = f"<b>{_e(row.text)}</b>"
        elif row.kind in ("relation", "note"):
            content = f'<span style="{_MUTED}">{_e(row.text)}</span>'
        else:
            content = _highlight(row.text)
            kind = row.text.split(" ", 1)[0]
            if row.kind == "loop" and kind in _RGB:  # parallel, vectorized, unrolled
                content += " " + _badge(kind, kind)
                style += f";background:rgba({_RGB[kind]},0.1)"
        parts.append(f'<div style="{style}">{content} {marks}</div>')
    return "".join(parts)


def _rows_text(title: str, rows: Iterable[_Row]) -> str:
    out = [title]
    for row in rows:
        marks = "".join(f"  [{word}]" for word, _ in row.marks)
        prefix = "# " if row.kind in ("relation", "note") else ""
        out.append(f"{'  ' * (row.depth + 1)}{prefix}{row.text}{marks}")
    return "\n".join(out)


def _schedule_html(s: Any) -> str:
    """HTML for a Schedule: every stage's loop nest with relations, annotations, attachments."""
    return _box(*_schedule_title(s), _rows_html(_schedule_rows(s)))


def _schedule_text(s: Any) -> str:
    """Text for a Schedule (the console's pretty form)."""
    title, subtitle = _schedule_title(s)
    return _rows_text(f"{title}: {subtitle}", _schedule_rows(s))


def _stage_only_rows(stage: Any) -> list[_Row]:
    rows: list[_Row] = []
    if _is_compute(stage.op):
        _stage_rows(stage, 0, {}, rows)  # the stages computed inside it belong to the schedule
    return rows


def _stage_html(stage: Any) -> str:
    """HTML for one Stage (``s[C]``): its loops, relations and annotations."""
    return _box(f"Stage {stage.op.name}", stage.attach_type, _rows_html(_stage_only_rows(stage)))


def _stage_text(stage: Any) -> str:
    """Text for one Stage (the console's pretty form)."""
    return _rows_text(f"Stage {stage.op.name}: {stage.attach_type}", _stage_only_rows(stage))


# ---------------------------------------------------------------------------------------------
# Lowered loop nests.

_BROADCAST = re.compile(r"\bx(\d+)\(")
_LOOP = re.compile(r"^\s*(for|parallel|vectorized|unrolled) \(")


def _ramp_lanes(line: str) -> int:
    """The lanes of the first ramp(base, stride, lanes) on the line, 0 if none."""
    start = line.find("ramp(")
    if start < 0:
        return 0
    depth, last_comma = 0, -1
    for i in range(start + 4, len(line)):
        c = line[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                m = re.match(r"\s*(\d+)", line[last_comma + 1 : i])
                return int(m.group(1)) if m else 0
        elif c == "," and depth == 1:
            last_comma = i
    return 0


def _line_mark(line: str) -> tuple[str, str] | None:
    """(word, colour kind) for a loop-nest line worth marking."""
    loop = _LOOP.match(line)
    if loop and loop.group(1) != "for":
        return loop.group(1), loop.group(1)
    lanes = _ramp_lanes(line)
    if not lanes:
        m = _BROADCAST.search(line)
        lanes = int(m.group(1)) if m else 0
    if lanes:
        return f"vector x{lanes}", "vector"
    return None


def _loop_summary(lines: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for line in lines:
        loop = _LOOP.match(line)
        if loop:
            counts[loop.group(1)] = counts.get(loop.group(1), 0) + 1
        elif _line_mark(line) is not None:
            counts["vector statement"] = counts.get("vector statement", 0) + 1
    names = {"for": "serial loop", "parallel": "parallel loop"}
    parts = [
        f"{n} {names.get(k, k + ' loop' if k != 'vector statement' else k)}{'s' if n > 1 else ''}"
        for k, n in counts.items()
    ]
    return ", ".join(parts) if parts else "no loops"


def _loop_nest_html(code: str, limit: int = _NEST_LINES) -> str:
    rows: list[str] = []
    lines = code.splitlines()
    note = ""
    if len(lines) > limit:  # a fully unrolled nest runs to megabytes of HTML
        note = f"... {len(lines) - limit} more lines: see print() or .lowered"
        lines = lines[:limit]
    size = 0
    for k, line in enumerate(lines):
        if size > _NEST_BYTES:
            note = f"... {len(code.splitlines()) - k} more lines: see print() or .lowered"
            break
        mark = _line_mark(line)
        if mark is None:
            rows.append(f'<div style="white-space:pre">{_highlight(line) or " "}</div>')
        else:
            rgb = _RGB[mark[1]]
            rows.append(
                f'<div style="white-space:pre;background:rgba({rgb},0.1);'
                f'border-left:3px solid rgba({rgb},0.8);padding-left:3px">'
                f"{_highlight(line)} {_badge(mark[0], mark[1])}</div>"
            )
        size += len(rows[-1])
    if note:
        rows.append(f'<div style="white-space:pre">{_e(note)}</div>')
    return f'<div style="{_CODE}">{"".join(rows)}</div>'


def _loop_nest_text(code: str) -> str:
    out = []
    for line in code.splitlines():
        mark = _line_mark(line)
        out.append(f"{line}  // {mark[0]}" if mark else line)
    return "\n".join(out)


def _lowered_html(f: Any) -> str:
    """HTML for a lower() result: the highlighted loop nest, parallel and vector lines marked."""
    lines = str(f).splitlines()
    header, body = (lines[0], lines[1:]) if lines and lines[0].startswith("def ") else ("", lines)
    return _box(
        f"Lowered {f.name}", _loop_summary(body), _loop_nest_html("\n".join([header, *body]))
    )


def _lowered_text(f: Any) -> str:
    """Text for a lower() result: the loop nest with ``// parallel``, ``// vector x16`` marks."""
    lines = str(f).splitlines()
    return _loop_nest_text("\n".join(lines))


# ---------------------------------------------------------------------------------------------
# Modules.

_VECTOR_ISAS = [
    ("+avx512f", "AVX-512"),
    ("+avx2", "AVX2"),
    ("+avx", "AVX"),
    ("+sve", "SVE"),
    ("+neon", "NEON"),
    ("+sse4.2", "SSE4.2"),
]


def _target_summary(target: str) -> str:
    """ "llvm -mcpu=znver4 (AVX-512)" from the long canonical target string."""
    words = target.split()
    cpu = next((w for w in words if w.startswith("-mcpu=")), "")
    features = next((w[len("-mattr=") :] for w in words if w.startswith("-mattr=")), "")
    enabled = set(features.split(","))
    isa = next((name for flag, name in _VECTOR_ISAS if flag in enabled), "")
    summary = " ".join(w for w in (words[0] if words else "llvm", cpu) if w)
    if "-fast-math" in words:
        summary += " -fast-math"
    return f"{summary} ({isa})" if isa else summary


def _seconds_text(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _module_args(m: Any) -> list[tuple[str, str, str, str]]:
    return [
        (name, dtype, _shape_text(shape), "output" if out else "input")
        for name, dtype, shape, out in zip(
            m.arg_names, m.arg_dtypes, m.arg_shapes, m.is_output, strict=True
        )
    ]


def _module_subtitle(m: Any) -> str:
    # a module read from a file (the compile cache's, a saved one) was loaded, not compiled, here
    how = "loaded" if m.loaded else "compiled"
    return f"{how} in {_seconds_text(m.compile_seconds)} for {_target_summary(m.target)}"


def _signature(name: str, args: Sequence[tuple[str, str, str, str]]) -> str:
    return f"{name}(" + ", ".join(f"{a}: {d}{s}" for a, d, s, _ in args) + ")"


def _module_html(m: Any) -> str:
    """HTML for a Module: signature, target and compile time; loop nest, assembly and LLVM IR
    in collapsed blocks."""
    args = _module_args(m)
    rows = [
        [f"<b>{_e(n)}</b>", _e(d), _e(s), _badge(r, "output") if r == "output" else _e(r)]
        for n, d, s, r in args
    ]
    body = _code_block(_signature(m.entry_name, args))
    body += _table(rows, ["argument", "dtype", "shape", "role"])
    lowered = m.lowered
    body += _details(f"Loop nest ({_loop_summary(lowered.splitlines())})", _loop_nest_html(lowered))
    for fmt, label in (("asm", "Assembly"), ("ll", "LLVM IR")):
        try:
            source = m.get_source(fmt)
        except ValueError as err:  # a module loaded from a file saved without its IR
            body += _details(f"{label} (not available)", _plain_block(str(err)))
            continue
        body += _details(f"{label} ({len(source.splitlines())} lines)", _plain_block(source))
    body += _details("Target", _plain_block(m.target))
    return _box(f"Module {m.entry_name}", _module_subtitle(m), body)


def _module_text(m: Any) -> str:
    """Text for a Module (the console's pretty form)."""
    args = _module_args(m)
    out = [f"Module {m.entry_name}: {_module_subtitle(m)}", f"  {_signature(m.entry_name, args)}"]
    width = max((len(a[0]) for a in args), default=0)
    out += [f"    {n:<{width}}  {d}{s}  {r}" for n, d, s, r in args]
    try:
        m.get_source("ll")
        code = 'get_source("asm"), get_source("ll")'
    except ValueError:  # loaded from a file saved without its LLVM IR
        code = "none kept (saved without include_ir)"
    out.append(f"  code: {code}; loop nest: .lowered")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Tensor Comprehensions.


def _tc_stages(fn: Any) -> list[Any]:
    """The compute operations of a TC def, producers first."""
    seen: dict[Any, None] = {}

    def visit(op: Any) -> None:
        if op in seen or not _is_compute(op):
            return
        for t in op.input_tensors:
            visit(t.op)
        seen[op] = None

    for t in fn.outputs:
        visit(t.op)
    return list(seen)


def _tc_status(fn: Any) -> str:
    sig = getattr(fn, "_sig", None)
    if sig is None:
        return "compiled on first call"
    how = "loaded" if sig.module.loaded else "compiled"  # (from the compile cache)
    return f"{how} in {_seconds_text(sig.module.compile_seconds)}"


def _tc_tensors(fn: Any) -> list[tuple[str, str, str, str]]:
    rows = [(t.name, t.dtype, _shape_text(t.shape), "input") for t in fn.inputs]
    rows += [
        (n, t.dtype, _shape_text(t.shape), "output")
        for n, t in zip(fn.output_names, fn.outputs, strict=True)
    ]
    return rows


def _tc_function_html(fn: Any) -> str:
    """HTML for one TC def: signature, inputs and outputs, the stages it became."""
    rows = [
        [f"<b>{_e(n)}</b>", _e(d), _e(s), _badge(r, "output") if r == "output" else _e(r)]
        for n, d, s, r in _tc_tensors(fn)
    ]
    body = _code_block(fn.signature)
    body += _table(rows, ["tensor", "dtype", "shape", "role"])
    stages = [line for op in _tc_stages(fn) for line in _op_lines(op)]
    body += f'<div style="{_MUTED}">as tensor expressions:</div>' + _code_block("\n".join(stages))
    return _box(f"TC def {fn.name}", _tc_status(fn), body)


def _tc_function_text(fn: Any) -> str:
    """Text for one TC def (the console's pretty form)."""
    out = [f"TC def {fn.signature}: {_tc_status(fn)}"]
    out += [f"  {n}: {d}{s} {r}" for n, d, s, r in _tc_tensors(fn)]
    out += [f"  {line}" for op in _tc_stages(fn) for line in _op_lines(op)]
    return "\n".join(out)


def _tc_broken(defs: Any) -> list[tuple[str, list[str]]]:
    """(name, error lines without colour) of each def of ``defs`` that did not compile."""
    return [
        (name, [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in tc_error_traceback(err)])
        for name, err in getattr(defs, "errors", {}).items()
    ]


def _tc_defs_html(defs: Any) -> str:
    """HTML for a TC source with several defs: one block per def, and the error of each def
    that did not compile."""
    body = "".join(_tc_function_html(f) for f in defs)
    for name, lines in _tc_broken(defs):
        error = f'<pre style="{_CODE}">{_e(chr(10).join(lines))}</pre>'
        body += _box(f"TC def {name}", "", _badge("does not compile", "error") + error)
    return _box("TC defs", ", ".join(defs.names), body)


def _tc_defs_text(defs: Any) -> str:
    """Text for a TC source with several defs."""
    out = [_tc_function_text(f) for f in defs]
    for name, lines in _tc_broken(defs):
        out.append(f"TC def {name}: does not compile")
        out += [f"  {line}" for line in lines]
    return "\n".join(out)


_RED, _BOLD, _RESET = "\x1b[31m", "\x1b[1m", "\x1b[0m"


def tc_error_traceback(err: Any) -> list[str]:
    """The lines IPython shows for a TCError instead of a Python traceback: the position and
    message, the source line numbered, and a caret under the offending token.

    Example:
        >>> from pytvmbridge import tc
        >>> try:
        ...     tc.define("def f(float(N) A) -> (B) { B(i) = X(i) }")
        ... except tc.TCError as err:
        ...     lines = tc_error_traceback(err)
        >>> print("\\n".join(lines).replace(_RED, "").replace(_BOLD, "").replace(_RESET, ""))
        TCError: line 1, column 35: undefined tensor or function 'X'
            1 | def f(float(N) A) -> (B) { B(i) = X(i) }
              |                                   ^
    """
    line, column = getattr(err, "line", 0), getattr(err, "column", 0)
    message = getattr(err, "message", str(err))
    source = getattr(err, "source_line", "")
    out = [f"{_RED}{_BOLD}TCError{_RESET}: line {line}, column {column}: {message}"]
    if source:
        # The column counts bytes of UTF-8; the caret goes under the character holding it.
        before = source.encode("utf-8", "surrogatepass")[: max(column - 1, 0)]
        prefix = before.decode("utf-8", "ignore")
        pad = "".join("\t" if c == "\t" else " " for c in prefix)
        gutter = f"{line:>5} | "
        out.append(f"{gutter}{source}")
        out.append(f"{' ' * (len(gutter) - 2)}| {pad}{_RED}{_BOLD}^{_RESET}")
    return out


# ---------------------------------------------------------------------------------------------
# Dispatch and hooks.


def _renderers() -> list[tuple[type, Callable[[Any], str], Callable[[Any], str]]]:
    from . import tc

    return [
        (_core.Tensor, _tensor_html, _tensor_text),
        (_core.Operation, _tensor_html, _tensor_text),
        (_core.Schedule, _schedule_html, _schedule_text),
        (_core.Stage, _stage_html, _stage_text),
        (_core.LoweredFunc, _lowered_html, _lowered_text),
        (_core.Module, _module_html, _module_text),
        (tc.TcFunction, _tc_function_html, _tc_function_text),
        (tc.TcDefs, _tc_defs_html, _tc_defs_text),
    ]


def _find(obj: Any, which: int) -> Callable[[Any], str]:
    for cls, *renderers in _renderers():
        if isinstance(obj, cls):
            return renderers[which]
    raise TVMTypeError(f"pytvmbridge has no display for {type(obj).__name__} objects")


def html_of(obj: Any) -> str:
    """The HTML a notebook shows for ``obj`` (a Tensor, Operation, Schedule, lower() result,
    Module, or TC def); ``TypeError`` for anything else.

    Example:
        >>> import pytvmbridge as tvm
        >>> A = tvm.placeholder((4,), name="A")
        >>> html_of(A).startswith("<div")
        True
    """
    return _find(obj, 0)(obj)


def text(obj: Any) -> str:
    """The text the IPython console shows for ``obj`` (see :func:`html_of`).

    Example:
        >>> import pytvmbridge as tvm
        >>> print(text(tvm.placeholder((4, 2), dtype="int8", name="A")))
        Tensor A: int8[4, 2] (placeholder)
    """
    return _find(obj, 1)(obj)


def _repr_html_(self: Any) -> str:
    return html_of(self)


def _repr_pretty_(self: Any, p: Any, cycle: bool) -> None:
    # Inside a container (a list of tensors...) the one-line repr reads better than a block.
    if cycle or getattr(p, "indentation", 0) > 0:
        p.text(repr(self))
    else:
        p.text(text(self))


def _render_traceback_(self: Any) -> list[str]:
    return tc_error_traceback(self)


def install() -> None:
    """Attach the display hooks to the classes; ``import pytvmbridge`` has done it already.

    Example:
        >>> import pytvmbridge as tvm
        >>> tvm.display.install()
        >>> tvm.Schedule._repr_html_ is tvm.Tensor._repr_html_
        True
    """
    from . import tc

    for cls, *_ in _renderers():
        cls._repr_html_ = _repr_html_
        cls._repr_pretty_ = _repr_pretty_
    tc.TCError._render_traceback_ = _render_traceback_


__all__ = ["html_of", "install", "tc_error_traceback", "text"]
