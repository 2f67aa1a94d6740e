"""Rich display (pytvmbridge/display.py): the HTML of one object of every kind, checked for its
structure and content, the console's pretty text, TCError's traceback, and progress bars."""

from __future__ import annotations

import doctest
import io
import re
import sys
from html.parser import HTMLParser

import numpy as np
import pytest
from IPython.lib.pretty import pretty

import pytvmbridge as tvm
from pytvmbridge import display, progress, tc

VOID = {"br", "hr", "img", "input", "meta", "link", "wbr"}


class _Page(HTMLParser):
    """Checks that tags nest and close, and collects the visible text and the tags used."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    assert page.stack == [], f"unclosed tags {page.stack}"
    return page


# The CSS properties used, all of them in the list JupyterLab's sanitiser keeps for untrusted
# outputs (packages/apputils/src/sanitizer.ts), with values of the forms it accepts.
SANITISER_KEEPS = {
    "background", "border", "border-collapse", "border-left", "border-radius", "color",
    "cursor", "display", "font-family", "font-size", "font-weight", "line-height", "margin",
    "max-width", "opacity", "overflow-x", "padding", "padding-left", "text-align", "white-space",
}  # fmt: skip
TAGS = {"div", "span", "b", "pre", "table", "tr", "th", "td", "details", "summary"}


def check_safe(html: str) -> _Page:
    """Inline styles only: no script, no stylesheet, no event handler, nothing fetched; only
    CSS an untrusted notebook keeps; colours that read on light and dark themes."""
    page = parse(html)
    for tag, attrs in page.tags:
        assert tag in TAGS, tag
        for name, value in attrs.items():
            assert name in ("style", "open"), name
            for declaration in filter(None, (value or "").split(";")):
                prop, _, val = declaration.partition(":")
                assert prop in SANITISER_KEEPS, declaration
                assert "url(" not in val and "inherit" not in val, declaration
                # The sanitiser's rgba() takes alphas written 0.x (or 1); ".5" is dropped.
                for alpha in re.findall(r"rgba\([^)]*,([^,)]*)\)", val):
                    assert re.fullmatch(r"0\.\d+|1", alpha), declaration
                if prop == "opacity":
                    assert re.fullmatch(r"0\.\d+|1", val), declaration
                # Backgrounds are translucent: nothing opaque to clash with a dark theme.
                if prop == "background":
                    assert val.startswith("rgba(") or val == "transparent", declaration
    return page


def visible(html: str) -> str:
    return "".join(parse(html).text)


def table_rows(html: str) -> list[list[str]]:
    """The visible text of each cell, row by row, of the tables in html."""
    return [
        [visible(cell) for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", html)
    ]


def gemm(n=64):
    A = tvm.placeholder((n, n), name="A")
    B = tvm.placeholder((n, n), name="B")
    k = tvm.reduce_axis((0, n), name="k")
    C = tvm.compute((n, n), lambda i, j: tvm.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def tiled_schedule():
    """A write cache computed inside a parallel fused tile loop, k split and unrolled,
    inner loops vectorized: every relation, annotation and attachment at once."""
    A, B, C = gemm()
    s = tvm.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    xo, yo, _xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
    fused = s[C].fuse(xo, yo)
    s[C].parallel(fused)
    s[C].vectorize(yi)
    s[CC].compute_at(s[C], fused)
    xc, yc = s[CC].op.axis
    (kk,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kk, factor=4)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)
    return s, [A, B, C]


# --- tensors and operations ------------------------------------------------------------------


def test_tensor_html_shows_shape_dtype_and_escaped_expression():
    n = tvm.var("n")
    A = tvm.placeholder((n, 8), name="A")
    B = tvm.compute((n, 8), lambda i, j: tvm.if_then_else(i < j, A[i, j], 0.0), name="B<&>")
    html = B._repr_html_()
    check_safe(html)
    # The expression's "<" and the name's "<&>" are escaped, and read back as written.
    assert "(i &lt; j)" in html and "B&lt;&amp;&gt;" in html
    text = visible(html)
    assert "Tensor B<&>" in text and "float32[n, 8]" in text and "(compute)" in text
    assert "B<&>[i, j] = if_then_else((i < j), A[i, j], 0.0)" in text
    assert "i in [0, n), j in [0, 8)" in text
    assert "A float32[n, 8]" in text


def test_operation_and_placeholder_html():
    A, _, C = gemm(16)
    text = visible(C.op._repr_html_())
    assert "ComputeOp C" in text and "float32[16, 16]" in text
    assert "C[i, j] = sum((A[i, k] * B[k, j]), axis=[k])" in text
    assert "reduce axes" in text and "k in [0, 16)" in text
    placeholder = visible(A._repr_html_())
    assert "Tensor A" in placeholder and "(placeholder)" in placeholder and "=" not in placeholder


def test_tensor_pretty_text():
    A, _, C = gemm(16)
    assert pretty(C) == (
        "Tensor C: float32[16, 16] (compute)\n"
        "  C[i, j] = sum((A[i, k] * B[k, j]), axis=[k])\n"
        "  axes: i in [0, 16), j in [0, 16)\n"
        "  reduce axes: k in [0, 16)\n"
        "  inputs: A float32[16, 16], B float32[16, 16]"
    )
    # Inside a container, the one-line repr.
    assert pretty([A]) == f"[{A!r}]"


def test_multi_output_compute():
    A = tvm.placeholder((4,), name="A")
    _, hi = tvm.compute((4,), lambda i: [A[i] - 1.0, A[i] + 1.0], name="pair")
    text = tvm.display.text(hi)
    assert "output 1" in text
    assert "pair.v0[i] = (A[i] - 1.0)" in text and "pair.v1[i] = (A[i] + 1.0)" in text


# --- schedules -------------------------------------------------------------------------------


def _rows(html):
    """(indent in em, visible text) of each row of a schedule's HTML."""
    return [
        (float(pad), visible(inner))
        for pad, inner in re.findall(r'<div style="padding-left:([\d.]+)em[^"]*">(.*?)</div>', html)
    ]


