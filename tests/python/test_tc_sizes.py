"""TC defs called with inputs of 2**31 elements or more (issue 9, item 1).

A TC def's size variables and loop indices are int32, as in Tensor Comprehensions; its index
arithmetic is int64. So an input may hold more than 2**31 - 1 elements as long as every
dimension fits int32 (the values are checked against NumPy), and an input with a dimension that
does not fit runs a variant of the def translated with int64 sizes and loop indices, never a
truncated size. The huge inputs cost little memory: a broadcast view (stride 0), a sparse
memory-mapped file or an uninitialised array of which only a few pages are touched. Each big
case runs in a fresh interpreter with a timeout (a truncated size used to write nothing)."""

import numpy as np
import pytest
from isolated import run_isolated

from pytvmbridge import tc

INT32_MAX = 2**31 - 1


def test_tc_dimension_past_int32_runs_the_int64_variant():
    # A dimension past int32 used to be refused: the def now runs with int64 sizes and loop
    # indices (a broadcast view costs no memory; reference: a hand sum).
    f = tc.define("def f(float(N) A) -> (B) { B(i) +=! A(j) where j in 0:3, i in 0:2 }")
    huge = np.broadcast_to(np.float32(1), (INT32_MAX + 6,))
    np.testing.assert_array_equal(f(huge), [3.0, 3.0])
    # The same def on a small input still runs the int32 kernel.
    np.testing.assert_array_equal(f(np.arange(5, dtype="float32")), [3.0, 3.0])
    assert f.inputs[0].shape[0].dtype == "int32"
    assert f._wide_variant().inputs[0].shape[0].dtype == "int64"


def test_tc_int32_variant_refuses_a_dimension_past_int32_naming_the_argument():
    # The int32 kernel itself never truncates a size: its check names the argument.
    f = tc.define("def f(float(N) A) -> (B) { B(i) = A(i) }")
    with pytest.raises(ValueError) as err:
        f._fn.prepare([[INT32_MAX + 6]], None)
    msg = str(err.value)
    assert "'A'" in msg and "dimension 0" in msg and str(INT32_MAX + 6) in msg, msg
    assert "int32" in msg and str(INT32_MAX) in msg, msg


@pytest.mark.parametrize(
    "source, shapes, reference",
    [
        ("def f(float(N) A) -> (B) { B(i) = A(i) * 2 + 1 }", [(7,)], lambda a: a * 2 + 1),
        (
            "def mm(float(M, K) A, float(K, N) B) -> (C) { C(m, n) +=! A(m, k) * B(k, n) }",
            [(5, 3), (3, 4)],
            lambda a, b: a @ b,
        ),
        (
            "def shift(float(N) A) -> (B) { B(i) = A(i + 2) where i in 0:N-2 }",
            [(9,)],
            lambda a: a[2:],
        ),
        ("def iota(float(N) A) -> (B) { B(i) = A(i) + i }", [(6,)], lambda a: a + np.arange(6)),
    ],
)
def test_tc_int64_variant_matches_numpy_on_small_inputs(source, shapes, reference):
    # The int64 variant is the same def: the same values, with int64 sizes and loop indices.
    f = tc.define(source)
    wide = f._wide_variant()
    assert all(str(d.dtype) == "int64" for t in wide.inputs for d in t.shape)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype("float32") for s in shapes]
    np.testing.assert_allclose(wide(*args), reference(*args), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(f(*args), reference(*args), rtol=1e-5, atol=1e-6)


def test_tc_one_dimension_of_2_31_plus_64_reads_its_tail():
    # An int8 array of 2**31 + 64 elements (2 GiB, of which only the touched pages are
    # allocated): N does not fit int32, so the int64 variant runs; an int32 N would wrap and
    # read the wrong bytes or nothing.
    run_isolated(
        """
        import numpy as np
        from pytvmbridge import tc
        n = 2**31 + 64
        g = tc.define("def g(int8(N) A) -> (B) { B(i) = A(i + N - 4) * 2 where i in 0:4 }")
        a = np.empty(n, "int8")
        a[-64:] = np.arange(64, dtype="int8")
        np.testing.assert_array_equal(g(a), a[-4:] * 2)
        out = np.zeros(4, "int8")
        g(a, out=out)
        np.testing.assert_array_equal(out, a[-4:] * 2)
        np.testing.assert_array_equal(g(a[:10]), a[6:10] * 2)  # the int32 kernel
        print("OK")
        """
    )


def test_tc_dimension_of_exactly_int32_max_is_accepted():
    # The limit itself fits: the size is bound, not refused (a broadcast view costs no memory).
    f = tc.define("def f(float(N) A) -> (B) { B(i) +=! A(j) where j in 0:3, i in 0:2 }")
    src = np.broadcast_to(np.float32(2), (INT32_MAX,))
    np.testing.assert_array_equal(f(src), [6.0, 6.0])


def test_tc_input_of_more_than_2_31_elements_reads_the_right_elements():
    # 2**16 + 1 rows of 2**15 int8: 2**31 + 2**15 elements in a sparse memory-mapped file. The
    # def reads the last 3 x 3 corner, whose flat offset passes 2**31: int32 offsets would wrap
    # and read the wrong (zero) bytes.
    run_isolated(
        """
        import os, tempfile
        import numpy as np
        from pytvmbridge import tc
        rows, cols = 2**16 + 1, 2**15
        assert rows * cols > 2**31
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "huge.bin")
            A = np.memmap(path, dtype="int8", mode="w+", shape=(rows, cols))
            corner = np.arange(1, 10, dtype="int8").reshape(3, 3)
            A[-3:, -3:] = corner
            f = tc.define(
                "def f(int8(N, M) A) -> (B) {"
                " B(i, j) = int32(A(i + N - 3, j + M - 3)) * 2 where i in 0:3, j in 0:3 }"
            )
            B = f(A)
            np.testing.assert_array_equal(B, corner.astype("int32") * 2)
            del A
        print("OK")
        """
    )


def test_tc_broadcast_input_of_more_than_2_31_elements_matches_numpy():
    # 2**16 rows of 2**15 + 1 columns (stride 0 along the columns): 2**31 + 2**16 elements.
    f = tc.define("def f(float(N, M) A) -> (B) { B(i) +=! A(i, j) where j in 0:3 }")
    rows = np.arange(2**16, dtype=np.float32)
    A = np.broadcast_to(rows[:, None], (2**16, 2**15 + 1))
    assert A.size > INT32_MAX
    np.testing.assert_array_equal(f(A), A[:, :3].sum(axis=1))
