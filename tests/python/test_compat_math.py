"""The math functions TC documents (its 64 builtins) and TVM's tir math, as te functions and as
TC builtins, compiled (vector loops through libmvec where glibc has the function, scalar libm or
the runtime otherwise) and compared with NumPy / PyTorch / Python's math in float32 and float64."""

import math

import mpmath
import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import tc, te

N = 37  # a vector loop of 16 lanes, and a remainder


def torch_fn(name):
    def ref(*xs):
        return getattr(torch.special, name)(*(torch.from_numpy(x) for x in xs)).numpy()

    return ref


def vectorized(fn):
    return np.vectorize(fn, otypes=["float64"])


def mp(fn):
    """A float64 reference computed with mpmath at 50 digits (for functions whose PyTorch
    versions are accurate to ~1e-7 only, or whose argument needs exact transformation)."""

    def ref(*xs):
        with mpmath.workdps(50):
            rows = zip(*xs, strict=True)
            return np.array([float(fn(*(mpmath.mpf(float(v)) for v in vs))) for vs in rows])

    return ref


def logb_ref(x):
    return np.frexp(x)[1].astype("float64") - 1


# name -> (reference on float64 arrays, domains of the arguments)
FUNCTIONS = {
    "acos": (np.arccos, [(-0.99, 0.99)]),
    "acosh": (np.arccosh, [(1.0, 20.0)]),
    "asin": (np.arcsin, [(-0.99, 0.99)]),
    "asinh": (np.arcsinh, [(-20.0, 20.0)]),
    "atan": (np.arctan, [(-20.0, 20.0)]),
    "atanh": (np.arctanh, [(-0.95, 0.95)]),
    "atan2": (np.arctan2, [(-5.0, 5.0), (-5.0, 5.0)]),
    "cbrt": (np.cbrt, [(-30.0, 30.0)]),
    "copysign": (np.copysign, [(-5.0, 5.0), (-5.0, 5.0)]),
    "cosh": (np.cosh, [(-8.0, 8.0)]),
    "cospi": (lambda x: np.cos(np.pi * x), [(-4.0, 4.0)]),
    "cyl_bessel_i0": (np.i0, [(-8.0, 8.0)]),
    "cyl_bessel_i1": (torch_fn("i1"), [(-8.0, 8.0)]),
    "erfc": (vectorized(math.erfc), [(-3.0, 8.0)]),
    "erfcinv": (mp(lambda y: mpmath.erfinv(1 - y)), [(0.05, 1.95)]),
    "erfcx": (torch_fn("erfcx"), [(-3.0, 40.0)]),
    "erfinv": (torch_fn("erfinv"), [(-0.999, 0.999)]),
    "exp10": (lambda x: 10.0**x, [(-5.0, 5.0)]),
    "expm1": (np.expm1, [(-3.0, 3.0)]),
    "fabs": (np.fabs, [(-5.0, 5.0)]),
    "fdim": (lambda a, b: np.maximum(a - b, 0.0), [(-5.0, 5.0), (-5.0, 5.0)]),
    "fdivide": (np.divide, [(-5.0, 5.0), (0.5, 5.0)]),
    "fma": (lambda a, b, c: a * b + c, [(-5.0, 5.0)] * 3),
    "hypot": (np.hypot, [(-5.0, 5.0), (-5.0, 5.0)]),
    "j0": (mp(lambda x: mpmath.besselj(0, x)), [(-10.0, 10.0)]),
    "j1": (mp(lambda x: mpmath.besselj(1, x)), [(-10.0, 10.0)]),
    "lgamma": (vectorized(math.lgamma), [(0.1, 20.0)]),
    "logb": (logb_ref, [(0.01, 1000.0)]),
    "nextafter": (np.nextafter, [(-5.0, 5.0), (-5.0, 5.0)]),
    "norm3d": (lambda a, b, c: np.sqrt(a * a + b * b + c * c), [(-5.0, 5.0)] * 3),
    "norm4d": (lambda a, b, c, d: np.sqrt(a * a + b * b + c * c + d * d), [(-5.0, 5.0)] * 4),
    "normcdf": (torch_fn("ndtr"), [(-6.0, 6.0)]),
    "normcdfinv": (torch_fn("ndtri"), [(0.001, 0.999)]),
    "rcbrt": (lambda x: 1 / np.cbrt(x), [(0.1, 30.0)]),
    "remainder": (vectorized(math.remainder), [(-20.0, 20.0), (0.5, 3.0)]),
    "rhypot": (lambda a, b: 1 / np.hypot(a, b), [(0.5, 5.0), (0.5, 5.0)]),
    "rnorm3d": (lambda a, b, c: 1 / np.sqrt(a * a + b * b + c * c), [(0.5, 5.0)] * 3),
    "rnorm4d": (lambda a, b, c, d: 1 / np.sqrt(a * a + b * b + c * c + d * d), [(0.5, 5.0)] * 4),
    "sinh": (np.sinh, [(-8.0, 8.0)]),
    "sinpi": (lambda x: np.sin(np.pi * x), [(-4.0, 4.0)]),
    "tgamma": (vectorized(math.gamma), [(0.1, 10.0)]),
    "y0": (mp(lambda x: mpmath.bessely(0, x)), [(0.1, 10.0)]),
    "y1": (mp(lambda x: mpmath.bessely(1, x)), [(0.1, 10.0)]),
}
# Functions whose argument rounding to float32 moves the float64 reference by more than the
# usual tolerance (steep or cancelling): compared against the reference of the float32 inputs.
TOLERANCE = {"float32": dict(rtol=3e-6, atol=3e-6), "float64": dict(rtol=1e-11, atol=1e-12)}


