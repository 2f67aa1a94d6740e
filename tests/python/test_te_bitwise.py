"""Integer bitwise operators (& | ^ ~ << >>, te.bitwise_*, te.shift_*, topi's), compiled and run,
compared with NumPy: scalar and vectorised loops, every integer width, shift amounts in range,
past the bit width and negative, bool operands (still logical) and the errors for floats."""

import numpy as np
import pytest

import pytvmbridge as tvm
import pytvmbridge.te as te
from pytvmbridge import topi
from pytvmbridge.build import build
from pytvmbridge.schedule import create_schedule

DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"]
N = 64  # a multiple of every vector width used below
RNG = np.random.default_rng(7)


def bits(dtype):
    return np.dtype(dtype).itemsize * 8


def values(dtype, n=N):
    """Random values of the whole range, with the extremes and small numbers among them."""
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    special = [info.min, info.max, 0, 1, 2, 5, info.max // 3]
    if info.min < 0:
        special += [-1, -2, -7]
    x[: len(special)] = np.array(special, dtype=dtype)
    return x


def shift_amounts(dtype, n=N):
    """Every amount from 0 to bits + 2, and negative ones (for unsigned dtypes: the huge values
    a negative amount wraps to), repeated to n."""
    w = bits(dtype)
    amounts = list(range(w + 3))
    if np.dtype(dtype).kind == "i":
        amounts += [-1, -2, -w, int(np.iinfo(dtype).min)]
    else:
        amounts += [int(np.iinfo(dtype).max), int(np.iinfo(dtype).max) - w]
    return np.resize(np.array(amounts, dtype=dtype), n)


def run(fcompute, inputs, vector_width=None, out_dtype=None, extra_args=(), extra_values=()):
    """C[i] = fcompute(*placeholders, i) over 1-d arrays; with vector_width, the loop is split
    and its inner part vectorised."""
    phs = [te.placeholder((N,), dtype=a.dtype.name, name=f"in{k}") for k, a in enumerate(inputs)]
    C = te.compute((N,), lambda i: fcompute(*phs, *extra_args, i), name="C")
    s = create_schedule(C.op)
    if vector_width:
        _, inner = s[C].split(C.op.axis[0], factor=vector_width)
        s[C].vectorize(inner)
    f = build(s, [*phs, *extra_args, C])
    out = np.empty(N, dtype=out_dtype or C.dtype)
    f(*inputs, *extra_values, out)
    return out


BINARY = {
    "and": (lambda a, b: a & b, np.bitwise_and),
    "or": (lambda a, b: a | b, np.bitwise_or),
    "xor": (lambda a, b: a ^ b, np.bitwise_xor),
    "bitwise_and": (te.bitwise_and, np.bitwise_and),
    "bitwise_or": (te.bitwise_or, np.bitwise_or),
    "bitwise_xor": (te.bitwise_xor, np.bitwise_xor),
    "lshift": (lambda a, b: a << b, np.left_shift),
    "rshift": (lambda a, b: a >> b, np.right_shift),
    "shift_left": (te.shift_left, np.left_shift),
    "shift_right": (te.shift_right, np.right_shift),
}
SHIFTS = {"lshift", "rshift", "shift_left", "shift_right"}


@pytest.mark.parametrize("vector_width", [None, 8, 16])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_operators_match_numpy(name, dtype, vector_width):
    op, ref = BINARY[name]
    a = values(dtype)
    b = shift_amounts(dtype) if name in SHIFTS else values(dtype)[::-1].copy()
    got = run(lambda A, B, i: op(A[i], B[i]), [a, b], vector_width)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, ref(a, b))


@pytest.mark.parametrize("vector_width", [None, 16])
@pytest.mark.parametrize("dtype", DTYPES)
def test_not_matches_numpy(dtype, vector_width):
    a = values(dtype)
    np.testing.assert_array_equal(run(lambda A, i: ~A[i], [a], vector_width), np.invert(a))
    np.testing.assert_array_equal(
        run(lambda A, i: te.bitwise_not(A[i]), [a], vector_width), np.invert(a)
    )


def constant_amounts(dtype):
    w = bits(dtype)
    return list(range(w + 3)) + ([-1, -5] if np.dtype(dtype).kind == "i" else [w + 60])


