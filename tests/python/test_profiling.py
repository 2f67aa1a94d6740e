"""pytvmbridge.profile_loops(): every call of a compiled kernel run inside the block, and
every parallel loop in it, timed under its kernel's name (and a loop's place among the kernel's
parallel loops, the order lower() prints them), and PYTVMBRIDGE_LOOP_PROFILE=1 for a whole
process. Values are checked against NumPy; the loop counts and extents against the lowered
text."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import topi

rng = np.random.default_rng(5)


def _two_loops(n: int = 48, m: int = 40) -> tuple:
    """B = A * 2 and C = B.T + 1, each a root stage with its own parallel loop (n and m
    iterations)."""
    A = tvm.placeholder((n, m), name="A")
    B = tvm.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    C = tvm.compute((m, n), lambda i, j: B[j, i] + 1.0, name="C")
    s = tvm.create_schedule(C.op)
    s[B].parallel(B.op.axis[0])
    s[C].parallel(C.op.axis[0])
    return s, [A, C]


def _parallel_extents(text: str) -> list[int]:
    return [int(e) for e in re.findall(r"parallel \([^,]+, 0, (\d+)\)", text)]


def test_each_loop_is_named_counted_and_timed():
    s, args = _two_loops()
    f = tvm.build(s, args, name="twice")
    a = rng.standard_normal((48, 40)).astype("float32")
    c = np.zeros((40, 48), "float32")
    f(a, c)  # before the block: not counted
    with tvm.profile_loops() as prof:
        for _ in range(3):
            f(a, c)
    np.testing.assert_allclose(c, a.T * 2 + 1, rtol=1e-6)
    assert [r.name for r in prof] == ["twice loop 0", "twice loop 1", "twice call"]
    loops = [r for r in prof if not r.is_call]
    assert [r.iterations for r in loops] == _parallel_extents(str(tvm.lower(s, args))) == [48, 40]
    assert [r.calls for r in prof] == [3, 3, 3]
    for r in prof:
        assert 0 < r.min_ms <= r.median_ms <= r.max_ms
        assert r.min_ms * 3 <= r.total_ms + 1e-9 <= r.max_ms * 3 + 1e-9
    # A call includes its loops; the profile's total is the calls'.
    call = prof["twice call"]
    assert call.is_call and call.total_ms >= sum(r.total_ms for r in loops)
    assert prof.total_ms == pytest.approx(call.total_ms)
    assert prof["twice loop 1"] is prof[1]
    text = str(prof)
    assert text.splitlines()[0].split()[:3] == ["loop", "iterations", "calls"]
    assert "twice loop 0" in text and "<td>twice loop 1</td>" in prof._repr_html_()
    with pytest.raises(KeyError, match="'twice loop 0', 'twice loop 1'"):
        prof["twice loop 2"]


def test_off_outside_the_block_and_after_an_error():
    s, args = _two_loops(8, 8)
    f = tvm.build(s, args, name="small")
    a = np.ones((8, 8), "float32")
    c = np.zeros_like(a)
    with pytest.raises(RuntimeError, match="inside"):
        with tvm.profile_loops() as prof:
            f(a, c)
            raise RuntimeError("inside")
    assert [r.calls for r in prof] == [1, 1, 1]
    assert not tvm._core._loop_profile_enabled()
    with tvm.profile_loops() as again:
        pass
    assert len(again) == 0 and str(again) == "no compiled kernel ran"
    np.testing.assert_array_equal(c, np.full((8, 8), 3.0, "float32"))


def test_one_profile_at_a_time():
    with tvm.profile_loops():
        with pytest.raises(ValueError, match="already on"):
            with tvm.profile_loops():
                pass
    assert not tvm._core._loop_profile_enabled()


def test_an_auto_scheduled_convolution_matches_its_lowered_loops():
    x = tvm.placeholder((2, 16, 14, 14), name="x")
    w = tvm.placeholder((32, 16, 3, 3), name="w")
    y = topi.nn.relu(topi.nn.conv2d(x, w, padding=1))
    s = tvm.auto_schedule([y])
    extents = _parallel_extents(str(tvm.lower(s, [x, w, y])))
    assert extents  # the schedule has parallel loops to time
    f = tvm.build(s, [x, w, y], name="conv")
    xa = rng.standard_normal((2, 16, 14, 14)).astype("float32")
    wa = rng.standard_normal((32, 16, 3, 3)).astype("float32")
    out = np.zeros((2, 32, 14, 14), "float32")
    with tvm.profile_loops() as prof:
        f(xa, wa, out)
    assert [r.name for r in prof] == [f"conv loop {k}" for k in range(len(extents))] + ["conv call"]
    assert [r.iterations for r in prof if not r.is_call] == extents
    import torch

    ref = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(xa), torch.from_numpy(wa),
                                                padding=1))  # fmt: skip
    np.testing.assert_allclose(out, ref.numpy(), rtol=1e-4, atol=1e-4)


def test_a_compiled_graph_is_profiled_loop_by_loop():
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(32, 32, 1)
    ).eval()
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        f = torch.compile(model, backend="pytvmbridge")
        f(x)
        with tvm.profile_loops() as prof:
            y = f(x)
        torch.testing.assert_close(y, model(x), rtol=1e-4, atol=1e-4)
    loops = [r for r in prof if not r.is_call]
    calls = [r for r in prof if r.is_call]
    assert len(loops) >= 2 and len(calls) == 1  # one kernel for the whole partition
    kernel = calls[0].name.removesuffix(" call")
    assert [r.name for r in loops] == [f"{kernel} loop {k}" for k in range(len(loops))]
    assert all(r.calls == 1 and r.iterations >= 1 for r in prof)


def test_environment_variable_prints_the_table_at_exit():
    code = (
        "import numpy as np, pytvmbridge as tvm\n"
        "A = tvm.placeholder((32, 8), name='A')\n"
        "B = tvm.compute((32, 8), lambda i, j: A[i, j] + 1.0, name='B')\n"
        "s = tvm.create_schedule(B.op)\n"
        "s[B].parallel(B.op.axis[0])\n"
        "f = tvm.build(s, [A, B], name='inc')\n"
        "a = np.zeros((32, 8), 'float32'); b = np.empty_like(a)\n"
        "f(a, b); f(a, b)\n"
        "assert (b == 1).all()\n"
    )
    env = dict(os.environ, PYTVMBRIDGE_LOOP_PROFILE="1", PYTVMBRIDGE_CACHE="0")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "pytvmbridge loop profile" in out.stderr
    row = next(line for line in out.stderr.splitlines() if line.startswith("inc loop 0"))
    assert row.split()[3:5] == ["32", "2"]  # iterations, calls
    for off in ("0", "false", "OFF", "no", ""):  # the switch reads as the others do
        env["PYTVMBRIDGE_LOOP_PROFILE"] = off
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0 and "loop profile" not in out.stderr, (off, out.stderr)


def test_a_forked_child_starts_with_the_profile_off():
    # A tuner forks workers while kernels may be timed: the child must neither inherit a held
    # lock nor the parent's records, and the parent's profile goes on. Forked from a fresh
    # interpreter (this one may hold other libraries' threads, which fork() does not copy).
    code = (
        "import os, numpy as np, pytvmbridge as tvm\n"
        "A = tvm.placeholder((16, 8), name='A')\n"
        "B = tvm.compute((16, 8), lambda i, j: A[i, j] + 1.0, name='B')\n"
        "s = tvm.create_schedule(B.op)\n"
        "s[B].parallel(B.op.axis[0])\n"
        "f = tvm.build(s, [A, B], name='forked')\n"
        "a = np.ones((16, 8), 'float32'); b = np.zeros_like(a)\n"
        "with tvm.profile_loops() as prof:\n"
        "    f(a, b)\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        ok = not tvm._core._loop_profile_enabled()\n"
        "        ok = ok and not tvm._core._loop_profile_records()\n"
        "        b[:] = 0; f(a, b)\n"
        "        os._exit(0 if ok and (b == 2).all() else 1)\n"
        "    _, status = os.waitpid(pid, 0)\n"
        "    f(a, b)\n"
        "assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status\n"
        "assert [r.calls for r in prof] == [2, 2], [r.calls for r in prof]\n"
        "print('fork ok')\n"
    )
    env = dict(os.environ, PYTVMBRIDGE_CACHE="0")
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "fork ok" in out.stdout


def test_strided_arrays_show_the_generic_version():
    s, args = _two_loops(16, 8)
    f = tvm.build(s, args, name="viewed")
    a = rng.standard_normal((8, 16)).astype("float32").T  # a transposed view: strided
    c = np.zeros((8, 16), "float32")
    with tvm.profile_loops() as prof:
        f(a, c)
        f(np.ascontiguousarray(a), c)
    assert [r.name for r in prof] == [
        "viewed (strided) loop 0",
        "viewed (strided) loop 1",
        "viewed (strided) call",
        "viewed loop 0",
        "viewed loop 1",
        "viewed call",
    ]
    np.testing.assert_allclose(c, a.T * 2 + 1, rtol=1e-6)


def test_unit_stride_views_name_the_same_loops():
    # A view whose last axis is contiguous runs the strided variant's fast path, a copy of its
    # loop nest: the same two rows, numbered as in lower()'s text, as the general body's.
    s, args = _two_loops(16, 8)
    f = tvm.build(s, args, name="sliced")
    wide = rng.standard_normal((16, 20)).astype("float32")
    a = wide[:, 3:11]  # rows 20 apart, columns contiguous
    c = np.zeros((8, 16), "float32")
    with tvm.profile_loops() as prof:
        f(a, c)
        f(wide[:, 3:19:2], c)  # a stepped last axis: the general body
    assert [r.name for r in prof] == [
        "sliced (strided) loop 0",
        "sliced (strided) loop 1",
        "sliced (strided) call",
    ]
    assert [r.calls for r in prof] == [2, 2, 2]
    np.testing.assert_allclose(c, wide[:, 3:19:2].T * 2 + 1, rtol=1e-6)


def test_two_kernels_of_one_name_keep_separate_rows():
    # Every compiled graph's kernel is "fused_0"; a model with a graph break runs two.
    s1, args1 = _two_loops(16, 8)
    s2, args2 = _two_loops(32, 8)
    f1 = tvm.build(s1, args1, name="same")
    f2 = tvm.build(s2, args2, name="same")
    a1, c1 = np.ones((16, 8), "float32"), np.zeros((8, 16), "float32")
    a2, c2 = np.ones((32, 8), "float32"), np.zeros((8, 32), "float32")
    with tvm.profile_loops() as prof:
        f1(a1, c1)
        f2(a2, c2)
        f1(a1, c1)
    assert [(r.name, r.iterations, r.calls) for r in prof] == [
        ("same loop 0", 16, 2),
        ("same loop 1", 8, 2),
        ("same call", 1, 2),
        ("same loop 0 [2]", 32, 1),
        ("same loop 1 [2]", 8, 1),
        ("same call [2]", 1, 1),
    ]
    assert [r.is_call for r in prof] == [False, False, True] * 2
    calls = prof["same call"].total_ms + prof["same call [2]"].total_ms
    assert prof.total_ms == pytest.approx(calls)
    assert (c1 == 3).all() and (c2 == 3).all()


def test_kernels_freed_inside_the_block_keep_their_own_records():
    # A freed kernel's name string may be followed at its address by the next kernel's: each
    # kernel still gets its own loop and call rows
    import gc

    a = np.ones((64, 64), "float32")
    b = np.empty_like(a)

    def build(name):
        A = tvm.placeholder((64, 64), name="A")
        B = tvm.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="B")
        s = tvm.create_schedule(B.op)
        s[B].parallel(B.op.axis[0])
        return tvm.build(s, [A, B], name=name)

    with tvm.profile_loops() as prof:
        for i in range(4):
            m = build(f"freed{i}")
            m(a, b)
            del m
            gc.collect()
    names = [r.name for r in prof.records]
    for i in range(4):
        assert f"freed{i} loop 0" in names and f"freed{i} call" in names
    assert all(r.calls == 1 for r in prof.records if r.name.startswith("freed"))
    np.testing.assert_array_equal(b, 2 * a)
