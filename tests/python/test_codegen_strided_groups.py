"""Strided loads of one buffer that differ only by a constant start (the taps of a stride-2
pooling window, A[2i] and A[2i + 1]) share the contiguous vectors of their common span
(csrc/codegen/strided_groups.h): the values must equal NumPy's for every stride, dtype, tail,
set of offsets and a symbolic row start, the shared loads must read nothing outside the
elements some tap takes (checked against guard pages), and the compact kernel of two
neighbouring stride-2 taps has plain loads where each tap alone had masked ones."""

from pathlib import Path

import numpy as np
import pytest
from isolated import run_isolated

import pytvmbridge as tvm
from pytvmbridge import te

rng = np.random.default_rng(11)


def _taps(n, stride, offsets, dtype, factor=16):
    size = (n - 1) * stride + max(offsets) + 1
    A = te.placeholder((size,), name="A", dtype=dtype)

    def body(i):
        out = A[i * stride + offsets[0]]
        for o in offsets[1:]:
            out = out + A[i * stride + o]
        return out

    B = te.compute((n,), body, name="B")
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=factor)
    s[B].vectorize(xi)
    return A, B, s, size


def _reference(a, n, stride, offsets, dtype):
    out = a[offsets[0] :][::stride][:n].copy()
    for o in offsets[1:]:
        out = (out + a[o:][::stride][:n]).astype(dtype)
    return out


@pytest.mark.parametrize("stride", [2, 3, 4])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8", "float16"])
@pytest.mark.parametrize("n", [16, 37, 5, 8])
@pytest.mark.parametrize("offsets", [(0, 1), (0, 1, 2), (1, 2), (2, 0, 3), (0, 7)])
def test_grouped_taps_match_numpy(stride, dtype, n, offsets):
    A, B, s, size = _taps(n, stride, list(offsets), dtype)
    f = tvm.build(s, [A, B])
    a = (rng.standard_normal(size) * 20).astype(dtype)
    b = np.zeros(n, dtype)
    f(a, b)
    np.testing.assert_array_equal(b, _reference(a, n, stride, list(offsets), dtype))


@pytest.mark.parametrize("factor", [4, 8])
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "float64"])
def test_narrow_taps_read_whole_vectors(factor, dtype):
    # Taps narrower than a 64-byte vector (a row's 8-lane tail) read whole 64-byte vectors,
    # masked to the elements taken; the values are NumPy's, tails included.
    n, stride, offsets = 29, 2, [0, 1, 2]
    A, B, s, size = _taps(n, stride, offsets, dtype, factor=factor)
    f = tvm.build(s, [A, B])
    a = (rng.standard_normal(size) * 20).astype(dtype)
    b = np.zeros(n, dtype)
    f(a, b)
    np.testing.assert_array_equal(b, _reference(a, n, stride, offsets, dtype))


def test_neighbouring_stride_two_taps_share_plain_loads():
    # A[2i] and A[2i + 1] together take every element of A[32k, 32k + 32): two whole vectors,
    # not two masked ones per tap.
    A, B, s, _ = _taps(64, 2, [0, 1], "float32")
    ll = tvm.build(s, [A, B]).get_source("ll")
    compact = ll[ll.index("_compact") :]
    assert "masked.load" not in compact and "masked.gather" not in compact
    assert "shufflevector" in compact


def test_a_lone_tap_and_taps_under_a_select_keep_their_own_loads():
    # One tap alone, and taps that only a Select's operands read (a lane condition may mask
    # them), are not grouped; the values are NumPy's either way.
    n = 48
    A = te.placeholder((2 * n + 2,), name="A")
    B = te.compute(
        (n,),
        lambda i: te.if_then_else(i % 3 == 1, A[2 * i] + A[2 * i + 1], A[2 * i + 2]),
        name="B",
    )
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    f = tvm.build(s, [A, B])
    a = rng.standard_normal(2 * n + 2).astype("float32")
    b = np.zeros(n, "float32")
    f(a, b)
    i = np.arange(n)
    want = np.where(i % 3 == 1, a[2 * i] + a[2 * i + 1], a[2 * i + 2]).astype("float32")
    np.testing.assert_array_equal(b, want)


def test_rows_of_taps_with_a_symbolic_start():
    # 2-d: each row's taps share a start that depends on the row variable, and a negative
    # constant offset (the column before) is split off the same start.
    h, w = 5, 70
    A = te.placeholder((h, w), name="A")
    out_w = (w - 2) // 2
    B = te.compute(
        (h, out_w),
        lambda r, x: A[r, 2 * x + 2 - 1] + A[r, 2 * x + 2] + A[r, 2 * x + 3],
        name="B",
    )
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[1], factor=16)
    s[B].vectorize(xi)
    f = tvm.build(s, [A, B])
    a = rng.standard_normal((h, w)).astype("float32")
    b = np.zeros((h, out_w), "float32")
    f(a, b)
    x = np.arange(out_w)
    want = (a[:, 2 * x + 1] + a[:, 2 * x + 2] + a[:, 2 * x + 3]).astype("float32")
    np.testing.assert_allclose(b, want, rtol=1e-6)


@pytest.mark.parametrize("stride,offsets", [(2, (0, 1, 2)), (4, (0, 2)), (3, (1, 0))])
def test_shared_loads_read_nothing_past_the_taps(stride, offsets):
    # The array ends at a page whose next page is unreadable, and starts right after one: a
    # shared vector reading one element past the last tap's (or before the first) would fault.
    run_isolated(
        f"""
        import ctypes, mmap, sys
        import numpy as np
        import pytvmbridge as tvm
        from pytvmbridge import te

        page = mmap.PAGESIZE
        n, stride, offsets = 37, {stride}, {list(offsets)}
        size = (n - 1) * stride + max(offsets) + 1
        buf = mmap.mmap(-1, 3 * page)
        base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        libc = ctypes.CDLL(None)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        assert libc.mprotect(base, page, 0) == 0
        assert libc.mprotect(base + 2 * page, page, 0) == 0
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_codegen_strided_groups import _taps
        A, B, s, _ = _taps(n, stride, offsets, "float32")
        f = tvm.build(s, [A, B])
        values = np.random.default_rng(3).standard_normal(size).astype("float32")
        for start in (page, 2 * page - 4 * size):  # after the first guard, before the last
            a = np.frombuffer(buf, "float32", size, start)
            a[:] = values
            b = np.zeros(n, "float32")
            f(a, b)
            want = sum(values[o:][::stride][:n] for o in offsets)
            np.testing.assert_allclose(b, want, rtol=1e-6)
        print("OK")
        """
    )


@pytest.mark.parametrize("w", [30, 37, 64])
def test_contiguous_taps_of_a_row_buffer(w):
    # Stride-1 taps B[x], B[x + 1], B[x + 2] of a row buffer on the stack share its vectors
    # (taps of an argument keep their own unaligned loads); the values are NumPy's.
    h = 4
    A = te.placeholder((h, w + 2), name="A")
    B = te.compute((h, w + 2), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((h, w), lambda i, x: B[i, x] + B[i, x + 1] + B[i, x + 2], name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s[B].vectorize(B.op.axis[1])
    _, xi = s[C].split(C.op.axis[1], factor=16)
    s[C].vectorize(xi)
    f = tvm.build(s, [A, C])
    a = rng.standard_normal((h, w + 2)).astype("float32")
    c = np.zeros((h, w), "float32")
    f(a, c)
    b = a * 2
    np.testing.assert_allclose(c, b[:, :w] + b[:, 1 : w + 1] + b[:, 2 : w + 2], rtol=1e-6)
