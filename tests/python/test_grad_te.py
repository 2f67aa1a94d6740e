"""te.gradient against PyTorch's autograd (float64), op by op and on random expression trees."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pytvmbridge as tvm
from pytvmbridge import te, topi

F64 = "float64"


def check(build_outputs, torch_fn, shapes, rng_scale=1.0, positive=False, atol=1e-7):
    """Builds ``out = build_outputs(*placeholders)``, differentiates it with a random head with
    te.gradient and compares every input gradient with torch.autograd's."""
    rng = np.random.default_rng(0)
    phs = [te.placeholder(s, name=f"in{k}", dtype=F64) for k, s in enumerate(shapes)]
    out = build_outputs(*phs)
    head = te.placeholder(out.shape, name="head", dtype=F64)
    grads = te.gradient(out, phs, head)
    f = tvm.build(tvm.auto_schedule(grads), [*phs, head, *grads])
    xs = []
    for s in shapes:
        x = rng.standard_normal(s) * rng_scale
        xs.append(np.abs(x) + 0.5 if positive else x)
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    expected_out = torch_fn(*ts)
    h = rng.standard_normal(tuple(expected_out.shape))
    expected = torch.autograd.grad(expected_out, ts, torch.tensor(h), allow_unused=True)
    got = [np.empty_like(x) for x in xs]
    f(*xs, h, *got)
    for k, (g, e) in enumerate(zip(got, expected, strict=False)):
        want = np.zeros_like(xs[k]) if e is None else e.numpy()
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=atol, err_msg=f"input {k}")


def test_elementwise_product_and_quotient():
    check(
        lambda a, b: te.compute(
            a.shape, lambda i, j: a[i, j] * b[i, j] / (b[i, j] * b[i, j] + 1.0)
        ),
        lambda a, b: a * b / (b * b + 1),
        [(3, 5), (3, 5)],
    )


def test_broadcasting_reads_become_reductions():
    check(
        lambda a, b: te.compute((4, 6), lambda i, j: a[i, j] * b[j] + b[j]),
        lambda a, b: a * b + b,
        [(4, 6), (6,)],
    )


def test_sum_and_max_reductions():
    def fwd(a):
        k = te.reduce_axis((0, 7), name="k")
        m = te.compute((5,), lambda i: te.max(a[i, k], axis=k), name="m")
        k2 = te.reduce_axis((0, 7), name="k2")
        return te.compute((5,), lambda i: te.sum(a[i, k2] * m[i], axis=k2), name="s")

    check(fwd, lambda a: (a * a.amax(1, keepdim=True)).sum(1), [(5, 7)])


def test_min_and_prod_reductions():
    def fwd(a):
        k = te.reduce_axis((0, 4), name="k")
        lo = te.compute((3,), lambda i: te.min(a[i, k], axis=k), name="lo")
        k2 = te.reduce_axis((0, 4), name="k2")
        pr = te.compute((3,), lambda i: te.prod(a[i, k2], axis=k2), name="pr")
        return te.compute((3,), lambda i: lo[i] + pr[i])

    check(fwd, lambda a: a.amin(1) + a.prod(1), [(3, 4)], positive=True)


def test_matmul():
    check(lambda a, b: topi.matmul(a, b), lambda a, b: a @ b, [(6, 5), (5, 7)])


def test_dense_with_bias():
    check(
        lambda x, w, b: topi.nn.dense(x, w, b),
        torch.nn.functional.linear,
        [(4, 6), (3, 6), (3,)],
    )


@pytest.mark.parametrize("stride,padding", [(1, 1), (2, 1), (2, 0)])
def test_conv2d(stride, padding):
    check(
        lambda x, w: topi.nn.conv2d(x, w, stride, padding),
        lambda x, w: torch.nn.functional.conv2d(x, w, stride=stride, padding=padding),
        [(2, 3, 7, 7), (4, 3, 3, 3)],
    )


F = torch.nn.functional

