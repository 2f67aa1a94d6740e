"""Classic TVM's names and behaviours (issue 10): every name TVM code uses on the CPU, each
checked against NumPy or PyTorch values, with `import pytvmbridge as tvm` as the only change."""

import numpy as np
import pytest
import torch

import pytvmbridge as tvm
import pytvmbridge.testing
from pytvmbridge import te

RNG = np.random.default_rng(10)


def run(s, args, *arrays):
    f = tvm.build(s, args)
    f(*arrays)
    return arrays[-1]


# ---- testing ----


def test_assert_allclose_passes_and_fails_as_tvms():
    tvm.testing.assert_allclose(tvm.nd.array(np.ones(3, "float32")), np.ones(3))
    tvm.testing.assert_allclose(torch.ones(2), np.ones(2) + 1e-8)
    with pytest.raises(AssertionError):
        tvm.testing.assert_allclose(np.ones(3), np.ones(3) * (1 + 1e-5))
    tvm.testing.assert_allclose(np.ones(3), np.ones(3) * (1 + 1e-5), rtol=1e-4)
    with pytest.raises(AssertionError):  # shapes are compared first
        tvm.testing.assert_allclose(np.ones((1, 3)), np.ones(3))


def test_testing_target_helpers():
    assert tvm.testing.enabled_targets() == [("llvm", tvm.cpu(0))]
    assert tvm.testing.device_enabled("llvm -mcpu=haswell")
    assert not tvm.testing.device_enabled("cuda")
    assert tvm.testing.uses_gpu(lambda: 5)() == 5
    n = tvm.var("n")
    tvm.testing.assert_prim_expr_equal(n * 4 - n, n * 3)
    with pytest.raises(AssertionError):
        tvm.testing.assert_prim_expr_equal(n * 4, n * 3)
    x = np.array([0.5, -1.0, 2.0])
    tvm.testing.check_numerical_grads(lambda v: float(np.sin(v).sum()), [x], [np.cos(x)])
    with pytest.raises(AssertionError):
        tvm.testing.check_numerical_grads(lambda v: float(np.sin(v).sum()), [x], [np.sin(x)])


# ---- names at the top level, under te and under tir ----


def test_every_te_name_is_also_at_the_top_level():
    for name in te.__all__:
        assert getattr(tvm, name) is getattr(te, name), name
    for name in ("create_schedule", "placeholder", "compute", "reduce_axis", "var", "sum"):
        assert name in te.__all__
    s = te.create_schedule(te.compute((2,), lambda i: i, name="B").op)
    assert isinstance(s, tvm.te.schedule.Schedule) and isinstance(s, tvm.Schedule)


def test_dtype_names():
    a = te.placeholder((3,), dtype=tvm.float16, name="a")
    assert a.dtype == "float16"
    assert (tvm.int8, tvm.uint64, tvm.float64, tvm.bfloat16) == (
        "int8",
        "uint64",
        "float64",
        "bfloat16",
    )


@pytest.mark.parametrize(
    "fn, ref",
    [
        (tvm.indexmod, np.mod),
        (tvm.tir.indexmod, np.mod),
        (te.indexdiv, np.floor_divide),
        (tvm.tir.indexdiv, np.floor_divide),
        (tvm.tir.floordiv, np.floor_divide),
        (tvm.tir.floormod, np.mod),
        (tvm.tir.truncdiv, lambda a, b: np.trunc(a / b).astype(a.dtype)),
        (tvm.tir.div, lambda a, b: np.trunc(a / b).astype(a.dtype)),
        (tvm.tir.truncmod, np.fmod),
    ],
)
def test_index_division(fn, ref):
    a = np.arange(-20, 20, dtype="int32")
    A = te.placeholder((40,), dtype="int32", name="A")
    B = te.compute((40,), lambda i: fn(A[i], 7), name="B")
    out = run(te.create_schedule(B.op), [A, B], a, np.empty(40, "int32"))
    np.testing.assert_array_equal(out, ref(a, np.int32(7)))


def test_tir_node_constructors():
    x = np.linspace(-2, 2, 9).astype("float32")
    A = te.placeholder((9,), name="A")
    B = te.compute(
        (9,),
        lambda i: (
            tvm.tir.Select(A[i] > 0, tvm.tir.Max(A[i], 0.5), tvm.tir.Min(A[i], -1.0))
            + tvm.tir.Cast("float32", i)
            + tvm.tir.const(1, "float32")
            + tvm.tir.div(A[i], 2.0)
        ),
        name="B",
    )
    out = run(te.create_schedule(B.op), [A, B], x, np.empty(9, "float32"))
    ref = np.where(x > 0, np.maximum(x, 0.5), np.minimum(x, -1.0)) + np.arange(9) + 1 + x / 2
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    assert isinstance(tvm.tir.const(2), tvm.tir.IntImm)
    assert isinstance(tvm.tir.const(2.0), tvm.tir.FloatImm)
    assert isinstance(tvm.tir.Var("v", "int32"), tvm.tir.PrimExpr)
    assert tvm.tir.likely(tvm.var("i") < 3).dtype == "bool"


