"""The tensor-expression DSL (pytvmbridge.te): construction, dtypes, printing and every error.

Dtype expectations come from NumPy itself (its result for a Python scalar combined with an array)
or from the API contract; printed forms are checked against hand-written text.
"""

import numpy as np
import pytest
import torch

import pytvmbridge as tvm
import pytvmbridge.te as te

ALL_DTYPES = [
    *("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
    *("float16", "float32", "float64"),
]


# --- vars and constants ---------------------------------------------------------------------


def test_var_defaults_and_dtype_spellings():
    n = te.var()
    assert (n.name, n.dtype) == ("v", "int32")
    assert isinstance(n, te.Var) and isinstance(n, te.Expr)
    assert te.var("x", np.float16).dtype == "float16"
    assert te.var("x", np.dtype("float64")).dtype == "float64"
    assert te.var("x", torch.bfloat16).dtype == "bfloat16"
    assert te.var("x", "float").dtype == "float32"
    assert te.size_var("m").name == "m"
    assert te.Var("w", "int64").dtype == "int64"


def test_var_rejects_unknown_dtypes():
    with pytest.raises(TypeError, match="unsupported dtype 'complex64'"):
        te.var("x", "complex64")
    with pytest.raises(TypeError, match="dtype"):
        te.var("x", object())
    with pytest.raises(TypeError, match="cannot have dtype handle"):
        te.var("x", "handle")


def test_const_default_dtypes():
    assert te.const(3).dtype == "int32"
    assert te.const(2**31).dtype == "int64"
    assert te.const(-(2**31)).dtype == "int32"
    assert te.const(1.5).dtype == "float32"
    assert te.const(True).dtype == "bool"
    # NumPy scalars keep their own dtype.
    assert te.const(np.float16(1.5)).dtype == "float16"
    assert te.const(np.int8(3)).dtype == "int8"
    assert te.const(np.uint64(2**64 - 1)).value == 2**64 - 1
    with pytest.raises(OverflowError, match="does not fit int64"):
        te.const(2**70)


@pytest.mark.parametrize("dtype", [*ALL_DTYPES, "bool"])
def test_const_with_dtype_matches_numpy_astype(dtype):
    for value in [0, 1, 7, 100, 2.75, -2.75, True]:
        expected = np.array(value).astype(dtype)
        if np.issubdtype(expected.dtype, np.unsignedinteger) and value < 0:
            continue  # NumPy wraps a negative float cast to unsigned; we refuse (below)
        c = te.const(value, dtype)
        assert c.dtype == dtype
        if dtype.startswith("float"):
            assert c.value == float(np.array(value, dtype="float64"))
        else:
            assert c.value == expected.item(), (value, dtype)


def test_const_out_of_range_is_an_overflow_error_like_numpy():
    with pytest.raises(OverflowError):
        np.array([0], dtype="int8") + 300  # NumPy 2's behaviour, which we follow
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        te.const(300, "int8")
    with pytest.raises(OverflowError, match="out of bounds for uint8"):
        te.const(-1, "uint8")
    with pytest.raises(OverflowError, match="out of bounds for uint16"):
        te.const(-2.5, "uint16")
    assert te.const(2**64 - 1, "uint64").value == 2**64 - 1
    with pytest.raises(ValueError):
        te.const(float("nan"), "int32")


def test_const_rejects_expressions_and_strings():
    with pytest.raises(TypeError, match="astype"):
        te.const(te.var("x"))
    with pytest.raises(TypeError, match="the value of const"):
        te.const("3", "int32")


def test_convert():
    c = te.convert(56)
    assert isinstance(c, te.IntImm) and c.dtype == "int32" and c.value == 56 and int(c) == 56
    assert [x.dtype for x in te.convert([1, 2.5, (3,)][:2])] == ["int32", "float32"]
    x = te.var("x")
    assert hash(te.convert(x)) == hash(x)  # the same node, not a copy
    with pytest.raises(TypeError, match="found str"):
        te.convert("abc")


# --- placeholders and shapes -------------------------------------------------------------------


def test_placeholder_shapes():
    n = te.var("n")
    assert te.placeholder(5).shape[0].value == 5
    A = te.placeholder((n, 3), name="A")
    assert (A.ndim, A.dtype, A.name) == (2, "float32", "A")
    assert str(A.shape[0]) == "n" and int(A.shape[1]) == 3
    assert isinstance(A.shape, tuple)
    B = te.placeholder([te.convert(4), np.int64(6), torch.tensor(2).item()], "int8")
    assert [int(d) for d in B.shape] == [4, 6, 2]
    assert all(d.dtype == "int32" for d in B.shape)  # sizes are int32 like loop variables
    assert te.placeholder(torch.Size([2, 3])).ndim == 2
    assert te.placeholder((), name="S").ndim == 0
    assert te.placeholder((2,), dtype=None).dtype == "float32"
    assert te.placeholder((2,)).name == "placeholder"


def test_placeholder_shape_errors():
    with pytest.raises(TypeError, match="dimension 1 of placeholder 'A' must be an integer"):
        te.placeholder((2, 2.5), name="A")
    with pytest.raises(ValueError, match="dimension 0 of placeholder 'A' is negative"):
        te.placeholder((-1,), name="A")
    with pytest.raises(TypeError, match="must be a shape"):
        te.placeholder("abc", name="A")
    with pytest.raises(TypeError, match="symbolic sizes must be int32 or int64"):
        te.placeholder((te.var("m", "int16"),), name="A")
    # int64 sizes: a size variable or a constant past int32 (issue 9 item 1).
    assert te.placeholder((te.var("m", "int64"),), name="A").shape[0].dtype == "int64"
    assert te.placeholder((2**40, 3), name="A").shape[0].dtype == "int64"
    assert te.placeholder((2**40, 3), name="A").shape[1].dtype == "int32"
    with pytest.raises(TypeError, match="unsupported dtype"):
        te.placeholder((2,), dtype="complex128")


# --- computes ----------------------------------------------------------------------------------


def test_compute_names_axes_after_fcompute_parameters():
    A = te.placeholder((3, 4), name="A")
    seen = []

    def body(row, col):
        seen.extend([row, col])
        return A[row, col] * 2.0

    B = te.compute((3, 4), body, name="B")
    assert [iv.name for iv in B.op.axis] == ["row", "col"]
    # fcompute receives the axes' Vars (the same nodes as op.axis[i].var).
    assert all(isinstance(v, te.Var) for v in seen)
    assert [hash(v) for v in seen] == [hash(iv.var) for iv in B.op.axis]
    assert str(B.op.body[0]) == "(A[row, col] * 2.0)"
    assert (B.shape[0].value, B.shape[1].value, B.dtype, B.name) == (3, 4, "float32", "B")
    assert B.op.input_tensors == [A]
    dom = B.op.axis[1].dom
    assert (dom.min.value, dom.extent.value) == (0, 4)
    assert B.op.axis[0].kind == "data_par" and B.op.axis[0].iter_type == 0


def test_compute_with_variadic_and_default_parameters():
    A = te.placeholder((2, 3), name="A")
    B = te.compute((2, 3), lambda *idx: A[idx], name="B")
    assert [iv.name for iv in B.op.axis] == ["i0", "i1"]
    C = te.compute((2, 3), lambda i, j, scale=3.0: A[i, j] * scale, name="C")
    assert str(C.op.body[0]) == "(A[i, j] * 3.0)"
    assert te.compute(4, lambda i: i).dtype == "int32"  # a single int is a 1-D shape
    assert te.compute((), lambda: 1.5).ndim == 0


def test_compute_arity_errors():
    A = te.placeholder((2, 3), name="A")
    with pytest.raises(TypeError, match=r"compute 'B' has 2 dimension.*takes 1 argument"):
        te.compute((2, 3), lambda i: A[i, 0], name="B")
    with pytest.raises(TypeError, match=r"has 2 dimension.*takes 3 argument"):
        te.compute((2, 3), lambda i, j, k: A[i, j], name="B")
    with pytest.raises(TypeError, match="must be callable"):
        te.compute((2, 3), 3.0, name="B")


def test_compute_body_errors():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TypeError, match="returned None"):
        te.compute((4,), lambda i: None, name="B")
    with pytest.raises(TypeError, match="found the Tensor 'A'; index it"):
        te.compute((4,), lambda i: A, name="B")
    with pytest.raises(TypeError, match="found str"):
        te.compute((4,), lambda i: "x", name="B")
    k = te.reduce_axis((0, 4), name="k")
    with pytest.raises(ValueError, match="must be the whole body"):
        te.compute((1,), lambda i: te.sum(A[k], axis=k) + 1.0, name="B")


