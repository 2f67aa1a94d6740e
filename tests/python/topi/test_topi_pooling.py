import numpy as np
import pytest
import torch
import torch.nn.functional as F
from topi_testing import random, run

import pytvmbridge as tvm
from pytvmbridge import topi


def assert_each_schedule_equal(schedules: list, X: tvm.Tensor, Y: tvm.Tensor, x, ref) -> None:
    """Builds Y under each schedule and checks its output on x equals ref exactly."""
    for schedule in schedules:
        f = tvm.build(schedule, [X, Y])
        out = np.empty(ref.shape, "float32")
        f(x, out)
        np.testing.assert_array_equal(out, ref)


# (H, W), kernel, stride, padding, ceil_mode, (dilation for max pooling)
CASES = [
    ((7, 7), 3, 2, 1, False, 1),
    ((8, 9), (2, 3), (2, 1), (1, 1), True, 1),
    ((5, 5), 2, 2, 0, True, 1),
    ((11, 6), 3, 3, 1, True, 2),
    ((1, 1), 1, 1, 0, False, 1),
    ((13, 13), 3, 2, 1, True, 1),
]


@pytest.mark.parametrize(("hw", "kernel", "stride", "padding", "ceil_mode", "dilation"), CASES)
def test_max_and_avg_pool_match_torch(hw, kernel, stride, padding, ceil_mode, dilation):
    shape = (2, 3, *hw)
    X = tvm.placeholder(shape, name="X")
    x = random(shape, "float32")
    xt = torch.from_numpy(x)
    outs = [topi.nn.max_pool2d(X, kernel, stride, padding, dilation, ceil_mode)]
    refs = [F.max_pool2d(xt, kernel, stride, padding, dilation, ceil_mode)]
    if dilation == 1:
        for include in (True, False):
            outs.append(topi.nn.avg_pool2d(X, kernel, stride, padding, ceil_mode, include))
            refs.append(F.avg_pool2d(xt, kernel, stride, padding, ceil_mode, include))
    run([X], outs, [x], [r.numpy() for r in refs])
    assert outs[0].op.tag == "pool_max"


@pytest.mark.parametrize("dtype", ["float64", "int32", "float16"])
def test_pool_dtypes(dtype):
    X = tvm.placeholder((1, 2, 6, 7), dtype, name="X")
    x = random((1, 2, 6, 7), dtype, low=-50, high=50)
    xt = torch.from_numpy(x.astype("float64"))
    outs = [topi.nn.max_pool2d(X, 3, 2, 1)]
    refs = [F.max_pool2d(xt, 3, 2, 1).numpy()]
    if dtype != "int32":
        outs.append(topi.nn.avg_pool2d(X, 2, 1, 1, count_include_pad=False))
        refs.append(F.avg_pool2d(xt, 2, 1, 1, count_include_pad=False).numpy())
    run([X], outs, [x], refs)


def test_pool_with_asymmetric_padding_and_symbolic_sizes():
    n, h, w = tvm.var("n"), tvm.var("h"), tvm.var("w")
    X = tvm.placeholder((n, 2, h, w), name="X")
    outs = [
        topi.nn.pool2d(X, (2, 2), (2, 2), (1, 1), (0, 1, 1, 0), "max"),
        topi.nn.avg_pool2d(X, 3, 2, 1, ceil_mode=True),
        topi.nn.max_pool2d(X, 3, 2, 1, ceil_mode=True),
    ]
    for shape in [(1, 2, 7, 6), (2, 2, 5, 9)]:
        x = random(shape, "float32")
        xt = torch.from_numpy(x)
        ref0 = F.max_pool2d(F.pad(xt, (1, 0, 0, 1), value=-np.inf), 2, 2)
        refs = [
            ref0,
            F.avg_pool2d(xt, 3, 2, 1, ceil_mode=True),
            F.max_pool2d(xt, 3, 2, 1, ceil_mode=True),
        ]
        run([X], outs, [x], [r.numpy() for r in refs])


