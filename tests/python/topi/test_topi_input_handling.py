"""How the operators take their arguments: NumPy integers wherever Python ints go (floats and
bools refused by name), Python numbers with tensors of every dtype (NumPy's rule for a scalar),
float16 statistics and softplus computed without overflow, and bad shapes caught before a
kernel reads out of bounds. Values against NumPy and PyTorch."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from topi_testing import random, run

import pytvmbridge as tvm
from pytvmbridge import nd, topi

I64 = np.int64

# --- elemwise_sum: one shape for all ------------------------------------------------------------


def test_elemwise_sum_rejects_other_shapes_and_sums_equal_ones():
    A = tvm.placeholder((2, 3), name="A")
    # (1, 3) would broadcast in topi.add, but elemwise_sum reads every input at the output's
    # index: its row 1 would be read past the end.
    with pytest.raises(ValueError, match=r"tensor 1 has shape \(1, 3\), tensor 0 \(2, 3\)"):
        topi.elemwise_sum([A, tvm.placeholder((1, 3), name="B")])
    with pytest.raises(ValueError, match=r"tensor 2 has shape \(3,\), tensor 0 \(2, 3\)"):
        topi.elemwise_sum([A, A, tvm.placeholder((3,), name="C")])
    n, m = tvm.var("n"), tvm.var("m")
    with pytest.raises(ValueError, match=r"tensor 1 has shape \(m,\), tensor 0 \(n,\)"):
        topi.elemwise_sum([tvm.placeholder((n,)), tvm.placeholder((m,))])
    with pytest.raises(TypeError, match="tensor 1 is int32"):
        topi.elemwise_sum([A, tvm.placeholder((2, 3), "int32")])
    B = tvm.placeholder((2, 3), name="B")
    a, b = random((2, 3), "float32", 1), random((2, 3), "float32", 2)
    run([A, B], topi.elemwise_sum([A, B, A]), [a, b], a + b + a)


# --- NumPy integers as sizes, axes, strides -----------------------------------------------------


def test_reshape_checks_numpy_integer_sizes():
    A = tvm.placeholder((4, 6), name="A")
    # 25 elements from 24: caught, not read out of bounds.
    with pytest.raises(ValueError, match=r"cannot reshape \(4, 6\) \(24 elements\) into \(5, 5\)"):
        topi.reshape(A, (I64(5), I64(5)))
    with pytest.raises(TypeError, match=r"newshape of reshape .*entry 6\.0 is float"):
        topi.reshape(A, (4, 6.0))
    with pytest.raises(TypeError, match="newshape of reshape must be a sequence"):
        topi.reshape(A, 24.0)
    a = random((4, 6), "float32")
    outs = [
        topi.reshape(A, (I64(-1),)),
        topi.reshape(A, np.array([3, -1])),
        topi.reshape(A, (np.int32(2), I64(12))),
    ]
    assert [tuple(int(d) for d in o.shape) for o in outs] == [(24,), (3, 8), (2, 12)]
    run([A], outs, [a], [a.reshape(-1), a.reshape(3, -1), a.reshape(2, 12)])


def test_axes_take_numpy_integers():
    A = tvm.placeholder((3, 4), name="A")
    a = random((3, 4), "float32")
    idx = np.array([2, 0], "int32")
    Idx = tvm.placeholder((2,), "int32", name="idx")
    outs = [
        topi.sum(A, axis=I64(1)),
        topi.sum(A, axis=np.array([0, 1])),
        topi.mean(A, axis=(np.int32(0),), keepdims=True),
        topi.argmax(A, axis=I64(-1)),
        topi.concatenate([A, A], axis=I64(1)),
        topi.take(A, Idx, axis=I64(1)),
        topi.take(A, I64(5)),
        topi.nn.softmax(A, axis=I64(0)),
        topi.transpose(A, np.array([1, 0])),
        topi.flip(A, np.int8(1)),
        topi.stack([A, A], axis=I64(-1)),
        topi.expand_dims(A, I64(1), I64(2)),
    ]
    e = np.exp(a - a.max(0))
    refs = [
        a.sum(1),
        a.sum(),
        a.mean(0, keepdims=True),
        a.argmax(-1),
        np.concatenate([a, a], 1),
        np.take(a, idx, 1),
        np.take(a, 5),
        e / e.sum(0),
        a.T,
        a[:, ::-1],
        np.stack([a, a], -1),
        a[:, None, None],
    ]
    run([A, Idx], outs, [a, idx], refs)


def test_sizes_and_strides_take_numpy_integers():
    X = tvm.placeholder((1, 2, 8, 8), name="X")
    W = tvm.placeholder((3, 2, 3, 3), name="W")
    A = tvm.placeholder((2, 3), name="A")
    x, w, a = (
        random((1, 2, 8, 8), "float32"),
        random((3, 2, 3, 3), "float32", 1),
        random((2, 3), "float32", 2),
    )
    begin, end = np.array([0, 2]), np.array([2, 0])
    outs = [
        topi.nn.conv2d(X, W, strides=I64(2), padding=I64(1), dilation=(I64(1), 1)),
        topi.nn.max_pool2d(X, I64(2)),
        topi.nn.avg_pool2d(X, (np.int32(3), 3), I64(2), np.array([1, 1])),
        topi.tile(A, np.array([2, 1])),
        topi.repeat(A, I64(2), I64(0)),
        topi.strided_slice(A, begin, end, np.array([1, -1])),
        *topi.split(A, np.array([1]), axis=I64(1)),
    ]
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    refs = [
        F.conv2d(tx, tw, stride=2, padding=1).numpy(),
        F.max_pool2d(tx, 2).numpy(),
        F.avg_pool2d(tx, 3, 2, 1).numpy(),
        np.tile(a, (2, 1)),
        np.repeat(a, 2, 0),
        a[0:2, 2:0:-1],
        a[:, :1],
        a[:, 1:],
    ]
    run([X, W, A], outs, [x, w, a], refs, 1e-5, 1e-5)


_A = tvm.placeholder((5, 3), name="A")
_X = tvm.placeholder((1, 3, 8, 8), name="X")
_W = tvm.placeholder((2, 3, 3, 3), name="W")
NOT_INTS = {
    "sum axis=1.0": (
        lambda: topi.sum(_A, axis=1.0),
        r"axis of sum must be an int or a sequence of ints, found 1\.0 \(float\)",
    ),
    "sum axis=True": (
        lambda: topi.sum(_A, axis=True),
        "axis of sum must be an int or a sequence of ints, found True",
    ),
    "max axis=(0, 1.0)": (
        lambda: topi.max(_A, axis=(0, 1.0)),
        r"axis of max .*entry 1\.0 is float",
    ),
    "concatenate axis=1.0": (
        lambda: topi.concatenate([_A, _A], axis=1.0),
        r"axis of concatenate must be an int, found 1\.0",
    ),
    "softmax axis=(0,)": (
        lambda: topi.nn.softmax(_A, axis=(0,)),
        r"axis of softmax must be an int, found \(0,\)",
    ),
    "argmax axis=1.0": (
        lambda: topi.argmax(_A, axis=1.0),
        r"axis of argmax must be an int or None, found 1\.0",
    ),
    "conv2d strides=1.5": (
        lambda: topi.nn.conv2d(_X, _W, strides=1.5),
        r"strides of conv2d must be an int or a pair of ints, found 1\.5",
    ),
    "conv2d dilation=(1, 2.0)": (
        lambda: topi.nn.conv2d(_X, _W, dilation=(1, 2.0)),
        r"dilation of conv2d .*entry 2\.0 is float",
    ),
    "conv2d groups=1.0": (
        lambda: topi.nn.conv2d(_X, _W, groups=1.0),
        r"groups of conv2d must be an int, found 1\.0",
    ),
    "conv2d padding=0.5": (
        lambda: topi.nn.conv2d(_X, _W, padding=0.5),
        r"padding must be an int, a pair or a 4-tuple of ints.*found 0\.5",
    ),
    "max_pool2d 2.0": (
        lambda: topi.nn.max_pool2d(_X, 2.0),
        r"the pool kernel must be an int or a pair of ints, found 2\.0",
    ),
    "tile (2.0, 1)": (lambda: topi.tile(_A, (2.0, 1)), r"reps of tile .*entry 2\.0 is float"),
    "repeat 2.0": (
        lambda: topi.repeat(_A, 2.0, 0),
        r"repeats of repeat must be an int, found 2\.0",
    ),
    "expand_dims 0.0": (
        lambda: topi.expand_dims(_A, 0.0),
        r"axis of expand_dims must be an int, found 0\.0",
    ),
    "strided_slice [0.5]": (
        lambda: topi.strided_slice(_A, [0.5], [2]),
        r"begin of strided_slice .*entry 0\.5 is float",
    ),
    "split 1.5": (
        lambda: topi.split(_A, 1.5),
        r"indices_or_sections of split must be an int or a sequence of ints, found 1\.5",
    ),
    "group_norm 3.0": (
        lambda: topi.nn.group_norm(_X, None, None, 3.0),
        r"num_groups of group_norm must be an int, found 3\.0",
    ),
}


@pytest.mark.parametrize("case", NOT_INTS)
def test_floats_and_bools_as_ints_are_type_errors(case):
    call, message = NOT_INTS[case]
    with pytest.raises(TypeError, match=message):
        call()


def test_numpy_integers_out_of_range_are_value_errors():
    with pytest.raises(ValueError, match="strides of conv2d must be >= 1"):
        topi.nn.conv2d(_X, _W, strides=I64(0))
    with pytest.raises(ValueError, match="strides of conv2d must be an int or a pair of ints"):
        topi.nn.conv2d(_X, _W, strides=(1, 1, 1))
    with pytest.raises(ValueError, match="repeats of repeat must be an int >= 1"):
        topi.repeat(_A, I64(0), 0)
    with pytest.raises(ValueError, match="axis 2 of sum is out of range for 2 dimension"):
        topi.sum(_A, axis=I64(2))


# --- Python numbers with tensors of every dtype -------------------------------------------------

ARITH = ["add", "subtract", "multiply", "divide", "maximum", "minimum"]
COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
NUMPY = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "power": np.power,
    "floor_divide": np.floor_divide,
    "floor_mod": np.mod,
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}


def _c_divide(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """TVM's integer divide: rounds toward zero (C's ``/``), NumPy's ``//`` rounds down."""
    q = np.trunc(np.asarray(x, "float64") / np.asarray(y, "float64"))
    return q.astype(np.result_type(x, y))


