"""fork() while another thread starts its first build (issue 9, item 7): the build asks whether
progress bars can be shown, and that question used to import tqdm. A fork() taken while the
other thread was inside that import left the child waiting forever on tqdm's module lock."""

import subprocess
import sys
import textwrap


def run_script(code: str, timeout: float) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr[-2000:])
    return result.stdout


def test_asking_whether_bars_can_be_shown_imports_nothing():
    out = run_script(
        """
        import sys
        import numpy as np
        import pytvmbridge as tvm
        from pytvmbridge import progress
        assert "tqdm" not in sys.modules
        assert progress.enabled()  # tqdm is installed (a test dependency)
        A = tvm.placeholder((8,), name="A")
        B = tvm.compute((8,), lambda i: A[i] + 1.0, name="B")
        f = tvm.build(tvm.create_schedule(B.op), [A, B])
        a = np.arange(8, dtype="float32")
        b = np.zeros(8, dtype="float32")
        f(a, b)
        assert np.array_equal(b, a + 1)
        assert "tqdm" not in sys.modules, "a short build imported tqdm"
        print("ok")
        """,
        timeout=120,
    )
    assert out.strip() == "ok"


def test_fork_while_another_thread_makes_its_first_build():
    # Each round starts a fresh thread's first builds in a fresh interpreter and forks 0.2 s
    # later (when that thread used to be inside tqdm's import); the child builds and runs.
    out = run_script(
        """
        import faulthandler, os, threading, time
        import numpy as np
        import pytvmbridge as tvm

        def make(n):
            A = tvm.placeholder((n,), name="A")
            B = tvm.compute((n,), lambda i: A[i] * 2.0, name="B")
            return tvm.build(tvm.create_schedule(B.op), [A, B])

        stop = False
        def builder():
            k = 0
            while not stop:
                make(64 + k % 50)
                k += 1
        threading.Thread(target=builder, daemon=True).start()
        for _ in range(3):
            time.sleep(0.2)
            pid = os.fork()
            if pid == 0:
                faulthandler.dump_traceback_later(60, exit=True)
                a = np.arange(8, dtype="float32")
                b = np.zeros(8, dtype="float32")
                make(8)(a, b)
                os._exit(0 if np.array_equal(b, a * 2) else 3)
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        stop = True
        print("ok")
        """,
        timeout=240,
    )
    assert out.strip() == "ok"
