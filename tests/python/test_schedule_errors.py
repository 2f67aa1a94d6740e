"""Illegal schedule requests raise ValueError naming the stage and the axis."""

import numpy as np
import pytest

import pytvmbridge as tvm


def matmul():
    A = tvm.placeholder((8, 8), name="A")
    B = tvm.placeholder((8, 8), name="B")
    r = tvm.reduce_axis((0, 8), name="k")
    C = tvm.compute((8, 8), lambda i, j: tvm.sum(A[i, r] * B[r, j], axis=r), name="C")
    D = tvm.compute((8, 8), lambda i, j: C[i, j] + 1.0, name="D")
    return A, B, C, D


def test_split_needs_exactly_one_positive_factor():
    _A, _B, _C, D = matmul()
    s = tvm.create_schedule(D.op)
    with pytest.raises(ValueError, match=r"stage 'D'.*axis 'i'.*exactly one"):
        s[D].split(D.op.axis[0], factor=2, nparts=2)
    with pytest.raises(ValueError, match=r"exactly one"):
        s[D].split(D.op.axis[0])
    with pytest.raises(ValueError, match=r"stage 'D'.*axis 'i'.*positive"):
        s[D].split(D.op.axis[0], factor=0)
    with pytest.raises(ValueError, match=r"positive"):
        s[D].split(D.op.axis[0], nparts=-3)


def test_axis_of_another_stage():
    _A, _B, C, D = matmul()
    s = tvm.create_schedule(D.op)
    for call in [
        lambda: s[D].split(C.op.axis[0], factor=2),
        lambda: s[D].vectorize(C.op.axis[1]),
        lambda: s[D].parallel(C.op.axis[0]),
        lambda: s[D].unroll(C.op.axis[0]),
        lambda: s[D].reorder(C.op.axis[0], D.op.axis[0]),
    ]:
        with pytest.raises(ValueError, match=r"stage 'D'.*axis '.'.*not an axis of this stage"):
            call()


def test_axis_already_split():
    _A, _B, _C, D = matmul()
    s = tvm.create_schedule(D.op)
    s[D].split(D.op.axis[0], factor=2)
    with pytest.raises(ValueError, match=r"stage 'D'.*'i'.*already split"):
        s[D].vectorize(D.op.axis[0])


def test_fuse_errors():
    _A, _B, C, D = matmul()
    s = tvm.create_schedule(D.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    with pytest.raises(ValueError, match=r"stage 'C'.*'j'.*'k'.*reduce"):
        s[C].fuse(j, k)
    with pytest.raises(ValueError, match=r"stage 'C'.*'j'.*'i'.*adjacent"):
        s[C].fuse(j, i)


def test_reorder_duplicate():
    _A, _B, _C, D = matmul()
    s = tvm.create_schedule(D.op)
    with pytest.raises(ValueError, match=r"stage 'D'.*'i'.*twice"):
        s[D].reorder(D.op.axis[0], D.op.axis[0])


def test_parallel_reduce_axis_suggests_rfactor():
    _A, _B, C, D = matmul()
    s = tvm.create_schedule(D.op)
    with pytest.raises(ValueError, match=r"stage 'C'.*'k'.*rfactor"):
        s[C].parallel(C.op.reduce_axis[0])


def test_compute_at_errors():
    A, _B, C, D = matmul()
    s = tvm.create_schedule(D.op)
    with pytest.raises(ValueError, match=r"stage 'D'.*axis 'i'.*stage 'C'"):
        s[D].compute_at(s[C], C.op.axis[0])  # D is an output and C does not read it
    with pytest.raises(ValueError, match=r"stage 'C'.*axis 'i'"):
        s[C].compute_at(s[D], C.op.axis[0])  # an axis of C, not of D
    E = tvm.compute((8, 8), lambda i, j: A[i, j] * 2.0, name="E")
    F = tvm.compute((8, 8), lambda i, j: E[i, j] + D[i, j], name="F")
    s2 = tvm.create_schedule(F.op)
    with pytest.raises(ValueError, match=r"stage 'E'.*axis 'i'.*stage 'D'.*does not read"):
        s2[E].compute_at(s2[D], D.op.axis[0])
    with pytest.raises(TypeError):
        s2[E].compute_at(D, D.op.axis[0])


def test_compute_at_axis_split_later_moves_inside_or_fails_at_lowering():
    import numpy as np

    A, B, C, D = matmul()
    s = tvm.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[0])
    _, inner = s[D].split(D.op.axis[0], factor=2)
    assert s[C].attach_ivar == inner  # TVM's legalization: a split target becomes its inner part
    a, b = np.random.default_rng(3).random((2, 8, 8), dtype="float32")
    d = np.empty((8, 8), "float32")
    tvm.build(s, [A, B, D])(a, b, d)
    np.testing.assert_allclose(d, a @ b + 1.0, rtol=1e-5)
    s = tvm.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[0])
    s[D].fuse(D.op.axis[0], D.op.axis[1])  # the outer operand of a fuse: no loop stands for it
    with pytest.raises(ValueError, match=r"stage 'C'.*axis 'i'.*outer operand of a fuse"):
        tvm.lower(s, [A, B, D])


