"""Random compositions of topi operators: the auto-scheduled module computes what the naive
schedule computes (hypothesis picks the shapes and the chain of operators)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from topi_testing import random

import pytvmbridge as tvm
from pytvmbridge import topi


def _conv(x, extra, rng_out):
    w = tvm.placeholder((rng_out, x.shape[1], 3, 3), name=f"W{len(extra)}")
    extra.append(w)
    return topi.nn.conv2d(x, w, 1, 1)


def _bias(x, extra, _):
    b = tvm.placeholder((x.shape[1], 1, 1), name=f"b{len(extra)}")
    extra.append(b)
    return topi.add(x, b)


STEPS = {
    "relu": lambda x, e, k: topi.nn.relu(x),
    "gelu": lambda x, e, k: topi.nn.gelu(x),
    "sigmoid": lambda x, e, k: topi.sigmoid(x),
    "scale": lambda x, e, k: topi.multiply(x, 0.5),
    "residual": lambda x, e, k: topi.add(x, topi.nn.relu(x)),
    "conv": _conv,
    "bias": _bias,
    "max_pool": lambda x, e, k: topi.nn.max_pool2d(x, 2, 1, 1),
    "avg_pool": lambda x, e, k: topi.nn.avg_pool2d(x, 3, 1, 1),
    "softmax": lambda x, e, k: topi.nn.softmax(x, 1),
    "sum_w": lambda x, e, k: topi.sum(x, axis=3, keepdims=True),
    "transpose_hw": lambda x, e, k: topi.transpose(x, (0, 1, 3, 2)),
    "layer_norm": lambda x, e, k: topi.nn.layer_norm(x, None, None, (2, 3)),
}


@settings(max_examples=12, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 2), st.integers(1, 6), st.integers(1, 7), st.integers(1, 7)),
    chain=st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=4),
    out_channels=st.integers(1, 5),
)
def test_auto_schedule_equals_naive_schedule(shape, chain, out_channels):
    X = tvm.placeholder(shape, name="X")
    extra: list = []
    y = X
    for step in chain:
        y = STEPS[step](y, extra, out_channels)
    args = [X, *extra]
    arrays = [random([int(d) for d in t.shape], "float32", seed=k) for k, t in enumerate(args)]
    results = []
    for schedule in ("naive", "auto"):
        s = tvm.create_schedule(y.op)
        if schedule == "auto":
            tvm.auto_schedule(s)
        f = tvm.build(s, [*args, y])
        out = np.empty([int(d) for d in y.shape], "float32")
        f(*arrays, out)
        results.append(out)
    np.testing.assert_allclose(results[1], results[0], rtol=1e-4, atol=1e-4, err_msg=str(chain))
