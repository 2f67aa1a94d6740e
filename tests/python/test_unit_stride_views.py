"""Calls with non-compact arrays whose last axis is contiguous (slices of outer axes, chunks of
a fused projection, outputs written into part of a bigger array): the strided variant's fast
path (specialize_unit_stride), against NumPy/PyTorch, next to arrays that take its general
body (a transposed or stepped last axis)."""

import numpy as np
import pytest
import torch

import pytvmbridge as tvm
from pytvmbridge import topi


def auto_build(outputs, inputs):
    return tvm.build(tvm.auto_schedule(outputs), [*inputs, *outputs])


def add_kernel(shape):
    x = tvm.placeholder(shape, name="x")
    y = tvm.placeholder(shape, name="y")
    z = topi.add(x, y)
    return auto_build([z], [x, y])


@pytest.mark.parametrize("width", [16, 37, 768])
def test_column_slices_in_and_out(width):
    f = add_kernel((3, 5, width))
    wide_x = torch.rand(3, 5, 2 * width + 3)
    wide_y = torch.rand(4, 5, width + 1)
    x = wide_x[..., 3 : 3 + width]  # offset rows of a wider array
    y = wide_y[1:, :, :width]
    out_base = torch.full((3, 5, 3 * width), -7.0)
    z = out_base[..., width : 2 * width]
    assert not (x.is_contiguous() or y.is_contiguous() or z.is_contiguous())
    f(x, y, z)
    torch.testing.assert_close(z, x + y, rtol=0, atol=0)
    # Nothing written outside the view.
    assert torch.all(out_base[..., :width] == -7.0)
    assert torch.all(out_base[..., 2 * width :] == -7.0)


def test_non_unit_last_stride_takes_the_general_body():
    f = add_kernel((6, 20))
    x = torch.rand(6, 40)[:, ::2]  # the last axis stepped by 2: the general body
    y = torch.rand(20, 6).t()  # transposed
    z = torch.empty(6, 20)
    f(x, y, z)
    torch.testing.assert_close(z, x + y, rtol=0, atol=0)
    # The same kernel, then called with a unit-stride view: the fast path, same values.
    x2 = torch.rand(6, 25)[:, 5:]
    f(x2, y.contiguous(), z)
    torch.testing.assert_close(z, x2 + y, rtol=0, atol=0)


def test_length_one_last_axis_with_any_stride():
    x = tvm.placeholder((8, 12), name="x")
    s = topi.sum(x, axis=-1, keepdims=True)
    f = auto_build([s], [x])
    data = torch.rand(8, 30)[:, 4:16]
    out = torch.zeros(40).as_strided((8, 1), (5, 7))  # a last stride of 7 over one element
    f(data, out)
    torch.testing.assert_close(out, data.sum(-1, keepdim=True), rtol=1e-5, atol=1e-5)


def test_dense_on_chunks_of_a_fused_projection():
    # The attention pattern: q, k and v are column chunks of one (tokens, 3 * d) projection.
    tokens, d, n = 24, 32, 48
    q_ph = tvm.placeholder((tokens, d), name="q")
    w_ph = tvm.placeholder((n, d), name="w")
    out = topi.nn.dense(q_ph, w_ph)
    f = auto_build([out], [q_ph, w_ph])
    qkv = torch.rand(tokens, 3 * d)
    w = torch.rand(n, d)
    for chunk in qkv.split(d, dim=1):
        result = torch.empty(tokens, n)
        f(chunk, w, result)
        torch.testing.assert_close(result, chunk @ w.t(), rtol=1e-5, atol=1e-5)


def test_softmax_rows_of_a_view_on_numpy():
    x = tvm.placeholder((4, 6, 40), name="x")
    out = topi.nn.softmax(x, axis=-1)
    f = auto_build([out], [x])
    base = np.random.default_rng(0).standard_normal((4, 9, 48)).astype("float32")
    view = base[:, 2:8, 5:45]
    assert not view.flags.c_contiguous
    result = np.empty((4, 6, 40), "float32")
    f(view, result)
    expected = torch.softmax(torch.from_numpy(np.ascontiguousarray(view)), -1).numpy()
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)


def test_saved_module_keeps_the_fast_path():
    f = add_kernel((4, 64))
    loaded = tvm.runtime.module_from_bytes(tvm.runtime.module_to_bytes(f))
    x = torch.rand(4, 100)[:, 10:74]
    y = torch.rand(8, 64)[::2]
    z_base = torch.zeros(4, 128)
    loaded(x, y, z_base[:, 64:])
    torch.testing.assert_close(z_base[:, 64:], x + y, rtol=0, atol=0)
    assert torch.all(z_base[:, :64] == 0)
