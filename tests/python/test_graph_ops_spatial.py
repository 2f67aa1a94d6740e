"""Spatial operators compile in the graph backend (strict: none left to PyTorch) and match eager
PyTorch: 1-d and transposed convolutions, group and instance norm, upsampling (whole from
torch.export, decomposed under torch.compile), adaptive max pooling, constant padding and 1-d
pooling; in float64/float16/bfloat16, with a dynamic batch, and with gradients through a
compiled forward."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from pytvmbridge.graph.backend import core_decompositions
from pytvmbridge.graph.partition import partition_and_compile

TOLERANCE = {
    torch.float32: {"rtol": 1e-5, "atol": 1e-5},
    torch.float64: {"rtol": 1e-12, "atol": 1e-12},
    torch.float16: {"rtol": 2e-3, "atol": 2e-3},
    torch.bfloat16: {"rtol": 1.6e-2, "atol": 1.6e-2},
}


def _compiled(fn, strict=True):
    torch._dynamo.reset()
    return torch.compile(fn, backend="pytvmbridge", options={"strict": strict})


def _check(fn, *xs, dtype=torch.float32, strict=True):
    with torch.no_grad():
        got, want = _compiled(fn, strict)(*xs), fn(*xs)
    torch.testing.assert_close(got, want, equal_nan=True, **TOLERANCE[dtype])


@pytest.mark.parametrize(
    "cin,cout,k,stride,padding,dilation,groups,bias,length",
    [
        (6, 4, 3, 1, 1, 1, 1, True, 11),
        (5, 16, 3, 2, 2, 2, 1, True, 13),  # a multiple of the block: computed blocked
        (6, 6, 5, 1, 2, 1, 6, False, 7),  # depthwise
        (6, 4, 3, 3, 0, 1, 2, True, 17),
        (3, 2, 1, 1, 0, 1, 1, True, 1),
    ],
)
def test_conv1d(cin, cout, k, stride, padding, dilation, groups, bias, length):
    torch.manual_seed(0)
    conv = nn.Conv1d(cin, cout, k, stride, padding, dilation, groups, bias)
    _check(conv, torch.randn(3, cin, length))


def test_conv1d_then_batch_norm_folds():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(6, 8, 3), nn.BatchNorm1d(8), nn.ReLU()).eval()
    with torch.no_grad():
        model[1].running_mean.uniform_(-0.5, 0.5)
        model[1].running_var.uniform_(0.5, 2.0)
    _check(model, torch.randn(2, 6, 11))


@pytest.mark.parametrize(
    "cin,cout,k,stride,padding,out_pad,dilation,groups,size",
    [
        (6, 4, 2, 2, 0, 0, 1, 1, (5, 5)),
        (6, 4, 3, 2, 1, 1, 1, 1, (7, 3)),
        (6, 4, 3, (2, 3), (0, 2), (1, 0), 2, 2, (5, 4)),
        (4, 8, (3, 1), 1, (2, 0), 0, 1, 4, (3, 6)),  # padding past k - 1 crops
        (3, 5, 4, 3, 1, 2, 1, 1, (1, 1)),
    ],
)
def test_conv_transpose2d(cin, cout, k, stride, padding, out_pad, dilation, groups, size):
    torch.manual_seed(0)
    conv = nn.ConvTranspose2d(cin, cout, k, stride, padding, out_pad, groups, True, dilation)
    _check(conv, torch.randn(2, cin, *size))


@pytest.mark.parametrize(
    "cin,cout,k,stride,padding,out_pad,dilation,groups,length",
    [(6, 4, 4, 3, 1, 2, 1, 1, 11), (6, 9, 3, 2, 0, 1, 2, 3, 1), (2, 2, 1, 1, 0, 0, 1, 2, 5)],
)
def test_conv_transpose1d(cin, cout, k, stride, padding, out_pad, dilation, groups, length):
    torch.manual_seed(0)
    conv = nn.ConvTranspose1d(cin, cout, k, stride, padding, out_pad, groups, True, dilation)
    _check(conv, torch.randn(2, cin, length))


@pytest.mark.parametrize(
    "groups,channels,shape,affine",
    [(3, 6, (2, 6, 9, 7), True), (2, 6, (2, 6, 11), False), (1, 5, (3, 5), True),
     (4, 4, (1, 4, 2, 3, 5), True), (2, 8, (1, 8, 1, 1), False)],
)  # fmt: skip
def test_group_norm(groups, channels, shape, affine):
    torch.manual_seed(0)
    norm = nn.GroupNorm(groups, channels, affine=affine)
    if affine:
        with torch.no_grad():
            norm.weight.uniform_(0.5, 2.0)
            norm.bias.uniform_(-1.0, 1.0)
    _check(norm, torch.randn(shape))


def test_group_norm_variance_is_stable_with_a_large_mean():
    # A one-pass E[x^2] - E[x]^2 in float32 loses the unit variance under a mean of 1e4 (ulp
    # of 1e8: 8); the inputs themselves are 1e-3 apart there, so both eager and the compiled
    # model are compared with the float64 result, within eager's own error (1.7e-3).
    torch.manual_seed(0)
    norm = nn.GroupNorm(2, 4)
    x = torch.randn(2, 4, 8, 8) + 1e4
    with torch.no_grad():
        got, truth = _compiled(norm)(x), norm.double()(x.double())
    torch.testing.assert_close(got.double(), truth, rtol=0, atol=2e-3)


@pytest.mark.parametrize(
    "make,shape",
    [
        (lambda: nn.InstanceNorm2d(6), (2, 6, 9, 7)),
        (lambda: nn.InstanceNorm2d(6, affine=True), (3, 6, 5, 1)),
        (lambda: nn.InstanceNorm1d(4), (2, 4, 13)),
        (lambda: nn.BatchNorm2d(5, track_running_stats=False), (3, 5, 4, 4)),
    ],
)
def test_instance_norm_and_batch_statistics(make, shape):
    torch.manual_seed(0)
    norm = make()
    if getattr(norm, "weight", None) is not None:
        with torch.no_grad():
            norm.weight.uniform_(0.5, 2.0)
            norm.bias.uniform_(-1.0, 1.0)
    _check(norm, torch.randn(shape))


@pytest.mark.parametrize(
    "output_size,shape",
    [((3, 5), (2, 3, 9, 7)), (1, (2, 3, 5, 5)), ((4, 4), (1, 2, 7, 13)), ((2, 3), (3, 7, 5)),
     ((5, 1), (1, 1, 5, 1))],
)  # fmt: skip
def test_adaptive_max_pool2d(output_size, shape):
    torch.manual_seed(0)
    _check(nn.AdaptiveMaxPool2d(output_size), torch.randn(shape))


def test_adaptive_max_pool2d_nan_and_inf():
    x = torch.randn(1, 3, 6, 6)
    x[0, 0, 1, 1] = float("nan")  # PyTorch's max propagates NaN
    x[0, 1] = float("-inf")
    x[0, 2, :3, :3] = float("inf")
    _check(nn.AdaptiveMaxPool2d((4, 3)), x)


@pytest.mark.parametrize(
    "pad,value,shape",
    [
        ((1, 1), 0.0, (2, 3, 7)),
        ((2, -1, 0, 3), 2.5, (2, 3, 5, 7)),
        ((-2, -1, -1, 0), 0.0, (1, 2, 5, 7)),  # a crop only
        ((1, 0, 0, 2, -1, 1), -1.0, (1, 2, 3, 4, 5)),
        ((0, 3, 1, 1), float("inf"), (1, 1, 1)),
    ],
)
def test_constant_pad(pad, value, shape):
    x = torch.randn(shape)
    x.view(-1)[0] = float("nan")
    _check(lambda t: F.pad(t, pad, value=value) * 2, x)


@pytest.mark.parametrize(
    "dtype,value",
    [
        (torch.int64, -100),  # a causal LM's shifted labels (transformers' ForCausalLMLoss)
        (torch.int32, 2.7),  # truncated, as eager converts it
        (torch.uint8, 255),
        (torch.int8, -128),
        (torch.bool, 2),
    ],
)
def test_constant_pad_of_integer_and_bool_tensors(dtype, value):
    x = torch.randint(0, 10, (2, 6)).to(dtype)
    f = _compiled(lambda t: F.pad(t, (1, 2), value=value))
    torch.testing.assert_close(f(x), F.pad(x, (1, 2), value=value), rtol=0, atol=0)


def test_constant_pad_fill_eager_cannot_convert_stays_in_pytorch():
    x = torch.randint(0, 10, (2, 6), dtype=torch.uint8)
    with pytest.raises(Exception, match="constant_pad_nd"):
        _compiled(lambda t: F.pad(t, (0, 1), value=-100))(x)  # eager raises on the overflow
    with pytest.raises(RuntimeError, match="overflow"):
        _compiled(lambda t: F.pad(t, (0, 1), value=-100), strict=False)(x)


def test_pool1d():
    torch.manual_seed(0)

    def fn(x):
        return (
            F.max_pool1d(x, 3, 2, padding=1, ceil_mode=True),
            F.avg_pool1d(x, 4, 3, padding=2, count_include_pad=False),
            F.max_pool1d(x, 2),
        )

    _check(fn, torch.randn(2, 3, 13))


def _spatial_ops(x3, x4, convs):
    conv1d, convt2d, convt1d = convs
    return (
        conv1d(x3),
        convt1d(x3),
        convt2d(x4),
        F.group_norm(x4, 2, None, None),
        F.pad(x4, (1, -1, 0, 2), value=0.5),
        F.adaptive_max_pool2d(x4, (2, 3)),
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_dtypes(dtype):
    torch.manual_seed(0)
    convs = [
        nn.Conv1d(4, 6, 3, padding=1).to(dtype),
        nn.ConvTranspose2d(4, 3, 3, stride=2, groups=1).to(dtype),
        nn.ConvTranspose1d(4, 2, 2, stride=2).to(dtype),
    ]
    x3, x4 = torch.randn(2, 4, 9, dtype=dtype), torch.randn(2, 4, 5, 7, dtype=dtype)
    _check(lambda a, b: _spatial_ops(a, b, convs), x3, x4, dtype=dtype)


def test_dynamic_batch():
    torch.manual_seed(0)
    convs = [
        nn.Conv1d(4, 6, 3, padding=1),
        nn.ConvTranspose2d(4, 3, 3, 2),
        nn.ConvTranspose1d(4, 2, 2, 2),
    ]

    def fn(a, b):
        return _spatial_ops(a, b, convs)

    compiled = _compiled(fn)
    for n in (2, 5):
        x3, x4 = torch.randn(n, 4, 9), torch.randn(n, 4, 5, 7)
        torch._dynamo.mark_dynamic(x3, 0)
        torch._dynamo.mark_dynamic(x4, 0)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x3, x4), fn(x3, x4))


class _Interpolate(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, x):
        return F.interpolate(x, **self.kwargs)


UPSAMPLING = [
    {"scale_factor": 2},
    {"scale_factor": 1.5},
    {"scale_factor": 0.7},
    {"size": (13, 1)},
    {"scale_factor": (1.5, 0.7), "mode": "nearest-exact"},
    {"size": (3, 11), "mode": "nearest-exact"},
    {"scale_factor": 1.5, "mode": "bilinear"},
    {"scale_factor": 0.7, "mode": "bilinear"},
    {"scale_factor": (2.3, 0.4), "mode": "bilinear", "align_corners": True},
    {"size": (4, 11), "mode": "bilinear", "align_corners": True},
    {"size": (13, 1), "mode": "bilinear"},
    {"scale_factor": 1.7, "mode": "bilinear", "recompute_scale_factor": True},
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("kwargs", UPSAMPLING, ids=str)
def test_upsampling_whole_from_export(kwargs, dtype):
    # torch.export keeps upsample_*2d(.vec) whole: the converters' own index arithmetic
    model = _Interpolate(**kwargs)
    x = torch.randn(2, 3, 7, 5, dtype=dtype)
    exported = torch.export.export(model, (x,)).run_decompositions(core_decompositions())
    ops = {str(n.target) for n in exported.graph_module.graph.nodes if n.op == "call_function"}
    assert len(ops) == 1 and "upsample" in ops.pop()
    compiled = partition_and_compile(exported.graph_module, strict=True)
    torch.testing.assert_close(compiled(x)[0], model(x), **TOLERANCE[dtype])


@pytest.mark.parametrize("kwargs", UPSAMPLING[:6], ids=str)
def test_nearest_upsampling_through_torch_compile(kwargs):
    # decomposed by PyTorch's Python kernels into arange / multiply / cast / index
    _check(_Interpolate(**kwargs), torch.randn(2, 3, 7, 5))


@pytest.mark.parametrize("kwargs", UPSAMPLING[6:], ids=str)
def test_bilinear_upsampling_through_torch_compile(kwargs):
    # decomposed too: positions, int64 clamps and gathers (ops_index.py), all compiled
    _check(_Interpolate(**kwargs), torch.randn(2, 3, 7, 5))


def test_training_gradients_through_transposed_conv_and_group_norm():
    torch.manual_seed(0)
    model = nn.Sequential(nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1), nn.GroupNorm(3, 6))
    reference = nn.Sequential(nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1), nn.GroupNorm(3, 6))
    reference.load_state_dict(model.state_dict())
    x = torch.randn(2, 4, 5, 5, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    target = torch.randn(2, 6, 9, 9)
    loss = ((_compiled(model, strict=False)(x) - target) ** 2).mean()
    loss.backward()
    loss_ref = ((reference(x_ref) - target) ** 2).mean()
    loss_ref.backward()
    torch.testing.assert_close(loss, loss_ref)
    torch.testing.assert_close(x.grad, x_ref.grad)
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(
    "norm",
    [lambda: nn.GroupNorm(2, 8), lambda: nn.InstanceNorm2d(8, affine=True)],
    ids=["group", "instance"],
)
def test_norm_training_compiles_whole_with_its_statistics(norm, dtype):
    """The training forward gives the per-group (per-channel) mean and 1/std its backward
    saves; forward and backward compile under strict and the gradients match eager."""
    torch.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(4, 8, 3), norm(), nn.SiLU()).to(dtype)
    reference = nn.Sequential(nn.Conv2d(4, 8, 3), norm(), nn.SiLU()).to(dtype)
    reference.load_state_dict(model.state_dict())
    with torch.no_grad():  # affine parameters away from (1, 0)
        for m in (model[1], reference[1]):
            m.weight.copy_(torch.linspace(0.5, 1.5, 8))
            m.bias.copy_(torch.linspace(-0.3, 0.3, 8))
    x = torch.randn(3, 4, 9, 7, dtype=dtype) * 2 + 1
    loss = _compiled(model)(x).square().mean()
    loss.backward()
    loss_ref = reference(x).square().mean()
    loss_ref.backward()
    torch.testing.assert_close(loss, loss_ref)
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bilinear-corners"])
def test_interpolate_under_torch_compile_matches_eager_at_any_scale(mode):
    """PyTorch's Python split of upsampling resamples with the given scale where eager's kernel
    copies (an output axis of the input's size) or halves (twice it, for nearest): the backend
    leaves those scales out (graph/interpolate.py), so the result is eager's, bit for bit."""
    x = torch.randn(2, 3, 7, 8)
    for scale in (0.5, 0.7, 1.0, 1.1, (1.1, 2.05), 1.5, 1.99, 2.0, 2.05, 3):
        kwargs = {"mode": mode.split("-")[0], "scale_factor": scale}
        if mode == "bilinear-corners":
            kwargs["align_corners"] = True
        f = lambda t, kw=kwargs: F.interpolate(t, **kw) * 2  # noqa: E731
        torch.testing.assert_close(_compiled(f)(x), f(x), rtol=1e-5, atol=1e-5)


class _SmallUNet(nn.Module):
    """Group norm and SiLU blocks, a stride-2 way down, transposed-convolution and bilinear
    ways up, concatenated skip connections."""

    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU())
        self.down = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.mid = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.SiLU())
        self.up_t = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.up_b = nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear"), nn.Conv2d(16, 8, 1))
        self.out = nn.Conv2d(24, 2, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.enc(x)
        m = self.mid(self.down(h))
        return self.out(torch.cat([self.up_t(m), self.up_b(m), h], 1))


def test_unet_with_dynamic_image_sizes_compiles_whole():
    """Symbolic height and width: the skip connection's ``s`` rows and the way up's
    ``2 + 2 * ((s - 1) // 2)`` are the same size (the trace's guard), and group norm's H * W
    is size arithmetic inside the kernel: one graph, strict, every size matching eager."""
    torch.manual_seed(14)
    model = _SmallUNet().eval()
    compiled = _compiled(model)
    with torch.no_grad():
        for size in ((16, 16), (8, 24), (32, 12)):
            x = torch.randn(2, 3, *size)
            torch._dynamo.mark_dynamic(x, 2)
            torch._dynamo.mark_dynamic(x, 3)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)


