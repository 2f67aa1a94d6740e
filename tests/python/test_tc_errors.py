"""Tensor Comprehensions errors: every kind of mistake in the source is a TCError with its line,
column, source line and caret; mistakes in a call are ValueError / TypeError naming the culprit."""

import numpy as np
import pytest
import torch

from pytvmbridge import tc

# (id, source, line, column, part of the message). Columns are 1-based.
F = "def f(float(N) A) -> (B) {\n  "
SOURCE_ERRORS = [
    ("syntax", F + "B(i) = A(i) +\n}", 3, 1, "expected an expression"),
    ("character", F + "B(i) = A(i) $ 2\n}", 2, 15, "unexpected character '$'"),
    ("unclosed", F + "B(i) = A(i\n}", 3, 1, "expected ')'"),
    ("undefined-tensor", F + "B(i) = C(i)\n}", 2, 10, "undefined tensor or function 'C'"),
    ("undefined-output", F + "D(i) = A(i)\n}", 2, 3, "undefined output 'D'"),
    ("undefined-size", F + "B(i) = A(i) where i in 0:Q\n}", 2, 28, "undefined name 'Q'"),
    ("too-many-indices", F + "B(i) = A(i, i)\n}", 2, 10, "wrong number of indices"),
    ("too-few-indices", F + "B(i) = A\n}", 2, 10, "wrong number of indices"),
    ("lhs-indices", F + "B(i) = A(i)\n  B(i, j) = A(i)\n}", 3, 3, "wrong number of indices"),
    ("reduction", F + "B(i) = A(i + j)\n}", 2, 16, "'j' is not an index of the left-hand side"),
    ("assign-input", F + "A(i) = 1\n}", 2, 3, "cannot assign to input 'A'"),
    (
        "type-mismatch",
        "def f(float(N) A, double(N) B) -> (C) {\n  C(i) = A(i) + B(i)\n}",
        2,
        15,
        "type mismatch: float32 and float64",
    ),
    ("type-mismatch-update", F + "B(i) = A(i)\n  B(i) += double(A(i))\n}", 3, 8, "'B' is float32"),
    (
        "float-in-int",
        F + "B(i) = int32(A(i)) * 0.5\n}",
        2,
        22,
        "cannot use a float constant in int32",
    ),
    ("float-math-on-int", F + "B(i) = exp(int32(A(i)))\n}", 2, 10, "needs a float argument"),
    ("bool-arithmetic", F + "B(i) = (A(i) > 0) + 1\n}", 2, 21, "cannot use an integer constant"),
    ("range", F + "B(i) = 0\n}", 2, 5, "cannot infer the range of index 'i'; add a where clause"),
    ("read-before-write", F + "B(i) = B(i) + A(i)\n}", 2, 10, "read before any statement writes"),
    (
        "never-written",
        "def f(float(N) A) -> (B, C) {\n  B(i) = A(i)\n}",
        1,
        26,
        "'C' is never written",
    ),
    ("static-bounds", F + "B(i) = A(i + 1) where i in 0:N + 1\n}", 2, 12, "out of bounds"),
    ("write-below-zero", F + "B(i) = 1.0 where i in -1:N\n}", 2, 20, "'i' starts at -1"),
    (
        "write-past-end",
        F + "B(i) = A(i)\n  B(i) = 2.0 where i in 0:N + 1\n}",
        3,
        20,
        "'i' reaches N but 'B' has size N in dimension 0",
    ),
    ("non-affine-index", F + "B(i) = A(i * i)\n}", 2, 14, "multiplied by integer"),
    ("cyclic-binding", F + "B(i) = A(k) where k = k + 1\n}", 2, 25, "refers to itself"),
    ("duplicate-def", F + "B(i) = A(i)\n}\n" + F + "B(i) = A(i)\n}", 4, 5, "defined twice"),
]