# More operators of the library, each against torch.autograd: (build, torch function, shapes).
LIBRARY_OPS = {
    "group_norm": (
        lambda x, g, b: topi.nn.group_norm(x, g, b, 2),
        lambda x, g, b: F.group_norm(x, 2, g, b, eps=1e-5),
        [(2, 4, 3, 3), (4,), (4,)],
    ),
    "depthwise_conv2d": (
        lambda x, w: topi.nn.depthwise_conv2d_nchw(x, w, 1, 1, 1),
        lambda x, w: F.conv2d(x, w, stride=1, padding=1, groups=3),
        [(2, 3, 5, 5), (3, 1, 3, 3)],
    ),
    "group_conv2d": (
        lambda x, w: topi.nn.group_conv2d_nchw(x, w, 2, 1, 1, 2),
        lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=2),
        [(1, 4, 6, 6), (6, 2, 3, 3)],
    ),
    "dilated_conv2d": (
        lambda x, w: topi.nn.conv2d(x, w, 1, 2, 2),
        lambda x, w: F.conv2d(x, w, stride=1, padding=2, dilation=2),
        [(1, 2, 7, 7), (3, 2, 3, 3)],
    ),
    "conv2d_transpose": (
        lambda x, w: topi.nn.conv2d_transpose_nchw(x, w, (2, 2), (1, 1), F64, (1, 1)),
        lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
        [(1, 3, 4, 4), (3, 2, 3, 3)],
    ),
    "broadcast_to": (lambda x: topi.broadcast_to(x, (3, 4)), lambda x: x.expand(3, 4), [(1, 4)]),
    "flip": (lambda x: topi.flip(x, 1), lambda x: torch.flip(x, (1,)), [(3, 4)]),
    "tile": (lambda x: topi.tile(x, (2, 1)), lambda x: x.repeat(2, 1), [(3, 4)]),
    "gelu_tanh": (
        lambda x: topi.nn.gelu(x, approximate="tanh"),
        lambda x: F.gelu(x, approximate="tanh"),
        [(7,)],
    ),
    "elu": (lambda x: topi.nn.elu(x), F.elu, [(7,)]),
    "softplus": (lambda x: topi.nn.softplus(x), F.softplus, [(7,)]),
    "prelu": (lambda x, a: topi.nn.prelu(x, a), F.prelu, [(2, 3, 4), (3,)]),
    "take": (
        lambda x: topi.take(
            x, te.compute((3,), lambda i: (2 - i).astype("int32"), name="idx"), axis=0
        ),
        lambda x: x[[2, 1, 0]],
        [(3, 4)],
    ),
}


@pytest.mark.parametrize("name", sorted(LIBRARY_OPS))
def test_library_operator_gradient(name):
    build, torch_fn, shapes = LIBRARY_OPS[name]
    check(build, torch_fn, shapes)


def test_conv2d_gradient_is_a_gather_over_the_window():
    x = te.placeholder((1, 2, 8, 8), name="x", dtype=F64)
    w = te.placeholder((3, 2, 3, 3), name="w", dtype=F64)
    y = topi.nn.conv2d(x, w, 2, 0)
    (dx,) = te.gradient(y, [x])
    # the data gradient reduces over the output channel and the 3x3 window only, never over
    # the output image (which a scatter turned into a masked sum would do)
    extents = sorted(int(r.dom.extent) for r in dx.op.reduce_axis)
    assert extents == [3, 3, 3], extents


def _guarded_conv(x, w, stride):
    """A convolution padded by guarding its reads (as a kernel with symbolic shapes spells it)."""
    n, c, h, wd = (int(d) for d in x.shape)
    f, _, kh, kw = (int(d) for d in w.shape)
    oh, ow = (h + 2 - kh) // stride + 1, (wd + 2 - kw) // stride + 1
    rc, ry, rx = (te.reduce_axis((0, e), name=nm) for e, nm in ((c, "rc"), (kh, "ry"), (kw, "rx")))

    def read(b, ch, y, xx):
        return te.if_then_else(te.all(y >= 0, y < h, xx >= 0, xx < wd), x[b, ch, y, xx], 0.0)

    return te.compute(
        (n, f, oh, ow),
        lambda b, o, y, xx: te.sum(
            read(b, rc, y * stride + ry - 1, xx * stride + rx - 1) * w[o, rc, ry, rx], [rc, ry, rx]
        ),
        name="conv",
    )


@pytest.mark.parametrize("stride", [1, 2])
def test_guarded_conv2d_against_torch(stride):
    check(
        lambda x, w: _guarded_conv(x, w, stride),
        lambda x, w: torch.nn.functional.conv2d(x, w, stride=stride, padding=1),
        [(2, 3, 7, 7), (4, 3, 3, 3)],
    )


def _guarded_reads(e):
    """How many reads sit under an if_then_else (a bound test per product) in ``e``."""
    from pytvmbridge import _core

    parts = _core.expr_parts(e)
    kids = [q for p in parts[1:] for q in (p if isinstance(p, list) else [p])]
    kids = [q for q in kids if isinstance(q, _core.Expr) and not isinstance(q, _core.IterVar)]
    if parts[0] == "Call" and parts[1] == "if_then_else":
        return int("TensorRead" in repr([_core.expr_parts(k)[0] for k in kids[1:]])) + sum(
            _guarded_reads(k) for k in kids
        )
    return sum(_guarded_reads(k) for k in kids)