def test_compute_with_several_outputs():
    A = te.placeholder((4,), name="A")
    outs = te.compute((4,), lambda i: (A[i] + 1.0, A[i] * 2.0), name="two")
    assert isinstance(outs, list) and len(outs) == 2
    assert [t.value_index for t in outs] == [0, 1]
    assert outs[0].op == outs[1].op and outs[0] != outs[1]
    assert outs[0].op.num_outputs == 2
    assert outs[0].op.output(1) == outs[1]
    assert "value_index=1" in repr(outs[1])
    with pytest.raises(IndexError, match="has 2 output"):
        outs[0].op.output(2)


# --- tensors and operations ------------------------------------------------------------------


def test_tensor_indexing_forms():
    A = te.placeholder((5, 6), name="A")
    i, j = te.var("i"), te.var("j")
    expected = "A[i, j]"
    assert str(A[i, j]) == str(A(i, j)) == str(A[(i, j)]) == str(A[[i, j]]) == expected
    assert str(A[i + 1, 2]) == "A[(i + 1), 2]"
    assert A[i, j].dtype == "float32"
    B = te.compute((5, 6), lambda x, y: A[x, y], name="B")
    assert str(A[B.op.axis[0], B.op.axis[1]]) == "A[x, y]"  # IterVars stand for their vars
    v = te.placeholder((5,), name="v")
    assert str(v[3]) == "v[3]"


