"""Winograd convolution (topi.nn.winograd) and its use by the graph compiler, against PyTorch's
direct convolution and NumPy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from graph_spy import compiled_graphs

import pytvmbridge as tvm
from pytvmbridge import te, topi
from pytvmbridge.error import TVMTypeError, TVMValueError
from pytvmbridge.graph.fold import Derived, materialize

RNG = np.random.default_rng(7)


def _conv_reference(x: np.ndarray, w: np.ndarray, padding: int) -> np.ndarray:
    return F.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=padding).numpy()


def _run(outputs: list, args: list, arrays: list, scheduled: bool = True) -> np.ndarray:
    s = tvm.auto_schedule(outputs) if scheduled else tvm.create_schedule([t.op for t in outputs])
    f = tvm.build(s, args)
    out = np.empty([int(d) for d in outputs[0].shape], "float32")
    f(*arrays, out)
    return out


@pytest.mark.parametrize("tile_size", [2, 4])
def test_matrices_compute_a_correlation(tile_size):
    A, B, G = topi.nn.winograd_transform_matrices(tile_size)
    alpha = tile_size + 2
    assert A.shape == (alpha, tile_size) and B.shape == (alpha, alpha) and G.shape == (alpha, 3)
    d, g = RNG.standard_normal((alpha, alpha)), RNG.standard_normal((3, 3))
    expected = [
        [np.sum(d[y : y + 3, x : x + 3] * g) for x in range(tile_size)] for y in range(tile_size)
    ]
    np.testing.assert_allclose(A.T @ ((G @ g @ G.T) * (B.T @ d @ B)) @ A, expected, atol=1e-12)


@pytest.mark.parametrize(
    "n, c, k, h, w, padding, tile_size",
    [
        (1, 16, 32, 14, 14, 1, 2),  # whole tiles
        (1, 16, 16, 12, 12, 1, 4),
        (2, 8, 16, 7, 7, 1, 2),  # the last tile is cut (7 = 3 * 2 + 1)
        (1, 8, 8, 13, 11, 1, 4),  # prime, non-square: 13 = 3 * 4 + 1, 11 = 2 * 4 + 3
        (1, 3, 5, 9, 9, 0, 4),  # channels no block of 16 divides, no padding
        (1, 4, 4, 6, 5, 2, 2),  # padding wider than the window's half
        (1, 2, 3, 3, 3, 0, 4),  # a single output pixel
    ],
)
def test_nchw_matches_a_direct_convolution(n, c, k, h, w, padding, tile_size):
    x = RNG.standard_normal((n, c, h, w)).astype("float32")
    kernel = RNG.standard_normal((k, c, 3, 3)).astype("float32")
    X, W = tvm.placeholder(x.shape, name="X"), tvm.placeholder(kernel.shape, name="W")
    Y = topi.nn.conv2d_winograd_nchw(X, W, 1, padding, 1, tile_size=tile_size)
    expected = _conv_reference(x, kernel, padding)
    assert tuple(int(d) for d in Y.shape) == expected.shape
    for scheduled in (True, False):
        got = _run([Y], [X, W, Y], [x, kernel], scheduled)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_pre_computed_kernel_matches_numpy_transform():
    kernel = RNG.standard_normal((4, 3, 3, 3)).astype("float32")
    W = tvm.placeholder(kernel.shape, name="W")
    for tile_size in (2, 4):
        U = topi.nn.conv2d_winograd_weight_transform(W, tile_size)
        got = _run([U], [W, U], [kernel], scheduled=False)
        G = topi.nn.winograd_transform_matrices(tile_size)[2]
        expected = np.einsum("ap,kcpq,bq->abkc", G, kernel.astype(np.float64), G)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)

    x = RNG.standard_normal((1, 3, 10, 10)).astype("float32")
    X = tvm.placeholder(x.shape, name="X")
    Up = tvm.placeholder((6, 6, 4, 3), name="Up")
    Y = topi.nn.conv2d_winograd_nchw(X, Up, 1, 1, 1, pre_computed=True)  # tile 4, from Up
    u = np.einsum("ap,kcpq,bq->abkc", G, kernel.astype(np.float64), G).astype("float32")
    got = _run([Y], [X, Up, Y], [x, u])
    np.testing.assert_allclose(got, _conv_reference(x, kernel, 1), rtol=1e-4, atol=1e-4)


def test_blocked_layouts_and_a_symbolic_batch():
    """NCHW8c data, output blocks of 16, a batch size variable; fused ReLU epilogue."""
    n, c, k, h = 3, 16, 32, 9
    x = RNG.standard_normal((n, c, h, h)).astype("float32")
    kernel = RNG.standard_normal((k, c, 3, 3)).astype("float32")
    batch = tvm.var("batch")
    X = tvm.placeholder((batch, c // 8, h, h, 8), name="X")
    U = tvm.placeholder((6, 6, k // 16, c, 16), name="U")
    Y = topi.nn.relu(topi.nn.conv2d_winograd_nchwc(X, U, 1, 4))
    assert (
        Y.shape[1:] == (2, 9, 9, 16)
        and Y.op.input_tensors[0].op.tag == "winograd_inverse_transform"
    )
    f = tvm.build(tvm.auto_schedule([Y]), [X, U, Y])
    u = materialize(Derived("winograd_pack", (0,), (16, 4)), [torch.from_numpy(kernel)])
    xb = x.reshape(n, c // 8, 8, h, h).transpose(0, 1, 3, 4, 2).copy()
    out = np.empty((n, k // 16, h, h, 16), "float32")
    f(xb, u.numpy(), out)
    expected = np.maximum(_conv_reference(x, kernel, 1), 0)
    got = out.transpose(0, 1, 4, 2, 3).reshape(n, k, h, h)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


@pytest.mark.parametrize("tile_size", [2, 4])
def test_symbolic_image_sizes(tile_size):
    """Height and width size variables (torch.compile's dynamic=True): as many tiles as cover
    the output, the last ones partial; one build serves every size, odd, prime and one."""
    c, k = 8, 16
    kernel = RNG.standard_normal((k, c, 3, 3)).astype("float32")
    n, h, w = tvm.size_var("n"), tvm.size_var("h"), tvm.size_var("w")
    X = tvm.placeholder((n, 1, h, w, 8), name="X")
    U = tvm.placeholder((tile_size + 2, tile_size + 2, 1, c, 16), name="U")
    Y = topi.nn.relu(topi.nn.conv2d_winograd_nchwc(X, U, 1, tile_size))
    f = tvm.build(tvm.auto_schedule([Y]), [X, U, Y])
    u = materialize(Derived("winograd_pack", (0,), (16, tile_size)), [torch.from_numpy(kernel)])
    for batch, height, width in ((2, 9, 9), (1, 1, 1), (3, 13, 7), (1, 16, 20)):
        x = RNG.standard_normal((batch, c, height, width)).astype("float32")
        out = np.full((batch, 1, height, width, 16), np.nan, "float32")
        f(x.transpose(0, 2, 3, 1)[:, None].copy(), u.numpy(), out)
        expected = np.maximum(_conv_reference(x, kernel, 1), 0)
        got = out.transpose(0, 1, 4, 2, 3).reshape(batch, k, height, width)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_auto_schedule_unrolls_the_tiles_and_tiles_the_products():
    X = tvm.placeholder((1, 2, 28, 28, 16), name="X")
    U = tvm.placeholder((6, 6, 2, 32, 16), name="U")
    Y = topi.nn.relu(topi.nn.conv2d_winograd_nchwc(X, U, 1, 4))
    rules = tvm.auto_schedule_space([Y])["rules"]
    assert rules["winograd_data"] == "winograd_transform"
    assert rules[Y.op.name] == "winograd_transform"  # the inverse, inlined with the ReLU
    assert "winograd_inverse" not in rules or rules["winograd_inverse"] == "inline"
    assert rules["winograd_product"].startswith("tiled")


def test_tile_size_choice():
    choose = topi.nn.winograd_tile_size
    resnet = [56, 28, 14, 7]  # ResNet's 3x3 stride-1 layers
    assert [choose(1, s, s) for s in resnet] == [4, 4, 4, 2]
    assert [choose(8, s, s) for s in resnet] == [4, 4, 4, 4]
    assert choose(None, 7, 7) == 2  # a symbolic batch counts as one image
    assert choose(1, 7, 7) == 2 and choose(1, 6, 6) == 0  # 16 tiles of F(2x2), then 9
    assert choose(2, 6, 6) == 2 and choose(4, 7, 7) == 4


def test_bad_arguments_raise():
    X = tvm.placeholder((1, 8, 10, 10), name="X")
    W = tvm.placeholder((8, 8, 3, 3), name="W")
    with pytest.raises(TVMValueError, match="tile_size"):
        topi.nn.conv2d_winograd_nchw(X, W, 1, 1, 1, tile_size=3)
    with pytest.raises(TVMValueError, match="stride 1"):
        topi.nn.conv2d_winograd_nchw(X, W, 2, 1, 1)
    with pytest.raises(TVMValueError, match="dilation 1"):
        topi.nn.conv2d_winograd_nchw(X, W, 1, 1, 2)
    with pytest.raises(TVMValueError, match="3x3"):
        topi.nn.conv2d_winograd_weight_transform(tvm.placeholder((8, 8, 5, 5)), 2)
    with pytest.raises(TVMValueError, match="input channels"):
        topi.nn.conv2d_winograd_nchw(X, tvm.placeholder((8, 4, 3, 3)), 1, 1, 1)
    Xb = tvm.placeholder((1, 1, 10, 10, 8), name="Xb")
    with pytest.raises(TVMValueError, match="does not match"):
        topi.nn.conv2d_winograd_nchwc(Xb, tvm.placeholder((4, 4, 1, 8, 8)), 1, 4)
    with pytest.raises(TVMTypeError, match="float64"):
        topi.nn.conv2d_winograd_nchwc(Xb, tvm.placeholder((6, 6, 1, 8, 8), "float64"), 1, 4)
    with pytest.raises(TVMValueError, match="does not fit"):
        topi.nn.conv2d_winograd_nchwc(tvm.placeholder((1, 1, 1, 1, 8)), tvm.placeholder(
            (4, 4, 1, 8, 8)), 0, 2)  # fmt: skip


class _Block(torch.nn.Module):
    """conv-bn-relu-conv-bn + residual, relu; 3x3 convolutions of stride 1."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b1 = torch.nn.BatchNorm2d(c)
        self.c2 = torch.nn.Conv2d(c, c, 3, padding=1)
        self.b2 = torch.nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.b2(self.c2(torch.relu(self.b1(self.c1(x))))))


