"""Activation functions: ``relu gelu silu sigmoid tanh hardswish hardsigmoid leaky_relu prelu
elu softplus``, each one elementwise compute tagged ``"elemwise"``.

They follow ``torch.nn.functional``: ``gelu(x, approximate="none")`` is the exact
``x * Phi(x)`` through ``erf``, ``approximate="tanh"`` the tanh formula; ``relu`` also takes
integer tensors, the others need floats. float16 and bfloat16 inputs are computed in float32
and rounded once to their dtype, as PyTorch's CPU kernels do.

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> X = tvm.placeholder((tvm.var("n"),), name="X")
    >>> Y = topi.nn.relu(X)
    >>> f = tvm.build(tvm.create_schedule(Y.op), [X, Y])
    >>> y = np.empty(3, "float32"); f(np.array([-1.0, 0.0, 2.0], "float32"), y); y.tolist()
    [0.0, 0.0, 2.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ... import te
from ...error import TVMTypeError, TVMValueError
from .. import tag
from ..utils import (
    Tensor,
    accumulate_dtype,
    check_ndim,
    check_tensor,
    normalize_axis,
    require_float,
    same_dim,
)

ExprFn = Callable[[te.Expr], te.Expr]


def _apply(x: Tensor, fn: ExprFn, name: str, float_only: bool = True) -> Tensor:
    check_tensor(x, f"x of {name}")
    if not float_only:
        return te.compute(x.shape, lambda *i: fn(x[i]), name=f"T_{name}", tag=tag.ELEMWISE)
    require_float(x, name)
    # float16 and bfloat16 are computed in float32 and rounded once, as PyTorch's CPU kernels
    # do: gelu's x / 2 * (1 + erf(...)) in float16 loses most digits where the two terms
    # nearly cancel (x below -3), and every step would round again.
    wide = accumulate_dtype(x.dtype)
    if wide == x.dtype:
        return te.compute(x.shape, lambda *i: fn(x[i]), name=f"T_{name}", tag=tag.ELEMWISE)
    return te.compute(
        x.shape,
        lambda *i: fn(x[i].astype(wide)).astype(x.dtype),
        name=f"T_{name}",
        tag=tag.ELEMWISE,
    )


def _c(value: float, like: te.Expr) -> te.Expr:
    return te.const(value, like.dtype)


def relu(x: Tensor) -> Tensor:
    """``max(x, 0)``; integer tensors too.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.relu(tvm.placeholder((3,), "int8", name="A")).op.body
        [max(A[i0], 0i8)]
    """
    return _apply(x, lambda v: te.max(v, _c(0, v)), "relu", float_only=False)


def leaky_relu(x: Tensor, alpha: float = 0.01) -> Tensor:
    """``x`` where positive, else ``alpha * x``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.leaky_relu(tvm.placeholder((3,), name="A"), 0.1).op.tag
        'elemwise'
    """
    return _apply(x, lambda v: te.select(v > _c(0, v), v, v * _c(alpha, v)), "leaky_relu")


def prelu(x: Tensor, slope: Tensor, axis: int = 1) -> Tensor:
    """Leaky relu with a learned slope per channel: ``slope`` has one entry per ``x.shape[axis]``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> X, a = tvm.placeholder((1, 3, 2, 2)), tvm.placeholder((3,))
        >>> topi.nn.prelu(X, a).shape
        (1, 3, 2, 2)
    """
    check_tensor(x, "x of prelu")
    check_tensor(slope, "slope of prelu")
    require_float(x, "prelu")
    check_ndim(slope, 1, "slope of prelu")
    axis = normalize_axis(axis, x.ndim, "prelu")
    if slope.dtype != x.dtype:
        raise TVMTypeError(f"prelu: slope must have x's dtype {x.dtype}, found {slope.dtype}")
    if not same_dim(slope.shape[0], x.shape[axis]):
        raise TVMValueError(
            f"prelu: slope has {slope.shape[0]} entries, x has {x.shape[axis]} channels on axis "
            f"{axis}"
        )

    def fcompute(*i: te.Expr) -> te.Expr:
        v = x[i]
        return te.select(v > _c(0, v), v, v * slope[i[axis]])

    return te.compute(x.shape, fcompute, name="T_prelu", tag=tag.BROADCAST)


def sigmoid(x: Tensor) -> Tensor:
    """``1 / (1 + exp(-x))``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.sigmoid(tvm.placeholder((3,), name="A")).op.body
        [sigmoid(A[i0])]
    """
    return _apply(x, te.sigmoid, "sigmoid")


def tanh(x: Tensor) -> Tensor:
    """Hyperbolic tangent.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.tanh(tvm.placeholder((3,), name="A")).op.body
        [tanh(A[i0])]
    """
    return _apply(x, te.tanh, "tanh")


def silu(x: Tensor) -> Tensor:
    """``x * sigmoid(x)`` (swish).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.silu(tvm.placeholder((3,), name="A")).op.body
        [(A[i0] * sigmoid(A[i0]))]
    """
    return _apply(x, lambda v: v * te.sigmoid(v), "silu")


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit: ``x * (1 + erf(x / sqrt(2))) / 2`` exactly, or with
    ``approximate="tanh"``: ``x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) / 2``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.gelu(tvm.placeholder((3,)), approximate="tanh").op.tag
        'elemwise'
    """
    # Written as h + h * f with h = x / 2 (one FMA) and, for tanh, the argument as
    # x * (k + k 0.044715 x^2) (two multiplies and an FMA): three to four vector instructions
    # fewer per 16 floats than the textbook form, in a loop that is nearly compute-bound.
    if approximate == "none":

        def exact(v: te.Expr) -> te.Expr:
            h = v * _c(0.5, v)
            return h + h * te.erf(v * _c(1 / math.sqrt(2.0), v))

        return _apply(x, exact, "gelu")
    if approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)

        def tanh_form(v: te.Expr) -> te.Expr:
            h = v * _c(0.5, v)
            arg = v * (_c(k, v) + _c(k * 0.044715, v) * (v * v))
            return h + h * te.tanh(arg)

        return _apply(x, tanh_form, "gelu")
    raise TVMValueError(f"approximate of gelu must be 'none' or 'tanh', found {approximate!r}")