def test_upsampling_argument_errors_name_the_argument():
    from pytvmbridge import te, topi
    from pytvmbridge.error import TVMTypeError, TVMValueError

    x = te.placeholder((1, 2, 4, 4), name="x")
    with pytest.raises(TVMValueError, match=r"output_size of upsample_nearest2d .* \(8,\)"):
        topi.nn.upsample_nearest2d(x, (8,))
    with pytest.raises(TVMValueError, match=r"output_size of upsample_nearest2d .* None"):
        topi.nn.upsample_nearest2d(x, None)
    with pytest.raises(TVMValueError, match=r"scales of upsample_bilinear2d .* \(2.0,\)"):
        topi.nn.upsample_bilinear2d(x, (8, 8), scales=(2.0,))
    with pytest.raises(TVMTypeError, match="upsample_bilinear2d needs a float tensor"):
        topi.nn.upsample_bilinear2d(te.placeholder((1, 1, 4, 4), "int32"), (8, 8))


@pytest.mark.parametrize("kwargs", [{"scale_factor": 1.1}, {"scale_factor": 2.05},
                                    {"scale_factor": 1.1, "mode": "bilinear"}])  # fmt: skip
def test_interpolate_with_a_dynamic_batch_matches_eager(kwargs):
    """A symbolic batch (constant image sizes) still takes eager's shortcuts, forward and
    backward (the rewrite once required every size constant, and fell back to PyTorch's
    split, which resamples where eager copies)."""
    torch.manual_seed(15)
    conv = nn.Conv2d(2, 3, 3, padding=1)
    reference = nn.Conv2d(2, 3, 3, padding=1)
    reference.load_state_dict(conv.state_dict())
    # (not strict: upsampling's backward, an index_put, stays in PyTorch)
    compiled = _compiled(lambda x: F.interpolate(conv(x), **kwargs), strict=False)
    for batch in (2, 3):
        x = torch.randn(batch, 2, 7, 7)
        torch._dynamo.mark_dynamic(x, 0)
        conv.zero_grad()
        reference.zero_grad()
        got = compiled(x)
        want = F.interpolate(reference(x), **kwargs)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        got.square().sum().backward()
        want.square().sum().backward()
        torch.testing.assert_close(conv.weight.grad, reference.weight.grad, rtol=1e-4, atol=1e-4)


def test_group_norm_block_training_over_dynamic_image_sizes_compiles_whole():
    """Group norm's backward over symbolic H and W: a scalar tensor of H * W, a prim cast,
    true_divide, all compiled (strict); every gradient matches eager at three sizes."""
    torch.manual_seed(17)

    def block():
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU())

    model, reference = block(), block()
    reference.load_state_dict(model.state_dict())
    compiled = _compiled(model)
    for size in ((8, 8), (12, 6), (16, 10)):
        x = torch.randn(2, 3, *size)
        torch._dynamo.mark_dynamic(x, 2)
        torch._dynamo.mark_dynamic(x, 3)
        model.zero_grad()
        reference.zero_grad()
        compiled(x).square().mean().backward()
        reference(x).square().mean().backward()
        for p, q in zip(model.parameters(), reference.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
