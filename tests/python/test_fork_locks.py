"""fork() while another thread compiles a @kernel or a TC def, or runs a kernel's Python function:
the child used to inherit those Python locks held, and hung on its first compile. Each case runs
in a fresh interpreter (isolated.py), whose timeout turns a hang into a failure; the child's
results are checked against NumPy."""

import pytest
from isolated import run_isolated

_SCRIPT = """
import os, sys, threading, time
import numpy as np
import pytvmbridge as tvm
from pytvmbridge import tc

def slow_schedule(s, out):  # a compile that takes a while
    time.sleep(1.5)

def plus_one(A):
    return tvm.compute(A.shape, lambda i: A[i] + 1, name="B")

def traced_slowly(A):  # a kernel's own function, running while the fork happens
    time.sleep(1.5)
    return tvm.compute(A.shape, lambda i: A[i] * 3, name="D")

k = tvm.kernel(plus_one, schedule=slow_schedule)
T = tc.define("def f(float(N) I) -> (O) { O(i) = I(i) + 1 }", schedule=slow_schedule)
slow = tvm.kernel(traced_slowly)
doubled = tvm.kernel(lambda A: tvm.compute(A.shape, lambda i: A[i] * 2, name="C"))
a = np.arange(8, dtype="float32")
busy = {"kernel": lambda: k(a), "tc": lambda: T(a), "function": lambda: slow(a)}[sys.argv[1]]
threading.Thread(target=busy, daemon=True).start()
time.sleep(0.5)
pid = os.fork()
if pid == 0:
    ok = np.array_equal(k(a), a + 1) and np.array_equal(T(a), a + 1)
    ok = ok and np.array_equal(doubled(a), a * 2) and np.array_equal(slow(a), a * 3)
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
print("OK")
"""


@pytest.mark.parametrize("busy", ["kernel", "tc", "function"])
def test_a_child_forked_during_a_compile_compiles(busy):
    run_isolated(f"import sys\nsys.argv = ['x', {busy!r}]\n" + _SCRIPT, timeout=120)
