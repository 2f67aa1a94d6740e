"""The CPU parts of TVM v0.18's public tutorials and tests (tensor_expr_get_started, opt_gemm,
schedule_primitives, reduction, tuple_inputs; tests/python/contrib/test_dlpack.py,
te/test_te_schedule.py, te/test_te_tensor.py), restated in our own words: each check uses the
calls those files make, with `import pytvmbridge as tvm` as the only change, and compares the
values with NumPy or PyTorch. What they use that pytvmbridge does not have is listed in
docs/architecture.md ("Classic TVM and TC compatibility")."""

import pickle

import numpy as np
import pytest
import torch

import pytvmbridge as tvm
import pytvmbridge.testing
from pytvmbridge import te
from pytvmbridge.contrib.dlpack import to_pytorch_func

RNG = np.random.default_rng(18)


# ---- tensor_expr_get_started ----


def test_get_started_vector_add_with_target_device_and_schedules(tmp_path):
    tgt = tvm.target.Target(target="llvm", host="llvm")
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    fadd = tvm.build(s, [A, B, C], tgt, name="myadd")
    dev = tvm.device(tgt.kind.name, 0)
    size = 1024
    a = tvm.nd.array(RNG.uniform(size=size).astype(A.dtype), dev)
    b = tvm.nd.array(RNG.uniform(size=size).astype(B.dtype), dev)
    c = tvm.nd.array(np.zeros(size, dtype=C.dtype), dev)
    fadd(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
    evaluator = fadd.time_evaluator(fadd.entry_name, dev, number=10)
    assert evaluator(a, b, c).mean > 0
    # the tutorial's schedule steps: parallel, then split + vectorize
    s[C].parallel(C.op.axis[0])
    assert "parallel" in str(tvm.lower(s, [A, B, C], simple_mode=True))
    s = te.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=4)
    s[C].parallel(outer)
    s[C].vectorize(inner)
    fadd = tvm.build(s, [A, B, C], tgt, name="myadd_parallel")
    fadd(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
    # the tutorial's export/load round trip
    fadd.export_library(str(tmp_path / "myadd.so"))
    loaded = tvm.runtime.load_module(str(tmp_path / "myadd.so"))
    c = tvm.nd.array(np.zeros(size, dtype=C.dtype), dev)
    loaded(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())


def test_get_started_gemm_packing_and_write_cache():
    M = K = N = 128
    bn = 32
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    packedB = te.compute((N / bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    C = te.compute(
        (M, N),
        lambda x, y: te.sum(A[x, k] * packedB[y // bn, k, tvm.tir.indexmod(y, bn)], axis=k),
        name="C",
    )
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    xo, yo, _, _ = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    (kaxis,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kaxis, factor=4)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)
    s[C].parallel(xo)
    x, _, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)
    dev = tvm.device("llvm", 0)
    a = tvm.nd.array(RNG.random((M, K)).astype("float32"), dev)
    b = tvm.nd.array(RNG.random((K, N)).astype("float32"), dev)
    c = tvm.nd.array(np.zeros((M, N), dtype="float32"), dev)
    func = tvm.build(s, [A, B, C], target=tvm.target.Target("llvm"), name="mmult")
    func(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() @ b.numpy(), rtol=1e-5)


# ---- schedule_primitives and reduction ----


def test_schedule_primitives_tutorial_steps():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((m,), lambda i: B[i, 0] + 1, name="C")  # the tutorial's B -> C chain
    a = RNG.random((9, 7)).astype("float32")
    for step in ("split", "nparts", "tile", "fuse", "reorder", "at", "inline", "root"):
        s = te.create_schedule(C.op)
        if step == "split":
            s[B].split(B.op.axis[0], factor=32)
        elif step == "nparts":
            s[B].split(B.op.axis[0], nparts=32)
        elif step == "tile":
            s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
        elif step == "fuse":
            _, _, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
            s[B].fuse(xi, yi)
        elif step == "reorder":
            xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
            s[B].reorder(xi, yo, xo, yi)
        elif step == "at":
            s[B].compute_at(s[C], C.op.axis[0])
        elif step == "inline":
            s[B].compute_inline()
        else:
            s[B].compute_at(s[C], C.op.axis[0])
            s[B].compute_root()
        out = np.empty(9, "float32")
        tvm.build(s, [A, C])(a, out)
        tvm.testing.assert_allclose(out, a[:, 0] * 2 + 1, rtol=1e-6)


def test_reduction_tutorial_split_rfactor_and_2d_convolution():
    n, m = te.size_var("n"), te.size_var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.reduce_axis[0], factor=16)
    s[B].split(B.op.axis[0], factor=32)
    a = RNG.random((40, 50)).astype("float32")
    out = np.empty(40, "float32")
    tvm.build(s, [A, B])(a, out)
    tvm.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-5)
    s = te.create_schedule(B.op)
    _, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    assert "sum" in str(s[B].op.body)
    tvm.build(s, [A, B])(a, out)
    tvm.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-5)
    del BF
    # convolution as a two-dimensional reduction
    n = te.var("n")
    Input = te.placeholder((n, n), name="Input")
    Filter = te.placeholder((3, 3), name="Filter")
    di = te.reduce_axis((0, 3), name="di")
    dj = te.reduce_axis((0, 3), name="dj")
    Output = te.compute(
        (n - 2, n - 2),
        lambda i, j: te.sum(Input[i + di, j + dj] * Filter[di, dj], axis=[di, dj]),
        name="Output",
    )
    x, w = RNG.random((12, 12)).astype("float32"), RNG.random((3, 3)).astype("float32")
    got = np.empty((10, 10), "float32")
    tvm.build(te.create_schedule(Output.op), [Input, Filter, Output])(x, w, got)
    ref = torch.nn.functional.conv2d(
        torch.from_numpy(x)[None, None], torch.from_numpy(w)[None, None]
    )
    tvm.testing.assert_allclose(got, ref[0, 0].numpy(), rtol=1e-5)