def samples(domains, dtype, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(lo, hi, N).astype(dtype) for lo, hi in domains]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_te_math_function_matches_reference(name):
    ref, domains = FUNCTIONS[name]
    fn = getattr(te, name)
    assert getattr(tvm, name) is fn and getattr(tvm.tir, name) is fn
    args, outs = [], []
    for dtype in ("float32", "float64"):
        phs = [te.placeholder((N,), dtype=dtype, name=f"x{k}_{dtype}") for k in range(len(domains))]
        out = te.compute((N,), lambda i, phs=phs: fn(*(p[i] for p in phs)), name=f"out_{dtype}")
        args += phs
        outs.append(out)
    s = te.create_schedule([o.op for o in outs])
    for out in outs:
        _, inner = s[out].split(out.op.axis[0], factor=16)
        s[out].vectorize(inner)
    f = tvm.build(s, args + outs)
    arrays = {dt: samples(domains, dt, seed=len(name)) for dt in ("float32", "float64")}
    results = {dt: np.empty(N, dt) for dt in ("float32", "float64")}
    f(*arrays["float32"], *arrays["float64"], results["float32"], results["float64"])
    for dt in ("float32", "float64"):
        expected = ref(*(a.astype("float64") for a in arrays[dt]))
        if name == "nextafter":  # exact, per dtype
            expected = np.nextafter(*arrays[dt])
        np.testing.assert_allclose(results[dt], expected, **TOLERANCE[dt], err_msg=f"{name} {dt}")


