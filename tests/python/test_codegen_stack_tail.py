"""Reductions over a contiguous axis whose length is not a multiple of the vector width: the
last vector step writes only some lanes of the accumulator, a stack buffer. The code generator
stores it whole with the other lanes' old values (a masked store there kept the buffer in
memory); every lane it does not write must keep its value, so the results must equal NumPy's,
with NaN and infinities placed in the tail."""

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import te, topi

rng = np.random.default_rng(23)


@pytest.mark.parametrize("width", [17, 49, 100, 1000])
def test_sum_max_argmax_with_a_tail_match_numpy(width):
    x = te.placeholder((6, width), name="x")
    outs = [topi.sum(x, axis=-1), topi.max(x, axis=-1), topi.argmax(x, axis=-1)]
    f = tvm.build(tvm.auto_schedule(outs), [x, *outs])
    data = rng.standard_normal((6, width)).astype("float32")
    data[1, -1] = np.nan  # the tail's last lane
    data[2, -2] = np.inf
    data[3, -1] = -np.inf
    data[4, :] = -1.0
    data[4, -1] = 5.0  # the maximum only in the tail
    total = np.zeros(6, "float32")
    top = np.zeros(6, "float32")
    where = np.zeros(6, "int32")
    f(data, total, top, where)
    np.testing.assert_allclose(total, data.sum(axis=-1), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(top, data.max(axis=-1))
    np.testing.assert_array_equal(where, data.argmax(axis=-1))


@pytest.mark.parametrize("width", [49, 1000])
def test_softmax_with_a_tail_matches_numpy(width):
    x = te.placeholder((5, width), name="x")
    y = topi.nn.softmax(x)
    f = tvm.build(tvm.auto_schedule(y), [x, y])
    data = (rng.standard_normal((5, width)) * 4).astype("float32")
    data[2, -1] = 30.0  # the row's maximum in the tail
    out = np.zeros((5, width), "float32")
    f(data, out)
    e = np.exp(data.astype("float64") - data.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-7)
