import numpy as np
import pytest
from topi_testing import random, run

import pytvmbridge as tvm
from pytvmbridge import topi

AXES = [None, 0, -1, (0, 2), (1,), ()]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(dtype, keepdims):
    shape = (3, 1, 7)
    A = tvm.placeholder(shape, dtype, name="A")
    a = random(shape, dtype, low=-3, high=3)
    if dtype != "int32":
        a = (a + 0.5 * np.sign(a)).astype(dtype)  # products stay away from 0
    outs, refs = [], []
    for axis in AXES:
        kw = {"axis": axis, "keepdims": keepdims}
        outs += [
            topi.sum(A, **kw),
            topi.max(A, **kw),
            topi.min(A, **kw),
            topi.prod(A, **kw),
        ]
        refs += [
            np.sum(a, **kw, dtype=dtype),
            np.max(a, **kw),
            np.min(a, **kw),
            np.prod(a, **kw, dtype=dtype),
        ]
        if dtype != "int32":
            outs.append(topi.mean(A, **kw))
            refs.append(np.mean(a, **kw, dtype=dtype))
    run([A], outs, [a], refs)
    assert outs[0].op.tag == "comm_reduce"


def test_reductions_over_symbolic_sizes():
    n, m = tvm.var("n"), tvm.var("m")
    A = tvm.placeholder((n, m), name="A")
    a = random((5, 13), "float32")
    outs = [
        topi.sum(A, axis=1),
        topi.mean(A),
        topi.max(A, axis=0, keepdims=True),
        topi.argmax(A, axis=1),
        topi.argmin(A),
    ]
    refs = [a.sum(1), a.mean(), a.max(0, keepdims=True), a.argmax(1), a.argmin()]
    run([A], outs, [a], refs)
    run(
        [A],
        outs,
        [a[:1, :2]],
        [
            np.asarray(r)
            for r in (
                a[:1, :2].sum(1),
                a[:1, :2].mean(),
                a[:1, :2].max(0, keepdims=True),
                a[:1, :2].argmax(1),
                a[:1, :2].argmin(),
            )
        ],
    )


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_argmax_argmin(dtype):
    shape = (4, 5, 3)
    A = tvm.placeholder(shape, dtype, name="A")
    a = random(shape, dtype, low=-3, high=3)  # small integer range: ties are common
    outs, refs = [], []
    for axis, keepdims in ((None, False), (0, True), (1, False), (-1, True), (None, True)):
        outs += [topi.argmax(A, axis, keepdims), topi.argmin(A, axis, keepdims)]
        refs += [np.argmax(a, axis, keepdims=keepdims), np.argmin(a, axis, keepdims=keepdims)]
    # The last occurrence: the first one in the reversed array.
    outs += [
        topi.argmax(A, 1, select_last_index=True),
        topi.argmin(A, 1, select_last_index=True),
    ]
    refs += [4 - np.argmax(a[:, ::-1], 1), 4 - np.argmin(a[:, ::-1], 1)]
    run([A], outs, [a], refs)
    assert outs[0].dtype == "int32" and outs[0].op.tag == "comm_reduce_idx"


def test_reduction_errors():
    A = tvm.placeholder((2, 3), name="A")
    with pytest.raises(ValueError, match="axis 2 of sum is out of range for 2 dimension"):
        topi.sum(A, axis=2)
    with pytest.raises(ValueError, match="axis 1 of max is repeated"):
        topi.max(A, axis=(1, -1))
    with pytest.raises(TypeError, match="axis of argmax must be an int or None"):
        topi.argmax(A, axis=(0, 1))
    with pytest.raises(TypeError, match="mean needs a float tensor"):
        topi.mean(tvm.placeholder((2,), "int32"))


@pytest.mark.parametrize("dtype", ["float64", "int64", "float16"])
def test_argmax_argmin_other_dtypes(dtype):
    A = tvm.placeholder((3, 17), dtype, name="A")
    a = random((3, 17), dtype, low=-30, high=30)
    run([A], [topi.argmax(A, -1), topi.argmin(A, 0)], [a], [a.argmax(-1), a.argmin(0)])


def _with_specials(a: np.ndarray, seed: int) -> np.ndarray:
    """a with a few NaNs, infinities and signed zeros at random places."""
    rng = np.random.default_rng(seed)
    flat = a.reshape(-1)
    for value in (np.nan, np.inf, -np.inf, 0.0, -0.0):
        flat[rng.choice(flat.size, 4, replace=False)] = value
    return a


