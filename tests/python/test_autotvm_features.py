"""The tuner's loop features read loop extents as printed (16, 56, 3, ...): checked against the
extents by hand (they used to be read with their digits stripped: 16 as 1, 56 as 5)."""

import math

import pytvmbridge as tvm
from pytvmbridge.autotvm.features import FEATURE_NAMES, loop_features


def test_loop_extents_are_read_exactly():
    A = tvm.placeholder((56, 3, 16), name="A")
    B = tvm.compute((56, 3, 16), lambda i, j, k: A[i, j, k] * 2.0, name="B")
    s = tvm.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    text = str(tvm.lower(s, [A, B]))
    assert "parallel (i, 0, 56)" in text and "for (k, 0, 16)" in text, text
    f = dict(zip(FEATURE_NAMES, loop_features(text), strict=True))
    assert f["parallel_loops"] == 1 and f["serial_loops"] == 2 and f["max_depth"] == 3
    assert f["log_parallel_extent"] == math.log2(56)
    assert f["log_innermost_extent"] == math.log2(16)
    assert f["log_total_serial_extent"] == math.log2(3) + math.log2(16)


def test_allocation_size_and_typed_constants():
    # A 64-bit constant prints with its type ("64i64"); an allocation of 4 x 32 floats.
    text = (
        "def main(A: float32[8]):\n"
        "for (i, 0, 64i64) {\n"
        "  allocate t[float32 * 4 * 32]\n"
        "  t[0] = A[i]\n"
        "}\n"
    )
    f = dict(zip(FEATURE_NAMES, loop_features(text), strict=True))
    assert f["log_innermost_extent"] == 6.0
    assert f["log_allocated"] == math.log2(1 + 4 * 32)
    assert f["stores"] == 1 and f["loads"] == 1
