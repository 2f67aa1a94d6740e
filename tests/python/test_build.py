"""build(), lower() and the Module call path: values against NumPy/PyTorch, and every error."""

import platform

import numpy as np
import pytest
import torch

import pytvmbridge as tvm


def vadd(dtype="float32"):
    n = tvm.var("n")
    A = tvm.placeholder((n,), dtype=dtype, name="A")
    B = tvm.placeholder((n,), dtype=dtype, name="B")
    C = tvm.compute((n,), lambda i: A[i] + B[i], name="C")
    return tvm.build(tvm.create_schedule(C.op), [A, B, C], name="vadd")


def matmul_module(n=None, m=None, k=None, dtype="float32"):
    n = n if n is not None else tvm.var("n")
    m = m if m is not None else tvm.var("m")
    kk = k if k is not None else tvm.var("k")
    X = tvm.placeholder((n, kk), dtype=dtype, name="X")
    Y = tvm.placeholder((kk, m), dtype=dtype, name="Y")
    r = tvm.reduce_axis((0, kk), name="r")
    Z = tvm.compute((n, m), lambda i, j: tvm.sum(X[i, r] * Y[r, j], axis=r), name="Z")
    s = tvm.create_schedule(Z.op)
    return tvm.build(s, [X, Y, Z], name="mm"), s, (X, Y, Z)


def test_seed_matmul_on_torch_matches_torch_mm():
    f, _, _ = matmul_module(tvm.convert(56), tvm.convert(56), tvm.convert(56))
    x, y = torch.rand(56, 56), torch.rand(56, 56)
    z = torch.empty(56, 56)
    f(x, y, z)
    torch.testing.assert_close(z, x.mm(y), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(0, 3, 4), (1, 1, 1), (5, 7, 3), (33, 17, 65)])
def test_symbolic_matmul_shapes_including_zero_size(shape):
    n, kk, m = shape
    f, _, _ = matmul_module()
    x = np.random.rand(n, kk).astype("float32")
    y = np.random.rand(kk, m).astype("float32")
    z = np.full((n, m), np.nan, dtype="float32")
    f(x, y, z)
    np.testing.assert_allclose(z, x @ y, rtol=1e-5, atol=1e-5)


def test_zero_length_reduction_gives_identity():
    f, _, _ = matmul_module()
    x = np.zeros((3, 0), "float32")
    y = np.zeros((0, 2), "float32")
    z = np.full((3, 2), 7.0, "float32")
    f(x, y, z)
    np.testing.assert_array_equal(z, np.zeros((3, 2), "float32"))


def test_strided_torch_views_as_inputs_and_outputs():
    f, _, _ = matmul_module()
    base_x = torch.rand(20, 30)
    base_y = torch.rand(30, 40)
    x = base_x[2:12:2, 1:21]  # non-contiguous rows, storage offset
    y = base_y.t()[5:25, ::3]  # transposed and strided
    n, m = x.shape[0], y.shape[1]
    out_base = torch.zeros(40, 40)
    # (n, m), column-major with an offset: z[i, j] = base[i, 1 + j]
    z = out_base.t()[1 : 1 + m, :n].t()
    assert not z.is_contiguous()
    f(x, y, z)
    torch.testing.assert_close(z, x @ y, rtol=1e-5, atol=1e-5)
    outside = out_base.clone()
    outside[:n, 1 : 1 + m] = 0
    assert torch.count_nonzero(outside) == 0  # nothing written outside the view


def test_pipeline_with_intermediate_stage():
    n = tvm.var("n")
    A = tvm.placeholder((n, 8), name="A")
    B = tvm.compute((n, 8), lambda i, j: A[i, j] * 2.0, name="B")
    k = tvm.reduce_axis((0, 8), name="k")
    C = tvm.compute((n,), lambda i: tvm.sum(B[i, k] + 1.0, axis=k), name="C")
    D = tvm.compute((n,), lambda i: tvm.sqrt(C[i]), name="D")
    f = tvm.build(tvm.create_schedule(D.op), [A, D])
    a = np.random.rand(5, 8).astype("float32")
    d = np.empty(5, "float32")
    f(a, d)
    np.testing.assert_allclose(d, np.sqrt((a * 2 + 1).sum(axis=1)), rtol=1e-5)


def test_lower_shows_the_loop_nest():
    _, s, args = matmul_module(tvm.convert(4), tvm.convert(4), tvm.convert(4))
    text = str(tvm.lower(s, list(args), name="mm"))
    assert "def mm(" in text
    assert "for (i, 0, 4)" in text and "for (r, 0, 4)" in text
    assert "Z[" in text and "X[" in text