def _scalar_cases(dtype: str) -> list[tuple[str, object, bool]]:
    """(op, scalar, scalar on the left) for a tensor of ``dtype``; the tensor has no zeros."""
    is_int = dtype.startswith(("int", "uint"))
    ops = ARITH + COMPARE + ["floor_divide", "floor_mod"] + ([] if is_int else ["power"])
    # Scalars in range of every dtype tested (uint8 too): NumPy raises on 300 for int8.
    scalars: list[object] = [3, 2.5] if not is_int else [3]
    cases = [(op, s, left) for op in ops for s in scalars for left in (False, True)]
    if is_int:
        # A Python float with an integer tensor: float32 (int32's behaviour), both orders.
        cases += [(op, 2.5, left) for op in ARITH + COMPARE + ["power"] for left in (False, True)]
    return cases


def _to_device(a: np.ndarray, dtype: str) -> object:
    return nd.array(a.astype(ml_dtypes.bfloat16)) if dtype == "bfloat16" else a.astype(dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "int8", "uint8", "int64"])
def test_python_scalars_take_the_tensor_dtype(dtype):
    """NumPy's rule for a Python scalar with an array: a float with a float tensor, or an int
    with any tensor, takes the tensor's dtype; a float with an integer tensor computes in
    float32 (what int32 tensors always did). Values against NumPy, the same expression with the
    same scalar (bfloat16: NumPy on the values in float32, rounded to bfloat16)."""
    is_int = dtype.startswith(("int", "uint"))
    rng = np.random.default_rng(7)
    if is_int:
        low = 1 if dtype == "uint8" else -9
        x = rng.integers(low, 10, size=(4, 5)).astype(dtype)
        x[x == 0] = 4
    else:
        # Integer values, so that floor_divide and floor_mod in float16 land on exact
        # quotients (float16's x / 3 of an integer x never rounds across an integer).
        x = rng.integers(-8, 9, size=(4, 5)).astype("float64")
        x[x == 0] = 3.0
        x[0] = [0.5, 1.5, -2.25, 4.75, 6.0]  # and some fractions for the other operators
    x_ref = x.astype("float32") if dtype == "bfloat16" else x.astype(dtype)
    X = tvm.placeholder((4, 5), dtype, name="X")
    outs, refs, labels = [], [], []
    for op, s, left in _scalar_cases(dtype):
        if op in ("floor_divide", "floor_mod") and not is_int and isinstance(s, float):
            continue  # x / 2.5 is inexact in float16: floor() may fall either side
        # power of a negative base to a fractional exponent is NaN: the base is |X|.
        lhs = topi.abs(X) if op == "power" else X
        out = getattr(topi, op)(s, X) if left else getattr(topi, op)(lhs, s)
        base = np.abs(x_ref) if op == "power" and not left else x_ref
        if is_int and isinstance(s, float):
            # float32: the tensor's values converted, the scalar a float32 constant.
            base, s_ref = base.astype("float32"), np.float32(s)
            expected_dtype = "float32" if op not in COMPARE else "bool"
        else:
            s_ref = s
            expected_dtype = dtype if op not in COMPARE else "bool"
        assert out.dtype == expected_dtype, (op, s, left, out.dtype)
        args = (s_ref, base) if left else (base, s_ref)
        if op == "divide" and is_int and isinstance(s, int):
            ref = _c_divide(*args)
        else:
            ref = NUMPY[op](*args)
        outs.append(out)
        refs.append(np.asarray(ref))
        labels.append(f"{op}({'s, X' if left else 'X, s'}) s={s!r}")
    f = tvm.build(tvm.auto_schedule(outs), [X, *outs])
    results = [
        np.empty(r.shape, "float32" if o.dtype == "bfloat16" else o.dtype)
        for o, r in zip(outs, refs, strict=True)
    ]
    device = [
        nd.empty(r.shape, o.dtype) if o.dtype == "bfloat16" else r
        for o, r in zip(outs, results, strict=True)
    ]
    f(_to_device(x_ref, dtype), *device)
    for o, res, dev, ref, label in zip(outs, results, device, refs, labels, strict=True):
        got = dev.numpy().astype("float32") if o.dtype == "bfloat16" else res
        if o.dtype == "bfloat16":
            want = ref.astype(ml_dtypes.bfloat16).astype("float32")
            np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2, err_msg=label)
        elif o.dtype == "float16":
            np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-3, err_msg=label)
        elif o.dtype.startswith("float"):
            np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6, err_msg=label)
        else:
            np.testing.assert_array_equal(got, ref.astype(o.dtype), err_msg=label)