def test_schedule_html_tree():
    s, _ = tiled_schedule()
    html = s._repr_html_()
    check_safe(html)
    rows = _rows(html)
    texts = [t for _, t in rows]

    def row(prefix):
        matches = [(pad, t) for pad, t in rows if t.startswith(prefix)]
        assert len(matches) == 1, (prefix, texts)
        return matches[0]

    # Relations, in the order they were made.
    row("split i -> i.outer, i.inner (factor 16)")
    row("split j -> j.outer, j.inner (factor 16)")
    row("fuse i.outer, j.outer -> i.outer.j.outer.fused")
    row("split k -> k.outer, k.inner (factor 4)")
    # Annotations, each loop with its badge.
    fused_pad, fused = row("parallel i.outer.j.outer.fused")
    assert fused.rstrip().endswith("parallel")
    assert "vectorized" in row("vectorized j.inner in [0, 16)")[1]
    assert "unrolled" in row("unrolled k.inner in [0, 4)")[1]
    # The cache stage hangs inside the fused loop it is computed at, deeper than that loop.
    stage_pad, stage = row("stage C.local")
    assert "computed at C.i.outer.j.outer.fused" in stage and "scope local" in stage
    assert stage_pad > fused_pad
    assert texts.index(stage) == texts.index(fused) + 1
    # The consumer's own loops follow at the depth of the loop body, after the cache stage.
    inner_pad, _ = row("for i.inner in [0, 16)")
    assert inner_pad == stage_pad
    assert texts.index("for i.inner in [0, 16) ") > texts.index(stage)
    assert row("C[i, j] = C.local[i, j]")[0] > inner_pad
    assert "inputs: A float32[64, 64], B float32[64, 64]" in texts[0]


def test_schedule_pretty_text():
    A = tvm.placeholder((8, 8), name="A")
    T = tvm.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="T")
    U = tvm.compute((8, 8), lambda i, j: T[i, j] * 2.0, name="U")
    s = tvm.create_schedule(U.op)
    s[T].compute_inline()
    _, ii = s[U].split(U.op.axis[1], nparts=2)
    s[U].vectorize(ii)
    assert pretty(s) == "\n".join(
        [
            "Schedule: 2 compute stage(s), output U",
            "  # inputs: A float32[8, 8]",
            "  # inlined into their consumers: T",
            "  stage U",
            "    # split j -> j.outer, j.inner (nparts 2)",
            "    for i in [0, 8)",
            "      for j.outer in [0, 2)",
            "        vectorized j.inner in [0, 4)",
            "          U[i, j] = (T[i, j] * 2.0)",
        ]
    )