@pytest.mark.parametrize(("hw", "out"), [((7, 7), 1), ((10, 7), (3, 4)), ((5, 5), 5), ((1, 3), 2)])
def test_adaptive_pools_match_torch(hw, out):
    X = tvm.placeholder((2, 3, *hw), name="X")
    x = random((2, 3, *hw), "float32")
    xt = torch.from_numpy(x)
    outs = [
        topi.nn.adaptive_avg_pool2d(X, out),
        topi.nn.adaptive_max_pool2d(X, out),
        topi.nn.adaptive_pool(X, out, "max"),
    ]
    refs = [F.adaptive_avg_pool2d(xt, out), F.adaptive_max_pool2d(xt, out)]
    refs.append(refs[1])
    run([X], outs, [x], [r.numpy() for r in refs])
    assert outs[0].op.tag == "adaptive_pool_avg"


@pytest.mark.parametrize(
    ("shape", "one_run"),
    [
        ((1, 512, 7, 7), True),
        ((2, 3, 9, 7), True),
        ((2, 5, 15, 15), True),
        ((2, 3, 5, 7), False),
        ((1, 1, 3, 3), False),
        ((1, 4, 1, 3), False),
    ],
)
def test_global_pools_of_odd_rows_read_as_one_run(shape, one_run):
    """A global pool of odd-width rows of 41-256 elements reads the image as one padded run:
    auto-scheduled, compact (contiguous loads) and strided (the generic kernel) inputs give
    PyTorch's mean and max, +-inf and NaN included (a max over only -inf is still the reduction's
    -3.4e38, not changed here), and the lowered loop has one reduce axis of
    the next power of two past h * w."""
    n, c, h, w = shape
    X = tvm.placeholder(shape, name="X")
    avg = topi.nn.adaptive_avg_pool2d(X, 1)
    mx = topi.nn.adaptive_max_pool2d(X, 1)
    s = tvm.auto_schedule([avg, mx])
    text = str(tvm.lower(s, [X, avg, mx]))
    # one reduce axis rk, vectors of 16 of it guarded at h * w; or rows (rx)
    assert ("rk" in text and f"< x16({h * w}))" in text) == one_run, text
    assert ("rx" in text) != one_run, text
    f = tvm.build(s, [X, avg, mx])
    x = torch.from_numpy(random(shape, "float32", seed=3))
    x[0, 0, h - 1, w - 1] = float("-inf")
    if c > 1:
        x[0, 1, 0, :] = float("inf")
        x[-1, -1, 0, 0] = float("nan")
    # the same values in a strided view: every other element of a wider image
    wide = torch.full((n, c, h, 2 * w), 7.0)
    wide[..., ::2] = x
    for xin in (x, wide[..., ::2]):
        out_avg, out_max = torch.empty(n, c, 1, 1), torch.empty(n, c, 1, 1)
        f(xin, out_avg, out_max)
        torch.testing.assert_close(out_avg, F.adaptive_avg_pool2d(x, 1), equal_nan=True)
        torch.testing.assert_close(out_max, F.adaptive_max_pool2d(x, 1), equal_nan=True)


def test_adaptive_and_global_pool_symbolic():
    h, w = tvm.var("h"), tvm.var("w")
    X = tvm.placeholder((1, 4, h, w), name="X")
    outs = [
        topi.nn.adaptive_avg_pool2d(X, (2, 3)),
        topi.nn.global_pool(X, "avg"),
        topi.nn.global_pool(X, "max"),
    ]
    for hw in [(7, 9), (4, 3)]:
        x = random((1, 4, *hw), "float32")
        xt = torch.from_numpy(x)
        refs = [
            F.adaptive_avg_pool2d(xt, (2, 3)),
            xt.mean((2, 3), keepdim=True),
            xt.amax((2, 3), keepdim=True),
        ]
        run([X], outs, [x], [r.numpy() for r in refs])


