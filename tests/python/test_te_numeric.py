"""Tensor expressions compiled and run, compared with NumPy: every math function, the division
and promotion rules, conditionals, reductions, and random expression trees (hypothesis)."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytvmbridge.te as te
from pytvmbridge.build import build
from pytvmbridge.schedule import create_schedule

RNG = np.random.default_rng(0)


def run(inputs, fcompute, out_dtype=None, shape=None):
    """Builds C = compute(shape, fcompute(*placeholders)) over arrays `inputs`, returns C."""
    shape = shape or inputs[0].shape
    phs = [te.placeholder(a.shape, dtype=a.dtype.name, name=f"in{k}") for k, a in enumerate(inputs)]
    C = te.compute(shape, lambda *i: fcompute(*phs, *i), name="C")
    f = build(create_schedule(C.op), [*phs, C])
    out = np.empty(shape, dtype=out_dtype or C.dtype)
    f(*inputs, out)
    return out


def elementwise(fn, *arrays):
    return run(list(arrays), lambda *args: fn(*(t[args[len(arrays)]] for t in args[: len(arrays)])))


def erf(x):
    return np.vectorize(math.erf)(x.astype("float64")).astype(x.dtype)


# name -> (NumPy reference, sample domain)
UNARY = {
    "exp": (np.exp, (-5, 5)),
    "exp2": (np.exp2, (-5, 5)),
    "log": (np.log, (0.01, 10)),
    "log2": (np.log2, (0.01, 10)),
    "log10": (np.log10, (0.01, 10)),
    "log1p": (np.log1p, (-0.9, 10)),
    "sqrt": (np.sqrt, (0, 10)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 10)),
    "sin": (np.sin, (-6, 6)),
    "cos": (np.cos, (-6, 6)),
    "tan": (np.tan, (-1.4, 1.4)),
    "tanh": (np.tanh, (-8, 8)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-8, 8)),
    "erf": (erf, (-3, 3)),
    "abs": (np.abs, (-5, 5)),
    "floor": (np.floor, (-5, 5)),
    "ceil": (np.ceil, (-5, 5)),
    "trunc": (np.trunc, (-5, 5)),
    "round": (np.round, (-5, 5)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_math_matches_numpy(name, dtype):
    ref, (lo, hi) = UNARY[name]
    x = RNG.uniform(lo, hi, 257).astype(dtype)
    if name in ("floor", "ceil", "trunc", "round"):
        x[:6] = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]  # ties: NumPy rounds half to even
    got = elementwise(getattr(te, name), x)
    tol = 2e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(got, ref(x), rtol=tol, atol=tol)


def test_float16_math_keeps_float16():
    x = RNG.uniform(-2, 2, 64).astype("float16")
    got = elementwise(lambda a: te.exp(a) * 0.5 + 1, x)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, (np.exp(x) * np.float16(0.5) + 1), rtol=2e-3)


def test_power_fmod_and_isnan():
    a = RNG.uniform(0.1, 3, 100).astype("float32")
    b = RNG.uniform(-2, 2, 100).astype("float32")
    np.testing.assert_allclose(elementwise(te.power, a, b), np.power(a, b), rtol=1e-5)
    np.testing.assert_allclose(elementwise(lambda x: x**2.0, a), a**2, rtol=1e-6)
    c = RNG.uniform(-10, 10, 100).astype("float64")
    d = RNG.uniform(0.5, 3, 100).astype("float64") * RNG.choice([-1, 1], 100)
    np.testing.assert_allclose(elementwise(te.fmod, c, d), np.fmod(c, d), rtol=1e-12, atol=1e-12)
    e = np.array([0.0, np.nan, 1.0, -np.inf, np.nan], "float32")
    got = elementwise(te.isnan, e)
    assert got.dtype == np.bool_ and got.tolist() == np.isnan(e).tolist()


def test_integer_division_follows_python_and_c():
    a = RNG.integers(-50, 50, 200).astype("int32")
    b = RNG.integers(1, 9, 200).astype("int32") * RNG.choice([-1, 1], 200).astype("int32")
    np.testing.assert_array_equal(elementwise(lambda x, y: x // y, a, b), a // b)
    np.testing.assert_array_equal(elementwise(lambda x, y: x % y, a, b), a % b)
    np.testing.assert_array_equal(elementwise(te.truncdiv, a, b), np.trunc(a / b).astype("int32"))
    np.testing.assert_array_equal(elementwise(te.truncmod, a, b), np.fmod(a, b))
    np.testing.assert_array_equal(elementwise(lambda x: x // 4 + x % 4, a), a // 4 + a % 4)


@pytest.mark.parametrize("op", ["truncmod", "truncdiv", "floormod", "floordiv"])
def test_vectorised_division_by_a_select_with_an_index_arm(op):
    # A divisor that is select(c, A[i], i) is the constant vector 0, 1, 2, ... in one arm once
    # vectorised; LLVM once folded such a division to all zeros (lane 0 divides by 0, which
    # the kernel defines as 0 for that lane only).
    n = 16
    a_np = np.array([10, 5, 19, 10, -15, -3, -17, -9, -17, -9, 12, 6, 1, 17, 11, -4], "int32")
    A = te.placeholder((n,), "int32", name="A")
    fn = getattr(te, op)
    C = te.compute((n,), lambda i: fn(A[i], te.select(i < A[i], A[i], i)), name="C")
    s = create_schedule(C.op)
    s[C].vectorize(C.op.axis[0])
    got = np.zeros(n, "int32")
    build(s, [A, C])(a_np, got)
    divisor = np.where(np.arange(n) < a_np, a_np, np.arange(n)).astype("int32")
    safe = np.where(divisor == 0, 1, divisor)
    expected = {
        "truncmod": np.fmod(a_np, safe),
        "truncdiv": np.trunc(a_np / safe).astype("int32"),
        "floormod": np.mod(a_np, safe),
        "floordiv": np.floor_divide(a_np, safe),
    }[op]
    np.testing.assert_array_equal(got, np.where(divisor == 0, 0, expected))


def test_float_floor_division_and_modulo():
    a = RNG.uniform(-10, 10, 200).astype("float64")
    b = RNG.uniform(0.5, 3, 200).astype("float64") * RNG.choice([-1, 1], 200)
    np.testing.assert_allclose(elementwise(lambda x, y: x // y, a, b), np.floor_divide(a, b))
    np.testing.assert_allclose(
        elementwise(lambda x, y: x % y, a, b), np.remainder(a, b), atol=1e-12
    )


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_float_floor_division_and_modulo_match_numpy_bit_for_bit(dtype):
    # every pair of special and ordinary values: infinities (5 % inf is 5, -7.5 // inf is -1,
    # inf // 2 is NaN), signed zeros, division by zero, NaN, and quotients that floor(a / b)
    # rounds across an integer (1 // 0.1 is 9 with remainder 0.0999...)
    values = [5.0, -7.5, 1.0, 0.1, -0.1, 0.0, -0.0, 3.0, -3.0, np.inf, -np.inf, np.nan, 2.5, 7.0]
    values += [1e30, 1e-30] if dtype != "float16" else [6e4, 1e-4]
    pairs = np.array([(x, y) for x in values for y in values])
    a, b = pairs[:, 0].astype(dtype), pairs[:, 1].astype(dtype)
    with np.errstate(all="ignore"):
        want_div, want_mod = np.floor_divide(a, b), np.remainder(a, b)
    got_div = elementwise(lambda x, y: x // y, a, b)
    got_mod = elementwise(lambda x, y: x % y, a, b)
    for got, want in ((got_div, want_div), (got_mod, want_mod)):
        np.testing.assert_array_equal(got, want)
        same_sign = np.signbit(got) == np.signbit(want)
        assert (same_sign | np.isnan(want)).all()  # -0.0 where NumPy has it


def test_integer_arithmetic_wraps_like_numpy():
    a = np.array([100, -100, 127, -128, 5], "int8")
    b = np.array([100, -100, 1, -1, 7], "int8")
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(elementwise(lambda x, y: x + y, a, b), a + b)
        np.testing.assert_array_equal(elementwise(lambda x, y: x * y, a, b), a * b)
        np.testing.assert_array_equal(elementwise(lambda x: x - 1, a), a - np.int8(1))
    u = np.array([0, 1, 255], "uint8")
    np.testing.assert_array_equal(elementwise(lambda x: x + 1, u), u + np.uint8(1))


def test_python_scalars_follow_numpy_promotion_in_values():
    i = np.arange(-5, 5, dtype="int32")
    got = elementwise(lambda x: x + 1.5, i)  # int32 + Python float is float32, as in TVM
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, (i + 1.5).astype("float32"))
    h = RNG.uniform(-4, 4, 50).astype("float16")
    got = elementwise(lambda x: x * 0.1 + 3, h)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, h * 0.1 + 3, rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(elementwise(lambda x: -x, i), -i)
    np.testing.assert_array_equal(elementwise(lambda x: abs(x), i), np.abs(i))


def test_casts_and_comparisons():
    x = RNG.uniform(-4, 4, 100).astype("float32")
    np.testing.assert_array_equal(elementwise(lambda a: a.astype("int32"), x), x.astype("int32"))
    np.testing.assert_array_equal(elementwise(lambda a: a > 0.5, x), x > 0.5)
    got = elementwise(lambda a: ((a > 0) & (a < 2)) | ~(a > -1), x)
    np.testing.assert_array_equal(got, ((x > 0) & (x < 2)) | ~(x > -1))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "uint64"])
def test_out_of_range_float_casts_as_numpy_gives_them_and_the_same_when_folded(dtype):
    # Out of the type's range, C casts compiled for x86 (NumPy's astype): INT_MIN of the signed
    # type converted through, wrapped to narrower ones; uint64 converts negatives through int64
    # (-2.0 -> 2**64 - 2; it used to saturate to 2**64 - 1). A constant cast gives the same
    # (LLVM folded the poison of an out-of-range conversion to 0: const(3e9) -> int32 was 0).
    x = np.array([-2.0, -300.0, 5.5, 3e9, -3e9, 1e19, 2e19, 9.3e18, -9.3e18, 2.0**63], "float32")
    x = np.concatenate([x, x, x[:3]])  # vector chunks and a scalar tail
    with np.errstate(invalid="ignore"):
        want = x.astype(dtype)
    np.testing.assert_array_equal(elementwise(lambda a: a.astype(dtype), x), want)
    for v, w in zip(x[:10], want[:10], strict=True):
        folded = run(
            [np.zeros(1, "float32")], lambda a, i, v=v: te.const(float(v), "float32").astype(dtype)
        )
        assert folded[0] == w, (v, folded[0], w)


def test_integer_constants_round_once_to_float32():
    # 2**60 + 2**36 + 1 rounded to double first and then to float32 lands one ulp below the
    # direct rounding, which the generated code's conversion (and NumPy) gives
    for v, dtype in [(2**60 + 2**36 + 1, "int64"), (2**64 - 2**36 - 1, "uint64")]:
        want = np.array([v], dtype).astype("float32")
        got = run(
            [np.zeros(1, "float32")],
            lambda a, i, v=v, dtype=dtype: te.const(v, dtype).astype("float32"),
        )
        np.testing.assert_array_equal(got, want)
        runtime = elementwise(lambda a: a.astype("float32"), np.array([v], dtype))
        np.testing.assert_array_equal(runtime, want)


def test_select_and_if_then_else_guard_reads():
    a = RNG.uniform(-1, 1, 33).astype("float32")
    n = a.shape[0]
    shifted = run([a], lambda A, i: te.if_then_else(i > 0, A[i - 1], 0.0))
    np.testing.assert_array_equal(shifted, np.concatenate([[0.0], a[:-1]]).astype("float32"))
    padded = run(
        [a],
        lambda A, i: te.if_then_else(te.all(i >= 2, i < n + 2), A[i - 2], -1.0),
        shape=(n + 4,),
    )
    np.testing.assert_array_equal(padded, np.pad(a, 2, constant_values=-1))
    relu = elementwise(lambda x: te.select(x > 0, x, 0.0), a)
    np.testing.assert_array_equal(relu, np.maximum(a, 0))
    clipped = elementwise(lambda x: te.max(te.min(x, 0.5), -0.5), a)
    np.testing.assert_array_equal(clipped, np.clip(a, -0.5, 0.5))


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_reductions_with_where(kind, dtype):
    if dtype == "float32":
        a = RNG.uniform(0.5, 1.5, (6, 9)).astype(dtype)
    else:
        a = RNG.integers(-3, 4, (6, 9)).astype(dtype)
    A = te.placeholder(a.shape, dtype=dtype, name="A")
    k = te.reduce_axis((0, 9), name="k")
    red = getattr(te, kind)
    C = te.compute((6,), lambda i: red(A[i, k], axis=k, where=k % 3 != 1), name="C")
    out = np.empty(6, dtype)
    build(create_schedule(C.op), [A, C])(a, out)
    mask = np.arange(9) % 3 != 1
    ref = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[kind](a[:, mask], axis=1)
    np.testing.assert_allclose(out, ref.astype(dtype), rtol=1e-6)


def test_empty_reductions_give_the_identity():
    A = te.placeholder((3, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    # max over nothing is -inf on floats (its identity, as for NumPy's maximum.reduce with
    # initial=-inf), min +inf
    identities = [(te.max, -np.inf), (te.min, np.inf), (te.sum, 0.0), (te.prod, 1.0)]
    for red, identity in identities:
        C = te.compute((3,), lambda i, red=red: red(A[i, k], axis=k, where=k > 10), name="C")
        out = np.zeros(3, "float32")
        build(create_schedule(C.op), [A, C])(np.ones((3, 4), "float32"), out)
        np.testing.assert_array_equal(out, np.full(3, identity, "float32"))


def test_multi_axis_reduction_and_multiple_outputs():
    a = RNG.uniform(-1, 1, (4, 5, 6)).astype("float64")
    A = te.placeholder(a.shape, dtype="float64", name="A")
    j, k = te.reduce_axis((0, 5), name="j"), te.reduce_axis((0, 6), name="k")
    S = te.compute((4,), lambda i: te.sum(A[i, j, k] * A[i, j, k], axis=[j, k]), name="S")
    out = np.empty(4)
    build(create_schedule(S.op), [A, S])(a, out)
    np.testing.assert_allclose(out, (a * a).sum(axis=(1, 2)), rtol=1e-12)
    P, Q = te.compute((4, 5, 6), lambda *i: (A[i] + 1.0, A[i] * 2.0), name="PQ")
    p, q = np.empty_like(a), np.empty_like(a)
    build(create_schedule(P.op), [A, P, Q])(a, p, q)
    np.testing.assert_array_equal(p, a + 1.0)
    np.testing.assert_array_equal(q, a * 2.0)


# --- random expression trees --------------------------------------------------------------------

FLOAT_OPS = ["add", "sub", "mul", "div", "max", "min", "select", "tanh", "sqrt_abs", "neg"]


@st.composite
def float_trees(draw, depth=3):
    """(te builder, NumPy evaluator) pairs over leaves A, B and constants."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        leaf = draw(st.sampled_from(["A", "B", "const"]))
        if leaf == "const":
            c = draw(st.floats(-4, 4, allow_nan=False, width=32))
            return (lambda A, B, i: c), (lambda a, b: np.float32(c))
        if leaf == "A":
            return (lambda A, B, i: A[i]), (lambda a, b: a)
        return (lambda A, B, i: B[i]), (lambda a, b: b)
    op = draw(st.sampled_from(FLOAT_OPS))
    (fx, nx), (fy, ny) = draw(float_trees(depth - 1)), draw(float_trees(depth - 1))

    def te_fn(A, B, i):
        x, y = fx(A, B, i), fy(A, B, i)
        if not isinstance(x, te.Expr) and not isinstance(y, te.Expr):
            x = te.const(x, "float32")
        if op == "add":
            return x + y
        if op == "sub":
            return x - y
        if op == "mul":
            return x * y
        if op == "div":  # a denominator of at least 1 in magnitude
            return x / (te.abs(te.const(0.0, "float32") + y) + 1.0)
        if op == "max":
            return te.max(x, y)
        if op == "min":
            return te.min(x, y)
        if op == "select":
            return te.select(x > y, x, y * 0.5)
        if op == "tanh":
            return te.tanh(te.const(0.0, "float32") + x)
        if op == "sqrt_abs":
            return te.sqrt(te.abs(te.const(0.0, "float32") + x))
        return -(te.const(0.0, "float32") + x)

    def np_fn(a, b):
        x, y = nx(a, b), ny(a, b)
        with np.errstate(all="ignore"):
            return {
                "add": lambda: x + y,
                "sub": lambda: x - y,
                "mul": lambda: x * y,
                "div": lambda: x / (np.abs(y) + np.float32(1)),
                "max": lambda: np.maximum(x, y),
                "min": lambda: np.minimum(x, y),
                "select": lambda: np.where(x > y, x, y * np.float32(0.5)),
                "tanh": lambda: np.tanh(x),
                "sqrt_abs": lambda: np.sqrt(np.abs(x)),
                "neg": lambda: -x,
            }[op]().astype("float32")

    return te_fn, np_fn


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=float_trees(), seed=st.integers(0, 2**16))
def test_random_float_expressions_match_numpy(tree, seed):
    te_fn, np_fn = tree
    rng = np.random.default_rng(seed)
    a = rng.uniform(-3, 3, 37).astype("float32")
    b = rng.uniform(-3, 3, 37).astype("float32")
    got = run([a, b], lambda A, B, i: te.const(0.0, "float32") + te_fn(A, B, i))
    want = np.broadcast_to(np_fn(a, b), a.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@st.composite
def int_trees(draw, depth=3):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        leaf = draw(st.sampled_from(["A", "B", "const"]))
        if leaf == "const":
            c = draw(st.integers(-20, 20))
            return (lambda A, B, i: c), (lambda a, b: np.int32(c))
        if leaf == "A":
            return (lambda A, B, i: A[i]), (lambda a, b: a)
        return (lambda A, B, i: B[i]), (lambda a, b: b)
    op = draw(
        st.sampled_from(["add", "sub", "mul", "floordiv", "floormod", "max", "min", "select"])
    )
    (fx, nx), (fy, ny) = draw(int_trees(depth - 1)), draw(int_trees(depth - 1))
    divisor = draw(st.integers(1, 7)) * draw(st.sampled_from([-1, 1]))

    def te_fn(A, B, i):
        x, y = te.convert(fx(A, B, i)), fy(A, B, i)
        return {
            "add": lambda: x + y,
            "sub": lambda: x - y,
            "mul": lambda: x * y,
            "floordiv": lambda: x // divisor,
            "floormod": lambda: x % divisor,
            "max": lambda: te.max(x, y),
            "min": lambda: te.min(x, y),
            "select": lambda: te.select(x < y, x, y + 1),
        }[op]()

    def np_fn(a, b):
        x, y = nx(a, b), ny(a, b)
        with np.errstate(all="ignore"):
            return {
                "add": lambda: x + y,
                "sub": lambda: x - y,
                "mul": lambda: x * y,
                "floordiv": lambda: x // np.int32(divisor),
                "floormod": lambda: x % np.int32(divisor),
                "max": lambda: np.maximum(x, y),
                "min": lambda: np.minimum(x, y),
                "select": lambda: np.where(x < y, x, y + np.int32(1)),
            }[op]()

    return te_fn, np_fn


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=int_trees(), seed=st.integers(0, 2**16))
def test_random_integer_expressions_match_numpy(tree, seed):
    te_fn, np_fn = tree
    rng = np.random.default_rng(seed)
    a = rng.integers(-100, 100, 41).astype("int32")
    b = rng.integers(-100, 100, 41).astype("int32")
    got = run([a, b], lambda A, B, i: te.convert(0) + te_fn(A, B, i))
    want = np.broadcast_to(np.asarray(np_fn(a, b), dtype="int32"), a.shape)
    np.testing.assert_array_equal(got, want)
