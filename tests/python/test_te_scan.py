"""te.scan: cumulative sums and recurrent state updates, against NumPy, with the default
schedule and with the update's loops scheduled."""

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import te

RNG = np.random.default_rng(5)


def cumsum_scan():
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n), name="state")
    s_init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i], name="update")
    return X, s_update, te.scan(s_init, s_update, s_state, inputs=[X], name="cumsum")


@pytest.mark.parametrize("shape", [(1, 3), (5, 4), (40, 17)])
def test_cumsum_default_schedule(shape):
    X, _, res = cumsum_scan()
    f = tvm.build(tvm.create_schedule(res.op), [X, res])
    x = RNG.standard_normal(shape).astype("float32")
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_allclose(out, np.cumsum(x, axis=0), rtol=1e-5, atol=1e-5)


def test_cumsum_with_the_update_scheduled():
    X, update, res = cumsum_scan()
    s = tvm.create_schedule(res.op)
    _, xi = s[update].split(update.op.axis[1], factor=8)
    s[update].vectorize(xi)
    f = tvm.build(s, [X, res])
    x = RNG.standard_normal((9, 21)).astype("float32")
    out = np.zeros_like(x)
    f(x, out)
    np.testing.assert_allclose(out, np.cumsum(x, axis=0), rtol=1e-5, atol=1e-5)


def test_the_time_axis_must_stay_outermost():
    X, update, res = cumsum_scan()
    s = tvm.create_schedule(res.op)
    s[update].reorder(update.op.axis[1], update.op.axis[0])
    with pytest.raises(ValueError, match="time axis"):
        tvm.build(s, [X, res])


def test_recurrent_state_update_with_two_states_and_a_longer_init():
    # h[t] = tanh(w * h[t-1] + x[t]) and c[t] = c[t-2] + h[t-1], with two initial steps.
    T, n = 12, 5
    X = te.placeholder((T, n), name="X", dtype="float64")
    W = te.placeholder((n,), name="W", dtype="float64")
    h_state = te.placeholder((T, n), dtype="float64", name="h")
    c_state = te.placeholder((T, n), dtype="float64", name="c")
    h_init = te.compute((2, n), lambda t, i: X[t, i], name="h_init")
    c_init = te.compute((2, n), lambda t, i: t.astype("float64"), name="c_init")
    h_up = te.compute((T, n), lambda t, i: te.tanh(W[i] * h_state[t - 1, i] + X[t, i]), name="hu")
    c_up = te.compute((T, n), lambda t, i: c_state[t - 2, i] + h_state[t - 1, i], name="cu")
    h, c = te.scan([h_init, c_init], [h_up, c_up], [h_state, c_state], name="rnn")
    f = tvm.build(tvm.create_schedule(h.op), [X, W, h, c])
    x, w = RNG.standard_normal((T, n)), RNG.standard_normal(n)
    ho, co = np.zeros((T, n)), np.zeros((T, n))
    f(x, w, ho, co)
    eh, ec = np.zeros((T, n)), np.zeros((T, n))
    eh[:2] = x[:2]
    ec[1] = 1.0
    for t in range(2, T):
        eh[t] = np.tanh(w * eh[t - 1] + x[t])
        ec[t] = ec[t - 2] + eh[t - 1]
    np.testing.assert_allclose(ho, eh, rtol=1e-12)
    np.testing.assert_allclose(co, ec, rtol=1e-12)


def test_scan_feeding_a_compute():
    X, _, res = cumsum_scan()
    last = te.compute((X.shape[1],), lambda i: res[X.shape[0] - 1, i] * 2.0, name="last")
    f = tvm.build(tvm.create_schedule(last.op), [X, last])
    x = RNG.standard_normal((6, 3)).astype("float32")
    out = np.zeros(3, "float32")
    f(x, out)
    np.testing.assert_allclose(out, 2 * x.sum(axis=0), rtol=1e-5)


@pytest.mark.parametrize("shape", [(1, 3), (40, 17), (257, 300)])
def test_auto_schedule_leaves_the_time_loop_outermost(shape):
    """The automatic schedule computes a scan at root as it is (its time loop outermost and
    serial), as an output and read by other stages (a transposed input before it, a transpose
    and a product after it, which it inlines); it tried to inline the scan, or to fuse and
    parallelise its time loop as an elementwise stage's."""
    X, _, res = cumsum_scan()
    twice = te.compute(
        (X.shape[1], X.shape[0]), lambda i, t: res[t, i] * 2.0, name="twice", tag="injective"
    )
    x = RNG.standard_normal(shape).astype("float32")
    for out, want in ((res, np.cumsum(x, 0)), (twice, 2 * np.cumsum(x, 0).T)):
        f = tvm.build(tvm.auto_schedule(out), [X, out])
        got = np.zeros(want.shape, "float32")
        f(x, got)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_scan_errors():
    n = 4
    X = te.placeholder((n, 3), name="X")
    state = te.placeholder((n, 3), name="s")
    init = te.compute((1, 3), lambda _, i: X[0, i])
    update = te.compute((n, 3), lambda t, i: state[t - 1, i] + X[t, i])
    with pytest.raises(TypeError, match="must be a placeholder"):
        te.scan(init, update, init)
    wide = te.placeholder((n, 5), name="w")
    with pytest.raises(ValueError, match="dimension 1"):
        te.scan(init, update, wide)
    k = te.reduce_axis((0, 3), name="k")
    red = te.compute((n, 3), lambda t, i: te.sum(state[t - 1, k], axis=k))
    # a reduction update is supported (TVM allows it): it runs as a stage in the time loop
    scan = te.scan(init, red, state)
    x = RNG.random((n, 3)).astype("float32")
    out = np.zeros_like(x)
    tvm.build(te.create_schedule(scan.op), [X, scan])(x, out)
    ref = x.copy()
    for t in range(1, n):
        ref[t] = ref[t - 1].sum()
    np.testing.assert_allclose(out, ref, rtol=1e-5)