@pytest.mark.parametrize(
    "source,line,column,message", [c[1:] for c in SOURCE_ERRORS], ids=[c[0] for c in SOURCE_ERRORS]
)
def test_source_errors_have_a_position_and_a_caret(source, line, column, message):
    with pytest.raises(tc.TCError) as info:
        tc.define(source)
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.line, err.column) == (line, column), str(err)
    assert message in err.message, str(err)
    source_line = source.split("\n")[line - 1]
    assert err.source_line == source_line
    text = str(err)
    assert text.startswith(f"line {line}, column {column}: ")
    # The quoted line, then a caret under the offending column.
    assert f"\n    {source_line}\n    {' ' * (column - 1)}^" in text


def test_caret_lines_up_with_tabs_and_wide_characters():
    source = "def f(float(N) A) -> (B) {\n\tB(i) = A(i) # é\n\tB(i) = \u00e9\n}"
    with pytest.raises(tc.TCError) as info:
        tc.define(source)
    err = info.value
    assert (err.line, err.column) == (3, 9)
    assert "\n    \tB(i) = \u00e9\n    \t       ^" in str(err)
    assert "unexpected character '\u00e9' (U+00E9)" in str(err)


@pytest.mark.parametrize(
    "text, shown",
    [
        ("\u03b1", "'\u03b1' (U+03B1)"),
        ("\u2212", "'\u2212' (U+2212)"),  # a minus sign pasted from a paper
        ("\U0001d465", "'\U0001d465' (U+1D465)"),
        ("\x07", "'\\x07'"),
    ],
)
def test_unexpected_characters_are_shown_whole(text, shown):
    with pytest.raises(tc.TCError, match="unexpected character") as info:
        tc.define("def f(float(N) A) -> (B) { B(i) = A(i) " + text + " 2 }")
    assert f"unexpected character {shown}" in str(info.value)


def test_define_checks_its_arguments():
    with pytest.raises(TypeError, match="str"):
        tc.define(42)
    with pytest.raises(ValueError, match="no def named 'g'"):
        tc.define("def f(float(N) A) -> (B) { B(i) = A(i) }", name="g")
    lib = tc.define(
        "def f(float(N) A) -> (B) { B(i) = A(i) }\ndef g(float(N) A) -> (B) { B(i) = A(i) }"
    )
    with pytest.raises(AttributeError, match="no def named 'h'"):
        lib.h  # noqa: B018
    with pytest.raises(KeyError, match="no def named 'h'"):
        lib["h"]
    with pytest.raises(TypeError, match="TC target: target must be a string"):
        tc.define("def f(float(N) A) -> (B) { B(i) = A(i) }", target=3)
    with pytest.raises(ValueError, match="TC target: target 'cuda'"):
        tc.define("def f(float(N) A) -> (B) { B(i) = A(i) }", target="cuda")
    f = tc.define("def f(float(N) A) -> (B) { B(i) = A(i) + 1 }", target=None)  # build's default
    np.testing.assert_array_equal(f(np.ones(2, "float32")), [2.0, 2.0])


def test_defs_named_like_properties_are_found_by_name():
    lib = tc.define(
        "def names(float(N) A) -> (B) { B(i) = A(i) }\n"
        "def errors(float(N) A) -> (B) { B(i) = 2 * A(i) }"
    )
    x = np.arange(3, dtype="float32")
    np.testing.assert_array_equal(lib["names"](x), x)
    np.testing.assert_array_equal(lib["errors"](x), 2 * x)
    assert lib.names == ["names", "errors"]


def test_a_long_chain_of_where_bindings_is_an_error_not_a_stack_overflow():
    n = 20000
    chain = ", ".join(f"x{k + 1} = x{k} + 1" for k in range(n))
    with pytest.raises(tc.TCError, match="nested too deeply once where bindings are substituted"):
        tc.define(f"def f(float(N) A) -> (B) {{ B(i) = x{n} where x0 = A(i), {chain} }}")
    chain = ", ".join(f"x{k + 1} = x{k} + 1" for k in range(300))  # within the limit: runs
    f = tc.define(f"def f(float(N) A) -> (B) {{ B(i) = x300 where x0 = A(i), {chain} }}")
    np.testing.assert_array_equal(f(np.zeros(2, "float32")), [300.0, 300.0])


MATMUL = "def mm(float(M, K) A, float(K, N) B) -> (C) { C(m, n) +=! A(m, k) * B(k, n) }"


