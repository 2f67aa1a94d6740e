"""Saved modules of every front end round-trip through a fresh process: an ``@kernel`` variant
(``module_for``) and a ``tc.define`` build, loaded with ``runtime.load_module`` where nothing may
lower or compile, and run on sizes other than the ones they were built for."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

import pytvmbridge as tvm
from pytvmbridge import tc


def run_fresh(code: str, timeout: float = 180) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


LOAD_AND_RUN = """
    import numpy as np, pytvmbridge as tvm
    from pytvmbridge import _core
    def refuse(*args, **kwargs):
        raise AssertionError("compiled while loading")
    _core.build = _core.lower = refuse
    f = tvm.runtime.load_module({path!r})
    inputs = [np.load(p) for p in {inputs!r}]
    out = np.empty({out_shape!r}, "float32")
    f(*inputs, out)
    np.save({result!r}, out)
    print(f.entry_name)
"""


def test_a_kernel_variant_round_trips_through_a_fresh_process(tmp_path):
    @tvm.kernel
    def softplus_rows(x, w):
        k = tvm.reduce_axis((0, x.shape[1]), name="k")
        s = tvm.compute((x.shape[0],), lambda i: tvm.sum(x[i, k] * w[k], axis=k), name="s")
        return tvm.compute(s.shape, lambda i: tvm.log(1.0 + tvm.exp(s[i])), name="y")

    rng = np.random.default_rng(0)
    module = softplus_rows.module_for(np.zeros((4, 8), "float32"), np.zeros(8, "float32"))
    path = tmp_path / "softplus.ptb"
    module.export_library(str(path))
    x = rng.standard_normal((13, 5), dtype=np.float32)  # other sizes than at build time
    w = rng.standard_normal(5, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "w.npy", w)
    out = run_fresh(
        LOAD_AND_RUN.format(
            path=str(path),
            inputs=[str(tmp_path / "x.npy"), str(tmp_path / "w.npy")],
            out_shape=(13,),
            result=str(tmp_path / "y.npy"),
        )
    )
    assert out.strip() == "softplus_rows"
    expected = np.log1p(np.exp(x.astype("float64") @ w.astype("float64")))
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected, rtol=1e-5, atol=1e-5)


def test_a_tc_definition_round_trips_through_a_fresh_process(tmp_path):
    mv = tc.define("def mv(float(M, K) A, float(K) x) -> (y) { y(m) +=! A(m, k) * x(k) }")
    path = tmp_path / "mv.ptb"
    mv.build().export_library(str(path))
    a = np.arange(24, dtype="float32").reshape(6, 4) / 5
    x = np.array([1, -1, 2, 0.5], "float32")
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "x.npy", x)
    out = run_fresh(
        LOAD_AND_RUN.format(
            path=str(path),
            inputs=[str(tmp_path / "a.npy"), str(tmp_path / "x.npy")],
            out_shape=(6,),
            result=str(tmp_path / "y.npy"),
        )
    )
    assert out.strip() == "mv"
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), a @ x, rtol=1e-5, atol=1e-5)