def test_scalar_out_of_the_integer_range_is_an_error_as_in_numpy():
    X = tvm.placeholder((3,), "int8", name="X")
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        np.array([1], "int8") + 300
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        topi.add(X, 300)
    with pytest.raises(OverflowError, match="-1 out of bounds for uint8"):
        topi.subtract(tvm.placeholder((3,), "uint8"), -1)


def test_numpy_scalars_and_two_numbers():
    X = tvm.placeholder((3,), "float16", name="X")
    x = np.array([1.0, -2.5, 4.0], "float16")
    outs = [topi.multiply(X, np.float32(0.5)), topi.add(I64(2), X)]
    assert [o.dtype for o in outs] == ["float16", "float16"]
    run([X], outs, [x], [x * np.float16(0.5), x + np.float16(2)])
    # Two numbers: an expression in the default dtypes, as before.
    e = topi.add(1, 2.5)
    assert isinstance(e, tvm.Expr) and e.dtype == "float32"
    with pytest.raises(TypeError, match="rhs of add must be a Tensor, an expression or a number"):
        topi.add(X, 1 + 2j)


# --- float16 statistics in float32 --------------------------------------------------------------


def _run_half(inputs, outputs, arrays, refs, rtol, atol, dtype="float16", schedule="auto"):
    """Like ``run`` for float16/bfloat16 (bfloat16 arrays through nd.array); refs in float32."""
    s = tvm.create_schedule([o.op for o in outputs])
    if schedule == "auto":
        tvm.auto_schedule(s)
    f = tvm.build(s, [*inputs, *outputs])
    outs = [nd.empty(r.shape, o.dtype) for o, r in zip(outputs, refs, strict=True)]
    f(*[_to_device(a, dtype) for a in arrays], *outs)
    for o, got, ref in zip(outputs, outs, refs, strict=True):
        g = got.numpy().astype("float32")
        assert np.isfinite(g).all(), o.name
        np.testing.assert_allclose(g, ref, rtol=rtol, atol=atol, err_msg=o.name)


