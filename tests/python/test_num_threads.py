"""set_num_threads: its limits are ValueErrors, and a pool the system cannot give every thread
it asked for runs with the threads it got (a parallel kernel's values still right), instead of
aborting the process."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge.error import TVMValueError


@pytest.mark.parametrize("n", [0, -3, 4097, 1_000_000, 2**31, 2**40, -(2**70)])
def test_out_of_range_counts_are_value_errors(n):
    before = tvm.get_num_threads()
    with pytest.raises(TVMValueError, match="set_num_threads"):
        tvm.set_num_threads(n)
    assert tvm.get_num_threads() == before


@pytest.mark.parametrize("n", [2.0, True, "2", None])
def test_non_integer_counts_are_type_errors(n):
    before = tvm.get_num_threads()
    with pytest.raises(TypeError, match=r"set_num_threads needs an int, got"):
        tvm.set_num_threads(n)
    assert tvm.get_num_threads() == before
    tvm.set_num_threads(np.int64(before))  # NumPy integers are ints
    assert tvm.get_num_threads() == before


def test_parallel_kernel_after_resizes():
    n = tvm.var("n")
    a = tvm.placeholder((n,), name="a")
    c = tvm.compute((n,), lambda i: a[i] * 2.0 + 1.0, name="c")
    s = tvm.create_schedule(c.op)
    outer, _ = s[c].split(c.op.axis[0], factor=16)
    s[c].parallel(outer)
    f = tvm.build(s, [a, c])
    data = np.arange(5000, dtype="float32")
    before = tvm.get_num_threads()
    try:
        for threads in (3, 1, 8, 2):
            tvm.set_num_threads(threads)
            out = np.zeros_like(data)
            f(data, out)
            np.testing.assert_array_equal(out, data * 2 + 1)
    finally:
        tvm.set_num_threads(before)


def test_threads_the_system_refuses_leave_a_working_pool():
    # In a child whose address space has room for only a few thread stacks: asking for 4096
    # threads gets those few, with a note on stderr, and the right values.
    script = textwrap.dedent(
        """
        import resource, numpy as np, pytvmbridge as tvm
        n = tvm.var("n"); A = tvm.placeholder((n,), name="A")
        C = tvm.compute((n,), lambda i: A[i] + 1, name="C")
        s = tvm.create_schedule(C.op); xo, xi = s[C].split(C.op.axis[0], factor=4)
        s[C].parallel(xo)
        f = tvm.build(s, [A, C])
        a = np.arange(4000, dtype="float32"); o = np.zeros_like(a)
        f(a, o)
        vm = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (vm + (256 << 20), resource.RLIM_INFINITY))
        tvm.set_num_threads(4096)
        o[:] = 0
        f(a, o)
        assert np.array_equal(o, a + 1)
        print(tvm.get_num_threads())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    got = int(done.stdout.strip())
    assert 1 <= got < 4096
    assert "refused a thread" in done.stderr
