"""Shared by the topi tests: build with the default (naive) schedule, run on NumPy arrays and
compare with a reference computed independently (NumPy or PyTorch)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import pytvmbridge as tvm

# Tolerances per dtype for results of float math (sums, transcendental functions).
TOL = {
    "float16": (2e-2, 2e-2),
    "float32": (1e-5, 1e-5),
    "float64": (1e-12, 1e-12),
}


def random(
    shape: Sequence[int],
    dtype: str,
    seed: int = 0,
    low: float = -2.0,
    high: float = 2.0,
) -> np.ndarray:
    """Random data of a dtype: uniform floats in [low, high), integers in [low, high]."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(int(low), int(high) + 1, size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


# The last module built, with what it was built from (kept alive, so identity comparisons are
# sound): the symbolic-shape tests call run() several times on one kernel.
_last: list = []


def _module(inputs: list, outputs: list, schedule: str) -> tvm.Module:
    if _last and _last[0] == schedule and _last[1] == inputs and _last[2] == outputs:
        return _last[3]
    s = tvm.create_schedule([o.op for o in outputs])
    if schedule == "auto":
        tvm.auto_schedule(s)
    f = tvm.build(s, [*inputs, *outputs])
    _last[:] = [schedule, inputs, outputs, f]
    return f


def run(
    inputs: Sequence[tvm.Tensor],
    outputs: Sequence[tvm.Tensor] | tvm.Tensor,
    arrays: Sequence[np.ndarray],
    expected: Sequence[np.ndarray] | np.ndarray,
    rtol: float | None = None,
    atol: float | None = None,
    schedule: str = "naive",
) -> list[np.ndarray]:
    """Build ``outputs`` (one module, the default schedule or with ``schedule="auto"``
    ``auto_schedule``'s; reused when called again with the same tensors), call it on ``arrays``
    with outputs of the expected shapes, and check each against ``expected``: exactly for
    integers and bools, within the dtype's tolerance for floats."""
    single = isinstance(outputs, tvm.Tensor)
    outputs = [outputs] if single else list(outputs)
    expected = [expected] if single else list(expected)
    f = _module(list(inputs), outputs, schedule)
    results = [np.empty(e.shape, dtype=o.dtype) for o, e in zip(outputs, expected, strict=True)]
    f(*arrays, *results)
    for out, res, exp in zip(outputs, results, expected, strict=True):
        assert res.shape == exp.shape, (out.name, res.shape, exp.shape)
        if np.issubdtype(res.dtype, np.floating):
            r, a = TOL[out.dtype]
            np.testing.assert_allclose(
                res.astype("float64"),
                np.asarray(exp, dtype="float64"),
                rtol=r if rtol is None else rtol,
                atol=a if atol is None else atol,
                err_msg=out.name,
            )
        else:
            np.testing.assert_array_equal(res, np.asarray(exp).astype(res.dtype), err_msg=out.name)
    return results
