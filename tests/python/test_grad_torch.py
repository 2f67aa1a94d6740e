"""@kernel under PyTorch autograd: torch.autograd.gradcheck (float64) through derived gradients."""

from __future__ import annotations

import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import te, topi


def rand(*shape, positive=False):
    g = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(*shape, dtype=torch.float64, generator=g)
    return (x.abs() + 0.5 if positive else x).requires_grad_()


def _conv2d_3x3_stride2(x, w):
    # @kernel gives symbolic shapes; topi's conv2d wants a constant window, so spell it out
    n, c, h, wd = x.shape
    o = w.shape[0]
    rc = te.reduce_axis((0, c), name="rc")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    return te.compute(
        (n, o, (h - 3) // 2 + 1, (wd - 3) // 2 + 1),
        lambda b, f, y, xx: te.sum(
            x[b, rc, y * 2 + ry, xx * 2 + rx] * w[f, rc, ry, rx], [rc, ry, rx]
        ),
        name="conv",
    )


OPS = {
    "matmul": (lambda a, b: topi.matmul(a, b), [(4, 5), (5, 3)]),
    "dense": (lambda x, w, b: topi.nn.dense(x, w, b), [(3, 6), (4, 6), (4,)]),
    "conv2d": (lambda x, w: _conv2d_3x3_stride2(x, w), [(1, 2, 7, 7), (3, 2, 3, 3)]),
    "max_pool2d": (lambda x: topi.nn.max_pool2d(x, 2, 2), [(1, 2, 4, 4)]),
    "avg_pool2d": (lambda x: topi.nn.avg_pool2d(x, 2, 1, 1), [(1, 1, 4, 4)]),
    "softmax": (lambda x: topi.nn.softmax(x), [(3, 5)]),
    "log_softmax": (lambda x: topi.nn.log_softmax(x), [(3, 5)]),
    "layer_norm": (lambda x, g, b: topi.nn.layer_norm(x, g, b), [(3, 6), (6,), (6,)]),
    "sum": (lambda x: topi.sum(x, axis=1), [(3, 4)]),
    "max": (lambda x: topi.max(x, axis=0), [(3, 4)]),
    "mean": (lambda x: topi.mean(x, axis=1), [(3, 4)]),
    "add_broadcast": (lambda a, b: topi.add(a, b), [(3, 4), (4,)]),
    "multiply": (lambda a, b: topi.multiply(a, b), [(3, 4), (3, 4)]),
    "tanh": (lambda x: topi.tanh(x), [(5,)]),
    "sigmoid": (lambda x: topi.sigmoid(x), [(5,)]),
    "exp": (lambda x: topi.exp(x), [(5,)]),
    "relu": (lambda x: topi.nn.relu(x), [(7,)]),
    "transpose": (lambda x: topi.transpose(x, (1, 0)), [(3, 4)]),
    "reshape": (lambda x: topi.reshape(x, (4, 3)), [(3, 4)]),
    "concatenate": (lambda a, b: topi.concatenate([a, b], axis=0), [(2, 3), (1, 3)]),
    "batch_matmul": (lambda a, b: topi.nn.batch_matmul(a, b), [(2, 3, 4), (2, 5, 4)]),
    "min": (lambda x: topi.min(x, axis=1), [(3, 4)]),
    "prod": (lambda x: topi.prod(x, axis=1), [(3, 4)]),
    "gelu": (lambda x: topi.nn.gelu(x), [(6,)]),
    "gelu_tanh": (lambda x: topi.nn.gelu(x, approximate="tanh"), [(6,)]),
    "silu": (lambda x: topi.nn.silu(x), [(6,)]),
    "hardswish": (lambda x: topi.nn.hardswish(x), [(6,)]),
    "leaky_relu": (lambda x: topi.nn.leaky_relu(x, 0.1), [(6,)]),
    "clip": (lambda x: topi.clip(x, -0.5, 0.5), [(6,)]),
    "where": (
        lambda c, a, b: topi.where(topi.greater(c, te.const(0.0, "float64")), a, b),
        [(5,), (5,), (5,)],
    ),
    "subtract": (lambda a, b: topi.subtract(a, b), [(3, 4), (3, 4)]),
    "divide": (lambda a, b: topi.divide(a, b), [(3, 4), (3, 4)]),
    "log": (lambda x: topi.log(topi.abs(x)), [(5,)]),
    "sqrt": (lambda x: topi.sqrt(topi.abs(x)), [(5,)]),
    "sin": (lambda x: topi.sin(x), [(5,)]),
    "pad": (lambda x: topi.nn.pad(x, (0, 1), (1, 0)), [(3, 4)]),
    "strided_slice": (lambda x: topi.strided_slice(x, [0, 1], [3, 4], [2, 1]), [(3, 4)]),
    "batch_norm": (
        lambda x, g, b, m, v: topi.nn.batch_norm(x, g, b, m, v)[0],
        [(2, 3, 2, 2), (3,), (3,), (3,), (3,)],
    ),
    "adaptive_avg_pool2d": (lambda x: topi.nn.adaptive_avg_pool2d(x, (1, 1)), [(1, 2, 3, 3)]),
    "permute": (lambda x: topi.permute(x, (2, 0, 1)), [(2, 3, 4)]),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_gradcheck_topi_op(name):
    fn, shapes = OPS[name]
    k = tvm.kernel(fn, name=name)
    assert torch.autograd.gradcheck(k, tuple(rand(*s) for s in shapes))


def test_output_has_grad_fn_and_matches_torch():
    k = tvm.kernel(lambda a, b: topi.matmul(a, b), name="mm")
    a, b = rand(4, 3), rand(3, 2)
    y = k(a, b)
    assert y.grad_fn is not None
    y.pow(2).sum().backward()
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    (a2 @ b2).pow(2).sum().backward()
    torch.testing.assert_close(a.grad, a2.grad)
    torch.testing.assert_close(b.grad, b2.grad)


def test_no_grad_inputs_give_plain_tensors():
    k = tvm.kernel(lambda a: te.compute(a.shape, lambda i: a[i] + 1.0, name="inc"))
    y = k(torch.ones(3))
    assert y.grad_fn is None and y.tolist() == [2.0, 2.0, 2.0]
    with torch.no_grad():
        assert k(torch.ones(3, requires_grad=True)).grad_fn is None


def test_backward_without_derivative_names_the_kernel():
    rms = te.comm_reducer(lambda x, y: te.sqrt(x * x + y * y), lambda t: te.const(0, t), "rms")

    def norms(a):
        k = te.reduce_axis((0, a.shape[1]), name="k")
        return te.compute((a.shape[0],), lambda i: rms(a[i, k], axis=k), name="norms")

    k = tvm.kernel(norms, name="lg")
    y = k(rand(3, 4))
    with pytest.raises(RuntimeError, match=r"'lg'.*custom reducer"):
        y.sum().backward()


def test_several_outputs():
    k = tvm.kernel(
        lambda a: (
            te.compute(a.shape, lambda i: a[i] * a[i], name="sq"),
            te.compute(a.shape, lambda i: te.sin(a[i]), name="sn"),
        ),
        name="two",
    )
    assert torch.autograd.gradcheck(k, (rand(5),))


def test_opcheck_on_the_custom_op():
    from pytvmbridge.autodiff.torch_autograd import torch_op

    k = tvm.kernel(lambda a, b: topi.tanh(topi.matmul(a, b)), name="mmtanh")
    op = torch_op(k)
    torch.library.opcheck(op, ([rand(3, 4), rand(4, 2)],))
    torch.library.opcheck(op, ([torch.randn(2, 2), torch.randn(2, 5)],))


def test_torch_compile_forward_and_backward():
    k = tvm.kernel(lambda a, b: topi.tanh(topi.matmul(a, b)), name="mmtanh_c")

    def f(a, b):
        return (k(a, b) * 2.0).sum()

    a, b = rand(3, 4), rand(4, 2)
    compiled = torch.compile(f, backend="aot_eager")
    out = compiled(a, b)
    out.backward()
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    want = (torch.tanh(a2 @ b2) * 2.0).sum()
    want.backward()
    torch.testing.assert_close(out, want)
    torch.testing.assert_close(a.grad, a2.grad)
    torch.testing.assert_close(b.grad, b2.grad)


def test_torch_export():
    k = tvm.kernel(lambda a: topi.sigmoid(a), name="sig_e")

    class M(torch.nn.Module):
        def forward(self, x):
            return k(x) + 1.0

    x = torch.randn(4, 3)
    ep = torch.export.export(M(), (x,))
    torch.testing.assert_close(ep.module()(x), torch.sigmoid(x) + 1.0)


def test_tc_define_is_differentiable():
    from pytvmbridge import tc

    mm = tc.define(
        """
        def mm(float(M, K) A, float(K, N) B) -> (C) {
            C(m, n) +=! A(m, k) * B(k, n)
        }
        """
    )
    a, b = rand(3, 4).float(), rand(4, 2).float()
    a.retain_grad()
    b.retain_grad()
    y = mm(a, b)
    assert y.grad_fn is not None
    g = torch.randn(3, 2)
    y.backward(g)
    torch.testing.assert_close(a.grad, g @ b.detach().T)
    torch.testing.assert_close(b.grad, a.detach().T @ g)


def test_tc_define_gradcheck_float64():
    from pytvmbridge import tc

    f = tc.define("def f(double(N) X, double(N) Y) -> (Z) { Z(i) = tanh(X(i)) * Y(i) }")
    assert torch.autograd.gradcheck(f, (rand(5), rand(5)))


def test_tc_make_autograd_with_hand_written_backward():
    from pytvmbridge import tc

    lang = """
    def scale(float(N) X, float(N) W) -> (Y) { Y(i) = X(i) * W(i) }
    def scale_grad(float(N) X, float(N) W, float(N) dY) -> (dX, dW) {
        dX(i) = dY(i) * W(i)
        dW(i) = dY(i) * X(i)
    }
    """
    T = tc.define(lang)
    f = tc.make_autograd(T.scale, T.scale_grad)
    x = torch.randn(4, requires_grad=True)
    w = torch.randn(4, requires_grad=True)
    f(x, w).sum().backward()
    torch.testing.assert_close(x.grad, w.detach())
    torch.testing.assert_close(w.grad, x.detach())


def test_opcheck_on_a_tc_define_op():
    from pytvmbridge import tc
    from pytvmbridge.autodiff.torch_autograd import torch_op

    f = tc.define("def f(double(N, K) X, double(K) Y) -> (Z) { Z(i) +=! tanh(X(i, k)) * Y(k) }")
    op = torch_op(f)
    torch.library.opcheck(op, ([rand(3, 4), rand(4)],))
    (z,) = op([rand(3, 4), rand(4)])
    torch.testing.assert_close(z, torch.tanh(rand(3, 4)) @ rand(4))


def test_a_numpy_input_beside_a_tensor_that_requires_grad():
    # Frameworks mix in one call: the NumPy array is read as a torch tensor, the gradient flows
    # to the tensor (was save_for_backward's TypeError); TC defs alike
    import numpy as np

    from pytvmbridge import tc

    mul = tvm.kernel(lambda x, y: te.compute(x.shape, lambda i: x[i] * y[i], name="m"))
    x = torch.arange(4.0, requires_grad=True)
    y = np.array([1.0, 2.0, 3.0, 4.0], "float32")
    out = mul(x, y)
    torch.testing.assert_close(out, torch.tensor([0.0, 2.0, 6.0, 12.0]))
    out.sum().backward()
    torch.testing.assert_close(x.grad, torch.from_numpy(y))
    y.flags.writeable = False  # DLPack refuses it: read from a copy
    x.grad = None
    mul(x, y).sum().backward()
    torch.testing.assert_close(x.grad, torch.from_numpy(y.copy()))
    mm = tc.define("def mm(float(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k) * B(k,n) }")
    a = torch.randn(2, 3, requires_grad=True)
    b = np.random.default_rng(0).random((3, 4)).astype("float32")
    mm(a, b).sum().backward()
    torch.testing.assert_close(a.grad, torch.from_numpy(b).sum(1).expand(2, 3))
    # a list is no array, with or without grad (as on the plain path); make_autograd reads
    # NumPy arrays too
    with pytest.raises(TypeError, match=r"input 1: expected an array .*'list'"):
        mul(x, [1.0, 2.0, 3.0, 4.0])
    T = tc.define(
        "def scale(double(N) X, double(N) W) -> (Y) { Y(i) = X(i) * W(i) }\n"
        "def scale_grad(double(N) X, double(N) W, double(N) dY) -> (dX, dW) {\n"
        "  dX(i) = dY(i) * W(i)\n  dW(i) = dY(i) * X(i)\n}"
    )
    f = tc.make_autograd(T.scale, T.scale_grad)
    v = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    f(v, np.array([3.0, 4.0])).sum().backward()
    torch.testing.assert_close(v.grad, torch.tensor([3.0, 4.0], dtype=torch.float64))


def test_out_with_a_tensor_subclass_that_needs_no_grad():
    class Tagged(torch.Tensor):
        pass

    double = tvm.kernel(lambda x: te.compute(x.shape, lambda i: x[i] * 2.0, name="d"))
    out = torch.zeros(4)
    double(torch.arange(4.0).as_subclass(Tagged), out=out)
    torch.testing.assert_close(out, torch.arange(4.0) * 2)
    with pytest.raises(ValueError, match="out= cannot be used with inputs that require grad"):
        double(torch.arange(4.0, requires_grad=True).as_subclass(Tagged), out=out)


def test_second_derivatives_raise_instead_of_coming_back_zero():
    cube = tvm.kernel(lambda a: te.compute(a.shape, lambda i: a[i] * a[i] * a[i], name="c"))
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(cube(x).sum(), x, create_graph=True)
    torch.testing.assert_close(g, 3 * x.detach() ** 2)  # the first derivative is right
    with pytest.raises(NotImplementedError, match="not differentiable again"):
        torch.autograd.grad(g.sum(), x, allow_unused=True)
    with pytest.raises(NotImplementedError, match="not differentiable again"):
        torch.autograd.functional.hessian(lambda v: cube(v).sum(), x)

    class Cube(torch.nn.Module):
        def forward(self, v):
            return cube(v).sum()

    exported = torch.export.export(Cube(), (torch.ones(2, dtype=torch.float64),)).module()
    (g,) = torch.autograd.grad(exported(x), x, create_graph=True)  # the custom-op route
    torch.testing.assert_close(g, 3 * x.detach() ** 2)
    with pytest.raises(NotImplementedError, match="not differentiable again"):
        torch.autograd.grad(g.sum(), x)


def test_in_place_ops_on_what_the_gradient_does_not_read_are_allowed():
    # nn.ReLU(inplace=True) after a kernel: a product's gradient reads its inputs, not its output
    mm = tvm.kernel(lambda a, b: topi.matmul(a, b), name="mm")
    a, b = rand(3, 4), rand(4, 5)
    y = mm(a, b)
    y.relu_()
    y.sum().backward()
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    torch.relu(a2 @ b2).sum().backward()
    torch.testing.assert_close(a.grad, a2.grad)
    torch.testing.assert_close(b.grad, b2.grad)
    # an input modified after an addition (whose gradient reads neither) is fine too
    add = tvm.kernel(lambda p, q: topi.add(p, q), name="add")
    x = rand(3)
    w = x * 2.0
    r = add(w, torch.ones(3, dtype=torch.float64))
    w.add_(1.0)
    (r * r.detach()).sum().backward()
    torch.testing.assert_close(x.grad, 2.0 * (2.0 * x.detach() + 1.0))
    # what the gradient does read is still checked, as PyTorch does
    sq = tvm.kernel(lambda p: te.compute(p.shape, lambda i: p[i] * p[i], name="sq"), name="sq")
    w = x * 2.0
    r = sq(w)
    w.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        r.sum().backward()


def test_extern_and_scan_stages_have_no_gradient_rather_than_a_wrong_one():
    import numpy as np

    from pytvmbridge.bridges import to_pytorch

    @tvm.register_func("test_grad.cumsum", override=True)
    def cumsum(x, y):
        np.cumsum(x.numpy(), out=y.numpy())

    A = te.placeholder((5,), dtype="float64", name="A")
    B = te.extern((5,), [A], lambda i, o: te.call_packed("test_grad.cumsum", i[0], o[0]), name="B")
    f = to_pytorch(tvm.build(tvm.create_schedule(B.op), [A, B], name="ext"))
    a = rand(5)
    y = f(a)
    torch.testing.assert_close(y, torch.cumsum(a.detach(), 0))
    with pytest.raises(RuntimeError, match="extern stage"):
        y.sum().backward()
    X = te.placeholder((3, 2), dtype="float64", name="X")
    state = te.placeholder((3, 2), dtype="float64", name="state")
    init = te.compute((1, 2), lambda _, i: X[0, i], name="init")
    update = te.compute((3, 2), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    S = te.scan(init, update, state)
    g = to_pytorch(tvm.build(tvm.create_schedule(S.op), [X, S], name="scan"))
    x = rand(3, 2)
    y = g(x)
    torch.testing.assert_close(y, torch.cumsum(x.detach(), 0))
    with pytest.raises(RuntimeError, match="scan"):
        y.sum().backward()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_gradients_sum_in_float32(dtype):
    # The sums a gradient derives (a broadcast input's, a weight's) ran in 16 bits: 65536 terms
    # of 0.5 came to 1024 in float16 and 128 in bfloat16; PyTorch sums in float32.
    add = tvm.kernel(lambda x, b: topi.add(x, b), name="add_bias")
    b = torch.zeros(3, dtype=dtype, requires_grad=True)
    add(torch.zeros(65536, 3, dtype=dtype), b).backward(torch.full((65536, 3), 0.5, dtype=dtype))
    assert b.grad.dtype == dtype
    assert b.grad.tolist() == [32768.0] * 3
    dense = tvm.kernel(lambda x, w: topi.nn.dense(x, w), name="dense_half")
    torch.manual_seed(0)
    x, w = torch.randn(8192, 16, dtype=torch.float64), torch.randn(8, 16, dtype=torch.float64)
    g = torch.randn(8192, 8, dtype=torch.float64)
    want = g.t() @ x  # d(x @ w.T)/dw
    wh = w.to(dtype).requires_grad_()
    dense(x.to(dtype), wh).backward(g.to(dtype))
    err = ((wh.grad.double() - want).norm() / want.norm()).item()
    assert err < (2e-3 if dtype == torch.float16 else 1e-2), err  # was 0.23 and 0.88


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_softmax_gradient_at_the_row_maximum(dtype):
    # The maximum's shift cancels in exact arithmetic; the float32 casts of a 16-bit softmax hid
    # that from the analysis, and its two large adjoints, summed in 16 bits, missed cancelling:
    # the gradient at each row's maximum was off by 2-3x.
    softmax = tvm.kernel(lambda a: topi.nn.softmax(a), name="softmax_half")
    torch.manual_seed(0)
    x = torch.randn(3, 4096, dtype=torch.float64)
    g = torch.rand(3, 4096, dtype=torch.float64)
    ref = x.clone().requires_grad_()
    torch.softmax(ref, -1).backward(g)
    h = x.to(dtype).requires_grad_()
    softmax(h).backward(g.to(dtype))
    at_max = x.argmax(-1)
    rows = torch.arange(3)
    # PyTorch's own 16-bit softmax is 1.7e-6 (float16) and 9.3e-6 (bfloat16) off there
    atol = 5e-6 if dtype == torch.float16 else 3e-5
    err = (h.grad.double()[rows, at_max] - ref.grad[rows, at_max]).abs().max().item()
    assert err < atol, err  # float16 was 5e-4 off
    assert (h.grad.double() - ref.grad).abs().max().item() < atol


def test_softplus_gradient_at_the_threshold():
    # min(beta x, threshold) inside kept exp finite, and its derivative at the tie was 0: the
    # gradient at x = threshold / beta was 0 where PyTorch's is 1
    for beta, threshold in ((1.0, 20.0), (2.0, 5.0)):
        softplus = tvm.kernel(lambda a, b=beta, t=threshold: topi.nn.softplus(a, b, t))
        at = threshold / beta
        x = torch.tensor([at - 0.01, at, at + 0.01, -3.0, 0.5], dtype=torch.float64)
        ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
        softplus(ours).sum().backward()
        torch.nn.functional.softplus(theirs, beta, threshold).sum().backward()
        torch.testing.assert_close(ours.grad, theirs.grad)


def test_gather_gradient_with_an_index_narrower_than_the_data():
    # PyTorch's rule: the index may be smaller than the data on the other axes. The gradient
    # read the index tensor over the data's extent there, and its build was refused ("reads
    # 'i' in dimension 1 at indices 0..3, but 'i' has 3 there").
    cases = [
        (0, (3, 4), [[0, 0, 2], [1, 0, 2]]),
        (1, (3, 4), [[3, 0], [1, 1]]),
    ]
    for axis, shape, index in cases:
        gather = tvm.kernel(lambda x, i, a=axis: topi.gather(x, a, i))
        x = torch.randn(*shape, dtype=torch.float64)
        idx = torch.tensor(index)
        ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
        g = torch.randn(idx.shape, dtype=torch.float64)
        out = gather(ours, idx)
        torch.testing.assert_close(out, torch.gather(x, axis, idx))
        out.backward(g)
        torch.gather(theirs, axis, idx).backward(g)
        torch.testing.assert_close(ours.grad, theirs.grad)


def test_clip_gradient_at_nan_is_clamps():
    # torch.clamp's gradient is 0 at a NaN (and 1 at the bounds); it passed through as 1
    clip = tvm.kernel(lambda a: topi.clip(a, -1.0, 1.0))
    x = torch.tensor([float("nan"), -1.0, 1.0, 0.5, -3.0, 3.0], dtype=torch.float64)
    ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
    out = clip(ours)
    out.sum().backward()
    want = torch.clamp(theirs, -1.0, 1.0)
    want.sum().backward()
    torch.testing.assert_close(out, want, equal_nan=True)
    torch.testing.assert_close(ours.grad, theirs.grad)
