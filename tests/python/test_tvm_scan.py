"""TVM's scan tutorial and scan groups (issue 10): stages between a scan's state placeholder and
its update (reductions included) run inside the scan's time loop, as in TVM. Values are checked
against NumPy recurrences."""

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import te

RNG = np.random.default_rng(11)


def numpy_rnn(x, w, act=np.tanh):
    ref = x.copy()
    for t in range(1, x.shape[0]):
        ref[t] = act(w @ ref[t - 1]) + x[t]
    return ref


def rnn(m, n, with_act=True):
    X = te.placeholder((m, n), name="X")
    W = te.placeholder((n, n), name="W")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    k = te.reduce_axis((0, n), name="k")
    h2h = te.compute((m, n), lambda t, i: te.sum(state[t - 1, k] * W[i, k], axis=k), name="h2h")
    act = te.compute((m, n), lambda t, i: te.tanh(h2h[t, i]), name="act") if with_act else h2h
    update = te.compute((m, n), lambda t, i: act[t, i] + X[t, i], name="update")
    scan = te.scan(init, update, state, inputs=[X], name="rnn")
    return X, W, h2h, act, update, scan


def test_tutorial_multi_stage_scan_cell_with_compute_at():
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update_s1 = te.compute((m, n), lambda t, i: s_state[t - 1, i] * 2, name="s1")
    s_update_s2 = te.compute((m, n), lambda t, i: s_update_s1[t, i] + X[t, i], name="s2")
    s_scan = tvm.te.scan(s_init, s_update_s2, s_state, inputs=[X])
    s = te.create_schedule(s_scan.op)
    xo, _ = s[s_update_s2].split(s_update_s2.op.axis[1], factor=32)
    s[s_update_s1].compute_at(s[s_update_s2], xo)
    # s1 reads step t - 1: it runs from the first step the update computes
    assert "(t >= 1)" in str(tvm.lower(s, [X, s_scan]))
    x = RNG.random((7, 45)).astype("float32")
    out = np.zeros_like(x)
    tvm.build(s, [X, s_scan])(x, out)
    ref = x.copy()
    for t in range(1, 7):
        ref[t] = ref[t - 1] * 2 + x[t]
    tvm.testing.assert_allclose(out, ref, rtol=1e-6)


def test_tutorial_multiple_states():
    m, n = te.var("m"), te.var("n")
    l = m  # the tutorial's name
    X = te.placeholder((m, n), name="X")
    s_state1 = te.placeholder((m, n))
    s_state2 = te.placeholder((m, l))
    s_init1 = te.compute((1, n), lambda _, i: X[0, i])
    s_init2 = te.compute((1, l), lambda _, i: te.const(0.0, "float32"))
    s_update1 = te.compute((m, n), lambda t, i: s_state1[t - 1, i] + X[t, i])
    s_update2 = te.compute((m, l), lambda t, i: s_state2[t - 1, i] + s_state1[t - 1, 0])
    s_scan1, s_scan2 = tvm.te.scan([s_init1, s_init2], [s_update1, s_update2], [s_state1, s_state2])
    s = te.create_schedule(s_scan1.op)
    f = tvm.build(s, [X, s_scan1, s_scan2])
    x = RNG.random((6, 6)).astype("float32")
    o1, o2 = np.zeros_like(x), np.zeros_like(x)
    f(x, o1, o2)
    r1, r2 = x.copy(), np.zeros_like(x)
    for t in range(1, 6):
        r1[t] = r1[t - 1] + x[t]
        r2[t] = r2[t - 1] + r1[t - 1, 0]
    tvm.testing.assert_allclose(o1, r1, rtol=1e-6)
    tvm.testing.assert_allclose(o2, r2, rtol=1e-6)


def test_scan_axis_is_the_time_axis():
    X, _, _, _, update, scan = rnn(4, 3)
    assert scan.op.scan_axis.var.name == "t"
    assert scan.op.scan_axis == update.op.axis[0]
    with pytest.raises(AttributeError, match="not a scan"):
        _ = X.op.scan_axis


@pytest.mark.parametrize("m,n", [(1, 3), (6, 8), (9, 17)])
def test_reduction_between_state_and_update_default_schedule(m, n):
    X, W, h2h, act, _, scan = rnn(m, n)
    s = te.create_schedule(scan.op)
    # TVM's scan group: each stage at the outermost loop of its consumer, ending in the time loop
    assert s[act].attach_ivar == scan.op.scan_axis and s[h2h].attach_ivar is not None
    x = RNG.random((m, n)).astype("float32")
    w = (RNG.random((n, n)) / n).astype("float32")
    out = np.zeros_like(x)
    tvm.build(s, [X, W, scan])(x, w, out)
    tvm.testing.assert_allclose(out, numpy_rnn(x, w), rtol=1e-5, atol=1e-6)


def test_scan_group_scheduled_by_hand():
    X, W, h2h, act, update, scan = rnn(7, 12)
    x = RNG.random((7, 12)).astype("float32")
    w = (RNG.random((12, 12)) / 12).astype("float32")
    ref = numpy_rnn(x, w)
    for variant in ("inline_at_time", "at_inner_tile", "parallel"):
        s = te.create_schedule(scan.op)
        s[act].compute_inline()
        if variant == "at_inner_tile":
            xo, _ = s[update].split(update.op.axis[1], factor=4)
            s[h2h].compute_at(s[update], xo)
        else:
            s[h2h].compute_at(s[update], scan.op.scan_axis)
        if variant == "parallel":
            s[update].parallel(update.op.axis[1])
            s[h2h].parallel(h2h.op.axis[1])
        out = np.zeros_like(x)
        tvm.build(s, [X, W, scan])(x, w, out)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6, err_msg=variant)


def test_scan_feeding_a_consumer_with_a_group():
    X, W, _, _, _, scan = rnn(5, 6, with_act=False)
    Y = te.compute((5, 6), lambda t, i: scan[t, i] * 2.0, name="Y")
    x = RNG.random((5, 6)).astype("float32")
    w = (RNG.random((6, 6)) / 6).astype("float32")
    out = np.zeros_like(x)
    tvm.build(te.create_schedule(Y.op), [X, W, Y])(x, w, out)
    tvm.testing.assert_allclose(out, 2 * numpy_rnn(x, w, act=lambda v: v), rtol=1e-5)


def test_reduction_update():
    m, n = 6, 5
    X = te.placeholder((m, n), name="X")
    W = te.placeholder((n, n), name="W")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    k = te.reduce_axis((0, n), name="k")
    update = te.compute((m, n), lambda t, i: te.sum(state[t - 1, k] * W[i, k], axis=k))
    scan = te.scan(init, update, state)
    s = te.create_schedule(scan.op)
    s[update].vectorize(update.op.axis[1])
    x = RNG.random((m, n)).astype("float32")
    w = (RNG.random((n, n)) / n).astype("float32")
    out = np.zeros_like(x)
    tvm.build(s, [X, W, scan])(x, w, out)
    ref = x.copy()
    for t in range(1, m):
        ref[t] = w @ ref[t - 1]
    tvm.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-7)


def test_group_stage_outside_the_time_loop_is_refused_by_name():
    X, W, h2h, _, _, scan = rnn(4, 3)
    s = te.create_schedule(scan.op)
    s[h2h].compute_root()
    with pytest.raises(tvm.error.TVMValueError, match="'h2h' reads the state of scan 'rnn'"):
        tvm.build(s, [X, W, scan])