def test_exact_values_and_edges():
    x = np.array([0.0, 0.5, 1.0, 1.5, 2.0, -3.0, 1e6 + 0.5, np.inf], "float64")
    A = te.placeholder((8,), dtype="float64", name="A")
    S = te.compute((8,), lambda i: te.sinpi(A[i]), name="S")
    C = te.compute((8,), lambda i: te.cospi(A[i]), name="C")
    f = tvm.build(te.create_schedule([S.op, C.op]), [A, S, C])
    s, c = np.empty(8), np.empty(8)
    f(x, s, c)
    np.testing.assert_array_equal(s[:7], [0.0, 1.0, 0.0, -1.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(c[:7], [1.0, 0.0, -1.0, 0.0, 1.0, -1.0, 0.0])
    assert np.isnan(s[7]) and np.isnan(c[7])
    y = np.array([-1.0, 1.0, 0.0, 2.0, 1.5, -2.0, 0.5, np.nan])
    E = te.compute((8,), lambda i: te.erfinv(A[i]), name="E")
    EC = te.compute((8,), lambda i: te.erfcinv(A[i]), name="EC")
    f = tvm.build(te.create_schedule([E.op, EC.op]), [A, E, EC])
    e, ec = np.empty(8), np.empty(8)
    f(y, e, ec)
    assert e[0] == -np.inf and e[1] == np.inf and e[2] == 0 and np.isnan(e[3])
    assert ec[1] == 0 and ec[2] == np.inf and ec[3] == -np.inf and np.isnan(ec[5])
    np.testing.assert_allclose(ec[4], -0.4769362762044699, rtol=1e-14)


def test_math_errors_name_the_function():
    with pytest.raises(TypeError, match="acos"):
        te.acos(te.var("i"))
    with pytest.raises(TypeError, match="takes 3 argument"):
        te.norm3d(te.var("x", "float32"), 1.0)
    with pytest.raises(TypeError, match="one dtype"):
        te.rhypot(te.var("x", "float32"), te.var("y", "float64"))


# ---- the same functions as TC builtins ----

TC_BUILTINS = (
    "acos acosh asin asinh atan2 atan atanh cbrt ceil copysign cos cosh cospi cyl_bessel_i0 "
    "cyl_bessel_i1 erfc erfcinv erfcx erf erfinv exp10 exp2 exp expm1 fabs fdim fdivide floor fma "
    "fmax fmin fmod hypot j0 j1 lgamma log10 log1p log2 logb log nextafter norm3d norm4d normcdf "
    "normcdfinv pow rcbrt remainder rhypot rnorm3d rnorm4d round rsqrt sin sinh sinpi sqrt tan "
    "tanh tgamma trunc y0 y1"
).split()

OTHER_TC = {  # the builtins that were te functions already, with their references
    "ceil": (np.ceil, [(-5.0, 5.0)]),
    "cos": (np.cos, [(-5.0, 5.0)]),
    "erf": (vectorized(math.erf), [(-3.0, 3.0)]),
    "exp2": (np.exp2, [(-5.0, 5.0)]),
    "exp": (np.exp, [(-5.0, 5.0)]),
    "floor": (np.floor, [(-5.0, 5.0)]),
    "fmax": (np.fmax, [(-5.0, 5.0), (-5.0, 5.0)]),
    "fmin": (np.fmin, [(-5.0, 5.0), (-5.0, 5.0)]),
    "fmod": (np.fmod, [(-20.0, 20.0), (0.5, 3.0)]),
    "log10": (np.log10, [(0.1, 50.0)]),
    "log1p": (np.log1p, [(-0.5, 5.0)]),
    "log2": (np.log2, [(0.1, 50.0)]),
    "log": (np.log, [(0.1, 50.0)]),
    "pow": (np.power, [(0.1, 3.0), (-2.0, 2.0)]),
    # TC's round is CUDA's: halves away from zero (te.round rounds them to even)
    "round": (lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), [(-5.0, 5.0)]),
    "rsqrt": (lambda x: 1 / np.sqrt(x), [(0.1, 50.0)]),
    "sin": (np.sin, [(-5.0, 5.0)]),
    "sqrt": (np.sqrt, [(0.0, 50.0)]),
    "tan": (np.tan, [(-1.4, 1.4)]),
    "tanh": (np.tanh, [(-5.0, 5.0)]),
    "trunc": (np.trunc, [(-5.0, 5.0)]),
}


def test_tc_documents_64_builtins_and_each_computes_its_function():
    assert len(TC_BUILTINS) == 64 == len(set(TC_BUILTINS))
    table = {**FUNCTIONS, **OTHER_TC}
    inputs = ", ".join(f"double(N) X{k}" for k in range(4))
    groups = [TC_BUILTINS[g : g + 12] for g in range(0, 64, 12)]  # calls take 16 arrays at most
    source = ""
    for g, names in enumerate(groups):
        outputs = ", ".join(f"O_{name}" for name in names)
        body = "\n".join(
            f"    O_{n}(i) = {n}({', '.join(f'X{k}(i)' for k in range(len(table[n][1])))})"
            for n in names
        )
        source += f"def builtins{g}({inputs}) -> ({outputs}) {{\n{body}\n}}\n"
    lib = tc.define(source)
    for g, names in enumerate(groups):
        for name in names:
            ref, domains = table[name]
            xs = samples(domains + [(0.0, 1.0)] * (4 - len(domains)), "float64", seed=3)
            if name == "round":
                xs[0][:4] = [0.5, -0.5, 1.5, -2.5]
            # One def computes a group of builtins; each output depends on its own inputs only.
            result = lib[f"builtins{g}"](*xs)[names.index(name)]
            expected = (
                np.nextafter(xs[0], xs[1]) if name == "nextafter" else ref(*xs[: len(domains)])
            )
            np.testing.assert_allclose(result, expected, **TOLERANCE["float64"], err_msg=name)


def test_tc_builtin_arity_and_dtype_errors():
    with pytest.raises(tc.TCError, match="takes 3 argument"):
        tc.define("def f(float(N) A) -> (B) { B(i) = norm3d(A(i), A(i)) }")
    with pytest.raises(tc.TCError, match="needs a float argument"):
        tc.define("def f(int32(N) A) -> (B) { B(i) = cbrt(A(i)) }")
    f = tc.define("def f(float(N) A) -> (B) { B(i) = atan2(A(i), 1) + hypot(3, A(i)) }")
    x = np.linspace(-2, 2, 5).astype("float32")
    np.testing.assert_allclose(f(x), np.arctan2(x, 1) + np.hypot(3, x), rtol=1e-6)