def test_tensor_indexing_errors():
    A = te.placeholder((5, 6), name="A")
    i = te.var("i")
    assert isinstance(A[i], te.TensorSlice)  # TVM's A[i][j]: the rest of the indices follow
    with pytest.raises(ValueError, match=r"tensor 'A' has 2 dimension.*3 index"):
        A[i][i, i]
    with pytest.raises(ValueError, match=r"tensor 'A' has 2 dimension.*3 index"):
        A[i, i, i]
    with pytest.raises(TypeError, match=r"index 1 of tensor 'A' must be an integer.*float32"):
        A[i, 1.5]
    with pytest.raises(TypeError, match="index 0 of tensor 'A' must be an expression"):
        A["x", 1]
    with pytest.raises(TypeError, match="cannot be sliced"):
        A[0:2, i]
    with pytest.raises(IndexError, match=r"index -1 is out of bounds for dimension 1.*negative"):
        A[i, -1]
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 of tensor 'A'"):
        A[5, i]
    with pytest.raises(TypeError, match="not iterable"):
        list(A)


def test_tensor_and_operation_identity():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    A2 = te.placeholder((4,), name="A")
    assert A == A and A != A2 and A != B
    assert B.op.output(0) == B and hash(B.op.output(0)) == hash(B)
    assert len({A, A2, B, B.op.output(0)}) == 3
    assert B.op == B.op and hash(B.op) == hash(B.op) and B.op != A.op
    assert (A == 3) is False
    # Two wraps of the same IterVar are equal and hash alike; different axes are not equal.
    ax1, ax2 = B.op.axis[0], B.op.axis[0]
    assert ax1 is not ax2 and ax1 == ax2 and hash(ax1) == hash(ax2) and not (ax1 != ax2)
    k = te.reduce_axis((0, 4), "k")
    assert ax1 != k and {ax1: 1}[ax2] == 1
    assert B.op.axis.index(ax2) == 0


def test_operation_properties_and_reprs():
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="C")
    assert C.op.name == "C" and C.op.reduce_axis == [k]
    assert A.op.axis == [] and A.op.reduce_axis == [] and A.op.body == []
    assert A.op.input_tensors == [] and A.op.num_outputs == 1
    assert repr(A.op) == "PlaceholderOp(name='A', shape=(n, 4), dtype='float32')"
    assert repr(C.op) == (
        "ComputeOp(name='C', axis=[i], reduce_axis=[k], body=[sum(A[i, k], axis=[k])])"
    )
    assert repr(A) == "Tensor(shape=(n, 4), op.name=A, dtype=float32)"
    assert repr(k) == "iter_var(k, Range(min=0, extent=4), reduce)"
    assert repr(C.op.axis[0]) == "iter_var(i, Range(min=0, extent=n))"


