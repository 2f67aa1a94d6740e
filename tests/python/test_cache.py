"""The on-disk compile cache (API.md section 9): a second process finds a build in the cache,
concurrent processes fill it safely, a read-only directory warns, the off switch works, the size
cap prunes least recently used entries, and kernels that print alike are never confused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import cache


@pytest.fixture
def cache_dir(tmp_path):
    """A private cache directory for this test, restored afterwards."""
    directory = tmp_path / "cache"
    cache.set_dir(directory)
    cache.enable(None)
    yield directory
    cache.set_dir(None)
    cache.enable(None)


def entries(directory) -> list[str]:
    return sorted(p.name for p in directory.rglob("*.ptb"))


def run_fresh(code: str, env: dict[str, str], timeout: float = 180) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen, timeout: float = 180) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return out


KERNEL_SCRIPT = """
    import json, numpy as np, pytvmbridge as tvm
    from pytvmbridge import cache

    @tvm.kernel
    def scaled_tanh(x):
        return tvm.compute(x.shape, lambda i, j: tvm.tanh(x[i, j]) * 3.0 + 1.0, name="y")

    x = np.linspace(-2, 2, 35, dtype="float32").reshape(5, 7)
    y = scaled_tanh(x)
    print(json.dumps({"y": y.tolist(), **cache.stats()}))