@pytest.mark.parametrize("vector_width", [None, 16])
@pytest.mark.parametrize("dtype", DTYPES)
def test_constant_shift_amounts(dtype, vector_width):
    a = values(dtype)
    for c in constant_amounts(dtype):
        n = np.full(N, c, dtype=dtype)
        left = run(lambda A, i, c=c: A[i] << c, [a], vector_width)
        right = run(lambda A, i, c=c: te.shift_right(A[i], c), [a], vector_width)
        np.testing.assert_array_equal(left, np.left_shift(a, n), err_msg=f"<< {c}")
        np.testing.assert_array_equal(right, np.right_shift(a, n), err_msg=f">> {c}")


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "uint64"])
def test_constant_amount_in_range_is_a_plain_shift(dtype):
    A = te.placeholder((N,), dtype=dtype, name="A")
    for fn, instr in ((lambda x: x << 3, "shl"), (lambda x: x >> 3, "shr")):
        C = te.compute((N,), lambda i, fn=fn: fn(A[i]), name="C")
        ll = build(create_schedule(C.op), [A, C]).get_source("ll")
        assert instr in ll
        assert "select" not in ll, ll


@pytest.mark.parametrize("vector_width", [None, 8])
@pytest.mark.parametrize("dtype", ["int8", "int32", "uint32", "int64", "uint64"])
def test_variable_shift_amount(dtype, vector_width):
    # One amount for every element, known only at run time: read from a one-element tensor (a
    # scalar broadcast across the vector lanes).
    a = values(dtype)
    S = te.placeholder((1,), dtype, name="S")
    for c in constant_amounts(dtype):
        amount = np.array([c]).astype(dtype)  # negative amounts wrap for unsigned dtypes
        left = run(
            lambda A, S, i: A[i] << S[0], [a], vector_width, extra_args=[S], extra_values=[amount]
        )
        right = run(
            lambda A, S, i: A[i] >> S[0], [a], vector_width, extra_args=[S], extra_values=[amount]
        )
        np.testing.assert_array_equal(left, np.left_shift(a, amount[0]), err_msg=f"<< {c}")
        np.testing.assert_array_equal(right, np.right_shift(a, amount[0]), err_msg=f">> {c}")


@pytest.mark.parametrize("dtype", ["int16", "uint8", "int64"])
def test_python_int_operands_take_the_expression_dtype(dtype):
    a = values(dtype)
    t = np.dtype(dtype).type
    cases = {
        "x & 3": (lambda A, i: A[i] & 3, a & t(3)),
        "3 | x": (lambda A, i: 3 | A[i], t(3) | a),
        "x ^ 5": (lambda A, i: A[i] ^ 5, a ^ t(5)),
        "1 << x%8": (lambda A, i: 1 << (A[i] & 7), np.left_shift(t(1), a & t(7))),
        "100 >> x%8": (lambda A, i: 100 >> (A[i] & 7), np.right_shift(t(100), a & t(7))),
    }
    for what, (fn, expected) in cases.items():
        got = run(fn, [a])
        assert got.dtype == np.dtype(dtype), what
        np.testing.assert_array_equal(got, expected, err_msg=what)


def test_constants_fold_and_print():
    i = te.var("i")
    assert str(i & 3) == "(i & 3)"
    assert str(3 | i) == "(3 | i)"
    assert str(i ^ i) == "(i ^ i)"
    assert str(~i) == "~i"
    assert str(1 << i) == "(1 << i)"
    assert str(i >> 2) == "(i >> 2)"
    assert (i << 1).dtype == "int32"
    assert int(te.const(12) & 10) == 8
    assert int(te.const(12) | 10) == 14
    assert int(te.const(12) ^ 10) == 6
    assert int(~te.const(5)) == -6
    assert int(~te.const(5, "uint8")) == 250
    assert int(te.const(1) << 33) == 0
    assert int(te.const(-8) >> 1) == -4
    assert int(te.const(-8) >> 40) == -1
    assert int(te.const(200, "uint8") >> 3) == 25
    assert int(te.bitwise_and(6, 3)) == 2
    assert int(te.shift_left(3, 2)) == 12


def test_names_reexported_like_the_math_functions():
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"):
        assert getattr(tvm.tir, name) is getattr(te, name)
        assert getattr(tvm, name) is getattr(te, name)
    for name in ("shift_left", "shift_right"):
        assert getattr(tvm.tir, name) is getattr(te, name)


