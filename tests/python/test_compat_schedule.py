"""Issue 10: TVM schedule behaviours that classic TVM tests rely on.

fuse() with no axis (a Singleton relation, also on a 0-d stage), attaching to and from extern
and scan stages, stable rfactor axes, buffer attributes of extern inputs. Values against NumPy.
"""

import ctypes

import numpy as np
import pytest
from isolated import run_isolated

import pytvmbridge as tvm
from pytvmbridge import te


def _run(s, args, arrays):
    f = tvm.build(s, args)
    nds = [tvm.nd.array(a) for a in arrays]
    f(*nds)
    return [a.asnumpy() for a in nds]


def test_singleton_fuse_on_a_0d_stage_as_tvm_test_singleton():
    A = te.placeholder((), name="A")
    T = te.compute((), lambda: A() + 1)
    s = te.create_schedule(T.op)
    assert s[T].leaf_iter_vars == [] or len(s[T].leaf_iter_vars) == 0
    fused = s[T].fuse()
    assert any(isinstance(x, tvm.te.schedule.Singleton) for x in s[T].relations)
    assert len(s[T].leaf_iter_vars) == 1 and s[T].leaf_iter_vars[0].name == fused.name
    assert int(fused.dom.extent) == 1
    a = np.array(2.5, "float32")
    _, t = _run(s, [A, T], [a, np.zeros((), "float32")])
    assert t == a + 1


def test_a_stage_computed_at_the_singleton_of_a_0d_reduction():
    n = 37
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    k = te.reduce_axis((0, n), name="k")
    T = te.compute((), lambda: te.sum(B[k], axis=k), name="T")
    s = te.create_schedule(T.op)
    single = s[T].fuse()
    s[B].compute_at(s[T], single)
    assert s[B].attach_type == "scope"
    a = np.random.default_rng(0).standard_normal(n).astype("float32")
    _, t = _run(s, [A, T], [a, np.zeros((), "float32")])
    np.testing.assert_allclose(t, (a.astype("float64") * 2 + 1).sum(), rtol=1e-5)


def test_singleton_on_a_2d_stage_is_an_outer_loop_that_keeps_values():
    A = te.placeholder((5, 7), name="A")
    B = te.compute((5, 7), lambda i, j: A[i, j] * 3.0, name="B")
    s = te.create_schedule(B.op)
    single = s[B].fuse()
    assert s[B].leaf_iter_vars[0].name == single.name and len(s[B].leaf_iter_vars) == 3
    f = s[B].fuse(*B.op.axis)
    s[B].parallel(f)
    kinds = [type(r).__name__ for r in s[B].relations]
    assert kinds == ["Singleton", "Fuse"]
    a = np.arange(35, dtype="float32").reshape(5, 7)
    _, b = _run(s, [A, B], [a, np.zeros((5, 7), "float32")])
    np.testing.assert_array_equal(b, a * 3)


def test_relations_are_tvm_typed_and_still_tuples():
    A = te.placeholder((12,), name="A")
    B = te.compute((12,), lambda i: A[i], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], nparts=3)
    fused = s[B].fuse(xo, xi)
    split, fuse = s[B].relations
    assert isinstance(split, tvm.te.schedule.Split) and split[0] == "split"
    assert split.nparts is not None and int(split.nparts) == 3 and split.factor is None
    assert (split.outer.name, split.inner.name) == (xo.name, xi.name)
    assert isinstance(fuse, tvm.te.schedule.Fuse) and fuse.fused.name == fused.name
    assert int(fuse.fused.dom.extent) == 12


# ---- extern and scan stages attached with compute_at (item 2) ----


@tvm.register_func("test_compat_schedule.plus_one", override=True)
def _plus_one(src, dst):
    dst.copyfrom(src.asnumpy() + 1)


def _extern_plus_one(A, name="E"):
    return te.extern(
        A.shape,
        [A],
        lambda ins, outs: tvm.tir.call_packed("test_compat_schedule.plus_one", ins[0], outs[0]),
        name=name,
    )


