import re

import pytest
import torch
from topi_testing import random, run

import pytvmbridge as tvm
from pytvmbridge import topi


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("m", "n", "k"), [(1, 1, 1), (5, 7, 13), (4, 1, 3)])
def test_dense_matches_torch_linear(dtype, m, n, k):
    X = tvm.placeholder((m, k), dtype, name="X")
    W = tvm.placeholder((n, k), dtype, name="W")
    b = tvm.placeholder((n,), dtype, name="b")
    x, w, bias = (
        random((m, k), dtype, 1),
        random((n, k), dtype, 2),
        random((n,), dtype, 3),
    )
    Y, Yb = topi.nn.dense(X, W), topi.nn.dense(X, W, b)
    assert Y.op.tag == "dense" and Yb.op.tag == "broadcast"
    ref = torch.nn.functional.linear(torch.from_numpy(x), torch.from_numpy(w))
    refb = torch.nn.functional.linear(*(torch.from_numpy(v) for v in (x, w, bias)))
    run([X, W, b], [Y, Yb], [x, w, bias], [ref.numpy(), refb.numpy()])


def test_dense_symbolic_batch_and_int8():
    n = tvm.var("n")
    X = tvm.placeholder((n, 6), "int8", name="X")
    W = tvm.placeholder((3, 6), "int8", name="W")
    Y = topi.nn.dense(X, W, out_dtype="int32")
    assert Y.dtype == "int32"
    x, w = (
        random((5, 6), "int8", low=-100, high=100),
        random((3, 6), "int8", 1, -100, 100),
    )
    run([X, W], Y, [x, w], x.astype("int32") @ w.astype("int32").T)
    run([X, W], Y, [x[:2], w], x[:2].astype("int32") @ w.astype("int32").T)


@pytest.mark.parametrize("transp_a", [False, True])
@pytest.mark.parametrize("transp_b", [False, True])
def test_matmul_transposes(transp_a, transp_b):
    m, n, k = 3, 5, 7
    a = random((k, m) if transp_a else (m, k), "float32", 1)
    b = random((n, k) if transp_b else (k, n), "float32", 2)
    A = tvm.placeholder(a.shape, name="A")
    B = tvm.placeholder(b.shape, name="B")
    C = topi.matmul(A, B, transp_a, transp_b)
    assert C.op.tag == "matmul" and C.op.attrs["transpose_b"] == int(transp_b)
    run([A, B], C, [a, b], (a.T if transp_a else a) @ (b.T if transp_b else b))


def test_nn_matmul_with_bias_and_symbolic_sizes():
    m, k = tvm.var("m"), tvm.var("k")
    A = tvm.placeholder((m, k), "float64", name="A")
    B = tvm.placeholder((k, 4), "float64", name="B")
    bias = tvm.placeholder((4,), "float64", name="bias")
    C = topi.nn.matmul(A, B, bias)
    a, b, c = (
        random((3, 11), "float64"),
        random((11, 4), "float64", 1),
        random((4,), "float64", 2),
    )
    run([A, B, bias], C, [a, b, c], a @ b + c)


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize(("batch_a", "batch_b"), [(3, 3), (1, 2), (2, 1)])
def test_batch_matmul(transpose_a, transpose_b, batch_a, batch_b):
    m, n, k = 2, 5, 3
    a = random((batch_a, k, m) if transpose_a else (batch_a, m, k), "float32", 1)
    b = random((batch_b, n, k) if transpose_b else (batch_b, k, n), "float32", 2)
    A = tvm.placeholder(a.shape, name="A")
    B = tvm.placeholder(b.shape, name="B")
    C = topi.nn.batch_matmul(A, B, transpose_a=transpose_a, transpose_b=transpose_b)
    ta = torch.from_numpy(a).transpose(1, 2) if transpose_a else torch.from_numpy(a)
    tb = torch.from_numpy(b).transpose(1, 2) if transpose_b else torch.from_numpy(b)
    run([A, B], C, [a, b], torch.matmul(ta, tb).numpy())


def test_batch_matmul_default_transposes_b_and_symbolic_batch():
    bs = tvm.var("b")
    A = tvm.placeholder((bs, 4, 8), name="A")
    B = tvm.placeholder((bs, 6, 8), name="B")
    C = topi.nn.batch_matmul(A, B)
    assert C.op.tag == "batch_matmul"
    a, b = random((2, 4, 8), "float32"), random((2, 6, 8), "float32", 1)
    run([A, B], C, [a, b], a @ b.transpose(0, 2, 1))


