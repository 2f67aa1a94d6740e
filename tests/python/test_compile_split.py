"""Two-thread builds (csrc/codegen/jit.cc): a module's functions (the kernel, its outlined
parallel bodies) are dealt into two groups, optimised and compiled on two threads and linked
as two objects. The split build must compute what the one-thread build computes, with the same
instructions, save and load as one object, and stay on one thread in forked children."""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

# Runs in a fresh process (the thread count is read once per process): builds a convolution
# (kernel, padding and packing nests, the micro-kernel: four LLVM functions) and a dense with
# bias, checks them against NumPy, saves the convolution and loads it back, and prints the
# assembly of both.
SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import pytvmbridge as tvm
    from pytvmbridge import topi

    out_dir = sys.argv[1]
    rng = np.random.default_rng(0)

    def conv_ref(x, w):
        n, c, h, wd = x.shape
        o, _, k, _ = w.shape
        xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        y = np.zeros((n, o, h, wd), "float64")
        for dy in range(k):
            for dx in range(k):
                patch = xp[:, :, dy : dy + h, dx : dx + wd]
                y += np.einsum("nchw,oc->nohw", patch, w[:, :, dy, dx])
        return y

    x = tvm.placeholder((2, 16, 12, 12), name="x")
    w = tvm.placeholder((32, 16, 3, 3), name="w")
    y = topi.nn.conv2d(x, w, strides=1, padding=1)
    conv = tvm.build(tvm.auto_schedule([y]), [x, w, y], name="conv")
    xa = rng.standard_normal((2, 16, 12, 12)).astype("float32")
    wa = rng.standard_normal((32, 16, 3, 3)).astype("float32")
    ya = np.empty((2, 32, 12, 12), "float32")
    conv(xa, wa, ya)
    np.testing.assert_allclose(ya, conv_ref(xa, wa), rtol=1e-4, atol=1e-4)

    conv.save(out_dir + "/conv.ptb")
    loaded = tvm.runtime.load_module(out_dir + "/conv.ptb")
    yb = np.empty_like(ya)
    loaded(xa, wa, yb)
    np.testing.assert_array_equal(yb, ya)
    assert loaded.get_source("ll") == conv.get_source("ll")

    a = tvm.placeholder((64, 96), name="a")
    b = tvm.placeholder((80, 96), name="b")
    c = tvm.placeholder((80,), name="c")
    d = topi.nn.dense(a, b, c)
    dense = tvm.build(tvm.auto_schedule([d]), [a, b, c, d], name="dense")
    aa = rng.standard_normal((64, 96)).astype("float32")
    ba = rng.standard_normal((80, 96)).astype("float32")
    ca = rng.standard_normal(80).astype("float32")
    da = np.empty((64, 80), "float32")
    dense(aa, ba, ca, da)
    ref = aa.astype("float64") @ ba.T.astype("float64") + ca
    np.testing.assert_allclose(da, ref, rtol=1e-4, atol=1e-4)

    with open(out_dir + "/conv.s", "w") as f:
        f.write(conv.get_source("asm"))
    with open(out_dir + "/dense.s", "w") as f:
        f.write(dense.get_source("asm"))
    print("ok")
    """
)


def run_script(script: str, threads: str, *args: str) -> str:
    """Runs script in a fresh interpreter with PYTVMBRIDGE_COMPILE_THREADS=threads, build
    timings on and the cache off; checks it printed "ok" and returns its stderr (the timings)."""
    env = dict(
        os.environ,
        PYTVMBRIDGE_COMPILE_THREADS=threads,
        PYTVMBRIDGE_COMPILE_TIMES="1",
        PYTVMBRIDGE_CACHE="0",
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
    return proc.stderr


def run_build(tmp_path: Path, threads: str) -> tuple[Path, str]:
    """Runs SCRIPT with PYTVMBRIDGE_COMPILE_THREADS=threads; returns its folder and stderr."""
    out = tmp_path / f"threads{threads}"
    out.mkdir()
    return out, run_script(SCRIPT, threads, str(out))


def instructions(asm: str) -> collections.Counter:
    """The instruction lines of an assembly listing, local label numbers taken out (the
    functions of a split build come back in another order)."""
    lines = []
    for line in asm.splitlines():
        if not line.startswith("\t") or line.startswith("\t."):
            continue
        line = re.sub(r"\.L(BB|CPI|func_end)\d+_?", r".L\1", line.strip())
        lines.append(re.sub(r"\.L(ptb[\w.]+)\$local", r"\1", line))
    return collections.Counter(lines)


def test_split_build_matches_one_thread_build(tmp_path):
    split, split_log = run_build(tmp_path, "2")
    single, single_log = run_build(tmp_path, "1")
    # The two-thread build did split both modules; the one-thread build did not.
    assert split_log.count("(second thread)") >= 2
    assert "(second thread)" not in single_log
    for name in ("conv.s", "dense.s"):
        a = instructions((split / name).read_text())
        b = instructions((single / name).read_text())
        assert sum(a.values()) > 50
        assert a == b, name


FORK_SCRIPT = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    import pytvmbridge as tvm

    def build_and_run(tag):
        # A convolution: the kernel, padding and packing nests and the micro-kernel, enough
        # work for a split build.
        from pytvmbridge import topi

        x = tvm.placeholder((2, 16, 12, 12), name="x")
        w = tvm.placeholder((32, 16, 1, 1), name="w")
        y = topi.nn.conv2d(x, w, strides=1, padding=1)
        f = tvm.build(tvm.auto_schedule([y]), [x, w, y], name="k_" + tag)
        xa = np.arange(2 * 16 * 144, dtype="float32").reshape(2, 16, 12, 12) % 7
        wa = np.arange(32 * 16, dtype="float32").reshape(32, 16, 1, 1) % 5
        ya = np.empty((2, 32, 14, 14), "float32")
        f(xa, wa, ya)
        xp = np.pad(xa, ((0, 0), (0, 0), (1, 1), (1, 1)))
        np.testing.assert_array_equal(ya, np.einsum("nchw,oc->nohw", xp, wa[:, :, 0, 0]))

    build_and_run("parent")
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            print("child start", file=sys.stderr, flush=True)
            build_and_run("child")
            sys.stderr.flush()
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    print("ok")
    """
)