def hardsigmoid(x: Tensor) -> Tensor:
    """``clip(x / 6 + 1/2, 0, 1)`` (``torch.nn.functional.hardsigmoid``).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.hardsigmoid(tvm.placeholder((3,))).op.tag
        'elemwise'
    """

    # A select over the pieces, not a clip of x / 6 + 1/2: exactly 0 and 1 from the kinks at
    # -3 and 3 on (x * (1/6) + 1/2 rounds to 5e-17 at -3), with PyTorch's gradient there (0).
    def pieces(v: te.Expr) -> te.Expr:
        middle = v * _c(1 / 6, v) + _c(0.5, v)
        return te.select(v <= _c(-3, v), _c(0, v), te.select(v >= _c(3, v), _c(1, v), middle))

    return _apply(x, pieces, "hardsigmoid")


def hardswish(x: Tensor) -> Tensor:
    """``x * clip(x + 3, 0, 6) / 6`` (``torch.nn.functional.hardswish``).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.hardswish(tvm.placeholder((3,))).op.tag
        'elemwise'
    """

    # The middle piece as x * (x / 6 + 1/2): one FMA and no division (vdivps on 16 floats
    # issues once per several cycles and bounded the loop at half the copy's speed with the
    # data in cache); within an ulp or two of the division, exact at the kinks. Written as a
    # select over the three pieces so that its gradient is PyTorch's: 0 up to -3, (2x + 3) / 6
    # strictly between -3 and 3, 1 from 3 on and for a NaN (which stays a NaN).
    def pieces(v: te.Expr) -> te.Expr:
        middle = v * (v * _c(1 / 6, v) + _c(0.5, v))
        return te.select(v <= _c(-3, v), _c(0, v), te.select(v < _c(3, v), middle, v))

    return _apply(x, pieces, "hardswish")


def elu(x: Tensor, alpha: float = 1.0) -> Tensor:
    """``x`` where positive, else ``alpha * (exp(x) - 1)`` (computed as ``expm1``, accurate
    near 0 as PyTorch's).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.elu(tvm.placeholder((3,))).op.tag
        'elemwise'
    """
    return _apply(
        x,
        lambda v: te.select(v > _c(0, v), v, _c(alpha, v) * te.expm1(v)),
        "elu",
    )


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold`` (PyTorch's form). float16
    and bfloat16 are computed in float32 and rounded back (PyTorch's CPU kernel does so too):
    ``exp(beta x)`` overflows float16 from ``beta x`` = 11.1 on, below the default threshold.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.softplus(tvm.placeholder((3,))).op.tag
        'elemwise'
    """

    def fn(v: te.Expr) -> te.Expr:  # float32 for float16 and bfloat16 (see _apply)
        bx = v * _c(beta, v)
        above = bx > _c(threshold, v)
        # The select keeps exp finite on the branch the outer select does not take; a min()
        # did too, but its derivative at bx == threshold is 0 (a tie), and the gradient there
        # was 0 where PyTorch's is 1.
        soft = te.log1p(te.exp(te.select(above, _c(threshold, v), bx))) / _c(beta, v)
        return te.select(above, v, soft)

    return _apply(x, fn, "softplus")


__all__ = [
    "elu",
    "gelu",
    "hardsigmoid",
    "hardswish",
    "leaky_relu",
    "prelu",
    "relu",
    "sigmoid",
    "silu",
    "softplus",
    "tanh",
]