def test_compute_tag_and_attrs():
    A = te.placeholder((4,), name="A")
    attrs = {"layout": "NCHW", "strides": [1, 2], "eps": 1e-5, "groups": 2}
    B = te.compute((4,), lambda i: A[i] * 2.0, name="B", tag="elemwise", attrs=attrs)
    assert B.op.tag == "elemwise"
    assert B.op.attrs == {"layout": "NCHW", "strides": (1, 2), "eps": 1e-5, "groups": 2}
    assert A.op.tag == "" and A.op.attrs == {}
    assert te.compute((4,), lambda i: A[i], name="C").op.tag == ""
    # Schedule rewrites keep the annotation of the stage they rewrite.
    s = tvm.create_schedule(B.op)
    s.cache_write(B, "local")
    assert s[B].op.tag == "elemwise" and s[B].op.attrs["layout"] == "NCHW"
    with pytest.raises(TypeError, match="tag of compute 'D' must be a str"):
        te.compute((4,), lambda i: A[i], name="D", tag=1)
    with pytest.raises(TypeError, match="attrs of compute 'D' must be a dict"):
        te.compute((4,), lambda i: A[i], name="D", attrs=[1])
    with pytest.raises(TypeError, match=r"attrs\['x'\] of compute 'D' must be an int"):
        te.compute((4,), lambda i: A[i], name="D", attrs={"x": None})
    with pytest.raises(TypeError, match="only sequences of ints"):
        te.compute((4,), lambda i: A[i], name="D", attrs={"x": [1.5]})


# --- reductions -------------------------------------------------------------------------------


def test_reduce_axis_domains():
    n = te.var("n")
    k = te.reduce_axis((1, 5), name="k")
    assert (k.dom.min.value, k.dom.extent.value, k.name, k.kind) == (1, 4, "k", "reduce")
    assert k.iter_type == 2 and str(k.var) == "k"
    r = te.reduce_axis([0, n])
    assert str(r.dom.extent) == "n" and r.name == "rv"
    assert str(te.reduce_axis((2, n)).dom.extent) == "(n - 2)"
    assert str(te.reduce_axis(te.Range(3)).dom.extent) == "3"
    assert str(te.reduce_axis(te.Range.from_min_extent(2, n)).dom.min) == "2"
    assert te.reduce_axis((0, 0)).dom.extent.value == 0
    # NumPy integers are extents like ints: an int32 axis that mixes with int32 indices
    k64 = te.reduce_axis((np.int64(0), np.int64(4)), name="k")
    assert k64.var.dtype == "int32" and k64.dom.extent.value == 4
    A = te.placeholder((8,), name="A")
    B = te.compute((4,), lambda i: te.sum(A[i + k64], axis=k64), name="B")
    x = np.arange(8, dtype="float32")
    out = np.empty(4, "float32")
    tvm.build(te.create_schedule(B.op), [A, B])(x, out)
    np.testing.assert_array_equal(out, np.convolve(x, np.ones(4, "float32"), "valid")[:4])


def test_reduce_axis_errors():
    with pytest.raises(TypeError, match=r"must be a \(lo, hi\) pair"):
        te.reduce_axis(4, name="k")
    with pytest.raises(TypeError, match=r"must be a \(lo, hi\) pair"):
        te.reduce_axis((0, 1, 2), name="k")
    with pytest.raises(ValueError, match=r"reduce_axis 'k' has a negative extent \(-2\)"):
        te.reduce_axis((5, 3), name="k")
    with pytest.raises(TypeError, match="must be int32"):
        te.reduce_axis((0, 2.5), name="k")


