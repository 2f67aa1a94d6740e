"""The tiled reduction's "block_rows" knob (GotoBLAS's mc blocking of a matrix product's rows):
the row axis cut into blocks that every panel sweeps before the next block, the streamed
operand packed whole in a pass of its own, rows outermost. Values against NumPy with the knob
on and off, at sizes where the tile does and does not divide a block, and the loop nest that
lower() prints."""

from __future__ import annotations

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import topi

rng = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    """Standard normal float32 values."""
    return rng.standard_normal(shape).astype("float32")


def matmul(m: int, n: int, k: int, epilogue: bool = False) -> list:
    """A [m, k] @ B [k, n], with a bias and ReLU epilogue when asked."""
    A = tvm.placeholder((m, k), name="A")
    B = tvm.placeholder((k, n), name="B")
    C = topi.matmul(A, B)
    if not epilogue:
        return [A, B, C]
    bias = tvm.placeholder((n,), name="bias")
    D = tvm.compute((m, n), lambda i, j: tvm.max(C[i, j] + bias[j], 0.0), name="D")
    return [A, B, bias, D]


def knobs(args: list) -> dict:
    """The matmul stage's knob candidates."""
    return tvm.auto_schedule_space(args[-1])["knobs"]["T_matmul"]


def run(s, args: list, inputs: list[np.ndarray]) -> np.ndarray:
    """Builds s and returns its one output."""
    f = tvm.build(s, args)
    out = np.zeros([int(d) for d in args[-1].shape], "float32")
    f(*inputs, out)
    return out


def test_candidates_divide_the_rows_and_default_is_off():
    args = matmul(256, 128, 64)
    space = tvm.auto_schedule_space(args[-1])
    # 256 rows: blocks of 64 and 128 (256 itself is no blocking); 512 does not fit.
    assert space["knobs"]["T_matmul"]["block_rows"] == [0, 64, 128]
    assert space["default"]["T_matmul"]["block_rows"] == 0
    # Rows that no candidate divides, and packed rows, offer none.
    assert knobs(matmul(100, 128, 64))["block_rows"] == [0]
    packed = tvm.auto_schedule_space(args[-1], config={"T_matmul": {"pack_rows": 1}})
    assert packed["knobs"]["T_matmul"]["block_rows"] == [0]
    # Nor a dense layer with the weight as PyTorch holds it: whichever operand is streamed, it
    # is packed with a transpose.
    X = tvm.placeholder((1024, 768), name="X")
    W = tvm.placeholder((768, 768), name="W")
    dense = topi.nn.dense(X, W)
    for axis in (0, 1):
        config = {"T_dense": {"vector_axis": axis}}
        assert tvm.auto_schedule_space(dense, config=config)["knobs"]["T_dense"]["block_rows"] == [
            0
        ]
    # SGEMM 1024^3 keeps its analytical point (panels packed at the panel loop).
    sgemm = tvm.auto_schedule_space(matmul(1024, 1024, 1024)[-1])["default"]["T_matmul"]
    assert (sgemm["block_rows"], sgemm["pack_inner"]) == (0, 2)


@pytest.mark.parametrize(
    "shape, change",
    [
        # 6 x 4 tiles (AVX-512) leave each block of 64 rows a partial tile of 4 rows; the last
        # panel of 200 columns is partly zero padding.
        ((256, 200, 96), {"vector_axis": 1, "block_rows": 64}),
        ((256, 200, 96), {"vector_axis": 1, "block_rows": 128, "tile_rows": 8}),
        ((512, 64, 33), {"block_rows": 256, "parallel_depth": 1}),
        ((512, 96, 40), {"block_rows": 64, "fuse_epilogue": 0}),
        ((128, 48, 17), {"block_rows": 64, "parallel_depth": 0}),
    ],
)
@pytest.mark.parametrize("epilogue", [False, True])
def test_row_blocks_compute_the_same_values(shape, change, epilogue):
    m, n, k = shape
    args = matmul(m, n, k, epilogue)
    a, b, bias = rand(m, k), rand(k, n), rand(n)
    inputs = [a, b, bias] if epilogue else [a, b]
    ref = a @ b
    if epilogue:
        ref = np.maximum(ref + bias, 0)
    stage = "T_matmul"
    candidates = tvm.auto_schedule_space(args[-1], config={stage: change})["knobs"][stage]
    for knob, value in change.items():
        assert value in candidates[knob], (knob, candidates[knob])
    for point in (change, {**change, "block_rows": 0}):
        got = run(tvm.auto_schedule(args[-1], config={stage: point}), args, inputs)
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * k)


def test_row_blocks_outermost_and_the_operand_packed_rows_first():
    args = matmul(512, 256, 128)
    s = tvm.auto_schedule(args[-1], config={"T_matmul": {"block_rows": 128, "tile_rows": 6}})
    text = str(tvm.lower(s, args))
    # The whole streamed operand is packed first, one row of B (all its panels) per iteration.
    assert "allocate B.packed[float32 * " in text
    pack = text.index("for (ax0, 0, 128)")
    assert text.index("for (panel, 0, ") > pack
    # Then the blocks of rows outermost, fused with the panels into the parallel loop, and the
    # 21 whole tiles of a block (128 = 6 x 21 + 2) with the reduction free of guards; the last,
    # partial tile of each block peeled after them, its rows loop cut to the 2 rows that exist
    # (partition_ranges: the guard `i.inner.inner + 126 < 128` decided on each side of 2).
    nest = text.index("parallel (i.outer.j.outer.fused, 0, ")
    assert nest > pack
    tiles = text.index("for (i.inner.outer, 0, 21)", nest)
    reduction = text[text.index("for (k", tiles) :].split("\n    }", 1)[0]
    assert "if (" not in reduction
    assert "for (i.inner.inner, 0, 2)" in text[tiles:]
    assert "< 128" not in text[tiles:]
    a, b = rand(512, 128), rand(128, 256)
    np.testing.assert_allclose(run(s, args, [a, b]), a @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("block_rows", [64, 128])
def test_prepacked_panels_offer_row_blocks(block_rows):
    # dense_pack reads its weight as panels, wp[j // 64, k, j % 64]: no single dimension of it
    # follows the vector axis, and it is packed once ahead of time, not transposed on each
    # call, so the knob is offered (it used to be taken for a transposed operand).
    m, k, n, width = 256, 40, 128, 64
    X = tvm.placeholder((m, k), name="X")
    WP = tvm.placeholder((n // width, k, width), name="WP")
    bias = tvm.placeholder((n,), name="bias")
    out = topi.nn.dense_pack(X, WP, bias)
    stage = "T_dense_pack"
    space = tvm.auto_schedule_space(out)
    assert space["knobs"][stage]["block_rows"] == [0, 64, 128]
    assert space["default"][stage]["block_rows"] == 0
    x, w, b = rand(m, k), rand(n, k), rand(n)
    wp = np.ascontiguousarray(w.reshape(n // width, width, k).transpose(0, 2, 1))
    s = tvm.auto_schedule(out, config={stage: {"block_rows": block_rows}})
    # The row blocks outermost, then the panels (without blocks the panels lead).
    assert "parallel (i0.outer.i1.outer" in str(tvm.lower(s, [X, WP, bias, out]))
    got = run(s, [X, WP, bias, out], [x, wp, b])
    np.testing.assert_allclose(got, x @ w.T + b, rtol=1e-4, atol=1e-4 * k)