def test_compute_inline_errors():
    A, _B, C, D = matmul()
    s = tvm.create_schedule(D.op)
    with pytest.raises(ValueError, match=r"stage 'C'.*reduction"):
        s[C].compute_inline()
    with pytest.raises(ValueError, match=r"stage 'D'.*output"):
        s[D].compute_inline()
    with pytest.raises(ValueError, match=r"stage 'A'.*placeholder"):
        s[A].compute_inline()


def test_cache_and_rfactor_errors():
    A, _B, C, D = matmul()
    s = tvm.create_schedule(D.op)
    with pytest.raises(ValueError, match=r"stage 'A'.*placeholder"):
        s.cache_write(A, "local")
    with pytest.raises(ValueError, match=r"stage 'C'.*does not read"):
        s.cache_read(D, "shared", [C])
    with pytest.raises(ValueError, match=r"stage 'D'.*not a reduction"):
        s.rfactor(D, D.op.axis[0])
    with pytest.raises(ValueError, match=r"stage 'C'.*'i'.*data axis"):
        s.rfactor(C, C.op.axis[0])
    s[D].split(D.op.axis[0], factor=2)
    with pytest.raises(ValueError, match=r"stage 'D'.*before"):
        s.cache_write(D, "local")
    X = tvm.placeholder((3,), name="X")
    with pytest.raises(ValueError, match=r"not part of this schedule"):
        s[X]


def test_pragma_names_a_loop_of_its_stage():
    A, _B, C, D = matmul()
    s = tvm.create_schedule(D.op)
    s[D].pragma(D.op.axis[0], "auto_unroll_max_step", 4)  # a hint: accepted, no effect
    for bad in (None, A):
        with pytest.raises(TypeError, match=r"pragma\('auto_unroll_max_step'\): var must be"):
            s[D].pragma(bad, "auto_unroll_max_step", 4)
    with pytest.raises(ValueError, match=r"pragma\('foo'\): i is not a loop of stage 'D'"):
        s[D].pragma(C.op.axis[0], "foo")


def test_an_argument_the_kernel_never_writes_is_refused():
    A = tvm.placeholder((4,), name="A")
    B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
    C = tvm.compute((4,), lambda i: B[i] * 2.0, name="C")
    s = tvm.create_schedule(C.op)
    s[B].compute_inline()
    with pytest.raises(ValueError, match=r"tensor 'B' \(argument 1\) was inlined"):
        tvm.build(s, [A, B, C])
    Z = tvm.compute((4,), lambda i: A[i] * 3.0, name="Z")
    with pytest.raises(ValueError, match=r"tensor 'Z' \(argument 1\) is computed by an oper"):
        tvm.build(s, [A, Z, C])
    f = tvm.build(s, [A, C])
    a = np.arange(4, dtype="float32")
    c = np.zeros(4, "float32")
    f(a, c)
    np.testing.assert_array_equal(c, (a + 1) * 2)


