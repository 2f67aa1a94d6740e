"""Loop partitioning of non-dividing register tiles (csrc/lower/partition_loops.cc): a tile of
`vectors x lanes` columns whose width does not divide the columns puts a lane guard on every
unrolled statement; the pass tests it once per tile (a guard-free main part) and gives the last,
partial tile its own copy where each guard is a constant. Checked by values against NumPy on
dividing and non-dividing shapes, and by lower()'s printout (no guard in the main part)."""

import re

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import te

rng = np.random.default_rng(5)


@pytest.fixture(autouse=True)
def _this_pass_alone(monkeypatch):
    # partition_ranges (run next) splits the loop over tiles where these guards are decided,
    # which takes the main/tail branch out of the loop: the structure checked here is this
    # pass's own. test_partition_ranges_peels_the_tail runs both.
    monkeypatch.setenv("PYTVMBRIDGE_NO_PARTITION_RANGES", "1")


def _tiled_matmul(m: int, n: int, k: int, vectors: int, rows: int) -> tuple:
    """C = A @ B with a rows x (vectors x 16) register tile: rows and vectors unrolled, the 16
    lanes vectorized, the reduction outside the tile (the tuner's micro-kernel shape)."""
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=rows)
    jo, ji = s[C].split(j, factor=vectors * 16)
    jv, jl = s[C].split(ji, factor=16)
    (rr,) = C.op.reduce_axis
    s[C].reorder(io, jo, rr, ii, jv, jl)
    # One loop over all tiles (as the tuner's schedules fuse them): the column tile's position
    # is then floormod(tile, column tiles), which the existing loop peeling does not split.
    s[C].fuse(io, jo)
    s[C].unroll(ii)
    s[C].unroll(jv)
    s[C].vectorize(jl)
    return s, [A, B, C]


