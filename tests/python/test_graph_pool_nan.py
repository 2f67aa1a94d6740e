"""Max pooling with indices where windows hold NaN (all NaN, some NaN) or ``-inf``: the compiled
indices are the ones PyTorch's CPU kernel records (the last NaN of a window, else the first
maximum), and the backward pass sends each output's gradient to that element, NaN included."""

from __future__ import annotations

import pytest
import torch

nan, inf = float("nan"), float("inf")

X = torch.tensor(
    [
        [
            [
                [nan, nan, 1.0, 2.0, -inf, -inf],
                [nan, nan, 3.0, nan, -inf, -inf],
                [0.0, 1.0, nan, 5.0, 7.0, 7.0],
                [2.0, 3.0, 4.0, 4.0, 7.0, nan],
                [1.0, nan, 2.0, 2.0, 0.5, 0.5],
                [nan, 1.0, 2.0, 1.0, 0.5, 0.5],
            ]
        ]
    ]
)


def _compile(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="pytvmbridge", options={"strict": True})


@pytest.mark.parametrize(
    "kernel, stride, padding", [(2, 2, 0), (3, 1, 1), (3, 2, 1)], ids=["2x2", "3x3s1p1", "3x3s2p1"]
)
def test_indices_and_values_with_nan_windows_match_eager(kernel, stride, padding):
    x = torch.cat([X, X.flip(-1) * -1.0], dim=1)  # a second channel with other patterns

    def f(x):
        return torch.nn.functional.max_pool2d(x, kernel, stride, padding, return_indices=True)

    got_values, got_indices = _compile(f)(x)
    values, indices = f(x)
    torch.testing.assert_close(got_values, values, equal_nan=True)
    assert torch.equal(got_indices, indices), (got_indices, indices)


def test_gradient_reaches_the_nan_elements_as_in_eager():
    def f(x):
        return torch.nn.functional.max_pool2d(torch.relu(x) * 2.0, 2)

    weights = torch.arange(1.0, 10.0).reshape(1, 1, 3, 3)  # tells the outputs apart
    expected_x = X.clone().requires_grad_(True)
    (f(expected_x) * weights).sum().backward()
    got_x = X.clone().requires_grad_(True)
    (_compile(f)(got_x) * weights).sum().backward()
    assert expected_x.grad[0, 0, 1, 1] != 0  # an all-NaN window sends its gradient to a NaN
    torch.testing.assert_close(got_x.grad, expected_x.grad)
