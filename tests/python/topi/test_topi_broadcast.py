import numpy as np
import pytest
from topi_testing import random, run

import pytvmbridge as tvm
from pytvmbridge import topi

ARITH = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
}
COMPARE = {
    "equal": np.equal,
    "not_equal": np.not_equal,
    "less": np.less,
    "less_equal": np.less_equal,
    "greater": np.greater,
    "greater_equal": np.greater_equal,
}
SHAPES = [
    ((3, 1, 5), (4, 1)),
    ((1,), (7,)),
    ((2, 3), (2, 3)),
    ((5, 1), (1,)),
    ((), (2, 3)),
]


@pytest.mark.parametrize(
    ("shape_a", "shape_b", "dtype"),
    [(*shapes, "float32") for shapes in SHAPES]
    + [(*shapes, "int32") for shapes in SHAPES]
    + [(*SHAPES[0], "float64"), (*SHAPES[3], "int8")],
)
def test_arithmetic_and_comparisons_broadcast_like_numpy(shape_a, shape_b, dtype):
    A = tvm.placeholder(shape_a, dtype, name="A")
    B = tvm.placeholder(shape_b, dtype, name="B")
    a = random(shape_a, dtype, seed=1, low=-4, high=4)
    b = random(shape_b, dtype, seed=2, low=-4, high=4)
    # Divisors away from zero.
    b = np.where(np.abs(b) < 0.5, 3, b).astype(dtype)
    outs, refs = [], []
    for table in (ARITH, COMPARE):
        for name, ref in table.items():
            outs.append(getattr(topi, name)(A, B))
            refs.append(ref(a, b))
    if dtype.startswith("float"):
        outs += [topi.divide(A, B), topi.power(topi.abs(A), B)]
        refs += [a / b, np.abs(a) ** b]
    else:
        outs += [
            topi.floor_divide(A, B),
            topi.floor_mod(A, B),
            topi.divide(A, B),
            topi.mod(A, B),
            topi.trunc_divide(A, B),
            topi.trunc_mod(A, B),
        ]
        trunc = np.trunc(a.astype("float64") / b).astype(dtype)
        refs += [a // b, a % b, trunc, np.fmod(a, b), trunc, np.fmod(a, b)]
    res = run([A, B], outs, [a, b], refs)
    assert res[0].shape == np.broadcast_shapes(shape_a, shape_b)
    assert outs[0].op.tag == "broadcast"
    assert outs[len(ARITH)].dtype == "bool"


def test_symbolic_broadcast():
    n = tvm.var("n")
    A = tvm.placeholder((n, 3), name="A")
    row = tvm.placeholder((3,), name="row")
    col = tvm.placeholder((n, 1), name="col")
    C = topi.multiply(topi.add(A, row), col)
    assert C.shape[1] == 3 and C.shape[0].name == "n"
    a, r, c = (
        random((5, 3), "float32"),
        random((3,), "float32", 1),
        random((5, 1), "float32", 2),
    )
    run([A, row, col], C, [a, r, c], (a + r) * c)


def test_scalar_operands():
    A = tvm.placeholder((2, 3), name="A")
    a = random((2, 3), "float32")
    outs = [
        topi.add(A, 1.5),
        topi.subtract(2.0, A),
        topi.multiply(A, tvm.const(3.0)),
        topi.maximum(0.0, A),
        topi.greater(A, 0.5),
    ]
    assert outs[0].op.tag == "elemwise"
    run([A], outs, [a], [a + 1.5, 2.0 - a, a * 3.0, np.maximum(a, 0.0), a > 0.5])
    expr = topi.add(tvm.var("x", "float32"), 1.0)
    assert isinstance(expr, tvm.Expr) and str(expr) == "(x + 1.0)"


def test_logical_ops():
    A = tvm.placeholder((4, 1), "bool", name="A")
    B = tvm.placeholder((5,), "bool", name="B")
    a, b = random((4, 1), "bool", 1), random((5,), "bool", 2)
    run(
        [A, B],
        [topi.logical_and(A, B), topi.logical_or(A, B), topi.logical_xor(A, B)],
        [a, b],
        [a & b, a | b, a ^ b],
    )


def test_broadcast_errors():
    A = tvm.placeholder((3, 4), name="A")
    with pytest.raises(ValueError, match=r"add: shapes \(3, 4\) and \(3,\) do not broadcast"):
        topi.add(A, tvm.placeholder((3,)))
    with pytest.raises(ValueError, match="symbolic dimensions must be the same var"):
        topi.add(tvm.placeholder((tvm.var("n"),)), tvm.placeholder((tvm.var("m"),)))
    with pytest.raises(TypeError, match=r"cast one of them with topi\.cast"):
        topi.add(A, tvm.placeholder((4,), "float64"))
    with pytest.raises(TypeError, match="rhs of add must be a Tensor, an expression or a number"):
        topi.add(A, "x")


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_broadcast_to(dtype):
    A = tvm.placeholder((3, 1), dtype, name="A")
    a = random((3, 1), dtype)
    B = topi.broadcast_to(A, (2, 3, 4))
    run([A], B, [a], np.broadcast_to(a, (2, 3, 4)))
    n = tvm.var("n")
    S = topi.broadcast_to(A, (n, 3, 5))
    run([A], S, [a], np.broadcast_to(a, (2, 3, 5)))
    with pytest.raises(ValueError, match=r"shapes \(3, 1\) and \(2, 4, 4\) do not broadcast"):
        topi.broadcast_to(A, (2, 4, 4))
    with pytest.raises(ValueError, match="cannot broadcast"):
        topi.broadcast_to(A, (3,))


def test_where():
    C = tvm.placeholder((2, 1, 5), "bool", name="C")
    X = tvm.placeholder((3, 5), name="X")
    Y = tvm.placeholder((5,), name="Y")
    c, x, y = (
        random((2, 1, 5), "bool"),
        random((3, 5), "float32", 1),
        random((5,), "float32", 2),
    )
    I = tvm.placeholder((4,), "int32", name="I")
    i = np.array([0, 3, -1, 0], "int32")
    run(
        [C, X, Y, I],
        [topi.where(C, X, Y), topi.where(C, X, 0.0), topi.where(I, 1, -1)],
        [c, x, y, i],
        [np.where(c, x, y), np.where(c, x, 0.0), np.where(i, 1, -1)],
    )
    with pytest.raises(TypeError, match="where: x is float32 and y is float64"):
        topi.where(C, X, tvm.placeholder((5,), "float64"))