# --- lower() ---------------------------------------------------------------------------------


def test_lowered_html_marks_parallel_and_vector_lines():
    s, args = tiled_schedule()
    f = tvm.lower(s, args, name="gemm")
    source = str(f)
    html = f._repr_html_()
    check_safe(html)
    lines = source.splitlines()
    parallel = [line for line in lines if line.lstrip().startswith("parallel (")]
    vector = [line for line in lines if "ramp(" in line]
    assert len(parallel) == 1 and len(vector) >= 4
    # One badge per marked line, each on a tinted row.
    assert html.count(">parallel</span></div>") == len(parallel)
    assert html.count(">vector x16</span></div>") == len(vector)
    assert f"{len(vector)} vector statements" in visible(html)
    assert "1 parallel loop" in visible(html)
    # The loop nest reads back exactly (highlighting only wraps tokens).
    rows = re.findall(r'<div style="white-space:pre[^"]*">(.*?)</div>', html)
    shown = [re.sub(r" ?<span style=\"display:inline-block.*$", "", r) for r in rows]
    assert [visible(r) for r in shown] == lines


def test_lowered_pretty_text_marks_lines():
    A = tvm.placeholder((64,), name="A")
    B = tvm.compute((64,), lambda i: A[i] * 2.0, name="B")
    s = tvm.create_schedule(B.op)
    o, i = s[B].split(B.op.axis[0], factor=8)
    s[B].parallel(o)
    s[B].vectorize(i)
    text = pretty(tvm.lower(s, [A, B]))
    plain = str(tvm.lower(s, [A, B])).rstrip("\n")
    assert text.replace("  // parallel", "").replace("  // vector x8", "") == plain
    assert text.count("// parallel") == 1 and text.count("// vector x8") == 1


# --- modules ---------------------------------------------------------------------------------


