import numpy as np
import pytest
import torch
import torch.nn.functional as F
from topi_testing import random, run

import pytvmbridge as tvm
from pytvmbridge import topi


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_matches_torch(dtype):
    X = tvm.placeholder((2, 3, 5, 1), dtype, name="X")
    params = [tvm.placeholder((3,), dtype, name=n) for n in ("g", "b", "m", "v")]
    x = random((2, 3, 5, 1), dtype)
    g, b, m = (random((3,), dtype, k) for k in (1, 2, 3))
    v = random((3,), dtype, 4, 0.5, 2.0)
    out, mean, var = topi.nn.batch_norm(X, *params, epsilon=1e-3)
    assert mean is params[2] and var is params[3]
    no_affine = topi.nn.batch_norm(X, None, None, params[2], params[3], center=False, scale=False)
    t = [torch.from_numpy(z) for z in (x, m, v, g, b)]
    ref = F.batch_norm(t[0], t[1], t[2], t[3], t[4], False, 0.0, 1e-3).numpy()
    ref2 = F.batch_norm(t[0], t[1], t[2], None, None, False, 0.0, 1e-5).numpy()
    run([X, *params], [out, no_affine[0]], [x, g, b, m, v], [ref, ref2])


def test_batch_norm_other_axis_and_symbolic_batch():
    n = tvm.var("n")
    X = tvm.placeholder((n, 4), name="X")
    params = [tvm.placeholder((4,), name=f"p{k}") for k in range(4)]
    out = topi.nn.batch_norm(X, *params, axis=-1)[0]
    x = random((3, 4), "float32")
    g, b, m = (random((4,), "float32", k) for k in (1, 2, 3))
    v = random((4,), "float32", 4, 0.5, 2.0)
    run([X, *params], out, [x, g, b, m, v], (x - m) / np.sqrt(v + 1e-5) * g + b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("shape", "nd"), [((2, 7, 8), 1), ((3, 1, 5), 2), ((1, 13), 1)])
def test_layer_norm_matches_torch(dtype, shape, nd):
    X = tvm.placeholder(shape, dtype, name="X")
    norm_shape = shape[-nd:]
    G = tvm.placeholder(norm_shape, dtype, name="G")
    B = tvm.placeholder(norm_shape, dtype, name="B")
    # A large common offset: the two-pass variance must stay accurate.
    x = (random(shape, dtype) + 100).astype(dtype)
    g, b = random(norm_shape, dtype, 1), random(norm_shape, dtype, 2)
    axes = list(range(len(shape) - nd, len(shape)))
    outs = [
        topi.nn.layer_norm(X, G, B, axes),
        topi.nn.layer_norm(X, None, None, axes, 1e-2),
    ]
    t = [torch.from_numpy(z) for z in (x, g, b)]
    refs = [
        F.layer_norm(t[0], norm_shape, t[1], t[2]).numpy(),
        F.layer_norm(t[0], norm_shape, eps=1e-2).numpy(),
    ]
    run(
        [X, G, B],
        outs,
        [x, g, b],
        refs,
        1e-4 if dtype == "float32" else None,
        1e-4 if dtype == "float32" else None,
    )


def test_layer_norm_symbolic_sizes():
    n, d = tvm.var("n"), tvm.var("d")
    X = tvm.placeholder((n, d), name="X")
    G, B = tvm.placeholder((d,), name="G"), tvm.placeholder((d,), name="B")
    Y = topi.nn.layer_norm(X, G, B, -1)
    for shape in [(3, 8), (1, 5)]:
        x, g, b = (
            random(shape, "float32"),
            random(shape[1:], "float32", 1),
            random(shape[1:], "float32", 2),
        )
        ref = F.layer_norm(
            *(torch.from_numpy(z) for z in (x,)),
            shape[1:],
            torch.from_numpy(g),
            torch.from_numpy(b),
        )
        run([X, G, B], Y, [x, g, b], ref.numpy(), 1e-5, 1e-5)


