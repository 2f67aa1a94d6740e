"""te.extern with register_func: compiled kernels calling back into Python functions (and NumPy)
with DLPack arrays; errors in the callback become the kernel call's exception."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import te

RNG = np.random.default_rng(11)


def test_the_tvm_tutorial_add_one():
    calls = []

    @tvm.register_func("test.extern.addone", override=True)
    def addone(x, y):
        calls.append((type(x).__name__, x.shape, y.shape))
        y.copyfrom(x.numpy() + 1)

    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.extern(
        A.shape, [A], lambda ins, outs: te.call_packed("test.extern.addone", ins[0], outs[0])
    )
    f = tvm.build(tvm.create_schedule(B.op), [A, B])
    a = RNG.standard_normal(10).astype("float32")
    b = np.zeros(10, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a + 1)
    assert calls == [("NDArray", (10,), (10,))]


def test_numpy_as_the_callee_between_computes_with_torch_arrays():
    # NumPy's sort (no te equivalent) between two compute stages, called on torch tensors.
    tvm.register_func(
        "test.extern.sort_rows",
        lambda x, y: np.copyto(y.numpy(), np.sort(x.numpy(), axis=1)),
        override=True,
    )
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] * 2.0, name="B")
    S = te.extern(
        (m, n), [B], lambda ins, outs: te.call_packed("test.extern.sort_rows", *ins, *outs)
    )
    C = te.compute((m, n), lambda i, j: S[i, j] + 1.0, name="C")
    f = tvm.build(tvm.create_schedule(C.op), [A, C])
    a = torch.randn(4, 7)
    c = torch.zeros(4, 7)
    f(a, c)
    torch.testing.assert_close(c, torch.sort(a * 2, dim=1).values + 1)


def test_two_outputs_and_scalar_arguments():
    seen = {}

    def split(x, lo, hi, k, scale):
        seen.update(k=k, scale=scale)
        xv = x.numpy()
        lo.numpy()[:] = xv[:k] * scale
        hi.numpy()[:] = xv[k:] * scale

    tvm.register_func("test.extern.split", split, override=True)
    A = te.placeholder((8,), name="A", dtype="float64")
    lo, hi = te.extern(
        [(3,), (5,)],
        [A],
        lambda ins, outs: te.call_packed("test.extern.split", ins[0], outs[0], outs[1], 3, 0.5),
        name="split",
    )
    f = tvm.build(tvm.create_schedule([lo.op]), [A, lo, hi])
    a = RNG.standard_normal(8)
    out_lo, out_hi = np.zeros(3), np.zeros(5)
    f(a, out_lo, out_hi)
    np.testing.assert_array_equal(out_lo, a[:3] * 0.5)
    np.testing.assert_array_equal(out_hi, a[3:] * 0.5)
    assert seen == {"k": 3, "scale": 0.5}
    assert isinstance(seen["k"], int)


def test_an_exception_in_the_callback_is_raised_by_the_kernel_call():
    class Boom(RuntimeError):
        pass

    def fail(x, y):
        raise Boom("from inside the kernel")

    tvm.register_func("test.extern.fail", fail, override=True)
    A = te.placeholder((4,), name="A")
    B = te.extern((4,), [A], lambda ins, outs: te.call_packed("test.extern.fail", ins[0], outs[0]))
    C = te.compute((4,), lambda i: B[i] + 1.0, name="C")
    f = tvm.build(tvm.create_schedule(C.op), [A, C])
    with pytest.raises(Boom, match="from inside the kernel"):
        f(np.zeros(4, "float32"), np.zeros(4, "float32"))
    # The kernel stays usable once the function is fixed.
    tvm.register_func(
        "test.extern.fail", lambda x, y: np.copyto(y.numpy(), x.numpy()), override=True
    )
    c = np.zeros(4, "float32")
    f(np.ones(4, "float32"), c)
    np.testing.assert_array_equal(c, 2.0)


def test_missing_function_and_registry_errors():
    A = te.placeholder((4,), name="A")
    B = te.extern(
        (4,), [A], lambda ins, outs: te.call_packed("test.extern.nobody", ins[0], outs[0])
    )
    f = tvm.build(tvm.create_schedule(B.op), [A, B])
    with pytest.raises(
        ValueError, match=r"'test\.extern\.nobody' called by the kernel is not registered"
    ):
        f(np.zeros(4, "float32"), np.zeros(4, "float32"))
    tvm.register_func("test.extern.once", lambda: None, override=True)
    with pytest.raises(ValueError, match="already registered"):
        tvm.register_func("test.extern.once", lambda: None)
    assert "test.extern.once" in tvm.list_global_func_names()
    tvm.remove_global_func("test.extern.once")
    assert tvm.get_global_func("test.extern.once", allow_missing=True) is None
    with pytest.raises(ValueError, match="Cannot find global function"):
        tvm.get_global_func("test.extern.once")
    with pytest.raises(NotImplementedError, match="call_packed"):
        te.extern((4,), [A], lambda ins, outs: 0)


def test_registered_functions_at_interpreter_exit_and_errors_do_not_crash():
    script = textwrap.dedent(
        """
        import numpy as np
        import pytvmbridge as tvm
        from pytvmbridge import te

        @tvm.register_func("exit.f")
        def f(x, y):
            raise ValueError("bad " * 3)

        A = te.placeholder((3,), name="A")
        B = te.extern((3,), [A], lambda i, o: te.call_packed("exit.f", i[0], o[0]))
        g = tvm.build(tvm.create_schedule(B.op), [A, B])
        for _ in range(100):
            try:
                g(np.zeros(3, "float32"), np.zeros(3, "float32"))
            except ValueError:
                pass
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_daemon_threads_in_a_python_callback_at_exit_end_cleanly():
    # Python ends such threads inside the callback when the interpreter exits: they must not
    # unwind through the kernel's frames (the process aborted or segfaulted)
    code = textwrap.dedent("""
        import threading, time, numpy as np, pytvmbridge as tvm
        from pytvmbridge import te
        tvm.register_func("exit.copy", lambda x, y: y.copyfrom(x.numpy()), override=True)
        A = te.placeholder((1000,), name="A")
        B = te.extern(A.shape, [A], lambda i, o: te.call_packed("exit.copy", i[0], o[0]))
        f = tvm.build(te.create_schedule(B.op), [A, B])
        a = np.ones(1000, "float32")
        def loop():
            b = np.empty_like(a)
            while True:
                f(a, b)
        for _ in range(3):
            threading.Thread(target=loop, daemon=True).start()
        time.sleep(0.2)
        b = np.empty_like(a)
        f(a, b)
        assert (b == 1).all()
    """)
    for _ in range(3):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr[-2000:]