def _model(c: int) -> torch.nn.Module:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, c, 3, padding=1), _Block(c), _Block(c))
    for mod in model.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.2, 0.2)
            mod.running_var.uniform_(0.5, 2.0)
            mod.weight.data.uniform_(0.5, 1.5)
    return model.eval()


@pytest.mark.parametrize("size, tile_size", [(16, 4), (8, 2)])
def test_graph_compiler_uses_winograd_for_3x3_layers(size, tile_size):
    x = torch.randn(1, 3, size, size)
    for winograd in (True, False):
        (graph,) = compiled_graphs(_model(32), [x], scale_atol=True, winograd=winograd)
        kinds = [d.kind for d in graph.derived_inputs]
        tiles = [d.params[1] for d in graph.derived_inputs if d.kind == "winograd_pack"]
        # The 3 -> 32 stem has 3 input channels (no whole vector): direct in both.
        assert tiles == ([tile_size] * 4 if winograd else []), kinds


def test_graph_compiler_uses_winograd_under_dynamic_sizes():
    """dynamic=True: the tile size is chosen at the traced image size, and the compiled model
    matches eager at other sizes without recompiling."""
    model = _model(16)
    x = torch.randn(2, 3, 16, 16)
    for dim in (2, 3):  # the batch too, by compiled_graphs
        torch._dynamo.mark_dynamic(x, dim)
    (graph,) = compiled_graphs(model, [x], scale_atol=True, dynamic=True)
    assert [d.params[1] for d in graph.derived_inputs if d.kind == "winograd_pack"] == [4] * 4
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="pytvmbridge", dynamic=True)
    with torch.no_grad():
        for shape in ((2, 3, 16, 16), (1, 3, 11, 5), (3, 3, 1, 2)):
            xs = torch.randn(shape)
            torch.testing.assert_close(compiled(xs), model(xs), rtol=1e-4, atol=1e-4)


