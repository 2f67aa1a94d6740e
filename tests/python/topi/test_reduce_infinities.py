"""max / min reductions over rows of infinities, against NumPy and PyTorch: a row of -inf has
maximum -inf (a fully masked attention row), not the lowest finite float the reduction used to
start from; likewise +inf rows for min, in every float type."""

import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import topi


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_max_and_min_of_infinite_rows(dtype):
    a = np.array(
        [[-np.inf] * 5, [np.inf] * 5, [1, -np.inf, 3, np.inf, 2], [-np.inf, -1, -np.inf, -2, -3]],
        dtype,
    )
    x = tvm.placeholder(a.shape, dtype, name="x")
    outs = [topi.max(x, axis=1), topi.min(x, axis=1), topi.max(x, axis=0), topi.min(x)]
    f = tvm.build(tvm.auto_schedule(outs), [x, *outs])
    got = [np.empty((4,), dtype), np.empty((4,), dtype), np.empty((5,), dtype), np.empty((), dtype)]
    f(a, *got)
    for g, want in zip(got, [a.max(1), a.min(1), a.max(0), a.min()], strict=True):
        np.testing.assert_array_equal(g, want)


def test_global_and_adaptive_max_pool_of_minus_infinity():
    a = np.full((1, 2, 3, 3), -np.inf, "float32")
    a[0, 1, 1, 2] = 4.0
    x = tvm.placeholder(a.shape, name="x")
    outs = [topi.nn.global_pool(x, "max"), topi.nn.adaptive_pool(x, (1, 1), "max")]
    f = tvm.build(tvm.auto_schedule(outs), [x, *outs])
    got = [np.empty((1, 2, 1, 1), "float32") for _ in outs]
    f(a, *got)
    want = torch.nn.functional.adaptive_max_pool2d(torch.from_numpy(a), 1).numpy()
    for g in got:
        np.testing.assert_array_equal(g, want)


def test_graph_amax_of_a_masked_row_matches_eager():
    def fn(scores, mask):
        return scores.masked_fill(mask, float("-inf")).amax(-1)

    scores = torch.randn(3, 6)
    mask = torch.zeros(3, 6, dtype=torch.bool)
    mask[1] = True  # a fully masked row
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="pytvmbridge")
    torch.testing.assert_close(compiled(scores, mask), fn(scores, mask), rtol=0, atol=0)