"""


def test_a_second_process_finds_the_kernel_in_the_cache(cache_dir):
    env = {"PYTVMBRIDGE_CACHE_DIR": str(cache_dir)}
    first = json.loads(finish(run_fresh(KERNEL_SCRIPT, env)))
    assert (first["hits"], first["misses"], first["writes"]) == (0, 1, 1)
    assert len(entries(cache_dir)) == 1
    second = json.loads(finish(run_fresh(KERNEL_SCRIPT, env)))
    assert (second["hits"], second["misses"], second["writes"]) == (0 + 1, 0, 0)
    x = np.linspace(-2, 2, 35, dtype="float32").reshape(5, 7)
    for result in (first, second):
        np.testing.assert_allclose(result["y"], np.tanh(x) * 3.0 + 1.0, rtol=1e-5, atol=1e-6)


def test_tc_definitions_use_the_cache_across_processes(cache_dir):
    script = """
        import json, numpy as np
        from pytvmbridge import tc, cache
        mv = tc.define("def mv(float(M, K) A, float(K) x) -> (y) { y(m) +=! A(m, k) * x(k) }")
        a = np.arange(12, dtype="float32").reshape(3, 4); x = np.array([1, -1, 2, 0.5], "float32")
        print(json.dumps({"y": mv(a, x).tolist(), **cache.stats()}))
    """
    env = {"PYTVMBRIDGE_CACHE_DIR": str(cache_dir)}
    first = json.loads(finish(run_fresh(script, env)))
    second = json.loads(finish(run_fresh(script, env)))
    assert first["writes"] == 1 and second["hits"] == 1 and second["writes"] == 0
    a = np.arange(12, dtype="float32").reshape(3, 4)
    expected = a @ np.array([1, -1, 2, 0.5], "float32")
    np.testing.assert_allclose(first["y"], expected)
    np.testing.assert_allclose(second["y"], expected)


def test_concurrent_processes_fill_the_cache_safely(cache_dir):
    script = """
        import json, numpy as np, pytvmbridge as tvm
        results = []
        for c in range(6):
            A = tvm.placeholder((64,), name="A")
            B = tvm.compute((64,), lambda i: A[i] * float(c) + 0.5, name="B")
            f = tvm.cache.build(tvm.create_schedule(B.op), [A, B], name="affine")
            a = np.arange(64, dtype="float32"); b = np.empty(64, "float32"); f(a, b)
            results.append(b.tolist())
        print(json.dumps(results))
    """
    env = {"PYTVMBRIDGE_CACHE_DIR": str(cache_dir)}
    procs = [run_fresh(script, env) for _ in range(4)]
    outputs = [json.loads(finish(p)) for p in procs]
    a = np.arange(64, dtype="float32")
    for out in outputs:
        for c, b in enumerate(out):
            np.testing.assert_allclose(b, a * c + 0.5)
    # One entry per distinct build, no temporary file left behind, each entry loadable.
    assert len(entries(cache_dir)) == 6
    assert not [p for p in cache_dir.rglob("*") if p.name.startswith(".tmp-")]
    for path in cache_dir.rglob("*.ptb"):
        assert tvm.runtime.load_module(path).entry_name == "affine"


def test_an_unwritable_directory_warns_and_the_build_goes_on(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    cache.set_dir(blocker / "cache")  # cannot be created: its parent is a file
    try:
        A = tvm.placeholder((3,), name="A")
        B = tvm.compute((3,), lambda i: A[i] - 1.0, name="B")
        with pytest.warns(cache.CacheWarning, match="cannot write"):
            f = cache.build(tvm.create_schedule(B.op), [A, B], name="dec")
        b = np.empty(3, "float32")
        f(np.array([1, 2, 3], "float32"), b)
        assert b.tolist() == [0.0, 1.0, 2.0]
        # Warned once per directory, not at every build.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cache.build(tvm.create_schedule(B.op), [A, B], name="dec2")
    finally:
        cache.set_dir(None)


READ_ONLY_SCRIPT = """
    import json, warnings, numpy as np, pytvmbridge as tvm
    from pytvmbridge import cache

    @tvm.kernel
    def scaled_tanh(x):  # in the cache already: read from the read-only directory
        return tvm.compute(x.shape, lambda i, j: tvm.tanh(x[i, j]) * 3.0 + 1.0, name="y")

    @tvm.kernel
    def quad(x):  # not in it: built, and the write fails with one warning
        return tvm.compute(x.shape, lambda i: x[i] * 4.0, name="q")

    x = np.linspace(-2, 2, 35, dtype="float32").reshape(5, 7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = scaled_tanh(x)
        q = quad(np.array([1, 2], "float32"))
    kinds = [w.category.__name__ for w in caught]
    print(json.dumps({"y": y.tolist(), "q": q.tolist(), "warnings": kinds, **cache.stats()}))
"""


def test_a_read_only_directory_is_read_and_warns_on_writes(cache_dir):
    finish(run_fresh(KERNEL_SCRIPT, {"PYTVMBRIDGE_CACHE_DIR": str(cache_dir)}))  # one entry
    command = [sys.executable, "-c", textwrap.dedent(READ_ONLY_SCRIPT)]
    if os.geteuid() == 0:
        # Root writes into read-only directories unless it gives up overriding permissions.
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv to drop CAP_DAC_OVERRIDE")
        caps = "-dac_override,-dac_read_search"
        command = [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}", *command]
    directories = [cache_dir, *(p for p in cache_dir.rglob("*") if p.is_dir())]
    for d in directories:
        d.chmod(0o500)
    try:
        proc = subprocess.run(
            command,
            env={**os.environ, "PYTVMBRIDGE_CACHE_DIR": str(cache_dir)},
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        for d in directories:
            d.chmod(0o700)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["hits"] == 1 and out["writes"] == 0 and out["warnings"] == ["CacheWarning"]
    x = np.linspace(-2, 2, 35, dtype="float32").reshape(5, 7)
    np.testing.assert_allclose(out["y"], np.tanh(x) * 3.0 + 1.0, rtol=1e-5, atol=1e-6)
    assert out["q"] == [4.0, 8.0]
    assert len(entries(cache_dir)) == 1


def test_the_off_switch(cache_dir):
    proc = run_fresh(
        KERNEL_SCRIPT, {"PYTVMBRIDGE_CACHE_DIR": str(cache_dir), "PYTVMBRIDGE_CACHE": "0"}
    )
    out = json.loads(finish(proc))
    assert (out["hits"], out["misses"], out["writes"]) == (0, 0, 0)
    assert not cache_dir.exists()
    cache.disable()
    A = tvm.placeholder((2,), name="A")
    B = tvm.compute((2,), lambda i: A[i] + 7.0, name="B")
    f = cache.build(tvm.create_schedule(B.op), [A, B])
    b = np.empty(2, "float32")
    f(np.zeros(2, "float32"), b)
    assert b.tolist() == [7.0, 7.0] and not cache_dir.exists()


def test_size_cap_prunes_least_recently_used(cache_dir, monkeypatch):
    def build(c: float):
        A = tvm.placeholder((8,), name="A")
        B = tvm.compute((8,), lambda i: A[i] + c, name="B")
        return cache.build(tvm.create_schedule(B.op), [A, B], name="add_c")

    build(1.0)
    build(2.0)
    paths = sorted(cache_dir.rglob("*.ptb"), key=lambda p: p.stat().st_mtime)
    assert len(paths) == 2
    size = max(p.stat().st_size for p in paths)
    # Age both; then use the first build again, which makes it the most recently used.
    for k, p in enumerate(paths):
        os.utime(p, (time.time() - 1000 + k, time.time() - 1000 + k))
    hits = cache.stats()["hits"]
    build(1.0)
    assert cache.stats()["hits"] == hits + 1
    monkeypatch.setenv("PYTVMBRIDGE_CACHE_MAX_BYTES", str(2 * size + size // 2))
    f = build(3.0)  # the third entry goes over the cap: the least recently used one goes
    remaining = entries(cache_dir)
    assert len(remaining) == 2
    survivors = {tvm.runtime.read_manifest(p)["lowered"] for p in cache_dir.rglob("*.ptb")}
    assert any("1.0" in text for text in survivors) and any("3.0" in text for text in survivors)
    assert not any("2.0" in text for text in survivors)
    b = np.empty(8, "float32")
    f(np.zeros(8, "float32"), b)
    assert b.tolist() == [3.0] * 8


def test_builds_that_print_alike_have_different_entries(cache_dir):
    # One size variable shared by both inputs, or two different variables both named "n".
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    B = tvm.placeholder((n,), name="B")
    C = tvm.compute((n,), lambda i: A[i] + B[i], name="C")
    shared = cache.build(tvm.create_schedule(C.op), [A, B, C], name="add")
    n1, n2 = tvm.var("n"), tvm.var("n")
    A2 = tvm.placeholder((n1,), name="A")
    B2 = tvm.placeholder((n2,), name="B")
    C2 = tvm.compute((n1,), lambda i: A2[i] + B2[i], name="C")
    separate = cache.build(tvm.create_schedule(C2.op), [A2, B2, C2], name="add")
    assert len(entries(cache_dir)) == 2
    a, b_long, c = np.ones(3, "float32"), np.arange(5, dtype="float32"), np.empty(3, "float32")
    separate(a, b_long, c)  # two sizes: B may be longer
    assert c.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="size variable 'n' is 3"):
        shared(a, b_long, c)

    # Constants differing in the last bit are different builds too.
    def scale(c: float):
        X = tvm.placeholder((1,), name="X", dtype="float64")
        Y = tvm.compute((1,), lambda i: X[i] * tvm.const(c, "float64"), name="Y")
        return cache.build(tvm.create_schedule(Y.op), [X, Y], name="scale")

    y1, y2 = np.empty(1), np.empty(1)
    scale(1.0)(np.ones(1), y1)
    scale(np.nextafter(1.0, 2.0))(np.ones(1), y2)
    assert y1[0] == 1.0 and y2[0] == np.nextafter(1.0, 2.0)


def test_a_damaged_entry_is_rebuilt(cache_dir):
    A = tvm.placeholder((4,), name="A")
    B = tvm.compute((4,), lambda i: A[i] * A[i], name="B")
    s = tvm.create_schedule(B.op)
    cache.build(s, [A, B], name="sq")
    (path,) = cache_dir.rglob("*.ptb")
    path.write_bytes(path.read_bytes()[:100])
    f = cache.build(s, [A, B], name="sq")
    b = np.empty(4, "float32")
    f(np.arange(4, dtype="float32"), b)
    assert b.tolist() == [0.0, 1.0, 4.0, 9.0]
    assert tvm.runtime.load_module(path).entry_name == "sq"  # rewritten whole


def test_docstring_examples():
    import doctest

    result = doctest.testmod(cache, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_a_cached_module_compiles_its_strided_variant_on_demand(cache_dir):
    n = tvm.var("n")
    A = tvm.placeholder((n,), name="A")
    B = tvm.compute((n,), lambda i: A[i] * 5.0, name="B")
    s = tvm.create_schedule(B.op)
    cache.build(s, [A, B], name="times5")
    hits = cache.stats()["hits"]
    f = cache.build(s, [A, B], name="times5")
    assert cache.stats()["hits"] == hits + 1
    a = np.arange(10, dtype="float32")
    b = np.zeros(10, "float32")
    f(a[::2], b[::2])
    np.testing.assert_allclose(b[::2], a[::2] * 5.0)
    assert b[1::2].tolist() == [0.0] * 5


def _kernel_x():
    A = tvm.placeholder((4,), name="A", dtype="float64")
    return [A, tvm.compute((4,), lambda i: A[i] + 1.0, name="B")]


def _kernel_y():
    A = tvm.placeholder((8, 8), name="A")
    Bm = tvm.placeholder((8, 8), name="Bm")
    return [A, Bm, tvm.compute((8, 8), lambda i, j: A[i, j] * Bm[i, j], name="C")]


def test_an_entry_holding_another_build_is_rebuilt(cache_dir):
    # a file copied (or a colliding description) under another key: its signature differs
    cache.build_auto(_kernel_x(), name="x")
    (x_entry,) = cache_dir.rglob("*.ptb")
    cache.build_auto(_kernel_y(), name="y")
    (y_entry,) = set(cache_dir.rglob("*.ptb")) - {x_entry}
    shutil.copy(x_entry, y_entry)
    errors = cache.stats()["errors"]
    g = cache.build_auto(_kernel_y(), name="y")
    assert cache.stats()["errors"] == errors + 1
    assert g.arg_names == ["A", "Bm", "C"]
    a, c = np.full((8, 8), 2.0, "float32"), np.empty((8, 8), "float32")
    g(a, a, c)
    assert (c == 4.0).all()


def test_compiler_switches_are_part_of_the_key(cache_dir, monkeypatch):
    A = tvm.placeholder((16,), name="A")
    B = tvm.compute((16,), lambda i: A[i] * 2.0, name="B")
    cache.build_auto([A, B], name="twice")
    monkeypatch.setenv("PYTVMBRIDGE_NO_PREFETCH", "1")
    hits = cache.stats()["hits"]
    cache.build_auto([A, B], name="twice")  # another compiler setting: another entry
    assert cache.stats()["hits"] == hits and len(entries(cache_dir)) == 2
    monkeypatch.delenv("PYTVMBRIDGE_NO_PREFETCH")
    cache.build_auto([A, B], name="twice")
    assert cache.stats()["hits"] == hits + 1


def test_entries_follow_the_umask_and_stale_temporaries_are_removed(cache_dir):
    old = os.umask(0o022)
    try:
        A = tvm.placeholder((4,), name="A")
        B = tvm.compute((4,), lambda i: A[i] - 1.0, name="B")
        cache.build_auto([A, B], name="dec")
    finally:
        os.umask(old)
    (entry,) = cache_dir.rglob("*.ptb")
    assert entry.stat().st_mode & 0o777 == 0o644  # readable by others, as a new file is
    stale = entry.parent / ".tmp-abandoned"
    fresh = entry.parent / ".tmp-writing"
    stale.write_bytes(b"x" * 1000)
    fresh.write_bytes(b"x" * 1000)
    os.utime(stale, (time.time() - 2 * cache.STALE_TEMPORARY_S,) * 2)
    cache.clear()
    assert not stale.exists() and fresh.exists()  # a write under way is left alone
    assert entries(cache_dir) == []


def test_cache_settings_are_checked(cache_dir, monkeypatch):
    with pytest.raises(ValueError, match="set_dir: path must name a directory"):
        cache.set_dir("")
    with pytest.raises(TypeError, match="set_dir: path must be a str"):
        cache.set_dir(3)
    cache.set_dir("~/ptb-cache-test")
    assert cache.cache_dir() == os.path.join(os.path.expanduser("~"), "ptb-cache-test")
    cache.set_dir(cache_dir)
    monkeypatch.setenv("PYTVMBRIDGE_CACHE", "maybe")
    with pytest.warns(cache.CacheWarning, match="PYTVMBRIDGE_CACHE='maybe' is not understood"):
        assert cache.enabled()
    monkeypatch.setenv("PYTVMBRIDGE_CACHE", "disabled")
    assert not cache.enabled()
    monkeypatch.setenv("PYTVMBRIDGE_CACHE_MAX_BYTES", "1e3")
    with pytest.warns(cache.CacheWarning, match="PYTVMBRIDGE_CACHE_MAX_BYTES='1e3'"):
        assert cache._max_bytes() == cache.DEFAULT_MAX_BYTES
