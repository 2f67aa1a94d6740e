"""float32 exp, erf, sigmoid, tanh, log and log1p, generated inline by codegen
(csrc/codegen/inline_math.cc), against float64 references over the whole float range: random bit
patterns (every exponent, denormals, inf and NaN), the edges of each range reduction, and the
values where the result overflows, becomes denormal or rounds to 0 or 1. Errors are counted in
float32 units in the last place of the exact result; special values must equal libm's. Scalar and
16-lane vector code are both checked, and so is float16 (computed in float32)."""

import math

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import te


def _exp(x: np.ndarray) -> np.ndarray:
    return np.exp(x)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp(-x) overflows float64 only below -709, where the result is 0 in float32 too.
    return 1.0 / (1.0 + np.exp(-x))


def _tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x)


def _log(x: np.ndarray) -> np.ndarray:
    # NaN below 0, as libm; -inf at +-0.
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x)


def _log1p(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log1p(x)


# name -> (float64 reference, largest error allowed in ulps). tanh and erf are rational functions
# whose two polynomials round by up to 2.5 ulp each where the result is just below 1 (tanh near
# |x| = 9; erf up to 6.4 ulp near |x| = 3.8 on a dense grid, 4.7 on these samples).
FUNCTIONS = {
    "exp": (_exp, 1.5),
    "erf": (_erf, 7.0),
    "sigmoid": (_sigmoid, 3.0),
    "tanh": (_tanh, 6.0),
    "log": (_log, 1.5),
    "log1p": (_log1p, 2.0),
}

EDGES = [
    0.0,
    -0.0,
    np.inf,
    -np.inf,
    np.nan,
    1e-45,
    -1e-45,
    1.1754942e-38,
    -1.1754942e-38,
    # exp: the largest finite result, overflow, the last normal and the denormal results
    88.72283,
    88.72284,
    88.7229,
    89.0,
    -87.33654,
    -87.3366,
    -100.0,
    -103.27893,
    -103.97208,
    -103.9721,
    -104.0,
    -200.0,
    0.34657359,
    -0.34657359,
    # tanh: its clamp, and where it rounds to 1
    9.1,
    -9.1,
    9.0,
    8.7,
    -8.85,
    # erf: the ends of the polynomial near 0 and of the tail; where it rounds to 1
    1.0,
    -1.0,
    0.99999994,
    1.0000001,
    3.9,
    3.92,
    4.0,
    -4.0,
    10.0,
    # log1p: -1, just above and below it, where 1 + x rounds to 1
    -0.99999994,
    -1.0000001,
    5.9604645e-08,
    -2.9802322e-08,
    1e-30,
    # log: the ends of the mantissa interval [0.75, 1.5), around 1, the largest float
    0.75,
    0.74999994,
    1.5,
    1.4999999,
    0.99999994,
    1.0000001,
    3.4028235e38,
    1.1754944e-38,
]


def samples() -> np.ndarray:
    rng = np.random.default_rng(11)
    bits = rng.integers(0, 2**32, 1 << 18, dtype=np.uint64).astype(np.uint32).view(np.float32)
    dense = rng.uniform(-12, 12, 1 << 16).astype(np.float32)
    wide = rng.uniform(-110, 92, 1 << 16).astype(np.float32)
    return np.concatenate([np.float32(EDGES), bits, dense, wide])


def compiled(name: str, n: int, dtype: str, lanes: int):
    A = te.placeholder((n,), dtype=dtype, name="A")
    B = te.compute((n,), lambda i: getattr(te, name)(A[i]), name="B")
    s = te.create_schedule(B.op)
    if lanes > 1:
        _, inner = s[B].split(B.op.axis[0], factor=lanes)
        s[B].vectorize(inner)
    return tvm.build(s, [A, B])


def ulp_errors(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in units of the float32 spacing at exact (2^-149 for denormals); 0 where
    both are the same inf or NaN, inf where only one is."""
    with np.errstate(invalid="ignore", over="ignore"):
        # exact values beyond float32's range round to inf, as the function's result should
        rounded = exact.astype(np.float32)
        spacing = np.maximum(np.spacing(np.abs(rounded)).astype(np.float64), 2.0**-149)
        err = np.abs(got.astype(np.float64) - exact) / spacing
    finite = np.isfinite(rounded) & np.isfinite(got)
    same = (got == rounded) | (np.isnan(got) & np.isnan(rounded))
    return np.where(finite, err, np.where(same, 0.0, np.inf))


@pytest.mark.parametrize("lanes", [1, 16])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_float32_within_ulps_over_the_whole_range(name, lanes):
    reference, allowed = FUNCTIONS[name]
    if name in ("log", "log1p") and lanes == 1:
        # A scalar log is a logf call (codegen_math.cc), which LLVM vectorizes into libmvec's
        # (3.6 ulp): the inline form without AVX-512 intrinsics is the one on 8 lanes.
        lanes = 8
    x = samples()
    out = np.empty_like(x)
    compiled(name, len(x), "float32", lanes)(x, out)
    with np.errstate(over="ignore", invalid="ignore"):
        exact = reference(x.astype(np.float64))
    err = ulp_errors(out, exact)
    worst = int(np.argmax(err))
    assert err[worst] <= allowed, (
        f"{name}({x[worst]!r}) = {out[worst]!r}, exact {exact[worst]!r}: {err[worst]:.2f} ulp"
    )


def test_special_values_match_libm():
    x = np.float32([np.inf, -np.inf, np.nan, 0.0, -0.0, 200.0, -200.0, 5.0, -5.0])
    for name, expected in {
        "exp": [np.inf, 0.0, np.nan, 1.0, 1.0, np.inf, 0.0, math.exp(5.0), math.exp(-5.0)],
        "erf": [1.0, -1.0, np.nan, 0.0, -0.0, 1.0, -1.0, 1.0, -1.0],
        "sigmoid": [1.0, 0.0, np.nan, 0.5, 0.5, 1.0, 0.0, 1 / (1 + math.exp(-5)), 0.0066928507],
        "tanh": [1.0, -1.0, np.nan, 0.0, -0.0, 1.0, -1.0, math.tanh(5.0), -math.tanh(5.0)],
        "log": [
            np.inf,
            np.nan,
            np.nan,
            -np.inf,
            -np.inf,
            math.log(200.0),
            np.nan,
            math.log(5.0),
            np.nan,
        ],
        "log1p": [
            np.inf,
            np.nan,
            np.nan,
            0.0,
            -0.0,
            math.log1p(200.0),
            np.nan,
            math.log1p(5.0),
            np.nan,
        ],
    }.items():
        for lanes in (1, 16):
            padded = np.resize(x, 16)
            out = np.empty_like(padded)
            compiled(name, 16, "float32", lanes)(padded, out)
            np.testing.assert_allclose(out[: len(x)], np.float32(expected), rtol=4e-7, err_msg=name)
            # the sign of zero: erf(-0), tanh(-0) and log1p(-0) are -0, log(-0) is -inf
            assert np.signbit(out[4]) == (name in ("erf", "tanh", "log", "log1p")), name


def test_tanh_is_odd_and_never_past_one():
    x = np.float32(np.linspace(0, 12, 4096))
    for lanes in (1, 16):
        f = compiled("tanh", len(x), "float32", lanes)
        pos, neg = np.empty_like(x), np.empty_like(x)
        f(x, pos)
        f(-x, neg)
        np.testing.assert_array_equal(neg, -pos)
        assert np.all(pos <= 1.0) and pos[-1] == 1.0


def test_denormal_results_are_rounded_not_flushed():
    x = np.float32(np.linspace(-103.9, -87.4, 64))
    for lanes in (1, 16):
        out = np.empty_like(x)
        compiled("exp", 64, "float32", lanes)(x, out)
        exact = np.exp(x.astype(np.float64))
        assert np.all(out > 0)
        assert np.all(ulp_errors(out, exact) <= 1.0)
        sig = np.empty_like(x)
        compiled("sigmoid", 64, "float32", lanes)(x, sig)
        assert np.all(ulp_errors(sig, _sigmoid(x.astype(np.float64))) <= 3.0)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_float16_is_computed_in_float32(name):
    reference, _ = FUNCTIONS[name]
    x = np.float16(np.linspace(-8, 8, 160))
    out = np.empty_like(x)
    compiled(name, len(x), "float16", 16)(x, out)
    expected = reference(x.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64), rtol=1e-3)


def test_log_of_denormals_and_of_wider_vectors():
    # Every binade of the denormals (log's exponent comes from them, not from their bits), and
    # 32 and 8 lanes: two 512-bit pieces, and the form without AVX-512 intrinsics.
    x = np.float32(np.concatenate([np.ldexp(1.37, np.arange(-149, -125)), [1e-45, 1.4e-45]]))
    x = np.resize(x, 64)
    exact = np.log(x.astype(np.float64))
    for lanes in (1, 8, 16, 32):
        out = np.empty_like(x)
        compiled("log", len(x), "float32", lanes)(x, out)
        assert np.all(ulp_errors(out, exact) <= 1.5), lanes


@pytest.mark.parametrize("name", ["erf", "tanh"])
def test_constant_factor_of_the_argument_goes_into_the_coefficients(name):
    # erf(v * c), as exact GELU writes it (c = 1/sqrt(2)), is evaluated as v P'(v^2) / Q'(v^2)
    # with c folded into the coefficients: as accurate as f(x), and f of the exact product v c.
    reference, allowed = FUNCTIONS[name]
    specials = np.float32([np.inf, -np.inf, np.nan, 0.0, -0.0])
    x = np.concatenate([specials, samples()])
    x = x[: len(x) // 16 * 16]
    for c in (1 / math.sqrt(2), -2.0, 3.0):
        c32 = float(np.float32(c))
        A = te.placeholder((len(x),), name="A")
        B = te.compute(
            (len(x),),
            lambda i, A=A, c=c: getattr(te, name)(A[i] * te.const(c, "float32")),
            name="B",
        )
        for lanes in (1, 16):
            s = te.create_schedule(B.op)
            _, inner = s[B].split(B.op.axis[0], factor=lanes)
            if lanes > 1:
                s[B].vectorize(inner)
            out = np.empty_like(x)
            tvm.build(s, [A, B])(x, out)
            with np.errstate(over="ignore", invalid="ignore"):
                exact = reference(x.astype(np.float64) * c32)
            err = ulp_errors(out, exact)
            worst = int(np.argmax(err))
            assert err[worst] <= allowed, (name, c, lanes, x[worst], out[worst], exact[worst])
            assert np.signbit(out[4]) == (c > 0), (name, c)


def test_exp_table_form_at_every_sixteenth():
    # With AVX-512, exp reduces x to k ln2 / 16 + r and reads 2^(j/16) from a 16-entry table
    # (vpermps on the low bits of k): every entry, both sides of each rounding boundary of k
    # (x at (m + 1/2) ln2 / 16, where k changes) and the exact points m ln2 / 16, across the whole
    # range, on 16 and 32 lanes (one and two zmm pieces) and on 8 (the form without AVX-512).
    # The table form is within 1 ulp (0.99 worst over every float32, checked exhaustively).
    m = np.arange(-2400, 2055, dtype=np.float64)
    centre = np.float32(m * math.log(2) / 16)
    edge = np.float32((m + 0.5) * math.log(2) / 16)
    x = np.concatenate(
        [
            centre,
            edge,
            np.nextafter(edge, np.float32(-np.inf)),
            np.nextafter(edge, np.float32(np.inf)),
        ]
    )
    x = np.resize(x[(x > -104) & (x < 89)], 4 * 4096)
    exact = np.exp(x.astype(np.float64))
    for lanes, allowed in ((16, 1.0), (32, 1.0), (8, 1.5)):
        out = np.empty_like(x)
        compiled("exp", len(x), "float32", lanes)(x, out)
        err = ulp_errors(out, exact)
        worst = int(np.argmax(err))
        assert err[worst] <= allowed, (lanes, x[worst], err[worst])