# ---- tuple_inputs (the tuple-compute part; argmax needs te.comm_reducer) ----


def test_tuple_inputs_multiple_outputs_and_compute_at():
    m, n = te.var("m"), te.var("n")
    A0 = te.placeholder((m, n), name="A0")
    A1 = te.placeholder((m, n), name="A1")
    B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] + 2, A1[i, j] * 3), name="B")
    s = te.create_schedule(B0.op)
    a0, a1 = RNG.random((5, 6)).astype("float32"), RNG.random((5, 6)).astype("float32")
    b0, b1 = np.empty_like(a0), np.empty_like(a1)
    tvm.build(s, [A0, A1, B0, B1])(a0, a1, b0, b1)
    tvm.testing.assert_allclose(b0, a0 + 2)
    tvm.testing.assert_allclose(b1, a1 * 3)
    C = te.compute((m, n), lambda i, j: A0[i, j] + B0[i, j], name="C")
    s = te.create_schedule(C.op)
    s[B0].compute_at(s[C], C.op.axis[0])
    c = np.empty_like(a0)
    tvm.build(s, [A0, A1, C])(a0, a1, c)
    tvm.testing.assert_allclose(c, a0 + a0 + 2, rtol=1e-6)


# ---- tests/python/contrib/test_dlpack.py (v0.18) ----


def test_contrib_dlpack_round_trip_and_torch_matmul():
    a = np.random.randn(1337)
    tvm_a = tvm.nd.array(a)
    np.testing.assert_equal(tvm.nd.from_dlpack(tvm_a.to_dlpack()).numpy(), a)
    x = torch.rand(56, 56)
    tvm_x = tvm.nd.from_dlpack(torch.utils.dlpack.to_dlpack(x))
    np.testing.assert_equal(x.numpy(), tvm_x.numpy())
    y = tvm.nd.from_dlpack(tvm_x)
    np.testing.assert_equal(torch.utils.dlpack.from_dlpack(y.to_dlpack()).numpy(), tvm_x.numpy())
    n = tvm.runtime.convert(137)
    xx, yy = torch.rand(137, 137), torch.rand(137, 137)
    XX = te.placeholder((n, n), name="X")
    YY = te.placeholder((n, n), name="Y")
    k = te.reduce_axis((0, n), name="k")
    ZZ = te.compute((n, n), lambda i, j: te.sum(XX[i, k] * YY[k, j], axis=k))
    s = te.create_schedule(ZZ.op)
    f = tvm.build(s, [XX, YY, ZZ], target_host="llvm", name="f")
    f_pytorch = to_pytorch_func(f)
    zz2 = torch.empty(137, 137)
    f_pytorch(xx, yy, zz2)
    tvm.testing.assert_allclose(xx.mm(yy).numpy(), zz2.numpy(), rtol=1e-4, atol=1e-4)


# ---- tests/python/te/test_te_schedule.py ----