def test_reductions_print_and_type():
    A = te.placeholder((4, 8), dtype="float16", name="A")
    k = te.reduce_axis((0, 8), name="k")
    j = te.reduce_axis((0, 4), name="j")
    assert str(te.sum(A[0, k], axis=k)) == "sum(A[0, k], axis=[k])"
    assert str(te.prod(A[j, k], axis=[j, k])) == "prod(A[j, k], axis=[j, k])"
    assert str(te.max(A[0, k], axis=(k,), where=k < 3)) == "max(A[0, k], axis=[k], where=(k < 3))"
    assert te.min(A[0, k], axis=k).dtype == "float16"
    M = te.compute((4,), lambda i: te.max(A[i, k], axis=k), name="M")
    assert M.op.reduce_axis == [k] and M.dtype == "float16"


def test_reduction_errors():
    A = te.placeholder((4, 8), name="A")
    B = te.compute((4,), lambda i: A[i, 0], name="B")
    k = te.reduce_axis((0, 8), name="k")
    with pytest.raises(ValueError, match=r"axis 'i' of sum\(\) is not a reduce axis"):
        te.sum(A[0, 0], axis=B.op.axis[0])
    with pytest.raises(ValueError, match="reduce axis 'k' appears twice"):
        te.sum(A[0, k], axis=[k, k])
    with pytest.raises(ValueError, match="at least one reduce axis"):
        te.sum(A[0, 0], axis=[])
    with pytest.raises(TypeError, match=r"where= of max\(\) must be a bool"):
        te.max(A[0, k], axis=k, where=k + 1)
    with pytest.raises(TypeError, match=r"sum\(\) of a bool expression"):
        te.sum(A[0, k] > 0.0, axis=k)
    with pytest.raises(TypeError, match=r"axis of prod\(\) must be an IterVar"):
        te.prod(A[0, k], axis=[k, 3])
    with pytest.raises(TypeError, match="needs axis="):
        te.sum(A[0, 0])
    with pytest.raises(TypeError, match="takes no where="):
        te.max(A[0, 0], A[1, 1], where=k < 2)


def test_two_argument_max_min_sum_prod_are_elementwise():
    x, y = te.var("x", "float32"), te.var("y", "float32")
    assert str(te.max(x, y)) == "max(x, y)"
    assert str(te.min(x, 0)) == "min(x, 0.0)"
    assert str(te.max(1.5, x)) == "max(1.5, x)"
    assert str(te.sum(x, y)) == "(x + y)"
    assert str(te.prod(2, x)) == "(2.0 * x)"
    assert te.sum(1, 2).value == 3
    with pytest.raises(TypeError, match="different dtypes"):
        te.max(x, te.var("h", "float16"))
    assert te.max(x, te.var("i")).dtype == "float32"  # an integer meets a float: TVM's rule


# --- operators and dtype promotion --------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("scalar", [3, 2.5, True])
def test_python_scalar_promotion_matches_numpy(dtype, scalar):
    x = te.var("x", dtype)
    expected = (np.zeros(1, dtype) + scalar).dtype.name  # NumPy 2 (NEP 50) rule...
    if isinstance(scalar, float) and not dtype.startswith(("float", "bfloat", "bool")):
        expected = "float32"  # ...except TVM's: an integer with a Python float is float32
    assert (x + scalar).dtype == expected
    assert (scalar * x).dtype == expected
    assert (x - scalar).dtype == expected
    assert (x < scalar).dtype == "bool"


def test_scalar_promotion_details():
    h = te.var("h", "float16")
    assert str(h * 2.5) == "(h * 2.5f16)"
    i8 = te.var("b", "int8")
    assert str(i8 + 1) == "(b + 1i8)"
    i = te.var("i")
    assert str(i + 1.5) == "(float32(i) + 1.5)"  # TVM: a Python float is float32
    assert str(2 - i) == "(2 - i)"
    assert str(1 < i) == "(i > 1)"
    # NumPy scalars combine like Python numbers (the expression's dtype wins), in either order.
    f = te.var("f", "float32")
    assert (f * np.float64(0.5)).dtype == "float32"
    r = np.float32(2.0) * f
    assert isinstance(r, te.Expr) and str(r) == "(2.0 * f)"
    assert (np.int64(3) + i8).dtype == "int8"


def test_scalar_out_of_range_for_the_expression_dtype():
    b = te.var("b", "int8")
    with pytest.raises(OverflowError, match="300 out of bounds for int8"):
        b + 300
    with pytest.raises(OverflowError, match="out of bounds for uint32"):
        te.var("u", "uint32") - (-1)