def test_get_source_and_entry_name():
    f = vadd()
    assert f.entry_name == "vadd"
    assert "define" in f.get_source("ll")
    assert "vadd" in f.get_source("asm")
    with pytest.raises(ValueError, match="format"):
        f.get_source("ptx")


def test_time_evaluator_reports_seconds():
    f = vadd()
    a = np.ones(16, "float32")
    c = np.empty(16, "float32")
    result = f.time_evaluator(f.entry_name, number=3, repeat=2)(a, a, c)
    assert len(result.results) == 2 and 0 < result.mean < 1
    np.testing.assert_array_equal(c, 2 * a)
    mean, results = f.time_evaluator(f.entry_name, tvm.cpu(0), number=1, repeat=3, min_repeat_ms=5)(
        a, a, c
    )  # TVM's unpacking, and min_repeat_ms accepted
    assert len(results) == 3 and mean == pytest.approx(sum(results) / 3)
    for kwargs, error, message in [
        ({"number": 2.5}, TypeError, "number must be an int, got 2.5"),
        ({"repeat": "3"}, TypeError, "repeat must be an int"),
        ({"number": 0}, ValueError, "number must be >= 1"),
        ({"min_repeat_ms": float("nan")}, ValueError, "min_repeat_ms must be in"),
        ({"dev": "cuda"}, ValueError, "dev must be the CPU"),
    ]:
        with pytest.raises(error, match=message):
            f.time_evaluator(f.entry_name, **kwargs)


@pytest.mark.parametrize(
    "dtype", ["int8", "int16", "int32", "int64", "uint8", "uint32", "float16", "float32", "float64"]
)
def test_vadd_every_dtype(dtype):
    f = vadd(dtype)
    a = (np.arange(10) % 7).astype(dtype)
    b = (np.arange(10) % 5).astype(dtype)
    c = np.empty(10, dtype)
    f(a, b, c)
    np.testing.assert_array_equal(c, a + b)


# ---- errors: each names the argument, what was expected and what was found --------------------


def test_wrong_argument_count():
    f = vadd()
    a = np.zeros(3, "float32")
    with pytest.raises(TypeError, match="takes 3 array"):
        f(a, a)


def test_wrong_dtype_names_argument():
    f = vadd()
    a = np.zeros(3, "float32")
    with pytest.raises(TypeError, match=r"argument 1 \('B'\).*float32.*float64"):
        f(a, np.zeros(3), a.copy())


def test_wrong_ndim():
    f = vadd()
    a = np.zeros(3, "float32")
    with pytest.raises(ValueError, match=r"argument 2 \('C'\).*1 dimension"):
        f(a, a, np.zeros((3, 1), "float32"))


def test_symbolic_size_disagreement():
    f = vadd()
    with pytest.raises(ValueError, match=r"size variable 'n'.*3.*4"):
        f(np.zeros(3, "float32"), np.zeros(4, "float32"), np.zeros(3, "float32"))


def test_size_expression_mismatch_says_where_its_variable_came_from():
    # n is bound from the output D (its only plain occurrence): an output one element too long
    # makes the input's n + 1 look wrong, so the message says where n = 5 came from
    n = tvm.var("n")
    B = tvm.placeholder((n + 1,), name="B")
    D = tvm.compute((n,), lambda i: B[i + 1] - B[i], name="D")
    f = tvm.build(tvm.create_schedule(D.op), [B, D])
    msg = r"argument 0 \('B'\): expected size 6 .* got 5 \('n' = 5 from argument 1 \('D'\) dim"
    with pytest.raises(ValueError, match=msg):
        f(np.zeros(5, "float32"), np.empty(5, "float32"))
    d = np.empty(4, "float32")
    f(np.arange(5, dtype="float32"), d)
    np.testing.assert_array_equal(d, np.ones(4, "float32"))


def test_constant_size_mismatch():
    f, _, _ = matmul_module(tvm.convert(4), tvm.convert(4), tvm.convert(4))
    a = np.zeros((4, 4), "float32")
    with pytest.raises(ValueError, match=r"argument 2 \('Z'\).*size 4.*got 5"):
        f(a, a, np.zeros((4, 5), "float32"))


def test_read_only_output_is_rejected():
    f = vadd()
    a = np.zeros(3, "float32")
    out = np.zeros(3, "float32")
    out.flags.writeable = False
    with pytest.raises((ValueError, BufferError), match="read-only"):
        f(a, a, out)


