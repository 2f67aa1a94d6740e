"""The elementwise mathematics of :mod:`pytvmbridge.graph.ops_math` compiles (strict: no operator
left to PyTorch) and matches eager PyTorch: rounding, log1p/expm1, elu and the activations built
on them, sign, powers and remainders of tensors, inverse trigonometric and hyperbolic functions,
clamp with tensor bounds, tests of floats and logical operators; on odd, prime and size-1
shapes, symbolic sizes, float64/float16/bfloat16, and the edge values PyTorch defines (NaN,
infinities, -0.0, halves)."""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from pytvmbridge.graph.backend import core_decompositions
from pytvmbridge.graph.partition import unsupported_nodes

TOLERANCE = {
    torch.float32: {},  # assert_close's own for float32
    torch.float64: {"rtol": 1e-12, "atol": 1e-12},
    torch.float16: {"rtol": 2e-3, "atol": 2e-3},
    torch.bfloat16: {"rtol": 1.6e-2, "atol": 1.6e-2},
}
SHAPES = [(7,), (3, 5, 1), (1,), (13, 17)]
NAN, INF = float("nan"), float("inf")


def _compile(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="pytvmbridge", options={"strict": True})


def _check(got, want, names, exact=False, **tolerance):
    assert len(got) == len(want) == len(names)
    for g, w, name in zip(got, want, names, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, name
        if exact:
            tolerance = {"rtol": 0, "atol": 0}
        torch.testing.assert_close(g, w, equal_nan=True, msg=lambda m, n=name: f"{n}: {m}",
                                   **tolerance)  # fmt: skip
        if exact and w.dtype.is_floating_point:  # -0.0 where PyTorch gives it (a NaN's sign
            numbers = ~torch.isnan(w)  # is not defined)
            assert torch.equal(torch.signbit(g[numbers]), torch.signbit(w[numbers])), name


# --- one tensor in: math functions of each element ----------------------------------------------

# name -> (function, input: "x" any real, "u" in (-1, 1), "p" above 1, "q" above -1)
UNARY = {
    "log1p": (torch.log1p, "q"),
    "expm1": (torch.expm1, "x"),
    "log2": (torch.log2, "p"),
    "log10": (torch.log10, "p"),
    "exp2": (torch.exp2, "x"),
    "floor": (torch.floor, "x"),
    "ceil": (torch.ceil, "x"),
    "round": (torch.round, "x"),
    "round_2": (lambda t: torch.round(t, decimals=2), "x"),
    "round_-1": (lambda t: torch.round(t * 40, decimals=-1), "x"),
    "trunc": (torch.trunc, "x"),
    "frac": (torch.frac, "x"),
    "sign": (torch.sign, "x"),
    "sgn": (torch.sgn, "x"),
    "tan": (torch.tan, "x"),
    "atan": (torch.atan, "x"),
    "asin": (torch.asin, "u"),
    "acos": (torch.acos, "u"),
    "sinh": (torch.sinh, "x"),
    "cosh": (torch.cosh, "x"),
    "asinh": (torch.asinh, "x"),
    "acosh": (torch.acosh, "p"),
    "atanh": (torch.atanh, "u"),
    "erfc": (torch.erfc, "x"),
}


def _inputs(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * 3
    u = torch.rand(shape, generator=g) * 1.98 - 0.99
    p = 1 + torch.rand(shape, generator=g) * 10
    q = torch.rand(shape, generator=g) * 5 - 0.99
    return {k: v.to(dtype) for k, v in dict(x=x, u=u, p=p, q=q).items()}


def _unary_all(x, u, p, q):
    inputs = dict(x=x, u=u, p=p, q=q)
    return tuple(fn(inputs[arg]) for fn, arg in UNARY.values())


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_unary_functions_match_eager(shape):
    inputs = _inputs(shape)
    got = _compile(_unary_all)(**inputs)
    _check(got, _unary_all(**inputs), list(UNARY))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_unary_functions_in_dtype(dtype):
    """16-bit tensors are computed in float32 and rounded once, as eager computes them."""
    inputs = _inputs((5, 31), dtype, seed=1)
    got = _compile(_unary_all)(**inputs)
    _check(got, _unary_all(**inputs), list(UNARY), **TOLERANCE[dtype])


EDGES = [NAN, INF, -INF, -0.0, 0.0, 0.5, 1.5, 2.5, -0.5, -2.5, -1.0, 1e30, -1e-30, 3.7, -3.7]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_edge_values_as_eager(dtype):
    """NaN, infinities, -0.0 and halves: rounding to even, sign(NaN) = 0, sign(-0.0) = +0.0,
    log1p(-1) = -inf, expm1(-inf) = -1, exactly as eager (and the sign of each zero)."""
    x = torch.tensor(EDGES * 3, dtype=dtype)

    def exact(x):
        return (torch.floor(x), torch.ceil(x), torch.round(x), torch.trunc(x), torch.sign(x),
                torch.round(x, decimals=1), torch.signbit(x), torch.isnan(x), torch.isinf(x),
                torch.nan_to_num(x))  # fmt: skip

    def rounded(x):  # a math function: to an ulp
        return torch.expm1(x), torch.log1p(x)

    names = "floor ceil round trunc sign round1 signbit isnan isinf nan_to_num"
    _check(_compile(exact)(x), exact(x), names.split(), exact=True)
    _check(_compile(rounded)(x), rounded(x), ["expm1", "log1p"], **TOLERANCE[dtype])


def test_unary_with_dynamic_sizes():
    f = _compile(lambda x: (torch.expm1(x) + torch.floor(x) * torch.sign(x), torch.atan(x)))
    for n in (6, 11):
        x = torch.randn(n, 3)
        torch._dynamo.mark_dynamic(x, 0)
        _check(f(x), (torch.expm1(x) + torch.floor(x) * torch.sign(x), torch.atan(x)), "ab")


# --- activations ---------------------------------------------------------------------------------

MODULES = {
    "elu": torch.nn.ELU(alpha=0.7),
    "selu": torch.nn.SELU(),
    "celu": torch.nn.CELU(alpha=0.5),
    "mish": torch.nn.Mish(),
    "softplus": torch.nn.Softplus(beta=2.0, threshold=5.0),
    "logsigmoid": torch.nn.LogSigmoid(),
    "softsign": torch.nn.Softsign(),
    "tanhshrink": torch.nn.Tanhshrink(),
    "hardshrink": torch.nn.Hardshrink(0.3),
    "softshrink": torch.nn.Softshrink(0.3),
    "threshold": torch.nn.Threshold(0.1, 20.0),
}


@pytest.mark.parametrize("name", list(MODULES))
def test_activation_modules(name):
    x = torch.randn(3, 37) * 4
    x[0, :4] = torch.tensor([0.0, -0.0, 30.0, -30.0])
    got = _compile(MODULES[name])(x)
    torch.testing.assert_close(got, MODULES[name](x))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_activations_in_dtype(dtype):
    x = (torch.randn(4, 29) * 4).to(dtype)
    names = ["elu", "selu", "celu", "mish", "softplus", "softshrink"]

    def f(x):
        return tuple(MODULES[n](x) for n in names)

    _check(_compile(f)(x), f(x), names, **TOLERANCE[dtype])


def test_elu_scales_and_nan():
    """aten.elu's three coefficients (SELU's scale, an input scale) and a NaN input."""
    x = torch.randn(5, 13) * 3
    x[0, 0] = NAN

    def f(x):
        return (torch.ops.aten.elu.default(x, 1.3, 1.5, 0.8),)

    _check(_compile(f)(x), f(x), ["elu"])


def test_activation_between_linear_layers_3d():
    """An activation of ops_math between two linear layers of a 3-d input (the reshapes around
    it cancel, :mod:`pytvmbridge.graph.views`)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 24), torch.nn.Mish(), torch.nn.Linear(24, 8), torch.nn.ELU()
    ).eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        torch.testing.assert_close(_compile(model)(x), model(x))


def test_math_between_convolutions():
    """Elementwise math of a convolution's output read by another convolution (computed on the
    blocked layout where the compiler chooses it: ``layout.through_blocks``)."""

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = torch.nn.Conv2d(3, 32, 3, padding=1)
            self.c2 = torch.nn.Conv2d(32, 16, 3, padding=1)

        def forward(self, x):
            y = self.c1(x)
            F = torch.nn.functional
            y = F.elu(y) + F.mish(y) + torch.remainder(y, 0.3) + 2.0 ** y.clamp(max=3)
            return self.c2(y + torch.floor(y) + torch.clamp(y, -y.abs(), y.abs() / 2))

    torch.manual_seed(0)
    model, x = Model().eval(), torch.randn(2, 3, 15, 15)
    with torch.no_grad():
        torch.testing.assert_close(_compile(model)(x), model(x), rtol=1e-4, atol=1e-4)


# --- two operands ------------------------------------------------------------------------------


@pytest.mark.parametrize("shapes", [((4, 1), (1, 5)), ((7,), (7,)), ((3, 1, 2), (2,))], ids=str)
def test_binary_functions_broadcast(shapes):
    g = torch.Generator().manual_seed(2)
    a, b = (torch.randn(s, generator=g) * 3 for s in shapes)
    b = torch.where(b.abs() < 0.1, 0.5, b)  # divisors away from 0

    def f(a, b):
        return (a.abs() ** b, torch.fmod(a, b), torch.remainder(a, b), a % b,
                torch.atan2(a, b), torch.copysign(a, b), torch.hypot(a, b))  # fmt: skip

    names = "pow fmod remainder mod atan2 copysign hypot".split()
    _check(_compile(f)(a, b), f(a, b), names)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_binary_functions_in_dtype(dtype):
    g = torch.Generator().manual_seed(3)
    a, b = (torch.randn(6, 11, generator=g).mul(3).to(dtype) for _ in range(2))

    def f(a, b):
        return (a.abs() ** b, torch.fmod(a, b), torch.remainder(a, b), torch.remainder(a, -0.7),
                torch.fmod(a, 0.7), torch.atan2(a, b), 0.1**a, 2**a)  # fmt: skip

    names = "pow fmod remainder remainder_s fmod_s atan2 pow_s pow_2".split()
    _check(_compile(f)(a, b), f(a, b), names, **TOLERANCE[dtype])


def test_remainder_and_fmod_signs_exactly():
    """fmod keeps the dividend's sign, remainder takes the divisor's (an exact 0 keeps fmod's
    sign, as eager's kernel); a zero divisor or an infinite dividend gives NaN; bit for bit."""
    a = torch.tensor([-4.0, 4.0, -3.0, 3.0, 5.5, -5.5, 1.0, INF, -0.0, 2.0, NAN, -1e-30])
    a = a.repeat(3)

    def f(a):
        out = []
        for b in (2.0, -2.0, 0.0, INF, -1.5):
            out += [torch.fmod(a, b), torch.remainder(a, b)]
        out += [torch.fmod(a, a.flip(0)), torch.remainder(a, a.flip(0))]
        return tuple(out)

    _check(_compile(f)(a), f(a), [f"r{k}" for k in range(12)], exact=True)


def test_pow_edge_values():
    """0 ** 0 = 1, 0 ** -1 = inf, 1 ** NaN = 1, a negative base to a non-integer power NaN."""
    base = torch.tensor([0.0, 0.0, 1.0, -2.0, -2.0, 2.0, INF, NAN, -0.0, 0.5])
    exponent = torch.tensor([0.0, -1.0, NAN, 3.0, 0.5, -INF, -1.0, 0.0, -3.0, INF])

    def f(b, e):
        return b**e, 2.0**e, 1**e, (-3.0) ** e, 0.0**e

    _check(_compile(f)(base, exponent), f(base, exponent), "tt 2 1 -3 0".split())


def test_pow_and_remainder_with_dynamic_sizes():
    def f(a, b):
        return (a.abs() ** b, torch.remainder(a, b), torch.atan2(a, b), 3.0**a)

    compiled = _compile(f)
    for n in (5, 9):
        a, b = torch.randn(n, 4), torch.randn(n, 4) + 3
        torch._dynamo.mark_dynamic(a, 0)
        torch._dynamo.mark_dynamic(b, 0)
        _check(compiled(a, b), f(a, b), "pow rem atan2 pow_s".split())


# --- clamp with tensor bounds -------------------------------------------------------------------


def test_clamp_tensor_bounds():
    """Bounds broadcast with x, one side only, a low bound above the high one (the high one
    wins, as eager), NaN in x or in a bound (NaN)."""
    g = torch.Generator().manual_seed(4)
    x = torch.randn(6, 7, generator=g)
    lo = torch.randn(7, generator=g) - 0.5
    hi = torch.randn(6, 1, generator=g) + 0.5
    x[0, 0], lo[1], hi[2, 0] = NAN, NAN, NAN

    def f(x, lo, hi):
        return (torch.clamp(x, lo, hi), torch.clamp(x, min=lo), torch.clamp(x, max=hi),
                torch.clamp(x, hi, lo))  # fmt: skip

    _check(_compile(f)(x, lo, hi), f(x, lo, hi), "both min max crossed".split(), exact=True)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=str)
def test_clamp_tensor_in_dtype_dynamic(dtype):
    compiled = _compile(lambda x, lo: torch.clamp(x, lo, lo + 1))
    for n in (3, 8):
        x, lo = torch.randn(n, 5).to(dtype), torch.randn(n, 1).to(dtype)
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(lo, 0)
        torch.testing.assert_close(compiled(x, lo), torch.clamp(x, lo, lo + 1), rtol=0, atol=0)


# --- bool results and logic ----------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(9,), (2, 1, 5), (1,)], ids=str)
def test_logical_operators(shape):
    """On computed bools, on bool inputs and on floats (nonzero, NaN included, is true)."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(shape, generator=g)
    x.view(-1)[0] = NAN
    m = torch.rand(shape, generator=g) > 0.5

    def f(x, m):
        a, b = x > 0, x < 0.5
        return (torch.logical_not(a), torch.logical_and(a, b), torch.logical_or(a, m),
                torch.logical_xor(m, b), ~a, ~m, a ^ m, torch.logical_not(x),
                torch.logical_and(x, m), torch.logical_or(x, x.flip(0)))  # fmt: skip

    names = "not and or xor ~a ~m ^ not_f and_f or_f".split()
    _check(_compile(f)(x, m), f(x, m), names, exact=True)


def test_logical_with_dynamic_sizes():
    compiled = _compile(lambda x, m: torch.logical_and(x > 0, ~m).float() * x)
    for n in (4, 7):
        x, m = torch.randn(n, 3), torch.rand(n, 3) > 0.5
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(m, 0)
        torch.testing.assert_close(compiled(x, m), torch.logical_and(x > 0, ~m).float() * x)


def test_xlogy_and_nan_to_num():
    x = torch.tensor([0.0, 1.0, 2.5, NAN, INF, -INF, 0.0, 3.0])
    y = torch.tensor([0.0, 0.0, 2.0, 1.0, 1.0, 1.0, NAN, INF])

    def f(x, y):
        return torch.xlogy(x, y), torch.nan_to_num(x, nan=1.5, posinf=9.0, neginf=-9.0)

    _check(_compile(f)(x, y), f(x, y), ["xlogy", "nan_to_num"])


# --- forms left to PyTorch ---------------------------------------------------------------------


def _left_in_pytorch(fn, *args):
    gm = make_fx(fn, decomposition_table=core_decompositions(), tracing_mode="real")(*args)
    return sorted(str(n.target) for n in unsupported_nodes(gm))


def test_refused_forms_stay_in_pytorch_and_match():
    """Integer tensors (bitwise_not of int64, an int exponent tensor) and float dtypes mixed
    other than by widening (a 0-d float32 beside half) stay in PyTorch; without strict the
    result is still eager's."""
    x, i = torch.randn(6), torch.arange(6)

    def f(x, i):
        return ~i, x.abs() ** i, torch.remainder(x.half(), torch.tensor(0.7))

    assert _left_in_pytorch(f, x, i) == [
        "aten.bitwise_not.default",
        "aten.pow.Tensor_Tensor",
        "aten.remainder.Tensor",
    ]
    torch._dynamo.reset()
    got = torch.compile(f, backend="pytvmbridge")(x, i)
    _check(got, f(x, i), ["not", "pow", "rem"])


def test_round_to_more_decimals_than_a_double_holds_matches_eager():
    """10 ** 400 overflows a double: PyTorch's result is NaN; the node stays in PyTorch."""
    f = lambda t: torch.round(t, decimals=400) + 1  # noqa: E731
    x = torch.tensor([1.0, -2.5], dtype=torch.float64)
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(f, backend="pytvmbridge")(x), f(x), equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool])
def test_sign_of_integers_and_bools(dtype):
    # DeBERTa-v2's log-bucketed relative positions take the sign of integer distances
    x = torch.arange(-6, 7) if dtype != torch.uint8 else torch.arange(0, 255, 20)
    x = x.to(dtype)
    f = _compile(lambda t: (torch.sign(t), torch.sgn(t)))
    for got in f(x):
        assert got.dtype == dtype
        assert torch.equal(got, torch.sign(x))