def test_te_function_forms_and_float_classes():
    x = np.array([1.0, -np.inf, np.nan, np.inf, 2.5, -0.5], "float32")
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: te.isinf(A[i]).astype("int32"), name="B")
    C = te.compute((6,), lambda i: te.isfinite(A[i]).astype("int32"), name="C")
    D = te.compute(
        (6,),
        lambda i: te.add(te.multiply(te.nearbyint(A[i]), 2.0), te.subtract(1.0, 0.5)),
        name="D",
    )
    f = tvm.build(te.create_schedule([B.op, C.op, D.op]), [A, B, C, D])
    b, c, d = np.empty(6, "int32"), np.empty(6, "int32"), np.empty(6, "float32")
    f(x, b, c, d)
    np.testing.assert_array_equal(b, np.isinf(x))
    np.testing.assert_array_equal(c, np.isfinite(x))
    np.testing.assert_allclose(d, np.round(x) * 2 + 0.5)
    assert te.isinf(te.var("i")).value == 0 and te.isfinite(te.var("i")).value == 1


# ---- devices and arrays ----


def test_devices():
    assert tvm.cpu(0) == tvm.device("llvm", 0) == tvm.device("cpu") == tvm.context("cpu", 0)
    assert tvm.device(tvm.target.Target("llvm -mcpu=haswell")) == tvm.cpu()
    assert tvm.cpu(0).exist and tvm.cpu(0).device_type == 1
    tvm.cpu(0).sync()
    with pytest.raises(ValueError, match="CPU only"):
        tvm.device("cuda", 0)


def test_nd_array_with_device_asnumpy_and_to_dlpack():
    x = RNG.random((3, 4)).astype("float32")
    a = tvm.nd.array(x, tvm.cpu(0))
    np.testing.assert_array_equal(a.asnumpy(), x)
    t = torch.utils.dlpack.from_dlpack(a.to_dlpack())  # a view, not a copy
    t[1, 2] = 42.0
    assert a.asnumpy()[1, 2] == 42.0
    b = tvm.runtime.tensor(x)
    np.testing.assert_array_equal(tvm.runtime.from_dlpack(b).numpy(), x)
    assert tvm.ndarray.array is tvm.nd.array


def test_runtime_convert():
    n = tvm.runtime.convert(137)
    assert isinstance(n, tvm.tir.IntImm) and n.value == 137
    A = te.placeholder((n, 2), name="A")
    assert A.shape[0].value == 137
    assert [v.value for v in tvm.runtime.convert([1, 2])] == [1, 2]


def test_target():
    t = tvm.target.Target("llvm -mcpu=haswell -mattr=+avx2,+fma")
    assert (t.kind.name, t.mcpu, t.mattr, t.keys) == ("llvm", "haswell", ["+avx2", "+fma"], ["cpu"])
    assert str(tvm.target.Target(target="llvm", host="llvm")) == "llvm"
    assert tvm.target.Target("llvm") == "llvm"
    assert str(tvm.target.Target({"kind": "llvm", "mcpu": "skylake"})) == "llvm -mcpu=skylake"
    assert tvm.target.Target.current() is None
    with tvm.target.Target("llvm") as cur:
        assert tvm.target.Target.current() is cur
    assert tvm.target.Target.current() is None
    for bad in ("cuda", "opencl -device=mali"):
        with pytest.raises(ValueError, match="CPUs through LLVM only"):
            tvm.target.Target(bad)


def test_build_takes_a_target_object():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 3.0, name="B")
    s = te.create_schedule(B.op)
    x = RNG.random(8).astype("float32")
    for target in (tvm.target.Target("llvm"), tvm.target.Target("llvm", host="llvm")):
        f = tvm.build(s, [A, B], target=target, name="triple")
        out = np.empty(8, "float32")
        f(x, out)
        np.testing.assert_allclose(out, x * 3)
        assert f["triple"] is f and f.get_function("triple") is f
        assert f.imported_modules == []
    f = tvm.build(s, [A, B], target="llvm", target_host=tvm.target.Target("llvm"))
    with pytest.raises(AttributeError, match="one function"):
        f.get_function("other")


