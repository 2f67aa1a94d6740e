"""Tensor Comprehensions fuzzing: whatever the source (random bytes, random text, random token
streams, random well-formed programs), define() returns or raises TCError; it never crashes,
hangs or raises anything else. Programs that compile also run, or refuse their inputs cleanly."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytvmbridge import tc

FUZZ = settings(
    max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow], database=None
)


def define_or_tc_error(source):
    try:
        return tc.define(source)
    except tc.TCError as err:
        # The error is well formed: a position inside the source and a printable message.
        assert err.line >= 0 and err.column >= 0
        assert isinstance(str(err), str) and isinstance(err.source_line, str)
        return None


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(data):
    define_or_tc_error(data)


@FUZZ
@given(st.text(max_size=200))
def test_random_text(text):
    define_or_tc_error(text)


TOKENS = [
    *"def where in float double int32 bool uint8 float16 ( ) { } , : ; . -> ? + - * / !".split(),
    *"= += *= min= max= +=! *=! min=! max=! == != < <= > >= && ||".split(),
    *"A B C O i j k N M exp fmax pow abs 0 1 2 3 0.5 1e3 A.0 B.1 #".split(),
    "\n",
]
HEADER = "def f ( float ( N , M ) A , float ( M ) B ) -> ( O , C ) {".split()


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=60), st.booleans())
def test_random_token_streams(tokens, with_header):
    body = (HEADER if with_header else []) + tokens + (["}"] if with_header else [])
    define_or_tc_error(" ".join(body))


# Well-formed programs built from a small grammar: they get past the parser, and mostly past
# the checks, so range inference, typing, the translation to te, the compiler and the kernels
# see many combinations of their rules.


def index_exprs(variables):
    v = st.sampled_from(variables)
    return st.one_of(
        v,
        v,
        st.builds(lambda x, c: f"{x} + {c}", v, st.integers(-2, 2)),
        st.builds(lambda c, x: f"{c} * {x}", st.integers(-2, 3), v),
        st.builds(lambda x, y: f"{x} + {y}", v, v),
        st.builds(lambda x: f"N - 1 - {x}", v),
        st.builds(lambda x: f"(2 * {x}) / 2", v),
        st.sampled_from(["0", "M - 1", "A.1 - 1"]),
    )


def value_exprs(variables, written):
    ix = index_exprs(variables)
    leaves = [
        st.builds(lambda a, b: f"A({a}, {b})", ix, ix),
        st.builds(lambda a: f"B({a})", ix),
        st.sampled_from(["0", "1", "2.5", "N", "A.0", *variables]),
    ]
    if "O" in written:
        leaves.append(st.builds(lambda a: f"O({a})", ix))
    if "C" in written:
        leaves.append(st.builds(lambda a, b: f"C({a}, {b})", ix, ix))
    ops = ["+", "-", "*", "/", "+", "*", "<", "=="]
    return st.recursive(
        st.one_of(*leaves),
        lambda sub: st.one_of(
            st.builds(lambda a, op, b: f"({a} {op} {b})", sub, st.sampled_from(ops), sub),
            st.builds(
                lambda f, a: f"{f}({a})",
                st.sampled_from(["exp", "abs", "-", "sigmoid", "float32", "tanh"]),
                sub,
            ),
            st.builds(lambda a, b, c, d: f"({a} < {b} ? {c} : {d})", sub, sub, sub, sub),
            st.builds(lambda a, b: f"fmax({a}, {b})", sub, sub),
        ),
        max_leaves=5,
    )


@st.composite
def programs(draw):
    written = set()
    statements = []
    count = draw(st.integers(2, 5))
    first = draw(st.sampled_from([["O", "C"], ["C", "O"]]))
    for s in range(count):
        target = first[s] if s < 2 else draw(st.sampled_from(["O", "C"]))
        lhs = ["i"] if target == "O" else ["i", "j"]
        op = draw(st.sampled_from(["=", "=", "+=!", "+=", "max=!", "min=", "*=!"]))
        reduce = op != "=" and draw(st.booleans())
        variables = lhs + (["r"] if reduce else [])
        rhs = draw(value_exprs(variables, written))
        if reduce and "r" not in rhs:
            rhs = f"{rhs} + A(r, 0)"
        where = draw(
            st.sampled_from(
                [
                    "",
                    "",
                    f" where {lhs[-1]} in 0:2",
                    f" where {lhs[0]} in 1:N",
                    " where " + ", ".join(f"{v} in 0:2" for v in lhs),
                ]
                + ([" where r in 0:2", " where r in 0:M"] if reduce else [])
            )
        )
        if draw(st.booleans()):
            rhs = f"{rhs} * x"
            where += (", " if where else " where ") + "x = B(i) + 1"
        statements.append(f"{target}({', '.join(lhs)}) {op} {rhs}{where}")
        written.add(target)
    return "def f(float(N, M) A, float(M) B) -> (O, C) {\n  " + "\n  ".join(statements) + "\n}"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
@given(programs(), st.integers(1, 4), st.integers(1, 4))
def test_random_programs_compile_and_run_or_fail_cleanly(source, n, m):
    f = define_or_tc_error(source)
    if f is None:
        return
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, m)).astype("float32")
    b = rng.standard_normal(m).astype("float32")
    try:
        outputs = f(a, b)
    except ValueError as err:
        # Sizes the program cannot handle (too small, a where clause out of bounds).
        assert "out of bounds" in str(err) or "size" in str(err), str(err)
        return
    assert len(outputs) == 2
