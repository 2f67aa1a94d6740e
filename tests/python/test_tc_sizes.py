"""TC defs called with inputs of 2**31 elements or more (issue 9, item 1).

A TC def's size variables and loop indices are int32, as in Tensor Comprehensions; its index
arithmetic is int64. So an input may hold more than 2**31 - 1 elements as long as every
dimension fits int32 (the values are checked against NumPy), and a dimension that does not fit
is a ValueError naming the argument, never a truncated size. The huge inputs cost no memory:
a broadcast view (stride 0) or a sparse memory-mapped file of which only a few pages are read.
Each case runs in a fresh interpreter with a timeout (a truncated size used to write nothing)."""

import numpy as np
import pytest
from isolated import run_isolated

from pytvmbridge import tc

INT32_MAX = 2**31 - 1


def test_tc_dimension_past_int32_is_a_value_error_naming_the_argument():
    f = tc.define("def f(float(N) A) -> (B) { B(i) +=! A(j) where j in 0:3, i in 0:2 }")
    huge = np.broadcast_to(np.float32(1), (INT32_MAX + 6,))
    with pytest.raises(ValueError) as err:
        f(huge)
    msg = str(err.value)
    assert "'A'" in msg and "dimension 0" in msg and str(INT32_MAX + 6) in msg, msg
    assert "int32" in msg and str(INT32_MAX) in msg, msg
    # The same def on a small input still works (reference: a hand sum).
    np.testing.assert_array_equal(f(np.arange(5, dtype="float32")), [3.0, 3.0])


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
