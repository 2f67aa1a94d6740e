"""auto_schedule: automatically scheduled computations give the naive schedule's values (random
compositions of elementwise, broadcast, reduction and matmul stages, hypothesis); the rules'
decisions are visible in lower() for a matmul and a convolution (the epilogue fused, the block
vectorized, the outer loop parallel, the streamed operand packed); the configuration space
round-trips through JSON and every point of it computes the same values."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytvmbridge as tvm
from pytvmbridge import topi

# ---- helpers --------------------------------------------------------------------------------


def run(s, args, inputs):
    f = tvm.build(s, args)
    outs = [np.zeros([int(d) for d in t.shape], t.dtype) for t in args[len(inputs) :]]
    f(*inputs, *outs)
    return outs


def naive_and_auto(args, inputs, config=None):
    outputs = args[len(inputs) :]
    naive = run(tvm.create_schedule([t.op for t in outputs]), args, inputs)
    auto = run(tvm.auto_schedule(outputs, config=config), args, inputs)
    return naive, auto


def matmul_relu(M, N, K, name="C"):
    A = tvm.placeholder((M, K), name="A")
    B = tvm.placeholder((K, N), name="B")
    bias = tvm.placeholder((N,), name="bias")
    k = tvm.reduce_axis((0, K), name="k")
    C = tvm.compute((M, N), lambda i, j: tvm.sum(A[i, k] * B[k, j], axis=k), name=name)
    D = tvm.compute((M, N), lambda i, j: tvm.max(C[i, j] + bias[j], 0.0), name="D")
    return [A, B, bias, D], C


def conv_bias_relu(N, C, H, W, O, KH, KW, stride, pad):
    X = tvm.placeholder((N, C, H, W), name="X")
    Wt = tvm.placeholder((O, C, KH, KW), name="W")
    bias = tvm.placeholder((O,), name="bias")
    P = tvm.compute(
        (N, C, H + 2 * pad, W + 2 * pad),
        lambda n, c, h, w: tvm.if_then_else(
            tvm.all(h >= pad, h < H + pad, w >= pad, w < W + pad), X[n, c, h - pad, w - pad], 0.0
        ),
        name="pad",
    )
    OH = (H + 2 * pad - KH) // stride + 1
    OW = (W + 2 * pad - KW) // stride + 1
    rc = tvm.reduce_axis((0, C), name="rc")
    rh = tvm.reduce_axis((0, KH), name="rh")
    rw = tvm.reduce_axis((0, KW), name="rw")
    Y = tvm.compute(
        (N, O, OH, OW),
        lambda n, o, h, w: tvm.sum(
            P[n, rc, h * stride + rh, w * stride + rw] * Wt[o, rc, rh, rw], axis=[rc, rh, rw]
        ),
        name="conv",
    )
    R = tvm.compute((N, O, OH, OW), lambda n, o, h, w: tvm.max(Y[n, o, h, w] + bias[o], 0.0))
    return [X, Wt, bias, R]


def conv_reference(x, w, b, stride, pad):
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i : i + stride * oh : stride, j : j + stride * ow : stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return np.maximum(out + b[None, :, None, None], 0.0)


rng = np.random.default_rng(0)


def rand(*shape):
    return rng.standard_normal(shape).astype("float32")


# ---- random compositions --------------------------------------------------------------------


@st.composite
def programs(draw):
    """A chain of 1-4 stages over an (m, n) input: elementwise maps, broadcast adds, row
    reductions broadcast back (softmax-like), column sums, transposes, matmuls with an epilogue."""
    m = draw(st.sampled_from([1, 3, 7, 16, 33, 64]))
    n = draw(st.sampled_from([1, 5, 16, 31, 48]))
    A = tvm.placeholder((m, n), name="A")
    inputs = [A]
    arrays = [rand(m, n)]
    cur = A
    for step in range(draw(st.integers(1, 4))):
        a, b = (int(d) for d in cur.shape)
        kind = draw(
            st.sampled_from(["map", "bias", "rowmax", "colsum", "transpose", "matmul", "exp"])
        )
        x = cur
        name = f"s{step}"
        if kind == "map":
            cur = tvm.compute(
                (a, b), lambda i, j, x=x: tvm.max(x[i, j] * 0.5 + 1.0, 0.0), name=name
            )
        elif kind == "exp":
            cur = tvm.compute((a, b), lambda i, j, x=x: tvm.exp(x[i, j] * 0.1), name=name)
        elif kind == "bias":
            v = tvm.placeholder((b,), name=f"v{step}")
            inputs.append(v)
            arrays.append(rand(b))
            cur = tvm.compute((a, b), lambda i, j, x=x, v=v: x[i, j] + v[j], name=name)
        elif kind == "rowmax":
            r = tvm.reduce_axis((0, b), name=f"r{step}")
            mx = tvm.compute((a,), lambda i, x=x, r=r: tvm.max(x[i, r], axis=r), name=name + "m")
            cur = tvm.compute((a, b), lambda i, j, x=x, mx=mx: x[i, j] - mx[i], name=name)
        elif kind == "colsum":
            r = tvm.reduce_axis((0, a), name=f"r{step}")
            cs = tvm.compute((b,), lambda j, x=x, r=r: tvm.sum(x[r, j], axis=r), name=name + "c")
            cur = tvm.compute((a, b), lambda i, j, x=x, cs=cs: x[i, j] * 0.25 + cs[j], name=name)
        elif kind == "transpose":
            cur = tvm.compute((b, a), lambda i, j, x=x: x[j, i], name=name)
        else:
            p = draw(st.sampled_from([1, 16, 40]))
            w = tvm.placeholder((b, p), name=f"w{step}")
            inputs.append(w)
            arrays.append(rand(b, p))
            r = tvm.reduce_axis((0, b), name=f"r{step}")
            mm = tvm.compute(
                (a, p), lambda i, j, x=x, w=w, r=r: tvm.sum(x[i, r] * w[r, j], axis=r), name=name
            )
            cur = tvm.compute((a, p), lambda i, j, mm=mm: tvm.max(mm[i, j], 0.0), name=name + "e")
    return inputs, arrays, cur


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_compositions_match_the_naive_schedule(program):
    inputs, arrays, out = program
    naive, auto = naive_and_auto([*inputs, out], arrays)
    np.testing.assert_allclose(auto[0], naive[0], rtol=2e-4, atol=2e-4)


# ---- the rules' decisions, as lower() prints them ---------------------------------------------


def test_matmul_decisions_in_lower():
    args, _ = matmul_relu(128, 256, 64)
    s = tvm.auto_schedule(args[-1])
    text = str(tvm.lower(s, args))
    # B is packed into panels of two 16-wide vectors (AVX-512) or two 8-wide ones (AVX2).
    assert "B.packed" in text
    # The matmul is computed per tile into a block (never the whole 128 x 256 intermediate)...
    assert "allocate C.local[float32 * " in text
    assert "allocate C[" not in text
    # ...inside the one parallel loop of the epilogue, whose relu reads the block: over the
    # column panels (8 of them), each packing its panel of B before its row tiles read it.
    main = text[text.index("allocate C.local") :]
    assert text.count("parallel (") == 1
    assert text.index("parallel (j.outer") < text.index("allocate B.packed[float32 * 1 * ")
    assert text.index("allocate B.packed") < text.index("for (i.outer")
    assert "max((C.local[" in main
    # The block's vectors are contiguous loads and stores; the rows are unrolled.
    assert "C.local[ramp(0i64, 1i64, " in main
    assert "for (i.inner" in main or "for (i.c" not in main
    a, b, bias = rand(128, 64), rand(64, 256), rand(256)
    (d,) = run(s, args, [a, b, bias])
    np.testing.assert_allclose(d, np.maximum(a @ b + bias, 0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "channels, width, avx512_rows",
    [
        # the whole 14-column row is one tile of 14 x 2 AVX-512 vectors; the NCHW 3x3 conv
        # below, whose weights the schedule packs itself, gets 7 rows instead
        (64, 14, 14),
        # ResNet's third stage at a 299 x 299 input: 19-wide rows, where 1 row (2
        # accumulators) was the only divisor; 8 rows and a 3-row last tile now
        (32, 19, 8),
    ],
)
def test_row_tile_over_prepacked_panels(channels, width, avx512_rows):
    # Weights already in panels of 32 output channels (the graph's NCHWc layout).
    x = tvm.placeholder((1, channels, width + 2, width + 2), name="x")
    w = tvm.placeholder((2, channels, 3, 3, 32), name="w")
    rc = tvm.reduce_axis((0, channels), name="rc")
    ry = tvm.reduce_axis((0, 3), name="ry")
    rx = tvm.reduce_axis((0, 3), name="rx")
    y = tvm.compute(
        (1, 64, width, width),
        lambda b, o, i, j: tvm.sum(
            x[b, rc, i + ry, j + rx] * w[o // 32, rc, ry, rx, o % 32], [rc, ry, rx]
        ),
        name="conv",
    )
    space = tvm.auto_schedule_space(y)
    assert space["rules"]["conv"] == "tiled_reduction"
    if tvm._core.host_cpu_features().get("avx512f"):
        assert space["default"]["conv"]["tile_rows"] == avx512_rows
    xv, wv = rand(1, channels, width + 2, width + 2), rand(2, channels, 3, 3, 32)
    (got,) = run(tvm.auto_schedule(y), [x, w, y], [xv, wv])
    # reference: unpack the panels to OIHW and sum the 3x3 window in NumPy
    w_oihw = wv.transpose(0, 4, 1, 2, 3).reshape(64, channels, 3, 3)
    want = np.zeros((1, 64, width, width), np.float32)
    for dy in range(3):
        for dx in range(3):
            want += np.einsum(
                "bcij,oc->boij",
                xv[:, :, dy : dy + width, dx : dx + width],
                w_oihw[:, :, dy, dx],
            )
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize(
    "width, kernel, avx512_rows",
    [
        (57, 3, 8),  # 3 x 19: 3 rows was the divisor (6 accumulators); now 7 tiles of 8 + 1 row
        (55, 3, 8),  # 5 x 11: 5 rows (10 accumulators) or 11 (22, the window's values spill)
        (17, 1, 8),  # a prime: 1 row was the only divisor (2 accumulators)
        (56, 3, 8),  # a divisor in the band is still preferred
        (60, 3, 6),  # 6 and 10 divide, both 4 accumulators from the target of 16: the smaller
    ],
)
def test_tile_rows_are_not_a_small_divisor_of_an_odd_row(width, kernel, avx512_rows):
    # Rows that divide the output row are preferred only among tiles of 12 to 20 AVX-512
    # accumulators: a guarded last tile costs less than a latency-bound or spilling tile.
    import torch

    x = tvm.placeholder((2, 8, width, width), name="x")
    w = tvm.placeholder((32, 8, kernel, kernel), name="w")
    y = topi.nn.conv2d(x, w, 1, kernel // 2, 1)
    point = tvm.auto_schedule_space(y)["default"]["T_conv2d_nchw"]
    if tvm._core.host_cpu_features().get("avx512f"):
        assert (point["tile_rows"], point["tile_vectors"]) == (avx512_rows, 2)
    xv, wv = rand(2, 8, width, width), rand(32, 8, kernel, kernel)
    (got,) = run(tvm.auto_schedule(y), [x, w, y], [xv, wv])
    want = torch.nn.functional.conv2d(
        torch.from_numpy(xv), torch.from_numpy(wv), padding=kernel // 2
    ).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_matmul_rows_that_only_small_tiles_divide_take_eight():
    A = tvm.placeholder((57, 256), name="A")
    B = tvm.placeholder((256, 96), name="B")
    C = topi.matmul(A, B)
    point = tvm.auto_schedule_space(C)["default"]["T_matmul"]
    if tvm._core.host_cpu_features().get("avx512f"):
        assert point["tile_rows"] == 8  # 57 = 3 x 19: 7 tiles of 8 rows and one of 1
    a, b = rand(57, 256), rand(256, 96)
    (c,) = run(tvm.auto_schedule(C), [A, B, C], [a, b])
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)


def test_short_row_whole_tile_for_a_1x1_conv():
    # No window along the row (a 1x1 convolution): each broadcast row value serves one tap, so
    # the whole 14-column row is one tile (14 x 2 AVX-512 vectors) even over packed weights.
    x = tvm.placeholder((1, 64, 14, 14), name="x")
    w = tvm.placeholder((64, 64, 1, 1), name="w")
    y = topi.nn.conv2d(x, w, strides=1, padding=0)
    space = tvm.auto_schedule_space(y)
    stage = next(k for k, v in space["default"].items() if "tile_rows" in v)
    if tvm._core.host_cpu_features().get("avx512f"):
        assert space["default"][stage]["tile_rows"] == 14
    xv, wv = rand(1, 64, 14, 14), rand(64, 64, 1, 1)
    (got,) = run(tvm.auto_schedule(y), [x, w, y], [xv, wv])
    want = np.einsum("bcij,oc->boij", xv, wv[:, :, 0, 0])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_conv_decisions_in_lower():
    args = conv_bias_relu(1, 16, 14, 14, 32, 3, 3, 1, 1)
    s = tvm.auto_schedule(args[-1])
    text = str(tvm.lower(s, args))
    space = tvm.auto_schedule_space(conv_bias_relu(1, 16, 14, 14, 32, 3, 3, 1, 1)[-1])
    rules = space["rules"]
    assert rules["conv"] == "tiled_reduction"
    assert rules["conv.local"] == "block"
    assert rules["compute"] == "epilogue"  # bias + relu fused into the tile's write-back
    assert rules["pad"] == "injective"  # stored once rather than tested in the inner loop
    # Weights packed by output channel; output channels vectorized in the block, half the
    # 14-column output row register-blocked with AVX-512: 7 x 2 vectors (the whole row, 14 x 2,
    # is kept for pre-packed panels; over weights the schedule packs itself it measured 2x
    # slower on a 3x3 conv).
    assert "W.packed" in text
    rows = space["default"]["conv"]["tile_rows"]
    if tvm._core.host_cpu_features().get("avx512f"):
        assert rows == 7
    block = text[text.index("allocate conv.local") :]
    assert f"allocate conv.local[float32 * 1 * 1 * {rows} * " in text
    assert "conv.local[ramp(0i64, 1i64, " in block
    assert "max((conv.local[" in block
    assert "parallel (" in text[: text.index("allocate conv.local")]
    x, w, b = rand(1, 16, 14, 14), rand(32, 16, 3, 3), rand(32)
    (y,) = run(s, args, [x, w, b])
    np.testing.assert_allclose(y, conv_reference(x, w, b, 1, 1), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize(
    "shape",
    [(1, 3, 9, 9, 16, 3, 3, 1, 1), (2, 8, 11, 13, 24, 3, 3, 2, 1), (1, 5, 6, 6, 17, 1, 1, 1, 0)],
)
def test_conv_odd_shapes(shape):
    n, c, h, w_, o, kh, kw, stride, pad = shape
    args = conv_bias_relu(*shape)
    x, w, b = rand(n, c, h, w_), rand(o, c, kh, kw), rand(o)
    (y,) = run(tvm.auto_schedule(args[-1]), args, [x, w, b])
    np.testing.assert_allclose(y, conv_reference(x, w, b, stride, pad), rtol=1e-3, atol=1e-3)


def test_whole_tensor_sum_is_split_into_parallel_parts():
    A = tvm.placeholder((300, 517), name="A")
    r0 = tvm.reduce_axis((0, 300), name="r0")
    r1 = tvm.reduce_axis((0, 517), name="r1")
    S = tvm.compute((1,), lambda i: tvm.sum(A[r0, r1], axis=[r0, r1]), name="S")
    s = tvm.auto_schedule(S)
    text = str(tvm.lower(s, [A, S]))
    assert "S.rf" in text and "parallel (" in text
    # Small integers: every partial sum is exact in float32 whatever the parallel split, so the
    # check is exact (a rtol on a cancelling sum of normals was flaky under load).
    a = rng.integers(-8, 8, size=(300, 517)).astype("float32")
    (out,) = run(s, [A, S], [a])
    assert out[0] == a.astype(np.int64).sum()


def test_row_sum_uses_vector_accumulators():
    A = tvm.placeholder((64, 1000), name="A")
    r = tvm.reduce_axis((0, 1000), name="r")
    S = tvm.compute((64,), lambda i: tvm.sum(A[i, r], axis=r), name="S")
    s = tvm.auto_schedule(S)
    text = str(tvm.lower(s, [A, S]))
    assert "S.rf[ramp(" in text  # the lanes of the accumulator are one vector
    a = rand(64, 1000)
    (out,) = run(s, [A, S], [a])
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("symbolic", [False, True])
def test_whole_sum_of_a_vector_is_vectorized_and_as_accurate_as_numpy(symbolic):
    # The parallel parts of a vector's sum read A[part * chunk + k]: contiguous in k, so they
    # take vector accumulators (a scalar chain of 65536 adds per part before: 10x slower and
    # 1e-6 off for 2**20 floats), and each accumulator adds blocks of 256 steps in a fresh
    # vector before its total (a two-level cascade, as Inductor's sums): within a few float32
    # roundings of the exact sum, as NumPy's pairwise sum is (1e-5 relative for 2**24 before).
    n_value = 1 << 22
    n = tvm.var("n") if symbolic else n_value
    A = tvm.placeholder((n,), name="A")
    S = topi.sum(A)
    s = tvm.auto_schedule(S)
    text = str(tvm.lower(s, [A, S]))
    assert "ramp(" in text  # vector accumulators
    rules = tvm.auto_schedule_space(S)["rules"]
    assert "cascade_sum" in rules.values()
    a = np.random.default_rng(0).random(n_value, dtype=np.float32)
    out = np.empty((), "float32")
    tvm.build(s, [A, S])(a, out)
    exact = a.astype(np.float64).sum()
    assert abs(float(out) - exact) <= 8 * np.finfo(np.float32).eps * exact
    assert abs(float(out) - exact) <= 4 * abs(float(a.sum()) - exact) + 2e-7 * exact


def test_short_rows_take_no_cascade():
    # softmax-length rows: a lane's chain is a few steps, nothing to cut
    A = tvm.placeholder((64, 768), name="A")
    assert "cascade_sum" not in tvm.auto_schedule_space(topi.sum(A, axis=1))["rules"].values()


def test_long_contiguous_reductions_use_several_accumulator_vectors():
    # A max over 1024 contiguous elements: eight vectors of partial maxima (not one chain of
    # dependent vmaxps and NaN fix-ups: two instructions a step, so twice a sum's four chains;
    # 1024 holds two steps of 8 vectors of 8 or 16 lanes); a whole-tensor sum's parallel parts
    # get four, its contiguous axis innermost although rfactor leaves the parts' inner axis
    # last. NaN still wins, wherever it is.
    A = tvm.placeholder((6, 1024), name="A")
    M = topi.max(A, axis=1)
    s = tvm.auto_schedule(M)
    assert tvm.auto_schedule_space(M)["default"][M.op.name]["accumulator_vectors"] == 8
    a = rand(6, 1024)
    a[2, 700] = np.nan
    a[4, 3] = np.nan
    (out,) = run(s, [A, M], [a])
    np.testing.assert_array_equal(out, a.max(axis=1))

    B = tvm.placeholder((8, 64, 768), name="B")
    S = topi.sum(B)
    s = tvm.auto_schedule(S)
    assert tvm.auto_schedule_space(S)["default"][S.op.name + ".rf"]["accumulator_vectors"] == 4
    b = rng.integers(-8, 8, size=(8, 64, 768)).astype("float32")
    (out,) = run(s, [B, S], [b])
    assert out.item() == b.astype(np.int64).sum()


def test_symbolic_shapes_are_scheduled_correctly():
    m, n, k = tvm.var("m"), tvm.var("n"), tvm.var("k")
    A = tvm.placeholder((m, k), name="A")
    B = tvm.placeholder((k, n), name="B")
    r = tvm.reduce_axis((0, k), name="r")
    C = tvm.compute((m, n), lambda i, j: tvm.sum(A[i, r] * B[r, j], axis=r), name="C")
    E = tvm.compute((m, n), lambda i, j: tvm.exp(C[i, j] * 0.01), name="E")
    f = tvm.build(tvm.auto_schedule(E), [A, B, E])
    for M, N, K in [(1, 1, 1), (13, 37, 5), (64, 48, 70)]:
        a, b = rand(M, K), rand(K, N)
        e = np.zeros((M, N), "float32")
        f(a, b, e)
        np.testing.assert_allclose(e, np.exp((a @ b) * 0.01), rtol=1e-4, atol=1e-5)


# ---- the configuration space ----------------------------------------------------------------


def test_config_round_trip_through_json():
    args, _ = matmul_relu(96, 64, 48)
    space = tvm.auto_schedule_space(args[-1])
    assert space["rules"]["C"] == "tiled_reduction"
    knobs = space["knobs"]["C"]
    for knob in ("tile_rows", "tile_vectors", "pack", "parallel_depth", "fuse_epilogue"):
        assert space["default"]["C"][knob] in knobs[knob]
    point = json.loads(json.dumps(space["default"]))
    default_text = str(tvm.lower(tvm.auto_schedule(args[-1]), args))
    replayed_args, _ = matmul_relu(96, 64, 48)
    replayed = str(tvm.lower(tvm.auto_schedule(replayed_args[-1], config=point), replayed_args))
    assert replayed == default_text


@pytest.mark.parametrize(
    "change",
    [
        {"tile_rows": 3, "tile_vectors": 1},
        {"pack": 0, "fuse_epilogue": 0},
        {"streamed_outer": 0, "parallel_depth": 0},
        {"unroll_reduce": 1, "tile_rows": 12},
        {"row_block": 2},  # 7 row tiles in blocks of 2: the last block is partial
        {"pack_rows": 1, "tile_rows": 6},  # 50 rows: the last tile reads the zero padding
        {"pack_rows": 1, "tile_rows": 5, "fuse_epilogue": 0, "streamed_outer": 0},
        {"pack_rows": 1, "tile_rows": 3, "row_block": 2, "pack": 0},
    ],
)
def test_every_point_computes_the_same_values(change):
    args, _ = matmul_relu(50, 40, 30)
    a, b, bias = rand(50, 30), rand(30, 40), rand(40)
    knobs = tvm.auto_schedule_space(args[-1])["knobs"]["C"]
    change = {k: v for k, v in change.items() if v in knobs[k]}
    assert change
    (d,) = run(tvm.auto_schedule(args[-1], config={"C": change}), args, [a, b, bias])
    np.testing.assert_allclose(d, np.maximum(a @ b + bias, 0), rtol=1e-4, atol=1e-4)


def test_packed_rows_compute_the_last_partial_tile_unguarded():
    A = tvm.placeholder((50, 30), name="A")
    B = tvm.placeholder((30, 64), name="B")
    k = tvm.reduce_axis((0, 30), name="k")
    C = tvm.compute((50, 64), lambda i, j: tvm.sum(A[i, k] * B[k, j], axis=k), name="C")
    a, b = rand(50, 30), rand(30, 64)
    for pack_rows in (0, 1):
        s = tvm.auto_schedule(C, config={"C": {"pack_rows": pack_rows, "tile_rows": 6}})
        text = str(tvm.lower(s, [A, B, C]))
        # The reduction loop and everything in it: guarded per row only without packed rows.
        block = text[text.index("for (k") :].split("\n  }", 1)[0]
        assert ("if (" in block) == (pack_rows == 0)
        assert ("A.packed" in text) == (pack_rows == 1)
        (c,) = run(s, [A, B, C], [a, b])
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "change",
    [
        {"pack_inner": 1},
        {"pack_inner": 0},
        {"k_block": 64},
        {"k_block": 128, "pack_inner": 1},
        {"k_block": 64, "pack_inner": 1, "pack_rows": 1, "fuse_epilogue": 0},
        {"k_block": 128, "pack": 0, "tile_vectors": 1},
    ],
)
def test_panel_high_block_points_compute_the_same_values(change):
    # 64 rows (tiles of 8 by default), a reduction of 256 (blocks of 64 or 128), 48 columns:
    # the last panel of 32 is partly zero padding.
    args, _ = matmul_relu(64, 48, 256)
    a, b, bias = rand(64, 256), rand(256, 48), rand(48)
    knobs = tvm.auto_schedule_space(args[-1], config={"C": change})["knobs"]["C"]
    for knob, value in change.items():
        assert value in knobs[knob], (knob, knobs[knob])
    s = tvm.auto_schedule(args[-1], config={"C": change})
    if change.get("k_block") or change.get("pack_inner"):
        # The block is a panel high, computed in the parallel loop over panels.
        text = str(tvm.lower(s, args))
        assert "allocate C.local[float32 * 64 * " in text
        assert text.index("parallel (") < text.index("allocate C.local")
    (d,) = run(s, args, [a, b, bias])
    np.testing.assert_allclose(d, np.maximum(a @ b + bias, 0), rtol=1e-4, atol=1e-4)


def test_large_weight_is_packed_one_panel_at_a_time_inside_the_panel_loop():
    # A dense layer whose streamed operand is out of cache, with a reduction longer than the
    # rows: 512 x 1024 activations against a 1.5 MiB weight (384 x 1024) stream the activations
    # (see the test below), packed inside the parallel loop over their panels (never whole),
    # 6 x 4 tiles over the 384 weight rows; streaming the weight instead, the weight is packed
    # that way, with 8 x 2 tiles (6 does not divide 512). SGEMM 1024^3, as long as it is high,
    # packs each panel at the panel loop instead, with tile-sized accumulators (value 2).
    from pytvmbridge import topi

    X = tvm.placeholder((512, 1024), name="X")
    W = tvm.placeholder((384, 1024), name="W")
    dense = topi.nn.dense(X, W)
    point = tvm.auto_schedule_space(dense)["default"]["T_dense"]
    assert (point["pack_inner"], point["vector_axis"]) == (1, 0)
    if tvm._core.host_cpu_features().get("avx512f"):
        assert (point["tile_rows"], point["tile_vectors"]) == (6, 4)
    x = rand(512, 1024)
    w = rand(384, 1024)

    def packed_inside_the_one_parallel_loop(config, packed):
        s = tvm.auto_schedule(dense, config=config)
        text = str(tvm.lower(s, [X, W, dense]))
        assert text.index("parallel (") < text.index(f"allocate {packed}[float32 * 1 * 1024 * ")
        assert text.count("parallel (") == 1
        (y,) = run(s, [X, W, dense], [x, w])
        np.testing.assert_allclose(y, x @ w.T, rtol=1e-3, atol=1e-3)

    packed_inside_the_one_parallel_loop(None, "X.packed")
    config = {"T_dense": {"vector_axis": 1}}
    assert tvm.auto_schedule_space(dense, config=config)["default"]["T_dense"]["pack_inner"] == 1
    packed_inside_the_one_parallel_loop(config, "W.packed")
    A = tvm.placeholder((1024, 1024), name="A")
    B = tvm.placeholder((1024, 1024), name="B")
    mm = topi.matmul(A, B)
    assert tvm.auto_schedule_space(mm)["default"]["T_matmul"]["pack_inner"] == 2


@pytest.mark.skipif(
    not tvm._core.host_cpu_features().get("avx512f"), reason="the 6 x 4 tile is AVX-512's"
)
def test_untransposed_operand_out_of_cache_keeps_the_wide_tile():
    # matmul's b held (K, N) and out of cache (2 MiB), a reduction longer than the 64 rows,
    # which 6 does not divide: the 6 x 4 tile stays (the last row tile peeled) and b is packed
    # one panel at a time at the panel loop (pack_inner 2). A dense weight in this place (packed
    # with a transpose) keeps the 8 x 2 tile packing inside the loop (the test above).
    from pytvmbridge import topi

    A = tvm.placeholder((64, 512), name="A")
    B = tvm.placeholder((512, 1024), name="B")
    C = topi.matmul(A, B)
    point = tvm.auto_schedule_space(C)["default"]["T_matmul"]
    assert (point["tile_rows"], point["tile_vectors"], point["pack_inner"]) == (6, 4, 2)
    s = tvm.auto_schedule(C)
    text = str(tvm.lower(s, [A, B, C]))
    assert text.index("parallel (") < text.index("allocate B.packed[float32 * 1 * 512 * 64]")
    a, b = rand(64, 512), rand(512, 1024)
    (c,) = run(s, [A, B, C], [a, b])
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize(
    "shape, change",
    [
        ((1024, 1024, 256), {}),  # rows the 6 x 4 tile does not divide: the last tile peeled
        ((100, 200, 96), {"pack_inner": 2}),  # last panel partly zero padding
        ((100, 200, 96), {"pack_inner": 2, "parallel_depth": 0}),
        ((64, 512, 64), {"pack_inner": 2, "tile_rows": 3, "tile_vectors": 1}),
    ],
)
def test_panel_packed_at_the_panel_loop_computes_the_same_values(shape, change):
    # "pack_inner" 2: each panel of the streamed operand is packed inside the (parallel) loop
    # over panels, just before its row tiles, which keep tile-sized accumulators; no separate
    # packing pass, no panel-high block.
    from pytvmbridge import topi

    m, n, k = shape
    A = tvm.placeholder((m, k), name="A")
    B = tvm.placeholder((k, n), name="B")
    mm = topi.matmul(A, B)
    point = tvm.auto_schedule_space(mm, config={"T_matmul": change})["default"]["T_matmul"]
    assert point["pack_inner"] == 2
    s = tvm.auto_schedule(mm, config={"T_matmul": change})
    text = str(tvm.lower(s, [A, B, mm]))
    assert text.count("parallel (") == (0 if change.get("parallel_depth") == 0 else 1)
    # One panel at a time (never the whole operand), allocated inside the loop over panels.
    assert f"allocate B.packed[float32 * 1 * {k} * " in text
    assert text.index("for (i.outer") > text.index("allocate B.packed")
    assert f"allocate T_matmul.local[float32 * {m} * " not in text  # tile-sized, not panel-high
    a, b = rand(m, k), rand(k, n)
    (c,) = run(s, [A, B, mm], [a, b])
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("shape", [(2, 16, 9, 9, 48, 3, 3, 1, 1), (1, 8, 15, 15, 40, 3, 3, 2, 1)])
def test_conv_with_its_weight_packed_at_the_panel_loop(shape):
    # Not a default for a convolution whose weight stays in cache (the test below), but a point
    # the tuner may take: the panel of weights (output channels, padded past 48 or 40) packed
    # per panel iteration.
    n, c, h, w_, o, kh, kw, stride, pad = shape
    args = conv_bias_relu(*shape)
    assert tvm.auto_schedule_space(args[-1])["default"]["conv"]["pack_inner"] == 0
    config = {"conv": {"streamed_outer": 1, "pack_inner": 2}}
    s = tvm.auto_schedule(args[-1], config=config)
    text = str(tvm.lower(s, args))
    assert text.index("parallel (") < text.index("allocate W.packed")
    x, w, b = rand(n, c, h, w_), rand(o, c, kh, kw), rand(o)
    (y,) = run(s, args, [x, w, b])
    np.testing.assert_allclose(y, conv_reference(x, w, b, stride, pad), rtol=1e-3, atol=1e-3)


def test_windowed_conv_with_a_weight_out_of_cache_packs_it_at_the_panel_loop():
    # A 3 x 3 convolution whose weight (256 x 160 x 3 x 3, 1.4 MiB) does not stay in cache packs
    # each panel of it at the panel loop by default (no separate pass writing the whole copy
    # to memory on every call); a 1 x 1 window with as large a weight keeps the separate pass.
    windowed = conv_bias_relu(1, 160, 7, 7, 256, 3, 3, 1, 1)
    assert tvm.auto_schedule_space(windowed[-1])["default"]["conv"]["pack_inner"] == 2
    s = tvm.auto_schedule(windowed[-1])
    text = str(tvm.lower(s, windowed))
    assert text.count("parallel (") == 1
    assert text.index("parallel (") < text.index("allocate W.packed")
    x, w, b = rand(1, 160, 7, 7), rand(256, 160, 3, 3), rand(256)
    (y,) = run(s, windowed, [x, w, b])
    np.testing.assert_allclose(y, conv_reference(x, w, b, 1, 1), rtol=1e-3, atol=1e-3)
    pointwise = conv_bias_relu(1, 1440, 7, 7, 256, 1, 1, 1, 0)
    assert tvm.auto_schedule_space(pointwise[-1])["default"]["conv"]["pack_inner"] == 0


def test_batch_matmul_packs_each_heads_panel_in_the_parallel_loop():
    # QK^T of 12 heads (128 x 64 each): 48 (head, panel) iterations, each packing its 64 x 32
    # slice of K (a transposing gather) right before its 16 row tiles read it.
    from pytvmbridge import topi

    Q = tvm.placeholder((12, 128, 64), name="Q")
    K = tvm.placeholder((12, 128, 64), name="K")
    bmm = topi.nn.batch_matmul(Q, K)
    assert tvm.auto_schedule_space(bmm)["default"]["T_batch_matmul"]["pack_inner"] == 2
    s = tvm.auto_schedule(bmm)
    text = str(tvm.lower(s, [Q, K, bmm]))
    assert text.count("parallel (") == 1
    assert text.index("parallel (") < text.index("allocate K.packed[float32 * 1 * 1 * 64 * ")
    q, kk = rand(12, 128, 64), rand(12, 128, 64)
    (c,) = run(s, [Q, K, bmm], [q, kk])
    np.testing.assert_allclose(c, q @ kk.transpose(0, 2, 1), rtol=1e-3, atol=1e-3)


def test_dense_streams_the_smaller_operand_when_both_hold_the_reduction_contiguous():
    # x @ w.T with both operands contiguous along the reduction: whichever is streamed is packed
    # with a transpose, the other read in place. A BERT layer at batch 1 (128 x 768 activations,
    # a 3072 x 768 weight) packs the activations (vector axis 0: the rows of x) and takes the
    # 6 x 4 tile over the weight's rows, which it divides; the weight is never copied.
    from pytvmbridge import topi

    X = tvm.placeholder((128, 768), name="X")
    W = tvm.placeholder((3072, 768), name="W")
    b = tvm.placeholder((3072,), name="b")
    dense = topi.nn.dense(X, W, b)
    space = tvm.auto_schedule_space(dense)
    point = space["default"]["T_dense"]
    assert point["vector_axis"] == 0 and space["knobs"]["T_dense"]["vector_axis"] == [0, 1]
    if tvm._core.host_cpu_features().get("avx512f"):
        assert (point["tile_rows"], point["tile_vectors"]) == (6, 4)
    s = tvm.auto_schedule(dense)
    text = str(tvm.lower(s, [X, W, b, dense]))
    assert "X.packed" in text and "W.packed" not in text
    x, w, bias = rand(128, 768), rand(3072, 768), rand(3072)
    expected = x @ w.T + bias
    (y,) = run(s, [X, W, b, dense], [x, w, bias])
    np.testing.assert_allclose(y, expected, rtol=1e-3, atol=1e-3)
    # The other choice stays in the space (the weight streamed, packed panel by panel).
    s = tvm.auto_schedule(dense, config={"T_dense": {"vector_axis": 1}})
    text = str(tvm.lower(s, [X, W, b, dense]))
    assert "W.packed" in text and "X.packed" not in text
    (y,) = run(s, [X, W, b, dense], [x, w, bias])
    np.testing.assert_allclose(y, expected, rtol=1e-3, atol=1e-3)
    # A weight larger than the activations (batch 8) stays the streamed operand.
    X8 = tvm.placeholder((1024, 768), name="X")
    W8 = tvm.placeholder((768, 768), name="W")
    point = tvm.auto_schedule_space(topi.nn.dense(X8, W8))["default"]["T_dense"]
    assert point["vector_axis"] == 1


def test_wide_matrix_product_takes_a_tile_of_four_vectors_with_panel_parallel_loops():
    # 1024 rows read by 16 panels of 4 AVX-512 vectors: tiles of 6 rows (4 x 3 with AVX2's 16
    # registers), the rows read in place (packing them measured slower), and only the panel
    # loop parallel, so that the row tiles stay a serial loop whose last, partial tile
    # (1024 = 6 x 170 + 4) is peeled off instead of guarded in every tile.
    from pytvmbridge import topi

    A = tvm.placeholder((1024, 256), name="A")
    B = tvm.placeholder((256, 1024), name="B")
    mm = topi.matmul(A, B)
    point = tvm.auto_schedule_space(mm)["default"]["T_matmul"]
    assert point["pack_rows"] == 0
    assert point["parallel_depth"] == 1
    assert (point["tile_rows"], point["tile_vectors"]) in {(6, 4), (4, 3)}
    s = tvm.auto_schedule(mm)
    assert "A.packed" not in str(tvm.lower(s, [A, B, mm]))
    a, b = rand(1024, 256), rand(256, 1024)
    (c,) = run(s, [A, B, mm], [a, b])
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    # The packed rows stay in the space for the tuner, and compute the same product.
    config = {"T_matmul": {"pack_rows": 1, "pack_inner": 0, "parallel_depth": 2}}
    s = tvm.auto_schedule(mm, config=config)
    assert "A.packed" in str(tvm.lower(s, [A, B, mm]))
    (c,) = run(s, [A, B, mm], [a, b])
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    # A product with two such panels keeps the 8 x 2 tile (AVX-512) when few batches share the
    # threads; with 8 or more (BERT's 12 heads) it takes 6 x 4 too. 8 MiB of rows (read in
    # place) take 6 x 4 as well.
    q, k = rand(12, 128, 64), rand(12, 128, 64)
    for batches, wide in ((2, False), (12, True)):
        Q = tvm.placeholder((batches, 128, 64), name="Q")
        K = tvm.placeholder((batches, 128, 64), name="K")
        bmm = topi.nn.batch_matmul(Q, K)
        point = tvm.auto_schedule_space(bmm)["default"]["T_batch_matmul"]
        assert point["pack_rows"] == 0
        if tvm._core.host_cpu_features().get("avx512f"):
            assert (point["tile_vectors"] == 4) == wide, (batches, point)
        (out,) = run(tvm.auto_schedule(bmm), [Q, K, bmm], [q[:batches], k[:batches]])
        want = q[:batches] @ k[:batches].transpose(0, 2, 1)
        np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-3)
    big = topi.matmul(tvm.placeholder((2048, 1024), name="A"), tvm.placeholder((1024, 1024)))
    point = tvm.auto_schedule_space(big)["default"]["T_matmul"]
    assert point["pack_rows"] == 0
    assert (point["tile_rows"], point["tile_vectors"]) in {(6, 4), (4, 3)}


def test_prepacked_dense_panels_as_wide_as_the_tile_take_it():
    # pack_dense_weight's default panels are the host's tile width (64 floats with AVX-512):
    # the pre-packed layer (8 panels) then takes the 6 x 4 tile over its 100 rows (6 x 16 + 4,
    # the last tile peeled: only the panel loop parallel); 32-wide panels keep two vectors.
    from pytvmbridge.topi.nn.dense import DENSE_PACK_BLOCK, dense_pack_block

    avx512 = tvm._core.host_cpu_features().get("avx512f")
    assert DENSE_PACK_BLOCK == (64 if avx512 else 32)
    assert dense_pack_block(768) == DENSE_PACK_BLOCK
    assert (dense_pack_block(96), dense_pack_block(100)) == (32, 0)
    X = tvm.placeholder((100, 96), name="X")
    W = tvm.placeholder((512, 96), name="W")
    P = topi.nn.pack_dense_weight(W)
    assert int(P.shape[2]) == DENSE_PACK_BLOCK
    Wp = tvm.placeholder(P.shape, name="Wp")
    Y = topi.nn.dense_pack(X, Wp)
    point = tvm.auto_schedule_space(Y)["default"]["T_dense_pack"]
    if avx512:
        assert (point["tile_rows"], point["tile_vectors"], point["parallel_depth"]) == (6, 4, 1)
    x, w = rand(100, 96), rand(512, 96)
    (wp,) = run(tvm.create_schedule(P.op), [W, P], [w])
    np.testing.assert_array_equal(wp, w.reshape(-1, DENSE_PACK_BLOCK, 96).transpose(0, 2, 1))
    (y,) = run(tvm.auto_schedule(Y), [X, Wp, Y], [x, wp])
    np.testing.assert_allclose(y, x @ w.T, rtol=1e-3, atol=1e-3)
    Wn = tvm.placeholder((6, 96, 32), name="Wn")
    narrow = tvm.auto_schedule_space(topi.nn.dense_pack(X, Wn))["default"]["T_dense_pack"]
    assert narrow["tile_vectors"] == 32 // (16 if avx512 else 8)


def test_eight_row_dense_takes_narrow_panels():
    # 7 or 8 rows: 32-wide panels, whose 8 x 2 tile reads each panel once (the 64-wide panels'
    # 6 x 4 tile would read it twice); other row counts keep the host's block.
    from pytvmbridge.topi.nn.dense import DENSE_PACK_BLOCK, dense_pack_block

    assert [dense_pack_block(1024, rows) for rows in (7, 8)] == [32, 32]
    assert [dense_pack_block(1024, r) for r in (None, 1, 6, 9, 128)] == [DENSE_PACK_BLOCK] * 5
    assert dense_pack_block(1000, 8) == 0
    X = tvm.placeholder((8, 256), name="X")
    Wp = tvm.placeholder((512 // 32, 256, 32), name="Wp")
    Y = topi.nn.dense_pack(X, Wp)
    point = tvm.auto_schedule_space(Y)["default"]["T_dense_pack"]
    if tvm._core.host_cpu_features().get("avx512f"):
        assert (point["tile_rows"], point["tile_vectors"]) == (8, 2)
    x, w = rand(8, 256), rand(512, 256)
    wp = np.ascontiguousarray(w.reshape(16, 32, 256).transpose(0, 2, 1))
    (y,) = run(tvm.auto_schedule(Y), [X, Wp, Y], [x, wp])
    np.testing.assert_allclose(y, x @ w.T, rtol=1e-3, atol=1e-3)


def test_symbolic_row_count_keeps_row_tiles_serial():
    # A dynamic batch: only the panel loop is parallel, so lowering peels the last, partial
    # row tile off a guard-free main body (fused into the parallel loop, every row was tested).
    n = tvm.var("n")
    X = tvm.placeholder((n, 64), name="X")
    Wp = tvm.placeholder((4, 64, 32), name="Wp")
    B = tvm.placeholder((128,), name="B")
    Y = topi.nn.relu(topi.nn.dense_pack(X, Wp, B))
    point = tvm.auto_schedule_space(Y)["default"]["T_dense_pack"]
    assert point["tile_rows"] > 1 and point["parallel_depth"] == 1
    f = tvm.build(tvm.auto_schedule(Y), [X, Wp, B, Y])
    w, b = rand(128, 64), rand(128)
    wp = np.ascontiguousarray(w.reshape(4, 32, 64).transpose(0, 2, 1))
    for rows in (1, 7, 8, 13):
        x = rand(rows, 64)
        y = np.empty((rows, 128), "float32")
        f(x, wp, b, y)
        np.testing.assert_allclose(y, np.maximum(x @ w.T + b, 0), rtol=1e-4, atol=1e-4)


def test_bad_configs_are_value_and_type_errors():
    args, _ = matmul_relu(32, 32, 32)
    with pytest.raises(ValueError, match="knob 'tile_rows' is 999, which is not one of"):
        tvm.auto_schedule(args[-1], config={"C": {"tile_rows": 999}})
    with pytest.raises(ValueError, match="no stage 'nope'"):
        tvm.auto_schedule(args[-1], config={"nope": {}})
    with pytest.raises(ValueError, match="has no knob 'speed'"):
        tvm.auto_schedule(args[-1], config={"C": {"speed": 1}})
    with pytest.raises(TypeError, match="must be an int, found str"):
        tvm.auto_schedule(args[-1], config={"C": {"tile_rows": "8"}})
    with pytest.raises(TypeError, match="config must be a dict"):
        tvm.auto_schedule(args[-1], config=[1])


def test_a_scheduled_schedule_is_refused():
    args, C = matmul_relu(32, 32, 32)
    s = tvm.create_schedule(args[-1].op)
    s[C].split(C.op.axis[0], factor=4)
    with pytest.raises(ValueError, match="stage 'C' is already scheduled"):
        tvm.auto_schedule(s)


# ---- the default paths: @kernel and tc.define ------------------------------------------------


def test_kernel_and_tc_use_auto_schedule_by_default():
    @tvm.kernel
    def mm(A, B):
        k = tvm.reduce_axis((0, A.shape[1]), name="k")
        return tvm.compute(
            (A.shape[0], B.shape[1]), lambda i, j: tvm.sum(A[i, k] * B[k, j], axis=k), name="C"
        )

    naive = tvm.kernel(mm.fn, schedule=None)
    a, b = rand(37, 19), rand(19, 45)
    np.testing.assert_allclose(mm(a, b), a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(naive(a, b), a @ b, rtol=1e-4, atol=1e-4)
    auto_ll = mm.module_for(a, b).get_source("ll")
    naive_ll = naive.module_for(a, b).get_source("ll")
    assert "ptb_parallel_for" in auto_ll and "ptb_parallel_for" not in naive_ll

    src = "def mm(float(M, K) A, float(K, N) B) -> (C) { C(m, n) +=! A(m, r) * B(r, n) }"
    auto_tc = tvm.tc.define(src)
    naive_tc = tvm.tc.define(src, schedule=None)
    np.testing.assert_allclose(auto_tc(a, b), a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(naive_tc(a, b), a @ b, rtol=1e-4, atol=1e-4)
    assert "ptb_parallel_for" in auto_tc.module.get_source("ll")
    assert "ptb_parallel_for" not in naive_tc.module.get_source("ll")
    with pytest.raises(TypeError, match="schedule must be 'auto', None or a function"):
        tvm.tc.define(src, schedule="fast")


def test_strided_variant_is_compiled_on_first_strided_call():
    # build() compiles the variant for compact arrays only; the strided one comes with the
    # first strided call (also from several threads at once) and both give NumPy's values.
    import threading

    args, _ = matmul_relu(24, 20, 16)
    f = tvm.build(tvm.auto_schedule(args[-1]), args)
    source = f.get_source("ll")
    assert "@ptb.default_function_compact(" in source
    assert "@ptb.default_function(" not in source
    rng = np.random.default_rng(3)
    a = rng.standard_normal((24, 32), dtype="float32")[:, ::2]  # strided rows
    b = rng.standard_normal((16, 20), dtype="float32")
    bias = rng.standard_normal(20, dtype="float32")
    expected = np.maximum(a @ b + bias, 0.0)
    compact = np.zeros((24, 20), "float32")
    f(np.ascontiguousarray(a), b, bias, compact)
    np.testing.assert_allclose(compact, expected, rtol=1e-5, atol=1e-5)
    outs = [np.zeros((24, 20), "float32") for _ in range(4)]
    threads = [threading.Thread(target=f, args=(a, b, bias, o)) for o in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o in outs:
        np.testing.assert_allclose(o, expected, rtol=1e-5, atol=1e-5)


def test_unit_inner_axes_move_outside_the_vector_axis():
    # A pooled (8, 16, 1, 1) output: the injective rule vectorizes the channel axis, moving the
    # two unit axes outside it (not one scalar loop per image). (An odd image width pads its
    # rows to whole vectors and divides inside the sum's loop instead: 4x4 here.)
    from pytvmbridge import topi

    x = tvm.placeholder((8, 16, 4, 4), name="x")
    y = topi.nn.adaptive_avg_pool2d(x, (1, 1))
    s = tvm.auto_schedule([y])
    text = str(tvm.lower(s, [x, y]))
    assert "x16(16.0)" in text or "x8(16.0)" in text  # the division is vectorized
    data = np.random.default_rng(0).standard_normal((8, 16, 4, 4), dtype="float32")
    out = np.zeros((8, 16, 1, 1), "float32")
    tvm.build(s, [x, y])(data, out)
    np.testing.assert_allclose(out, data.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)


def test_loop_order_moves_the_fewest_bytes():
    # A 1x1 convolution of a large batch (weights of 32 KiB, input of 6 MiB): the image tiles go
    # outermost, each sweeping the cached weights. A BERT dense layer (weight 9 MiB) streaming
    # its weight: the weight's panels go outermost, each sweeping the activations; streaming its
    # activations (the default, see above): the weight's row tiles go outermost, each sweeping
    # the cached packed activations, so the weight is read once either way.
    from pytvmbridge import topi

    x = tvm.placeholder((8, 64, 56, 56), name="x")
    w = tvm.placeholder((128, 64, 1, 1), name="w")
    conv = topi.nn.conv2d(x, w, strides=2)
    assert tvm.auto_schedule_space(conv)["default"]["T_conv2d_nchw"]["streamed_outer"] == 0
    X = tvm.placeholder((128, 768), name="X")
    W = tvm.placeholder((3072, 768), name="W")
    dense = topi.nn.dense(X, W)
    streaming_w = tvm.auto_schedule_space(dense, config={"T_dense": {"vector_axis": 1}})
    assert streaming_w["default"]["T_dense"]["streamed_outer"] == 1
    assert tvm.auto_schedule_space(dense)["default"]["T_dense"]["streamed_outer"] == 0
    # The chosen order computes the reference's values.
    xs = np.random.default_rng(1).standard_normal((8, 64, 9, 9), dtype="float32")
    ws = np.random.default_rng(2).standard_normal((128, 64, 1, 1), dtype="float32")
    xp, wp = tvm.placeholder(xs.shape, name="x"), tvm.placeholder(ws.shape, name="w")
    small = topi.nn.conv2d(xp, wp, strides=2)
    out = np.zeros((8, 128, 5, 5), "float32")
    tvm.build(tvm.auto_schedule(small), [xp, wp, small])(xs, ws, out)
    ref = np.einsum("nchw,oc->nohw", xs[:, :, ::2, ::2], ws[:, :, 0, 0])
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_row_statistics_are_computed_inside_the_rows_loop():
    # softmax: the max and the sum of exponentials go inside the output's parallel loop over
    # rows, the max first (it is read by the sum too: compute_at accepts a second consumer
    # computed inside the same loop): one parallel loop does it all, each statistic a scalar per
    # row. Same values with and without (attach_rows = 0).
    x = tvm.placeholder((4, 33, 517), name="x")
    y = topi.nn.softmax(x)
    space = tvm.auto_schedule_space(y)
    assert space["rules"][y.op.name] == "row_group"
    text = str(tvm.lower(tvm.auto_schedule(y), [x, y]))
    assert text.count("parallel (") == 1
    body = text[text.index("parallel (") :]
    assert "allocate T_softmax_maxelem[float32 * 1 * 1]" in body  # one scalar per row
    assert body.index("allocate T_softmax_maxelem[") < body.index("allocate T_softmax_expsum[")
    assert "T_softmax_expsum.rf" in body
    a = rand(4, 33, 517)
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    ref = e / e.sum(axis=-1, keepdims=True)
    for config in (None, {y.op.name: {"attach_rows": 0}}):
        (out,) = run(tvm.auto_schedule(y, config=config), [x, y], [a])
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)

    # layer_norm: its sums (kept as (4, 33, 1)) are computed per row of the normalisation.
    g, b = tvm.placeholder((517,), name="g"), tvm.placeholder((517,), name="b")
    z = topi.nn.layer_norm(x, g, b, axis=-1)
    rules = tvm.auto_schedule_space(z)["rules"]
    assert rules[z.op.name] == "row_group"
    gv, bv = rand(517), rand(517)
    (out,) = run(tvm.auto_schedule(z), [x, g, b, z], [a, gv, bv])
    mean, var = a.mean(axis=-1, keepdims=True), a.var(axis=-1, keepdims=True)
    np.testing.assert_allclose(
        out, (a - mean) / np.sqrt(var + 1e-5) * gv + bv, rtol=1e-4, atol=1e-4
    )


def test_softmax_computes_each_exponential_once():
    # The sum of exp(x - max) and the output exp(x - max) * (1 / sum) compute the same
    # exponential: it becomes a row buffer (T_softmax_expsum.summand) computed once per element
    # inside the loop over rows, read by both; the maximum is computed inside the buffer's loop.
    # Same values with share_summand = 0 (an exp in each), attach_rows = 0 and the naive
    # schedule. (192 wide: whole vectors, so each statement is printed once, with no tail.)
    x = tvm.placeholder((3, 5, 192), name="x")
    y = topi.nn.softmax(x)
    rules = tvm.auto_schedule_space(y)["rules"]
    assert rules[y.op.name] == "row_group"
    assert rules["T_softmax_expsum.summand"] == "row_buffer"
    text = str(tvm.lower(tvm.auto_schedule(y), [x, y]))
    # every exponential is a store into the buffer
    exps = [line.strip() for line in text.splitlines() if "exp(" in line]
    assert exps and all(line.startswith("T_softmax_expsum.summand[") for line in exps)
    assert "allocate T_softmax_expsum.summand[float32 * 1 * 1 * 192]" in text
    alone = str(tvm.lower(tvm.auto_schedule(y, config={y.op.name: {"share_summand": 0}}), [x, y]))
    assert "summand" not in alone
    assert any("T_softmax_norm[" in line and "exp(" in line for line in alone.splitlines())
    a = rand(3, 5, 192) * 4
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    ref = e / e.sum(axis=-1, keepdims=True)
    naive = tvm.create_schedule(y.op)
    for s in (
        tvm.auto_schedule(y),
        tvm.auto_schedule(y, config={y.op.name: {"share_summand": 0}}),
        tvm.auto_schedule(y, config={y.op.name: {"attach_rows": 0}}),
        naive,
    ):
        (out,) = run(s, [x, y], [a])
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-7)

    # Written with the exponentials as a stage of their own (TVM's softmax): the stage is not
    # inlined into its two readers but computed once per row as well.
    m = topi.max(x, axis=-1, keepdims=True)
    ex = tvm.compute(x.shape, lambda i, j, k: tvm.exp(x[i, j, k] - m[i, j, 0]), name="ex")
    r = tvm.reduce_axis((0, 192), name="r")
    sm = tvm.compute((3, 5), lambda i, j: tvm.sum(ex[i, j, r], axis=r), name="sm")
    z = tvm.compute(x.shape, lambda i, j, k: ex[i, j, k] / sm[i, j], name="z")
    assert tvm.auto_schedule_space(z)["rules"]["ex"] == "row_buffer"
    text = str(tvm.lower(tvm.auto_schedule(z), [x, z]))
    assert all(line.strip().startswith("ex[") for line in text.splitlines() if "exp(" in line)
    (out,) = run(tvm.auto_schedule(z), [x, z], [a])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-7)

    # A sum over more elements than the output's rows hold is not shared (the buffer would be
    # read past its end): exp(x) / sum over all 192 columns, for the first 100 columns only.
    r = tvm.reduce_axis((0, 192), name="r")
    wide = tvm.compute((3, 5), lambda i, j: tvm.sum(tvm.exp(x[i, j, r]), axis=r), name="wide")
    part = tvm.compute((3, 5, 100), lambda i, j, k: tvm.exp(x[i, j, k]) / wide[i, j], name="part")
    assert not any("summand" in key for key in tvm.auto_schedule_space(part)["rules"])
    (out,) = run(tvm.auto_schedule(part), [x, part], [a])
    want = np.exp(a[:, :, :100]) / np.exp(a).sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-7)


def test_chained_row_statistics_are_computed_for_a_block_of_rows():
    # softmax's maximum is read by the exponentials (layer_norm's mean by its variance): the
    # statistics and the row buffer are computed for four rows (two where four do not divide
    # the row axis) before those rows' output, so that the rows' chains of dependent steps are
    # independent of each other. Values against NumPy with NaN, +inf and -inf rows, for every
    # block size, the naive schedule included.
    def softmax_ref(a):
        e = np.exp(a - a.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def log_softmax_ref(a):
        m = a.max(axis=-1, keepdims=True)
        return a - m - np.log(np.exp(a - m).sum(axis=-1, keepdims=True))

    for fn, ref, shape, block in (
        (topi.nn.softmax, softmax_ref, (2, 8, 160), 4),
        (topi.nn.log_softmax, log_softmax_ref, (3, 6, 200), 2),
    ):
        x = tvm.placeholder(shape, name="x")
        y = fn(x)
        assert tvm.auto_schedule_space(y)["default"][y.op.name]["row_block"] == block
        text = str(tvm.lower(tvm.auto_schedule(y), [x, y]))
        assert f"allocate T_softmax_maxelem[float32 * 1 * {block}]" in text
        assert f"allocate T_softmax_expsum[float32 * 1 * {block}]" in text
        a = rand(*shape) * 4
        a[0, 1, 7] = np.nan
        a[1, 2, 3] = np.inf
        a[1, 3, :] = -np.inf
        a[0, 4, 5] = -np.inf
        with np.errstate(invalid="ignore", divide="ignore"):
            want = ref(a.astype("float64"))
        schedules = [tvm.auto_schedule(y, config={y.op.name: {"row_block": b}}) for b in (1, 2, 4)]
        for s in [*schedules, tvm.create_schedule(y.op)]:
            (out,) = run(s, [x, y], [a])
            np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6, equal_nan=True)

    # layer_norm: 768-wide rows, four of them (12 KB) per block.
    x = tvm.placeholder((2, 8, 768), name="x")
    g, b = tvm.placeholder((768,), name="g"), tvm.placeholder((768,), name="b")
    z = topi.nn.layer_norm(x, g, b, axis=-1)
    assert tvm.auto_schedule_space(z)["default"][z.op.name]["row_block"] == 4
    a, gv, bv = rand(2, 8, 768), rand(768), rand(768)
    mean, var = a.mean(axis=-1, keepdims=True), a.var(axis=-1, keepdims=True)
    (out,) = run(tvm.auto_schedule(z), [x, g, b, z], [a, gv, bv])
    np.testing.assert_allclose(
        out, (a - mean) / np.sqrt(var + 1e-5) * gv + bv, rtol=1e-4, atol=1e-4
    )


def test_arg_reductions_compute_two_rows_maxima_before_their_index_searches():
    # argmax/argmin: the extreme values of two rows, then both rows' index searches (each row's
    # maximum is a chain its search waits for). NumPy's indices with NaN, +inf and -inf in
    # rows, for row blocks 1, 2 and 4 and the naive schedule; an odd row axis is not blocked.
    for fn, ref in ((topi.argmax, np.argmax), (topi.argmin, np.argmin)):
        x = tvm.placeholder((3, 6, 100), name="x")
        y = fn(x, axis=-1)
        assert tvm.auto_schedule_space(y)["default"][y.op.name]["row_block"] == 2
        text = str(tvm.lower(tvm.auto_schedule(y), [x, y]))
        assert f"allocate {y.op.name}_value[float32 * 1 * 2 * 1]" in text
        a = rand(3, 6, 100)
        a[0, 1, 40] = np.nan
        a[0, 1, 70] = np.nan
        a[1, 2, :] = -np.inf
        a[1, 3, :] = np.inf
        a[2, 4, 9] = np.inf
        a[2, 5, 11] = -np.inf
        schedules = [tvm.auto_schedule(y, config={y.op.name: {"row_block": b}}) for b in (1, 2, 4)]
        for s in [*schedules, tvm.create_schedule(y.op)]:
            (out,) = run(s, [x, y], [a])
            np.testing.assert_array_equal(out, ref(a, axis=-1))
        xo = tvm.placeholder((3, 5, 100), name="x")
        odd = fn(xo, axis=-1)
        text = str(tvm.lower(tvm.auto_schedule(odd), [xo, odd]))
        assert f"allocate {odd.op.name}_value[float32 * 1 * 1 * 1]" in text


def test_sum_over_an_outer_axis_reads_four_vectors_per_row():
    # mean over the middle axis of (2, 9, 128): the columns are reduced 64 at a time (four
    # vectors of one row per step of the reduce loop), 16 at a time when 64 does not divide.
    for cols in (128, 80):
        x = tvm.placeholder((2, 9, cols), name="x")
        m = topi.mean(x, axis=1)
        text = str(tvm.lower(tvm.auto_schedule(m), [x, m]))
        assert ("* 64) + 48)" in text) == (cols == 128)
        a = rand(2, 9, cols)
        (out,) = run(tvm.auto_schedule(m), [x, m], [a])
        np.testing.assert_allclose(out, a.mean(axis=1), rtol=1e-5, atol=1e-6)


def test_a_sums_elementwise_consumer_computes_it_in_its_own_loop():
    # mean over an outer axis: the division by the count computes each block of 64 column sums
    # in its own parallel loop (a 64-element buffer, no stored (4, 256) intermediate, no second
    # pass); a global average pool: each channel's sum (7-wide image rows added as vectors of
    # eight lanes) inside the division's loop. Same values with fuse_epilogue = 0 and the naive
    # schedule.
    x = tvm.placeholder((4, 64, 256), name="x")
    m = topi.mean(x, axis=1)
    sum_stage = m.op.input_tensors[0].op.name
    rules = tvm.auto_schedule_space(m)["rules"]
    assert rules[m.op.name] == "epilogue" and rules[sum_stage] == "reduction"
    text = str(tvm.lower(tvm.auto_schedule(m), [x, m]))
    assert text.count("parallel (") == 1 and text.index("parallel (") < text.index("allocate")
    assert f"allocate {sum_stage}[float32 * 1 * 64]" in text
    a = rand(4, 64, 256)
    cfg = {sum_stage: {"fuse_epilogue": 0}}
    for s in (tvm.auto_schedule(m), tvm.auto_schedule(m, config=cfg), tvm.create_schedule(m.op)):
        (out,) = run(s, [x, m], [a])
        np.testing.assert_allclose(out, a.mean(axis=1), rtol=1e-5, atol=1e-6)

    img = tvm.placeholder((4, 512, 7, 7), name="img")
    p = topi.nn.adaptive_avg_pool2d(img, 1)
    # the sum and the division are both named adaptive_pool_avg: keys #1 and #2
    pool_sum = p.op.input_tensors[0].op.name
    rules = tvm.auto_schedule_space(p)["rules"]
    assert rules[pool_sum + "#2"] == "epilogue" and rules[pool_sum + ".rf"] == "reduction_lanes"
    text = str(tvm.lower(tvm.auto_schedule(p), [img, p]))
    # a row of seven is one vector, padded to eight lanes (a tree of three steps per channel)
    assert text.count("parallel (") == 1 and "x8(0.0)" in text and "x4(0.0)" in text
    b = rand(4, 512, 7, 7)
    cfg = {pool_sum: {"fuse_epilogue": 0}}
    for s in (tvm.auto_schedule(p), tvm.auto_schedule(p, config=cfg), tvm.create_schedule(p.op)):
        (out,) = run(s, [img, p], [b])
        np.testing.assert_allclose(out, b.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)

    # a symbolic batch: the consumer's loops over batch and channels are fused to run in parallel
    n = tvm.var("n")
    y = tvm.placeholder((n, 32, 8, 8), name="y")
    m = topi.mean(y, axis=(2, 3))
    assert str(tvm.lower(tvm.auto_schedule(m), [y, m])).count("parallel (") == 1
    c = rand(3, 32, 8, 8)
    out = np.zeros((3, 32), "float32")
    tvm.build(tvm.auto_schedule(m), [y, m])(c, out)
    np.testing.assert_allclose(out, c.mean(axis=(2, 3)), rtol=1e-5, atol=1e-6)


def test_argmax_computes_the_maximum_inside_its_loop_over_rows():
    # argmax is two reductions: the maximum, then the first index holding it. The maximum is
    # computed inside the index search's parallel loop over rows (one pass over each row, the
    # second read from L1), not in a pass and a parallel region of its own. Same values with
    # attach_rows = 0 and with the naive schedule, ties included (the first index wins).
    x = tvm.placeholder((16, 9, 520), name="x")
    y = topi.argmax(x, axis=-1)
    text = str(tvm.lower(tvm.auto_schedule(y), [x, y]))
    assert text.count("parallel (") == 1
    loop = text[text.index("parallel (") :]
    assert "allocate x_argmax_value[" in loop
    assert tvm.auto_schedule_space(y)["default"][y.op.name]["attach_rows"] == 1
    a = np.random.default_rng(3).integers(-4, 4, size=(16, 9, 520)).astype("float32")
    for config in (None, {y.op.name: {"attach_rows": 0}}):
        naive, auto = naive_and_auto([x, y], [a], config=config)
        np.testing.assert_array_equal(auto[0], np.argmax(a, axis=-1))
        np.testing.assert_array_equal(naive[0], auto[0])
    # argmin over a middle axis and keepdims: the same rule, or none, with the same values.
    for axis, keep in ((1, True), (2, False), (0, False)):
        z = topi.argmin(x, axis=axis, keepdims=keep)
        naive, auto = naive_and_auto([x, z], [a])
        np.testing.assert_array_equal(auto[0], np.argmin(a, axis=axis, keepdims=keep))
        np.testing.assert_array_equal(naive[0], auto[0])


def test_small_window_reduction_takes_its_elementwise_consumer_in_its_loop():
    """A depthwise convolution in blocked channels (a 3x3 window per vector of channels)
    followed by bias and ReLU6: the window is computed inside the activation's loop."""
    X = tvm.placeholder((2, 3, 9, 9, 16), name="X")
    W = tvm.placeholder((3, 3, 3, 16), name="W")
    B = tvm.placeholder((3, 16), name="B")
    ry, rx = tvm.reduce_axis((0, 3), name="ry"), tvm.reduce_axis((0, 3), name="rx")
    D = tvm.compute(
        (2, 3, 7, 7, 16),
        lambda n, c, y, x, ci: tvm.sum(
            X[n, c, y + ry, x + rx, ci] * W[c, ry, rx, ci], axis=[ry, rx]
        ),
        name="dw",
    )
    Y = tvm.compute(
        D.shape,
        lambda n, c, y, x, ci: tvm.min(tvm.max(D[n, c, y, x, ci] + B[c, ci], 0.0), 6.0),
        name="act",
    )
    space = tvm.auto_schedule_space(Y)
    assert space["rules"]["dw"] == "reduction"
    assert space["rules"]["act"] == "epilogue"
    assert space["default"]["dw"]["fuse_epilogue"] == 1
    s = tvm.auto_schedule(Y)
    x, w, b = rand(2, 3, 9, 9, 16), rand(3, 3, 3, 16), rand(3, 16)
    (y,) = run(s, [X, W, B, Y], [x, w, b])
    windows = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))  # n c y x ci ry rx
    expected = np.einsum("ncyxiab,cabi->ncyxi", windows, w) + b[None, :, None, None, :]
    np.testing.assert_allclose(y, np.clip(expected, 0.0, 6.0), rtol=1e-4, atol=1e-4)


