"""te.comm_reducer: user-defined reducers and tuple reductions (argmax/argmin), against NumPy,
with the default schedule, split/reorder schedules and rfactor."""

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import te

RNG = np.random.default_rng(3)


def argmax_reducer():
    def fcombine(x, y):
        keep = x[1] >= y[1]
        return te.select(keep, x[0], y[0]), te.select(keep, x[1], y[1])

    return te.comm_reducer(fcombine, lambda ti, tv: (te.const(-1, ti), te.min_value(tv)), "argmax")


def argmax_compute(m, n, dtype="float32"):
    A = te.placeholder((m, n), dtype=dtype, name="A")
    k = te.reduce_axis((0, n), name="k")
    idx, val = te.compute((m,), lambda i: argmax_reducer()((k.var, A[i, k]), axis=k), name="T")
    return A, idx, val


def run_argmax(s, A, idx, val, a):
    f = tvm.build(s, [A, idx, val])
    i = np.zeros(a.shape[0], "int32")
    v = np.zeros(a.shape[0], a.dtype)
    f(a, i, v)
    return i, v


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_argmax_default_schedule(dtype):
    A, idx, val = argmax_compute(7, 13, dtype)
    a = RNG.integers(-50, 50, size=(7, 13)).astype(dtype)  # ties: the first index wins
    i, v = run_argmax(tvm.create_schedule(idx.op), A, idx, val, a)
    np.testing.assert_array_equal(i, a.argmax(axis=1))
    np.testing.assert_array_equal(v, a.max(axis=1))


def test_argmax_with_symbolic_sizes_split_and_reorder():
    m, n = te.var("m"), te.var("n")
    A, idx, val = argmax_compute(m, n)
    s = tvm.create_schedule(idx.op)
    ko, ki = s[idx].split(idx.op.reduce_axis[0], factor=4)
    io, ii = s[idx].split(idx.op.axis[0], factor=2)
    s[idx].reorder(io, ko, ii, ki)
    for shape in [(5, 9), (8, 16), (1, 1)]:
        a = RNG.standard_normal(shape).astype("float32")
        i, v = run_argmax(s, A, idx, val, a)
        np.testing.assert_array_equal(i, a.argmax(axis=1))
        np.testing.assert_array_equal(v, a.max(axis=1))


def test_argmax_rfactor():
    A, idx, val = argmax_compute(6, 32)
    s = tvm.create_schedule(idx.op)
    _, ki = s[idx].split(idx.op.reduce_axis[0], factor=8)
    s.rfactor(idx, ki)
    a = RNG.standard_normal((6, 32)).astype("float32")
    i, v = run_argmax(s, A, idx, val, a)
    np.testing.assert_array_equal(i, a.argmax(axis=1))
    np.testing.assert_array_equal(v, a.max(axis=1))


def test_argmin_with_a_where_condition():
    def fcombine(x, y):
        keep = x[1] <= y[1]
        return te.select(keep, x[0], y[0]), te.select(keep, x[1], y[1])

    argmin = te.comm_reducer(fcombine, lambda ti, tv: (-1, te.max_value(tv)), name="argmin")
    A = te.placeholder((4, 10), name="A")
    k = te.reduce_axis((0, 10), name="k")
    # Only even columns take part.
    idx, val = te.compute((4,), lambda i: argmin((k.var, A[i, k]), axis=k, where=k % 2 == 0))
    a = RNG.standard_normal((4, 10)).astype("float32")
    i, v = run_argmax(tvm.create_schedule(idx.op), A, idx, val, a)
    np.testing.assert_array_equal(i, 2 * a[:, ::2].argmin(axis=1))
    np.testing.assert_array_equal(v, a[:, ::2].min(axis=1))


def test_user_defined_scalar_reducers():
    # A product as TVM's tutorial writes one, and a sum of squares' accumulator (x + y*y is not
    # commutative as a combiner, so use max(|x|, |y|): an L-infinity norm).
    mysum = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, dtype=t), name="myprod")
    linf = te.comm_reducer(lambda x, y: te.max(te.abs(x), te.abs(y)), lambda t: 0.0, name="linf")
    n = te.var("n")
    A = te.placeholder((3, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    P = te.compute((3,), lambda i: mysum(A[i, k], axis=k), name="P")
    L = te.compute((3,), lambda i: linf(A[i, k], axis=k), name="L")
    a = RNG.uniform(-2, 2, size=(3, 6)).astype("float32")
    s = tvm.create_schedule([P.op, L.op])
    f = tvm.build(s, [A, P, L])
    p, l = np.zeros(3, "float32"), np.zeros(3, "float32")
    f(a, p, l)
    np.testing.assert_allclose(p, a.prod(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(l, np.abs(a).max(axis=1))


def test_reducer_errors():
    red = argmax_reducer()
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    with pytest.raises(ValueError, match="every value of reducer 'argmax'"):
        te.compute((4,), lambda i: red((k.var, A[i, k]), axis=k)[1])
    with pytest.raises(TypeError, match="axis="):
        red((k.var, A[0, k]))
    bad = te.comm_reducer(lambda x, y: x + y, lambda t: te.const(0, "int32"), name="bad")
    with pytest.raises(TypeError, match="identity of reducer 'bad'"):
        te.compute((4,), lambda i: bad(A[i, k], axis=k))
    with pytest.raises(ValueError, match="returned 1 value"):
        te.compute(
            (4,),
            lambda i: te.comm_reducer(lambda x, y: x[0], lambda a, b: (0, 0))(
                (k.var, A[i, k]), axis=k
            ),
        )
    with pytest.raises(TypeError, match="two callables"):
        te.comm_reducer(None, lambda t: 0)
