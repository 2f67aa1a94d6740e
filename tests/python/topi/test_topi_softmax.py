import numpy as np
import pytest
import torch
from topi_testing import random, run

import pytvmbridge as tvm
from pytvmbridge import topi


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    ("shape", "axis"), [((7,), 0), ((3, 5), -1), ((2, 1, 4), 1), ((2, 3, 5), 0)]
)
def test_softmax_and_log_softmax_match_torch(dtype, shape, axis):
    X = tvm.placeholder(shape, dtype, name="X")
    x = random(shape, dtype, low=-5, high=5)
    xt = torch.from_numpy(x)
    outs = [topi.nn.softmax(X, axis), topi.nn.log_softmax(X, axis)]
    refs = [torch.softmax(xt, axis).numpy(), torch.log_softmax(xt, axis).numpy()]
    run([X], outs, [x], refs)
    assert outs[0].op.tag == "softmax_output" and outs[1].op.tag == "log_softmax_output"


def test_softmax_is_stable_for_large_inputs_and_symbolic():
    n = tvm.var("n")
    X = tvm.placeholder((n, 4), name="X")
    x = np.array([[1000.0, 999.0, -1000.0, 0.0], [-1e4, -1e4, -1e4, -1e4]], "float32")
    xt = torch.from_numpy(x)
    res = run(
        [X],
        [topi.nn.softmax(X), topi.nn.log_softmax(X)],
        [x],
        [torch.softmax(xt, -1).numpy(), torch.log_softmax(xt, -1).numpy()],
        1e-5,
        1e-4,
    )
    assert np.isfinite(res[0]).all() and np.isfinite(res[1]).all()


def test_softmax_half():
    X = tvm.placeholder((3, 9), "float16", name="X")
    x = random((3, 9), "float16", low=-4, high=4)
    ref = torch.softmax(torch.from_numpy(x).double(), -1).numpy()
    run([X], topi.nn.softmax(X), [x], ref)


def test_softmax_errors():
    with pytest.raises(TypeError, match="softmax needs a float tensor"):
        topi.nn.softmax(tvm.placeholder((3,), "int32"))
    with pytest.raises(ValueError, match="axis 2 of log_softmax is out of range"):
        topi.nn.log_softmax(tvm.placeholder((3, 4)), 2)


def _special_rows(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Rows with a NaN, NaNs only, -inf only, a +inf, two +inf, -inf entries (a mask) and a
    large offset: torch makes the first five all NaN (the last two finite)."""
    x = np.random.default_rng(seed).standard_normal(shape).astype("float32")
    rows = x.reshape(-1, shape[-1])
    w = rows.shape[1]
    rows[0, w // 2] = np.nan
    rows[1, :] = np.nan
    rows[2, :] = -np.inf
    rows[3, w - 1] = np.inf
    rows[4, 0] = rows[4, 3] = np.inf
    rows[5, ::2] = -np.inf
    rows[6, :] += 1e4
    return x


@pytest.mark.parametrize(
    ("shape", "axis"), [((1, 12, 128, 128), -1), ((9, 96), -1), ((8, 7), -1), ((4, 40, 24), 1)]
)
def test_softmax_auto_schedule_nan_free_max(shape, axis):
    # The automatic scheduler takes the row maximum without NaN propagation (relax_max_nan):
    # a NaN still makes its row NaN through exp and the sum, as in torch; infinities and
    # -inf masks as torch.
    X = tvm.placeholder(shape, name="X")
    x = _special_rows(shape, seed=shape[-1])
    if axis != -1:
        x = np.moveaxis(_special_rows(np.moveaxis(x, axis, -1).shape, seed=3), -1, axis).copy()
    xt = torch.from_numpy(x)
    refs = [torch.softmax(xt, axis).numpy(), torch.log_softmax(xt, axis).numpy()]
    assert np.isnan(refs[0]).any() and np.isfinite(refs[0]).any()
    outs = [topi.nn.softmax(X, axis), topi.nn.log_softmax(X, axis)]
    run([X], outs, [x], refs, 1e-5, 1e-5, schedule="auto")


def test_softmax_max_decision_in_lower():
    X = tvm.placeholder((4, 12, 64, 128), name="X")
    Y = topi.nn.softmax(X)
    assert tvm.auto_schedule_space(Y)["default"]["T_softmax_maxelem"]["plain_max"] == 1
    text = str(tvm.lower(tvm.auto_schedule(Y), [X, Y]))
    # acc > x ? acc : x (one vmaxps), not the NaN-propagating max(acc, x).
    assert "select((T_softmax_maxelem.rf[" in text and "max(T_softmax_maxelem" not in text
    assert text.count("parallel") == 1
    # Its identity is -inf, never beyond any x (LLVM drops each combine with it), not the
    # built-in max's lowest finite value.
    assert "T_softmax_maxelem.rf[ramp(0i64, 1i64, 16)] = x16(-inf)" in text
    assert "T_softmax_maxelem.rf[ramp(0i64, 1i64, 16)] = x16(-3.4" not in text
    off = tvm.auto_schedule(Y, config={"T_softmax_maxelem": {"plain_max": 0}})
    assert "max(T_softmax_maxelem" in str(tvm.lower(off, [X, Y]))
    # A plain max keeps NaN propagation: it has no attribute.
    M = topi.max(X, axis=-1)
    assert "max(" in str(tvm.lower(tvm.auto_schedule(M), [X, M]))