@pytest.mark.parametrize(
    ("shape", "groups"), [((2, 6, 4, 3), 3), ((1, 4, 5), 1), ((2, 5, 1, 1), 5)]
)
def test_group_norm_matches_torch(shape, groups):
    X = tvm.placeholder(shape, name="X")
    G, B = (
        tvm.placeholder((shape[1],), name="G"),
        tvm.placeholder((shape[1],), name="B"),
    )
    x = random(shape, "float32")
    g, b = random((shape[1],), "float32", 1), random((shape[1],), "float32", 2)
    Y = topi.nn.group_norm(X, G, B, groups)
    t = [torch.from_numpy(z) for z in (x, g, b)]
    run(
        [X, G, B],
        Y,
        [x, g, b],
        F.group_norm(t[0], groups, t[1], t[2]).numpy(),
        1e-5,
        1e-5,
    )


def _norm64(x, axes, eps=1e-5):
    """Float64 NumPy normalisation over ``axes``: the independent reference."""
    x = x.astype(np.float64)
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


@pytest.mark.parametrize("offset", [0.0, 100.0])
def test_norms_scale_shift_form_auto_schedule(offset):
    """The output is ``x * scale + shift`` per channel (one multiply-add per element): with a
    large common offset the folded shift cancels most of ``x * scale``, and the result must
    still be within float32 rounding of the offset (as PyTorch's kernels, which fold the same
    way) of a float64 reference, on the auto-scheduled ResNet/BERT shapes of benchmarks/ops.py,
    including group_norm's 56-wide rows."""
    rng = np.random.default_rng(7)
    tol = 2e-6 * (1 + offset)
    # group_norm, 32 groups of two 56x56 channels.
    x = (rng.standard_normal((1, 64, 56, 56)) + offset).astype(np.float32)
    g = rng.uniform(0.5, 2.0, 64).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    X = tvm.placeholder(x.shape, name="X")
    G, B = tvm.placeholder((64,), name="G"), tvm.placeholder((64,), name="B")
    grouped = _norm64(x.reshape(1, 32, 2 * 56 * 56), 2).reshape(x.shape)
    ref = grouped * g[None, :, None, None] + b[None, :, None, None]
    run([X, G, B], topi.nn.group_norm(X, G, B, 32), [x, g, b], ref, tol, tol, schedule="auto")
    # layer_norm over BERT's 768-wide rows.
    y = (rng.standard_normal((1, 128, 768)) + offset).astype(np.float32)
    g2 = rng.uniform(0.5, 2.0, 768).astype(np.float32)
    b2 = rng.standard_normal(768).astype(np.float32)
    Y = tvm.placeholder(y.shape, name="Y")
    G2, B2 = tvm.placeholder((768,), name="G2"), tvm.placeholder((768,), name="B2")
    ref2 = _norm64(y, -1) * g2 + b2
    run([Y, G2, B2], topi.nn.layer_norm(Y, G2, B2, -1), [y, g2, b2], ref2, tol, tol, "auto")
    # batch_norm with a running mean near the offset.
    m = (rng.standard_normal(64) + offset).astype(np.float32)
    v = rng.uniform(0.5, 2.0, 64).astype(np.float32)
    P = [tvm.placeholder((64,), name=n) for n in ("bg", "bb", "bm", "bv")]
    ch = (slice(None), None, None)
    ref3 = (x.astype(np.float64) - m[ch]) / np.sqrt(v[ch] + 1e-5) * g[ch] + b[ch]
    out = topi.nn.batch_norm(X, *P)[0]
    run([X, *P], out, [x, g, b, m, v], ref3, tol, tol, schedule="auto")


def test_norm_errors():
    X = tvm.placeholder((2, 6, 4), name="X")
    p = tvm.placeholder((6,), name="p")
    with pytest.raises(ValueError, match="6 channels do not divide into 4 groups"):
        topi.nn.group_norm(X, p, p, 4)
    with pytest.raises(ValueError, match=r"gamma of layer_norm must have shape \(4,\)"):
        topi.nn.layer_norm(X, p, p, -1)
    with pytest.raises(ValueError, match="gamma of batch_norm must have 6 elements"):
        topi.nn.batch_norm(X, tvm.placeholder((5,)), p, p, p)
    with pytest.raises(NotImplementedError, match="inference mode only"):
        topi.nn.batch_norm(X, p, p, p, p, training=True)
    with pytest.raises(TypeError, match="layer_norm needs a float tensor"):
        topi.nn.layer_norm(tvm.placeholder((2, 3), "int32"), None, None)