@pytest.mark.parametrize("schedule", ["auto", "naive"])
def test_float16_mean_does_not_overflow(schedule):
    X = tvm.placeholder((2, 768), "float16", name="X")
    x = np.full((2, 768), 100, "float16")
    x[1] = np.random.default_rng(0).normal(300, 50, 768).astype("float16")
    outs = [topi.mean(X, axis=-1), topi.mean(X), topi.mean(X, axis=0, keepdims=True)]
    assert [o.dtype for o in outs] == ["float16"] * 3
    x32 = x.astype("float32")
    refs = [x32.mean(-1), x32.mean(), x32.mean(0, keepdims=True)]
    _run_half([X], outs, [x], refs, 1e-3, 0.0, schedule=schedule)


@pytest.mark.parametrize("schedule", ["auto", "naive"])
def test_bfloat16_mean_accumulates_in_float32(schedule):
    X = tvm.placeholder((3, 1000), "bfloat16", name="X")
    # 1000 ones: a bfloat16 running sum stops at 256 (256 + 1 rounds back to 256), which the
    # plain schedule's accumulator, stored at every step, did.
    x = np.ones((3, 1000), "float32")
    x[2] = np.random.default_rng(1).uniform(0, 4, 1000)
    xb = x.astype(ml_dtypes.bfloat16).astype("float32")
    outs, refs = [topi.mean(X, axis=1)], [xb.mean(1)]
    _run_half([X], outs, [xb], refs, 8e-3, 0.0, "bfloat16", schedule)


