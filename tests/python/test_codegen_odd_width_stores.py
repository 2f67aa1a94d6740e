"""An odd-width vector store (a row's 10- or 12-lane tail) into an output the kernel never reads
is one masked store of the next power of two lanes with AVX-512 (codegen_llvm.cc,
`padded_store`): it must write exactly its lanes (nothing past the row's end, checked with
sentinels and against a guard page), the values must equal NumPy's, and an output the kernel
also reads (accumulated in place) keeps plain stores."""

import numpy as np
import pytest
from isolated import run_isolated

import pytvmbridge as tvm
from pytvmbridge import te, topi

rng = np.random.default_rng(5)


def _rows(h, w, dtype):
    A = te.placeholder((h, w), name="A", dtype=dtype)
    B = te.compute((h, w), lambda i, j: A[i, j] * 2 + 1, name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[1])
    return A, B, s


@pytest.mark.parametrize("w", [3, 5, 7, 10, 12, 14])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float64", "int16"])
def test_odd_width_rows_write_exactly_their_lanes(w, dtype):
    # The output is the start of a larger array of sentinels: a store past the last row's end
    # would overwrite the sentinels after it.
    h = 6
    A, B, s = _rows(h, w, dtype)
    f = tvm.build(s, [A, B])
    a = (rng.standard_normal((h, w)) * 10).astype(dtype)
    compact = np.full((h * (w + 16),), 77, dtype)
    view = compact[: h * w].reshape(h, w)
    f(a, view)
    np.testing.assert_array_equal(view, a * 2 + 1)
    assert (compact[h * w :] == 77).all()


def test_padded_rows_store_their_tail_masked():
    X = tvm.placeholder((1, 4, 8, 8), name="X")
    Y = topi.nn.pad(X, [0, 0, 1, 1], [0, 0, 1, 1])
    s = tvm.auto_schedule([Y])
    f = tvm.build(s, [X, Y])
    ll = f.get_source("ll")
    assert "masked.store" in ll[ll.index("_compact") :]
    x = rng.standard_normal((1, 4, 8, 8)).astype("float32")
    y = np.empty((1, 4, 10, 10), "float32")
    f(x, y)
    np.testing.assert_array_equal(y, np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))))


def test_an_output_read_back_keeps_plain_stores():
    # C accumulates in place (C[i] = C[i] + ... over k): its 12-lane rows are read after they
    # are stored, so no masked store (which could not forward to the read).
    A = te.placeholder((5, 12), name="A")
    k = te.reduce_axis((0, 5), name="k")
    C = te.compute((12,), lambda j: te.sum(A[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    s[C].vectorize(C.op.axis[0])
    f = tvm.build(s, [A, C])
    ll = f.get_source("ll")
    assert "masked.store" not in ll[ll.index("_compact") :]
    a = rng.standard_normal((5, 12)).astype("float32")
    c = np.empty(12, "float32")
    f(a, c)
    np.testing.assert_allclose(c, a.sum(0), rtol=1e-6)


def test_odd_width_stores_stop_at_a_guard_page():
    # The output ends where an unreadable, unwritable page begins: a store of the next power
    # of two lanes that were not masked would fault.
    run_isolated(
        """
        import ctypes, mmap
        import numpy as np
        import pytvmbridge as tvm
        from pytvmbridge import te

        page = mmap.PAGESIZE
        buf = mmap.mmap(-1, 2 * page)
        base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        libc = ctypes.CDLL(None)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        assert libc.mprotect(base + page, page, 0) == 0
        for w in (10, 12, 7):
            h = 3
            A = te.placeholder((h, w), name="A")
            B = te.compute((h, w), lambda i, j: A[i, j] + 1, name="B")
            s = te.create_schedule(B.op)
            s[B].vectorize(B.op.axis[1])
            f = tvm.build(s, [A, B])
            out = np.frombuffer(buf, "float32", h * w, page - 4 * h * w).reshape(h, w)
            a = np.arange(h * w, dtype="float32").reshape(h, w)
            f(a, out)
            np.testing.assert_array_equal(out, a + 1)
        print("OK")
        """
    )
