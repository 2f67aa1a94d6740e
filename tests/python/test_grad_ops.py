"""Every public operator of ``topi`` and ``topi.nn``, differentiated: torch.autograd.gradcheck in
float64 through the derived gradient, or an entry of NOT_DIFFERENTIABLE saying why there is no
gradient (integer or boolean results, no tensor input). ``test_inventory_is_complete`` lists the
library's operators, so a new operator without a case fails here until it gets one."""

from __future__ import annotations

import types

import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import te, topi
from pytvmbridge.bridges import to_pytorch

F64 = "float64"
nn = topi.nn


def _plus(x, c):
    return te.compute(x.shape, lambda *i: x[i] + c, name="plus")


def _pos(x):
    """|x| + 0.5: an operand kept away from zero (logarithms, roots, divisors, pow bases)."""
    return _plus(topi.abs(x), 0.5)


def _int_index(shape, fn):
    return te.compute(shape, lambda *i: fn(*i).astype("int64"), name="idx")


def _fixed_shifted(fn, shift):
    # a placeholder made constant (batch norm's moving statistics shifted away from zero)
    return lambda *xs: fn(*xs[:-1], _plus(topi.abs(xs[-1]), shift))


# Operator -> cases (name suffix, build, input shapes, gradcheck keywords); the key names the
# operator as imported (``topi.X`` or ``topi.nn.X``), a bracket tells variants apart.
CASES = {
    "topi.abs": (lambda x: topi.abs(x), [(6,)]),
    "topi.add": (lambda a, b: topi.add(a, b), [(3, 4), (4,)]),
    "topi.broadcast_to": (lambda x: topi.broadcast_to(x, (3, 4)), [(1, 4)]),
    # float32 in the middle: its rounding (1e-7) needs a wider finite-difference step
    "topi.cast": (
        lambda x: topi.cast(topi.cast(x, "float32"), F64),
        [(5,)],
        {"eps": 1e-3, "atol": 1e-3},
    ),
    "topi.ceil": (lambda x: topi.ceil(x), [(5,)]),
    "topi.clip": (lambda x: topi.clip(x, -0.5, 0.5), [(6,)]),
    "topi.concatenate": (lambda a, b: topi.concatenate([a, b], axis=1), [(2, 3), (2, 1)]),
    "topi.cos": (lambda x: topi.cos(x), [(5,)]),
    "topi.divide": (lambda a, b: topi.divide(a, _pos(b)), [(3, 4), (4,)]),
    "topi.elemwise_sum": (lambda a, b, c: topi.elemwise_sum([a, b, c]), [(2, 3)] * 3),
    "topi.erf": (lambda x: topi.erf(x), [(5,)]),
    "topi.exp": (lambda x: topi.exp(x), [(5,)]),
    "topi.exp2": (lambda x: topi.exp2(x), [(5,)]),
    "topi.expand_dims": (lambda x: topi.expand_dims(x, 1, 2), [(2, 3)]),
    "topi.fast_erf": (lambda x: topi.fast_erf(x), [(5,)]),
    "topi.fast_exp": (lambda x: topi.fast_exp(x), [(5,)]),
    "topi.fast_tanh": (lambda x: topi.fast_tanh(x), [(5,)]),
    "topi.flatten": (lambda x: topi.flatten(x), [(2, 2, 3)]),
    "topi.cumprod": (lambda x: topi.cumprod(x, 1), [(2, 21)]),
    "topi.cumsum": (lambda x: topi.cumsum(x, 1), [(2, 37)]),  # past two 16-element blocks
    "topi.flip": (lambda x: topi.flip(x, 1), [(3, 4)]),
    "topi.floor": (lambda x: topi.floor(x), [(5,)]),
    "topi.floor_divide": (lambda a, b: topi.floor_divide(a, _pos(b)), [(5,), (5,)]),
    "topi.floor_mod": (lambda a, b: topi.floor_mod(a, _pos(b)), [(5,), (5,)]),
    "topi.mod": (lambda a, b: topi.mod(a, _pos(b)), [(5,), (5,)]),
    "topi.trunc_divide": (lambda a, b: topi.trunc_divide(a, _pos(b)), [(5,), (5,)]),
    "topi.trunc_mod": (lambda a, b: topi.trunc_mod(a, _pos(b)), [(5,), (5,)]),
    "topi.full_like": (lambda x: topi.add(topi.full_like(x, 2.0), x), [(4,)]),
    "topi.gather": (
        lambda x: topi.gather(x, 1, _int_index((3, 2), lambda i, j: (i + 2 * j + 1) % 4)),
        [(3, 4)],
    ),
    "topi.identity": (lambda x: topi.identity(x), [(4,)]),
    "topi.layout_transform": (lambda x: topi.layout_transform(x, "NCHW", "NCHW2c"), [(1, 4, 2, 2)]),
    "topi.log": (lambda x: topi.log(_pos(x)), [(5,)]),
    "topi.log10": (lambda x: topi.log10(_pos(x)), [(5,)]),
    "topi.log1p": (lambda x: topi.log1p(_pos(x)), [(5,)]),
    "topi.log2": (lambda x: topi.log2(_pos(x)), [(5,)]),
    "topi.matmul": (lambda a, b: topi.matmul(a, b), [(4, 5), (5, 3)]),
    "topi.matmul[transposed]": (lambda a, b: topi.matmul(a, b, True, True), [(5, 4), (3, 5)]),
    "topi.max": (lambda x: topi.max(x, axis=0), [(3, 4)]),
    "topi.maximum": (lambda a, b: topi.maximum(a, b), [(3, 4), (3, 4)]),
    "topi.mean": (lambda x: topi.mean(x, axis=(0, 2), keepdims=True), [(2, 3, 4)]),
    "topi.min": (lambda x: topi.min(x, axis=1), [(3, 4)]),
    "topi.minimum": (lambda a, b: topi.minimum(a, b), [(3, 4), (4,)]),
    "topi.multiply": (lambda a, b: topi.multiply(a, b), [(3, 4), (3, 1)]),
    "topi.negative": (lambda x: topi.negative(x), [(4,)]),
    "topi.permute": (lambda x: topi.permute(x, (2, 0, 1)), [(2, 3, 4)]),
    "topi.power": (lambda a, b: topi.power(_pos(a), b), [(5,), (5,)]),
    "topi.prod": (lambda x: topi.prod(x, axis=1), [(3, 4)]),
    "topi.repeat": (lambda x: topi.repeat(x, 2, 1), [(2, 3)]),
    "topi.reshape": (lambda x: topi.reshape(x, (4, 3)), [(3, 4)]),
    "topi.round": (lambda x: topi.round(x), [(5,)]),
    "topi.rsqrt": (lambda x: topi.rsqrt(_pos(x)), [(5,)]),
    "topi.sigmoid": (lambda x: topi.sigmoid(x), [(5,)]),
    "topi.sign": (lambda x: topi.multiply(topi.sign(x), x), [(5,)]),
    "topi.sin": (lambda x: topi.sin(x), [(5,)]),
    "topi.split": (lambda x: tuple(topi.split(x, [1, 3], axis=1)), [(2, 4)]),
    "topi.sqrt": (lambda x: topi.sqrt(_pos(x)), [(5,)]),
    "topi.squeeze": (lambda x: topi.squeeze(x, 1), [(3, 1, 2)]),
    "topi.stack": (lambda a, b: topi.stack([a, b], axis=1), [(2, 3), (2, 3)]),
    "topi.strided_slice": (
        lambda x: topi.strided_slice(x, [0, 1], [3, 4], [2, 1]),
        [(3, 4)],
    ),
    "topi.subtract": (lambda a, b: topi.subtract(a, b), [(3, 4), (3, 4)]),
    "topi.sum": (lambda x: topi.sum(x, axis=1), [(3, 4)]),
    "topi.take": (
        lambda x: topi.take(x, _int_index((3,), lambda i: 2 - i), axis=0),
        [(3, 4)],
    ),
    "topi.tan": (lambda x: topi.tan(x), [(5,)]),
    "topi.tanh": (lambda x: topi.tanh(x), [(5,)]),
    "topi.tile": (lambda x: topi.tile(x, (2, 1)), [(3, 4)]),
    "topi.transpose": (lambda x: topi.transpose(x), [(3, 4)]),
    "topi.trunc": (lambda x: topi.trunc(x), [(5,)]),
    "topi.where": (
        lambda c, a, b: topi.where(topi.greater(c, te.const(0.0, F64)), a, b),
        [(5,), (5,), (5,)],
    ),
    "topi.nn.adaptive_avg_pool2d": (lambda x: nn.adaptive_avg_pool2d(x, (2, 3)), [(1, 2, 5, 5)]),
    "topi.nn.adaptive_max_pool2d": (lambda x: nn.adaptive_max_pool2d(x, (2, 3)), [(1, 2, 5, 5)]),
    "topi.nn.adaptive_pool": (lambda x: nn.adaptive_pool(x, (3, 2), "max"), [(1, 1, 6, 5)]),
    "topi.nn.avg_pool2d": (lambda x: nn.avg_pool2d(x, 3, 2, 1, False, False), [(1, 2, 6, 6)]),
    "topi.nn.batch_matmul": (lambda a, b: nn.batch_matmul(a, b), [(2, 3, 4), (2, 5, 4)]),
    "topi.nn.batch_norm": (
        _fixed_shifted(lambda x, g, b, m, v: nn.batch_norm(x, g, b, m, v)[0], 0.5),
        [(2, 3, 2, 2), (3,), (3,), (3,), (3,)],
    ),
    "topi.nn.bias_add": (lambda x, b: nn.bias_add(x, b), [(2, 3, 2), (3,)]),
    "topi.nn.conv2d": (lambda x, w: nn.conv2d(x, w, 2, 1), [(1, 2, 5, 5), (3, 2, 3, 3)]),
    "topi.nn.conv2d[dilated]": (
        lambda x, w: nn.conv2d(x, w, 1, 2, 2),
        [(1, 2, 6, 6), (2, 2, 3, 3)],
    ),
    "topi.nn.conv2d_NCHWc": (
        lambda x, w: nn.conv2d_NCHWc(x, w, 1, 1, 1, "NCHW2c", "NCHW2c"),
        [(1, 1, 4, 4, 2), (1, 1, 3, 3, 2, 2)],
    ),
    "topi.nn.conv2d_nchw": (
        lambda x, w: nn.conv2d_nchw(x, w, 1, 0, 1),
        [(1, 2, 4, 4), (2, 2, 2, 2)],
    ),
    "topi.nn.conv2d_transpose_nchw": (
        lambda x, w: nn.conv2d_transpose_nchw(x, w, (2, 2), (1, 1), F64, (1, 1)),
        [(1, 2, 3, 3), (2, 2, 3, 3)],
    ),
    "topi.nn.dense": (lambda x, w, b: nn.dense(x, w, b), [(3, 6), (4, 6), (4,)]),
    "topi.nn.dense_pack": (lambda x, w: nn.dense_pack(x, w), [(2, 3), (2, 3, 2)]),
    "topi.nn.depthwise_conv2d_nchw": (
        lambda x, w: nn.depthwise_conv2d_nchw(x, w, 1, 1, 1),
        [(1, 2, 4, 4), (2, 1, 3, 3)],
    ),
    "topi.nn.elu": (lambda x: nn.elu(x), [(6,)]),
    "topi.nn.gelu": (lambda x: nn.gelu(x), [(6,)]),
    "topi.nn.gelu[tanh]": (lambda x: nn.gelu(x, approximate="tanh"), [(6,)]),
    "topi.nn.global_pool": (lambda x: nn.global_pool(x, "avg"), [(1, 2, 3, 3)]),
    "topi.nn.global_pool[max]": (lambda x: nn.global_pool(x, "max"), [(1, 2, 3, 3)]),
    "topi.nn.group_conv2d_nchw": (
        lambda x, w: nn.group_conv2d_nchw(x, w, 2, 1, 1, 2),
        [(1, 4, 5, 5), (2, 2, 3, 3)],
    ),
    "topi.nn.group_norm": (
        lambda x, g, b: nn.group_norm(x, g, b, 2),
        [(2, 4, 2, 2), (4,), (4,)],
    ),
    # scaled: inputs on both sides of the +-3 kinks
    "topi.nn.hardsigmoid": (lambda x: nn.hardsigmoid(x), [(8,)], {}, 4.0),
    "topi.nn.hardswish": (lambda x: nn.hardswish(x), [(8,)], {}, 4.0),
    "topi.nn.layer_norm": (lambda x, g, b: nn.layer_norm(x, g, b), [(3, 6), (6,), (6,)]),
    "topi.nn.leaky_relu": (lambda x: nn.leaky_relu(x, 0.1), [(6,)]),
    "topi.nn.log_softmax": (lambda x: nn.log_softmax(x), [(3, 5)]),
    "topi.nn.matmul": (
        lambda a, b, c: nn.matmul(a, b, c, transpose_b=True),
        [(3, 4), (2, 4), (2,)],
    ),
    "topi.nn.max_pool2d": (lambda x: nn.max_pool2d(x, 2, 2), [(1, 2, 4, 4)]),
    "topi.nn.upsample_bilinear2d": (
        lambda x: nn.upsample_bilinear2d(x, (7, 5), align_corners=False),
        [(1, 2, 3, 4)],
    ),
    "topi.nn.upsample_nearest2d": (lambda x: nn.upsample_nearest2d(x, (5, 7)), [(1, 2, 3, 4)]),
    "topi.nn.max_pool2d[padded]": (lambda x: nn.max_pool2d(x, 3, 2, 1), [(1, 2, 5, 5)]),
    "topi.nn.pack_dense_weight": (lambda w: nn.pack_dense_weight(w, 2), [(4, 3)]),
    "topi.nn.pack_nchwc": (lambda x: nn.pack_nchwc(x, 2), [(1, 4, 2, 2)]),
    "topi.nn.pack_oihwio": (lambda w: nn.pack_oihwio(w, 2, 2), [(4, 2, 1, 1)]),
    "topi.nn.conv2d_winograd_nchw": (
        lambda x, w: nn.conv2d_winograd_nchw(x, w, 1, 1, 1, tile_size=2),
        [(1, 2, 3, 3), (2, 2, 3, 3)],
    ),
    "topi.nn.conv2d_winograd_nchwc": (
        lambda x, u: nn.conv2d_winograd_nchwc(x, u, 0, 2),
        [(1, 1, 4, 3, 2), (4, 4, 1, 2, 2)],
    ),
    "topi.nn.conv2d_winograd_weight_transform": (
        lambda w: nn.conv2d_winograd_weight_transform(w, 4),
        [(2, 1, 3, 3)],
    ),
    "topi.nn.pad": (lambda x: nn.pad(x, (0, 1), (1, 0)), [(3, 4)]),
    "topi.nn.pool": (lambda x: nn.pool(x, 2, 1, 0, "avg"), [(1, 1, 3, 3)]),
    "topi.nn.pool2d": (
        lambda x: nn.pool2d(x, (2, 2), (2, 2), (1, 1), (0, 0), "max", ceil_mode=True),
        [(1, 2, 5, 5)],
    ),
    "topi.nn.pool2d[dilated]": (
        lambda x: nn.pool2d(x, (2, 2), (1, 1), (2, 2), (1, 1), "avg"),
        [(1, 1, 5, 5)],
    ),
    "topi.nn.prelu": (lambda x, a: nn.prelu(x, a), [(2, 3, 4), (3,)]),
    "topi.nn.relu": (lambda x: nn.relu(x), [(7,)]),
    "topi.nn.sigmoid": (lambda x: nn.sigmoid(x), [(5,)]),
    "topi.nn.silu": (lambda x: nn.silu(x), [(6,)]),
    "topi.nn.softmax": (lambda x: nn.softmax(x, axis=0), [(3, 5)]),
    "topi.nn.softplus": (lambda x: nn.softplus(x, 2.0, 1.0), [(8,)]),
    "topi.nn.tanh": (lambda x: nn.tanh(x), [(5,)]),
    "topi.nn.unpack_nchwc": (lambda x: nn.unpack_nchwc(x), [(1, 2, 2, 2, 2)]),
}