def test_inconsistent_sizes_name_the_size_variable():
    f = tc.define(MATMUL)
    with pytest.raises(ValueError, match=r"inconsistent size 'K'.*'A' has K = 3.*'B' has K = 4"):
        f(np.ones((2, 3), "float32"), np.ones((4, 5), "float32"))
    with pytest.raises(ValueError, match=r"'A' of mm\(\) must have 2 dimension"):
        f(torch.ones(2, 3, 1), torch.ones(3, 5))
    fixed = tc.define("def g(float(3, N) A) -> (B) { B(i, j) = A(i, j) }")
    with pytest.raises(ValueError, match="must have size 3 in dimension 0, got 4"):
        fixed(np.ones((4, 2), "float32"))


def test_wrong_dtypes_and_counts_are_type_errors():
    f = tc.define(MATMUL)
    with pytest.raises(TypeError, match=r"'A' of mm\(\) must be float32, got float64"):
        f(np.ones((2, 3)), np.ones((3, 4), "float32"))
    with pytest.raises(TypeError, match="takes 2 input"):
        f(np.ones((2, 3), "float32"))
    with pytest.raises(TypeError, match="input 1"):
        f(np.ones((2, 3), "float32"), "not an array")


def test_inputs_too_small_for_the_output():
    f = tc.define("def conv(float(H) I, float(KH) W) -> (O) { O(h) +=! I(h + kh) * W(kh) }")
    with pytest.raises(ValueError, match=r"output 'O' of conv\(\) would have size -2"):
        f(np.ones(2, "float32"), np.ones(5, "float32"))
    assert f(np.ones(2, "float32"), np.ones(3, "float32")).shape == (0,)


def test_where_clauses_that_read_out_of_bounds_are_refused_before_running():
    f = tc.define("def f(float(N) A) -> (B) {\n  B(i) +=! A(i + k) where k in 0:3, i in 0:N\n}")
    with pytest.raises(ValueError, match=r"read of 'A' goes out of bounds.*reaches 6") as info:
        f(np.ones(5, "float32"))
    assert "line 2, column 14" in str(info.value)
    g = tc.define("def g(float(N) A) -> (B) { B(i) +=! A(i + k) where k in 0:3 }")
    np.testing.assert_array_equal(g(np.arange(5, dtype="float32")), [3, 6, 9])


def test_where_clauses_that_write_out_of_bounds_are_refused_before_running():
    # Sizes decide it only at the call: M past B's size N would write past B's end (the
    # writes were dropped silently before).
    f = tc.define(
        "def f(float(N) A, float(M) C) -> (B) {\n  B(i) = A(i)\n  B(i) = 2 * C(i) where i in 0:M\n}"
    )
    a, c = np.arange(4, dtype="float32"), np.arange(10, 16, dtype="float32")
    with pytest.raises(ValueError, match=r"write of 'B' goes out of bounds.*reaches 5") as info:
        f(a, c)
    assert "line 3, column 25: the where clause is here" in str(info.value)
    np.testing.assert_array_equal(f(a, c[:3]), [20, 22, 24, 3])
    g = tc.define("def g(float(N) A) -> (B) { B(i) = A(i + 2) where i in N - 5:N - 2 }")
    with pytest.raises(ValueError, match=r"write of 'B' goes out of bounds.*goes down to -1"):
        g(np.ones(4, "float32"))
    np.testing.assert_array_equal(g(np.arange(6, dtype="float32")), [0, 3, 4, 5])


def test_a_long_line_is_quoted_around_the_error():
    # a generated 1500-term body echoed the whole line (65 KB) into the message
    body = " + ".join(f"A(i) * {k}.0" for k in range(300))
    source = "def f(float(N) A) -> (B) { B(i) = " + body + " + Q(i) }"
    with pytest.raises(ValueError) as info:
        tc.define(source, name="f")
    text = str(info.value)
    assert "undefined tensor or function 'Q'" in text and len(text) < 400
    quoted, caret = text.splitlines()[1:3]
    assert quoted.strip().startswith("...") and "Q(i)" in quoted
    assert quoted[caret.index("^") :].startswith("Q(i)")  # the caret under the culprit
    assert info.value.line == 1 and info.value.column == source.index("Q(i)") + 1