def test_group_norm_statistics_are_computed_per_group_inside_the_output_loop():
    # group_norm reads its statistics at [n, c // group_size, 0, 0]: the output's channel axis
    # is split by the group size and the statistics (the shift, then the sum and the sum of
    # squares in one pass, rule_reduction.cc's one_pass_moments) are computed inside the
    # parallel loop over (n, group); a short image row (41 wide here) is reduced as whole-row
    # lanes. Same values as PyTorch and the naive schedule, and with attach_rows = 0.
    torch = pytest.importorskip("torch")
    shape = (4, 12, 37, 41)
    x = tvm.placeholder(shape, name="x")
    g, b = tvm.placeholder((12,), name="g"), tvm.placeholder((12,), name="b")
    y = topi.nn.group_norm(x, g, b, num_groups=3)
    rules = tvm.auto_schedule_space(y)["rules"]
    assert rules[y.op.name] == "row_group"
    text = str(tvm.lower(tvm.auto_schedule(y), [x, g, b, y]))
    assert text.count("parallel (") == 1
    body = text[text.index("parallel (") :]
    assert "allocate T_group_norm_sqsum.shift[float32 * 1 * 1 * 1 * 1]" in body
    assert "allocate T_group_norm_sqsum.moments.v1[float32 * 1 * 1 * 1 * 1]" in body
    a, gv, bv = rand(*shape), rand(12), rand(12)
    ref = torch.nn.functional.group_norm(
        torch.from_numpy(a), 3, torch.from_numpy(gv), torch.from_numpy(bv)
    ).numpy()
    for config in (None, {y.op.name: {"attach_rows": 0}}):
        naive, auto = naive_and_auto([x, g, b, y], [a, gv, bv], config=config)
        np.testing.assert_allclose(auto[0], ref, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(naive[0], ref, rtol=1e-4, atol=1e-4)
    # one channel per group, and one group: the same rule, the same values
    for groups in (12, 1):
        y = topi.nn.group_norm(x, g, b, num_groups=groups)
        (out,) = run(tvm.auto_schedule(y), [x, g, b, y], [a, gv, bv])
        ref = torch.nn.functional.group_norm(
            torch.from_numpy(a), groups, torch.from_numpy(gv), torch.from_numpy(bv)
        ).numpy()
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


# ---- short image rows fused into whole vectors ------------------------------------------------


@pytest.mark.parametrize(
    "size, transposed, fused",
    [
        (56, False, True),  # 56 = 3.5 vectors per row; 56 * 56 = 196 whole vectors
        (28, False, True),
        (64, False, False),  # whole vectors already
        (56, True, False),  # x read as [n, c, w, h]: fusing would make every load a gather
    ],
)
def test_short_image_rows_fuse_into_whole_vectors(size, transposed, fused):
    import torch

    x = tvm.placeholder((2, 8, size, size), name="x")
    scale = tvm.placeholder((8,), name="scale")
    if transposed:
        y = tvm.compute(
            (2, 8, size, size), lambda n, c, h, w: x[n, c, w, h] * scale[c] + 1.0, name="y"
        )
    else:
        y = tvm.compute(
            (2, 8, size, size), lambda n, c, h, w: x[n, c, h, w] * scale[c] + 1.0, name="y"
        )
    s = tvm.auto_schedule([y])
    text = str(tvm.lower(s, [x, scale, y]))
    assert ("h.w.fused" in text) == fused
    assert ("fuse_rows" in tvm.auto_schedule_space([y])["knobs"]["y"]) == fused
    f = tvm.build(s, [x, scale, y])
    if fused:  # the compact function loads plain vectors, no gathers
        assert "vgather" not in f.get_source("asm")
    xi = torch.randn(2, 8, size, size)
    si = torch.randn(8)
    out = torch.empty(2, 8, size, size)
    f(xi, si, out)
    src = xi.transpose(2, 3) if transposed else xi
    torch.testing.assert_close(out, src * si.view(1, 8, 1, 1) + 1.0, rtol=1e-6, atol=1e-6)
    # A strided output (the generic function) computes the same through the fused index.
    wide = torch.empty(2, 8, size, size + 3)
    f(xi, si, wide[..., :size])
    torch.testing.assert_close(wide[..., :size], out, rtol=0, atol=0)


def test_batch_norm_image_rows_are_fused():
    import torch

    x = tvm.placeholder((1, 16, 56, 56), name="x")
    params = [tvm.placeholder((16,), name=n) for n in ("g", "b", "m", "v")]
    y = topi.nn.batch_norm(x, *params)[0]
    s = tvm.auto_schedule([y])
    assert "i2.i3.fused" in str(tvm.lower(s, [x, *params, y]))
    f = tvm.build(s, [x, *params, y])
    xi = torch.randn(1, 16, 56, 56)
    g, b, m = torch.randn(16), torch.randn(16), torch.randn(16)
    v = torch.rand(16) + 0.5
    out = torch.empty_like(xi)
    f(xi, g, b, m, v, out)
    ref = torch.nn.functional.batch_norm(xi, m, v, g, b, eps=1e-5)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_a_chain_of_stages_each_read_twice_is_not_inlined_into_one_exponential_tree():
    # exp(D) + sin(D) * t over 40 stages: inlining every stage would copy the first one 2**39
    # times into the output's expression (14 stages took seconds to build, 40 never finished);
    # stages whose inlined copies would pass a size limit are stored instead
    a = tvm.placeholder((16, 24), name="A")
    d = a
    for t in range(40):
        d = tvm.compute(
            d.shape,
            lambda i, j, d=d, t=t: tvm.exp(d[i, j] * 0.001) + tvm.sin(d[i, j]) * (0.01 * t),
            name=f"D{t}",
        )
    s = tvm.auto_schedule(d)
    text = str(tvm.lower(s, [a, d]))
    assert 0 < text.count("allocate") < 40, text[:2000]
    x = np.random.default_rng(0).random((16, 24)).astype("float32")
    want = x.astype("float64")
    for t in range(40):
        want = np.exp(want * 0.001) + np.sin(want) * (0.01 * t)
    (got,) = run(s, [a, d], [x])
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # Read once per stage, the chain is still one loop with no intermediate stored
    e = a
    for t in range(40):
        e = tvm.compute(e.shape, lambda i, j, e=e: tvm.exp(e[i, j] * 0.001), name=f"E{t}")
    assert "allocate" not in str(tvm.lower(tvm.auto_schedule(e), [a, e]))


def _symbolic_dense(outputs, reduction):
    """``topi.nn.dense`` over a symbolic row count ``n``, auto-scheduled, and its lowered text."""
    n = tvm.size_var("n")
    X = tvm.placeholder((n, reduction), name="X")
    W = tvm.placeholder((outputs, reduction), name="W")
    Y = topi.nn.dense(X, W)
    s = tvm.auto_schedule(Y)
    return (s, X, W, Y), str(tvm.lower(s, [X, W, Y]))


def _check_symbolic_dense(s, X, W, Y, rows_to_try, seed):
    """Build ``s`` and compare its product with NumPy's at each row count."""
    f = tvm.build(s, [X, W, Y])
    n_out, k = (int(d) for d in W.shape)
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n_out, k)).astype("float32")
    for rows in rows_to_try:
        x = rng.standard_normal((rows, k)).astype("float32")
        y = np.full((rows, n_out), np.nan, dtype="float32")
        f(x, w, y)
        np.testing.assert_allclose(y, x @ w.T, rtol=1e-4, atol=1e-4)