def _run(s: object, args: list, m: int, n: int, k: int) -> np.ndarray:
    f = tvm.build(s, args)
    a = rng.standard_normal((m, k)).astype("float32")
    b = rng.standard_normal((k, n)).astype("float32")
    c = np.full((m, n), np.nan, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    return c


@pytest.mark.parametrize(
    "m,n,vectors,rows",
    [(8, 64, 3, 2), (6, 50, 3, 3), (5, 100, 2, 1), (4, 47, 4, 2), (9, 64, 2, 3), (3, 33, 1, 3)],
)
def test_non_dividing_tile_matches_numpy(m, n, vectors, rows):
    s, args = _tiled_matmul(m, n, 7, vectors, rows)
    _run(s, args, m, n, 7)


def test_main_part_and_tail_have_no_guard():
    # 64 columns in tiles of 48: a full tile (the main part) and one of 16 columns (the tail).
    s, args = _tiled_matmul(4, 64, 5, 3, 2)
    text = str(tvm.lower(s, args))
    # One test per tile and no masked access: before, each of the 2 x 3 unrolled copies carried
    # an `all lanes in range` branch and a masked twin.
    assert text.count("if (") == 1 and text.count("} else {") == 1, text
    assert re.search(r"\) if \(", text) is None, text
    main, tail = text.split("} else {")
    # The accumulators' initialisation: 2 rows x 3 vectors in the main part, 2 x 1 in the tail.
    assert main.count("x16(0.0)") == 2 * 3, text
    assert tail.count("x16(0.0)") == 2, text
    _run(s, args, 4, 64, 5)


def test_guarded_lowering_without_the_pass_matches(monkeypatch):
    # The same kernels lowered without the pass (PYTVMBRIDGE_NO_PARTITION) keep their guards
    # and compute the same values.
    monkeypatch.setenv("PYTVMBRIDGE_NO_PARTITION", "1")
    s, args = _tiled_matmul(4, 64, 5, 3, 2)
    assert str(tvm.lower(s, args)).count("if (") > 2
    _run(s, args, 4, 64, 5)


def test_partial_lanes_in_tail_matches_numpy():
    # 40 columns in tiles of 32: the tail's second vector has 8 of its 16 lanes valid (masked).
    s, args = _tiled_matmul(3, 40, 6, 2, 3)
    text = str(tvm.lower(s, args))
    assert "} else {" in text
    _run(s, args, 3, 40, 6)


def test_row_guard_of_several_vectors_is_partitioned():
    # 10 rows in tiles of 3 (the last tile 1 row), each row 2 vectors: one test per tile, and
    # the tail holds the one valid row's 2 vectors.
    s, args = _tiled_matmul(10, 64, 4, 2, 3)
    text = str(tvm.lower(s, args))
    assert text.count("if (") == 1 and text.count("} else {") == 1, text
    main, tail = text.split("} else {")
    assert main.count("x16(0.0)") == 3 * 2 and tail.count("x16(0.0)") == 1 * 2, text
    _run(s, args, 10, 64, 4)


def test_row_guard_of_one_vector_is_left_alone(monkeypatch):
    # One vector per row: the row guards stay (the lowering is the one without the pass).
    s, args = _tiled_matmul(10, 64, 4, 1, 3)
    text = str(tvm.lower(s, args))
    monkeypatch.setenv("PYTVMBRIDGE_NO_PARTITION", "1")
    s0, args0 = _tiled_matmul(10, 64, 4, 1, 3)
    assert str(tvm.lower(s0, args0)) == text
    _run(s, args, 10, 64, 4)


def test_dividing_tile_is_unchanged():
    # 64 columns in tiles of 32: no guard to begin with, no second version.
    s, args = _tiled_matmul(4, 64, 5, 2, 2)
    text = str(tvm.lower(s, args))
    assert "if (" not in text and "else" not in text, text
    _run(s, args, 4, 64, 5)


def test_symbolic_extent_keeps_guards():
    # A column count known only at run time: the tail is not one known tile, nothing changes,
    # and the guarded code still computes the product.
    n = te.var("n")
    A = te.placeholder((4, 5), name="A")
    B = te.placeholder((5, n), name="B")
    r = te.reduce_axis((0, 5), name="r")
    C = te.compute((4, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    jo, ji = s[C].split(j, factor=48)
    jv, jl = s[C].split(ji, factor=16)
    (rr,) = C.op.reduce_axis
    s[C].reorder(i, jo, rr, jv, jl)
    s[C].unroll(jv)
    s[C].vectorize(jl)
    f = tvm.build(s, [A, B, C])
    for cols in (64, 48, 17):
        a = rng.standard_normal((4, 5)).astype("float32")
        b = rng.standard_normal((5, cols)).astype("float32")
        c = np.zeros((4, cols), "float32")
        f(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("channels,tile_vectors", [(64, 3), (24, 1), (96, 4)])
def test_conv_tuning_candidates_match_numpy(channels, tile_vectors, monkeypatch):
    # The tuner's convolution candidates whose channel tile does not divide the channels
    # (without packing, the pass applies: fewer branches than without it).
    from pytvmbridge import autotvm, topi

    def conv(c: int, h: int, o: int) -> list:
        x = tvm.placeholder((1, c, h, h), name="x")
        w = tvm.placeholder((o, c, 3, 3), name="w")
        return [x, w, topi.nn.conv2d_nchw(x, w, 1, 1, 1)]

    task = autotvm.auto_task(conv, (8, 10, channels), name="conv")
    checked = 0
    for pack in (0, 1):
        cfg = task.space.default()
        stage = cfg["T_conv2d_nchw"]
        stage["tile_vectors"] = tile_vectors
        stage["pack"] = pack
        cfg = task.canonical(cfg)
        s, args = task.instantiate(cfg)
        if pack == 0:
            with monkeypatch.context() as m:
                m.setenv("PYTVMBRIDGE_NO_PARTITION", "1")
                s0, args0 = task.instantiate(cfg)
                before = str(tvm.lower(s0, args0)).count("if (")
            assert str(tvm.lower(s, args)).count("if (") < before
        f = tvm.build(s, args)
        x = rng.standard_normal((1, 8, 10, 10)).astype("float32")
        w = rng.standard_normal((channels, 8, 3, 3)).astype("float32")
        y = np.zeros((1, channels, 10, 10), "float32")
        f(x, w, y)
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
        ref = np.einsum("nchwij,ocij->nohw", win, w)
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
        checked += 1
    assert checked == 2


def test_random_tiles_match_numpy():
    # Random sizes and tiles (dividing or not, in rows, columns or both; 9 of the 16 are
    # partitioned) against NumPy.
    pick = np.random.default_rng(23)
    for _ in range(16):
        m, n, k = (int(x) for x in pick.integers((1, 1, 1), (20, 120, 9)))
        vectors, rows = int(pick.integers(1, 5)), int(pick.integers(1, 6))
        s, args = _tiled_matmul(m, n, k, vectors, rows)
        _run(s, args, m, n, k)


def test_partition_ranges_peels_the_tail(monkeypatch):
    # With partition_ranges after this pass, the loop over the column tiles is split where the
    # main/tail test is decided: each part takes one branch (here the two tiles are two parts
    # of one iteration each, straight code), and only the tail's masked lanes are left.
    monkeypatch.delenv("PYTVMBRIDGE_NO_PARTITION_RANGES")
    s, args = _tiled_matmul(3, 40, 6, 2, 3)
    text = str(tvm.lower(s, args))
    assert "} else {" not in text and "for (i.outer.j.outer.fused" not in text, text
    assert len(re.findall(r"\) if \(", text)) > 0, text  # the tail's 8 of 16 lanes
    _run(s, args, 3, 40, 6)