def test_an_extern_stage_computed_at_a_loop_of_its_consumer():
    A = te.placeholder((12, 5), name="A")
    E = _extern_plus_one(A)
    C = te.compute((12, 5), lambda i, j: E[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    xo, _ = s[C].split(C.op.axis[0], factor=4)
    s[E].compute_at(s[C], xo)
    text = str(tvm.lower(s, [A, C]))
    # the call sits inside the consumer's loop, with E's storage allocated there
    assert text.index("for (i.outer") < text.index("allocate E") < text.index("call_packed")
    a = np.random.default_rng(1).standard_normal((12, 5)).astype("float32")
    _, c = _run(s, [A, C], [a, np.zeros((12, 5), "float32")])
    np.testing.assert_allclose(c, (a + 1) * 2, rtol=1e-6)


def test_a_parallel_loop_around_a_python_packed_call_runs_serially_without_hanging():
    """A pool worker calling back into Python while the caller holds the GIL (small kernels keep
    it) would wait forever: such a loop is made serial (lower/serialize_packed_calls.h)."""
    run_isolated(
        """
        import numpy as np
        import pytvmbridge as tvm
        from pytvmbridge import te

        @tvm.register_func("plus_one")
        def plus_one(src, dst):
            dst.copyfrom(src.asnumpy() + 1)

        A = te.placeholder((12, 5), name="A")
        E = te.extern(A.shape, [A], lambda ins, outs: tvm.tir.call_packed("plus_one", ins[0],
                      outs[0]), name="E")
        C = te.compute((12, 5), lambda i, j: E[i, j] * 2.0, name="C")
        s = te.create_schedule(C.op)
        xo, _ = s[C].split(C.op.axis[0], factor=4)
        s[E].compute_at(s[C], xo)
        s[C].parallel(xo)
        assert "parallel" not in str(tvm.lower(s, [A, C]))
        f = tvm.build(s, [A, C])
        a = np.arange(60, dtype="float32").reshape(12, 5)
        c = np.zeros((12, 5), "float32")
        f(a, c)
        np.testing.assert_array_equal(c, (a + 1) * 2)
        print("OK")
        """,
        timeout=120,
    )


def test_an_extern_stage_with_two_consumers_cannot_be_computed_at_one():
    A = te.placeholder((8,), name="A")
    E = _extern_plus_one(A)
    C = te.compute((8,), lambda i: E[i] * 2.0, name="C")
    D = te.compute((8,), lambda i: E[i] + C[i], name="D")
    s = te.create_schedule(D.op)
    s[E].compute_at(s[C], C.op.axis[0])
    with pytest.raises(tvm.error.TVMError, match="stage 'D' also reads it") as info:
        tvm.lower(s, [A, D])
    assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError, match="no expression to inline"):
        s[E].compute_inline()


def test_a_scan_computed_at_a_loop_of_its_consumer():
    m, n = 6, 9
    A = te.placeholder((m, n), name="A")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: A[0, i], name="init")
    update = te.compute((m, n), lambda t, i: state[t - 1, i] * 0.5 + A[t, i], name="update")
    scan = te.scan(init, update, state, inputs=[A], name="scan")
    C = te.compute((n,), lambda i: scan[m - 1, i] + scan[0, i], name="C")
    s = te.create_schedule(C.op)
    io, _ = s[C].split(C.op.axis[0], factor=4)
    s[scan].compute_at(s[C], io)
    text = str(tvm.lower(s, [A, C]))
    assert text.index("for (i.outer") < text.index("allocate scan") < text.index("for (t")
    a = np.random.default_rng(2).standard_normal((m, n)).astype("float32")
    ref = np.zeros((m, n), "float64")
    ref[0] = a[0]
    for t in range(1, m):
        ref[t] = ref[t - 1] * 0.5 + a[t]
    _, c = _run(s, [A, C], [a, np.zeros(n, "float32")])
    np.testing.assert_allclose(c, ref[m - 1] + ref[0], rtol=1e-5)


def test_a_producer_computed_at_the_time_loop_of_a_scan():
    m, n = 5, 8
    A = te.placeholder((m, n), name="A")
    X = te.compute((m, n), lambda t, i: A[t, i] * 2.0, name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: A[0, i] * 2.0, name="init")
    update = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    scan = te.scan(init, update, state, inputs=[X], name="scan")
    s = te.create_schedule(scan.op)
    s[X].compute_at(s[scan], scan.op.scan_axis)
    text = str(tvm.lower(s, [A, scan]))
    assert text.index("for (t") < text.index("allocate X")
    a = np.random.default_rng(3).standard_normal((m, n)).astype("float32")
    _, out = _run(s, [A, scan], [a, np.zeros((m, n), "float32")])
    np.testing.assert_allclose(out, np.cumsum(a.astype("float64") * 2, 0), rtol=1e-5, atol=1e-6)


def test_cache_read_for_a_scan_update_as_tvm_test_bound_scan():
    m, n = 7, 10
    X = te.compute((m, n), lambda i, j: (i * 3 + j).astype("float32"), name="x")
    state = te.placeholder((m, n))
    init = te.compute((1, n), lambda _, i: X[0, i])
    update = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i])
    scan = te.scan(init, update, state)
    s = te.create_schedule(scan.op)
    XX = s.cache_read(X, "local", update)
    xo, _ = s[update].split(update.op.axis[1], factor=4)
    s[XX].compute_at(s[update], xo)
    text = str(tvm.lower(s, [scan]))
    assert "allocate x.local[float32 * 1 * 4]" in text  # the 4 elements of one inner tile
    xs = np.add.outer(np.arange(m) * 3, np.arange(n)).astype("float64")
    (out,) = _run(s, [scan], [np.zeros((m, n), "float32")])
    np.testing.assert_allclose(out, np.cumsum(xs, 0), rtol=1e-6)