def test_guarded_conv2d_gradients_read_zero_padded_copies():
    from pytvmbridge import _core

    x = te.placeholder((2, 3, 8, 8), name="x", dtype=F64)
    w = te.placeholder((16, 3, 3, 3), name="w", dtype=F64)
    head = te.placeholder((2, 16, 8, 8), name="head", dtype=F64)
    dx, dw = te.gradient(_guarded_conv(x, w, 1), [x, w], head)
    # the data gradient is a convolution of the zero-padded head: no bound test per product
    source = _core.expr_parts(dx.op.body[0])[2]
    assert "head_pad" in repr(source) and _guarded_reads(source) == 0, source
    # the weight gradient reads a zero-padded x, reduced with its short axes outermost
    (inner,) = [t for t in dw.op.input_tensors if t.op.name.endswith("_t")]
    assert [int(d) for d in inner.shape] == [3, 3, 3, 16]
    source = _core.expr_parts(inner.op.body[0])[2]
    assert "x_pad" in repr(source) and _guarded_reads(source) == 0, source


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d(kind):
    if kind == "max":
        check(
            lambda x: topi.nn.max_pool2d(x, 2, 2),
            lambda x: torch.nn.functional.max_pool2d(x, 2, 2),
            [(1, 2, 6, 6)],
        )
    else:
        check(
            lambda x: topi.nn.avg_pool2d(x, 3, 2, 1),
            lambda x: torch.nn.functional.avg_pool2d(x, 3, 2, 1, count_include_pad=True),
            [(1, 2, 7, 7)],
        )


def test_softmax_and_log_softmax():
    check(lambda x: topi.nn.softmax(x), lambda x: torch.softmax(x, -1), [(3, 8)])
    check(lambda x: topi.nn.log_softmax(x), lambda x: torch.log_softmax(x, -1), [(3, 8)])


def test_layer_norm():
    check(
        lambda x, g, b: topi.nn.layer_norm(x, g, b, axis=-1),
        lambda x, g, b: torch.nn.functional.layer_norm(x, (8,), g, b),
        [(4, 8), (8,), (8,)],
    )


def test_transpose_and_strided_slice_reads():
    check(
        lambda a: te.compute((3, 2), lambda i, j: a[j * 2, 2 - i] * 3.0),
        lambda a: a[0:4:2].flip(1).T * 3.0,
        [(4, 3)],
    )


def test_if_then_else_and_select():
    check(
        lambda a: te.compute(
            (6,),
            lambda i: (
                te.if_then_else(i >= 1, a[te.max(i - 1, 0)], 0.0)
                + te.select(a[i] > 0.0, a[i] * a[i], -a[i])
            ),
        ),
        lambda a: torch.cat([a.new_zeros(1), a[:-1]]) + torch.where(a > 0, a * a, -a),
        [(6,)],
    )


