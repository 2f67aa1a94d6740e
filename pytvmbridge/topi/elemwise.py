"""Elementwise unary operators: one output element per input element, same shape.

Each is a compute tagged ``"elemwise"``; the float ones raise TypeError on integer tensors
(cast first), as the math functions of the DSL do.

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> A = tvm.placeholder((tvm.var("n"),), name="A")
    >>> B = topi.exp(A)
    >>> B.op.tag
    'elemwise'
    >>> f = tvm.build(tvm.create_schedule(B.op), [A, B])
    >>> a = np.array([0.0, 1.0], "float32"); b = np.empty_like(a); f(a, b)
    >>> np.allclose(b, np.exp(a))
    True
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import numpy as np

from .. import te
from ..error import TVMTypeError, TVMValueError
from . import tag
from .utils import Tensor, check_tensor, is_float, same_dim

ExprFn = Callable[[te.Expr], te.Expr]


def _elemwise(x: Tensor, fn: ExprFn, name: str) -> Tensor:
    check_tensor(x, f"the input of {name}")
    return te.compute(x.shape, lambda *i: fn(x[i]), name=f"T_{name}", tag=tag.ELEMWISE)


def _float_unary(name: str, fn: ExprFn, numpy_name: str) -> Callable[[Tensor], Tensor]:
    def op(x: Tensor) -> Tensor:
        check_tensor(x, f"the input of {name}")
        if not is_float(x.dtype):
            raise TVMTypeError(
                f"{name} needs a float tensor, found {x.dtype} tensor {x.name!r}; "
                "cast it first with topi.cast"
            )
        return _elemwise(x, fn, name)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (
        f"Elementwise ``{name}`` of a float tensor (NumPy's ``{numpy_name}``).\n\n"
        "    Example:\n"
        "        >>> import pytvmbridge as tvm\n"
        "        >>> from pytvmbridge import topi\n"
        f"        >>> topi.{name}(tvm.placeholder((3,), name='A')).op.body\n"
        f"        [{name}(A[i0])]\n"
    )
    return op


exp = _float_unary("exp", te.exp, "np.exp")
exp2 = _float_unary("exp2", te.exp2, "np.exp2")
log = _float_unary("log", te.log, "np.log")
log2 = _float_unary("log2", te.log2, "np.log2")
log10 = _float_unary("log10", te.log10, "np.log10")
log1p = _float_unary("log1p", te.log1p, "np.log1p")
sqrt = _float_unary("sqrt", te.sqrt, "np.sqrt")
rsqrt = _float_unary("rsqrt", te.rsqrt, "1 / np.sqrt")
sin = _float_unary("sin", te.sin, "np.sin")
cos = _float_unary("cos", te.cos, "np.cos")
tan = _float_unary("tan", te.tan, "np.tan")
tanh = _float_unary("tanh", te.tanh, "np.tanh")
sigmoid = _float_unary("sigmoid", te.sigmoid, "1 / (1 + np.exp(-x))")
erf = _float_unary("erf", te.erf, "scipy.special.erf")
floor = _float_unary("floor", te.floor, "np.floor")
ceil = _float_unary("ceil", te.ceil, "np.ceil")
round = _float_unary("round", te.round, "np.round")
trunc = _float_unary("trunc", te.trunc, "np.trunc")


def abs(x: Tensor) -> Tensor:
    """Elementwise absolute value of an integer or float tensor.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.abs(tvm.placeholder((3,), "int32", name="A")).op.body
        [abs(A[i0])]
    """
    return _elemwise(x, te.abs, "abs")


def negative(x: Tensor) -> Tensor:
    """Elementwise ``-x`` of an integer or float tensor.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.negative(tvm.placeholder((3,), name="A")).op.body
        [(A[i0] * -1.0)]
    """
    return _elemwise(x, lambda v: -v, "negative")


def identity(x: Tensor) -> Tensor:
    """A copy of ``x``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.identity(tvm.placeholder((3,), name="A")).op.body
        [A[i0]]
    """
    return _elemwise(x, lambda v: v, "identity")


def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of each element (NaN stays NaN), in ``x``'s dtype.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.sign(tvm.placeholder((3,), "int8", name="A")).dtype
        'int8'
    """

    def fn(v: te.Expr) -> te.Expr:
        one, zero = te.const(1, v.dtype), te.const(0, v.dtype)
        # v * 0 keeps NaN; + 0 makes -0.0 the +0.0 NumPy and PyTorch give
        rest = v * zero + zero if is_float(v.dtype) else zero
        return te.select(v > zero, one, te.select(v < zero, -one, rest))

    return _elemwise(x, fn, "sign")