def test_te_schedule_checks():
    m, n, l = te.size_var("m"), te.size_var("n"), te.size_var("l")
    A = te.placeholder((m, l), name="A")
    B = te.placeholder((n, l), name="B")
    AA = te.compute((m, l), lambda i, j: A[i, j])
    T = te.compute((m, n, l), lambda i, j, k: AA(i, k) * B(j, k))
    s = te.create_schedule(T.op)
    s[AA].set_scope("shared")
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    xi1, xi2 = s[T].split(xi, factor=2)
    s[AA].compute_at(s[T], xi1)
    s[T].reorder(xi2, xi1)
    assert T.op.axis[1] in s[T].leaf_iter_vars
    a, b = RNG.random((13, 3)).astype("float32"), RNG.random((4, 3)).astype("float32")
    t = np.empty((13, 4, 3), "float32")
    tvm.build(s, [A, B, T])(a, b, t)
    tvm.testing.assert_allclose(t, a[:, None, :] * b[None, :, :], rtol=1e-6)
    # reorder with a duplicate axis is a TVMError
    s = te.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    xi1, xi2 = s[T].split(xi, factor=2)
    order = (xi2, xi1, xo)
    s[T].reorder(*order)
    assert tuple(s[T].leaf_iter_vars[:3]) == order
    with pytest.raises(tvm.error.TVMError):
        s[T].reorder(xi2, xi1, xi2)
    # fuse of axes out of order raises (a RuntimeError in TVM)
    with pytest.raises(RuntimeError):
        s[T].fuse(xo, T.op.axis[2])


def test_te_schedule_rfactor_shapes_and_factor_axis():
    n = te.size_var("n")
    k1 = te.reduce_axis((0, n), name="k1")
    k2 = te.reduce_axis((0, n), name="k2")
    A = te.placeholder((n, n, n), name="A")
    B = te.compute((n,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2]))
    s = te.create_schedule(B.op)
    BF = s.rfactor(B, k1)
    assert tuple(BF.shape) == (n, n)
    assert set(BF.op.body[0].axis) == {k2}  # TVM keeps the untouched reduce axis itself
    assert s[B].op.body[0].axis[0].dom.extent == n
    assert len(s[B].all_iter_vars) == 2
    for factor_axis in (0, 1):
        s = te.create_schedule(B.op)
        ko, ki = s[B].split(k1, factor=4)
        s[B].split(B.op.axis[0], factor=8)
        BF = s.rfactor(B, ki, factor_axis)
        extents = (4, n) if factor_axis == 0 else (n, 4)
        assert tuple(BF.shape) == extents and BF.shape[factor_axis].value == 4
        # [untouched root reduce axes, touched leaves]: k2 itself, then a copy of ko with its var
        assert BF.op.body[0].axis[0] == k2
        assert BF.op.body[0].axis[1].var == ko.var
        assert not (BF.op.body[0].axis[1].var == k2.var)
        assert BF.op.axis[factor_axis].var == ki.var
        assert s[B].op.body[0].axis[0].dom.extent.value == 4
        a = RNG.random((6, 6, 6)).astype("float32")
        out = np.empty(6, "float32")
        tvm.build(s, [A, B])(a, out)
        tvm.testing.assert_allclose(out, a.sum(axis=(1, 2)), rtol=1e-5)


def test_rfactor_keeps_untouched_axes_and_drops_their_splits():
    # k2 split (untouched by the factored axis: its split and guard go), k1 split twice and the
    # factored axis taken from the middle: the rest of k1 is reduced in the factored stage
    A = te.placeholder((5, 7, 6), name="A")
    k1 = te.reduce_axis((0, 7), name="k1")
    k2 = te.reduce_axis((0, 6), name="k2")
    B = te.compute((5,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2]), name="B")
    s = te.create_schedule(B.op)
    s[B].split(k2, factor=4)
    ko, ki = s[B].split(k1, factor=3)
    kio, kii = s[B].split(ki, factor=2)
    BF = s.rfactor(B, kio)
    reduce_axes = BF.op.body[0].axis
    assert reduce_axes[0] == k2 and [iv.var for iv in reduce_axes[1:]] == [ko.var, kii.var]
    assert BF.op.axis[0].var == kio.var and BF.shape[0].value == 2
    s[BF].compute_at(s[B], s[B].op.axis[0])
    a = RNG.random((5, 7, 6)).astype("float32")
    out = np.empty(5, "float32")
    tvm.build(s, [A, B])(a, out)
    tvm.testing.assert_allclose(out, a.sum(axis=(1, 2)), rtol=1e-5)


