"""Symbolic sizes read inside the graph: ``x.reshape(x.shape[0], -1)`` and ``torch.flatten(x, 1)``
with a dynamic batch, through ``pytvmbridge.torch.compile`` (torch.export puts ``sym_size`` in
the graph) and ``torch.compile(backend="pytvmbridge")`` (``dynamic=True`` makes every size
symbolic, and PyTorch guards the flattened width rather than specializing each size). Values are
checked against eager PyTorch for several sizes, with one compilation."""

from __future__ import annotations

import pytest
import torch

import pytvmbridge.torch as ptt
from pytvmbridge.graph import backend


class Flatten(torch.nn.Module):
    """A convolution, a flatten of the batch's rows in one of two spellings, a linear layer."""

    def __init__(self, spelling: str) -> None:
        super().__init__()
        self.spelling = spelling
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.lin = torch.nn.Linear(4 * 5 * 5, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x))
        if self.spelling == "reshape":
            y = y.reshape(y.shape[0], -1)
        else:
            y = torch.flatten(y, 1)
        return torch.tanh(self.lin(y))


class Mlp(torch.nn.Module):
    def __init__(self, spelling: str) -> None:
        super().__init__()
        self.spelling = spelling
        self.lin = torch.nn.Linear(12, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x)
        y = y.reshape(x.shape[0], -1) if self.spelling == "reshape" else torch.flatten(y, 1)
        return self.lin(y)


@pytest.mark.parametrize("spelling", ["reshape", "flatten"])
def test_pytorchtvm_compile_with_a_symbolic_batch(spelling):
    torch.manual_seed(0)
    model = Flatten(spelling).eval()
    compiled = ptt.compile(model, {"input_infos": [("x", ("batch", 3, 5, 5))], "strict": True})
    assert "steps" not in compiled.plan, "one kernel for the whole graph, sym_size included"
    with torch.no_grad():
        for batch in (2, 3, 9):
            x = torch.randn(batch, 3, 5, 5)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)