def test_mixing_expression_dtypes_needs_astype():
    i, f = te.var("i"), te.var("f", "float32")
    with pytest.raises(TypeError, match=r"different dtypes: float16 and float32; cast one.*astype"):
        te.var("h", "float16") + f
    assert str(i + f) == "(float32(i) + f)"  # an integer meeting a float is cast to it (TVM)
    # index arithmetic of int32 and int64 widens to int64 (TVM's rule: a constant-extent loop
    # variable times an int64 size); tensors' values of the two still need astype
    assert str(te.var("l", "int64") * i) == "(l * int64(i))"
    A = te.placeholder((4,), "int32", name="A")
    L = te.placeholder((4,), "int64", name="L")
    with pytest.raises(TypeError, match="different dtypes: int32 and int64"):
        te.compute((4,), lambda j: A[j] + L[j])
    assert str(i.astype("float32") + f) == "(float32(i) + f)"
    assert (f.astype("float32") is not None) and str(f.astype("float32")) == "f"
    with pytest.raises(TypeError, match="unsupported dtype"):
        f.astype("float128")


@pytest.mark.parametrize(
    "make",
    [
        lambda: te.var(5),
        lambda: te.size_var(3),
        lambda: te.placeholder((3,), name=5),
        lambda: te.compute((3,), lambda i: i, name=5),
        lambda: te.reduce_axis((0, 3), name=5),
    ],
)
def test_names_that_are_not_strings_are_type_errors_naming_the_function(make):
    with pytest.raises(TypeError, match=r"name of (var|size_var|placeholder|compute|reduce_axis) "
                       r"must be a str, got int"):  # fmt: skip
        make()


