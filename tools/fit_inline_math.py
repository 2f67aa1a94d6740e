"""Fits the polynomial coefficients of codegen's inline float32 math (csrc/codegen/inline_math.cc)
and prints them as C++ hex-float literals, with each fit's worst error in units of 2^-24.

Each fit is a near-minimax polynomial: weighted least squares on Chebyshev nodes, reweighted by
the error (Lawson's iteration), so the error levels out across the interval. Errors are measured
with the coefficients rounded to float32, as the generated code holds them.

    .venv/bin/python tools/fit_inline_math.py
"""

import math

import numpy as np


def chebyshev_nodes(lo: float, hi: float, n: int = 4000) -> np.ndarray:
    k = np.arange(n)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / n)


def near_minimax(basis: np.ndarray, target: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Coefficients c minimizing max |weight * (basis @ c - target)| (approximately)."""
    w = np.ones(len(target))
    c = np.zeros(basis.shape[1])
    for _ in range(60):
        scale = weight * np.sqrt(w)
        c, *_ = np.linalg.lstsq(basis * scale[:, None], target * scale, rcond=None)
        err = np.abs((basis @ c - target) * weight)
        w = w * err
        w /= w.sum()
    return c


def as_float32(c: np.ndarray) -> np.ndarray:
    return c.astype(np.float32).astype(np.float64)


def literal(v: float) -> str:
    """v rounded to float32, as a C++ hex-float literal."""
    mantissa, exponent = float(np.float32(v)).hex().split("p")
    return f"{mantissa.rstrip('0').rstrip('.')}p{exponent}f"


def show(name: str, c: np.ndarray, worst: float) -> None:
    literals = ", ".join(literal(v) for v in c)
    print(f"// {name}: worst error {worst:.3f} x 2^-24\n{{{literals}}}")


def powers(t: np.ndarray, degree: int) -> np.ndarray:
    return np.stack([t**k for k in range(degree + 1)], 1)


erf = np.vectorize(math.erf)
erfc = np.vectorize(math.erfc)

# exp(r) = 1 + r + r^2 Q(r) for |r| <= ln2/2, relative error.
r = chebyshev_nodes(-math.log(2) / 2, math.log(2) / 2)
basis = powers(r, 4)
c = near_minimax(basis, (np.exp(r) - 1 - r) / r**2, r**2 / np.exp(r))
approx = 1 + r + r**2 * (basis @ as_float32(c))
show("exp Q", c, np.max(np.abs(approx / np.exp(r) - 1)) / 2**-24)

# The table form (AVX-512): exp(r) = 1 + r + r^2 (c2 + c3 r) for |r| <= ln2/32 (a little
# beyond: k is x log2(e) rounded, log2(e) itself rounded), and the table of 2^(j/16).
r = chebyshev_nodes(-math.log(2) / 32 * 1.001, math.log(2) / 32 * 1.001)
basis = powers(r, 1)
c = near_minimax(basis, (np.exp(r) - 1 - r) / r**2, r**2 / np.exp(r))
approx = 1 + r + r**2 * (basis @ as_float32(c))
show("exp table Q", c, np.max(np.abs(approx / np.exp(r) - 1)) / 2**-24)
table = np.exp2(np.arange(16) / 16)
show("exp table", table, np.max(np.abs(as_float32(table) / table - 1)) / 2**-24)

# tanh(x) = x P(x^2) / Q(x^2) for |x| <= 9.1 (past it tanh rounds to 1), P(0) = Q(0) = 1,
# relative error. Linearized: P - f Q = f at the nodes, weighted by 1 / (f Q) with the previous
# Q (Sanathanan-Koerner), and reweighted by the error as above.
x = chebyshev_nodes(1e-4, 9.1, 6000)
z = x * x
f = np.tanh(x) / x
q_prev = np.ones_like(z)
w = np.ones_like(z)
p = q = np.zeros(5)
for _ in range(80):
    lhs = np.hstack([powers(z, 4)[:, 1:], -f[:, None] * powers(z, 4)[:, 1:]])
    scale = np.sqrt(w) / (f * q_prev)
    c, *_ = np.linalg.lstsq(lhs * scale[:, None], (f - 1) * scale, rcond=None)
    p = np.concatenate([[1.0], c[:4]])
    q = np.concatenate([[1.0], c[4:]])
    q_prev = powers(z, 4) @ q
    err = np.abs((powers(z, 4) @ p) / q_prev / f - 1)
    w = w * err
    w /= w.sum()
approx = (powers(z, 4) @ as_float32(p)) / (powers(z, 4) @ as_float32(q))
worst = np.max(np.abs(approx / f - 1)) / 2**-24
show("tanh P", p, worst)
show("tanh Q", q, worst)

# erf(x) = x P(x^2) / Q(x^2) for |x| <= kErfOne (past it erf rounds to 1), Q(0) = 1, relative
# error; fitted as tanh's above. One rational over the whole range costs about half the
# instructions of a polynomial near 0 plus 1 - exp(-x^2) R(x) beyond 1 (both computed for every
# lane of a vector); evaluated in float32 it is good to 6.4 ulp, not 1.3 (the rounding of the
# two polynomials, each a few ulp relative to erf's fine spacing just below 1).
x = chebyshev_nodes(1e-4, 3.92, 6000)
z = x * x
f = erf(x) / x
q_prev = np.ones_like(z)
w = np.ones_like(z)
for _ in range(100):
    lhs = np.hstack([powers(z, 5), -f[:, None] * powers(z, 5)[:, 1:]])
    scale = np.sqrt(w) / (f * q_prev)
    c, *_ = np.linalg.lstsq(lhs * scale[:, None], f * scale, rcond=None)
    p = c[:6]
    q = np.concatenate([[1.0], c[6:]])
    q_prev = powers(z, 5) @ q
    err = np.abs((powers(z, 5) @ p) / q_prev / f - 1)
    w = w * err
    w /= w.sum()
approx = x * (powers(z, 5) @ as_float32(p)) / (powers(z, 5) @ as_float32(q))
worst = np.max(np.abs(approx / erf(x) - 1)) / 2**-24
show("erf P", p, worst)
show("erf Q", q, worst)
