"""pytvmbridge and PyTorch load together in either order (no clashing symbols, e.g. LLVM's or
libstdc++'s), checked in fresh interpreters so that nothing is already imported."""

import subprocess
import sys

import pytest

SCRIPT = """
import {first}
import {second}
import numpy as np
import torch
import pytvmbridge as tvm

t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
u = torch.nn.functional.relu(t - 5.0) @ torch.ones(4, 2)  # a real torch op
a = tvm.nd.array(u)
assert a.shape == (3, 2) and a.dtype == "float32"
back = torch.from_dlpack(a)
assert torch.equal(back, u) and back.data_ptr() == a.data_ptr
view = tvm.nd.from_dlpack(t[1:, 2:])
assert view.data_ptr == t[1:, 2:].data_ptr()
np.testing.assert_array_equal(view.numpy(), t[1:, 2:].numpy())
print("ok", back.sum().item())
"""


@pytest.mark.parametrize(("first", "second"), [("torch", "pytvmbridge"), ("pytvmbridge", "torch")])
def test_import_order(first, second):
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(first=first, second=second)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    # relu(t - 5) summed over rows: [0,0,0,0 | 0,0,1,2 | 3,4,5,6] -> 21 per column, 2 columns.
    assert result.stdout.strip() == "ok 42.0"
