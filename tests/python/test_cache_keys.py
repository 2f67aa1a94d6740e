"""The compile cache's key for automatic schedules (cache.build_auto): found from the computation
before scheduling, so that a hit in a new process schedules and lowers nothing, and never
confuses computations that differ in anything that changes the code. Also: torch.compile graph
partitions are cached across processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import _core, cache


@pytest.fixture
def cache_dir(tmp_path):
    directory = tmp_path / "cache"
    cache.set_dir(directory)
    cache.enable(None)
    yield directory
    cache.set_dir(None)
    cache.enable(None)


def entries(directory) -> list[str]:
    return sorted(p.name for p in directory.rglob("*.ptb"))


def run_fresh(code: str, cache_dir, timeout: float = 240) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, "PYTVMBRIDGE_CACHE_DIR": str(cache_dir)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


MATMUL = """
    import json, numpy as np, pytvmbridge as tvm
    from pytvmbridge import _core, autoschedule, cache

    if {forbid}:
        # A hit must need none of these: no scheduling, no lowering, no compiling.
        def forbidden(*args, **kwargs):
            raise AssertionError("a cache hit scheduled or lowered")
        autoschedule.auto_schedule = forbidden
        _core.build_fingerprint = forbidden
        _core.build = forbidden
        _core.lower = forbidden

    @tvm.kernel
    def matmul(x, y):
        k = tvm.reduce_axis((0, x.shape[1]), name="k")
        return tvm.compute((x.shape[0], y.shape[1]),
                           lambda i, j: tvm.sum(x[i, k] * y[k, j], axis=k), name="z")

    x = np.arange(35, dtype="float32").reshape(5, 7) / 7
    y = np.cos(np.arange(28, dtype="float32")).reshape(7, 4)
    z = matmul(x, y)
    zt = np.empty((4, 5), "float32")
    matmul(x, y, out=zt.T)  # a strided output: the variant the entry lacks, made on demand
    print(json.dumps({{"z": z.tolist(), "zt": zt.T.tolist(), **cache.stats()}}))