def test_te_schedule_pragma_split_predication_and_chained_index():
    A = te.placeholder((43,), name="A")
    B = te.compute(A.shape, lambda i: A[i] + 2, name="C")
    sch = te.create_schedule(B.op)
    (i,) = sch[B].op.axis
    sch[B].split(i, factor=4, disable_predication=True)
    a = RNG.random(43).astype("float32")
    out = np.empty(43, "float32")
    tvm.build(sch, [A, B])(a, out)
    tvm.testing.assert_allclose(out, a + 2)
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=10)
    s[B].pragma(xo, "pragma1")
    s[B].pragma(xi, "vectorize")
    tvm.build(s, [A, B])(a, out)
    tvm.testing.assert_allclose(out, a + 2)
    # test_legalize_invalid_attach: A[i][j], and splitting/fusing an attach target
    A2 = te.compute((10, 10), lambda i, j: 1.0, name="A")
    B2 = te.compute((10, 10), lambda i, j: A2[i][j], name="B")
    got = np.zeros((10, 10), "float32")
    s = te.create_schedule([B2.op])
    s[A2].compute_at(s[B2], B2.op.axis[1])
    tvm.build(s, [B2])(got)
    tvm.testing.assert_allclose(got, np.ones((10, 10)))
    # TVM legalizes the attachment: a split target moves to its inner part, a target fused as
    # the inner operand to the fused loop; the outer operand of a fuse is refused (as in TVM)
    a2 = np.arange(10)[:, None] * 10.0 + np.arange(10)[None, :]
    A2 = te.compute((10, 10), lambda i, j: i * 10.0 + j, name="A")
    B2 = te.compute((10, 10), lambda i, j: A2[i][j] * 2.0, name="B")
    for change in ("split", "split_first", "fuse", "fuse_outer"):
        s = te.create_schedule([B2.op])
        if change == "split_first":
            _, inner = s[B2].split(B2.op.axis[1], 2)
        s[A2].compute_at(s[B2], B2.op.axis[0 if change == "fuse_outer" else 1])
        if change == "split":
            _, inner = s[B2].split(B2.op.axis[1], 2)
        elif change.startswith("fuse"):
            inner = s[B2].fuse(B2.op.axis[0], B2.op.axis[1])
        if change == "fuse_outer":
            with pytest.raises(tvm.error.TVMError, match="outer operand of a fuse"):
                tvm.build(s, [B2])
            continue
        assert s[A2].attach_ivar == inner
        got = np.zeros((10, 10), "float32")
        tvm.build(s, [B2])(got)
        tvm.testing.assert_allclose(got, a2 * 2.0)


def test_te_schedule_invalid_compute_at_raises():
    shape = (16, 16)
    A = te.compute(shape, lambda *i: 1.0, name="A")
    B = te.compute(shape, lambda *i: 2.0, name="B")
    C = te.compute(shape, lambda *i: A(*i) + B(*i), name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(RuntimeError):
        s[C].compute_at(s[C], C.op.axis[0])
        tvm.lower(s, [A, B], simple_mode=True)


# ---- tests/python/te/test_te_tensor.py ----


def test_te_tensor_checks():
    m, n, l = te.var("m"), te.var("n"), te.var("l")
    A = te.placeholder((m, l), name="A")
    B = te.placeholder((n, l), name="B")
    T = te.compute((m, n, l), lambda i, j, k: A[i, k] * B[j, k])
    assert tuple(T.shape) == (m, n, l)
    assert isinstance(A.op, tvm.te.PlaceholderOp)
    assert A == A
    assert T.op.output(0) == T
    assert T.op.output(0).__hash__() == T.__hash__()
    d = {T.op.output(0): 1}
    assert d[T] == 1
    assert T[0][0][0].astype("float16").dtype == "float16"
    # rank zero: a 0-d placeholder called with no index
    scale = te.placeholder((), name="s")
    k = te.reduce_axis((0, m), name="k")
    R = te.compute((), lambda: te.sum(A[k, 0] * scale(), axis=k))
    assert tuple(R.shape) == ()
    # a 1-d conv written with a helper, a tensor slice, multi-axis reduce as tuple or list
    n1 = te.var("n")
    A1 = te.placeholder((n1 + 2), name="A")
    B1 = te.compute(n1, lambda ii: A1[ii] + A1[ii + 1] + A1[ii + 2])
    x = RNG.random(10).astype("float32")
    got = np.empty(8, "float32")
    tvm.build(te.create_schedule(B1.op), [A1, B1])(x, got)
    tvm.testing.assert_allclose(got, x[:-2] + x[1:-1] + x[2:], rtol=1e-6)
    S = te.compute((n1, n1), lambda i, j: 1)
    te.compute((n1,), lambda i: S[0][i] + S[0][i])
    k1, k2 = te.reduce_axis((0, n), "k"), te.reduce_axis((0, m), "k")
    Am = te.placeholder((m, n), name="A")
    te.compute((1,), lambda _: te.sum(Am[k1, k2], axis=(k1, k2)))
    te.compute((1,), lambda _: te.sum(Am[k1, k2], axis=[k1, k2]))
    xp = te.placeholder((1,), name="x")
    y = te.compute(xp.shape, lambda i: xp[i] + xp[i])
    assert tuple(y.op.input_tensors) == (xp,)


def test_schedule_pickle_is_refused_clearly():
    A = te.placeholder((4,), name="A")
    s = te.create_schedule(te.compute((4,), lambda i: A[i], name="B").op)
    with pytest.raises((TypeError, pickle.PicklingError)):
        pickle.dumps(s)