def isnan(x: Tensor) -> Tensor:
    """A bool tensor, true where ``x`` is NaN.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.isnan(tvm.placeholder((3,), name="A")).dtype
        'bool'
    """
    return _float_unary("isnan", te.isnan, "np.isnan")(x)


def isinf(x: Tensor) -> Tensor:
    """A bool tensor, true where ``x`` is +inf or -inf.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.isinf(tvm.placeholder((3,), name="A")).dtype
        'bool'
    """
    return _float_unary("isinf", lambda v: te.abs(v) == float("inf"), "np.isinf")(x)


def isfinite(x: Tensor) -> Tensor:
    """A bool tensor, true where ``x`` is neither infinite nor NaN.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.isfinite(tvm.placeholder((3,), name="A")).dtype
        'bool'
    """
    return _float_unary("isfinite", lambda v: te.abs(v) < float("inf"), "np.isfinite")(x)


def logical_not(x: Tensor) -> Tensor:
    """Elementwise logical not of a bool tensor.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.logical_not(tvm.placeholder((3,), "bool", name="A")).dtype
        'bool'
    """
    check_tensor(x, "the input of logical_not")
    if x.dtype != "bool":
        raise TVMTypeError(f"logical_not needs a bool tensor, found {x.dtype} tensor {x.name!r}")
    return _elemwise(x, lambda v: ~v, "logical_not")


def bitwise_not(x: Tensor) -> Tensor:
    """Elementwise bitwise complement of an integer tensor (NumPy's ``np.invert``); logical not
    of a bool tensor.

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> A = tvm.placeholder((3,), "uint8", name="A")
        >>> B = topi.bitwise_not(A)
        >>> f = tvm.build(tvm.create_schedule(B.op), [A, B])
        >>> b = np.empty(3, "uint8"); f(np.array([0, 1, 255], "uint8"), b); b.tolist()
        [255, 254, 0]
    """
    check_tensor(x, "the input of bitwise_not")
    if is_float(x.dtype):
        raise TVMTypeError(
            f"bitwise_not (~) needs an integer or bool tensor, found {x.dtype} tensor {x.name!r}"
        )
    return _elemwise(x, te.bitwise_not, "bitwise_not")


def cast(x: Tensor, dtype: str) -> Tensor:
    """``x`` converted to ``dtype`` elementwise (NumPy's ``astype``).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.cast(tvm.placeholder((3,), name="A"), "int32").op.body
        [int32(A[i0])]
    """
    check_tensor(x, "the input of cast")
    return _elemwise(x, lambda v: v.astype(dtype), "cast")


def clip(x: Tensor, a_min: float | int | None, a_max: float | int | None) -> Tensor:
    """Each element clamped into ``[a_min, a_max]``; ``None`` leaves that side open (as
    ``np.clip`` and ``torch.clamp``; not both).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.clip(tvm.placeholder((3,), "int32", name="A"), 0, 6).op.body
        [select((0 > A[i0]), 0, select((6 < A[i0]), 6, A[i0]))]

    A NaN stays a NaN. The gradient is ``torch.clamp``'s (and TVM's): 1 on the closed interval,
    the bounds included, 0 outside and at a NaN.
    """
    check_tensor(x, "the input of clip")
    if a_min is None and a_max is None:
        raise TVMValueError("clip needs a_min or a_max (both are None)")
    for name, bound in (("a_min", a_min), ("a_max", a_max)):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, numbers.Real)):
            raise TVMTypeError(f"clip: {name} must be a number or None, found {bound!r}")
    if a_min is not None and a_max is not None and a_min > a_max:
        raise TVMValueError(f"clip needs a_min <= a_max, found a_min={a_min}, a_max={a_max}")
    if not is_float(x.dtype) and x.dtype != "bool":
        # As NumPy's and PyTorch's clip: a bound the dtype cannot hold is an OverflowError,
        # here one that says which bound and the dtype's range.
        info = np.iinfo(x.dtype)
        for name, bound in (("a_min", a_min), ("a_max", a_max)):
            if bound is not None and not info.min <= bound <= info.max:
                raise OverflowError(
                    f"clip: {name}={bound} is out of range for {x.dtype} [{info.min}, {info.max}]"
                )
    nan = any(isinstance(b, float) and math.isnan(b) for b in (a_min, a_max))
    if nan:  # as NumPy and PyTorch: a NaN bound makes every element NaN
        value = te.const(float("nan"), x.dtype)
        return _elemwise(x, lambda v: value, "clip")
    lo = None if a_min is None else te.const(a_min, x.dtype)
    hi = None if a_max is None else te.const(a_max, x.dtype)

    def clamp(v: te.Expr) -> te.Expr:
        inside = v
        if is_float(x.dtype):
            # a NaN stays NaN, through v * 0, whose derivative is 0: torch.clamp's gradient
            # there (passed through v, it was 1)
            inside = te.select(te.isnan(v), v * te.const(0, x.dtype), v)
        below = inside if hi is None else te.select(v > hi, hi, inside)
        return below if lo is None else te.select(v < lo, lo, below)

    return _elemwise(x, clamp, "clip")