"""


def test_a_kernel_hit_in_a_new_process_schedules_and_lowers_nothing(cache_dir):
    first = run_fresh(MATMUL.format(forbid=False), cache_dir)
    assert (first["hits"], first["writes"]) == (0, 1)
    second = run_fresh(MATMUL.format(forbid=True), cache_dir)
    assert (second["hits"], second["misses"], second["writes"]) == (1, 0, 0)
    x = np.arange(35, dtype="float32").reshape(5, 7) / 7
    y = np.cos(np.arange(28, dtype="float32")).reshape(7, 4)
    for result in (first, second):
        np.testing.assert_allclose(result["z"], x @ y, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(result["zt"], x @ y, rtol=1e-5, atol=1e-5)


def test_auto_builds_that_print_alike_have_different_entries(cache_dir):
    # Shared size variable or two variables both named "n": different reads are safe.
    n = tvm.var("n")
    A, B = tvm.placeholder((n,), name="A"), tvm.placeholder((n,), name="B")
    C = tvm.compute((n,), lambda i: A[i] + B[i], name="C")
    shared = cache.build_auto([A, B, C], name="add")
    n1, n2 = tvm.var("n"), tvm.var("n")
    A2, B2 = tvm.placeholder((n1,), name="A"), tvm.placeholder((n2,), name="B")
    C2 = tvm.compute((n1,), lambda i: A2[i] + B2[i], name="C")
    separate = cache.build_auto([A2, B2, C2], name="add")
    assert len(entries(cache_dir)) == 2
    a, b_long, c = np.ones(3, "float32"), np.arange(5, dtype="float32"), np.empty(3, "float32")
    separate(a, b_long, c)
    assert c.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="size variable 'n' is 3"):
        shared(a, b_long, c)

    # Constants differing in the last bit.
    def scale(c: float):
        X = tvm.placeholder((1,), name="X", dtype="float64")
        Y = tvm.compute((1,), lambda i: X[i] * tvm.const(c, "float64"), name="Y")
        return cache.build_auto([X, Y], name="scale")

    y1, y2 = np.empty(1), np.empty(1)
    scale(1.0)(np.ones(1), y1)
    scale(np.nextafter(1.0, 2.0))(np.ones(1), y2)
    assert y1[0] == 1.0 and y2[0] == np.nextafter(1.0, 2.0)

    # Custom reducers of one name whose combiners differ (the printer shows only the name).
    def reduce_with(combine, identity):
        red = tvm.comm_reducer(combine, lambda t: tvm.const(identity, t), name="red")
        X = tvm.placeholder((8,), name="X")
        k = tvm.reduce_axis((0, 8), name="k")
        Y = tvm.compute((1,), lambda i: red(X[k], axis=k), name="Y")
        return cache.build_auto([X, Y], name="reduce")

    x = np.arange(1, 9, dtype="float32")
    total, largest = np.empty(1, "float32"), np.empty(1, "float32")
    reduce_with(lambda a, b: a + b, 0.0)(x, total)
    reduce_with(lambda a, b: tvm.max(a, b), -1e30)(x, largest)
    assert total[0] == x.sum() and largest[0] == x.max()

    # The same computation with another tag, dtype, or name: other entries; the same: a hit.
    before = len(entries(cache_dir))
    X = tvm.placeholder((4,), name="X", dtype="int32")
    Y = tvm.compute((4,), lambda i: X[i] * 3, name="Y")
    cache.build_auto([X, Y], name="triple")
    hits = cache.stats()["hits"]
    X2 = tvm.placeholder((4,), name="X", dtype="int32")
    Y2 = tvm.compute((4,), lambda i: X2[i] * 3, name="Y")
    f = cache.build_auto([X2, Y2], name="triple")
    assert cache.stats()["hits"] == hits + 1 and len(entries(cache_dir)) == before + 1
    out = np.empty(4, "int32")
    f(np.arange(4, dtype="int32"), out)
    assert out.tolist() == [0, 3, 6, 9]


def test_the_dag_text_refuses_what_it_cannot_describe():
    # Two distinct operations named alike: reads print by name, so no pre-lowering key.
    A = tvm.placeholder((4,), name="T")
    B = tvm.compute((4,), lambda i: A[i] + 1.0, name="T")
    assert _core.dag_fingerprint([A, B], "llvm", "f") == ""
    C = tvm.compute((4,), lambda i: A[i] + 1.0, name="U")
    text = _core.dag_fingerprint([A, C], "llvm", "f")
    assert "compute U" in text and "placeholder T float32" in text


def test_refused_dags_still_cache_through_lowering(cache_dir):
    A = tvm.placeholder((4,), name="T")
    B = tvm.compute((4,), lambda i: A[i] + 1.0, name="T")
    f = cache.build_auto([A, B], name="same_names")
    hits = cache.stats()["hits"]
    g = cache.build_auto([A, B], name="same_names")
    assert cache.stats()["hits"] == hits + 1 and len(entries(cache_dir)) == 1
    for m in (f, g):
        b = np.empty(4, "float32")
        m(np.arange(4, dtype="float32"), b)
        assert b.tolist() == [1.0, 2.0, 3.0, 4.0]


GRAPH = """
    import json, torch, pytvmbridge
    from pytvmbridge import cache

    def f(x, w):
        return torch.relu(x @ w) * 2.0 + 1.0

    x = torch.linspace(-1, 1, 24).reshape(4, 6)
    w = torch.cos(torch.arange(18.0)).reshape(6, 3)
    y = torch.compile(f, backend="pytvmbridge")(x, w)
    print(json.dumps({"y": y.tolist(), **cache.stats()}))
"""


def test_torch_compile_partitions_are_cached_across_processes(cache_dir):
    first = run_fresh(GRAPH, cache_dir)
    assert first["writes"] >= 1 and first["hits"] == 0
    second = run_fresh(GRAPH, cache_dir)
    assert second["hits"] == first["writes"] and second["writes"] == 0
    torch = pytest.importorskip("torch")
    x = torch.linspace(-1, 1, 24).reshape(4, 6)
    w = torch.cos(torch.arange(18.0)).reshape(6, 3)
    expected = (torch.relu(x @ w) * 2.0 + 1.0).numpy()
    for result in (first, second):
        np.testing.assert_allclose(result["y"], expected, rtol=1e-5, atol=1e-5)
