import pytest
import torch
import torch.nn.functional as F
from topi_testing import random, run

import pytvmbridge as tvm
from pytvmbridge import topi


@pytest.mark.parametrize(
    ("dshape", "oc", "k", "stride", "padding", "dilation", "ic_bn", "oc_bn"),
    [
        ((1, 8, 5, 5), 16, 3, 1, 1, 1, 4, 8),
        ((2, 4, 9, 6), 6, 3, 2, (1, 0), 1, 2, 3),
        ((1, 3, 5, 5), 2, 1, 1, 0, 1, 3, 1),
        ((1, 4, 8, 8), 4, 3, 1, 2, 2, 4, 4),
    ],
)
def test_conv2d_nchwc_with_packing_matches_torch(
    dshape, oc, k, stride, padding, dilation, ic_bn, oc_bn
):
    X = tvm.placeholder(dshape, name="X")
    W = tvm.placeholder((oc, dshape[1], k, k), name="W")
    Yc = topi.nn.conv2d_NCHWc(
        topi.nn.pack_nchwc(X, ic_bn),
        topi.nn.pack_oihwio(W, ic_bn, oc_bn),
        stride,
        padding,
        dilation,
        f"NCHW{ic_bn}c",
        f"NCHW{oc_bn}c",
    )
    Y = topi.nn.unpack_nchwc(Yc)
    assert Yc.op.tag == "conv2d_NCHWc" and len(Yc.op.reduce_axis) == 4
    x, w = random(dshape, "float32", 1), random(W.shape, "float32", 2)
    ref = F.conv2d(
        torch.from_numpy(x),
        torch.from_numpy(w),
        stride=stride,
        padding=padding,
        dilation=dilation,
    ).numpy()
    run([X, W], Y, [x, w], ref, 1e-4, 1e-4)


def test_conv2d_nchwc_prepacked_symbolic_batch():
    n = tvm.var("n")
    Xc = tvm.placeholder((n, 2, 6, 6, 4), name="Xc")
    Wc = tvm.placeholder((2, 2, 3, 3, 4, 8), name="Wc")
    Yc = topi.nn.conv2d_NCHWc(Xc, Wc, 1, 1, 1, "NCHW4c", "NCHW8c")
    x, w = random((2, 8, 6, 6), "float32", 1), random((16, 8, 3, 3), "float32", 2)
    ref = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy()
    xc = x.reshape(2, 2, 4, 6, 6).transpose(0, 1, 3, 4, 2).copy()
    wc = w.reshape(2, 8, 2, 4, 3, 3).transpose(0, 2, 4, 5, 3, 1).copy()
    refc = ref.reshape(2, 2, 8, 6, 6).transpose(0, 1, 3, 4, 2)
    run([Xc, Wc], Yc, [xc, wc], refc, 1e-4, 1e-4)


def test_conv2d_nchwc_errors():
    Xc = tvm.placeholder((1, 2, 6, 6, 4))
    with pytest.raises(ValueError, match="layout 'NCHW8c' but the data's block is 4"):
        topi.nn.conv2d_NCHWc(Xc, tvm.placeholder((2, 2, 3, 3, 4, 8)), 1, 1, 1, "NCHW8c", "NCHW8c")
    with pytest.raises(ValueError, match="does not match data"):
        topi.nn.conv2d_NCHWc(Xc, tvm.placeholder((2, 1, 3, 3, 4, 8)), 1, 1, 1, "NCHW4c", "NCHW8c")
    with pytest.raises(ValueError, match="must look like 'NCHW8c'"):
        topi.nn.conv2d_NCHWc(Xc, tvm.placeholder((2, 2, 3, 3, 4, 8)), 1, 1, 1, "NCHW", "NCHW8c")


@pytest.mark.parametrize(
    ("dshape", "oc", "k", "stride", "padding", "output_padding", "dilation", "groups"),
    [
        ((1, 4, 5, 5), 3, 3, 2, 1, 1, 1, 1),
        ((2, 3, 4, 7), 2, (3, 2), (1, 2), (0, 1), 0, 1, 1),
        ((1, 4, 3, 3), 4, 2, 2, 0, 0, 1, 2),
        ((1, 2, 4, 4), 3, 3, 1, 2, 0, 2, 1),
        ((1, 1, 1, 1), 1, 1, 1, 0, 0, 1, 1),
    ],
)
def test_conv2d_transpose_matches_torch(
    dshape, oc, k, stride, padding, output_padding, dilation, groups
):
    kh, kw = (k, k) if isinstance(k, int) else k
    X = tvm.placeholder(dshape, name="X")
    W = tvm.placeholder((dshape[1], oc // groups, kh, kw), name="W")
    Y = topi.nn.conv2d_transpose_nchw(
        X, W, stride, padding, "float32", output_padding, dilation, groups
    )
    x, w = random(dshape, "float32", 1), random(W.shape, "float32", 2)
    ref = F.conv_transpose2d(
        torch.from_numpy(x),
        torch.from_numpy(w),
        stride=stride,
        padding=padding,
        output_padding=output_padding,
        groups=groups,
        dilation=dilation,
    ).numpy()
    run([X, W], Y, [x, w], ref, 1e-4, 1e-4)
    assert Y.op.tag == "conv2d_transpose_nchw"


def test_conv2d_transpose_with_an_empty_output_and_too_much_padding():
    # (1 - 1) * 2 - 2 * 1 + 1 + 1 = 0 rows and columns: an empty result, as PyTorch's
    X, W = tvm.placeholder((2, 2, 1, 1), name="X"), tvm.placeholder((2, 3, 1, 1), name="W")
    Y = topi.nn.conv2d_transpose_nchw(X, W, 2, 1, output_padding=1)
    x, w = random((2, 2, 1, 1), "float32"), random((2, 3, 1, 1), "float32")
    want = F.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w), None, 2, 1, 1).numpy()
    assert tuple(Y.shape) == want.shape == (2, 3, 0, 0)
    run([X, W], Y, [x, w], want)
    with pytest.raises(ValueError, match="the padding leaves fewer than zero output rows"):
        topi.nn.conv2d_transpose_nchw(X, W, 2, 2, output_padding=1)


def test_conv2d_transpose_symbolic_float64():
    n, h = tvm.var("n"), tvm.var("h")
    X = tvm.placeholder((n, 2, h, 3), "float64", name="X")
    W = tvm.placeholder((2, 3, 3, 3), "float64", name="W")
    Y = topi.nn.conv2d_transpose_nchw(X, W, 2, 1, output_padding=1)
    w = random((2, 3, 3, 3), "float64", 2)
    for shape in [(1, 2, 4, 3), (2, 2, 1, 3)]:
        x = random(shape, "float64", 1)
        ref = F.conv_transpose2d(
            torch.from_numpy(x),
            torch.from_numpy(w),
            stride=2,
            padding=1,
            output_padding=1,
        ).numpy()
        run([X, W], Y, [x, w], ref)


def test_conv2d_transpose_errors():
    X = tvm.placeholder((1, 4, 5, 5))
    with pytest.raises(ValueError, match="Input has 4 channels but Filter"):
        topi.nn.conv2d_transpose_nchw(X, tvm.placeholder((3, 2, 3, 3)), 1, 0)
    with pytest.raises(ValueError, match="output_padding of conv2d_transpose_nchw must be smaller"):
        topi.nn.conv2d_transpose_nchw(X, tvm.placeholder((4, 2, 3, 3)), 1, 0, output_padding=1)
