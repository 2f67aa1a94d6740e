"""Pointwise kernels (every array of one shape, each output element a function of the inputs'
elements at its own index) on arrays that share a dense layout other than row-major
(channels_last, transposed): they run the compact variant over memory in order, and PyTorch
outputs they allocate take the inputs' layout, as torch's own elementwise operators do. Kernels
that are not pointwise (broadcasts, transposes, index-dependent values, reductions) keep the
strided variant, with the same values as NumPy/PyTorch."""

import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import topi
from pytvmbridge.bridges import to_pytorch

rng = np.random.default_rng(7)


def auto_build(outputs, inputs, name="default_function"):
    return tvm.build(tvm.auto_schedule(outputs), [*inputs, *outputs], name=name)


def variant_names(f, *arrays):
    """The loop-profile call rows a call of f writes: which variant ran."""
    with tvm.profile_loops() as prof:
        f(*arrays)
    return [r.name for r in prof if r.name.endswith("call")]


def channels_last(*shape):
    return torch.randn(*shape).to(memory_format=torch.channels_last)


@pytest.mark.parametrize("shape", [(2, 16, 7, 5), (1, 3, 1, 1), (3, 1, 5, 2), (2, 64, 13, 17)])
def test_relu_on_channels_last_runs_the_compact_variant(shape):
    x = tvm.placeholder(shape, name="x")
    y = topi.nn.relu(x)
    f = auto_build([y], [x], name="relu_cl")
    a = channels_last(*shape)
    out = torch.empty_like(a)  # channels_last as well
    assert variant_names(f, a, out) == ["relu_cl call"]
    torch.testing.assert_close(out, torch.relu(a), rtol=0, atol=0)


def test_binary_and_unary_chain_with_a_cast():
    shape = (2, 8, 5, 6)
    x = tvm.placeholder(shape, name="x")
    w = tvm.placeholder(shape, name="w")
    mid = tvm.compute(shape, lambda *i: x(*i) * w(*i) + 1.0, name="mid")
    y = tvm.compute(shape, lambda *i: tvm.tanh(mid(*i)).astype("float64"), name="y")
    f = auto_build([y], [x, w], name="chain")
    a, b = channels_last(*shape), channels_last(*shape)
    out = torch.empty(shape, dtype=torch.float64).to(memory_format=torch.channels_last)
    assert variant_names(f, a, b, out) == ["chain call"]
    ref = torch.tanh(a * b + 1.0).double()
    torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-6)


def test_numpy_transposed_arrays():
    x = tvm.placeholder((50, 30), name="x")
    y = tvm.compute((50, 30), lambda i, j: x[i, j] * 2.0 - 1.0, name="y")
    f = auto_build([y], [x], name="affine")
    a = rng.standard_normal((30, 50)).astype("float32").T  # Fortran order
    out = np.empty((30, 50), "float32").T
    assert variant_names(f, a, out) == ["affine call"]
    np.testing.assert_array_equal(out, a * np.float32(2) - np.float32(1))


def test_mixed_layouts_take_the_strided_variant():
    shape = (2, 8, 4, 4)
    x = tvm.placeholder(shape, name="x")
    w = tvm.placeholder(shape, name="w")
    f = auto_build([topi.add(x, w)], [x, w], name="mixed")
    a, b = channels_last(*shape), torch.randn(shape)
    out = torch.empty(shape)
    assert variant_names(f, a, b, out) == ["mixed (strided) call"]
    torch.testing.assert_close(out, a + b, rtol=0, atol=0)


def test_reversed_and_gapped_arrays_take_the_strided_variant():
    x = tvm.placeholder((6, 10), name="x")
    f = auto_build([topi.negative(x)], [x], name="neg")
    base = rng.standard_normal((6, 10)).astype("float32")
    flipped = base[::-1, ::-1]  # negative strides
    out = np.empty((6, 10), "float32")[::-1, ::-1]
    assert variant_names(f, flipped, out) == ["neg (strided) call"]
    np.testing.assert_array_equal(out, -flipped)
    wide = rng.standard_normal((10, 14)).astype("float32")
    gapped = wide[:, 2:8].T  # transposed with a gap between columns: not dense
    out2 = np.empty((10, 6), "float32").T
    assert variant_names(f, gapped, out2) == ["neg (strided) call"]
    np.testing.assert_array_equal(out2, -gapped)


def test_square_transpose_is_not_pointwise():
    # Same shape in and out, but element (i, j) reads (j, i): the layout matters.
    x = tvm.placeholder((9, 9), name="x")
    y = tvm.compute((9, 9), lambda i, j: x[j, i] + 0.5, name="y")
    f = auto_build([y], [x], name="square_t")
    a = rng.standard_normal((9, 9)).astype("float32").T
    out = np.empty((9, 9), "float32").T
    assert variant_names(f, a, out) == ["square_t (strided) call"]
    np.testing.assert_array_equal(out, a.T + np.float32(0.5))