def test_division_operators():
    i, j = te.var("i"), te.var("j")
    x, y = te.var("x", "float32"), te.var("y", "float32")
    with pytest.raises(TypeError, match=r"'/' between integer expressions.*use '//'.*astype"):
        i / j
    with pytest.raises(TypeError, match="use '//'"):
        i / 2
    assert str(i // j) == "floordiv(i, j)"
    assert str(i % 4) == "floormod(i, 4)"
    assert str(7 // i) == "floordiv(7, i)"
    assert str(x / y) == "(x / y)"
    # floats: NumPy's divmod (from fmod, exact near integers and at infinities)
    assert str(x // y) == "floor_divide(x, y)"
    assert str(x % y) == "floor_mod(x, y)"
    assert str(1 / x) == "(1.0 / x)"
    assert (i / 2.0).dtype == "float32"  # TVM: a Python float is float32


def test_power_negation_and_abs():
    x, i = te.var("x", "float32"), te.var("i")
    assert str(x**2) == "power(x, 2.0)"
    assert str(2**x) == "power(2.0, x)"
    assert str(i**2) == "(i * i)"  # integers: NumPy's int ** int, by multiplication
    assert str(i**0) == "1" and str(i**1) == "i"
    with pytest.raises(ValueError, match="negative integer powers are not allowed"):
        i**-1
    with pytest.raises(TypeError, match=r"needs a constant exponent, found n.*astype"):
        i ** te.var("n")
    assert str(-x) == "(x * -1.0)"
    assert str(-i) == "(i * -1)"
    assert str(+i) == "i"
    assert str(abs(i)) == "abs(i)"
    with pytest.raises(TypeError, match=r"cannot negate the bool expression.*use ~"):
        _ = -(i < 2)


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint16", "int64"])
def test_integer_powers_match_numpy(dtype):
    a = te.placeholder((9,), dtype=dtype, name="A")
    x = np.arange(-4, 5).astype(dtype)
    for exponent in (0, 1, 2, 3, 5, 13):
        b = te.compute((9,), lambda i, e=exponent: a[i] ** e, name="B")
        out = np.empty(9, dtype)
        tvm.build(te.create_schedule(b.op), [a, b])(x, out)
        np.testing.assert_array_equal(out, x**exponent)  # wrapping as NumPy's


def test_a_partial_index_used_as_a_value_says_how_many_indices_are_needed():
    n = te.var("n")
    X = te.placeholder((n, 4), name="X")
    for body in (lambda i: X[i], lambda i: X[i] + 1.0, lambda i: 2 * X[i], lambda i: -X[i]):
        with pytest.raises(TypeError, match=r"X\[i\] gives 1 of the 2 indices of tensor 'X'"):
            te.compute((n,), body, name="B")
    assert str(X[1][2]) == "X[1, 2]"  # chained indexing still reads an element


def test_constants_print_with_their_dtype():
    assert repr(te.const(1.5, "float16")) == "1.5f16"
    assert repr(te.const(1.5, "bfloat16")) == "1.5bf16"
    assert repr(te.max_value("bfloat16")).endswith("bf16")
    assert repr(te.const(1.5, "float64")) == "1.5f64" and repr(te.const(1.5)) == "1.5"
    # the shortest text that reads back as the same value of the type (nine significant digits
    # printed 0.1 as 0.100000001), and distinct values still print distinctly (the compile
    # cache's fingerprint is printed text)
    assert repr(te.const(0.1)) == "0.1" and repr(te.const(0.1, "float64")) == "0.1f64"
    assert repr(te.const(1.01)) == "1.01" and repr(te.const(1e30)) == "1e+30"
    above = float(np.nextafter(np.float32(0.1), np.float32(1)))
    assert repr(te.const(above)) != repr(te.const(0.1))
    assert np.float32(repr(te.const(above))) == np.float32(above)


def test_logical_operators():
    i = te.var("i")
    a, b = i < 4, i > 1
    assert str(a & b) == "((i < 4) && (i > 1))"
    assert str(a | b) == "((i < 4) || (i > 1))"
    assert str(~a) == "!(i < 4)"
    assert str(a ^ b) == "((i < 4) != (i > 1))"
    assert str(a & True) == "((i < 4) && True)"
    # Integers are bitwise (test_te_bitwise.py); a bool with an integer is still an error.
    assert str(i & 3) == "(i & 3)"
    for bad in (lambda: a & i, lambda: a | 1, lambda: a ^ i):
        with pytest.raises(TypeError, match="bool"):
            bad()
    with pytest.raises(TypeError, match="different dtypes: bool and int32"):
        a + 1


def test_comparisons_give_bool_expressions():
    x = te.var("x", "float64")
    for e in (x < 1, x <= 1, x > 1, x >= 1, x == 1, x != 1):
        assert isinstance(e, te.Expr) and e.dtype == "bool"
    assert str(x == 1) == "(x == 1.0f64)"
    assert (x == None) is False  # noqa: E711 (an unrelated object is simply not equal)
    assert (x != "a") is True
    with pytest.raises(TypeError, match="unsupported operand"):
        x + "a"


def test_truth_value_and_integer_conversion():
    n = te.var("n")
    with pytest.raises(TypeError, match=r"has no truth value.*if_then_else"):
        bool(n < 3)
    with pytest.raises(TypeError, match="has no truth value"):
        if n == 3:
            pass
    A = te.placeholder((4, n), name="A")
    # Constants fold: shapes of fixed size can be used in Python code.
    assert bool(A.shape[0] == 4) and not bool(A.shape[0] != 4)
    assert int(A.shape[0]) == 4 and int(A.shape[0] * 2 + 1) == 9
    assert list(range(A.shape[0])) == [0, 1, 2, 3]
    assert [10, 20, 30, 40, 50][A.shape[0]] == 50
    assert float(te.const(2.5)) == 2.5 and float(te.const(3)) == 3.0
    with pytest.raises(TypeError, match="cannot convert the symbolic expression n to int"):
        int(A.shape[1])
    with pytest.raises(TypeError, match="float expression"):
        int(te.const(2.5))
    assert bool(n == n)  # the same variable is equal to itself


def test_hash_is_identity():
    x = te.var("x")
    e = x + 1
    assert hash(e) == hash(e) and {e: 1}[e] == 1
    assert hash(x + 1) != hash(e)


# --- functions -----------------------------------------------------------------------------------

UNARY = [
    *("exp", "exp2", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan"),
    *("tanh", "sigmoid", "erf", "floor", "ceil", "round", "trunc", "abs"),
]


@pytest.mark.parametrize("name", UNARY)
def test_unary_math_functions(name):
    fn = getattr(te, name)
    for dtype in ["float16", "float32", "float64"]:
        x = te.var("x", dtype)
        e = fn(x)
        assert e.dtype == dtype and str(e) == f"{name}(x)"
    if name != "abs":
        with pytest.raises(TypeError, match=f"{name}\\(\\) needs a float operand.*astype"):
            fn(te.var("i"))
    assert fn.__doc__ and ">>>" in fn.__doc__


def test_other_math_functions():
    x, i = te.var("x", "float16"), te.var("i")
    assert te.abs(i).dtype == "int32"
    assert te.isnan(x).dtype == "bool" and str(te.isnan(x)) == "isnan(x)"
    with pytest.raises(TypeError, match=r"isnan\(\) needs a float"):
        te.isnan(i)
    assert str(te.power(x, 3)) == "power(x, 3.0f16)"
    assert str(te.fmod(x, 2.5)) == "fmod(x, 2.5f16)"
    with pytest.raises(TypeError, match=r"fmod\(\) needs float operands"):
        te.fmod(i, 3)
    assert str(te.exp(1.0)) == "exp(1.0)"


def test_conditionals():
    x = te.var("x", "float16")
    i = te.var("i")
    e = te.if_then_else(i > 0, x, 0.0)
    assert e.dtype == "float16" and str(e) == "if_then_else((i > 0), x, 0.0f16)"
    s = te.select(x > 0, 1, x)
    assert str(s) == "select((x > 0.0f16), 1.0f16, x)"
    assert te.select(True, 1, 2).dtype == "int32"
    with pytest.raises(TypeError, match="condition of select must be bool, found int32"):
        te.select(i, x, x)
    with pytest.raises(TypeError, match="condition of if_then_else must be bool"):
        te.if_then_else(x, x, x)
    with pytest.raises(TypeError, match="different dtypes"):
        te.select(i > 0, x, te.var("y", "float32"))
    assert te.select(i > 0, x, i).dtype == "float16"  # the integer is cast (TVM's rule)


def test_all_and_any():
    i = te.var("i")
    assert str(te.all(i > 0, i < 5, i != 2)) == "(((i > 0) && (i < 5)) && (i != 2))"
    assert str(te.any(i < 0, i > 5)) == "((i < 0) || (i > 5))"
    assert str(te.all()) == "True" and str(te.any()) == "False"
    assert str(te.all(i > 0, True)) == "((i > 0) && True)"
    with pytest.raises(
        TypeError, match=r"argument 1 of all\(\) must be a bool condition, found int32"
    ):
        te.all(i > 0, i)
    with pytest.raises(TypeError, match=r"argument 0 of any\(\) must be a bool condition"):
        te.any(1.5)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_dtype_limits_match_numpy(dtype):
    info = np.iinfo(dtype) if dtype[0] in "iu" else np.finfo(dtype)
    hi, lo = te.max_value(dtype), te.min_value(dtype)
    assert hi.dtype == lo.dtype == dtype
    assert hi.value == info.max and lo.value == info.min


def test_dtype_limits_of_bool_and_bfloat16():
    assert te.max_value("bool").value == 1 and te.min_value("bool").value == 0
    assert te.max_value("bfloat16").value == pytest.approx(3.3895313892515355e38)
    assert te.min_value(torch.bfloat16).value == pytest.approx(-3.3895313892515355e38)


def test_explicit_integer_division_functions():
    i = te.var("i")
    assert str(te.floordiv(i, 4)) == "floordiv(i, 4)"
    assert str(te.floormod(i, 4)) == "floormod(i, 4)"
    assert str(te.truncdiv(i, 4)) == "(i / 4)"
    assert str(te.truncmod(-7, i)) == "(-7 % i)"
    x = te.var("x", "float32")
    with pytest.raises(TypeError, match=r"truncdiv\(\) needs integers"):
        te.truncdiv(x, 2)
    with pytest.raises(TypeError, match=r"an operand of floordiv\(\) must be an expression"):
        te.floordiv(i, "2")
    assert str(te.floordiv(x, 2)) == "floor_divide(x, 2.0)"


def test_module_exports_are_documented():
    for name in te.__all__:
        obj = getattr(te, name)
        assert obj.__doc__, name
