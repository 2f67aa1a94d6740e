"""Neural-network operators written in the tensor-expression DSL (TVM's TOPI).

``from pytvmbridge import topi`` gives what ``from tvm import topi`` gives: elementwise math,
broadcasting binary operators, reductions, layout and indexing operators at the top level, and
convolution, pooling, matrix products, normalisation, softmax and activations in ``topi.nn``.
Every operator returns a tensor of computes, each tagged (``op.tag``, see :mod:`.tag`) so that
automatic schedules can recognise it; any schedule builds them.

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> X = tvm.placeholder((tvm.var("n"), 4), name="X")
    >>> W = tvm.placeholder((3, 4), name="W")
    >>> Y = topi.nn.softmax(topi.nn.dense(X, W))
    >>> f = tvm.build(tvm.create_schedule(Y.op), [X, W, Y])
    >>> y = np.empty((2, 3), "float32")
    >>> f(np.ones((2, 4), "float32"), np.ones((3, 4), "float32"), y)
    >>> np.allclose(y, 1 / 3)
    True
"""

from . import nn, tag, utils
from .broadcast import (
    add,
    broadcast_to,
    divide,
    equal,
    floor_divide,
    floor_mod,
    greater,
    greater_equal,
    less,
    less_equal,
    logical_and,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    not_equal,
    power,
    subtract,
    trunc_divide,
    trunc_mod,
    where,
)
from .elemwise import (
    abs,
    cast,
    ceil,
    clip,
    cos,
    erf,
    exp,
    exp2,
    floor,
    full,
    full_like,
    identity,
    isfinite,
    isinf,
    isnan,
    log,
    log1p,
    log2,
    log10,
    logical_not,
    negative,
    round,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    tan,
    tanh,
    trunc,
)
from .reduction import argmax, argmin, max, mean, min, prod, sum
from .transform import matmul

__all__ = [
    "abs",
    "add",
    "argmax",
    "argmin",
    "broadcast_to",
    "cast",
    "ceil",
    "clip",
    "cos",
    "divide",
    "equal",
    "erf",
    "exp",
    "exp2",
    "floor",
    "floor_divide",
    "floor_mod",
    "full",
    "full_like",
    "greater",
    "greater_equal",
    "identity",
    "isfinite",
    "isinf",
    "isnan",
    "less",
    "less_equal",
    "log",
    "log1p",
    "log2",
    "log10",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mod",
    "multiply",
    "negative",
    "nn",
    "not_equal",
    "power",
    "prod",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "sqrt",
    "subtract",
    "sum",
    "tag",
    "tan",
    "tanh",
    "trunc",
    "trunc_divide",
    "trunc_mod",
    "utils",
    "where",
]
