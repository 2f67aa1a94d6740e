"""Software prefetch: the schedule primitive ``s[T].prefetch(tensor, var, offset)`` (TVM's), the
lowering pass that spreads the next iteration's region over the inner loops
(csrc/lower/prefetch_streams.cc), and the automatic scheduler's "prefetch" knob on plane blocks
of blocked convolutions. A prefetch is a hint: every check here is on values (against NumPy and
torch) with and without it, plus the IR where the decision is visible."""

import re

import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import te
from pytvmbridge.graph import layout
from pytvmbridge.graph.layout import channel_block, host_block

rng = np.random.default_rng(11)
LANES = host_block()
STAGE = "T_conv2d_NCHWc"


def _blocked_matmul(m: int, n: int, k: int, kb: int) -> tuple:
    """C = A @ B with the reduction split in blocks of kb, the blocks outermost: each block
    reads a contiguous [kb, n] slice of B (rows kb*o .. kb*o + kb - 1)."""
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    ro, ri = s[C].split(C.op.reduce_axis[0], factor=kb)
    s[C].reorder(ro, i, ri, j)
    return s, [A, B, C], ro


def _square_matmul(n: int) -> tuple:
    """topi.matmul of two n x n placeholders (SGEMM's panel pack at n >= 256), with inputs."""
    from pytvmbridge import topi

    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    a = rng.standard_normal((n, n)).astype("float32")
    b = rng.standard_normal((n, n)).astype("float32")
    return A, B, topi.matmul(A, B), a, b


