import math

import numpy as np
import pytest
import torch
from topi_testing import random, run

import pytvmbridge as tvm
from pytvmbridge import topi

FLOAT_UNARY = {
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "tanh": np.tanh,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "erf": lambda x: torch.erf(torch.from_numpy(x)).numpy(),
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
    "trunc": np.trunc,
    "abs": np.abs,
    "negative": np.negative,
    "sign": np.sign,
    "identity": lambda x: x,
}
POSITIVE_ONLY = {"log", "log2", "log10", "log1p", "sqrt", "rsqrt"}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shape", [(7,), (1, 13), (3, 1, 5)])
def test_float_unary_ops_match_numpy(dtype, shape):
    # One module computes all of them: one build per dtype and shape.
    A = tvm.placeholder(shape, dtype, name="A")
    P = tvm.placeholder(shape, dtype, name="P")  # positive data for log/sqrt
    a = random(shape, dtype, seed=1, low=-1.5, high=1.5)
    p = random(shape, dtype, seed=2, low=0.1, high=3.0)
    outs, refs = [], []
    for name, ref in FLOAT_UNARY.items():
        src, data = (P, p) if name in POSITIVE_ONLY else (A, a)
        outs.append(getattr(topi, name)(src))
        # The reference in float64, rounded to the dtype as a correctly rounded result would be.
        refs.append(ref(data.astype("float64")).astype(dtype))
    run([A, P], outs, [a, p], refs, *(() if dtype != "float16" else (3e-3, 3e-3)))
    for out in outs:
        assert out.op.tag == "elemwise" and out.dtype == dtype and out.shape == A.shape


def test_unary_ops_with_symbolic_shape():
    n = tvm.var("n")
    A = tvm.placeholder((n, 3), name="A")
    a = random((4, 3), "float32")
    run([A], [topi.exp(A), topi.tanh(A)], [a], [np.exp(a), np.tanh(a)])
    run([A], topi.exp(A), [a[:1]], np.exp(a[:1]))  # the same kernel shape at another n


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_unary_ops(dtype):
    A = tvm.placeholder((11,), dtype, name="A")
    a = random((11,), dtype, low=-5, high=5)
    outs = [topi.abs(A), topi.negative(A), topi.sign(A), topi.identity(A)]
    run([A], outs, [a], [np.abs(a), -a, np.sign(a), a])


def test_special_float_values():
    A = tvm.placeholder((7,), name="A")
    a = np.array([0.0, -1.5, np.inf, -np.inf, np.nan, 3.0, -0.0], "float32")
    outs = [topi.isnan(A), topi.isinf(A), topi.isfinite(A), topi.sign(A)]
    s = tvm.create_schedule([o.op for o in outs])
    f = tvm.build(s, [A, *outs])
    res = [
        np.empty(7, "bool"),
        np.empty(7, "bool"),
        np.empty(7, "bool"),
        np.empty(7, "float32"),
    ]
    f(a, *res)
    np.testing.assert_array_equal(res[0], np.isnan(a))
    np.testing.assert_array_equal(res[1], np.isinf(a))
    np.testing.assert_array_equal(res[2], np.isfinite(a))
    np.testing.assert_array_equal(res[3], np.sign(a))  # NaN stays NaN
    np.testing.assert_array_equal(np.signbit(res[3]), np.signbit(np.sign(a)))  # sign(-0.0) = +0.0


def test_float_ops_reject_integers():
    A = tvm.placeholder((3,), "int32", name="A")
    with pytest.raises(TypeError, match="exp needs a float tensor, found int32 tensor 'A'"):
        topi.exp(A)
    with pytest.raises(TypeError, match="the input of exp must be a Tensor, found float"):
        topi.exp(1.5)


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        ("float32", "int32"),
        ("int32", "float64"),
        ("float64", "float16"),
        ("int8", "int64"),
        ("float32", "bool"),
        ("uint8", "float32"),
    ],
)
def test_cast(src, dst):
    n = tvm.var("n")
    A = tvm.placeholder((n,), src, name="A")
    a = random((9,), src, low=-3, high=3) if src != "uint8" else random((9,), src, low=0, high=250)
    B = topi.cast(A, dst)
    assert B.dtype == dst
    run([A], B, [a], a.astype(dst))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int16"])
def test_clip(dtype):
    A = tvm.placeholder((2, 7), dtype, name="A")
    a = random((2, 7), dtype, low=-10, high=10)
    run([A], topi.clip(A, -3, 4), [a], np.clip(a, -3, 4))
    with pytest.raises(ValueError, match="a_min <= a_max"):
        topi.clip(A, 4, -3)


def test_clip_with_one_open_side_or_a_nan_bound():
    A = tvm.placeholder((5,), name="A")
    a = np.array([-5.0, 0.0, 0.5, 7.0, np.nan], "float32")
    outs = [topi.clip(A, None, 5.0), topi.clip(A, 0.0, None), topi.clip(A, np.nan, 1.0)]
    refs = [np.clip(a, None, 5.0), np.clip(a, 0.0, None), np.clip(a, np.nan, 1.0)]
    run([A], outs, [a], refs)
    with pytest.raises(ValueError, match="a_min or a_max"):
        topi.clip(A, None, None)
    with pytest.raises(TypeError, match="a_min must be a number or None, found '1'"):
        topi.clip(A, "1", 2.0)


def test_clip_of_uint8_and_bounds_it_cannot_hold():
    A = tvm.placeholder((256,), "uint8", name="A")
    a = np.arange(256, dtype="uint8")
    run([A], topi.clip(A, 3, 100), [a], np.clip(a, 3, 100))
    with pytest.raises(OverflowError, match=r"clip: a_min=-1 is out of range for uint8 \[0, 255\]"):
        topi.clip(A, -1, 100)
    with pytest.raises(OverflowError, match=r"clip: a_max=300 is out of range for uint8"):
        topi.clip(A, 0, 300)


def test_full_and_logical_not():
    F = topi.full((2, 3), "float64", math.pi)
    B = tvm.placeholder((5,), "bool", name="B")
    b = random((5,), "bool")
    run(
        [B],
        [F, topi.full_like(B, True), topi.logical_not(B)],
        [b],
        [np.full((2, 3), math.pi), np.ones(5, bool), ~b],
    )
    with pytest.raises(TypeError, match="logical_not needs a bool tensor"):
        topi.logical_not(tvm.placeholder((3,)))


def test_elemwise_sum_and_fast_aliases():
    A = tvm.placeholder((3, 4), name="A")
    B = tvm.placeholder((3, 4), name="B")
    a, b = random((3, 4), "float32", 1), random((3, 4), "float32", 2)
    outs = [topi.elemwise_sum([A, B, A]), topi.fast_exp(A), topi.fast_tanh(A), topi.fast_erf(A)]
    refs = [2 * a + b, np.exp(a), np.tanh(a), torch.erf(torch.from_numpy(a)).numpy()]
    run([A, B], outs, [a, b], refs)
    with pytest.raises(TypeError, match="elemwise_sum: tensor 1 is float64"):
        topi.elemwise_sum([A, tvm.placeholder((3, 4), "float64")])