@pytest.mark.parametrize(("mean", "std", "width"), [(0, 10, 768), (300, 50, 512), (2, 1, 64)])
def test_float16_layer_norm_matches_torch(mean, std, width):
    rng = np.random.default_rng(width)
    x = rng.normal(mean, std, (3, width)).astype("float16")
    g = rng.uniform(0.5, 2, width).astype("float16")
    b = rng.normal(0, 1, width).astype("float16")
    X = tvm.placeholder(x.shape, "float16", name="X")
    G, B = (
        tvm.placeholder((width,), "float16", name="G"),
        tvm.placeholder((width,), "float16", name="B"),
    )
    outs = [topi.nn.layer_norm(X, G, B, -1), topi.nn.layer_norm(X, None, None, -1)]
    assert [o.dtype for o in outs] == ["float16", "float16"]
    t = [torch.from_numpy(v.astype("float32")) for v in (x, g, b)]
    refs = [F.layer_norm(t[0], (width,), t[1], t[2]).numpy(), F.layer_norm(t[0], (width,)).numpy()]
    for schedule in ("auto", "naive"):
        # float16's rounding of outputs up to ~8: 2^-11 relative.
        _run_half([X, G, B], outs, [x, g, b], refs, 2e-3, 4e-3, schedule=schedule)


def test_float16_group_norm_matches_torch():
    rng = np.random.default_rng(3)
    x = rng.normal(300, 50, (2, 8, 16, 16)).astype("float16")
    g = rng.uniform(0.5, 2, 8).astype("float16")
    b = rng.normal(0, 1, 8).astype("float16")
    X = tvm.placeholder(x.shape, "float16", name="X")
    G, B = tvm.placeholder((8,), "float16", name="G"), tvm.placeholder((8,), "float16", name="B")
    outs = [topi.nn.group_norm(X, G, B, 4), topi.nn.group_norm(X, None, None, 2)]
    t = [torch.from_numpy(v.astype("float32")) for v in (x, g, b)]
    refs = [F.group_norm(t[0], 4, t[1], t[2]).numpy(), F.group_norm(t[0], 2).numpy()]
    for schedule in ("auto", "naive"):
        _run_half([X, G, B], outs, [x, g, b], refs, 2e-3, 4e-3, schedule=schedule)