# ---- promotion and extents (item 5) ----


def test_whole_float_extents_are_ints():
    N, bn = 64, 16
    B = te.placeholder((N, N), name="B")
    packed = te.compute((N / bn, N, bn), lambda x, y, z: B[y, x * bn + z], name="packed")
    assert [int(d) for d in packed.shape] == [4, 64, 16]
    k = te.reduce_axis((0, N / bn), name="k")
    assert int(k.dom.extent) == 4
    b = RNG.random((N, N)).astype("float32")
    out = run(te.create_schedule(packed.op), [B, packed], b, np.empty((4, N, bn), "float32"))
    np.testing.assert_array_equal(out, b.reshape(N, 4, bn).transpose(1, 0, 2))
    with pytest.raises(TypeError, match="must be an integer"):
        te.placeholder((N / 5,), name="A")


def test_int_and_float_expressions_promote_as_in_tvm():
    n = te.var("n")
    assert (n * 1.5).dtype == "float32"  # a Python float is float32 in TVM
    assert (n + te.var("x", "float64")).dtype == "float64"
    assert (te.var("h", "float16") * 2.5).dtype == "float16"
    with pytest.raises(TypeError):  # two floats of different widths still need astype
        te.var("a", "float16") + te.var("b", "float32")
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: i * 0.5 + A[i] * i, name="B")
    assert B.dtype == "float32"
    x = RNG.random(6).astype("float32")
    out = run(te.create_schedule(B.op), [A, B], x, np.empty(6, "float32"))
    np.testing.assert_allclose(out, np.arange(6) * 0.5 + x * np.arange(6), rtol=1e-6)


def test_tensor_values_of_int_and_float_do_not_mix():
    # API.md: tensors of different dtypes raise TypeError unless cast (index arithmetic, above,
    # is promoted as in TVM)
    A = te.placeholder((6,), name="A", dtype="int32")
    F = te.placeholder((6,), name="F")
    with pytest.raises(TypeError, match=r"int32 tensor value \(A\[i\]\) meets a float32"):
        te.compute((6,), lambda i: A[i] + F[i], name="B")
    k = te.reduce_axis((0, 6), name="k")
    with pytest.raises(TypeError, match="tensors of different dtypes do not mix"):
        te.compute((1,), lambda i: F[i] * te.sum(A[k], axis=k), name="B")
    B = te.compute((6,), lambda i: A[i].astype("float32") + F[i] * i, name="B")
    a, f = np.arange(6, dtype="int32"), RNG.random(6).astype("float32")
    out = run(te.create_schedule(B.op), [A, F, B], a, f, np.empty(6, "float32"))
    np.testing.assert_allclose(out, a + f * np.arange(6), rtol=1e-6)


# ---- schedule forms (item 6) ----


def test_chained_indexing():
    x = RNG.random((3, 4, 5)).astype("float32")
    A = te.placeholder((3, 4, 5), name="A")
    B = te.compute((3, 4, 5), lambda i, j, k: A[i][j][k] + A[i][j, k] + A[i, j][k], name="B")
    out = run(te.create_schedule(B.op), [A, B], x, np.empty_like(x))
    np.testing.assert_allclose(out, 3 * x, rtol=1e-6)
    assert A[1][2].dtype == "float32"
    assert str(A[1][2][3]) == "A[1, 2, 3]" == str(A[1][2, 3].__repr__())
    with pytest.raises(TypeError):
        A[1][2][3][4]


