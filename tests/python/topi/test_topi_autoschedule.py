"""The operators built with auto_schedule (the schedule users get by default) compute what the
references compute: conv, matmul, pooling, normalisation, softmax, reductions and layout ops,
with fused epilogues, on odd sizes."""

import numpy as np
import torch
import torch.nn.functional as F
from topi_testing import random, run

import pytvmbridge as tvm
from pytvmbridge import topi


def t(x):
    return torch.from_numpy(x)


def test_conv_block_auto_scheduled():
    # conv2d + batch norm + residual add + relu, then max pooling: the ResNet block pattern.
    X = tvm.placeholder((2, 8, 13, 13), name="X")
    W = tvm.placeholder((8, 8, 3, 3), name="W")
    params = [tvm.placeholder((8,), name=f"p{k}") for k in range(4)]
    conv = topi.nn.conv2d(X, W, 1, 1)
    bn = topi.nn.batch_norm(conv, *params)[0]
    Y = topi.nn.max_pool2d(topi.nn.relu(topi.add(bn, X)), 3, 2, 1)
    x, w = random((2, 8, 13, 13), "float32"), random((8, 8, 3, 3), "float32", 1)
    g, b, m = (random((8,), "float32", k) for k in (2, 3, 4))
    v = random((8,), "float32", 5, 0.5, 2.0)
    ref = F.conv2d(t(x), t(w), padding=1)
    ref = F.batch_norm(ref, t(m), t(v), t(g), t(b), False, 0.0, 1e-5)
    ref = F.max_pool2d(F.relu(ref + t(x)), 3, 2, 1)
    run([X, W, *params], Y, [x, w, g, b, m, v], ref.numpy(), 1e-4, 1e-4, schedule="auto")


def test_strided_depthwise_and_nchwc_auto_scheduled():
    X = tvm.placeholder((1, 6, 11, 11), name="X")
    D = tvm.placeholder((6, 1, 3, 3), name="D")
    W = tvm.placeholder((16, 8, 1, 1), name="W")
    dw = topi.nn.conv2d(X, D, 2, 1, groups=6)
    X8 = tvm.placeholder((1, 8, 7, 7), name="X8")
    yc = topi.nn.conv2d_NCHWc(
        topi.nn.pack_nchwc(X8, 4), topi.nn.pack_oihwio(W, 4, 8), 1, 0, 1, "NCHW4c", "NCHW8c"
    )
    Y = topi.nn.unpack_nchwc(yc)
    x, d = random((1, 6, 11, 11), "float32"), random((6, 1, 3, 3), "float32", 1)
    x8, w = random((1, 8, 7, 7), "float32", 2), random((16, 8, 1, 1), "float32", 3)
    refs = [F.conv2d(t(x), t(d), stride=2, padding=1, groups=6), F.conv2d(t(x8), t(w))]
    run(
        [X, D, X8, W],
        [dw, Y],
        [x, d, x8, w],
        [r.numpy() for r in refs],
        1e-4,
        1e-4,
        schedule="auto",
    )


def test_transformer_block_auto_scheduled():
    # dense + bias + gelu, attention scores with batch_matmul and softmax, layer norm.
    n = 7
    X = tvm.placeholder((n, 16), name="X")
    W = tvm.placeholder((24, 16), name="W")
    B = tvm.placeholder((24,), name="B")
    G, Be = tvm.placeholder((24,), name="G"), tvm.placeholder((24,), name="Be")
    h = topi.nn.gelu(topi.nn.dense(X, W, B))
    q = topi.reshape(h, (1, n, 24))
    scores = topi.nn.softmax(topi.multiply(topi.nn.batch_matmul(q, q), 0.125))
    ln = topi.nn.layer_norm(h, G, Be, -1)
    x, w, b = (
        random((n, 16), "float32"),
        random((24, 16), "float32", 1),
        random((24,), "float32", 2),
    )
    g, be = random((24,), "float32", 3), random((24,), "float32", 4)
    href = F.gelu(F.linear(t(x), t(w), t(b)))
    sref = torch.softmax(href[None] @ href[None].transpose(1, 2) * 0.125, -1)
    lref = F.layer_norm(href, (24,), t(g), t(be))
    run(
        [X, W, B, G, Be],
        [scores, ln],
        [x, w, b, g, be],
        [sref.numpy(), lref.numpy()],
        1e-4,
        1e-4,
        schedule="auto",
    )


def test_reductions_and_layout_ops_auto_scheduled():
    A = tvm.placeholder((37, 29), name="A")
    a = random((37, 29), "float32")
    outs = [
        topi.sum(A),
        topi.mean(A, axis=0),
        topi.max(A, axis=1, keepdims=True),
        topi.argmax(A, axis=1),
        topi.transpose(topi.exp(A)),
        topi.concatenate([A, topi.negative(A)], axis=1),
        topi.nn.log_softmax(A, 0),
        topi.matmul(A, A, transp_a=True),
    ]
    refs = [
        a.sum(dtype="float64"),
        a.mean(0),
        a.max(1, keepdims=True),
        a.argmax(1),
        np.exp(a).T,
        np.concatenate([a, -a], 1),
        torch.log_softmax(t(a), 0).numpy(),
        a.T.astype("float64") @ a,
    ]
    run([A], outs, [a], refs, 1e-4, 1e-4, schedule="auto")