def _check_product(f, m: int, n: int, k: int) -> None:
    """f(a, b, c) computes c = a @ b (against NumPy) on random inputs."""
    a = rng.standard_normal((m, k)).astype("float32")
    b = rng.standard_normal((k, n)).astype("float32")
    c = np.zeros((m, n), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def _llvm_prefetches(f) -> int:
    return len(re.findall(r"call void @llvm\.prefetch", f.get_source("ll")))


@pytest.mark.parametrize("offset", [1, 2])
def test_primitive_resolves_and_keeps_values(offset):
    m, n, k, kb = 24, 48, 64, 16
    s, args, ro = _blocked_matmul(m, n, k, kb)
    s[args[-1]].prefetch(args[1], ro, offset)
    text = str(tvm.lower(s, args))
    # The request sits at the top of the block loop; the compact build resolves it.
    assert f"prefetch(B[0i64], {offset}, 2)" in text
    f = tvm.build(s, args)
    assert _llvm_prefetches(f) >= 1
    _check_product(f, m, n, k)


def test_strided_arguments_run_without_prefetch():
    # The generic (strided) function never resolves a request: a transposed view of B goes
    # through it and still computes the product.
    m, n, k, kb = 8, 32, 32, 8
    s, args, ro = _blocked_matmul(m, n, k, kb)
    s[args[-1]].prefetch(args[1], ro)
    f = tvm.build(s, args)
    a = rng.standard_normal((m, k)).astype("float32")
    bt = rng.standard_normal((n, k)).astype("float32")
    c = np.zeros((m, n), "float32")
    f(a, bt.T, c)
    np.testing.assert_allclose(c, a @ bt.T, rtol=1e-4, atol=1e-4)


def test_primitive_errors_name_what_is_wrong():
    s, args, ro = _blocked_matmul(8, 16, 16, 4)
    C = args[-1]
    with pytest.raises(ValueError, match="offset must be a positive"):
        s[C].prefetch(args[1], ro, 0)
    other = te.placeholder((4,), name="other")
    D = te.compute((4,), lambda i: other[i] * 2.0, name="D")
    s2 = te.create_schedule([C.op, D.op])
    i = C.op.axis[0]
    with pytest.raises(ValueError, match="'other' is not read by this stage"):
        s2[C].prefetch(other, i)
    s2[C].split(i, factor=2)
    with pytest.raises(ValueError, match="already split or fused"):
        s2[C].prefetch(args[0], i)
    with pytest.raises(ValueError, match="not an axis of this stage"):
        s2[C].prefetch(args[0], D.op.axis[0])


def test_a_tensor_read_through_an_inlined_stage_can_be_prefetched():
    # R is read only by an elementwise stage inlined into C's loops (a residual added after a
    # product): its reads happen in C's loops, so C may prefetch it. Before, the primitive
    # looked only at the direct reader (the inlined stage) and refused.
    m, n, k, kb = 16, 32, 32, 8
    _, args, _ = _blocked_matmul(m, n, k, kb)
    A, B, C = args
    R = te.placeholder((m, n), name="R")
    E = te.compute((m, n), lambda i, j: C[i, j] + R[i, j], name="E")
    F = te.compute((m, n), lambda i, j: te.max(E[i, j], te.const(0.0, "float32")), name="F")
    s = te.create_schedule(F.op)
    s[E].compute_inline()
    io, _ = s[F].split(F.op.axis[0], factor=4)
    s[C].compute_at(s[F], io)
    s[F].prefetch(R, io, 1)
    s[F].prefetch(R, io, 1)  # a second request for the same region changes no value
    text = str(tvm.lower(s, [A, B, R, F]))
    assert "prefetch(R[0i64], 1, 2)" in text
    f = tvm.build(s, [A, B, R, F])
    assert _llvm_prefetches(f) >= 1
    a = rng.standard_normal((m, k)).astype("float32")
    b = rng.standard_normal((k, n)).astype("float32")
    r = rng.standard_normal((m, n)).astype("float32")
    out = np.zeros((m, n), "float32")
    f(a, b, r, out)
    np.testing.assert_allclose(out, np.maximum(a @ b + r, 0), rtol=1e-4, atol=1e-4)
    # Still refused when nothing inside the stage reads the tensor, inlined or not.
    other = te.placeholder((m, n), name="other")
    G = te.compute((m, n), lambda i, j: other[i, j] * 2.0, name="G")
    s2 = te.create_schedule([F.op, G.op])
    s2[E].compute_inline()
    with pytest.raises(ValueError, match="'other' is not read by this stage"):
        s2[F].prefetch(other, F.op.axis[0])


def _conv(cin: int, cout: int, size: int) -> tuple:
    """The graph's blocked 3x3 convolution (+ bias) on a blocked input."""
    b = channel_block(cout, LANES)
    with layout.blocking(LANES):
        xb = te.placeholder((1, cin // b, size, size, b), name="xb")
        w = te.placeholder((cout // b, cin, 3, 3, b), name="w")
        bias = te.placeholder((cout,), name="bias")
        y = layout.conv2d_nchwc(layout.unpack(xb), w, bias, (1, 1), (1, 1), (1, 1), 1, b)
        out = layout.blocked_source(y)
    return [xb, w, bias], out, b


@pytest.mark.parametrize("knob", [0, 1])
def test_plane_block_prefetches_the_next_weight_slice(knob):
    b = channel_block(8 * LANES, LANES)
    cin, cout, size = 4 * b, 8 * b, 7
    args, out, b = _conv(cin, cout, size)
    space = tvm.auto_schedule_space(out)
    assert space["default"][STAGE]["prefetch"] == 1
    assert space["knobs"][STAGE]["prefetch"] == [0, 1]
    s = tvm.auto_schedule(out, "llvm", {STAGE: {"prefetch": knob}})
    text = str(tvm.lower(s, [*args, out]))
    # The request is the first statement of the input-channel block loop.
    request = re.search(r"for \(rco, 0, 4\) {\n *prefetch\(w\[0i64\], 1, 2\)", text)
    assert (request is not None) == bool(knob)
    f = tvm.build(s, [*args, out])
    assert (_llvm_prefetches(f) > 0) == bool(knob)
    torch.manual_seed(3)
    x = torch.randn(1, cin, size, size)
    weight = torch.randn(cout, cin, 3, 3) / (cin * 9) ** 0.5
    bias = torch.randn(cout)
    packed_x = x.view(1, cin // b, b, size, size).permute(0, 1, 3, 4, 2).contiguous()
    packed_w = weight.view(cout // b, b, cin, 3, 3).permute(0, 2, 3, 4, 1).contiguous()
    blocked = torch.empty([int(d) for d in out.shape])
    f(packed_x, packed_w, bias, blocked)
    got = blocked.permute(0, 1, 4, 2, 3).reshape(1, cout, size, size)
    torch.testing.assert_close(got, torch.conv2d(x, weight, bias, 1, 1), rtol=1e-4, atol=1e-4)


def _dense_pack(m: int, k: int, n: int) -> tuple:
    from pytvmbridge import topi
    from pytvmbridge.topi.nn.dense import DENSE_PACK_BLOCK as width

    x = te.placeholder((m, k), name="x")
    wp = te.placeholder((n // width, k, width), name="wp")
    bias = te.placeholder((n,), name="bias")
    return [x, wp, bias], topi.nn.dense_pack(x, wp, bias), width


@pytest.mark.parametrize(
    "m, k, n, default",
    [
        (128, 3072, 768, 1),  # BERT's FFN2 at batch 1: 768 KB panels read by 22 row tiles
        (1024, 768, 768, 0),  # batch 8: each panel serves 171 row tiles from cache
        (128, 64, 128, 0),  # a weight that stays in cache
    ],
)
def test_dense_panel_prefetch_default_and_values(m, k, n, default):
    args, out, width = _dense_pack(m, k, n)
    stage = "T_dense_pack"
    space = tvm.auto_schedule_space(out)
    # (A product too small to share its panels among threads has no panel loop to prefetch on.)
    assert space["default"][stage].get("prefetch", 0) == default
    x = rng.standard_normal((m, k)).astype("float32")
    w = rng.standard_normal((n, k)).astype("float32")
    b = rng.standard_normal(n).astype("float32")
    wp = np.ascontiguousarray(w.reshape(n // width, width, k).transpose(0, 2, 1))
    offered = "prefetch" in space["knobs"][stage]
    for knob in space["knobs"][stage].get("prefetch", [0]):
        s = tvm.auto_schedule(out, config={stage: {"prefetch": knob}} if offered else None)
        text = str(tvm.lower(s, [*args, out]))
        # The request is on the parallel panel loop.
        assert bool(
            re.search(r"parallel \(\S+, 0, \d+\) {\n *prefetch\(wp\[0i64\], 1, 2\)", text)
        ) == (knob == 1)
        f = tvm.build(s, [*args, out])
        y = np.zeros((m, n), "float32")
        f(x, wp, b, y)
        np.testing.assert_allclose(y, x @ w.T + b, rtol=1e-4, atol=1e-4 * k**0.5)


def _doubled_operand_matmul(m: int, n: int, k: int) -> tuple:
    """C = A @ B2 with B2 = 2 B an intermediate stage (to move with compute_at), and inputs."""
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    B2 = te.compute((k, n), lambda r, j: B[r, j] * 2.0, name="B2")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B2[r, j], axis=r), name="C")
    a = rng.standard_normal((m, k)).astype("float32")
    b = rng.standard_normal((k, n)).astype("float32")
    return A, B, B2, C, a, b


def test_a_tensor_computed_inside_a_loop_is_refused_or_skipped():
    m, n, k = 8, 16, 16
    A, B, B2, C, a, b = _doubled_operand_matmul(m, n, k)
    # Refused when B2 is already computed inside C's loops...
    s = te.create_schedule(C.op)
    i = C.op.axis[0]
    s[B2].compute_at(s[C], i)
    with pytest.raises(ValueError, match="computed inside another stage's loops"):
        s[C].prefetch(B2, i)
    # ...and skipped (values unchanged) when it is moved there after the request.
    s = te.create_schedule(C.op)
    i = C.op.axis[0]
    s[C].prefetch(B2, i)
    s[B2].compute_at(s[C], i)
    assert "prefetch(" not in str(tvm.lower(s, [A, B, C]))
    f = tvm.build(s, [A, B, C])
    c = np.zeros((m, n), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ (2 * b), rtol=1e-4, atol=1e-4)


def test_panel_pack_prefetches_rows_ahead_with_the_knob():
    # SGEMM's panel pack reads 64 columns of each of B's rows (1 KB apart here); the knob (off by
    # default) prefetches the row 16 iterations ahead of the one being packed. Values against
    # NumPy either way.
    n = 256
    A, B, C, a, b = _square_matmul(n)
    stage = "T_matmul"
    space = tvm.auto_schedule_space(C)
    assert space["default"][stage]["prefetch"] == 0
    for knob in (0, 1):
        s = tvm.auto_schedule(C, config={stage: {"prefetch": knob}})
        request = r"for \(ax0, 0, 256\) {\n *prefetch\(B\[0i64\], 16, 2\)"
        assert (re.search(request, str(tvm.lower(s, [A, B, C]))) is None) == (knob == 0)
        f = tvm.build(s, [A, B, C])
        assert (_llvm_prefetches(f) > 0) == bool(knob)
        c = np.zeros((n, n), "float32")
        f(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)


def _knob_stage(y) -> str | None:
    """The stage whose knobs include "prefetch" in ``y``'s automatic schedule, if any."""
    knobs = tvm.auto_schedule_space([y])["knobs"]
    found = [stage for stage, ks in knobs.items() if "prefetch" in ks]
    return found[0] if found else None


@pytest.mark.parametrize(
    "op,batch,prefetched",
    [
        ("gelu", 8, True),  # 3 MB in and 3 MB out: from memory, math on every element
        ("sigmoid", 8, True),
        ("gelu", 1, False),  # 786 KB: stays in the cores' L2
        ("relu", 8, False),  # plain arithmetic keeps up with memory on its own
    ],
)
def test_math_on_data_from_memory_prefetches_its_input(op, batch, prefetched):
    shape = (batch, 128, 768)
    fn = {"gelu": tvm.topi.nn.gelu, "sigmoid": tvm.topi.sigmoid, "relu": tvm.topi.nn.relu}[op]
    ref = {
        "gelu": torch.nn.functional.gelu,
        "sigmoid": torch.sigmoid,
        "relu": torch.relu,
    }[op]
    x = te.placeholder(shape, name="x")
    y = fn(x)
    assert (_knob_stage(y) is not None) == prefetched
    s = tvm.auto_schedule([y])
    text = str(tvm.lower(s, [x, y]))
    # 2 KB ahead: the vector loop of 64 floats (256 B) runs inside the prefetching loop.
    assert ("prefetch(x[0i64], 8, 2)" in text) == prefetched
    f = tvm.build(s, [x, y])
    assert (_llvm_prefetches(f) > 0) == prefetched
    xi = torch.randn(*shape)
    out = torch.empty(*shape)
    f(xi, out)
    torch.testing.assert_close(out, ref(xi), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_rows_from_memory_are_prefetched_blocks_ahead(op):
    # (8, 12, 128, 128): 6 MB in and out. A block of four 512-byte rows per iteration of the
    # row-block loop, 4 KB ahead: two blocks. The rows' loops sit inside the allocations of the
    # block's statistics, beside other statements: the lowering must look through them to
    # spread the request (before it did, the request resolved to nothing here).
    x = te.placeholder((8, 12, 128, 128), name="x")
    y = getattr(tvm.topi.nn, op)(x, axis=-1)
    stage = _knob_stage(y)
    assert stage is not None
    s = tvm.auto_schedule([y])
    assert "prefetch(x[0i64], 2, 2)" in str(tvm.lower(s, [x, y]))
    f = tvm.build(s, [x, y])
    assert _llvm_prefetches(f) > 0
    xi = torch.randn(8, 12, 128, 128)
    out = torch.empty_like(xi)
    f(xi, out)
    torch.testing.assert_close(out, getattr(torch, op)(xi, -1), rtol=1e-5, atol=1e-6)
    # The knob off: no request, same values.
    s0 = tvm.auto_schedule([y], config={stage: {"prefetch": 0}})
    assert "prefetch(" not in str(tvm.lower(s0, [x, y]))
    f0 = tvm.build(s0, [x, y])
    out0 = torch.empty_like(xi)
    f0(xi, out0)
    torch.testing.assert_close(out0, out, rtol=0, atol=0)


def test_norm_rows_whose_statistics_are_sums_are_not_prefetched():
    # layer_norm at batch 8 streams 6 MB as softmax does, but its statistics are sums: the
    # block's instructions keep up with memory, and a prefetch measured no gain there.
    x = te.placeholder((8, 128, 768), name="x")
    g = te.placeholder((768,), name="g")
    b = te.placeholder((768,), name="b")
    y = tvm.topi.nn.layer_norm(x, g, b, axis=[-1])
    assert _knob_stage(y) is None
    s = tvm.auto_schedule([y])
    assert "prefetch(" not in str(tvm.lower(s, [x, g, b, y]))
    f = tvm.build(s, [x, g, b, y])
    xi, gi, bi = torch.randn(8, 128, 768), torch.randn(768), torch.randn(768)
    out = torch.empty_like(xi)
    f(xi, gi, bi, out)
    ref = torch.nn.functional.layer_norm(xi, (768,), gi, bi, eps=1e-5)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("level, instruction", [(1, "prefetcht0"), (2, "prefetcht1")])
def test_cache_level_picks_the_instruction(level, instruction):
    # Level 1 fetches into L1 (x86's prefetcht0), level 2 into L2 (prefetcht1); the request
    # keeps its level through lowering. Values against NumPy.
    m, n, k, kb = 24, 48, 64, 16
    s, args, ro = _blocked_matmul(m, n, k, kb)
    s[args[-1]].prefetch(args[1], ro, 1, cache_level=level)
    assert f"prefetch(B[0i64], 1, {level})" in str(tvm.lower(s, args))
    f = tvm.build(s, args)
    asm = f.get_source("asm")
    other = "prefetcht1" if level == 1 else "prefetcht0"
    assert instruction in asm and other not in asm
    _check_product(f, m, n, k)


def test_cache_level_other_than_1_or_2_is_a_value_error():
    s, args, ro = _blocked_matmul(8, 16, 32, 8)
    with pytest.raises(ValueError, match=r"cache_level must be 1 \(L1\) or 2 \(L2\), got 3"):
        s[args[-1]].prefetch(args[1], ro, 1, cache_level=3)


def test_a_tensor_computed_around_the_loop_can_be_prefetched():
    # B2 computed at C's row loop exists throughout the reduction inside it: a request on the
    # reduction loop is accepted and resolved; values unchanged.
    m, n, k = 8, 16, 64
    A, B, B2, C, a, b = _doubled_operand_matmul(m, n, k)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].reorder(i, C.op.reduce_axis[0], j)
    s[B2].compute_at(s[C], i)
    s[C].prefetch(B2, C.op.reduce_axis[0], 4, cache_level=1)
    assert "prefetch(B2[0i64], 4, 1)" in str(tvm.lower(s, [A, B, C]))
    f = tvm.build(s, [A, B, C])
    assert "prefetcht0" in f.get_source("asm")
    c = np.zeros((m, n), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ (2 * b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("m, k, n", [(96, 256, 128), (13, 200, 192)])
def test_dense_panels_prefetch_reduction_steps_into_l1(m, k, n):
    # "prefetch_steps": a pre-packed panel's row that many reduction steps ahead, into L1; on by
    # default (8 steps). Every candidate computes the same product (NumPy).
    args, out, width = _dense_pack(m, k, n)
    stage = "T_dense_pack"
    space = tvm.auto_schedule_space(out)
    assert space["default"][stage]["prefetch_steps"] == 8
    assert space["knobs"][stage]["prefetch_steps"] == [0, 4, 8, 16]
    x = rng.standard_normal((m, k)).astype("float32")
    w = rng.standard_normal((n, k)).astype("float32")
    b = rng.standard_normal(n).astype("float32")
    wp = np.ascontiguousarray(w.reshape(n // width, width, k).transpose(0, 2, 1))
    for steps in space["knobs"][stage]["prefetch_steps"]:
        s = tvm.auto_schedule(out, config={stage: {"prefetch_steps": steps}})
        text = str(tvm.lower(s, [*args, out]))
        assert (f"prefetch(wp[0i64], {steps}, 1)" in text) == (steps > 0)
        f = tvm.build(s, [*args, out])
        assert ("prefetcht0" in f.get_source("asm")) == (steps > 0)
        y = np.zeros((m, n), "float32")
        f(x, wp, b, y)
        np.testing.assert_allclose(y, x @ w.T + b, rtol=1e-4, atol=1e-4 * k**0.5)


def test_panel_pack_offers_reduction_steps_off_by_default():
    # A panel packed at the panel loop (SGEMM's) is offered the L1 prefetch of its own copy,
    # off by default; with it on, the request on the packed copy resolves and the product is
    # unchanged.
    n = 512
    A, B, C, a, b = _square_matmul(n)
    stage = "T_matmul"
    space = tvm.auto_schedule_space(C)
    assert space["default"][stage]["pack_inner"] == 2  # packed at the panel loop
    assert space["default"][stage]["prefetch_steps"] == 0
    for steps in (0, 8):
        s = tvm.auto_schedule(C, config={stage: {"prefetch_steps": steps}})
        f = tvm.build(s, [A, B, C])
        assert ("prefetcht0" in f.get_source("asm")) == (steps > 0)
        c = np.zeros((n, n), "float32")
        f(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)


def _loop_with(asm: str, instruction: str) -> list[str]:
    """The instructions of the innermost loop of ``asm`` that contains ``instruction``: from
    the label before it to the first conditional jump back after it."""
    lines = asm.splitlines()
    at = next(i for i, line in enumerate(lines) if instruction in line)
    start = max(i for i in range(at + 1) if lines[i].startswith(".LBB"))
    label = lines[start].split(":")[0]
    end = next(i for i in range(at, len(lines)) if lines[i].strip().endswith(label))
    return [line for line in lines[start + 1 : end + 1] if line.startswith("\t")]


def test_prefetch_in_an_accumulating_loop_keeps_the_block_in_registers():
    # A 1x1 convolution's register block (5 rows x 2 vectors) is read back after its reduction
    # loop by the transposing epilogue, so it stays a buffer; LICM keeps its running values in
    # registers across the loop only if nothing in the loop may touch that buffer. The prefetch
    # call carries the input's alias scope for that: without it the loop stored all ten
    # accumulators to the stack on every step (and ran 1.7x slower).
    from pytvmbridge import topi

    x = tvm.placeholder((2, 64, 14, 14), name="x")
    w = tvm.placeholder((64, 64, 1, 1), name="w")
    y = topi.nn.conv2d(x, w, 1, 0)
    s = tvm.auto_schedule([y], config={"T_conv2d_nchw": {"tile_rows": 7, "tile_vectors": 2}})
    stage = next(st for st in s.stages if st.op.name == "T_conv2d_nchw.local")
    rc = next(iv for iv in stage.leaf_iter_vars if iv.var.name == "rc")
    stage.prefetch(x, rc, 8, cache_level=1)
    f = tvm.build(s, [x, w, y])
    ir = f.get_source("ll")
    calls = [line for line in ir.splitlines() if "call void @llvm.prefetch" in line]
    assert calls and all("!alias.scope" in c and "!noalias" in c for c in calls)
    loop = _loop_with(f.get_source("asm"), "prefetcht0")
    # Fourteen FMAs a step; LLVM may unroll the step (by 2 for -mcpu=znver4), so a multiple.
    fmas = sum("vfmadd" in line for line in loop)
    assert fmas > 0 and fmas % 14 == 0, loop
    assert not [line for line in loop if line.rstrip().endswith("(%rsp)")], loop
    xt, wt = torch.randn(2, 64, 14, 14), torch.randn(64, 64, 1, 1)
    out = torch.empty(2, 64, 14, 14)
    f(xt, wt, out)
    torch.testing.assert_close(out, torch.nn.functional.conv2d(xt, wt), rtol=1e-4, atol=1e-4)


def test_convolution_input_is_prefetched_channels_ahead():
    # NCHW, the output channels vectorized: consecutive input channels are a whole plane apart
    # (3 KB at 28x28), beyond any hardware prefetcher, so the tiles' broadcast input is fetched
    # 8 channels ahead into L1
    # ("prefetch_input"); not with 3 channels (the stem), nor with 7x7 planes (196 bytes
    # apart), nor for a matrix product, whose rows are read along the reduction.
    from pytvmbridge import topi

    def conv(c, h, k, config=None):
        x = tvm.placeholder((2, c, h, h), name="x")
        w = tvm.placeholder((64, c, k, k), name="w")
        y = topi.nn.conv2d(x, w, 1, k // 2)
        point = tvm.auto_schedule_space(y, config=config)["default"]["T_conv2d_nchw"]
        f = tvm.build(tvm.auto_schedule(y, config=config), [x, w, y])
        xt, wt = torch.randn(2, c, h, h), torch.randn(64, c, k, k)
        out = torch.empty(2, 64, h, h)
        f(xt, wt, out)
        want = torch.nn.functional.conv2d(xt, wt, padding=k // 2)
        torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-3)
        return point["prefetch_input"], f.get_source("asm").count("prefetcht0")

    steps, fetches = conv(64, 28, 1)
    assert steps == 8 and fetches > 0
    steps, fetches = conv(64, 28, 3)  # through the padded input, a stage of its own
    assert steps == 8 and fetches > 0
    assert conv(3, 28, 3)[0] == 0
    assert conv(64, 7, 3)[0] == 0
    # The padding inlined into the product (a point the tuner may take): nothing to prefetch
    # by that name, and the request is not made.
    assert conv(64, 28, 3, {"pad_temp": {"inline": 1}, "T_conv2d_nchw": {}}) == (0, 0)
    A = tvm.placeholder((64, 256), name="A")
    B = tvm.placeholder((256, 64), name="B")
    knobs = tvm.auto_schedule_space(topi.matmul(A, B))["knobs"]["T_matmul"]
    assert knobs.get("prefetch_input", [0]) == [0]