def test_module_html_signature_target_and_collapsed_code():
    n = tvm.var("n")
    A = tvm.placeholder((n, 4), name="A")
    B = tvm.compute((n, 4), lambda i, j: A[i, j] + 1.0, name="B")
    s = tvm.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    m = tvm.build(s, [A, B], name="plus_one")
    html = m._repr_html_()
    page = check_safe(html)
    text = visible(html)
    assert "Module plus_one" in text
    assert "plus_one(A: float32[n, 4], B: float32[n, 4])" in text
    assert m.compile_seconds > 0 and "compiled in " in text
    assert "for llvm -mcpu=" in text
    assert table_rows(html)[:3] == [
        ["argument", "dtype", "shape", "role"],
        ["A", "float32", "[n, 4]", "input"],
        ["B", "float32", "[n, 4]", "output"],
    ]
    # The loop nest, assembly, LLVM IR and target are there, folded (no <details open>).
    details = [attrs for tag, attrs in page.tags if tag == "details"]
    assert len(details) == 4 and all("open" not in a for a in details)
    summaries = re.findall(r"<summary[^>]*>(.*?)</summary>", html)
    asm, ll = m.get_source("asm"), m.get_source("ll")
    assert summaries[1] == f"Assembly ({len(asm.splitlines())} lines)"
    assert summaries[2] == f"LLVM IR ({len(ll.splitlines())} lines)"
    assert "ptb.plus_one" in text  # the kernel's symbol, in the assembly
    assert "define " in text and "&quot;" not in text  # LLVM IR, unescaped back to its quotes
    # The module still runs.
    a = np.arange(8, dtype="float32").reshape(2, 4)
    b = np.empty_like(a)
    m(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_module_pretty_text():
    A = tvm.placeholder((3,), dtype="int32", name="A")
    B = tvm.compute((3,), lambda i: A[i] * 2, name="B")
    m = tvm.build(tvm.create_schedule(B.op), [A, B], name="double")
    lines = pretty(m).splitlines()
    assert re.fullmatch(
        r"Module double: compiled in [\d.]+ m?s for llvm -mcpu=\S+( \(.*\))?", lines[0]
    )
    assert lines[1:4] == [
        "  double(A: int32[3], B: int32[3])",
        "    A  int32[3]  input",
        "    B  int32[3]  output",
    ]
    assert m.arg_shapes == [(3,), (3,)]
    assert m.target.startswith("llvm")


# --- Tensor Comprehensions -------------------------------------------------------------------

FC = """
def fc(float(B, M) I, float(N, M) W) -> (O) {
    O(b, n) +=! I(b, r_m) * W(n, r_m)
    O(b, n) = O(b, n) > 0 ? O(b, n) : 0
}
"""


def test_tc_def_html_before_and_after_compiling():
    fc = tc.define(FC)
    html = fc._repr_html_()
    check_safe(html)
    text = visible(html)
    assert "TC def fc" in text and "compiled on first call" in text
    assert "fc(float32(B,M) I, float32(N,M) W) -> (O)" in text
    assert "-&gt; (O)" in html
    assert table_rows(html) == [
        ["tensor", "dtype", "shape", "role"],
        ["I", "float32", "[B, M]", "input"],
        ["W", "float32", "[N, M]", "input"],
        ["O", "float32", "[B, N]", "output"],
    ]
    # Two statements, two stages, the second reading the first.
    assert "O_1[b, n] = sum((I[b, r_m] * W[n, r_m]), axis=[r_m])" in text
    assert "O[b, n] = select((O_1[b, n] > 0.0), O_1[b, n], 0.0)" in text
    assert "&gt; " in html
    x = np.random.default_rng(0).standard_normal((3, 5)).astype("float32")
    w = np.random.default_rng(1).standard_normal((4, 5)).astype("float32")
    np.testing.assert_allclose(fc(x, w), np.maximum(x @ w.T, 0), rtol=1e-5, atol=1e-5)
    assert re.search(r"compiled in [\d.]+ m?s", visible(fc._repr_html_()))


def test_tc_defs_pretty_text():
    lib = tc.define(
        "def twice(float(N) A) -> (B) { B(i) = 2 * A(i) }\n"
        "def square(int32(N) A) -> (B) { B(i) = A(i) * A(i) }"
    )
    assert pretty(lib) == "\n".join(
        [
            "TC def twice(float32(N) A) -> (B): compiled on first call",
            "  A: float32[N] input",
            "  B: float32[N] output",
            "  B[i] = (2.0 * A[i])",
            "TC def square(int32(N) A) -> (B): compiled on first call",
            "  A: int32[N] input",
            "  B: int32[N] output",
            "  B[i] = (A[i] * A[i])",
        ]
    )
    assert "TC def twice" in visible(lib._repr_html_())


def _strip_ansi(lines):
    return [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in lines]


def test_tc_error_render_traceback_points_at_source():
    with pytest.raises(tc.TCError) as info:
        tc.define("def f(float(N) A) -> (B) {\n\tB(i) = A(i) +* 2\n}")
    err = info.value
    lines = _strip_ansi(err._render_traceback_())
    assert lines == [
        "TCError: line 2, column 15: expected an expression, found '*'",
        "    2 | \tB(i) = A(i) +* 2",
        "      | \t             ^",
    ]
    # The caret sits under the '*': the same column once tabs are expanded alike.
    assert lines[2].expandtabs(8).index("^") == lines[1].expandtabs(8).index("*")


def test_tc_error_caret_under_non_ascii_character():
    with pytest.raises(tc.TCError) as info:
        tc.define("def f(float(N) A) -> (B) { B(i) = A(i) + é }")
    lines = _strip_ansi(info.value._render_traceback_())
    assert lines[1][lines[2].index("^")] == "é"


# --- the doctests of the two modules ---------------------------------------------------------


@pytest.mark.parametrize("module", [display, progress])
def test_docstring_examples(module):
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0


def test_display_refuses_other_objects():
    with pytest.raises(TypeError, match="no display for int"):
        display.html_of(3)


# --- progress bars ---------------------------------------------------------------------------


def test_track_shows_a_bar_once_the_delay_has_passed():
    out = io.StringIO()
    assert list(progress.track(range(3), desc="steps", delay=0, file=out)) == [0, 1, 2]
    assert "steps" in out.getvalue() and "3/3" in out.getvalue()


def test_track_and_busy_stay_silent_for_short_work():
    out = io.StringIO()
    assert sum(progress.track(range(3), desc="steps", file=out)) == 3
    with progress.busy("quick", file=out):
        pass
    assert out.getvalue() == ""


def test_busy_shows_the_elapsed_time():
    out = io.StringIO()
    with progress.busy("compiling", delay=0, file=out):
        pass
    assert out.getvalue().strip().startswith("compiling: 00:0")


def test_a_busy_block_inside_another_draws_no_bar_of_its_own():
    # a graph compile's bar speaks for the builds inside it
    out = io.StringIO()
    with progress.busy("compiling a graph", delay=0, file=out):
        with progress.busy("building fused_0", delay=0, file=out):
            pass
    assert "compiling a graph" in out.getvalue() and "building" not in out.getvalue()
    with progress.busy("building alone", delay=0, file=out):  # the outer one has ended
        pass
    assert "building alone" in out.getvalue()


def test_model_compiles_are_timed_by_a_bar(monkeypatch):
    # README: work that lasts over a second shows a bar; compiling a model showed none
    import contextlib

    import torch

    import pytvmbridge.torch as ptt

    started = []
    real = progress.busy

    @contextlib.contextmanager
    def spy(desc, *args, **kwargs):
        started.append(desc)
        with real(desc, *args, **kwargs):
            yield

    monkeypatch.setattr(progress, "busy", spy)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()
    x = torch.randn(2, 8)
    torch.testing.assert_close(ptt.compile(model, {"input_infos": [("x", (2, 8))]})(x), model(x))
    assert "pytvmbridge: compiling Sequential" in started
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(model, backend="pytvmbridge")(x), model(x))
    assert "pytvmbridge: compiling a graph" in started