def test_torch_compile_option_and_weight_updates():
    model = _model(16)
    x = torch.randn(2, 3, 16, 16)
    torch._dynamo.reset()
    compiled = torch.compile(
        model, backend="pytvmbridge", options={"winograd": True, "strict": True}, dynamic=False
    )
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")  # no partition left to PyTorch
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        model[1].c1.weight.mul_(-0.5)  # an in-place update: the transformed weight follows
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
    with pytest.raises(TVMValueError, match="winograd"):
        from pytvmbridge.graph.backend import BackendOptions

        BackendOptions.parse({"winograd": "yes"})


def test_winograd_pack_layout():
    w = torch.randn(32, 8, 3, 3, dtype=torch.float32)
    u = materialize(Derived("winograd_pack", (0,), (16, 2)), [w])
    assert u.shape == (4, 4, 2, 8, 16) and u.dtype == torch.float32
    G = torch.from_numpy(topi.nn.winograd_transform_matrices(2)[2])
    full = torch.einsum("ap,kcpq,bq->abkc", G, w.double(), G)
    torch.testing.assert_close(
        u[1, 2, 1, 5, 3].double(), full[1, 2, 16 + 3, 5], rtol=1e-6, atol=1e-6
    )


def test_data_transform_reads_a_stored_input():
    """The producer of the data transform's padded input stays stored (not recomputed in each
    of the transform's sums)."""
    X = tvm.placeholder((1, 1, 8, 8, 16), name="X")
    U = tvm.placeholder((4, 4, 1, 16, 16), name="U")
    act = te.compute(X.shape, lambda *i: te.exp(X(*i)), name="act", tag="elemwise")
    Y = topi.nn.conv2d_winograd_nchwc(act, U, 1, 2)
    rules = tvm.auto_schedule_space([Y])["rules"]
    assert rules["act"] != "inline" and rules["winograd_pad"] != "inline"
    x = RNG.standard_normal((1, 1, 8, 8, 16)).astype("float32") * 0.1
    kernel = RNG.standard_normal((16, 16, 3, 3)).astype("float32")
    u = materialize(Derived("winograd_pack", (0,), (16, 2)), [torch.from_numpy(kernel)]).numpy()
    got = _run([Y], [X, U, Y], [x, u])
    expected = _conv_reference(np.exp(x).transpose(0, 1, 4, 2, 3).reshape(1, 16, 8, 8), kernel, 1)
    np.testing.assert_allclose(
        got.transpose(0, 1, 4, 2, 3).reshape(1, 16, 8, 8), expected, rtol=1e-4, atol=1e-4
    )