def test_bool_operands_stay_logical():
    x = RNG.integers(-3, 3, N).astype("int32")
    y = RNG.integers(-3, 3, N).astype("int32")
    px, py = x > 0, y < 1
    cases = {
        "&": (lambda X, Y, i: (X[i] > 0) & (Y[i] < 1), px & py),
        "|": (lambda X, Y, i: (X[i] > 0) | (Y[i] < 1), px | py),
        "^": (lambda X, Y, i: (X[i] > 0) ^ (Y[i] < 1), px ^ py),
        "~": (lambda X, Y, i: ~(X[i] > 0), ~px),
        "bitwise_and": (lambda X, Y, i: te.bitwise_and(X[i] > 0, Y[i] < 1), px & py),
        "bitwise_xor": (lambda X, Y, i: te.bitwise_xor(X[i] > 0, Y[i] < 1), px ^ py),
        "bitwise_not": (lambda X, Y, i: te.bitwise_not(X[i] > 0), ~px),
    }
    for what, (fn, expected) in cases.items():
        got = run(fn, [x, y])
        assert got.dtype == np.bool_, what
        np.testing.assert_array_equal(got, expected, err_msg=what)
    i = te.var("i")
    assert str((i > 0) & (i < 4)) == "((i > 0) && (i < 4))"
    assert str(~(i > 0)) == "!(i > 0)"
    assert str(te.bitwise_xor(i > 0, i < 4)) == "((i > 0) != (i < 4))"
    A = te.placeholder((N,), "bool", name="A")
    B = te.placeholder((N,), "bool", name="B")
    for op, ref in ((topi.bitwise_and, np.logical_and), (topi.bitwise_or, np.logical_or)):
        C = op(A, B)
        f = build(create_schedule(C.op), [A, B, C])
        out = np.empty(N, "bool")
        f(px, py, out)
        np.testing.assert_array_equal(out, ref(px, py))


def test_floats_are_a_type_error_naming_the_operator_and_dtype():
    x = te.var("x", "float32")
    i = te.var("i")
    cases = {
        "&": lambda: x & 1,
        r"\|": lambda: 1 | x,
        r"\^": lambda: x ^ x,
        "~": lambda: ~x,
        "<<": lambda: x << 1,
        ">>": lambda: i >> x,
        "bitwise_and": lambda: te.bitwise_and(x, 1),
        "shift_right": lambda: te.shift_right(te.var("d", "float64"), 2),
    }
    for what, bad in cases.items():
        with pytest.raises(TypeError, match=rf"{what}.*float(32|64)"):
            bad()
    with pytest.raises(TypeError, match=r"<<.*bool"):
        (i > 0) << 1
    with pytest.raises(TypeError, match="different dtypes: int8 and int32"):
        te.var("a", "int8") & i
    A = te.placeholder((4,), name="A")
    with pytest.raises(TypeError, match=r"\&.*float32"):
        topi.bitwise_and(A, A)
    with pytest.raises(TypeError, match=r"<<.*float32"):
        topi.left_shift(A, 1)
    with pytest.raises(TypeError, match=r"bitwise_not.*float32"):
        topi.bitwise_not(A)


TOPI = {
    "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or,
    "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift,
    "right_shift": np.right_shift,
}