def test_a_multi_output_compute_needs_all_its_outputs_as_arguments():
    A = tvm.placeholder((4,), name="A")
    C0, C1 = tvm.compute((4,), lambda i: (A[i] + 1.0, A[i] * 2.0), name="C")
    s = tvm.create_schedule(C0.op)
    with pytest.raises(ValueError, match=r"output 1 of the 2-output compute 'C' is not an arg"):
        tvm.build(s, [A, C0])
    f = tvm.build(s, [A, C0, C1])
    a = np.arange(4, dtype="float32")
    c0, c1 = np.zeros(4, "float32"), np.zeros(4, "float32")
    f(a, c0, c1)
    np.testing.assert_array_equal(c0, a + 1)
    np.testing.assert_array_equal(c1, a * 2)


def test_a_failed_tile_leaves_the_stage_unchanged():
    # the y factor was checked only after x had been split: a retry was refused
    A = tvm.placeholder((8, 6), name="A")
    C = tvm.compute((8, 6), lambda i, j: A[i, j] + 1.0, name="C")
    s = tvm.create_schedule(C.op)
    i, j = C.op.axis
    with pytest.raises(ValueError, match=r"axis 'j'.*positive, got 0"):
        s[C].tile(i, j, 4, 0)
    assert [str(v.var) for v in s[C].leaf_iter_vars] == ["i", "j"]
    s[C].tile(i, j, 4, 2)
    a = np.random.default_rng(0).random((8, 6), dtype="float32")
    c = np.empty_like(a)
    tvm.build(s, [A, C])(a, c)
    np.testing.assert_array_equal(c, a + 1)


def test_an_inlined_tensor_cannot_be_prefetched():
    # accepted before, then lower() asked for B as an argument, and refused it as one
    A = tvm.placeholder((8,), name="A")
    B = tvm.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = tvm.compute((8,), lambda i: B[i] * 2.0, name="C")
    s = tvm.create_schedule(C.op)
    s[B].compute_inline()
    with pytest.raises(ValueError, match=r"tensor 'B' is inlined"):
        s[C].prefetch(B, C.op.axis[0], 1)
    s = tvm.create_schedule(C.op)
    s[C].prefetch(B, C.op.axis[0], 1)
    with pytest.raises(ValueError, match=r"stage 'C' prefetches its output 'B'"):
        s[B].compute_inline()
    a = np.arange(8, dtype="float32")
    c = np.empty_like(a)
    tvm.build(s, [A, C])(a, c)  # the schedule is intact
    np.testing.assert_array_equal(c, (a + 1) * 2)


def test_rfactor_names_the_factor_axis_given():
    A = tvm.placeholder((8, 12), name="A")
    k = tvm.reduce_axis((0, 12), "k")
    C = tvm.compute((8,), lambda i: tvm.sum(A[i, k], axis=k), name="C")
    s = tvm.create_schedule(C.op)
    _, ki = s[C].split(k, 4)
    with pytest.raises(ValueError, match=r"factor_axis -3 is out of range .* \(-2 to 1\)"):
        s.rfactor(C, ki, factor_axis=-3)
    with pytest.raises(TypeError, match=r"factor_axis must be an int, got str"):
        s.rfactor(C, ki, factor_axis="a")


def test_gpu_only_primitives():
    # storage_align and double_buffer are layout hints with no effect on a CPU (the values are
    # the same); bind maps loops to GPU threads and is refused with the CPU's way to say it
    A = tvm.placeholder((8, 6), name="A")
    B = tvm.compute((8, 6), lambda i, j: A[i, j] * 2.0, name="B")
    C = tvm.compute((8, 6), lambda i, j: B[i, j] + 1.0, name="C")
    s = tvm.create_schedule(C.op)
    s[B].storage_align(B.op.axis[0], 16, 1)
    s[B].double_buffer()
    with pytest.raises(ValueError, match=r"factor must be an int >= 1"):
        s[B].storage_align(B.op.axis[0], 0, 1)
    with pytest.raises(ValueError, match=r"not an axis of stage 'B'"):
        s[B].storage_align(C.op.axis[0], 16, 1)
    with pytest.raises(ValueError, match=r"GPU threads.*parallel"):
        s[C].bind(C.op.axis[0], None)
    a = np.random.default_rng(0).random((8, 6), dtype="float32")
    c = np.empty_like(a)
    tvm.build(s, [A, C])(a, c)
    np.testing.assert_array_equal(c, a * 2 + 1)