def full(shape: list[int] | tuple[int, ...], dtype: str, fill_value: float | int) -> Tensor:
    """A tensor of ``shape`` with every element ``fill_value``.

    Example:
        >>> from pytvmbridge import topi
        >>> topi.full((2, 3), "float32", 1.5).op.body
        [1.5]
    """
    value = te.const(fill_value, dtype)
    return te.compute(shape, lambda *i: value, name="T_full", tag=tag.ELEMWISE)


def full_like(x: Tensor, fill_value: float | int) -> Tensor:
    """A tensor like ``x`` (shape and dtype) filled with ``fill_value``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.full_like(tvm.placeholder((2,), "int8"), 3).dtype
        'int8'
    """
    check_tensor(x, "the input of full_like")
    return full(x.shape, x.dtype, fill_value)


def fast_exp(x: Tensor) -> Tensor:
    """TVM's fast exponential; here the same as :func:`exp` (already vectorised through libmvec).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.fast_exp(tvm.placeholder((3,), name="A")).op.body
        [exp(A[i0])]
    """
    return exp(x)


def fast_tanh(x: Tensor) -> Tensor:
    """TVM's fast tanh; here the same as :func:`tanh`.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.fast_tanh(tvm.placeholder((3,), name="A")).op.body
        [tanh(A[i0])]
    """
    return tanh(x)


def fast_erf(x: Tensor) -> Tensor:
    """TVM's fast erf; here the same as :func:`erf`.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.fast_erf(tvm.placeholder((3,), name="A")).op.body
        [erf(A[i0])]
    """
    return erf(x)


def elemwise_sum(xs: list[Tensor]) -> Tensor:
    """The elementwise sum of several tensors of one shape and dtype, in one stage (no
    broadcasting: differing shapes are a ValueError, differing dtypes a TypeError).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> A, B = tvm.placeholder((2,), name="A"), tvm.placeholder((2,), name="B")
        >>> topi.elemwise_sum([A, B, A]).op.body
        [((A[i0] + B[i0]) + A[i0])]
    """
    xs = list(xs)
    if not xs:
        raise TVMValueError("elemwise_sum needs at least one tensor")
    for k, t in enumerate(xs):
        check_tensor(t, f"tensor {k} of elemwise_sum")
        if t.dtype != xs[0].dtype:
            raise TVMTypeError(
                f"elemwise_sum: tensor {k} is {t.dtype}{tuple(t.shape)}, tensor 0 "
                f"{xs[0].dtype}{tuple(xs[0].shape)}"
            )
        # Every tensor is read at the output's index: no broadcasting (TVM's rule), so a
        # smaller one would be read past its end.
        if t.ndim != xs[0].ndim or not all(map(same_dim, t.shape, xs[0].shape)):
            raise TVMValueError(
                f"elemwise_sum: tensor {k} has shape {tuple(t.shape)}, tensor 0 "
                f"{tuple(xs[0].shape)}; all must have the same shape"
            )

    def fcompute(*i: te.Expr) -> te.Expr:
        out = xs[0][i]
        for t in xs[1:]:
            out = out + t[i]
        return out

    return te.compute(xs[0].shape, fcompute, name="T_elemwise_sum", tag=tag.ELEMWISE)