def test_pool_errors():
    X = tvm.placeholder((1, 1, 4, 4), name="X")
    with pytest.raises(ValueError, match="pool_type must be 'max' or 'avg'"):
        topi.nn.pool2d(X, 2, 2, 1, 0, "min")
    with pytest.raises(ValueError, match="larger than the padded input"):
        topi.nn.max_pool2d(X, 5)
    with pytest.raises(TypeError, match="avg pooling needs a float tensor"):
        topi.nn.avg_pool2d(tvm.placeholder((1, 1, 4, 4), "int32"), 2)
    with pytest.raises(ValueError, match="the pool stride must be >= 1"):
        topi.nn.max_pool2d(X, 2, 0)


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding", "dilation"),
    [
        ((1, 1, 1, 4), 2, 2, 0, 1),
        ((1, 1, 7, 4), 3, 2, 0, 2),
        ((2, 3, 1, 1), 3, 2, 1, 1),
        ((1, 2, 3, 5), (4, 2), 3, (1, 0), 1),
    ],
)
def test_ceil_mode_window_larger_than_the_padded_input(shape, kernel, stride, padding, dilation):
    # PyTorch's output size is a floor division after rounding up: with ceil_mode a window
    # wider than the padded input still makes one output, over the part that exists
    X = tvm.placeholder(shape, name="X")
    x = random(shape, "float32")
    xt = torch.from_numpy(x)
    outs = [topi.nn.max_pool2d(X, kernel, stride, padding, dilation, True)]
    refs = [F.max_pool2d(xt, kernel, stride, padding, dilation, ceil_mode=True).numpy()]
    if dilation == 1:
        for include_pad in (True, False):
            outs.append(topi.nn.avg_pool2d(X, kernel, stride, padding, True, include_pad))
            refs.append(F.avg_pool2d(xt, kernel, stride, padding, True, include_pad).numpy())
    run([X], outs, [x], refs, rtol=1e-6, atol=1e-6)