# Operators without a gradient, and why. Their results hold no real values to differentiate:
# PyTorch gives such results no grad_fn, and a gradient through them (a mask multiplied in) is
# zero; test_non_differentiable_results_carry_no_gradient checks both.
NOT_DIFFERENTIABLE = {
    "topi.argmax": "integer result (an index)",
    "topi.argmin": "integer result (an index)",
    "topi.equal": "boolean result",
    "topi.not_equal": "boolean result",
    "topi.greater": "boolean result",
    "topi.greater_equal": "boolean result",
    "topi.less": "boolean result",
    "topi.less_equal": "boolean result",
    "topi.logical_and": "boolean result",
    "topi.logical_or": "boolean result",
    "topi.logical_xor": "boolean result",
    "topi.logical_not": "boolean result",
    "topi.isnan": "boolean result",
    "topi.isinf": "boolean result",
    "topi.isfinite": "boolean result",
    "topi.full": "no tensor input (a constant)",
    "topi.bitwise_and": "integer operands and result",
    "topi.bitwise_or": "integer operands and result",
    "topi.bitwise_xor": "integer operands and result",
    "topi.bitwise_not": "integer operand and result",
    "topi.left_shift": "integer operands and result",
    "topi.right_shift": "integer operands and result",
}

# Public names of topi.nn that build no tensor: helpers for writing operators.
NOT_OPERATORS = {
    "topi.nn.get_pad_tuple": "computes padding amounts (integers)",
    "topi.nn.winograd_tile_size": "chooses a tile size (an integer)",
    "topi.nn.winograd_transform_matrices": "returns NumPy constants",
}