def test_bfloat16_layer_norm_matches_torch():
    rng = np.random.default_rng(4)
    x = rng.normal(50, 10, (2, 384)).astype(ml_dtypes.bfloat16).astype("float32")
    X = tvm.placeholder(x.shape, "bfloat16", name="X")
    ref = F.layer_norm(torch.from_numpy(x), (384,)).numpy()
    # bfloat16 keeps 8 bits: outputs up to ~4 round by up to 2^-8 * 4.
    out = topi.nn.layer_norm(X, None, None, -1)
    for schedule in ("auto", "naive"):
        _run_half([X], [out], [x], [ref], 1e-2, 2e-2, "bfloat16", schedule)


def test_float32_norm_graphs_are_unchanged():
    """float32 statistics are read and kept as they were: no casts anywhere, and the automatic
    scheduler still finds its one-pass moments (keyed by the sum of squares' attribute)."""
    X = tvm.placeholder((4, 64), name="X")
    G = tvm.placeholder((64,), name="G")
    Y = topi.nn.layer_norm(X, G, G, -1)
    M = topi.mean(X, axis=1)
    stages = {}

    def walk(t):
        for u in t.op.input_tensors:
            walk(u)
        stages[t.op.name] = t.op

    walk(Y)
    walk(M)
    assert {
        "T_layer_norm_sum",
        "T_layer_norm_mean",
        "T_layer_norm_sqsum",
        "X_sum",
        "X_mean",
    } <= set(stages)
    assert all("float32(" not in str(op.body) for op in stages.values() if hasattr(op, "body"))
    assert stages["T_layer_norm_sqsum"].attrs["moments"] == 1
    assert str(stages["X_mean"].body) == "[(X_sum[i0] / 64.0)]"
    assert tvm.auto_schedule_space(Y)["default"]["T_layer_norm_sqsum"]["one_pass_moments"] == 1


# --- softplus in float16 ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_softplus_matches_torch(dtype):
    x = np.array([-30, -3, 0, 1, 5, 11, 11.5, 12, 15, 19.5, 20, 25, 100], "float32")
    x = x.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype).astype("float32")
    X = tvm.placeholder(x.shape, dtype, name="X")
    outs = [topi.nn.softplus(X), topi.nn.softplus(X, beta=2.0, threshold=15.0)]
    assert [o.dtype for o in outs] == [dtype, dtype]
    t = torch.from_numpy(x)
    refs = [F.softplus(t).numpy(), F.softplus(t, beta=2.0, threshold=15.0).numpy()]
    tol = 8e-3 if dtype == "bfloat16" else 1e-3
    _run_half([X], outs, [x], refs, tol, 1e-3, dtype)


# --- error messages -----------------------------------------------------------------------------


def test_strided_slice_with_more_entries_than_dimensions():
    A = tvm.placeholder((5, 3), name="A")
    with pytest.raises(ValueError, match=r"begin has 3 entries \(end 3\) but a has 2 dimension"):
        topi.strided_slice(A, [0, 0, 0], [2, 2, 2])
    with pytest.raises(ValueError, match=r"must have the same length, found 2, 3, 2, 2"):
        topi.strided_slice(A, [0, 0], [2, 2, 2])
    with pytest.raises(ValueError, match="repeat an axis"):
        topi.strided_slice(A, [0, 1], [2, 3], axes=[1, -1])
    # With axes, fewer entries than dimensions slice the named axes only.
    a = random((5, 3), "float32")
    run([A], topi.strided_slice(A, [1], [None], axes=[I64(1)]), [a], a[:, 1:])