# ---- buffer attributes in extern bodies (item 4) ----


def _floats_at(pointer, n):
    return np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), shape=(n,))


@tvm.register_func("test_compat_schedule.add_by_pointer", override=True)
def _add_by_pointer(src, dst, n):
    assert isinstance(src, ctypes.c_void_p) and isinstance(dst, ctypes.c_void_p)
    _floats_at(dst, n)[:] = _floats_at(src, n) + 10.0


def test_extern_body_passes_buffer_data_pointers_as_tvm_test_extern():
    m = te.var("m")
    A = te.placeholder((m,), name="A")
    seen = []

    def extern_func(ins, outs):
        assert isinstance(ins[0], tvm.te.schedule.Buffer) and isinstance(outs[0], tvm.tir.Buffer)
        seen.append((ins[0].strides, ins[0].elem_offset, ins[0].scope(), outs[0].dtype))
        return tvm.tir.call_packed(
            "test_compat_schedule.add_by_pointer", ins[0].data, outs[0].data, m
        )

    B = te.extern((m,), [A], extern_func, name="B")
    assert tuple(B.shape) == (m,)
    assert seen == [((), 0, "global", "float32")]
    C = te.compute((m,), lambda i: B[i] * 2.0, name="C")
    f = tvm.build(te.create_schedule(C.op), [A, C])
    a = np.random.default_rng(4).standard_normal(23).astype("float32")
    c = np.zeros(23, "float32")
    f(a, c)
    np.testing.assert_allclose(c, (a + 10) * 2, rtol=1e-6)


def test_extern_multi_out_with_data_pointers():
    n = 9
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 10.0, name="B")

    @tvm.register_func("test_compat_schedule.two_outputs", override=True)
    def two_outputs(a, b, out0, out1, count):
        _floats_at(out0, count)[:] = _floats_at(a, count) + _floats_at(b, count)
        _floats_at(out1, count)[:] = _floats_at(a, count) - 1.0

    res = te.extern(
        [A.shape, A.shape],
        [A, B],
        lambda ins, outs: tvm.tir.call_packed(
            "test_compat_schedule.two_outputs",
            ins[0].data,
            ins[1].data,
            outs[0].data,
            outs[1].data,
            n,
        ),
        name="E",
    )
    assert len(res) == 2 and res[1].value_index == 1
    D = te.compute((n,), lambda i: res[0][i] * res[1][i], name="D")
    f = tvm.build(te.create_schedule(D.op), [A, D])
    a = np.linspace(-2, 2, n).astype("float32")
    d = np.zeros(n, "float32")
    f(a, d)
    np.testing.assert_allclose(d, (a + a * 10) * (a - 1), rtol=1e-5)


def test_ir_builder_bodies_are_refused_naming_the_alternative():
    A = te.placeholder((4,), name="A")
    with pytest.raises(NotImplementedError, match="ir_builder"):
        te.extern((4,), [A], lambda ins, outs: outs[0].vstore(0, ins[0].vload(0)), name="B")


# ---- TVM's test_te_schedule.py checks, as a TVM user writes them ----


def test_tvm_schedule_inspection_iter_var_attrs_and_relations():
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m, n), name="A")
    T = te.compute((m, n), lambda i, j: A[i, j] + 1.0, name="T")
    s = te.create_schedule(T.op)
    xo, yo, xi, yi = s[T].tile(T.op.axis[0], T.op.axis[1], x_factor=10, y_factor=5)
    s[T].vectorize(yi)
    s[T].unroll(xi)
    attrs = s[T].iter_var_attrs
    assert attrs[xi].iter_type == tvm.te.schedule.IterVar.Unrolled
    assert attrs[yi].iter_type == tvm.te.schedule.IterVar.Vectorized
    assert xo not in attrs
    fused = s[T].fuse(xo, yo)
    assert any(isinstance(r, tvm.te.schedule.Fuse) for r in s[T].relations)
    assert tuple(s[T].leaf_iter_vars) == (fused, xi, yi)
    with pytest.raises(RuntimeError):
        s[T].fuse(xi, fused)  # out of order
    with pytest.raises(tvm.error.TVMError):
        s[T].reorder(xi, yi, xi)  # duplicate
    a = np.random.default_rng(5).standard_normal((23, 12)).astype("float32")
    _, t = _run(s, [A, T], [a, np.zeros((23, 12), "float32")])
    np.testing.assert_array_equal(t, a + 1)