@pytest.mark.parametrize("dtype", ["int8", "int32", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("name", sorted(TOPI))
def test_topi_operators_broadcast_like_numpy(name, dtype):
    ref = TOPI[name]
    shift = name.endswith("shift")
    a = values(dtype, 4 * 1 * 6).reshape(4, 1, 6)
    b = (shift_amounts(dtype, 5 * 6) if shift else values(dtype, 5 * 6)).reshape(5, 6)
    A = te.placeholder(a.shape, dtype, name="A")
    B = te.placeholder(b.shape, dtype, name="B")
    C = getattr(topi, name)(A, B)
    assert C.op.tag == "broadcast" and C.dtype == dtype
    s = create_schedule(C.op)
    s[C].vectorize(C.op.axis[2])
    f = build(s, [A, B, C])
    out = np.empty((4, 5, 6), dtype)
    f(a, b, out)
    np.testing.assert_array_equal(out, ref(a, b))
    # A Python int operand takes the tensor's dtype, on either side.
    for lhs, rhs, expected in (
        (A, 3, ref(a, np.array(3, dtype))),
        (3, A, ref(np.array(3, dtype), a)),
    ):
        D = getattr(topi, name)(lhs, rhs)
        assert D.op.tag == "elemwise" and D.dtype == dtype
        g = build(create_schedule(D.op), [A, D])
        out = np.empty(a.shape, dtype)
        g(a, out)
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int64"])
def test_topi_bitwise_not(dtype):
    a = values(dtype, 24).reshape(4, 6)
    A = te.placeholder(a.shape, dtype, name="A")
    B = topi.bitwise_not(A)
    assert B.op.tag == "elemwise"
    f = build(create_schedule(B.op), [A, B])
    out = np.empty(a.shape, dtype)
    f(a, out)
    np.testing.assert_array_equal(out, np.invert(a))


def test_no_gradient_through_integer_bit_operations():
    # The mask is an integer computation: the gradient flows through the float product only.
    A = te.placeholder((N,), name="A")
    M = te.placeholder((N,), "int32", name="M")
    B = te.compute((N,), lambda i: A[i] * ((M[i] >> 1) & 1).astype("float32"), name="B")
    (dA,) = te.gradient(B, [A])
    f = build(create_schedule(dA.op), [A, M, dA])
    m = np.arange(N, dtype="int32")
    out = np.empty(N, "float32")
    f(np.ones(N, "float32"), m, out)
    np.testing.assert_array_equal(out, ((m >> 1) & 1).astype("float32"))


def test_sizes_made_with_shifts_are_evaluated_and_saved(tmp_path):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n >> 1,), lambda i: A[i << 1] + A[(i << 1) | 1], name="B")
    f = tvm.build(tvm.create_schedule(B.op), [A, B])
    a = np.arange(10, dtype="float32")
    expected = a[0::2] + a[1::2]
    out = np.empty(5, "float32")
    f(a, out)
    np.testing.assert_array_equal(out, expected)
    path = str(tmp_path / "shifted.so")
    f.export_library(path)
    loaded = tvm.runtime.load_module(path)
    out = np.empty(5, "float32")
    loaded(a, out)
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(ValueError, match="n"):
        f(a, np.empty(4, "float32"))  # n >> 1 is 5


def test_shifted_and_masked_indices_get_tight_regions_and_bounds():
    # T[i >> 1] computed at an outer loop of 64 needs 32 elements of T, not all of it
    N = 1 << 12
    A = te.placeholder((N,), name="A")
    T = te.compute((N,), lambda j: te.exp(A[j]), name="T")
    B = te.compute((N,), lambda i: T[i >> 1], name="B")
    s = tvm.create_schedule(B.op)
    outer, _ = s[B].split(B.op.axis[0], factor=64)
    s[T].compute_at(s[B], outer)
    assert "allocate T[float32 * 32]" in str(tvm.lower(s, [A, B]))
    a = np.linspace(-1, 1, N, dtype="float32")
    out = np.empty(N, "float32")
    tvm.build(s, [A, B])(a, out)
    np.testing.assert_allclose(out, np.exp(a)[np.arange(N) >> 1], rtol=1e-6)
    # a read past the end through a shift is refused as the // form is; a mask stays inside
    small = te.placeholder((8,), name="S")
    past = te.compute((20,), lambda i: small[i >> 1], name="past")
    with pytest.raises(ValueError, match=r"reads 'S' in dimension 0 at indices 0\.\.9"):
        tvm.build(tvm.create_schedule(past.op), [small, past])
    masked = te.compute((20,), lambda i: small[i & 7], name="masked")
    out = np.empty(20, "float32")
    tvm.build(tvm.create_schedule(masked.op), [small, masked])(np.arange(8, dtype="float32"), out)
    np.testing.assert_array_equal(out, np.arange(20) & 7)


def test_logical_operators_of_topi_take_bools_only():
    A = te.placeholder((4,), "int32", name="A")
    for op in (topi.logical_and, topi.logical_or, topi.logical_xor):
        with pytest.raises(TypeError, match=r"needs bool operands, found int32"):
            op(A, A)
    P, Q = te.placeholder((4,), "bool", name="P"), te.placeholder((4,), "bool", name="Q")
    p, q = np.array([1, 1, 0, 0], bool), np.array([1, 0, 1, 0], bool)
    for op, ref in ((topi.logical_and, np.logical_and), (topi.logical_or, np.logical_or)):
        C = op(P, Q)
        out = np.empty(4, bool)
        tvm.build(tvm.create_schedule(C.op), [P, Q, C])(p, q, out)
        np.testing.assert_array_equal(out, ref(p, q))
