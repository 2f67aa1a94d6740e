"""float16 sums, products, averages and softmax rows accumulate in float32 and are rounded once,
as PyTorch's CPU kernels do: a float16 accumulator overflows at 65504 and drops the small terms
of a long row (a row of 4096 values in [0, 1) summed in float16 stops growing near 2048, where
float16's spacing is 2)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from topi_testing import random, run

import pytvmbridge as tvm
from pytvmbridge import topi

SCHEDULES = ["naive", "auto"]


def _half(t: torch.Tensor) -> np.ndarray:
    return t.to(torch.float16).numpy()


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_half_sum_and_mean_of_long_rows(schedule):
    A = tvm.placeholder((3, 4096), "float16", name="A")
    a = random((3, 4096), "float16", low=0, high=1)
    at = torch.from_numpy(a)
    outs = [topi.sum(A, axis=1), topi.mean(A, axis=1), topi.sum(A)]
    refs = [_half(at.float().sum(1)), _half(at.float().mean(1)), _half(at.float().sum())]
    # float16's own rounding of the results: 2**-10 relative
    run([A], outs, [a], refs, rtol=2e-3, atol=0, schedule=schedule)
    assert np.isfinite(refs[2]).all()  # 6144: finite in float16, unlike a float16 accumulator


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_half_product_is_rounded_once(schedule):
    A = tvm.placeholder((2, 64), "float16", name="A")
    a = random((2, 64), "float16", low=0.9, high=1.1)
    ref = _half(torch.from_numpy(a).double().prod(1))
    run([A], topi.prod(A, axis=1), [a], ref, rtol=2e-3, atol=0, schedule=schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_half_softmax_and_log_softmax_of_a_long_row(schedule):
    X = tvm.placeholder((2, 4096), "float16", name="X")
    x = random((2, 4096), "float16", low=-3, high=3)
    xt = torch.from_numpy(x).float()
    refs = [_half(torch.softmax(xt, -1)), _half(torch.log_softmax(xt, -1))]
    outs = [topi.nn.softmax(X), topi.nn.log_softmax(X)]
    assert [o.dtype for o in outs] == ["float16", "float16"]
    res = run([X], outs, [x], refs, rtol=2e-3, atol=1e-7, schedule=schedule)
    np.testing.assert_allclose(res[0].astype("float64").sum(1), 1.0, rtol=5e-3)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_half_average_pools(schedule):
    X = tvm.placeholder((1, 3, 56, 56), "float16", name="X")
    x = random((1, 3, 56, 56), "float16", low=0, high=4)
    xt = torch.from_numpy(x).float()
    outs = [
        topi.nn.adaptive_avg_pool2d(X, 1),
        topi.nn.adaptive_avg_pool2d(X, (5, 3)),
        topi.nn.avg_pool2d(X, 7, 7),  # 49 taps: the reduction form
        topi.nn.avg_pool2d(X, 3, 2, 1),  # 9 taps: the sum of taps
    ]
    refs = [
        _half(F.adaptive_avg_pool2d(xt, 1)),
        _half(F.adaptive_avg_pool2d(xt, (5, 3))),
        _half(F.avg_pool2d(xt, 7, 7)),
        _half(F.avg_pool2d(xt, 3, 2, 1)),
    ]
    run([X], outs, [x], refs, rtol=2e-3, atol=0, schedule=schedule)


def test_float32_bodies_are_unchanged():
    # No cast appears for float32 data: the scheduler's pattern rules see the same bodies.
    X = tvm.placeholder((4, 8), name="X")
    assert "float32(" not in str(topi.nn.softmax(X).op.body)
    assert str(topi.sum(X, axis=1).op.body).count("X[") == 1
    assert topi.sum(X, axis=1).op.tag == "comm_reduce"


ACTIVATIONS = {
    "gelu": (lambda X: topi.nn.gelu(X), F.gelu),
    "gelu_tanh": (lambda X: topi.nn.gelu(X, "tanh"), lambda x: F.gelu(x, approximate="tanh")),
    "silu": (topi.nn.silu, F.silu),
    "sigmoid": (topi.nn.sigmoid, torch.sigmoid),
    "tanh": (topi.nn.tanh, torch.tanh),
    "elu": (topi.nn.elu, F.elu),
    "softplus": (topi.nn.softplus, F.softplus),
    "hardswish": (topi.nn.hardswish, F.hardswish),
    "hardsigmoid": (topi.nn.hardsigmoid, F.hardsigmoid),
    "leaky_relu": (lambda X: topi.nn.leaky_relu(X, 0.1), lambda x: F.leaky_relu(x, 0.1)),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_half_activations_are_computed_in_float32_and_rounded_once(name, dtype):
    # gelu of x in [-6, -3] is x/2 + x/2 erf(x / sqrt 2): two nearly cancelling terms, off by
    # tens of percent when computed in float16; in float32 and rounded once it is within one
    # rounding of the dtype of PyTorch's result (its CPU kernels compute in float32 too).
    ours, theirs = ACTIVATIONS[name]
    values = torch.cat([torch.linspace(-6, -3, 64), torch.linspace(-3, 6, 192)])
    x = values.to(getattr(torch, dtype)).reshape(4, 64)
    X = tvm.placeholder((4, 64), dtype, name="X")
    Y = ours(X)
    assert Y.dtype == dtype
    want = theirs(x.float()).to(getattr(torch, dtype))
    got = torch.empty_like(x)
    tvm.build(tvm.auto_schedule([Y]), [X, Y])(x, got)
    eps = {"float16": 2.0**-10, "bfloat16": 2.0**-7}[dtype]
    torch.testing.assert_close(got.float(), want.float(), rtol=eps, atol=1e-6)