def test_progress_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("PYTVMBRIDGE_PROGRESS", "0")
    out = io.StringIO()
    assert list(progress.track("ab", delay=0, file=out)) == ["a", "b"]
    with progress.busy("x", delay=0, file=out):
        pass
    assert out.getvalue() == ""


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize(
    "tty, env, shown",
    [(True, None, True), (False, None, False), (False, "1", True), (True, "0", False)],
)
def test_bars_on_stderr_only_where_watched(monkeypatch, tty, env, shown):
    # A log file or a pipe gets no bar (a redrawn bar is a run of carriage returns there); a
    # terminal does, and PYTVMBRIDGE_PROGRESS forces either way.
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    if env is None:
        monkeypatch.delenv("PYTVMBRIDGE_PROGRESS", raising=False)
    else:
        monkeypatch.setenv("PYTVMBRIDGE_PROGRESS", env)
    err = _Stream(tty)
    monkeypatch.setattr(sys, "stderr", err)
    assert list(progress.track(range(3), desc="steps", delay=0)) == [0, 1, 2]
    with progress.busy("compiling", delay=0):
        pass
    text = err.getvalue()
    assert ("steps" in text and "3/3" in text and "compiling: 00:0" in text) == shown
    assert (text == "") == (not shown)


def test_a_small_build_prints_no_bar(capfd):
    A = tvm.placeholder((4,), name="A")
    B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
    tvm.build(tvm.create_schedule(B.op), [A, B])
    assert capfd.readouterr().err == ""


def test_tc_defs_show_the_defs_that_do_not_compile():
    lib = tc.define(
        "def ok(float(N) A) -> (B) { B(i) = A(i) }\ndef bad(float(N) A) -> (B) { B(i) = A(i) +* 2 }"
    )
    text = pretty(lib).splitlines()
    assert text[-4:] == [
        "TC def bad: does not compile",
        "  TCError: line 2, column 43: expected an expression, found '*'",
        "      2 | def bad(float(N) A) -> (B) { B(i) = A(i) +* 2 }",
        "        |                                           ^",
    ]
    html = lib._repr_html_()
    check_safe(html)
    assert "does not compile" in visible(html) and "TC def ok" in visible(html)
    assert "\x1b" not in html
    np.testing.assert_array_equal(lib.ok(np.arange(3, dtype="float32")), [0, 1, 2])