def test_expand_dims_num_newaxis():
    A = tvm.placeholder((5, 3), name="A")
    with pytest.raises(ValueError, match="num_newaxis of expand_dims must be >= 0, found -1"):
        topi.expand_dims(A, 0, -1)
    a = random((5, 3), "float32")
    run(
        [A],
        [topi.expand_dims(A, 0, 0), topi.expand_dims(A, -1, 3)],
        [a],
        [a, a[..., None, None, None]],
    )


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_argmax_argmin_of_a_0d_tensor(dtype):
    """NumPy and PyTorch: a 0-d array is one element, its index 0 (axis None, 0 or -1)."""
    X = tvm.placeholder((), dtype, name="X")
    x = np.array(-3, dtype)
    outs = [
        topi.argmax(X),
        topi.argmin(X, axis=0),
        topi.argmax(X, axis=-1, keepdims=True),
        topi.argmin(X, select_last_index=True),
    ]
    assert all(o.dtype == "int32" and o.shape == () for o in outs)
    refs = [np.argmax(x), np.argmin(x, axis=0), np.argmax(x, axis=-1, keepdims=True), np.argmin(x)]
    assert int(torch.argmax(torch.tensor(-3.0))) == 0
    for schedule in ("naive", "auto"):
        run([X], outs, [x], [np.asarray(r, "int32") for r in refs], schedule=schedule)
    with pytest.raises(ValueError, match="axis 1 of argmax is out of range for a 0-d tensor"):
        topi.argmax(X, axis=1)
    with pytest.raises(TypeError, match="argmin needs a numeric tensor"):
        topi.argmin(tvm.placeholder((), "bool"))


def test_operators_over_int64_size_variables():
    # int32 index arithmetic (a constant-extent loop variable, a constant offset) met int64
    # sizes and raised "operands of + have different dtypes: int64 and int32" in conv2d,
    # strided_slice, reshape, concatenate, adaptive pooling and argmax; @kernel gives its
    # variants for inputs of 2**31 elements or more int64 sizes, so they could not be built
    n = tvm.var("n", "int64")
    rng = np.random.default_rng(0)
    x = rng.random((1, 3, 7, 7), dtype=np.float32)
    w = rng.random((4, 3, 3, 3), dtype=np.float32)

    def build(args, out):
        return tvm.build(tvm.auto_schedule(out), [*args, out])

    X, W = tvm.placeholder((1, 3, n, n), name="X"), tvm.placeholder((4, 3, 3, 3), name="W")
    y = np.empty((1, 4, 7, 7), np.float32)
    build([X, W], topi.nn.conv2d(X, W, 1, 1))(x, w, y)
    want = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy()
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    pooled = np.empty((1, 3, 2, 2), np.float32)
    build([X], topi.nn.adaptive_pool(X, (2, 2), "avg"))(x, pooled)
    want = F.adaptive_avg_pool2d(torch.from_numpy(x), 2).numpy()
    np.testing.assert_allclose(pooled, want, rtol=1e-5)
    A = tvm.placeholder((n,), name="A")
    a = np.arange(9, dtype=np.float32)
    out = np.empty(7, np.float32)
    build([A], topi.strided_slice(A, [1], [-1]))(a, out)
    np.testing.assert_array_equal(out, a[1:-1])
    B = tvm.placeholder((n, 4), name="B")
    b = rng.random((5, 4), dtype=np.float32)
    flat = np.empty(20, np.float32)
    build([B], topi.reshape(B, (-1,)))(b, flat)
    np.testing.assert_array_equal(flat, b.ravel())
    C, D = tvm.placeholder((n, 2), name="C"), tvm.placeholder((3, 2), name="D")
    c, d = rng.random((4, 2), dtype=np.float32), rng.random((3, 2), dtype=np.float32)
    joined = np.empty((7, 2), np.float32)
    build([C, D], topi.concatenate([C, D]))(c, d, joined)
    np.testing.assert_array_equal(joined, np.concatenate([c, d]))
    M = tvm.placeholder((n, n), name="M")
    index = topi.argmax(M, axis=1)
    assert index.dtype == "int64"  # an index along an int64 axis (NumPy's intp)
    m = rng.random((6, 6), dtype=np.float32)
    got = np.empty(6, np.int64)
    build([M], index)(m, got)
    np.testing.assert_array_equal(got, m.argmax(1))