def test_output_overlapping_input_is_rejected_and_nothing_written():
    f = vadd()
    buf = np.arange(8, dtype="float32")
    before = buf.copy()
    with pytest.raises(ValueError, match="overlaps"):
        f(buf[:4], buf[4:], buf[2:6])
    np.testing.assert_array_equal(buf, before)


def test_interleaved_output_sharing_no_element_is_accepted():
    # The byte ranges overlap, the elements do not (as NumPy's out=buf[:, 1::2] allows).
    f = vadd()
    buf = np.arange(24, dtype="float32")
    before = buf.copy()
    f(buf[0:6:2], buf[6:12:2], buf[1:7:2])
    expected = before.copy()
    expected[1:7:2] = before[0:6:2] + before[6:12:2]
    np.testing.assert_array_equal(buf, expected)
    # Two floats a period of 8 bytes apart, one byte off: they share bytes, refused.
    raw = np.zeros(64, "uint8")
    a = raw[:48].view("float32")[::2]
    b = raw[1:49].view("float32")[::2]
    with pytest.raises(ValueError, match="overlaps"):
        f(a, a.copy(), b)


def test_not_an_array():
    f = vadd()
    a = np.zeros(3, "float32")
    with pytest.raises(TypeError, match=r"argument 0 \('A'\)"):
        f([1.0, 2.0, 3.0], a, a.copy())


def test_placeholder_missing_from_args():
    A = tvm.placeholder((4,), name="A")
    B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(ValueError, match=r"placeholder 'A'.*argument list"):
        tvm.build(tvm.create_schedule(B.op), [B])


def test_unbound_size_variable():
    n = tvm.var("n")
    A = tvm.placeholder((4,), name="A")
    B = tvm.compute((4,), lambda i: A[i] * n.astype("float32"), name="B")
    with pytest.raises(ValueError, match="variable 'n' is not bound"):
        tvm.build(tvm.create_schedule(B.op), [A, B])


def test_unknown_target():
    A = tvm.placeholder((4,), name="A")
    B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(ValueError, match="cuda"):
        tvm.build(tvm.create_schedule(B.op), [A, B], target="cuda")


def test_module_repr_doc_and_argument_errors(capfd):
    A = tvm.placeholder((4,), name="A")
    B = tvm.compute((4,), lambda i: A[i] * 2.0, name="B")
    s = tvm.create_schedule(B.op)
    f = tvm.build(s, [A, B], name="double")
    assert repr(f) == "<pytvmbridge.Module 'double' (A: float32[4], B: float32[4] output)>"
    assert "build()" in tvm.Module.__doc__
    with pytest.raises(TypeError, match=r"lower\(\): name must be a string, got int"):
        tvm.lower(s, [A, B], name=3)
    with pytest.raises(TypeError, match=r"cache_read\(\): scope must be a string .* found int"):
        s.cache_read(A, 3, [B])
    capfd.readouterr()
    with pytest.raises(ValueError, match="unknown CPU 'nonexistentcpu'"):
        tvm.build(s, [A, B], "llvm -mcpu=nonexistentcpu")
    assert "not a recognized processor" not in capfd.readouterr().err  # LLVM's own warning


@pytest.mark.parametrize(
    "target, message",
    [
        ("llvm -mcpu=i386", "CPU 'i386' .* has no 64-bit mode"),
        ("llvm -mcpu=pentium4", "CPU 'pentium4' .* has no 64-bit mode"),
        ("llvm -mattr=-64bit", "feature '-64bit' .* changes the processor mode"),
        ("llvm -mattr=+16bit-mode", "feature '\\+16bit-mode' .* changes the processor mode"),
        ("llvm -mattr=+soft-float", "feature '\\+soft-float' .* float ABI"),
    ],
)
@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86 CPU and feature names")
def test_targets_for_another_processor_mode_are_refused(target, message):
    # LLVM aborted the process on these (a 32-bit CPU), or built code that died of SIGILL
    A = tvm.placeholder((4,), name="A")
    B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(ValueError, match=message):
        tvm.build(tvm.create_schedule(B.op), [A, B], target=target)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86 CPU and feature names")
def test_older_64_bit_cpus_and_isa_features_still_build():
    A = tvm.placeholder((4,), name="A")
    B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
    s = tvm.create_schedule(B.op)
    for target in ("llvm -mcpu=x86-64", "llvm -mcpu=core2", "llvm -mattr=-avx2"):
        f = tvm.build(s, [A, B], target=target)
        out = np.zeros(4, "float32")
        f(np.arange(4, dtype="float32"), out)
        np.testing.assert_array_equal(out, np.arange(4) + 1)