def test_index_dependent_values_are_not_pointwise():
    x = tvm.placeholder((7, 11), name="x")
    y = tvm.compute((7, 11), lambda i, j: x[i, j] + (i * 100 + j).astype("float32"), name="y")
    f = auto_build([y], [x], name="iota")
    a = rng.standard_normal((11, 7)).astype("float32").T
    out = np.empty((11, 7), "float32").T
    assert variant_names(f, a, out) == ["iota (strided) call"]
    ii, jj = np.meshgrid(np.arange(7), np.arange(11), indexing="ij")
    np.testing.assert_array_equal(out, a + (ii * 100 + jj).astype("float32"))


def test_broadcast_and_reduction_are_not_pointwise():
    shape = (2, 6, 3, 5)
    x = tvm.placeholder(shape, name="x")
    bias = tvm.placeholder((6, 1, 1), name="bias")
    f = auto_build([topi.add(x, bias)], [x, bias], name="bias")
    a = channels_last(*shape)
    bv = torch.randn(6, 1, 1)
    out = torch.empty_like(a)
    assert variant_names(f, a, bv, out) == ["bias (strided) call"]
    torch.testing.assert_close(out, a + bv, rtol=0, atol=0)
    s = topi.sum(x, axis=1, keepdims=True)
    g = auto_build([s], [x], name="sum_c")
    out_s = torch.empty(2, 1, 3, 5)
    g(a, out_s)
    torch.testing.assert_close(out_s, a.sum(1, keepdim=True), rtol=1e-5, atol=1e-5)


def test_symbolic_shapes():
    n = tvm.var("n")
    shape = (n, 4, 3, 5)
    x = tvm.placeholder(shape, name="x")
    f = auto_build([topi.sigmoid(x)], [x], name="sig")
    for batch in (1, 3):
        a = channels_last(batch, 4, 3, 5)
        out = torch.empty_like(a)
        assert variant_names(f, a, out) == ["sig call"]
        torch.testing.assert_close(out, torch.sigmoid(a), rtol=1e-6, atol=1e-6)


def test_allocated_torch_outputs_keep_the_inputs_layout():
    shape = (2, 16, 6, 7)
    x = tvm.placeholder(shape, name="x")
    w = tvm.placeholder(shape, name="w")
    f = to_pytorch(auto_build([topi.multiply(x, w)], [x, w], name="mul"))
    a, b = channels_last(*shape), channels_last(*shape)
    out = f(a, b)
    assert out.is_contiguous(memory_format=torch.channels_last)
    assert out.stride() == a.stride()
    torch.testing.assert_close(out, a * b, rtol=0, atol=0)
    # Row-major inputs: a row-major output; mixed: row-major too, values right either way.
    c = f(a.contiguous(), b.contiguous())
    assert c.is_contiguous()
    torch.testing.assert_close(c, a * b, rtol=0, atol=0)
    m = f(a, b.contiguous())
    assert m.is_contiguous()
    torch.testing.assert_close(m, a * b, rtol=0, atol=0)


def test_allocated_output_of_a_broadcast_stays_row_major():
    shape = (2, 6, 3, 5)
    x = tvm.placeholder(shape, name="x")
    bias = tvm.placeholder((6, 1, 1), name="bias")
    f = to_pytorch(auto_build([topi.add(x, bias)], [x, bias], name="bias_alloc"))
    a, bv = channels_last(*shape), torch.randn(6, 1, 1)
    out = f(a, bv)
    assert out.is_contiguous()
    torch.testing.assert_close(out, a + bv, rtol=0, atol=0)


def test_saved_module_keeps_the_fast_path(tmp_path):
    shape = (2, 8, 5, 3)
    x = tvm.placeholder(shape, name="x")
    f = auto_build([topi.abs(x)], [x], name="absval")
    path = str(tmp_path / "abs.ptb")
    f.save(path)
    g = tvm.runtime.load_module(path)
    a = channels_last(*shape)
    out = torch.empty_like(a)
    assert variant_names(g, a, out) == ["absval call"]
    torch.testing.assert_close(out, a.abs(), rtol=0, atol=0)


def test_allocated_numpy_outputs_keep_fortran_order():
    x = tvm.placeholder((40, 24), name="x")
    w = tvm.placeholder((40, 24), name="w")
    f = tvm.to_numpy(auto_build([topi.subtract(x, w)], [x, w], name="sub"))
    a = np.asfortranarray(rng.standard_normal((40, 24)).astype("float32"))
    b = np.asfortranarray(rng.standard_normal((40, 24)).astype("float32"))
    out = f(a, b)
    assert out.flags.f_contiguous and not out.flags.c_contiguous
    np.testing.assert_array_equal(out, a - b)
    c = f(np.ascontiguousarray(a), np.ascontiguousarray(b))
    assert c.flags.c_contiguous
    np.testing.assert_array_equal(c, a - b)


def test_kernel_decorator_on_channels_last_tensors():
    @tvm.kernel
    def scaled_silu(t):
        return tvm.compute(t.shape, lambda *i: t(*i) * tvm.sigmoid(t(*i)) * 2.0, name="silu2")

    a = channels_last(2, 8, 5, 7)
    out = scaled_silu(a)
    assert out.is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(out, torch.nn.functional.silu(a) * 2.0, rtol=1e-5, atol=1e-6)
    # The same kernel on a row-major tensor: a row-major output, the same values.
    out_c = scaled_silu(a.contiguous())
    assert out_c.is_contiguous()
    torch.testing.assert_close(out_c, out, rtol=0, atol=0)
