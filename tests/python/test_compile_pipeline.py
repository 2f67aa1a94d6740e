"""The LLVM pipeline switch and the per-phase compile report, each in a fresh interpreter (both
environment variables are read once per process)."""

import os
import subprocess
import sys
import textwrap

SNIPPET = """
import numpy as np
import pytvmbridge as tvm
from pytvmbridge import topi

rng = np.random.default_rng(0)
x = tvm.placeholder((6, 40), name="x")
w = tvm.placeholder((24, 40), name="w")
y = topi.nn.softmax(topi.nn.relu(topi.nn.dense(x, w)), axis=-1)
f = tvm.build(tvm.auto_schedule([y]), [x, w, y])
xv = rng.standard_normal((6, 40)).astype("float32")
wv = rng.standard_normal((24, 40)).astype("float32")
out = np.empty((6, 24), "float32")
f(xv, wv, out)
z = np.maximum(xv.astype("float64") @ wv.T.astype("float64"), 0)
e = np.exp(z - z.max(axis=1, keepdims=True))
np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-6)
print("OK")
"""


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, PYTVMBRIDGE_CACHE="0", **env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SNIPPET)],
        capture_output=True,
        text=True,
        timeout=240,
        env=full,
    )


def test_compile_times_report_names_every_phase():
    result = _run({"PYTVMBRIDGE_COMPILE_TIMES": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("OK")
    llvm_lines = [
        ln for ln in result.stderr.splitlines() if ln.startswith("pytvmbridge compile llvm")
    ]
    assert llvm_lines, result.stderr
    fields = llvm_lines[-1].split(":", 1)[1].split()
    times = dict(zip(fields[::2], map(float, fields[1::2]), strict=True))
    assert list(times) == [
        "target",
        "emit_ir",
        "verify",
        "optimize",
        "bitcode",
        "codegen",
        "link",
        "total",
    ]
    assert all(t >= 0 for t in times.values())
    parts = sum(v for k, v in times.items() if k != "total")
    assert abs(times["total"] - parts) < 0.05 + 1e-3 * parts
    assert any(ln.startswith("pytvmbridge compile lower") for ln in result.stderr.splitlines())


def test_no_report_without_the_variable():
    result = _run({"PYTVMBRIDGE_COMPILE_TIMES": "0"})
    assert result.returncode == 0, result.stderr
    assert "pytvmbridge compile" not in result.stderr


def test_llvm_o2_pipeline_computes_the_same():
    result = _run({"PYTVMBRIDGE_LLVM_PIPELINE": "O2"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("OK")


def test_unparsable_pipeline_is_a_value_error():
    result = _run({"PYTVMBRIDGE_LLVM_PIPELINE": "function(no-such-pass)"})
    assert result.returncode != 0
    assert "ValueError" in result.stderr
    assert "PYTVMBRIDGE_LLVM_PIPELINE" in result.stderr