def _resolve(name: str):
    obj = tvm
    for part in name.split("[")[0].split("."):
        obj = getattr(obj, part)
    return obj


def _public_operators() -> dict[str, object]:
    found: dict[str, object] = {}
    for module, prefix in ((topi, "topi."), (topi.nn, "topi.nn.")):
        for attr in module.__all__:
            obj = getattr(module, attr)
            if not isinstance(obj, types.ModuleType):
                found[prefix + attr] = obj
    return found


def test_inventory_is_complete():
    covered = {id(_resolve(name)) for name in CASES}
    listed = set(NOT_DIFFERENTIABLE) | set(NOT_OPERATORS)
    missing = [
        name
        for name, obj in _public_operators().items()
        if id(obj) not in covered and name not in listed
    ]
    assert not missing, f"operators with neither a gradcheck case nor a reason: {missing}"
    both = [n for n in listed if id(_resolve(n)) in covered]
    assert not both, f"listed as not differentiable yet given a case: {both}"
    stale = [n for n in listed if n not in _public_operators()]
    assert not stale, f"listed but not public operators: {stale}"
    results = {n for n, why in NOT_DIFFERENTIABLE.items() if why.endswith(("result", "(an index)"))}
    assert results == set(RESULTS), "each integer or boolean result is checked below"