@pytest.mark.parametrize("axis", [-1, 1])
def test_auto_scheduled_max_min_propagate_nan(axis):
    # 96-wide rows: the auto schedule reduces them 16 lanes at a time, which on AVX-512 is
    # x86's vmaxps/vminps plus a NaN select; NumPy's result must not change.
    shape = (4, 9, 96)
    A = tvm.placeholder(shape, name="A")
    a = _with_specials(random(shape, "float32"), seed=1)
    outs = [topi.max(A, axis=axis), topi.min(A, axis=axis)]
    refs = [np.max(a, axis=axis), np.min(a, axis=axis)]
    assert np.isnan(refs[0]).any() and not np.isnan(refs[0]).all()
    run([A], outs, [a], refs, rtol=0, atol=0, schedule="auto")


def test_auto_scheduled_maximum_minimum_elementwise_nan():
    shape = (3, 128)
    A = tvm.placeholder(shape, name="A")
    B = tvm.placeholder(shape, name="B")
    a = _with_specials(random(shape, "float32"), seed=2)
    b = _with_specials(random(shape, "float32"), seed=3)
    b[1, :16] = np.nan  # a whole vector of NaNs in the second operand
    a[2, 16:32] = np.nan  # and in the first
    run(
        [A, B],
        [topi.maximum(A, B), topi.minimum(A, B)],
        [a, b],
        [np.maximum(a, b), np.minimum(a, b)],
        rtol=0,
        atol=0,
        schedule="auto",
    )


