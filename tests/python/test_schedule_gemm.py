"""The GEMM ladder of benchmarks/gemm.py: every step computes A @ B, at sizes that are and are
not multiples of its tiles (32x32 blocks, k split by 4, 4x16 register tiles)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import pytvmbridge as tvm

_spec = importlib.util.spec_from_file_location(
    "gemm_ladder", Path(__file__).parents[2] / "benchmarks" / "gemm.py"
)
gemm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gemm)


@pytest.mark.parametrize("step", list(gemm.STEPS))
@pytest.mark.parametrize("size", [(64, 64, 64), (67, 45, 33), (5, 3, 2), (32, 100, 7)])
def test_ladder_step_matches_numpy(step, size):
    M, N, K = size
    s, tensors = gemm.STEPS[step](M, N, K)
    f = tvm.build(s, tensors)
    rng = np.random.default_rng(1)
    a = rng.random((M, K), dtype=np.float32)
    b = rng.random((K, N), dtype=np.float32)
    c = np.full((M, N), np.nan, dtype=np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_ladder_lowered_structure():
    s, tensors = gemm.step_parallel(64, 64, 64)
    text = str(tvm.lower(s, tensors))
    assert "parallel (x.outer, 0, 2)" in text
    assert "allocate C.global[float32 * 32 * 32]" in text
    assert "ramp(" in text
    assert "if (" not in text  # everything divides: no guards
    s, tensors = gemm.step_micro_kernel(64, 64, 64)
    text = str(tvm.lower(s, tensors))
    _, columns = gemm.register_tile()  # 32 with AVX-512, 16 with AVX2
    assert f"parallel (y.outer, 0, {64 // columns})" in text
    assert "for (k, 0, 64)" in text
