"""Memory planning (csrc/lower/plan_memory.cc): intermediates whose lifetimes do not overlap
share one allocation; a pad's input is stored in the pad's interior (lower/storage_flatten.cc).
Values against NumPy."""

import re

import numpy as np

import pytvmbridge as tvm
from pytvmbridge import topi


def _allocations(text: str) -> list[str]:
    """The names of the allocations at the top of a lowered function (no indentation)."""
    return re.findall(r"^allocate (\S+)\[", text, flags=re.M)


def _chain(n: int = 64) -> tuple[list, list]:
    """A -> B -> C -> D -> E (the output), every stage stored at the root (no inlining): B is
    dead once C is made, so D can take B's memory; C is read until E."""
    a = tvm.placeholder((n,), name="A")
    b = tvm.compute((n,), lambda i: a[i] + 1.0, name="B")
    c = tvm.compute((n,), lambda i: b[i] * 2.0, name="C")
    d = tvm.compute((n,), lambda i: c[i] - 3.0, name="D")
    e = tvm.compute((n,), lambda i: d[i] * c[i], name="E")
    return [a, e], [b, c, d]


def test_dead_buffer_is_reused_and_values_match() -> None:
    (a, e), _ = _chain()
    s = tvm.create_schedule(e.op)
    text = str(tvm.lower(s, [a, e]))
    # B (live for B and C's stages) and D (for D and E's) share; C is live throughout.
    assert sorted(_allocations(text)) == ["B+1", "C"], text
    assert "D[" in text  # the buffers keep their names in the loop nest
    f = tvm.build(s, [a, e])
    x = np.random.default_rng(0).standard_normal(64).astype("float32")
    out = np.empty(64, "float32")
    f(x, out)
    c = (x + 1.0) * 2.0
    np.testing.assert_allclose(out, (c - 3.0) * c, rtol=1e-6)


def test_larger_buffer_grows_a_freed_storage() -> None:
    # B (16 floats) is dead before D (64 floats) is made: D takes B's storage, grown to 64.
    a = tvm.placeholder((16,), name="A")
    b = tvm.compute((16,), lambda i: a[i] * 2.0, name="B")
    c = tvm.compute((64,), lambda i: b[i % 16] + 1.0, name="C")
    d = tvm.compute((64,), lambda i: c[63 - i] * 3.0, name="D")
    e = tvm.compute((64,), lambda i: d[i] + c[i], name="E")
    s = tvm.create_schedule(e.op)
    text = str(tvm.lower(s, [a, e]))
    assert "allocate B+1[float32 * 64i64]" in text, text
    f = tvm.build(s, [a, e])
    x = np.arange(16, dtype="float32")
    out = np.empty(64, "float32")
    f(x, out)
    c_ref = np.tile(x * 2.0, 4) + 1.0
    np.testing.assert_allclose(out, c_ref[::-1] * 3.0 + c_ref, rtol=1e-6)


def test_symbolic_sizes_keep_their_own_buffers() -> None:
    n = tvm.var("n")
    a = tvm.placeholder((n,), name="A")
    b = tvm.compute((n,), lambda i: a[i] + 1.0, name="B")
    c = tvm.compute((n,), lambda i: b[i] * 2.0, name="C")
    d = tvm.compute((n,), lambda i: c[i] - 3.0, name="D")
    e = tvm.compute((n,), lambda i: d[i] * 0.5, name="E")
    s = tvm.create_schedule(e.op)
    assert sorted(_allocations(str(tvm.lower(s, [a, e])))) == ["B", "C", "D"]
    f = tvm.build(s, [a, e])
    x = np.linspace(-1, 1, 37, dtype="float32")
    out = np.empty(37, "float32")
    f(x, out)
    np.testing.assert_allclose(out, (((x + 1.0) * 2.0) - 3.0) * 0.5, rtol=1e-6)


def _padded_stencil(pad_value: float) -> tuple[list, str]:
    """B = 2A + 1, P = pad(B) (1 row above and below, 2 columns left, 1 right), E = a 3x4 box
    sum over P plus B read again: B can live inside P's buffer."""
    a = tvm.placeholder((5, 6), name="A")
    b = tvm.compute((5, 6), lambda i, j: a[i, j] * 2.0 + 1.0, name="B")
    p = topi.nn.pad(b, [1, 2], [1, 1], pad_value=pad_value, name="P")
    ry = tvm.reduce_axis((0, 3), name="ry")
    rx = tvm.reduce_axis((0, 4), name="rx")
    s_ = tvm.compute((5, 6), lambda i, j: tvm.sum(p[i + ry, j + rx], axis=[ry, rx]), name="S")
    e = tvm.compute((5, 6), lambda i, j: s_[i, j] + b[i, j], name="E")
    s = tvm.create_schedule(e.op)
    return [a, e, s], str(tvm.lower(s, [a, e]))


def _stencil_reference(x: np.ndarray, pad_value: float) -> np.ndarray:
    b = x * 2.0 + 1.0
    p = np.pad(b, ((1, 1), (2, 1)), constant_values=pad_value)
    box = sum(p[dy : dy + 5, dx : dx + 6] for dy in range(3) for dx in range(4))
    return box + b


def test_pad_input_is_stored_in_the_pad_interior() -> None:
    for pad_value in (0.0, -7.5):
        (a, e, s), text = _padded_stencil(pad_value)
        assert "allocate B" not in text, text  # B is P's interior
        assert "if (!(" in text  # the pad writes only its border
        f = tvm.build(s, [a, e])
        x = np.random.default_rng(1).standard_normal((5, 6)).astype("float32")
        out = np.empty((5, 6), "float32")
        f(x, out)
        np.testing.assert_allclose(out, _stencil_reference(x, pad_value), rtol=1e-5, atol=1e-5)


def test_pad_of_an_input_or_with_symbolic_sizes_copies() -> None:
    # An argument cannot move into the pad's buffer; neither can a tensor of symbolic size.
    n = tvm.var("n")
    a = tvm.placeholder((n,), name="A")
    b = tvm.compute((n,), lambda i: a[i] + 1.0, name="B")
    p = topi.nn.pad(b, [2], [1], name="P")
    c = tvm.compute((n,), lambda i: p[i] + p[i + 3], name="C")
    s = tvm.create_schedule(c.op)
    text = str(tvm.lower(s, [a, c]))
    assert "allocate B" in text and "if (!(" not in text, text
    f = tvm.build(s, [a, c])
    x = np.arange(7, dtype="float32")
    out = np.empty(7, "float32")
    f(x, out)
    padded = np.pad(x + 1.0, (2, 1))
    np.testing.assert_allclose(out, padded[:7] + padded[3:10])