@pytest.mark.parametrize("schedule", ["naive", "auto"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_argmax_argmin_index_of_first_nan(schedule, dtype):
    # NumPy: a row with NaNs gives the index of its first NaN, a row of infinities its first
    # element (the search for the extreme found no hit in either and returned INT32_MAX).
    shape = (4, 6, 80)
    A = tvm.placeholder(shape, dtype, name="A")
    a = random(shape, dtype)
    a[0, 1, 7] = a[0, 1, 50] = np.nan
    a[1, 3, 79] = np.nan
    a[2, :, 0] = np.nan  # along axis 1 every column 0 has a NaN in its first element
    a[3, 5, :] = np.inf  # argmin's minimum is then the identity, the largest finite value
    a[3, 4, :] = -np.inf  # and argmax's the lowest
    outs, refs = [], []
    for axis in (-1, 1, None):
        outs += [topi.argmax(A, axis), topi.argmin(A, axis)]
        refs += [np.argmax(a, axis), np.argmin(a, axis)]
    run([A], outs, [a], refs, schedule=schedule)


def _argmax_rows(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    """Rows of the cases the one-pass argmax/argmin keeps apart: NaNs (the first one wins),
    rows of one infinity (the first element), ties (the first of them), signed zeros (equal),
    a NaN before +inf, and the extreme in the first and in the last lane."""
    rng = np.random.default_rng(seed)
    if dtype == "int32":
        a = rng.integers(-4, 4, size=shape).astype(dtype)  # ties everywhere
        rows = a.reshape(-1, shape[-1])
        rows[0, :] = np.iinfo(np.int32).min  # the identity of argmax's steps
        rows[1, :] = np.iinfo(np.int32).max  # and of argmin's
        return a
    a = rng.standard_normal(shape).astype(dtype)
    rows = a.reshape(-1, shape[-1])
    w = rows.shape[1]
    cases = [
        {w // 2: np.nan},
        {1: np.nan, w - 1: np.nan},
        "-inf",
        "+inf",
        "ones",
        {0: 9.0, w - 1: 9.0, 3: -9.0, w - 2: -9.0},
        "zeros",
        {0: np.nan, 2: np.inf, 5: -np.inf},
        {w - 1: 50.0, w - 17: -50.0},  # the extremes in the last lane of the last step
        {16: np.nan, 0: np.nan},  # two NaNs in one lane: the first step's
    ]
    for r, case in enumerate(cases[: rows.shape[0]]):
        if case == "-inf":
            rows[r, :] = -np.inf
        elif case == "+inf":
            rows[r, :] = np.inf
        elif case == "ones":
            rows[r, :] = 1.0
        elif case == "zeros":
            rows[r, :] = 0.0
            rows[r, ::3] = -0.0
        else:
            for col, value in case.items():
                rows[r, col] = value
    return a


@pytest.mark.parametrize("schedule", ["naive", "auto"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("shape", [(1, 128, 768), (3, 4, 96), (10, 48), (12, 32), (2, 1, 64)])
def test_argmax_argmin_one_pass_last_axis(schedule, dtype, shape):
    # Lanes of 64, 32 and 16 (768, 96 and 48/32/64 elements), against torch's argmax/argmin
    # (NaN first, then the first index of the extreme), keepdims both ways.
    import torch

    A = tvm.placeholder(shape, dtype, name="A")
    a = _argmax_rows(shape, dtype, seed=len(shape) + shape[-1])
    t = torch.from_numpy(a)
    outs = [
        topi.argmax(A, -1),
        topi.argmin(A, -1),
        topi.argmax(A, -1, keepdims=True),
        topi.argmin(A, len(shape) - 1, keepdims=True),
    ]
    refs = [
        t.argmax(-1).numpy(),
        t.argmin(-1).numpy(),
        t.argmax(-1, keepdim=True).numpy(),
        t.argmin(-1, keepdim=True).numpy(),
    ]
    run([A], outs, [a], refs, rtol=0, atol=0, schedule=schedule)
    assert outs[0].dtype == "int32" and outs[0].op.tag == "comm_reduce_idx"


def test_argmax_argmin_of_an_empty_axis_are_refused_like_numpy():
    A = tvm.placeholder((3, 0), name="A")
    for fn in (topi.argmax, topi.argmin):
        for axis in (1, -1, None):
            with pytest.raises(ValueError, match=r"of an empty axis: dimension 1 of \(3, 0\)"):
                fn(A, axis=axis)
        with pytest.raises(ValueError):
            np.argmax(np.zeros((3, 0)), axis=1)  # (NumPy's refusal too)
    # over the other axis there is nothing to reduce per output: an empty result, as NumPy's
    run([A], topi.argmax(A, axis=0), [np.zeros((3, 0), "float32")], np.zeros(0, "int32"))


def test_argmax_argmin_of_an_axis_empty_at_call_time_are_refused():
    # a symbolic axis of size 0 gave the reduction's identity, 2147483647, an index out of range
    n, m = tvm.var("n"), tvm.var("m")
    A = tvm.placeholder((n, m), name="A")
    for fn, ref in ((topi.argmax, np.argmax), (topi.argmin, np.argmin)):
        out = fn(A, axis=1)
        f = tvm.build(tvm.auto_schedule(out), [A, out])
        with pytest.raises(ValueError, match=r"dimension 1 of 'A' \(m\).* has 0 .*empty axis"):
            f(np.zeros((2, 0), "float32"), np.zeros(2, "int32"))
        a = random((5, 7), "float32")
        got = np.zeros(5, "int32")
        f(a, got)
        np.testing.assert_array_equal(got, ref(a, axis=1))
        f(np.zeros((0, 0), "float32"), np.zeros(0, "int32"))  # no rows: nothing to refuse
        # the check travels with a saved module
        g = tvm.runtime.module_from_bytes(tvm.runtime.module_to_bytes(f))
        with pytest.raises(ValueError, match=r"empty axis"):
            g(np.zeros((3, 0), "float32"), np.zeros(3, "int32"))
    double = tvm.kernel(lambda X: topi.argmax(X, axis=-1))
    with pytest.raises(ValueError, match=r"empty axis"):
        double(np.zeros((3, 0), "float32"))


def test_argmax_one_pass_schedule():
    # The steps are computed per row inside the lanes' parallel loop, 16 lanes at a time: one
    # parallel region, one pass over the data (no separate maximum).
    A = tvm.placeholder((1, 128, 768), name="A")
    out = topi.argmax(A, -1)
    rules = tvm.auto_schedule_space(out)["rules"]
    assert rules["A_argmax_steps"] == "reduction_lane_steps"
    assert rules["A_argmax_lanes.rf"] == "reduction_lanes"
    text = str(tvm.lower(tvm.auto_schedule(out), [A, out]))
    assert text.count("parallel") == 1
    assert "A_argmax_steps.v1[ramp(" in text and "max(" not in text
    # The step comes from the steps' own running count (a vector), not from the loop counter
    # broadcast into each masked update.
    assert "A_argmax_steps.v2[ramp(0i64, 1i64, 16)], A_argmax_steps.v0[ramp(" in text
    assert "x16(ko)" not in text


def test_argmax_outside_the_one_pass_form():
    # Shapes the one-pass form leaves to the two reductions (a length no lane width divides,
    # another axis, a 1-D tensor, select_last_index), still NumPy's answers.
    A = tvm.placeholder((6, 40), name="A")
    B = tvm.placeholder((64,), name="B")
    a = _argmax_rows((6, 40), "float32", seed=5)
    b = random((64,), "float32")
    run([A], [topi.argmax(A, -1), topi.argmax(A, 0)], [a], [a.argmax(-1), a.argmax(0)])
    run([B], [topi.argmax(B, -1)], [b], [b.argmax()], schedule="auto")
    run([A], [topi.argmax(A, -1, select_last_index=True)], [a[:, ::-1].copy()], [39 - a.argmax(-1)])
    assert "A_argmax_value" in str(tvm.lower(tvm.create_schedule(topi.argmax(A, -1).op), [A]))