def _inputs(shapes, scale):
    g = torch.Generator().manual_seed(7 + len(shapes))
    return tuple(
        (torch.randn(*s, dtype=torch.float64, generator=g) * scale).requires_grad_() for s in shapes
    )


def _bridge(build, shapes, name):
    phs = [te.placeholder(s, name=f"in{k}", dtype=F64) for k, s in enumerate(shapes)]
    out = build(*phs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    sched = tvm.create_schedule([o.op for o in outs])
    return to_pytorch(tvm.build(sched, [*phs, *outs], name=name))


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    build, shapes, *rest = CASES[name]
    options = rest[0] if rest else {}
    scale = rest[1] if len(rest) > 1 else 1.0
    f = _bridge(build, shapes, "".join(c if c.isalnum() else "_" for c in name))
    assert torch.autograd.gradcheck(f, _inputs(shapes, scale), **options)


def _compare(kernel_fn, torch_fn):
    x = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    head = torch.linspace(-1.0, 1.0, 12, dtype=torch.float64).reshape(3, 4)
    got = tvm.kernel(kernel_fn, name="through")(a)
    (got * head).sum().backward()
    (torch_fn(b) * head).sum().backward()
    torch.testing.assert_close(got, torch_fn(x))
    torch.testing.assert_close(a.grad, b.grad)


ZERO = te.const(0.0, F64)


def _ints(a):  # integers from a float64 tensor, for the bitwise operators
    return topi.cast(topi.multiply(a, 4.0), "int64")


def _torch_ints(t):
    return (t * 4).to(torch.int64)


RESULTS = {  # a non-differentiable result of a float64 tensor, and PyTorch's own
    "topi.argmax": (lambda a: topi.argmax(a, axis=1), lambda t: t.argmax(1)),
    "topi.argmin": (lambda a: topi.argmin(a, axis=1), lambda t: t.argmin(1)),
    "topi.equal": (lambda a: topi.equal(a, a), lambda t: t == t),
    "topi.not_equal": (lambda a: topi.not_equal(a, ZERO), lambda t: t != 0),
    "topi.greater": (lambda a: topi.greater(a, ZERO), lambda t: t > 0),
    "topi.greater_equal": (lambda a: topi.greater_equal(a, ZERO), lambda t: t >= 0),
    "topi.less": (lambda a: topi.less(a, ZERO), lambda t: t < 0),
    "topi.less_equal": (lambda a: topi.less_equal(a, ZERO), lambda t: t <= 0),
    "topi.logical_and": (
        lambda a: topi.logical_and(topi.greater(a, ZERO), topi.less(a, te.const(1.0, F64))),
        lambda t: (t > 0) & (t < 1),
    ),
    "topi.logical_or": (
        lambda a: topi.logical_or(topi.greater(a, ZERO), topi.less(a, te.const(-1.0, F64))),
        lambda t: (t > 0) | (t < -1),
    ),
    "topi.logical_xor": (
        lambda a: topi.logical_xor(topi.greater(a, ZERO), topi.less(a, te.const(1.0, F64))),
        lambda t: (t > 0) ^ (t < 1),
    ),
    "topi.logical_not": (lambda a: topi.logical_not(topi.greater(a, ZERO)), lambda t: ~(t > 0)),
    "topi.isnan": (lambda a: topi.isnan(a), torch.isnan),
    "topi.isinf": (lambda a: topi.isinf(a), torch.isinf),
    "topi.isfinite": (lambda a: topi.isfinite(a), torch.isfinite),
    "topi.bitwise_and": (lambda a: topi.bitwise_and(_ints(a), 3), lambda t: _torch_ints(t) & 3),
    "topi.bitwise_or": (lambda a: topi.bitwise_or(_ints(a), 4), lambda t: _torch_ints(t) | 4),
    "topi.bitwise_xor": (lambda a: topi.bitwise_xor(_ints(a), 5), lambda t: _torch_ints(t) ^ 5),
    "topi.bitwise_not": (lambda a: topi.bitwise_not(_ints(a)), lambda t: ~_torch_ints(t)),
    "topi.left_shift": (lambda a: topi.left_shift(_ints(a), 2), lambda t: _torch_ints(t) << 2),
    "topi.right_shift": (lambda a: topi.right_shift(_ints(a), 1), lambda t: _torch_ints(t) >> 1),
}


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_non_differentiable_results_carry_no_gradient(name):
    fn, torch_fn = RESULTS[name]
    x = torch.randn(3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    # as PyTorch: an integer or boolean result has no grad_fn
    y = tvm.kernel(fn, name=name.split(".")[-1])(x.clone().requires_grad_())
    want = torch_fn(x)
    assert y.grad_fn is None and not y.requires_grad and not y.dtype.is_floating_point
    torch.testing.assert_close(y.to(torch.float64), want.to(torch.float64))

    # multiplied into a float result, it is a constant mask: PyTorch's gradient
    def masked(a):
        r = fn(a)
        return te.compute(
            a.shape, lambda i, j: a[i, j] * r[(i,) if len(r.shape) == 1 else (i, j)].astype(F64)
        )

    def torch_masked(t):
        r = torch_fn(t)
        return t * (r.unsqueeze(1) if r.dim() == 1 else r).to(torch.float64)

    _compare(masked, torch_masked)


def test_full_has_no_tensor_input():
    def plus_full(a):
        c = topi.full((1,), F64, 2.5)
        return te.compute(a.shape, lambda i: a[i] * c[0], name="scaled")

    x = torch.randn(4, dtype=torch.float64, requires_grad=True)
    tvm.kernel(plus_full, name="plus_full")(x).sum().backward()
    torch.testing.assert_close(x.grad, torch.full((4,), 2.5, dtype=torch.float64))


@pytest.mark.parametrize(
    "name, reference",
    [
        ("topi.mod", torch.fmod),
        ("topi.trunc_mod", torch.fmod),
        ("topi.trunc_divide", lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    ],
)
def test_truncated_operators_on_floats_are_fmod_and_trunc_division(name, reference):
    # TVM's mod of floats is C's fmod (the sign of a); trunc_divide rounds toward zero
    x = torch.tensor([5.5, -7.5, 3.0, -1.0, 9.0, -0.25], dtype=torch.float64)
    y = torch.tensor([2.0, 2.0, -2.0, 3.0, 0.5, 4.0], dtype=torch.float64)
    got = tvm.kernel(lambda p, q: _resolve(name)(p, q))(x, y)
    torch.testing.assert_close(got, reference(x, y), rtol=0, atol=0)
