import pytest
import torch
import torch.nn.functional as F
from topi_testing import random, run

import pytvmbridge as tvm
from pytvmbridge import topi


def torch_conv2d(x, w, stride, pads, dilation, groups):
    top, left, bottom, right = pads
    xt = F.pad(torch.from_numpy(x), (left, right, top, bottom))
    return F.conv2d(
        xt, torch.from_numpy(w), stride=stride, dilation=dilation, groups=groups
    ).numpy()


# (N, C, H, W), (O, kh, kw), stride, padding, its (top, left, bottom, right), dilation, groups
CASES = [
    ((1, 3, 7, 7), (4, 3, 3), 1, 1, (1, 1, 1, 1), 1, 1),
    ((2, 5, 11, 9), (3, 3, 1), (2, 1), (1, 0), (1, 0, 1, 0), 1, 1),
    ((1, 4, 8, 8), (6, 3, 3), 2, (0, 1, 2, 1), (0, 1, 2, 1), 2, 2),
    ((1, 6, 9, 9), (6, 3, 3), 1, 1, (1, 1, 1, 1), 1, 6),
    ((1, 1, 1, 1), (1, 1, 1), 1, 0, (0, 0, 0, 0), 1, 1),
    ((1, 3, 13, 13), (2, 5, 5), 3, "SAME", (2, 2, 2, 2), 1, 1),
    ((1, 2, 6, 6), (2, 2, 2), 1, "VALID", (0, 0, 0, 0), (2, 1), 1),
]


@pytest.mark.parametrize(
    ("dshape", "kshape", "stride", "padding", "pads", "dilation", "groups"), CASES
)
def test_conv2d_matches_torch(dshape, kshape, stride, padding, pads, dilation, groups):
    o, kh, kw = kshape
    wshape = (o, dshape[1] // groups, kh, kw)
    X = tvm.placeholder(dshape, name="X")
    W = tvm.placeholder(wshape, name="W")
    Y = topi.nn.conv2d(X, W, stride, padding, dilation, groups=groups)
    x, w = random(dshape, "float32", 1), random(wshape, "float32", 2)
    run(
        [X, W],
        Y,
        [x, w],
        torch_conv2d(x, w, stride, pads, dilation, groups),
        1e-4,
        1e-4,
    )
    expected_tag = {dshape[1]: "depthwise_conv2d_nchw", 1: "conv2d_nchw"}.get(
        groups, "group_conv2d_nchw"
    )
    assert Y.op.tag == expected_tag
    assert Y.op.attrs["padding"] == pads and Y.op.attrs["groups"] == groups


def test_conv2d_symbolic_batch_and_spatial_sizes_float64():
    n, h, w = tvm.var("n"), tvm.var("h"), tvm.var("w")
    X = tvm.placeholder((n, 3, h, w), "float64", name="X")
    W = tvm.placeholder((4, 3, 3, 3), "float64", name="W")
    Y = topi.nn.conv2d_nchw(X, W, 2, 1, 1)
    wt = random((4, 3, 3, 3), "float64", 2)
    for shape in [(2, 3, 9, 7), (1, 3, 4, 5)]:
        x = random(shape, "float64", 1)
        run([X, W], Y, [x, wt], torch_conv2d(x, wt, 2, (1, 1, 1, 1), 1, 1))


def test_depthwise_and_group_entry_points():
    X = tvm.placeholder((1, 3, 6, 5), name="X")
    W = tvm.placeholder((3, 2, 3, 3), name="W")  # TVM's depthwise layout: (C, multiplier, kh, kw)
    Y = topi.nn.depthwise_conv2d_nchw(X, W, 1, 1, 1)
    x, w = random((1, 3, 6, 5), "float32", 1), random((3, 2, 3, 3), "float32", 2)
    ref = torch_conv2d(x, w.reshape(6, 1, 3, 3), 1, (1, 1, 1, 1), 1, 3)
    run([X, W], Y, [x, w], ref, 1e-4, 1e-4)
    X2 = tvm.placeholder((2, 4, 5, 5), name="X2")
    W2 = tvm.placeholder((6, 2, 3, 3), name="W2")
    Y2 = topi.nn.group_conv2d_nchw(X2, W2, 1, 0, 1, groups=2)
    x2, w2 = random((2, 4, 5, 5), "float32", 3), random((6, 2, 3, 3), "float32", 4)
    run([X2, W2], Y2, [x2, w2], torch_conv2d(x2, w2, 1, (0, 0, 0, 0), 1, 2), 1e-4, 1e-4)


def test_conv2d_int8_with_int32_accumulation():
    X = tvm.placeholder((1, 2, 4, 4), "int8", name="X")
    W = tvm.placeholder((3, 2, 3, 3), "int8", name="W")
    Y = topi.nn.conv2d(X, W, 1, 1, out_dtype="int32")
    x = random((1, 2, 4, 4), "int8", 1, -100, 100)
    w = random((3, 2, 3, 3), "int8", 2, -100, 100)
    ref = torch_conv2d(x.astype("float64"), w.astype("float64"), 1, (1, 1, 1, 1), 1, 1)
    run([X, W], Y, [x, w], ref.astype("int32"))


def test_conv2d_errors():
    X = tvm.placeholder((1, 3, 5, 5), name="X")
    with pytest.raises(ValueError, match="data has 3 channels but the kernel expects 4"):
        topi.nn.conv2d(X, tvm.placeholder((2, 4, 3, 3)))
    with pytest.raises(ValueError, match="data of conv2d must have 4 dimensions"):
        topi.nn.conv2d(tvm.placeholder((3, 5, 5)), tvm.placeholder((2, 3, 3, 3)))
    with pytest.raises(ValueError, match="does not fit the padded input"):
        topi.nn.conv2d(X, tvm.placeholder((2, 3, 7, 7)))
    with pytest.raises(ValueError, match="strides of conv2d must be >= 1"):
        topi.nn.conv2d(X, tvm.placeholder((2, 3, 3, 3)), strides=0)
    with pytest.raises(ValueError, match="padding must have 1, 2 or 4 entries"):
        topi.nn.conv2d(X, tvm.placeholder((2, 3, 3, 3)), padding=(1, 1, 1))
    with pytest.raises(ValueError, match="4 output channels do not divide into 3 groups"):
        topi.nn.conv2d(X, tvm.placeholder((4, 1, 3, 3)), groups=3)
    with pytest.raises(ValueError, match="data_layout 'NCHW'"):
        topi.nn.conv2d(X, tvm.placeholder((2, 3, 3, 3)), data_layout="NHWC")
    with pytest.raises(TypeError, match="data is float32 and kernel is float64"):
        topi.nn.conv2d(X, tvm.placeholder((2, 3, 3, 3), "float64"))
