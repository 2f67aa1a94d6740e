"""The package's shape: TVM's names, tags on every operator, runnable docstring examples."""

import doctest
import importlib
import pkgutil

import pytest

import pytvmbridge as tvm
from pytvmbridge import topi

MODULES = ["pytvmbridge.topi"] + [
    m.name for m in pkgutil.walk_packages(topi.__path__, prefix="pytvmbridge.topi.")
]


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module):
    mod = importlib.import_module(module)
    assert mod.__doc__ and ">>>" in mod.__doc__, f"{module} needs a module docstring example"
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_tvm_style_access():
    assert tvm.topi is topi
    for name in topi.__all__:
        assert hasattr(topi, name), name
    for name in topi.nn.__all__:
        assert hasattr(topi.nn, name), name


def test_every_compute_is_tagged():
    X = tvm.placeholder((1, 4, 6, 6), name="X")
    W = tvm.placeholder((4, 4, 3, 3), name="W")
    Y = topi.nn.relu(topi.nn.max_pool2d(topi.nn.conv2d(X, W, 1, 1), 2))
    D = (
        topi.nn.softmax(topi.nn.dense(topi.reshape(Y, (1, 36)), tvm.placeholder((5, 36))))
        if hasattr(topi, "reshape")
        else Y
    )
    seen, stack = set(), [D.op]
    while stack:
        op = stack.pop()
        if op in seen or not op.body:  # placeholders have no body
            continue
        seen.add(op)
        assert op.tag, f"compute {op.name} has no tag"
        stack.extend(t.op for t in op.input_tensors)
    assert len(seen) >= 4


def test_classic_tvm_code_runs():
    # The shape of TVM 0.6-era tutorial code: topi operators, topi.generic schedules.
    import numpy as np
    import torch
    import torch.nn.functional as F

    data = tvm.placeholder((1, 3, 9, 9), name="data")
    kernel = tvm.placeholder((4, 3, 3, 3), name="kernel")
    conv = topi.nn.conv2d(data, kernel, 1, 1, 1, layout="NCHW")
    out = topi.nn.pool(topi.nn.relu(conv), (2, 2), (2, 2), (0, 0), "max")
    s = topi.generic.schedule_pool(out, "NCHW")
    f = tvm.build(s, [data, kernel, out])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 9, 9)).astype("float32")
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    y = np.empty((1, 4, 4, 4), "float32")
    f(x, w, y)
    ref = F.max_pool2d(F.relu(F.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1)), 2)
    np.testing.assert_allclose(y, ref.numpy(), rtol=1e-4, atol=1e-4)
    with pytest.raises(TypeError, match="takes an output Tensor or a list of them"):
        topi.generic.schedule_injective("out")