def test_dense_over_a_symbolic_row_count_vectorizes_the_weights_outputs():
    # A decode step's few rows against a 1000-word vocabulary: the symbolic row axis, vectorized
    # in masked tiles of 64 rows, took 2.7 ms for 2 rows (PyTorch 0.1 ms); the 1000 output
    # columns are vectorized instead (their last partial vector peeled), the weight packed
    dense, text = _symbolic_dense(1000, 128)
    assert "W.packed" in text and "X.packed" not in text, text
    _check_symbolic_dense(*dense, (1, 2, 67), seed=0)


def test_dense_with_fewer_outputs_than_a_vector_over_a_symbolic_row_count():
    # A classifier's 10 outputs over a dynamic batch: only the rows could be vectorized, in
    # tiles padded to 64 rows (0.11 ms for one row); the dot products are vectorized instead
    dense, text = _symbolic_dense(10, 512)
    assert "X.packed" not in text and "i.outer * 64" not in text, text
    _check_symbolic_dense(*dense, (1, 3, 70), seed=1)


def test_whole_row_tiles_of_a_symbolic_row_count_carry_no_row_guards():
    # The loop over whole tiles of 8 rows (0 .. n // 8) held a guard per row of the register
    # tile in the reduction (`i.outer * 8 + r < n`, true there): 8 branches per step of k
    # (full_tile_guards.cc); the partial tile after it keeps them
    dense, text = _symbolic_dense(512, 256)
    whole, partial = text.split("for (i.outer, floordiv(n, 8)")
    assert "for (i.outer, 0, floordiv(n, 8))" in whole, text
    assert "< n)" not in whole.split("for (i.outer, 0, floordiv(n, 8))")[1], text
    assert "< n)" in partial, text
    _check_symbolic_dense(*dense, (1, 8, 13, 64), seed=2)


