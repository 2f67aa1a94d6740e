"""Packs that read their source across rows (a weight [O, C, kh, kw] or [N, K] packed into
panels along O or N) read blocks of rows and transpose them in registers instead of gathering
each vector (autoschedule/pack_operand.cc, codegen/transposed_groups.h). The auto-scheduled
convolutions and dense layers must equal PyTorch's on shapes whose unrolled bodies are whole
runs (1x1 windows and K a multiple of 16: 16 elements), a run and gathers left over (3x3
windows: two channels, 18 elements; K = 100 or 33) or no run (the 3-channel 7x7 stem: 7
elements, its 49 too many to unroll; K = 7), and a pack of whole runs has no gather left."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import pytvmbridge as tvm
from pytvmbridge import topi


def _gathers(f) -> int:
    # In the LLVM IR, so on any target (AVX2 targets without fast gathers scalarize them).
    return f.get_source("ll").count("llvm.masked.gather")


@pytest.mark.parametrize(
    "b,c,h,o,k,s,p",
    [
        (1, 512, 7, 512, 3, 1, 1),  # 9.4 MB of weight packed on every call
        (1, 64, 14, 64, 3, 1, 1),
        (2, 32, 9, 48, 1, 1, 0),  # 1x1: the channels split by 16
        (1, 3, 20, 64, 7, 2, 3),  # the stem: gathers
        (1, 5, 11, 17, 3, 1, 1),  # 5 channels: no pair to unroll (gathers); a padded panel
        (1, 6, 11, 17, 3, 1, 1),  # 6 channels: pairs; 17 outputs: a padded panel
    ],
)
def test_conv2d_with_a_packed_weight_matches_torch(b, c, h, o, k, s, p):
    x = tvm.placeholder((b, c, h, h), name="x")
    w = tvm.placeholder((o, c, k, k), name="w")
    y = topi.nn.conv2d(x, w, strides=s, padding=p)
    sch = tvm.auto_schedule([y])
    # On AVX-512 every one of these packs its weight; AVX2's plans pack the larger ones.
    f = tvm.build(sch, [x, w, y])
    xt, wt = torch.randn(b, c, h, h), torch.randn(o, c, k, k)
    ref = F.conv2d(xt, wt, stride=s, padding=p)
    out = torch.empty_like(ref)
    f(xt, wt, out)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-3)
    # A strided weight runs the generic kernel, which keeps its gathers.
    out2 = torch.empty_like(ref)
    f(xt, wt.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2), out2)
    torch.testing.assert_close(out2, ref, rtol=1e-4, atol=1e-3)


def test_a_whole_run_pack_gathers_nothing():
    # dense's weight [N, K] packed along N (the vector axis N on every target): before, one
    # gather per vector of the panel, and nothing else in this kernel gathers.
    x = tvm.placeholder((16, 256), name="x")
    w = tvm.placeholder((256, 256), name="w")
    y = topi.nn.dense(x, w)
    sch = tvm.auto_schedule([y], config={y.op.name: {"pack": 1, "vector_axis": 1}})
    assert "w.packed" in str(tvm.lower(sch, [x, w, y]))
    f = tvm.build(sch, [x, w, y])
    assert _gathers(f) == 0
    xt, wt = torch.randn(16, 256), torch.randn(256, 256)
    out = torch.empty(16, 256)
    f(xt, wt, out)
    torch.testing.assert_close(out, xt @ wt.T, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("k", [100, 16, 7, 33])
def test_dense_rows_that_are_not_whole_runs(k):
    x = tvm.placeholder((10, k), name="x")
    w = tvm.placeholder((40, k), name="w")
    y = topi.nn.dense(x, w)
    f = tvm.build(tvm.auto_schedule([y]), [x, w, y])
    rng = np.random.default_rng(k)
    xn = rng.standard_normal((10, k)).astype("float32")
    wn = rng.standard_normal((40, k)).astype("float32")
    out = np.empty((10, 40), "float32")
    f(xn, wn, out)
    np.testing.assert_allclose(out, xn @ wn.T, rtol=1e-4, atol=1e-4)
