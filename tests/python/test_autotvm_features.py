"""The tuner's loop features, checked against counts made by hand: loop kinds and extents, the
copies an unrolled loop becomes, the vector chunks of a vectorized one (512-bit chunks, as
vectorize_loops splits them), allocations; and the features of the nest lowered up to unrolling
(what the tuner reads) against those of the fully lowered function."""

import math

import pytest

import pytvmbridge as tvm
from pytvmbridge.autotvm.features import FEATURE_NAMES, loop_features
from pytvmbridge.error import TVMTypeError


def _features(s, args):
    return dict(zip(FEATURE_NAMES, loop_features(s, args), strict=True))


def test_loop_kinds_and_extents():
    A = tvm.placeholder((56, 3, 16), name="A")
    B = tvm.compute((56, 3, 16), lambda i, j, k: A[i, j, k] * 2.0, name="B")
    s = tvm.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    f = _features(s, [A, B])
    assert f["parallel_loops"] == 1 and f["serial_loops"] == 2 and f["max_depth"] == 3
    assert f["log_parallel_extent"] == math.log2(56)
    assert f["log_innermost_extent"] == math.log2(16)
    assert f["log_total_serial_extent"] == math.log2(3) + math.log2(16)
    assert f["stores"] == 1 and f["loads"] == 1 and f["vector_stmts"] == 0
    assert f["max_lanes"] == 0 and f["allocations"] == 0


def test_unrolled_copies_and_vector_chunks():
    # (8, 40) float32, j vectorized: 40 lanes run as two 16-lane chunks and an 8-lane rest
    # (512-bit vectors of float32): three vector stores; i split by 4 with the inner part
    # unrolled: each of those stores 4 times, in a loop of 2.
    A = tvm.placeholder((8, 40), name="A")
    B = tvm.compute((8, 40), lambda i, j: A[i, j] + 1.0, name="B")
    s = tvm.create_schedule(B.op)
    _, ii = s[B].split(B.op.axis[0], factor=4)
    s[B].unroll(ii)
    s[B].vectorize(B.op.axis[1])
    f = _features(s, [A, B])
    assert f["serial_loops"] == 1 and f["max_depth"] == 1
    assert f["log_total_serial_extent"] == 1.0  # io: 2 iterations
    assert f["stores"] == 4 * 3 and f["vector_stmts"] == 4 * 3 and f["loads"] == 4 * 3
    assert f["max_lanes"] == 16
    # the same counts in the code as lowered in full (no unrolled or vectorized loop left)
    full = dict(zip(FEATURE_NAMES, loop_features(tvm.lower(s, [A, B])), strict=True))
    for name in ("serial_loops", "parallel_loops", "stores", "vector_stmts", "max_lanes"):
        assert full[name] == f[name], name


def test_a_long_vector_loop_runs_as_a_loop_of_chunks():
    # 16 x 16 = 256 float32 lanes: 16 chunks, more than are emitted inline: a loop of 16
    A = tvm.placeholder((256,), name="A")
    B = tvm.compute((256,), lambda i: A[i] * 3.0, name="B")
    s = tvm.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    f = _features(s, [A, B])
    assert f["serial_loops"] == 1 and f["log_innermost_extent"] == 4.0
    assert f["stores"] == 1 and f["max_lanes"] == 16


def test_allocation_sizes():
    A = tvm.placeholder((64, 32), name="A")
    T = tvm.compute((64, 32), lambda i, j: A[i, j] * 2.0, name="T")
    B = tvm.compute((64, 32), lambda i, j: T[i, j] + 1.0, name="B")
    s = tvm.create_schedule(B.op)
    s[T].compute_at(s[B], B.op.axis[0])  # a row of T (32 floats) per i
    f = _features(s, [A, B])
    assert f["allocations"] == 1
    assert f["log_allocated"] == math.log2(1 + 32)
    assert f["stores"] == 2 and f["loads"] == 2


def test_arguments_are_checked():
    A = tvm.placeholder((4,), name="A")
    B = tvm.compute((4,), lambda i: A[i], name="B")
    s = tvm.create_schedule(B.op)
    with pytest.raises(TVMTypeError, match="arguments are missing"):
        loop_features(s)
    with pytest.raises(TVMTypeError, match="got str"):
        loop_features("for (i, 0, 4) {")
    with pytest.raises(TVMTypeError, match="takes no args"):
        loop_features(tvm.lower(s, [A, B]), [A, B])