def test_auto_scheduled_max_pool_propagates_nan():
    # The auto schedule takes 16 output columns per vector step, each the maximum of a padded
    # window element (a select) and the running maximum: NaN in a window must give NaN, as
    # NumPy's max over the window does (PyTorch's max_pool2d does too).
    shape = (1, 3, 40, 68)
    A = tvm.placeholder(shape, name="A")
    a = random(shape, "float32")
    a[0, 0, 5, 9] = a[0, 1, 0, 0] = a[0, 2, 39, 67] = np.nan
    a[0, 2, 10, 20:40] = np.nan
    padded = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    ref = windows[:, :, ::2, ::2].max(axis=(-2, -1))
    assert np.isnan(ref).any()
    out = topi.nn.max_pool2d(A, (3, 3), (2, 2), (1, 1))
    run([A], out, [a], ref, rtol=0, atol=0, schedule="auto")


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding", "ceil_mode", "dilation"),
    [
        ((2, 3, 20, 37), 3, 2, 1, False, 1),
        ((1, 3, 28, 28), 3, 2, 1, False, 1),  # 14-wide output rows
        ((1, 2, 10, 9), 3, 2, 1, True, 1),  # 5-wide
        ((1, 1, 9, 230), 3, 2, 1, False, 1),  # 115-wide
        ((1, 4, 13, 50), (2, 3), (2, 2), (0, 1), True, 1),
        ((1, 2, 17, 60), 3, (1, 3), 1, False, 2),
        ((1, 2, 12, 70), 5, 2, 0, False, 1),
        ((1, 2, 9, 33), (4, 2), (3, 2), (1, 0), True, 1),
    ],
)
def test_separable_max_pool_row_buffer(shape, kernel, stride, padding, ceil_mode, dilation):
    # A max pool with a stride across the columns is two maxima: down each column of the
    # window's rows (pool_max_rows), then across the columns at the stride. The auto schedule
    # computes the column maxima for one output row into a row buffer inside the output's loop
    # over rows ("window_rows"); the same values as PyTorch, exactly (a maximum), with
    # infinities, and with the knob off (the buffer stored whole) and the default schedule.
    X = tvm.placeholder(shape, name="X")
    Y = topi.nn.max_pool2d(X, kernel, stride, padding, dilation, ceil_mode)
    assert Y.op.tag == "pool_max"
    assert tvm.auto_schedule_space(Y)["rules"]["pool_max_rows"] == "window_rows"
    text = str(tvm.lower(tvm.auto_schedule(Y), [X, Y]))
    assert "allocate pool_max_rows[float32 * 1 * 1 * 1 * " in text
    off = tvm.auto_schedule(Y, config={Y.op.name: {"window_rows": 0}})
    assert "allocate pool_max_rows[float32 * 1 * 1 * 1 * " not in str(tvm.lower(off, [X, Y]))
    x = random(shape, "float32") * 10
    x[0, 0, 1, :5] = -np.inf
    x[0, -1, -1, -3:] = np.inf
    ref = F.max_pool2d(torch.from_numpy(x), kernel, stride, padding, dilation, ceil_mode).numpy()
    assert_each_schedule_equal([tvm.auto_schedule(Y), off, tvm.create_schedule(Y.op)], X, Y, x, ref)


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding"),
    [
        ((1, 2, 56, 56), 2, 2, 0),
        ((1, 2, 112, 112), 3, 2, 0),
        ((1, 2, 7, 7), 3, 2, 1),
        ((1, 2, 56, 56), 3, 1, 1),
    ],
)
def test_max_pool_stays_one_stage_where_separable_is_slower(shape, kernel, stride, padding):
    # Unpadded 2x2 and 3x3 stride-2 pools, output rows under 5 columns and stride 1 keep the
    # single stage (the row buffer was measured slower there); same values as PyTorch.
    X = tvm.placeholder(shape, name="X")
    Y = topi.nn.max_pool2d(X, kernel, stride, padding)
    assert "pool_max_rows" not in tvm.auto_schedule_space(Y)["rules"]
    x = random(shape, "float32")
    ref = F.max_pool2d(torch.from_numpy(x), kernel, stride, padding).numpy()
    run([X], Y, [x], ref, rtol=0, atol=0, schedule="auto")


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding"),
    [((1, 1, 33, 33), 3, 2, 1), ((2, 3, 21, 112), 3, 2, 1), ((1, 2, 7, 61), (2, 4), (1, 3), 0)],
)
def test_separable_max_pool_windows_of_minus_infinity(shape, kernel, stride, padding):
    # The separable form is two chains of element-wise maxima (no reduction identity, the
    # padding -inf): a window holding only -inf gives -inf, as PyTorch's does (a reduction
    # starting from the lowest finite float gave -3.4e38), NaN anywhere in a window gives NaN
    # and +inf wins. Odd widths, one channel, a stride of 1 down the rows.
    X = tvm.placeholder(shape, name="X")
    Y = topi.nn.max_pool2d(X, kernel, stride, padding)
    assert tvm.auto_schedule_space(Y)["rules"]["pool_max_rows"] == "window_rows"
    text = str(tvm.lower(tvm.auto_schedule(Y), [X, Y]))
    assert "-3.40282347e+38" not in text and "allocate pool_max_rows" in text
    x = random(shape, "float32")
    x[..., : shape[2] // 2, :] = -np.inf
    x[0, 0, -1, -1] = np.nan
    x[-1, -1, -2, 3] = np.inf
    ref = F.max_pool2d(torch.from_numpy(x), kernel, stride, padding).numpy()
    assert np.isneginf(ref).any() and np.isnan(ref).any() and np.isposinf(ref).any()
    assert_each_schedule_equal([tvm.auto_schedule(Y), tvm.create_schedule(Y.op)], X, Y, x, ref)


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding"),
    [((1, 1, 4, 4), 2, 2, 0), ((2, 1, 7, 9), 3, 2, 1), ((1, 2, 9, 40), 3, 2, 1)],
)
def test_max_pool_of_ties_and_minus_infinity(shape, kernel, stride, padding):
    # Small windows (up to 16 elements; the separable form too) are chains of element-wise
    # maxima: a window of only -inf gives -inf as PyTorch's does (a reduction starts from
    # -3.4e38), and te.gradient of a window of equal values sends the head to one element, as
    # torch.autograd does (a reduction's gradient went to every tied element).
    X = tvm.placeholder(shape, name="X")
    Y = topi.nn.max_pool2d(X, kernel, stride, padding)
    x = np.ones(shape, "float32")
    x[0, 0, 0, 1] = 2.0
    x[-1, -1, -3:, :] = -np.inf
    ref = F.max_pool2d(torch.from_numpy(x), kernel, stride, padding).numpy()
    assert np.isneginf(ref).any()
    run([X], Y, [x], ref, rtol=0, atol=0, schedule="auto")
    X64 = tvm.placeholder(shape, name="X64", dtype="float64")
    Y64 = topi.nn.max_pool2d(X64, kernel, stride, padding)
    head = tvm.placeholder(Y64.shape, name="head", dtype="float64")
    (grad,) = tvm.te.gradient(Y64, [X64], head)
    f = tvm.build(tvm.auto_schedule([grad]), [X64, head, grad])
    x64 = np.ones(shape)
    x64[0, 0, 0, 1] = 2.0
    t = torch.tensor(x64, requires_grad=True)
    h = np.random.default_rng(0).standard_normal(ref.shape)
    (want,) = torch.autograd.grad(F.max_pool2d(t, kernel, stride, padding), [t], torch.tensor(h))
    got = np.empty(shape)
    f(x64, h, got)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding", "ceil_mode"),
    [
        ((1, 2, 10, 40), 3, 2, (2, 1, 0, 2), False),
        ((2, 1, 9, 37), (3, 2), (3, 2), (0, 1, 2, 0), True),
        ((1, 1, 2, 50), 3, 2, (1, 1, 1, 1), True),
    ],
)
def test_separable_max_pool_padded_rows_read_as_edge_rows(
    shape, kernel, stride, padding, ceil_mode
):
    # Where every window holds an input row, the separable form reads a padded row as the
    # nearest input row (a clamped index: the same maximum) and keeps a select for the padded
    # columns only. Asymmetric padding up to kernel - 1, ceil mode's extra rows, a 2-row input;
    # -inf and NaN on the edge rows. Reference: PyTorch on the input padded with -inf.
    X = tvm.placeholder(shape, name="X")
    Y = topi.nn.max_pool2d(X, kernel, stride, padding, ceil_mode=ceil_mode)
    assert tvm.auto_schedule_space(Y)["rules"]["pool_max_rows"] == "window_rows"
    x = random(shape, "float32")
    x[..., 0, ::3] = -np.inf
    x[..., -1, 1::4] = np.nan
    x[0, 0, -1, :7] = -np.inf
    top, left, bottom, right = padding
    xp = F.pad(torch.from_numpy(x), (left, right, top, bottom), value=-np.inf)
    ref = F.max_pool2d(xp, kernel, stride, 0, ceil_mode=ceil_mode).numpy()
    ref = ref[..., : Y.shape[2], : Y.shape[3]]
    assert ref.shape == tuple(int(d) for d in Y.shape)
    assert_each_schedule_equal([tvm.auto_schedule(Y), tvm.create_schedule(Y.op)], X, Y, x, ref)


