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
