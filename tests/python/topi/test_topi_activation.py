import numpy as np
import pytest
import torch
import torch.nn.functional as F
from topi_testing import random, run

import pytvmbridge as tvm
from pytvmbridge import topi

ACTIVATIONS = {
    "relu": (topi.nn.relu, F.relu),
    "gelu": (topi.nn.gelu, F.gelu),
    "gelu_tanh": (
        lambda x: topi.nn.gelu(x, "tanh"),
        lambda x: F.gelu(x, approximate="tanh"),
    ),
    "silu": (topi.nn.silu, F.silu),
    "sigmoid": (topi.nn.sigmoid, torch.sigmoid),
    "tanh": (topi.nn.tanh, torch.tanh),
    "hardswish": (topi.nn.hardswish, F.hardswish),
    "hardsigmoid": (topi.nn.hardsigmoid, F.hardsigmoid),
    "leaky_relu": (
        lambda x: topi.nn.leaky_relu(x, 0.2),
        lambda x: F.leaky_relu(x, 0.2),
    ),
    "elu": (lambda x: topi.nn.elu(x, 0.5), lambda x: F.elu(x, 0.5)),
    "softplus": (topi.nn.softplus, F.softplus),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_activations_match_torch(dtype):
    n = tvm.var("n")
    X = tvm.placeholder((n, 3), dtype, name="X")
    x = random((11, 3), dtype, low=-6, high=6)
    x[0] = [-3.0, 3.0, 0.0]  # the kinks of hardswish
    x[1] = [30.0, -30.0, 25.0]  # past softplus' threshold
    xt = torch.from_numpy(x.astype("float64"))
    outs = [ours(X) for ours, _ in ACTIVATIONS.values()]
    refs = [theirs(xt).numpy() for _, theirs in ACTIVATIONS.values()]
    run([X], outs, [x], refs, *((4e-3, 4e-3) if dtype == "float16" else ()))


def test_elu_is_accurate_near_zero():
    # alpha * (exp(x) - 1) lost most digits there: -1e-8 gave 0, -1e-6 was 1.3% off
    x = np.array([-1e-8, -1e-6, -1e-5, -1e-4, -0.3, -20.0] * 3, "float32")
    f = tvm.kernel(lambda X: topi.nn.elu(X, 0.5))
    want = F.elu(torch.from_numpy(x.astype("float64")), 0.5).numpy()
    np.testing.assert_allclose(f(x), want, rtol=2e-7, atol=0)


def test_relu_on_integers_and_prelu():
    A = tvm.placeholder((6,), "int8", name="A")
    a = random((6,), "int8", low=-9, high=9)
    X = tvm.placeholder((2, 3, 2), name="X")
    S = tvm.placeholder((3,), name="S")
    x, s = random((2, 3, 2), "float32"), random((3,), "float32", 1)
    ref = F.prelu(torch.from_numpy(x), torch.from_numpy(s)).numpy()
    run(
        [A, X, S],
        [topi.nn.relu(A), topi.nn.prelu(X, S)],
        [a, x, s],
        [np.maximum(a, 0), ref],
    )


def test_prelu_axis_and_slope_are_checked():
    X = tvm.placeholder((2, 3, 4), name="X")
    S = tvm.placeholder((4,), name="S")
    x, s = random((2, 3, 4), "float32"), random((4,), "float32", 1)
    ref = np.where(x > 0, x, x * s)  # the slope along the last axis
    run([X, S], topi.nn.prelu(X, S, -1), [x, s], ref)
    with pytest.raises(ValueError, match="axis 7 of prelu is out of range for 3 dimension"):
        topi.nn.prelu(X, tvm.placeholder((3,)), 7)
    with pytest.raises(TypeError, match="slope must have x's dtype float32, found float64"):
        topi.nn.prelu(X, tvm.placeholder((3,), "float64"), 1)


def test_activation_errors():
    with pytest.raises(ValueError, match="approximate of gelu must be 'none' or 'tanh'"):
        topi.nn.gelu(tvm.placeholder((3,)), "erf")
    with pytest.raises(TypeError, match="silu needs a float tensor"):
        topi.nn.silu(tvm.placeholder((3,), "int32"))
    with pytest.raises(ValueError, match="slope has 2 entries"):
        topi.nn.prelu(tvm.placeholder((1, 3)), tvm.placeholder((2,)))
