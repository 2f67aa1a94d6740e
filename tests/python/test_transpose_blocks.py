"""A copy whose vector axis steps across its source's rows (a transpose, a permute that moves
the last axis) is tiled into blocks whose rows codegen loads contiguously and transposes in
registers (rule_injective.cc's transpose_blocks): every shape, permutation and dtype must
equal NumPy's, with the blocks (extents that 16 or 8 divide) and without (odd extents, dtypes
of more than 16 lanes, the knob off, strided arrays), and a blocked transpose gathers
nothing."""

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import topi

rng = np.random.default_rng(5)


def _build(shape, axes, dtype, config=None):
    x = tvm.placeholder(shape, name="x", dtype=dtype)
    y = topi.transpose(x, axes)
    s = tvm.auto_schedule([y], config=config)
    return tvm.build(s, [x, y]), y


def _gathers(f) -> int:
    # In the LLVM IR, so on any target (AVX2 targets without fast gathers scalarize them).
    return f.get_source("ll").count("llvm.masked.gather")


def _data(shape, dtype):
    return (rng.standard_normal(shape) * 50).astype(dtype)


@pytest.mark.parametrize(
    "shape,axes",
    [
        ((1024, 1024), (1, 0)),
        ((64, 48), (1, 0)),
        ((8, 128, 768), (0, 2, 1)),
        ((2, 64, 56, 56), (0, 2, 3, 1)),  # NCHW -> NHWC, blocks of 8 (56 = 7 x 8)
        ((16, 32, 8), (2, 1, 0)),
        ((17, 33), (1, 0)),  # no block divides: gathers
        ((3, 5, 7), (2, 0, 1)),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "int8", "float16"])
def test_transpose_matches_numpy(shape, axes, dtype):
    f, _ = _build(shape, axes, dtype)
    a = _data(shape, dtype)
    out = np.empty([shape[i] for i in axes], dtype)
    f(a, out)
    np.testing.assert_array_equal(out, a.transpose(axes))


def test_a_blocked_transpose_gathers_nothing_and_the_knob_turns_it_off():
    f, y = _build((256, 128), (1, 0), "float32")
    assert _gathers(f) == 0
    space = tvm.auto_schedule_space([y])
    assert space["knobs"][y.op.name]["transpose_block"] == [0, 1, 2]
    # The output's rows are 1 KB apart: blocks in the source's row order.
    assert space["default"][y.op.name]["transpose_block"] == 2
    a = _data((256, 128), "float32")
    for mode in (0, 1, 2):
        g, _ = _build((256, 128), (1, 0), "float32", {y.op.name: {"transpose_block": mode}})
        assert (_gathers(g) > 0) == (mode == 0)
        out = np.empty((128, 256), "float32")
        g(a, out)
        np.testing.assert_array_equal(out, a.T)


def test_output_rows_4kb_apart_take_the_output_order():
    x = tvm.placeholder((1024, 1024), name="x")
    y = topi.transpose(x, (1, 0))
    assert tvm.auto_schedule_space([y])["default"][y.op.name]["transpose_block"] == 1


def test_strided_arrays_run_the_generic_kernel():
    f, _ = _build((64, 32), (1, 0), "float32")
    base = _data((64, 64), "float32")
    a = base[:, ::2]  # a view with a row stride of 64 and an element stride of 2
    out = np.empty((32, 64), "float32")
    f(a, out)
    np.testing.assert_array_equal(out, a.T)
    wide = np.zeros((32, 128), "float32")
    f(np.ascontiguousarray(a), wide[:, ::2])
    np.testing.assert_array_equal(wide[:, ::2], a.T)


@pytest.mark.parametrize(
    "shape,layout,block",
    [
        ((2, 64, 56, 56), "NCHW16c", 16),
        ((1, 32, 28, 24), "NCHW8c", 8),
        ((1, 48, 7, 7), "NCHW16c", 16),
    ],
)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_channel_blocking_matches_numpy(shape, layout, block, dtype):
    # NCHW -> NCHW[x]c reads x[n, 16 cb + ci, h, w]: the vector axis ci plus an offset. 56 and
    # 24 wide rows take blocks; 7 does not (gathers).
    x = tvm.placeholder(shape, name="x", dtype=dtype)
    y = topi.layout_transform(x, "NCHW", layout)
    f = tvm.build(tvm.auto_schedule([y]), [x, y])
    if shape[3] % 8 == 0:
        assert _gathers(f) == 0
    n, c, h, w = shape
    a = _data(shape, dtype)
    out = np.empty((n, c // block, h, w, block), dtype)
    f(a, out)
    np.testing.assert_array_equal(
        out, a.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2)
    )