def test_matrix_product_errors():
    with pytest.raises(ValueError, match=r"dense: the reduced dimensions differ: 3 of 'X'"):
        topi.nn.dense(tvm.placeholder((2, 3), name="X"), tvm.placeholder((4, 5), name="W"))
    with pytest.raises(ValueError, match="data of dense must have 2 dimensions"):
        topi.nn.dense(tvm.placeholder((2, 3, 1)), tvm.placeholder((4, 3)))
    with pytest.raises(TypeError, match="'A' is float32 and 'B' is float64"):
        topi.matmul(
            tvm.placeholder((2, 3), name="A"),
            tvm.placeholder((3, 2), "float64", name="B"),
        )
    with pytest.raises(ValueError, match="bias of dense must have 4 elements"):
        topi.nn.dense(tvm.placeholder((2, 3)), tvm.placeholder((4, 3)), tvm.placeholder((3,)))
    with pytest.raises(ValueError, match="do not broadcast"):
        topi.nn.batch_matmul(tvm.placeholder((2, 3, 4)), tvm.placeholder((3, 5, 4)))


@pytest.mark.parametrize("schedule", ["naive", "auto"])
@pytest.mark.parametrize(
    ("m", "n", "k", "block", "dtype"),
    [
        (1, 32, 1, 32, "float32"),
        (13, 64, 17, 32, "float32"),
        (7, 48, 5, 16, "float64"),
        (3, 6, 11, 3, "float32"),
    ],
)
def test_dense_pack_matches_torch_linear(schedule, m, n, k, block, dtype):
    # The weight packed by its own kernel, then dense_pack (with a bias, fused): F.linear's values.
    X = tvm.placeholder((m, k), dtype, name="X")
    W = tvm.placeholder((n, k), dtype, name="W")
    b = tvm.placeholder((n,), dtype, name="b")
    P = topi.nn.pack_dense_weight(W, block)
    assert tuple(int(d) for d in P.shape) == (n // block, k, block)
    Wp = tvm.placeholder(P.shape, dtype, name="Wp")
    Y = topi.nn.dense_pack(X, Wp, b)
    assert Y.op.input_tensors[0].op.tag == "dense_pack"
    x, w, bias = random((m, k), dtype, 1), random((n, k), dtype, 2), random((n,), dtype, 3)
    packed = run([W], P, [w], w.reshape(n // block, block, k).transpose(0, 2, 1))[0]
    ref = torch.nn.functional.linear(*(torch.from_numpy(v) for v in (x, w, bias)))
    run([X, Wp, b], Y, [x, packed, bias], ref.numpy(), schedule=schedule)


@pytest.mark.parametrize("block", [16, 32])
def test_dense_pack_reads_one_panel_per_tile(block):
    # auto_schedule takes the panels as they are: no packing stage, the register tile as wide as
    # a panel, and the weight's index in the micro-kernel is the tile's panel (no division by the
    # block left in the loop).
    X = tvm.placeholder((64, 48), name="X")
    Wp = tvm.placeholder((128 // block, 48, block), name="Wp")
    Y = topi.nn.dense_pack(X, Wp)
    text = str(tvm.lower(tvm.auto_schedule(Y), [X, Wp, Y]))
    assert ".packed" not in text
    assert re.search(rf"floor(div|mod)\([^()]*, {block}\)", text) is None
    assert "Wp_stride1)), Wp_stride2, " in text  # a vector load along the panel


def test_dense_pack_errors():
    X = tvm.placeholder((4, 3), name="X")
    with pytest.raises(ValueError, match="multiple of block 32"):
        topi.nn.pack_dense_weight(tvm.placeholder((48, 3), name="W"))
    with pytest.raises(ValueError, match="block must be a positive int"):
        topi.nn.pack_dense_weight(tvm.placeholder((48, 3), name="W"), 0)
    with pytest.raises(ValueError, match="reduced dimensions differ"):
        topi.nn.dense_pack(X, tvm.placeholder((2, 5, 16), name="Wp"))
    with pytest.raises(ValueError, match="packed_weight of dense_pack"):
        topi.nn.dense_pack(X, tvm.placeholder((2, 3), name="Wp"))