@pytest.mark.parametrize("shape", [(2, 3, 7, 7), (1, 2, 9, 7)])
def test_gradient_of_global_pools_read_as_one_run(shape):
    """te.gradient of the one-run global pools solves the run's index k from the (k // w,
    k % w) pair (no sum over k per element: the lowered gradient has no loop over rk_r) and
    matches torch.autograd, for the mean and for the max."""
    X = tvm.placeholder(shape, name="X")
    x = torch.from_numpy(random(shape, "float32", seed=5)).requires_grad_()
    for pool, ref_pool in [
        (topi.nn.adaptive_avg_pool2d, F.adaptive_avg_pool2d),
        (topi.nn.adaptive_max_pool2d, F.adaptive_max_pool2d),
    ]:
        Y = pool(X, 1)
        H = tvm.placeholder(Y.shape, name="H")
        [dX] = tvm.te.gradient(Y, [X], head=H)
        s = tvm.auto_schedule([dX])
        assert "rk_r" not in str(tvm.lower(s, [X, H, dX]))  # the gradient sums over no k
        f = tvm.build(s, [X, H, dX])
        h = torch.from_numpy(random((shape[0], shape[1], 1, 1), "float32", seed=6))
        out = torch.empty(shape)
        f(x.detach(), h, out)
        x.grad = None
        ref_pool(x, 1).backward(h)
        torch.testing.assert_close(out, x.grad)