def test_pytorchtvm_compile_with_several_symbolic_sizes():
    """Size arithmetic on two symbolic sizes (``c * h``) is part of the kernel too."""

    class Rows(torch.nn.Module):
        def forward(self, x):
            y = torch.relu(x.reshape(x.shape[0], -1))
            return y.sum(1) * 2

    compiled = ptt.compile(Rows(), {"input_infos": [("x", ("b", "c", "h"))], "strict": True})
    for shape in ((2, 3, 4), (5, 2, 7)):
        x = torch.randn(shape)
        torch.testing.assert_close(compiled(x), Rows()(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("spelling", ["reshape", "flatten"])
def test_torch_compile_dynamic_true_flatten_before_linear(spelling):
    # Every size symbolic: the flattened width is s1*s2, which PyTorch guards equal to 12.
    torch.manual_seed(1)
    model = Mlp(spelling).eval()
    torch._dynamo.reset()
    before = backend.compile_count
    compiled = torch.compile(model, backend="pytvmbridge", dynamic=True, options={"strict": True})
    with torch.no_grad():
        for batch in (2, 5, 8):
            x = torch.randn(batch, 3, 4)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert backend.compile_count - before == 1


def test_select_of_a_symbolic_dimension():
    """``y[:, 0]`` of a symbolic dimension is read directly (a slice then a squeeze could not
    prove the slice is one wide)."""

    class Pick(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)[:, 0] * 3, torch.tanh(x)[:, -1]

    compiled = ptt.compile(Pick(), {"input_infos": [("x", ("b", "c", 4))], "strict": True})
    assert "steps" not in compiled.plan
    for shape in ((2, 3, 4), (4, 5, 4)):
        x = torch.randn(shape)
        for got, want in zip(compiled(x), Pick()(x), strict=True):
            torch.testing.assert_close(got, want)


def test_dynamic_conv_training_compiles_its_backward():
    # The convolution's output size over a symbolic image, (n - 1) // 1 + 1, is the n of the
    # gradient's head: compared simplified, the backward compiles (strict: nothing left to eager)
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 3, 1)
    compiled = torch.compile(conv, backend="pytvmbridge", dynamic=True, options={"strict": True})
    for n in (4, 6, 9):
        x = torch.randn(2, 3, n, n, requires_grad=True)
        compiled(x).pow(2).sum().backward()
        got_x, got_w = x.grad.clone(), conv.weight.grad.clone()
        x.grad, conv.weight.grad, conv.bias.grad = None, None, None
        conv(x).pow(2).sum().backward()
        torch.testing.assert_close(got_x, x.grad, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(got_w, conv.weight.grad, rtol=1e-4, atol=1e-4)
        x.grad, conv.weight.grad, conv.bias.grad = None, None, None


def test_memory_order_of_symbolic_strides():
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from pytvmbridge.graph.compiler import memory_order

    mode = FakeTensorMode(shape_env=ShapeEnv())
    # (b, c, h, w) channels_last with every size symbolic
    real = torch.empty(3, 8, 5, 6).to(memory_format=torch.channels_last)
    fake = mode.from_tensor(real, static_shapes=False)
    assert all(isinstance(s, torch.SymInt) for s in fake.shape)
    assert memory_order(fake) == memory_order(real) == (0, 2, 3, 1)
    # row-major, and a slice with gaps: no order to keep
    assert memory_order(mode.from_tensor(torch.empty(3, 8, 5), static_shapes=False)) is None
    sliced = torch.empty(10, 6)[:, ::2]
    assert memory_order(mode.from_tensor(sliced, static_shapes=False)) is None
    transposed = mode.from_tensor(torch.empty(4, 6).t(), static_shapes=False)
    assert memory_order(transposed) == (1, 0)


def test_a_replayed_view_of_a_base_laid_out_otherwise_is_a_copy_of_its_values():
    from pytvmbridge.graph.replay import Ref, Step, run_steps

    steps = (Step("aten::view.default", (Ref("in", 0), [6, 4]), {}),)
    base = torch.arange(24.0).reshape(2, 2, 6).permute(2, 0, 1)  # not viewable as (6, 4)
    got = run_steps(steps, {("in", 0): base})
    torch.testing.assert_close(got, base.reshape(6, 4))
    contiguous = base.contiguous()
    assert run_steps(steps, {("in", 0): contiguous})._base is contiguous  # still a view


@pytest.mark.parametrize("pool", [torch.nn.AvgPool2d(2), torch.nn.MaxPool2d(2)])
def test_a_backward_whose_sizes_no_kernel_input_carries_runs_in_pytorch(pool):
    # The pooling gradient reads no tensor of the input's size, so the kernel cannot bind the
    # batch of the gradient it returns: the partition runs in PyTorch (it crashed at the call)
    torch.manual_seed(0)
    compiled = torch.compile(pool, backend="pytvmbridge", dynamic=True)
    for n in (2, 3):
        x = torch.randn(n, 3, 8, 8, requires_grad=True)
        with pytest.warns(UserWarning, match="cannot be bound"):
            compiled(x).pow(2).sum().backward()
        got, x.grad = x.grad.clone(), None
        pool(x).pow(2).sum().backward()
        torch.testing.assert_close(got, x.grad)
        torch._dynamo.reset()


def test_a_recompile_with_a_symbolic_batch_keeps_training():
    # The third call recompiles with a symbolic batch (automatic dynamic); the backward of a
    # sum returns a gradient whose batch only a symbolic-int input carries
    compiled = torch.compile(lambda x: (x * 2).sum(), backend="pytvmbridge")
    for n in (8, 8, 5):
        x = torch.randn(n, 4, requires_grad=True)
        compiled(x).backward()
        torch.testing.assert_close(x.grad, torch.full((n, 4), 2.0))


def test_slices_of_a_dynamic_axis_keep_the_traced_extent():
    # x[:, :4] of a dynamic size guarded to be at least 4 is 4 wide, and adds to a 4-wide tensor
    def f(x):
        return x[:, :1].expand(-1, 4) + x[:, :4] + x[:, 2::2][:, :4] + x[1:3, ::3].sum()

    compiled = torch.compile(f, backend="pytvmbridge", dynamic=True, options={"strict": True})
    for shape in [(6, 10), (7, 11), (3, 13)]:
        x = torch.randn(*shape)
        torch.testing.assert_close(compiled(x), f(x))


@pytest.mark.parametrize("side", [32, 48])
def test_square_dynamic_images_whose_pixel_count_is_a_power(side):
    # Dynamo gives a square image's height and width one symbol, so a patch embedding's
    # sequence length is ``(s // 4)**2``: the whole graph fell back to PyTorch
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 8, 4, 4).eval()

    def patches(x):
        return torch.nn.functional.layer_norm(conv(x).flatten(2).transpose(1, 2), (8,))

    torch._dynamo.reset()
    compiled = torch.compile(patches, backend="pytvmbridge", dynamic=True, options={"strict": True})
    with torch.no_grad():
        for size in (side, side + 8, side - 4):
            x = torch.randn(2, 3, size, size)
            torch.testing.assert_close(compiled(x), patches(x), rtol=1e-5, atol=1e-5)


def test_pytorch_size_functions_become_index_arithmetic():
    """Each of PyTorch's integer size functions the compiler reads, evaluated by a kernel
    whose sizes bind the symbols, against sympy's own evaluation."""
    import numpy as np
    import sympy
    from torch.utils._sympy import functions as fn

    import pytvmbridge as tvm
    from pytvmbridge import te
    from pytvmbridge.graph.compiler import _sym_to_expr

    a, b = sympy.symbols("a b", integer=True, positive=True)
    exprs = [
        fn.FloorDiv(a, 3),
        fn.CeilDiv(a, b),
        fn.CleanDiv(a * b, b),
        fn.Max(a, b + 1),
        fn.Min(a, 2 * b),
        fn.PythonMod(a, b),
        fn.PowByNatural(a, 2),
        sympy.Pow(fn.FloorDiv(a, 2), 3),
    ]
    size_vars: dict = {}
    values = [_sym_to_expr(e, size_vars) for e in exprs]

    def pick(i):
        out = values[-1]
        for k in range(len(values) - 2, -1, -1):
            out = te.if_then_else(i == k, values[k], out)
        return out

    sizes = te.placeholder((size_vars["a"], size_vars["b"]), name="sizes")
    out = te.compute((len(values),), pick, name="out")
    f = tvm.build(te.create_schedule(out.op), [sizes, out])
    for av, bv in ((7, 2), (12, 5), (1, 3)):
        got = np.zeros(len(values), dtype=out.dtype)
        f(np.zeros((av, bv), "float32"), got)
        assert got.tolist() == [int(e.subs({a: av, b: bv})) for e in exprs]


def test_a_kv_cache_decode_step_compiles_once_for_every_past_length():
    # The concatenation's length is computed as s + 1, the traced sizes read 1 + s: the two
    # spellings did not broadcast and the whole step ran in PyTorch
    torch.manual_seed(0)

    def step(q, past, new):
        keys = torch.cat([past, new], 2)
        return torch.softmax(q @ keys.transpose(-1, -2), -1) @ keys

    torch._dynamo.reset()
    compiled = torch.compile(step, backend="pytvmbridge", dynamic=True, options={"strict": True})
    for past in (5, 6, 11):
        args = (torch.randn(2, 4, 1, 16), torch.randn(2, 4, past, 16), torch.randn(2, 4, 1, 16))
        torch.testing.assert_close(compiled(*args), step(*args), rtol=1e-5, atol=1e-5)


def test_a_tensor_computed_from_sizes_alone_stays_in_pytorch():
    # torch.div of two sizes traces to div.Tensor_mode(s0, s1), a 0-d tensor of sizes alone:
    # its converter, written for tensors, failed the partition with an AttributeError
    def chunks(x, w):
        n = torch.div(x.size(1), w.size(0), rounding_mode="trunc") - 1
        return (x[:, : n * w.size(0)].reshape(x.size(0), n, w.size(0)) * 2).sum(-1) + n

    torch._dynamo.reset()
    strict = torch.compile(chunks, backend="pytvmbridge", dynamic=True, options={"strict": True})
    with pytest.raises(Exception, match=r"div\.Tensor_mode"):
        strict(torch.randn(3, 16), torch.randn(4))
    torch._dynamo.reset()
    compiled = torch.compile(chunks, backend="pytvmbridge", dynamic=True)
    for width in (16, 21):
        x, w = torch.randn(3, width), torch.randn(4)
        torch.testing.assert_close(compiled(x, w), chunks(x, w))


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_interpolate_to_another_tensors_dynamic_size(mode):
    # The scale is a size ratio, a SymFloat the partition computes (it was an input without
    # tensor metadata), and the output size is carried only by the other tensor's sizes,
    # which the partition does not read (bound from a byte array of that length)
    torch.manual_seed(0)

    def resize(x, like):
        return torch.nn.functional.interpolate(x * 2, size=like.shape[2:], mode=mode) + 1

    torch._dynamo.reset()
    compiled = torch.compile(resize, backend="pytvmbridge", dynamic=True, options={"strict": True})
    for size, target in ((5, 9), (6, 13), (8, 8)):
        x, like = torch.randn(1, 3, size, size + 1), torch.randn(1, 1, target, target + 3)
        torch.testing.assert_close(compiled(x, like), resize(x, like), rtol=1e-5, atol=1e-5)


def test_upsampling_a_strided_convolution_back_to_its_input_size():
    # Segformer's and a UNet's decoder under dynamic sizes: the size ratio is computed in the
    # same kernel as the convolution it scales
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(4, 4, 3, stride=2, padding=1).eval()

    def block(x):
        return torch.nn.functional.interpolate(conv(x), size=x.shape[-2:], mode="bilinear") + x

    torch._dynamo.reset()
    compiled = torch.compile(block, backend="pytvmbridge", dynamic=True, options={"strict": True})
    with torch.no_grad():
        for size in (16, 20, 13):
            x = torch.randn(2, 4, size, size + 2)
            torch.testing.assert_close(compiled(x), block(x), rtol=1e-5, atol=1e-5)


def test_blocked_convolutions_over_symbolic_images_keep_their_layout_and_image_order():
    """A residual sum of two blocked convolutions whose symbolic output sizes are spelled two
    ways stays blocked (it fell back to NCHW and one more pass of the tensor through memory),
    and a blocked convolution of symbolic sizes runs in axis order, images outermost (panels
    outermost swept every image's input once per panel); values against PyTorch."""
    import numpy as np
    import torch.nn.functional as F

    import pytvmbridge as tvm
    from pytvmbridge import topi
    from pytvmbridge.graph.layout import (
        blocked_source,
        blocking,
        conv2d_nchwc,
        through_blocks,
        unpack,
    )

    n, h = tvm.size_var("n"), tvm.size_var("h")
    # One size spelled two ways, as a residual block's branches (traced sizes) spell it.
    A = tvm.placeholder((n, 2, h + 1, h, 16), name="A")
    B = tvm.placeholder((n, 2, 1 + h, h, 16), name="B")
    assert str(A.shape[2]) != str(B.shape[2])
    summed = through_blocks(topi.add)(unpack(A, 32), unpack(B, 32))
    assert blocked_source(summed) is not None
    X = tvm.placeholder((n, 32, h, h), name="X")
    W1 = tvm.placeholder((32, 32, 3, 3), name="W1")
    W2 = tvm.placeholder((32, 32, 1, 1), name="W2")
    with blocking(16):
        main = conv2d_nchwc(X, W1, None, (2, 2), (1, 1), (1, 1), 1, 16)
        down = conv2d_nchwc(X, W2, None, (2, 2), (0, 0), (1, 1), 1, 16)
        out = through_blocks(topi.add)(main, down)
    assert blocked_source(out) is not None
    blocked = blocked_source(down)
    text = str(tvm.lower(tvm.auto_schedule(blocked), [X, W2, blocked]))
    first = next(line for line in text.splitlines() if line.startswith("parallel"))
    assert first.startswith("parallel (i.oc.fused"), first
    f = tvm.build(tvm.auto_schedule(out), [X, W1, W2, out])
    rng = np.random.default_rng(5)
    w1 = rng.standard_normal((32, 32, 3, 3)).astype("float32")
    w2 = rng.standard_normal((32, 32, 1, 1)).astype("float32")
    for batch, size in ((2, 9), (1, 4)):
        x = rng.standard_normal((batch, 32, size, size)).astype("float32")
        side = (size - 1) // 2 + 1
        y = np.empty((batch, 32, side, side), "float32")
        f(x, w1, w2, y)
        tx = torch.from_numpy(x)
        ref = F.conv2d(tx, torch.from_numpy(w1), stride=2, padding=1) + F.conv2d(
            tx, torch.from_numpy(w2), stride=2
        )
        torch.testing.assert_close(torch.from_numpy(y), ref, rtol=1e-4, atol=1e-3)