@pytest.mark.parametrize("length", [1, 16, 17, 120, 4096, 5000])
def test_softmax_over_a_symbolic_row_length(length):
    # The row sum's blocks (4096 elements over a symbolic length) made bound inference ask the
    # row buffer of exponentials for 4096 of them per row, each masked vector computed: rows
    # of 120 took 13.5 ms for 96 x 120 rows. The buffer's loop now stops at the row's end.
    # The sum's loop over a block's 256 vectors stops there too (clamp_guarded_loops: it ran
    # 256 iterations per row, 248 of them testing and skipping), and the row's whole vectors
    # run without the lane mask the last one needs.
    m = tvm.size_var("m")
    X = tvm.placeholder((6, 5, m), name="X")
    S = topi.nn.softmax(X)
    s = tvm.auto_schedule(S)
    text = str(tvm.lower(s, [X, S]))
    assert "summand" in text and "min(" in text, text
    assert "for (k.outer.inner, 0, 256)" not in text, text
    assert "min(256, " in text and "floordiv(m, 16)" in text, text
    f = tvm.build(s, [X, S])
    x = np.random.default_rng(3).standard_normal((6, 5, length)).astype("float32")
    y = np.full_like(x, np.nan)
    f(x, y)
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_parallel_loop_fuses_at_most_two_symbolic_extents():
    # Each loop fused into the parallel one costs every iteration a division of the fused
    # index by its extent, by a symbolic one a real division: (batch, 4, height, width) of
    # symbolic sizes fuses the batch, channels and rows, and each row runs its own loop.
    n, h, w = tvm.size_var("n"), tvm.size_var("h"), tvm.size_var("w")
    X = tvm.placeholder((n, 4, h, w), name="X")
    Y = topi.nn.relu(X)
    s = tvm.auto_schedule(Y)
    text = str(tvm.lower(s, [X, Y]))
    first = next(line for line in text.splitlines() if line.startswith("parallel"))
    assert "int64(h)" in first and "w" not in first.split(",", 1)[1], first
    assert "for (i3.outer, 0, floordiv(w, " in text, text
    f = tvm.build(s, [X, Y])
    for shape in ((2, 4, 3, 37), (1, 4, 1, 1), (3, 4, 5, 16)):
        x = np.random.default_rng(0).standard_normal(shape).astype("float32")
        y = np.full_like(x, np.nan)
        f(x, y)
        np.testing.assert_array_equal(y, np.maximum(x, 0))