UNARY = {
    "exp": (te.exp, torch.exp, False),
    "log": (te.log, torch.log, True),
    "log2": (te.log2, torch.log2, True),
    "log1p": (te.log1p, torch.log1p, True),
    "sqrt": (te.sqrt, torch.sqrt, True),
    "rsqrt": (te.rsqrt, torch.rsqrt, True),
    "sin": (te.sin, torch.sin, False),
    "cos": (te.cos, torch.cos, False),
    "tanh": (te.tanh, torch.tanh, False),
    "sigmoid": (te.sigmoid, torch.sigmoid, False),
    "erf": (te.erf, torch.erf, False),
    "abs": (te.abs, torch.abs, False),
    "floor": (te.floor, torch.floor, False),
    "atan": (te.atan, torch.atan, False),
    "asinh": (te.asinh, torch.asinh, False),
    "sinh": (te.sinh, torch.sinh, False),
    "cosh": (te.cosh, torch.cosh, False),
    "expm1": (te.expm1, torch.expm1, False),
    "erfc": (te.erfc, torch.erfc, False),
    "cbrt": (te.cbrt, lambda x: torch.sign(x) * x.abs() ** (1 / 3), True),
    "i0": (te.cyl_bessel_i0, torch.special.i0, False),
    "i1": (te.cyl_bessel_i1, torch.special.i1, False),
    "erfinv": (lambda x: te.erfinv(x * 0.3), lambda x: torch.erfinv(x * 0.3), False),
    # digamma's reflection branch (x < 1/2, negative arguments included) and its series
    "lgamma": (lambda x: te.lgamma(x * 6.0), lambda x: torch.lgamma(x * 6.0), False),
    "lgamma_positive": (lambda x: te.lgamma(x * 9.0), lambda x: torch.lgamma(x * 9.0), True),
    "tgamma": (lambda x: te.tgamma(x * 3.0), lambda x: torch.exp(torch.lgamma(x * 3.0)), True),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_math_function(name):
    tf, pf, positive = UNARY[name]
    check(
        lambda a: te.compute(a.shape, lambda i: tf(a[i])),
        pf,
        [(9,)],
        rng_scale=0.5,
        positive=positive,
    )


def test_binary_math_functions():
    check(
        lambda a, b: te.compute(
            a.shape,
            lambda i: te.power(a[i], b[i]) + te.atan2(a[i], b[i]) + te.hypot(a[i], b[i]),
        ),
        lambda a, b: a**b + torch.atan2(a, b) + torch.hypot(a, b),
        [(7,), (7,)],
        positive=True,
    )


def test_no_derivative_names_the_reducer():
    a = te.placeholder((3, 4), name="a", dtype=F64)
    k = te.reduce_axis((0, 4), name="k")
    rms = te.comm_reducer(lambda x, y: te.sqrt(x * x + y * y), lambda t: te.const(0, t), "rms")
    b = te.compute((3,), lambda i: rms(a[i, k], axis=k), name="b")
    with pytest.raises(ValueError, match="custom reducer"):
        te.gradient(b, [a])


def test_head_shape_is_checked():
    a = te.placeholder((3,), name="a", dtype=F64)
    b = te.compute((3,), lambda i: a[i] * 2.0)
    with pytest.raises(ValueError, match=r"head must have the output's shape \(3,\), got \(4,\)"):
        te.gradient(b, [a], te.placeholder((4,), name="h", dtype=F64))
    with pytest.raises(TypeError, match="head must have the output's dtype float64, got float32"):
        te.gradient(b, [a], te.placeholder((3,), name="h", dtype="float32"))


# Random expression trees: te and torch are built side by side from the same choices.
_UN = [
    (lambda x: te.exp(x * 0.3), lambda x: torch.exp(x * 0.3)),
    (te.tanh, torch.tanh),
    (te.sigmoid, torch.sigmoid),
    (te.sin, torch.sin),
    (lambda x: te.sqrt(x * x + 1.0), lambda x: torch.sqrt(x * x + 1.0)),
]
_BIN = [
    (lambda a, b: a + b, lambda a, b: a + b),
    (lambda a, b: a - b, lambda a, b: a - b),
    (lambda a, b: a * b, lambda a, b: a * b),
    (lambda a, b: a / (b * b + 1.0), lambda a, b: a / (b * b + 1.0)),
    (te.max, torch.maximum),
]


def _tree(draw, depth):
    if depth == 0 or draw(st.booleans()):
        leaf = draw(st.integers(0, 2))
        return (lambda r: r[leaf]), (lambda t: t[leaf])
    if draw(st.booleans()):
        f, g = _UN[draw(st.integers(0, len(_UN) - 1))]
        a, b = _tree(draw, depth - 1)
        return (lambda r: f(a(r))), (lambda t: g(b(t)))
    f, g = _BIN[draw(st.integers(0, len(_BIN) - 1))]
    a1, b1 = _tree(draw, depth - 1)
    a2, b2 = _tree(draw, depth - 1)
    return (lambda r: f(a1(r), a2(r))), (lambda t: g(b1(t), b2(t)))


@st.composite
def trees(draw):
    return _tree(draw, 4)


@settings(max_examples=12, deadline=None)
@given(trees())
def test_random_expression_trees(tree):
    te_fn, torch_fn = tree
    check(
        lambda a, b, c: te.compute((5,), lambda i: te_fn((a[i], b[i], c[i])) + a[i]),
        lambda a, b, c: torch_fn((a, b, c)) + a,
        [(5,), (5,), (5,)],
    )


def test_reshape_gradient_solves_the_flat_index():
    """A reshape reads X[k // 96, k % 96]: the pair is one index k = 96 * i + j, so the gradient
    is a plain copy of the head (no sum over k for each element), equal to the head reshaped."""
    X = tvm.placeholder((64, 96), name="X")
    Y = topi.reshape(X, (64 * 96,))
    H = tvm.placeholder((64 * 96,), name="H")
    [dX] = te.gradient(Y, [X], head=H)
    s = tvm.auto_schedule([dX])
    # no reduce axis (a sum over all 6144 k for each element was i0_r's loop)
    assert "_r" not in "".join(re.findall(r"for \((\w+)", str(tvm.lower(s, [X, H, dX]))))
    f = tvm.build(s, [X, H, dX])
    h = np.random.default_rng(0).standard_normal(64 * 96).astype("float32")
    out = np.empty((64, 96), "float32")
    f(np.zeros((64, 96), "float32"), h, out)
    np.testing.assert_array_equal(out, h.reshape(64, 96))
