"""Reductions compiled by the graph backend (graph/ops_reductions.py), values against eager
PyTorch: variance and standard deviation, vector norms (and F.normalize, cosine similarity),
products, any/all, argmax/argmin, max/min with indices, cumulative sums and products. Every
compile is strict, so an operator left to PyTorch fails the test."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from pytvmbridge.graph import UnsupportedOperatorError

TOLERANCE = {
    torch.float32: {"rtol": 1.3e-6, "atol": 1e-5},
    torch.float64: {"rtol": 1e-12, "atol": 1e-12},
    torch.float16: {"rtol": 2e-3, "atol": 2e-3},
    torch.bfloat16: {"rtol": 1.6e-2, "atol": 1.6e-2},
}
DTYPES = list(TOLERANCE)


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="pytvmbridge", options={"strict": True})


def _check(fn, *args, dtype=torch.float32, exact=False, **tolerance):
    got, want = _compiled(fn)(*args), fn(*args)
    tol = {"rtol": 0, "atol": 0} if exact else {**TOLERANCE[dtype], **tolerance}
    torch.testing.assert_close(got, want, equal_nan=True, **tol)
    return got


# --- variance ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, dim, correction, keepdim",
    [
        ((4, 37), -1, None, False),
        ((3, 5, 11), [0, 2], 0, True),
        ((13,), None, 1.5, False),
        ((2, 1, 3), 1, 1, False),  # one element and correction 1: NaN, as eager
        ((7, 2), 0, 2, True),  # n - correction = 0 over unequal values: inf
        ((5, 4), [], 1, False),  # [] is every dimension
        ((), None, 0, False),
    ],
)
def test_var_std_and_var_mean(shape, dim, correction, keepdim):
    torch.manual_seed(0)
    x = torch.randn(shape)

    def f(t):
        kw = {"correction": correction, "keepdim": keepdim}
        return (
            t.var(dim, **kw),
            t.std(dim, **kw),
            *torch.var_mean(t, dim, **kw),
            *torch.std_mean(t, dim, **kw),
        )

    _check(f, x)


def test_var_of_a_large_mean_is_stable():
    """Rows of 1e4 + randn: a one-pass E[x^2] - E[x]^2 in float32 loses every digit there
    (1e8 - 1e8); the mean, then the squared deviations from it, match eager."""
    torch.manual_seed(1)
    x = 1e4 + torch.randn(6, 3001)
    got = _check(lambda t: (t.var(-1), t.std(0), t.var()), x)
    assert got[0].min() > 0.5  # the variance itself, not cancellation noise


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=str)
def test_var_in_dtype(dtype):
    torch.manual_seed(2)
    x = (3 + torch.randn(5, 33)).to(dtype)
    _check(lambda t: (t.var(-1), *torch.std_mean(t, 0, correction=0)), x, dtype=dtype)


def test_var_with_dynamic_sizes():
    """The reduced count is a symbolic size: the mean and the correction divide by it."""
    f = _compiled(lambda t: (t.var(-1, keepdim=True), torch.var_mean(t, 0)))
    for shape in ((3, 7), (5, 12)):
        x = torch.randn(shape)
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(x, 1)
        torch.testing.assert_close(f(x), (x.var(-1, keepdim=True), torch.var_mean(x, 0)))


# --- vector norms --------------------------------------------------------------------------


@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 3, -1.5, 0.5])
def test_vector_norm(ord):
    torch.manual_seed(3)
    x = torch.randn(3, 5, 7)
    x[1, 2, :3] = 0.0  # zeros: counted out by ord 0, infinite terms for negative ords
    x[2, 4, 6] = -0.0

    def f(t):
        norm = torch.linalg.vector_norm
        return norm(t, ord), norm(t, ord, -1), norm(t, ord, [0, 2], keepdim=True)

    _check(f, x)


@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 3])
def test_vector_norm_propagates_nan_and_inf(ord):
    x = torch.tensor([[1.0, math.nan, 2.0], [1.0, -math.inf, 0.0], [3.0, -4.0, 0.0]])
    _check(lambda t: torch.linalg.vector_norm(t, ord, 1), x)


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=str)
def test_vector_norm_in_dtype(dtype):
    torch.manual_seed(4)
    x = torch.randn(4, 129).to(dtype)
    norm = torch.linalg.vector_norm
    _check(lambda t: (norm(t, 2, -1), norm(t, 1, 0), norm(t, math.inf)), x, dtype=dtype)


def test_normalize_and_cosine_similarity():
    torch.manual_seed(5)
    x, y = torch.randn(6, 31), torch.randn(6, 31)
    x[2] = 0.0  # a zero row: normalize's eps clamp and cosine similarity's
    _check(lambda a, b: (F.normalize(a, dim=-1), F.normalize(a, p=1, dim=0)), x, y)
    _check(lambda a, b: F.cosine_similarity(a, b), x, y)


def test_vector_norm_with_dynamic_sizes():
    f = _compiled(lambda t: F.normalize(t, dim=-1) + torch.linalg.vector_norm(t, 3, 0))
    for shape in ((2, 9), (5, 4)):
        x = torch.randn(shape)
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(x, 1)
        want = F.normalize(x, dim=-1) + torch.linalg.vector_norm(x, 3, 0)
        torch.testing.assert_close(f(x), want)


# --- products, any/all, max/min of everything ----------------------------------------------


@pytest.mark.parametrize("shape, dim", [((4, 7), -1), ((3, 1, 5), 1), ((11,), 0), ((2, 13), 0)])
def test_prod(shape, dim):
    torch.manual_seed(6)
    x = 0.5 + torch.rand(shape)
    _check(lambda t: (t.prod(dim), t.prod(dim, keepdim=True), t.prod()), x)


def test_prod_of_zeros_inf_and_nan():
    x = torch.tensor([[2.0, 0.0, 3.0], [math.inf, 0.0, 1.0], [math.nan, 1.0, 2.0], [-0.0, 1, 2]])
    _check(lambda t: (t.prod(1), t.prod(0)), x)


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=str)
def test_prod_in_dtype(dtype):
    """16-bit products accumulate in float32; eager rounds after every product (5 roundings of
    up to half an ulp each), hence the wider tolerance than a single rounding."""
    torch.manual_seed(7)
    x = (0.5 + torch.rand(4, 6)).to(dtype)
    tol = {torch.float64: 1e-12, torch.float16: 4e-3, torch.bfloat16: 3.2e-2}[dtype]
    _check(lambda t: (t.prod(-1), t.prod()), x, dtype=dtype, rtol=tol, atol=tol)


def test_any_all_on_bool_and_float():
    x = torch.tensor(
        [[0.0, 0.0, 0.0, 0.0], [0.0, -0.0, 2.0, 0.0], [1.0, 1.0, math.nan, -1.0], [1, 2, 3, 4]]
    )

    def f(t):
        b = t > 0.5
        return (
            b.any(-1), b.all(-1), b.any(), b.all(),
            t.any(0), t.all(1, keepdim=True), t.any(), t.all(),
            torch.any(b, dim=(0, 1)), torch.all(t, dim=(0, 1), keepdim=True),
            torch.ops.aten.any.dims(t, []),  # no dimension: the tensor as bool
        )  # fmt: skip

    got = _check(f, x, exact=True)
    assert all(g.dtype == torch.bool for g in got)


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=str)
def test_any_all_in_dtype(dtype):
    x = torch.tensor([[0.0, 0.5, 0.0], [0.0, 0.0, 0.0], [1.0, -2.0, 3.0]], dtype=dtype)
    _check(lambda t: (t.any(1), t.all(1), t.any(0, keepdim=True)), x, exact=True)


def test_max_min_of_everything():
    torch.manual_seed(8)
    x = torch.randn(3, 17)
    _check(lambda t: (t.max(), t.min()), x, exact=True)
    x[1, 3] = math.nan
    _check(lambda t: (t.max(), t.min()), x, exact=True)


# --- argmax/argmin, max/min with indices -------------------------------------------------


@pytest.mark.parametrize("shape", [(4, 37), (3, 128), (2, 1, 5), (1,), (7, 3, 2)])
def test_argmax_argmin(shape):
    torch.manual_seed(9)
    x = torch.randn(shape)

    def f(t):
        return (
            t.argmax(), t.argmin(), t.argmax(-1), t.argmin(0, keepdim=True),
            t.argmax(keepdim=True),
        )  # fmt: skip

    got = _check(f, x, exact=True)
    assert all(g.dtype == torch.int64 for g in got)


@pytest.mark.parametrize("n", [6, 128])  # 128: topi's one-pass form over vector lanes
def test_argmax_ties_nan_inf_and_signed_zero(n):
    x = torch.zeros(6, n)
    x[0, [1, 4]] = 3.0  # tie: the first
    x[1, [2, 5]] = math.nan  # NaN is the maximum (and the minimum): the first NaN
    x[1, 0] = math.inf
    x[2] = -math.inf  # every element -inf: index 0
    x[3, 0], x[3, 1] = -0.0, 0.0  # -0.0 == 0.0: the first
    x[4, n - 1] = math.inf
    x[5, [3, 4]] = -2.0
    f = lambda t: (t.argmax(1), t.argmin(1), t.argmax(0), t.argmin(), *t.max(1), *t.min(1))  # noqa: E731
    got = _check(f, x, exact=True)
    assert got[0][:3].tolist() == [1, 2, 0]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape, dim", [((4, 37), -1), ((5, 3, 2), 1), ((1, 6), 0), ((9,), 0)])
def test_max_min_dim_give_values_and_indices(shape, dim, keepdim):
    torch.manual_seed(10)
    x = torch.randn(shape).round()  # ties

    def f(t):
        hi, lo = t.max(dim, keepdim), t.min(dim, keepdim)
        return hi.values, hi.indices, lo.values, lo.indices

    got = _check(f, x, exact=True)
    assert got[1].dtype == got[3].dtype == torch.int64


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=str)
def test_arg_reductions_in_dtype(dtype):
    torch.manual_seed(11)
    x = torch.randn(5, 19).to(dtype)
    _check(lambda t: (t.argmax(-1), *t.max(0), *t.min(1, keepdim=True)), x, exact=True)


def test_arg_reductions_with_dynamic_sizes():
    # (a flat argmin over two symbolic sizes stays in PyTorch: its int32 index could wrap;
    # test_graph_ops_index.py::test_flat_argmax_over_symbolic_sizes_stays_in_pytorch)
    f = _compiled(lambda t: (t.argmax(-1), *t.max(0), t.argmin(1), t.flatten().argmin()))
    for shape in ((3, 7), (6, 130)):
        x = torch.randn(shape)
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(x, 1)
        want = (x.argmax(-1), *x.max(0), x.argmin(1), x.flatten().argmin())
        torch.testing.assert_close(f(x), want, rtol=0, atol=0)


# --- cumulative sums and products -----------------------------------------------------------


@pytest.mark.parametrize("n", [1, 7, 32, 33, 997, 1100])  # direct, one and two block levels
def test_cumsum_matches_eager_exactly_enough(n):
    """float32 accumulates in float64, as eager's kernel: even 1100 terms agree to float32's
    rounding of the same sums."""
    torch.manual_seed(12)
    x = torch.randn(3, n)
    _check(lambda t: (t.cumsum(-1), t.cumsum(0)), x, rtol=2e-7, atol=1e-6)


def test_cumsum_of_a_long_axis_of_large_values():
    """A float32 running sum of 30000 values near 1e3 drifts by ~100 (5e-6 relative), past the
    tolerance; eager and ours accumulate in float64. Three block levels, their last blocks
    partly filled (a schedule bug zeroed the prefixes of such a form once)."""
    torch.manual_seed(13)
    x = 1e3 + torch.randn(2, 30000)
    _check(lambda t: t.cumsum(1), x, rtol=2e-7, atol=0)


@pytest.mark.parametrize("shape, dim", [((5, 7), 0), ((2, 3, 40), 1), ((4, 1), -1), ((50,), 0)])
def test_cumprod(shape, dim):
    torch.manual_seed(14)
    x = 0.9 + 0.2 * torch.rand(shape)
    _check(lambda t: t.cumprod(dim), x, rtol=2e-7, atol=1e-7)


def test_cumulative_nan_inf_and_zeros():
    x = torch.tensor(
        [[1.0, math.nan, 2.0, 3.0], [1.0, math.inf, -math.inf, 1.0], [2, 0, 3, math.inf]]
    )
    _check(lambda t: (t.cumsum(1), t.cumprod(1), t.cumsum(0)), x, exact=True)


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=str)
def test_cumulative_in_dtype(dtype):
    torch.manual_seed(15)
    x = torch.randn(3, 45).to(dtype)
    y = (0.9 + 0.2 * torch.rand(3, 45)).to(dtype)
    _check(lambda a, b: (a.cumsum(-1), b.cumprod(1), a.cumsum(0)), x, y, dtype=dtype)


def test_cumsum_with_dynamic_sizes():
    """A symbolic axis takes the blocked form whatever its length (the block count symbolic)."""
    f = _compiled(lambda t: (t.cumsum(1) * 2, t.cumprod(0)))
    for shape in ((3, 5), (2, 1500)):
        x = 0.9 + 0.2 * torch.rand(shape)
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(x, 1)
        got = f(x)
        torch.testing.assert_close(got, (x.cumsum(1) * 2, x.cumprod(0)), rtol=2e-7, atol=1e-6)


# --- forms left to PyTorch ----------------------------------------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: t.cumsum(-1, dtype=torch.float64),
        lambda t: t.prod(-1, dtype=torch.float64),
        lambda t: torch.linalg.vector_norm(t, 2, -1, dtype=torch.float64),
    ],
    ids=["cumsum_dtype", "prod_dtype", "norm_dtype"],
)
def test_refused_forms_stay_in_pytorch(fn):
    x = torch.randn(3, 4)
    # (Dynamo wraps the backend's UnsupportedOperatorError in its own exception)
    with pytest.raises(Exception, match=f"{UnsupportedOperatorError.__name__}: strict=True"):
        _compiled(fn)(x)
    torch._dynamo.reset()
    got = torch.compile(fn, backend="pytvmbridge")(x)
    torch.testing.assert_close(got, fn(x))
