"""Loops split where a concatenation's or a pad's comparison is decided (partition_ranges.cc):
auto-scheduled values against NumPy with boundaries inside, at and between vectors, and the
lowered loops of a concatenation whose inputs are whole vectors."""

import re

import numpy as np
import pytest

import pytvmbridge as tvm
from pytvmbridge import topi

rng = np.random.default_rng(7)


def auto(inputs, output):
    s = tvm.auto_schedule([output])
    return tvm.build(s, [*inputs, output]), str(tvm.lower(s, [*inputs, output]))


@pytest.mark.parametrize(
    "widths", [(768, 768), (200, 56), (16, 1, 47), (3, 5), (64, 64, 64, 64, 64)]
)
def test_concatenate_last_axis(widths):
    phs = [tvm.placeholder((3, 7, w), name=f"x{k}") for k, w in enumerate(widths)]
    f, _ = auto(phs, topi.concatenate(phs, axis=-1))
    arrays = [rng.standard_normal((3, 7, w)).astype("float32") for w in widths]
    out = np.full((3, 7, sum(widths)), np.nan, "float32")
    f(*arrays, out)
    np.testing.assert_array_equal(out, np.concatenate(arrays, axis=-1))


def test_whole_vector_inputs_read_each_input_in_its_own_loop():
    x = tvm.placeholder((8, 128, 768), name="x")
    y = tvm.placeholder((8, 128, 768), name="y")
    _, text = auto([x, y], topi.concatenate([x, y], axis=-1))
    # Two loops over the 64-float steps: [0, 12) reads x, [12, 24) reads y, with no select.
    assert re.search(r"for \(i2\.outer, 0, 12\)", text), text
    assert re.search(r"for \(i2\.outer, 12, 12\)", text), text
    assert "select" not in text


@pytest.mark.parametrize("pads", [((1, 1), (1, 1)), ((0, 3), (2, 0)), ((5, 0), (0, 17))])
def test_pad_borders(pads):
    (top, bottom), (left, right) = pads
    x = tvm.placeholder((2, 3, 20, 37), name="x")
    f, _ = auto([x], topi.nn.pad(x, [0, 0, top, left], [0, 0, bottom, right], pad_value=-2.5))
    a = rng.standard_normal((2, 3, 20, 37)).astype("float32")
    out = np.empty((2, 3, 20 + top + bottom, 37 + left + right), "float32")
    f(a, out)
    expected = np.pad(a, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=-2.5)
    np.testing.assert_array_equal(out, expected)
