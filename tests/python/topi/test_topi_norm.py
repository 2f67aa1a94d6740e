import re

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


def _group64(x, groups, eps=1e-5):
    """Float64 group normalisation of ``x`` (channels on axis 1, no affine): the reference."""
    return _norm64(x.reshape(x.shape[0], groups, -1), 2, eps).reshape(x.shape)


def _moments_case(kind, shape, case):
    """Data for the one-pass statistics: plain, a large common mean, one outlier at the first
    element (the statistics' shift is the mean of the first values of each row or group), and
    a first run of values far from the rest (half the row, at most 64: the shift's worst case)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal(shape)
    rows = x.reshape(shape[0], -1) if kind == "group" else x.reshape(-1, shape[-1])
    if case == "offset":
        x += 1000.0
    elif case == "outlier":
        rows[:, 0] = 1e4
    elif case == "prefix":
        rows[:, : min(64, rows.shape[1] // 2)] = 1e3
    return x.astype(np.float32)


_MOMENT_SHAPES = [
    ("group", (1, 64, 56, 56), 32),
    ("group", (2, 6, 5, 7), 3),
    ("group", (3, 4, 1, 1), 2),
    ("group", (2, 6, 9), 1),
    ("layer", (1, 128, 768), 1),
    ("layer", (3, 5, 33), 1),
    ("layer", (4, 1), 1),
    ("layer", (2, 3, 5, 6), 2),
]


@pytest.mark.parametrize(("kind", "shape", "k"), _MOMENT_SHAPES)
@pytest.mark.parametrize("case", ["plain", "offset", "outlier", "prefix"])
def test_one_pass_moments_accuracy(kind, shape, k, case):
    """Under auto_schedule the sum and the sum of squared deviations are computed in one pass
    (rule_reduction.cc's one_pass_moments: sums of x - s and (x - s)^2, s the mean of the first
    values). Against a float64 NumPy reference: within the rounding of x * scale + shift (a few
    ulps of x times the largest scale, as the two-pass form) plus 2e-6 of the largest output, or
    3e-5 for a first run of values far from the rest (the shift's worst case: at most
    log2(count / 64) bits of the variance lost, here 7 for group_norm's 6272-value groups)."""
    x = _moments_case(kind, shape, case)
    c = shape[1] if kind == "group" else int(np.prod(shape[-k:]))
    pshape = (c,) if kind == "group" else shape[-k:]
    rng = np.random.default_rng(5)
    g = rng.uniform(0.5, 2.0, pshape).astype(np.float32)
    b = rng.standard_normal(pshape).astype(np.float32)
    X = tvm.placeholder(shape, name="X")
    G, B = tvm.placeholder(pshape, name="G"), tvm.placeholder(pshape, name="B")
    x64 = x.astype(np.float64)
    if kind == "group":
        Y = topi.nn.group_norm(X, G, B, k)
        ch = (slice(None),) + (None,) * (len(shape) - 2)
        ref = _group64(x, k) * g[ch] + b[ch]
        rstd = 1 / np.sqrt(x64.reshape(shape[0], k, -1).var(axis=2) + 1e-5)
    else:
        axes = tuple(range(len(shape) - k, len(shape)))
        Y = topi.nn.layer_norm(X, G, B, list(axes))
        ref = _norm64(x, axes) * g + b
        rstd = 1 / np.sqrt(x64.var(axis=axes) + 1e-5)
    assert tvm.auto_schedule_space(Y)["default"][f"T_{kind}_norm_sqsum"]["one_pass_moments"] == 1
    fold = 8e-7 * np.abs(x).max() * rstd.max() * g.max()
    tol = fold + (3e-5 if case == "prefix" else 2e-6) * np.abs(ref).max()
    run([X, G, B], Y, [x, g, b], ref, 0.0, tol, schedule="auto")


def test_one_pass_moments_float64_large_mean():
    """The same rewrite on float64 data with a mean of 1e6: float64 accuracy."""
    x = (np.random.default_rng(2).standard_normal((6, 40)) + 1e6).astype("float64")
    X = tvm.placeholder(x.shape, "float64", name="X")
    Y = topi.nn.layer_norm(X, None, None, -1, 1e-3)
    run([X], Y, [x], _norm64(x, -1, 1e-3), 0.0, 1e-9, schedule="auto")


def test_one_pass_moments_in_lower_and_knob():
    """The printout: one parallel region holding the shift (the mean of the first 64 values of
    each row), the tuple of sums (`.moments.v0`, `.moments.v1`) and the output; no separate
    sum pass (`T_layer_norm_sum.rf`). Knob one_pass_moments = 0 gives back the two passes, with
    the same values (within rounding); a sum of squares without the attribute is left alone."""
    X = tvm.placeholder((256, 256), name="X")
    Y = topi.nn.layer_norm(X, None, None, -1)
    text = str(tvm.lower(tvm.auto_schedule(Y), [X, Y]))
    assert text.count("parallel (") == 1
    assert "allocate T_layer_norm_sqsum.shift[" in text
    assert "T_layer_norm_sqsum.moments.v0" in text and "T_layer_norm_sqsum.moments.v1" in text
    assert "T_layer_norm_sum.rf" not in text
    off = {"T_layer_norm_sqsum": {"one_pass_moments": 0}}
    text0 = str(tvm.lower(tvm.auto_schedule(Y, config=off), [X, Y]))
    assert "moments" not in text0 and "T_layer_norm_sum.rf" in text0
    x = (np.random.default_rng(3).standard_normal((256, 256)) + 50).astype(np.float32)
    outs = []
    for config in (None, off):
        f = tvm.build(tvm.auto_schedule(Y, config=config), [X, Y])
        y = np.empty_like(x)
        f(x, y)
        outs.append(y)
    ref = _norm64(x, -1)
    for y in outs:
        np.testing.assert_allclose(y, ref, rtol=0, atol=2e-6 * 50)
    # The same computation written by hand, without attrs={"moments": 1}: two passes.
    k1, k2 = tvm.reduce_axis((0, 256), name="k1"), tvm.reduce_axis((0, 256), name="k2")
    s = tvm.compute((256,), lambda i: tvm.sum(X[i, k1], axis=k1), name="s")
    q = tvm.compute((256,), lambda i: tvm.sum((X[i, k2] - s[i]) * (X[i, k2] - s[i]), axis=k2))
    assert "one_pass_moments" not in tvm.auto_schedule_space(q)["knobs"].get(q.op.name, {})


def test_one_pass_moments_symbolic_sizes():
    """A symbolic normalised axis: the shift is the first value of the row (no shift stage);
    a symbolic row count keeps the 64-value shift. Values against float64 NumPy."""
    n, d = tvm.var("n"), tvm.var("d")
    for shape, X in (
        ((3, 70), tvm.placeholder((n, d), name="X")),
        ((5, 48), tvm.placeholder((n, 48), name="X")),
    ):
        G, B = tvm.placeholder(X.shape[1:], name="G"), tvm.placeholder(X.shape[1:], name="B")
        Y = topi.nn.layer_norm(X, G, B, -1)
        text = str(tvm.lower(tvm.auto_schedule(Y), [X, G, B, Y]))
        assert "T_layer_norm_sqsum.moments" in text
        assert ("T_layer_norm_sqsum.shift" in text) == (shape[1] == 48)
        x = (random(shape, "float32") + 30).astype(np.float32)
        g, b = random(shape[1:], "float32", 1), random(shape[1:], "float32", 2)
        ref = _norm64(x, -1) * g + b
        run([X, G, B], Y, [x, g, b], ref, 0.0, 2e-6 * 30, schedule="auto")


@pytest.mark.parametrize("schedule", ["naive", "auto"])
def test_layer_norm_constant_rows_give_beta(schedule):
    """A constant row has no deviation from its mean: layer_norm's output is beta exactly, as
    PyTorch's (the output is (x - mean) * rstd * gamma + beta; the folded x * rstd - mean *
    rstd left 2e-2 for a row of 1000s, rstd being 316 there), under the default schedule and
    under auto_schedule's one-pass statistics."""
    x = np.empty((4, 768), np.float32)
    x[0], x[1], x[2], x[3] = 1000.0, -3.5, 0.0, 2.0**-10
    g, b = random((768,), "float32", 1), random((768,), "float32", 2)
    X = tvm.placeholder(x.shape, name="X")
    G, B = tvm.placeholder((768,), name="G"), tvm.placeholder((768,), name="B")
    ref = F.layer_norm(torch.from_numpy(x), (768,), torch.from_numpy(g), torch.from_numpy(b))
    np.testing.assert_array_equal(ref.numpy(), np.broadcast_to(b, x.shape))
    Y = topi.nn.layer_norm(X, G, B, -1)
    run([X, G, B], Y, [x, g, b], np.broadcast_to(b, x.shape).copy(), 0.0, 0.0, schedule)


def _compact_asm(f):
    """The assembly of a module's compact-argument function (strides known)."""
    blocks = re.split(r"\n(?=[^.\s]\S*:\n)", f.get_source("asm"))  # function labels
    return "\n".join(b for b in blocks if "_compact" in b.split(":", 1)[0])


def test_group_norm_image_rows_fused():
    """group_norm's 56-wide image rows: the output's (h, w) loops and the statistics' (h, w)
    reduce axes are fused (knob fuse_rows), so that for compact arrays every vector is a
    contiguous run of the image (no gather: the simplifier widens the fused loop's int32 index
    vector to the int64 offset when the loop's range fits). Values against float64 NumPy for
    compact and strided (sliced) inputs; knob 0 gives back the rows."""
    shape = (1, 64, 56, 56)
    X = tvm.placeholder(shape, name="X")
    G, B = tvm.placeholder((64,), name="G"), tvm.placeholder((64,), name="B")
    Y = topi.nn.group_norm(X, G, B, 32)
    text = str(tvm.lower(tvm.auto_schedule(Y), [X, G, B, Y]))
    assert "for (k2_v_m.k3_v_m.fused.outer, 0, 49)" in text
    assert "for (i2.i3.fused.outer, 0, 98)" in text
    off = {"T_group_norm": {"fuse_rows": 0}, "T_group_norm_sqsum.moments": {"fuse_rows": 0}}
    text0 = str(tvm.lower(tvm.auto_schedule(Y, config=off), [X, G, B, Y]))
    assert "fused.outer, 0, 49)" not in text0 and "i2.i3.fused" not in text0
    rng = np.random.default_rng(9)
    g = rng.uniform(0.5, 2.0, 64).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    big = torch.from_numpy((rng.standard_normal((1, 64, 56, 64)) + 5).astype(np.float32))
    ch = (slice(None), None, None)
    for config in (None, off):
        f = tvm.build(tvm.auto_schedule(Y, config=config), [X, G, B, Y])
        if config is None:
            assert "gather" not in _compact_asm(f)
        for x in (big[..., :56].contiguous(), big[..., :56]):  # compact, then strided
            y = torch.empty(shape)
            f(x, torch.from_numpy(g), torch.from_numpy(b), y)
            ref = _group64(x.numpy(), 32) * g[ch] + b[ch]
            np.testing.assert_allclose(y.numpy(), ref, rtol=0, atol=2e-6 * 5 * 2)


@pytest.mark.parametrize(
    ("shape", "groups", "fused"),
    [
        ((2, 6, 8, 12), 3, (True, False)),
        ((1, 4, 16, 20), 2, (True, True)),
        ((3, 4, 7, 7), 2, (False, False)),
    ],
)
def test_group_norm_rows_fused_small_images(shape, groups, fused):
    """fuse_rows where only the output qualifies (8 x 12 = 96: three two-vector steps, not
    whole four-vector ones), where both do (16 x 20 = 320) and where neither does (7 x 7):
    the decisions and the values against float64 NumPy."""
    c = shape[1]
    X = tvm.placeholder(shape, name="X")
    G, B = tvm.placeholder((c,), name="G"), tvm.placeholder((c,), name="B")
    Y = topi.nn.group_norm(X, G, B, groups)
    knobs = tvm.auto_schedule_space(Y)["default"]
    assert knobs["T_group_norm"].get("fuse_rows", 0) == int(fused[0])
    assert knobs["T_group_norm_sqsum.moments"].get("fuse_rows", 0) == int(fused[1])
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(shape) + 3).astype(np.float32)
    g = rng.uniform(0.5, 2.0, c).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    ch = (slice(None), None, None)
    ref = _group64(x, groups) * g[ch] + b[ch]
    run([X, G, B], Y, [x, g, b], ref, 0.0, 2e-6 * 3 * 2, schedule="auto")
