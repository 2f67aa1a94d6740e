"""auto_schedule on reductions with a user-defined combiner (te.comm_reducer): argmax over
(index, value) pairs and a custom single-value reducer, against PyTorch and NumPy. The rule
(csrc/autoschedule/rule_tuple_reduction.cc) reduces the contiguous axis in vector lanes through
rfactor and combines the lanes as a tree, so these check NaN, +-inf, ties, odd and size-1 axes
through every piece of that schedule, and the lower() printout where the decision shows."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import te


def argmax_reducer() -> te.CommReducer:
    """torch.argmax's rule as a commutative combiner: a NaN beats everything (the first NaN
    wins), otherwise the larger value, the smaller index among equals."""

    def fcombine(x, y):
        i, v = x
        j, w = y
        first = j < i
        take = (w > v) | ((w == v) & first)
        if str(v.dtype).startswith("float"):
            keep_nan = te.isnan(v) == te.const(False, "bool")
            take = take | (te.isnan(w) & (keep_nan | first))
        return te.select(take, j, i), te.select(take, w, v)

    def fidentity(ti, tv):
        low = te.const(float("-inf"), tv) if tv.startswith("float") else te.min_value(tv)
        return te.max_value(ti), low

    return te.comm_reducer(fcombine, fidentity, "argmax")


def argmax_last_axis(shape, dtype="float32"):
    A = te.placeholder(shape, dtype=dtype, name="A")
    k = te.reduce_axis((0, shape[-1]), name="k")
    red = argmax_reducer()
    idx, val = te.compute(shape[:-1], lambda *i: red((k.var, A[(*i, k)]), axis=k), name="T")
    return A, idx, val


def special_rows(shape, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dtype)
    if dtype.startswith("int"):
        return rng.integers(-5, 5, size=shape).astype(dtype)  # many ties
    rows = a.reshape(-1, shape[-1])
    n, w = rows.shape
    if n >= 8 and w >= 3:
        rows[0, w // 2] = np.nan  # a NaN wins
        rows[1, 1] = rows[1, w - 1] = np.nan  # the first NaN
        rows[2, :] = -np.inf  # only -inf: index 0
        rows[3, :] = 1.0  # all equal: index 0
        rows[4, w - 1] = np.inf
        rows[5, 0] = rows[5, w - 1] = 9.0  # a tie between the ends
        rows[6, :] = -0.0
        rows[6, w - 1] = 0.0  # -0 == +0: index 0
        rows[7, 2] = np.inf
        rows[7, 0] = np.nan  # NaN before +inf
    return a


def run(s, args, a):
    f = tvm.build(s, list(args))
    outs = [np.zeros([int(d) for d in t.shape], t.dtype) for t in args[1:]]
    f(a, *outs)
    return outs


@pytest.mark.parametrize(
    "shape",
    [(1, 128, 768), (3, 8, 37), (8, 1), (16, 2), (9, 256), (8, 64)],
)
def test_argmax_tuple_reduction_matches_torch(shape):
    A, idx, val = argmax_last_axis(shape)
    a = special_rows(shape)
    i, v = run(tvm.auto_schedule([idx.op]), [A, idx, val], a)
    ref = torch.from_numpy(a).argmax(-1).numpy()
    np.testing.assert_array_equal(i, ref)
    np.testing.assert_array_equal(v, np.max(a, axis=-1))  # NaN where the row has one


def test_argmax_tuple_reduction_int_ties():
    shape = (12, 100)
    A, idx, val = argmax_last_axis(shape, "int32")
    a = special_rows(shape, "int32")
    i, v = run(tvm.auto_schedule([idx.op]), [A, idx, val], a)
    np.testing.assert_array_equal(i, a.argmax(-1))  # NumPy: the first of equal maxima
    np.testing.assert_array_equal(v, a.max(-1))


def test_argmax_tuple_reduction_is_vectorized():
    A, idx, val = argmax_last_axis((1, 128, 768))
    space = tvm.auto_schedule_space([idx.op])
    assert space["rules"]["T"] == "reduction"
    assert space["rules"]["T.rf"] == "reduction_lanes"
    assert space["default"]["T"]["tuple_reduction"] == 1
    text = str(tvm.lower(tvm.auto_schedule([idx.op]), [A, idx, val]))
    # Both running vectors (the indices and the values) are updated 16 lanes at a time.
    assert "T.rf.v0[ramp(" in text and "T.rf.v1[ramp(" in text
    assert "parallel" in text


def test_argmax_tuple_reduction_knob_off_and_symbolic_stay_default():
    A, idx, val = argmax_last_axis((4, 64))
    space = tvm.auto_schedule_space([idx.op], config={"T": {"tuple_reduction": 0}})
    assert space["rules"]["T"] == "default"
    a = special_rows((8, 64))
    A, idx, val = argmax_last_axis((8, 64))
    s = tvm.auto_schedule([idx.op], config={"T": {"tuple_reduction": 0}})
    i, _ = run(s, [A, idx, val], a)
    np.testing.assert_array_equal(i, torch.from_numpy(a).argmax(-1).numpy())

    n = tvm.var("n")
    A = te.placeholder((4, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    idx, val = te.compute((4,), lambda r: argmax_reducer()((k.var, A[r, k]), axis=k), name="T")
    assert tvm.auto_schedule_space([idx.op])["rules"]["T"] == "default"
    a = special_rows((4, 50))
    i, _ = run(tvm.auto_schedule([idx.op]), [A, idx, val], a)
    np.testing.assert_array_equal(i, torch.from_numpy(a).argmax(-1).numpy())


def test_argmax_tuple_reduction_outer_axis():
    # The reduced axis is not the contiguous one: the reduce loop goes outside the rows.
    A = te.placeholder((4, 33, 48), name="A")
    k = te.reduce_axis((0, 33), name="k")
    idx, val = te.compute(
        (4, 48), lambda b, c: argmax_reducer()((k.var, A[b, k, c]), axis=k), name="T"
    )
    a = special_rows((4, 33, 48), seed=1)
    a[0, 5, 3] = np.nan
    a[1, :, 7] = -np.inf
    a[2, 3, 9] = a[2, 30, 9] = 50.0
    i, v = run(tvm.auto_schedule([idx.op]), [A, idx, val], a)
    np.testing.assert_array_equal(i, torch.from_numpy(a).argmax(1).numpy())
    np.testing.assert_array_equal(v, np.max(a, axis=1))


def test_argmax_tuple_reduction_whole_tensor():
    # No data axis: the reduction is split into parallel parts (rfactor), then combined.
    A = te.placeholder((4096,), name="A")
    k = te.reduce_axis((0, 4096), name="k")
    idx, val = te.compute((), lambda: argmax_reducer()((k.var, A[k]), axis=k), name="T")
    rules = tvm.auto_schedule_space([idx.op])["rules"]
    assert "T.rf" in rules
    rng = np.random.default_rng(2)
    for case in range(3):
        a = rng.standard_normal(4096).astype("float32")
        a[[100, 3000]] = 7.0  # a tie across two parts
        if case == 1:
            a[[2500, 3900]] = np.nan
        if case == 2:
            a[:] = -np.inf
        i, v = run(tvm.auto_schedule([idx.op]), [A, idx, val], a)
        assert int(i) == int(torch.from_numpy(a).argmax())
        np.testing.assert_array_equal(v, np.max(a))


def test_custom_single_value_reducer():
    # A user-defined sum of absolute values: one value, a custom combiner.
    abs_sum = te.comm_reducer(lambda x, y: x + te.abs(y), lambda t: te.const(0.0, t), "abs_sum")
    A = te.placeholder((64, 200), name="A")
    k = te.reduce_axis((0, 200), name="k")
    S = te.compute((64,), lambda r: abs_sum(A[r, k], axis=k), name="S")
    assert tvm.auto_schedule_space([S.op])["rules"]["S"] == "reduction"
    a = np.random.default_rng(3).standard_normal((64, 200)).astype("float32")
    (s,) = run(tvm.auto_schedule([S.op]), [A, S], a)
    np.testing.assert_allclose(s, np.abs(a.astype("float64")).sum(-1), rtol=1e-5)


@pytest.mark.parametrize("rows", [1, 5, 40])
def test_topi_argmax_rows_of_sixteen_lane_steps_are_vectorized(rows):
    """Rows whose length only 16 divides (10000) take 16 lanes of steps; the lanes' reduction
    is then too short for a site in the rows' loop, and the steps got a default nest that ran
    each lane's strided column alone (23 ms on (1000, 10000), PyTorch 4). They now keep their
    vectorized lanes in their own loop over the rows."""
    from pytvmbridge import topi

    x = te.placeholder((rows, 10000), name="x")
    y = topi.argmax(x, axis=1)
    s = tvm.auto_schedule(y)
    text = str(tvm.lower(s, [x, y]))
    assert "x_argmax_steps.v1[ramp(" in text
    f = tvm.build(s, [x, y])
    a = np.random.default_rng(3).standard_normal((rows, 10000)).astype("float32")
    a[0, 9000] = 50.0
    a[0, 9500] = 50.0  # a tie: the first index
    if rows > 1:
        a[1, 17] = np.nan
    got = np.zeros(rows, "int32")
    f(a, got)
    np.testing.assert_array_equal(got, torch.from_numpy(a).argmax(1).numpy())