def test_forked_child_builds_on_one_thread(tmp_path):
    # 2: split wherever a split pays, whatever the machine's load (the default looks for an
    # idle core), but never in a forked child.
    parent, _, child = run_script(FORK_SCRIPT, "2").partition("child start")
    assert "(second thread)" in parent
    assert "llvm k_child" in child
    assert "(second thread)" not in child


def test_split_build_computes_a_parallel_kernel():
    """In this process (default thread count): a kernel with an outlined parallel body."""
    import pytvmbridge as tvm

    n, m = 256, 300
    A = tvm.placeholder((n, m), name="A")
    B = tvm.compute((n, m), lambda i, j: tvm.exp(A[i, j]) + A[i, m - 1 - j], name="B")
    f = tvm.build(tvm.auto_schedule([B]), [A, B], name="exp_flip")
    a = np.random.default_rng(1).standard_normal((n, m)).astype("float32")
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_allclose(b, np.exp(a) + a[:, ::-1], rtol=1e-5, atol=1e-6)


def test_bad_compile_threads_value_is_a_value_error():
    # Read once per process, so it is checked in a fresh interpreter; a relu build is short
    # (never split) and must still report the bad value rather than ignore it.
    code = textwrap.dedent(
        """
        import pytvmbridge as tvm
        x = tvm.placeholder((64,), name="x")
        y = tvm.topi.nn.relu(x)
        try:
            tvm.build(tvm.auto_schedule([y]), [x, y])
        except ValueError as e:
            print("ValueError:", e)
        """
    )
    env = dict(os.environ, PYTVMBRIDGE_COMPILE_THREADS="7", PYTVMBRIDGE_CACHE="0")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert "ValueError: PYTVMBRIDGE_COMPILE_THREADS: expected 1 or 2" in out.stdout, out.stderr
    assert "found '7'" in out.stdout
