"""Builds reuse one LLVM TargetMachine per target (csrc/codegen/jit.cc): a kernel compiled with
a TargetMachine that earlier builds used, of the same or another kernel, of fast-math and
strict targets interleaved, must be the object code a fresh TargetMachine gives, byte for
byte, and compute the same values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from pytvmbridge import _core

# In a fresh process (the first build of each target gets a new TargetMachine, the later
# ones reuse it): builds, in turn, a convolution (strict), a GELU-like kernel with exp (fast
# math), the convolution again, the exp kernel again, and saves each module; checks both
# kernels against NumPy.
SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import pytvmbridge as tvm
    from pytvmbridge import topi

    out = sys.argv[1]
    rng = np.random.default_rng(0)
    x = tvm.placeholder((2, 8, 10, 10), name="x")
    w = tvm.placeholder((16, 8, 3, 3), name="w")
    y = topi.nn.conv2d(x, w, strides=1, padding=1)
    a = tvm.placeholder((4096,), name="a")
    e = tvm.compute((4096,), lambda i: a[i] / (1.0 + tvm.exp(-1.702 * a[i])), name="e")
    xa = rng.standard_normal((2, 8, 10, 10)).astype("float32")
    wa = rng.standard_normal((16, 8, 3, 3)).astype("float32")
    aa = rng.standard_normal(4096).astype("float32")

    def conv_ref():
        xp = np.pad(xa.astype("float64"), ((0, 0), (0, 0), (1, 1), (1, 1)))
        r = np.zeros((2, 16, 10, 10))
        for dy in range(3):
            for dx in range(3):
                r += np.einsum("nchw,oc->nohw", xp[:, :, dy : dy + 10, dx : dx + 10],
                               wa[:, :, dy, dx].astype("float64"))
        return r

    steps = [("conv", "llvm"), ("silu", "llvm -fast-math"), ("conv", "llvm"),
             ("silu", "llvm -fast-math"), ("silu", "llvm")]
    for n, (kind, target) in enumerate(steps):
        if kind == "conv":
            f = tvm.build(tvm.auto_schedule([y]), [x, w, y], target=target, name="k")
            ya = np.empty((2, 16, 10, 10), "float32")
            f(xa, wa, ya)
            np.testing.assert_allclose(ya, conv_ref(), rtol=1e-4, atol=1e-4)
        else:
            f = tvm.build(tvm.auto_schedule([e]), [a, e], target=target, name="k")
            ea = np.empty(4096, "float32")
            f(aa, ea)
            ref = aa.astype("float64") / (1 + np.exp(-1.702 * aa.astype("float64")))
            np.testing.assert_allclose(ea, ref, rtol=1e-5, atol=1e-6)
        f.save(f"{out}/{n}.ptb")
    print("OK")
    """
)


def _run(out: Path) -> None:
    env = dict(os.environ, PYTVMBRIDGE_CACHE="0", PYTVMBRIDGE_COMPILE_THREADS="1")
    p = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert p.returncode == 0 and p.stdout.strip().endswith("OK"), p.stderr[-3000:]


def _code(path: Path) -> tuple[dict, bytes]:
    """A saved module's manifest less its compile time, and what follows it (object code and
    IR) less the file's closing checksum (which covers the compile time)."""
    data = path.read_bytes()
    size = int.from_bytes(data[16:24], "little")
    manifest = json.loads(data[24 : 24 + size])
    assert manifest == json.loads(_core.read_module_manifest(data))
    manifest.pop("compile_seconds")
    return manifest, data[24 + size : -4]


def test_reused_target_machine_gives_the_fresh_object_code(tmp_path):
    _run(tmp_path)
    saved = [_code(tmp_path / f"{n}.ptb") for n in range(5)]
    assert saved[2] == saved[0]  # the convolution, its TargetMachine used by one build before
    assert saved[3] == saved[1]  # the fast-math kernel, after a strict build in between
    assert saved[4] != saved[1]  # strict and fast-math code differ (else this shows nothing)
