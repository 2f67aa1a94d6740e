"""runner="ray": builds as Ray tasks, measurement on an actor, on a local Ray instance.

The tuning runs in a subprocess (Ray starts threads, processes and signal handlers that should
not outlive this test in the pytest process); its log is checked here.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

import pytvmbridge as tvm
from pytvmbridge import autotvm
from pytvmbridge.autotvm import record
from pytvmbridge.autotvm.measure import CRASH, OK, WRONG_ANSWER


@autotvm.template("test_ray_scale")
def scale_template(n):
    """mode 0/1: fine (plain or vectorized); 2: crashes the build; 3: computes 5a + 1."""
    cfg = autotvm.get_config()
    cfg.define_knob("mode", [0, 1, 2, 3])
    mode = cfg["mode"].val
    if mode == 2:
        import ctypes

        ctypes.string_at(0)  # a segmentation fault in the build task's process
    A = tvm.placeholder((n,), name="A")
    B = tvm.compute((n,), lambda i: A[i] * (5.0 if mode == 3 else 2.0) + 1.0, name="B")
    s = tvm.create_schedule(B.op)
    if mode == 1:
        _, xi = s[B].split(B.op.axis[0], factor=16)
        s[B].vectorize(xi)
    return s, [A, B]


SCRIPT = """
import sys
sys.path.insert(0, {testdir!r})
import ray
from pytvmbridge import autotvm
from pytvmbridge.autotvm.measure import MeasureOption
import test_autotvm_ray  # the template, sent to the workers by value

ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
task = autotvm.task.create("test_ray_scale", args=(4096,))
opt = MeasureOption(repeat=2, min_repeat_ms=1, timeout=60, slow_factor=float("inf"))
autotvm.GridSearchTuner(task).tune(
    4, measure_option=opt, log_file={log!r}, n_parallel=2, runner="ray", progress=False,
    verify=False,
)
ray.shutdown()
"""


def test_ray_runner_on_a_local_instance(tmp_path):
    log = str(tmp_path / "ray.json")
    script = SCRIPT.format(testdir=str(__import__("pathlib").Path(__file__).parent), log=log)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    recs = {r["config"]["mode"]: r for r in record.load(log)}
    assert [recs[m]["error"] for m in range(4)] == [OK, OK, CRASH, WRONG_ANSWER]
    assert all(len(recs[m]["features"]) == 13 for m in (0, 1, 3))
    assert all(len(recs[m]["costs"]) == 2 for m in (0, 1))
    # the best valid record replays (this process) and computes 2 * a + 1
    task = autotvm.task.create("test_ray_scale", args=(4096,))
    with autotvm.apply_history_best(log) as ctx:
        best = ctx.best(task.workload_key)
        assert best["config"]["mode"] in (0, 1)
        assert record.record_cost(best) == min(record.record_cost(recs[m]) for m in (0, 1))
        s, args = scale_template(4096)
    a = np.random.default_rng(0).standard_normal(4096).astype("float32")
    b = np.zeros(4096, "float32")
    tvm.build(s, args)(a, b)
    np.testing.assert_allclose(b, 2 * a + 1, rtol=1e-6)