def test_gradient_of_a_div_mod_read_whose_remainder_axis_is_longer():
    """A read X[k // 3, k % 3] of a (4, 5) tensor: the pair is not one index (column 3 and 4
    are never read), so the gradient keeps the general form; its values against a hand
    calculation (column j < 3 of row i gets the head at k = 3 i + j)."""
    X = tvm.placeholder((4, 5), name="X")
    k = tvm.te.reduce_axis((0, 12), name="k")
    Y = tvm.te.compute(
        (2,),
        lambda i: tvm.te.sum(X[tvm.te.floordiv(k, 3), tvm.te.floormod(k, 3)] * (i + 1), axis=k),
    )
    H = tvm.placeholder((2,), name="H")
    [dX] = tvm.te.gradient(Y, [X], head=H)
    f = tvm.build(tvm.auto_schedule([dX]), [X, H, dX])
    h = np.array([0.5, 2.0], "float32")
    out = np.empty((4, 5), "float32")
    f(np.zeros((4, 5), "float32"), h, out)
    expected = np.zeros((4, 5), "float32")
    expected[:, :3] = 0.5 * 1 + 2.0 * 2
    np.testing.assert_allclose(out, expected)


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding", "ceil_mode", "include"),
    [
        ((1, 64, 56, 56), 2, 2, 0, False, True),  # ResNet's: 28 outputs a row (16 + 12)
        ((2, 3, 9, 13), 2, 2, 0, True, True),
        ((1, 5, 15, 15), 3, 2, 1, False, False),
        ((1, 2, 8, 33), (2, 3), (2, 3), (1, 1), True, True),
        ((3, 1, 1, 1), 1, 1, 0, False, True),
        ((1, 4, 7, 40), 4, 4, 0, False, True),  # 16 taps: still one sum
    ],
)
def test_auto_scheduled_avg_pool_of_small_windows_is_one_sum(
    shape, kernel, stride, padding, ceil_mode, include
):
    # Windows of up to 16 taps: one injective sum of the taps (column sums first), run in
    # parallel over (batch, channel) where the input is large, no reduction loop; values as
    # PyTorch's, with +-inf and NaN.
    X = tvm.placeholder(shape, name="X")
    Y = topi.nn.avg_pool2d(X, kernel, stride, padding, ceil_mode, include)
    x = random(shape, "float32", seed=5)
    flat = x.reshape(-1)
    flat[::37] = np.inf
    flat[5::41] = -np.inf
    flat[11::53] = np.nan
    s = tvm.auto_schedule([Y])
    text = str(tvm.lower(s, [X, Y], simple_mode=True))
    assert "pool_sum" not in text, text  # inlined into the division, no accumulator
    if shape[1] * shape[2] * shape[3] >= 1 << 16:
        assert text.count("parallel") == 1, text
    f = tvm.build(s, [X, Y])
    out = np.empty([int(d) for d in Y.shape], "float32")
    f(x, out)
    ref = F.avg_pool2d(torch.from_numpy(x), kernel, stride, padding, ceil_mode, include).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)


def test_avg_pool_of_a_large_window_stays_a_reduction():
    X = tvm.placeholder((1, 2, 12, 12), name="X")
    Y = topi.nn.avg_pool2d(X, (4, 5), 2, 1)
    s = tvm.auto_schedule([Y])
    assert "allocate pool_sum" in str(tvm.lower(s, [X, Y], simple_mode=True))
    x = random((1, 2, 12, 12), "float32", seed=6)
    out = np.empty([int(d) for d in Y.shape], "float32")
    tvm.build(s, [X, Y])(x, out)
    ref = F.avg_pool2d(torch.from_numpy(x), (4, 5), 2, 1).numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