def test_tvm_rfactor_axes_are_stable_and_reusable():
    n = 16
    k1 = te.reduce_axis((0, n), name="k1")
    k2 = te.reduce_axis((0, n), name="k2")
    A = te.placeholder((n, n, n), name="A")
    B = te.compute((n,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2]), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k1, factor=4)
    BF = s.rfactor(B, ki)
    assert int(BF.shape[0]) == 4 and int(BF.shape[1]) == n
    assert BF.op.body[0].axis[0] == k2
    assert BF.op.body[0].axis[1].var == ko.var
    # the same axes on every access: held, put in sets and used to schedule BF
    held = BF.op.axis
    assert list(BF.op.axis) == list(held) and set(BF.op.axis) == set(held)
    assert [hash(a) for a in BF.op.axis] == [hash(a) for a in held]
    assert all(a in s[BF].leaf_iter_vars for a in held)
    s[BF].reorder(held[1], BF.op.reduce_axis[0], held[0])
    s[BF].parallel(held[1])
    s[BF].vectorize(held[0])
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    a = np.random.default_rng(6).standard_normal((n, n, n)).astype("float32")
    _, b = _run(s, [A, B], [a, np.zeros(n, "float32")])
    np.testing.assert_allclose(b, a.astype("float64").sum(axis=(1, 2)), rtol=1e-4, atol=1e-4)


def test_tvm_invalid_schedules_raise_runtime_errors():
    shape = (16, 16)
    A = te.compute(shape, lambda *i: 1.0, name="A")
    B = te.compute(shape, lambda *i: 2.0, name="B")
    C = te.compute(shape, lambda *i: A(*i) + B(*i), name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(RuntimeError):
        s[C].compute_at(s[C], C.op.axis[0])
        tvm.lower(s, [A, B], simple_mode=True)
    s = te.create_schedule(C.op)
    s[A].compute_at(s[C], C.op.axis[0])
    with pytest.raises(RuntimeError):
        s[C].compute_at(s[A], A.op.axis[0])
        tvm.lower(s, [C], simple_mode=True)


def test_a_multi_stage_scan_cell_computed_at_a_loop_of_its_consumer():
    m, n = 5, 8
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    s1 = te.compute((m, n), lambda t, i: state[t - 1, i] * 2.0, name="s1")
    s2 = te.compute((m, n), lambda t, i: s1[t, i] + X[t, i], name="s2")
    scan = te.scan(init, s2, state, inputs=[X], name="scan")
    C = te.compute((n,), lambda i: scan[m - 1, i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    io, _ = s[C].split(C.op.axis[0], factor=4)
    s[scan].compute_at(s[C], io)  # s1 stays inside the scan's time loop
    x = np.random.default_rng(7).standard_normal((m, n)).astype("float32")
    ref = x[0].astype("float64")
    for t in range(1, m):
        ref = ref * 2 + x[t]
    _, c = _run(s, [X, C], [x, np.zeros(n, "float32")])
    np.testing.assert_allclose(c, ref + 1, rtol=1e-5, atol=1e-5)


def test_compute_at_with_a_second_consumer_inside_the_same_loop():
    # E is read by D and by C; D is computed inside C's loop over rows, so E computed at that
    # loop (before D: producers first) covers both readers' rows: one row of E per iteration.
    m, n = 6, 37
    A = te.placeholder((m, n), name="A")
    k1 = te.reduce_axis((0, n), name="k1")
    E = te.compute((m,), lambda i: te.max(A[i, k1], axis=k1), name="E")
    k2 = te.reduce_axis((0, n), name="k2")
    D = te.compute((m,), lambda i: te.sum(A[i, k2] - E[i], axis=k2), name="D")
    C = te.compute((m, n), lambda i, j: (A[i, j] - E[i]) * D[i], name="C")
    s = te.create_schedule(C.op)
    s[E].compute_at(s[C], C.op.axis[0])
    s[D].compute_at(s[C], C.op.axis[0])
    text = str(tvm.lower(s, [A, C]))
    assert "allocate E[float32 * 1]" in text
    f = tvm.build(s, [A, C])
    a = np.random.default_rng(5).standard_normal((m, n)).astype("float32")
    c = np.zeros((m, n), "float32")
    f(a, c)
    e = a.max(axis=1, keepdims=True)
    np.testing.assert_allclose(c, (a - e) * (a - e).sum(axis=1, keepdims=True), rtol=1e-5)

    # A second reader outside that loop is still refused, naming it.
    s = te.create_schedule(C.op)
    s[E].compute_at(s[C], C.op.axis[0])
    with pytest.raises(tvm.error.TVMError, match="stage 'D' also reads it, outside that loop"):
        tvm.lower(s, [A, C])