def test_fuse_without_axes_is_an_outer_singleton():
    x = RNG.random((6, 7)).astype("float32")
    A = te.placeholder((6, 7), name="A")
    B = te.compute((6, 7), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    single = s[B].fuse()
    assert int(single.dom.extent) == 1 and s[B].leaf_iter_vars[0] == single
    s[B].parallel(s[B].fuse(*s[B].leaf_iter_vars[1:]))
    np.testing.assert_allclose(run(s, [A, B], x, np.empty_like(x)), x + 1)
    assert s[B].fuse(s[B].leaf_iter_vars[-1]) == s[B].leaf_iter_vars[-1]


def test_pragma_and_split_disable_predication():
    x = RNG.random(43).astype("float32")
    A = te.placeholder((43,), name="A")
    B = te.compute((43,), lambda i: A[i] + 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8, disable_predication=True)
    s[B].pragma(xo, "auto_unroll_max_step", 16)
    s[B].pragma(xo, "pragma1")
    s[B].pragma(xi, "vectorize")
    assert "ramp(" in str(tvm.lower(s, [A, B]))  # the inner loop became vector code
    np.testing.assert_allclose(run(s, [A, B], x, np.empty_like(x)), x + 2)
    s2 = te.create_schedule(B.op)
    _, inner = s2[B].split(B.op.axis[0], factor=4)
    assert "for (i.inner" in str(tvm.lower(s2, [A, B]))
    s2[B].pragma(inner, "unroll")
    assert "for (i.inner" not in str(tvm.lower(s2, [A, B]))  # the loop was unrolled
    np.testing.assert_allclose(run(s2, [A, B], x, np.empty_like(x)), x + 2)
    with pytest.raises(TypeError):
        s2[B].pragma(B.op.axis[0], 3)
    s2[B].set_scope("global")


def test_reduction_axis_and_operation_types():
    A = te.placeholder((4, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    C = te.compute((4,), lambda i: te.sum(A[i, k], axis=k, where=k > 1), name="C")
    assert C.op.body[0].axis == [k]
    assert str(C.op.body[0].condition) == "(k > 1)"
    with pytest.raises(AttributeError, match="not a reduction"):
        _ = (A[0, 0] + 1.0).axis
    assert isinstance(A.op, te.PlaceholderOp) and not isinstance(A.op, te.ComputeOp)
    assert isinstance(C.op, te.ComputeOp) and isinstance(C.op, tvm.te.ComputeOp)
    assert not isinstance(C, te.ComputeOp)
    x = RNG.random((4, 8)).astype("float32")
    out = run(te.create_schedule(C.op), [A, C], x, np.empty(4, "float32"))
    np.testing.assert_allclose(out, x[:, 2:].sum(axis=1), rtol=1e-5)


# ---- errors (item 7) and export (item 8) ----


def test_errors_are_tvm_errors_and_keep_their_classes():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=2)
    with pytest.raises(tvm.error.TVMError):
        s[B].reorder(xi, xo, xi)  # a duplicate axis
    with pytest.raises(ValueError):
        s[B].reorder(xi, xo, xi)
    with pytest.raises(RuntimeError):  # TVMError is a RuntimeError, as in TVM
        s[B].fuse(xi, xo)
    with pytest.raises(tvm.error.TVMError) as info:
        te.var("x", "float32") + te.var("y", "float16")
    assert isinstance(info.value, TypeError) and isinstance(info.value, tvm.error.TVMTypeError)
    with pytest.raises(tvm.error.TVMError) as info:
        tvm.tc.define("def f(float(N) A) -> (B) { B(i) = A(j) }")
    assert isinstance(info.value, tvm.tc.TCError) and isinstance(info.value, ValueError)
    assert issubclass(tvm.error.TVMError, RuntimeError)


def test_export_library_save_and_load_module_round_trip(tmp_path):
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 3.0, name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B])
    f.export_library(str(tmp_path / "f.so"))
    f.save(str(tmp_path / "f.o"))
    a = np.arange(4, dtype="float32")
    for name in ("f.so", "f.o"):
        g = tvm.runtime.load_module(str(tmp_path / name))
        b = tvm.nd.empty((4,), "float32")
        g[g.entry_name](a, b)
        np.testing.assert_allclose(b.numpy(), a * 3.0)
    with pytest.raises(NotImplementedError, match="fcompile"):
        f.export_library(str(tmp_path / "g.so"), fcompile=object())


# ---- the docstring examples of the compatibility modules ----


@pytest.mark.parametrize(
    "module",
    [
        "pytvmbridge.error",
        "pytvmbridge.runtime",
        "pytvmbridge.schedule",
        "pytvmbridge.target",
        "pytvmbridge.tc_options",
        "pytvmbridge.te",
        "pytvmbridge.testing",
        "pytvmbridge.tir",
    ],
)
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# ---- calls with many arrays (TVM has no limit; neither has the C++ call path) ----


def test_calls_take_many_arrays():
    count = 70
    ins = [te.placeholder((5,), name=f"x{k}") for k in range(count)]
    out = te.compute((5,), lambda i: sum((x[i] for x in ins[1:]), ins[0][i]), name="S")
    f = tvm.build(te.create_schedule(out.op), [*ins, out])
    arrays = [RNG.random(5).astype("float32") for _ in ins]
    got = np.zeros(5, "float32")
    f(*arrays, got)
    np.testing.assert_allclose(got, np.sum(arrays, axis=0), rtol=1e-5)
    got_torch = tvm.to_pytorch(f)(*[torch.from_numpy(a) for a in arrays])
    np.testing.assert_allclose(got_torch.numpy(), np.sum(arrays, axis=0), rtol=1e-5)