def test_stage_display():
    s, _ = tiled_schedule()
    C = s.outputs[0].output(0)
    assert pretty(s[C]) == "\n".join(
        [
            "Stage C: root",
            "  stage C",
            "    # split i -> i.outer, i.inner (factor 16)",
            "    # split j -> j.outer, j.inner (factor 16)",
            "    # fuse i.outer, j.outer -> i.outer.j.outer.fused",
            "    parallel i.outer.j.outer.fused in [0, 16)",
            "      for i.inner in [0, 16)",
            "        vectorized j.inner in [0, 16)",
            "          C[i, j] = C.local[i, j]",
        ]
    )
    html = s[C]._repr_html_()
    check_safe(html)
    assert "Stage C" in visible(html) and ">parallel</span>" in html


def test_a_module_saved_without_ir_displays_and_long_nests_are_cut():
    from pytvmbridge import runtime

    A = tvm.placeholder((16,), name="A")
    B = tvm.compute((16,), lambda i: A[i] * 2.0, name="B")
    built = tvm.build(tvm.create_schedule(B.op), [A, B], name="dbl")
    loaded = runtime.module_from_bytes(runtime.module_to_bytes(built, include_ir=False))
    html = loaded._repr_html_()  # a notebook shows it (it raised)
    assert "Assembly (not available)" in html and "dbl" in html
    # loaded from a file, not compiled here: said so (it said "compiled in" the load's time)
    assert loaded.loaded and not built.loaded
    assert "loaded in" in pretty(loaded) and "compiled in" in pretty(built)
    assert "loaded in" in html
    # the console form does not offer sources the module lacks (it named get_source("asm"))
    assert "code: none kept (saved without include_ir)" in pretty(loaded)
    assert 'code: get_source("asm"), get_source("ll")' in pretty(built)
    with pytest.raises(TypeError, match=r"fmt must be a string .* got int"):
        built.get_source(3)
    X = tvm.placeholder((64, 64), name="X")
    Y = tvm.compute((64, 64), lambda i, j: X[i, j] * 2.0 + 1.0, name="Y")
    s = tvm.create_schedule(Y.op)
    s[Y].unroll(Y.op.axis[0])
    s[Y].unroll(Y.op.axis[1])
    lowered = tvm.lower(s, [X, Y])
    lines = len(str(lowered).splitlines())
    html = lowered._repr_html_()
    shown = html.count('<div style="white-space:pre')
    # cut by lines or, first, by bytes: what is left is counted
    assert f"{lines - shown + 1} more lines" in html and shown < 400
    assert len(html) < 60_000  # (a highlighted line of an unrolled body runs to kilobytes)


def test_a_stage_attached_to_a_fused_axis_is_still_shown():
    A = tvm.placeholder((16, 16), name="A")
    C = tvm.compute((16, 16), lambda i, j: A[i, j] * 2.0, name="C")
    D = tvm.compute((16, 16), lambda i, j: C[i, j] + 1.0, name="D")
    s = tvm.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[0])
    s[D].fuse(*D.op.axis)
    text = display.text(s)
    assert "stage D" in text and "stage C  [computed at D.i]" in text


def test_extern_stages_are_their_own_kind():
    from pytvmbridge import te

    A = tvm.placeholder((4,), name="A")
    ext = te.extern((4,), [A], lambda i, o: te.call_packed("disp.f", i[0], o[0]), name="ext")
    assert isinstance(ext.op, te.ExternOp) and not isinstance(ext.op, te.PlaceholderOp)
    assert repr(ext.op) == "ExternOp(name='ext', inputs=[A], func='disp.f')"
    assert display.text(ext).startswith("Tensor ext: float32[4] (extern)")
    text = display.text(tvm.create_schedule(ext.op))
    assert "inputs: A float32[4]" in text and "extern stage ext  [reads A]" in text


def test_progress_delays_are_checked():
    with pytest.raises(TypeError, match="busy: delay must be a number of seconds, got 'x'"):
        with progress.busy("work", delay="x"):
            pass
    with pytest.raises(ValueError, match="track: delay must be >= 0 seconds"):
        list(progress.track([1, 2], delay=-1))
    assert list(progress.track([1, 2], delay=0.5)) == [1, 2]
