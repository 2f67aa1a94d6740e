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
