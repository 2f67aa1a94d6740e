"""Helpers shared by the operators: constant shapes, axis normalisation, argument checks.

Example:
    >>> import pytvmbridge.te as te
    >>> from pytvmbridge.topi import utils
    >>> utils.get_const_tuple(te.placeholder((2, 3)).shape)
    (2, 3)
    >>> utils.normalize_axes(-1, 3, "sum")
    [2]
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from .. import te
from ..error import TVMTypeError, TVMValueError

Tensor = te.Tensor
Expr = te.Expr
# A dimension: a Python int or an integer expression (a var, or arithmetic on vars).
Dim = int | te.Expr


def as_int(value: Any) -> int | None:
    """``value`` as a Python int when it is an integer number (a Python or NumPy integer, or
    anything else ``operator.index`` takes), else None. Bools are not integers here (``True``
    as a size or an axis is a mistake), nor are expressions (see :func:`const_int`).

    Example:
        >>> import numpy as np
        >>> from pytvmbridge.topi.utils import as_int
        >>> as_int(np.int64(3)), as_int(True), as_int(1.0)
        (3, None, None)
    """
    if isinstance(value, (bool, te.Expr)):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def const_int(value: Any) -> int | None:
    """The value of a constant integer (a Python or NumPy integer, or an IntImm), else None.

    Example:
        >>> import pytvmbridge.te as te
        >>> from pytvmbridge.topi.utils import const_int
        >>> const_int(te.const(4)), const_int(te.var("n"))
        (4, None)
    """
    if isinstance(value, te.IntImm):
        return int(value)
    return as_int(value)


def check_int(value: Any, what: str) -> int:
    """``value`` as a Python int (:func:`const_int`: NumPy integers and constant expressions
    too); TypeError naming ``what`` otherwise.

    Example:
        >>> import numpy as np
        >>> from pytvmbridge.topi.utils import check_int
        >>> check_int(np.int32(2), "repeats")
        2
    """
    out = const_int(value)
    if out is None:
        raise TVMTypeError(f"{what} must be an int, found {value!r} ({type(value).__name__})")
    return out


def get_const_int(value: Any, what: str = "value") -> int:
    """The value of a constant integer; ValueError naming ``what`` if it is symbolic.

    Example:
        >>> from pytvmbridge.topi.utils import get_const_int
        >>> get_const_int(3)
        3
    """
    c = const_int(value)
    if c is None:
        raise TVMValueError(f"{what} must be a constant integer, found {value!r}")
    return c


def get_const_tuple(shape: Sequence[Any], what: str = "shape") -> tuple[int, ...]:
    """A shape of constant integers as a tuple of ints; ValueError if an entry is symbolic.

    Example:
        >>> from pytvmbridge.topi.utils import get_const_tuple
        >>> get_const_tuple([1, 2])
        (1, 2)
    """
    return tuple(get_const_int(s, f"every dimension of {what}") for s in shape)


def same_dim(a: Any, b: Any) -> bool:
    """True when two dimensions are provably equal: equal constants, or expressions whose
    difference simplifies to zero (``n + 1`` and ``1 + n``, as PyTorch's traced sizes and a
    concatenation's computed one spell a KV cache's length).

    Example:
        >>> import pytvmbridge.te as te
        >>> from pytvmbridge.topi.utils import same_dim
        >>> n = te.var("n")
        >>> same_dim(n, te.placeholder((n,)).shape[0]), same_dim(n, te.var("n")), same_dim(2, 2)
        (True, False, True)
        >>> same_dim(n + 1, 1 + n), same_dim(n + 1, n)
        (True, False)
    """
    ca, cb = const_int(a), const_int(b)
    if ca is not None or cb is not None:
        return ca == cb
    if hash(a) == hash(b) or (
        not isinstance(a, te.Var) and not isinstance(b, te.Var) and str(a) == str(b)
    ):
        return True
    if getattr(a, "dtype", None) != getattr(b, "dtype", None):
        return False
    from .. import _core

    return const_int(_core.simplify(a - b)) == 0


def check_tensor(x: Any, what: str) -> Tensor:
    """``x`` if it is a Tensor, else TypeError naming the argument.

    Example:
        >>> import pytvmbridge.te as te
        >>> from pytvmbridge.topi.utils import check_tensor
        >>> check_tensor(te.placeholder((2,), name="A"), "data").name
        'A'
    """
    if not isinstance(x, te.Tensor):
        raise TVMTypeError(f"{what} must be a Tensor, found {type(x).__name__}")
    return x


def check_ndim(x: Tensor, ndim: int, what: str, layout: str = "") -> None:
    """ValueError unless ``x`` has ``ndim`` dimensions.

    Example:
        >>> import pytvmbridge.te as te
        >>> from pytvmbridge.topi.utils import check_ndim
        >>> check_ndim(te.placeholder((1, 2, 3, 4)), 4, "data", "NCHW")
    """
    if x.ndim != ndim:
        extra = f" ({layout})" if layout else ""
        raise TVMValueError(f"{what} must have {ndim} dimensions{extra}, found shape {x.shape}")


def int_list(
    value: Any, what: str, expected: str = "a sequence of ints", allow_none: bool = False
) -> list[Any]:
    """The entries of a sequence (a list, a tuple, a NumPy array...) as Python ints
    (:func:`const_int`), None entries kept with ``allow_none``; TypeError naming ``what`` when
    ``value`` is not a sequence or an entry is not an integer.

    Example:
        >>> import numpy as np
        >>> from pytvmbridge.topi.utils import int_list
        >>> int_list(np.array([2, 1]), "reps"), int_list([1, None], "end", allow_none=True)
        ([2, 1], [1, None])
    """
    if isinstance(value, (str, bytes, te.Expr, te.Tensor)):
        items = None
    else:
        try:
            items = list(value)
        except TypeError:
            items = None
    if items is None:
        raise TVMTypeError(f"{what} must be {expected}, found {value!r} ({type(value).__name__})")
    out: list[Any] = []
    for v in items:
        if v is None and allow_none:
            out.append(None)
            continue
        c = const_int(v)
        if c is None:
            raise TVMTypeError(
                f"{what} must be {expected}, found {value!r} (entry {v!r} is {type(v).__name__})"
            )
        out.append(c)
    return out


def normalize_axes(axis: int | Sequence[int] | None, ndim: int, what: str) -> list[int]:
    """Axes as sorted, non-negative, distinct ints; ``None`` means all of them. Python and
    NumPy integers are taken; TypeError for anything else (a float, a bool).

    Example:
        >>> from pytvmbridge.topi.utils import normalize_axes
        >>> normalize_axes((-1, 0), 3, "sum"), normalize_axes(None, 2, "sum")
        ([0, 2], [0, 1])
    """
    if axis is None:
        return list(range(ndim))
    single = const_int(axis)
    expected = "an int or a sequence of ints"
    items = [single] if single is not None else int_list(axis, f"axis of {what}", expected)
    out = []
    for a in items:
        if not -ndim <= a < ndim:
            raise TVMValueError(f"axis {a} of {what} is out of range for {ndim} dimension(s)")
        a = a % ndim if ndim else a
        if a in out:
            raise TVMValueError(f"axis {a} of {what} is repeated")
        out.append(a)
    return sorted(out)


def normalize_axis(axis: int, ndim: int, what: str) -> int:
    """One axis as a non-negative int (a Python or NumPy integer; TypeError for a sequence).

    Example:
        >>> from pytvmbridge.topi.utils import normalize_axis
        >>> normalize_axis(-1, 4, "softmax")
        3
    """
    return normalize_axes(check_int(axis, f"axis of {what}"), ndim, what)[0]


def pair(value: int | Sequence[int], what: str) -> tuple[int, int]:
    """An int or a pair of ints as a pair (stride, dilation, kernel size): TypeError for
    anything but integers, ValueError for a sequence of another length.

    Example:
        >>> from pytvmbridge.topi.utils import pair
        >>> pair(2, "stride"), pair((1, 3), "stride")
        ((2, 2), (1, 3))
    """
    single = const_int(value)
    expected = "an int or a pair of ints"
    items = [single, single] if single is not None else int_list(value, what, expected)
    if len(items) != 2:
        raise TVMValueError(f"{what} must be {expected}, found {value!r}")
    return items[0], items[1]


def positive_pair(value: int | Sequence[int], what: str) -> tuple[int, int]:
    """:func:`pair`, checking that both entries are >= 1.

    Example:
        >>> from pytvmbridge.topi.utils import positive_pair
        >>> positive_pair(1, "dilation")
        (1, 1)
    """
    p = pair(value, what)
    if p[0] < 1 or p[1] < 1:
        raise TVMValueError(f"{what} must be >= 1, found {value!r}")
    return p


def cast_to(x: Expr, dtype: str) -> Expr:
    """``x`` as ``dtype``; no cast when it already has it.

    Example:
        >>> import pytvmbridge.te as te
        >>> from pytvmbridge.topi.utils import cast_to
        >>> x = te.var("x", "float32")
        >>> cast_to(x, "float32"), cast_to(x, "float64").dtype
        (x, 'float64')
    """
    return x if x.dtype == dtype else x.astype(dtype)


def is_float(dtype: str) -> bool:
    """True for float16/bfloat16/float32/float64.

    Example:
        >>> from pytvmbridge.topi.utils import is_float
        >>> is_float("float16"), is_float("int8")
        (True, False)
    """
    return dtype.startswith(("float", "bfloat"))


def accumulate_dtype(dtype: str) -> str:
    """The dtype to accumulate sums (and to compute statistics) of ``dtype`` in: float32 for
    float16 and bfloat16, whose sums overflow (float16's largest value is 65504: the sum of 768
    values of 100) or lose the small terms long before the result does (PyTorch's CPU kernels
    accumulate them in float too), else ``dtype`` itself.

    Example:
        >>> from pytvmbridge.topi.utils import accumulate_dtype
        >>> accumulate_dtype("float16"), accumulate_dtype("float64")
        ('float32', 'float64')
    """
    return "float32" if dtype in ("float16", "bfloat16") else dtype


def with_nonempty_reads(
    make: Callable[[dict[str, Any]], Tensor], tensor: Tensor, dims: Sequence[int]
) -> Tensor:
    """``make(attrs)`` (a compute) with ``attrs["nonempty_reads"]`` naming dimensions ``dims``
    of ``tensor``, one of the compute's inputs: each must have an element wherever the compute
    has one (checked per call where it is a size variable: an argmax over it, an element taken
    from it). The attribute names inputs by position in ``op.input_tensors`` (their order of
    first use in the body), found here from a first try.

    Example:
        >>> import pytvmbridge as tvm
        >>> n = tvm.var("n")
        >>> A = tvm.placeholder((n,), name="A")
        >>> B = with_nonempty_reads(
        ...     lambda attrs: tvm.compute((3,), lambda i: A[0] * 2.0, name="B", attrs=attrs),
        ...     A, [0])
        >>> B.op.attrs["nonempty_reads"]
        (0, 0)
    """

    def attrs(k: int) -> dict[str, Any]:
        return {"nonempty_reads": [v for d in dims for v in (k, d)]}

    out = make(attrs(0))
    inputs = list(out.op.input_tensors)
    k = next((i for i, t in enumerate(inputs) if t == tensor), None)
    if k is None:
        raise TVMValueError(f"with_nonempty_reads: the compute does not read {tensor.name!r}")
    return out if k == 0 else make(attrs(k))


def require_float(x: Tensor, what: str) -> None:
    """TypeError unless ``x`` has a float dtype (naming the operator).

    Example:
        >>> import pytvmbridge.te as te
        >>> from pytvmbridge.topi.utils import require_float
        >>> require_float(te.placeholder((2,)), "softmax")
    """
    if not is_float(x.dtype):
        raise TVMTypeError(
            f"{what} needs a float tensor, found {x.dtype} tensor {x.name!r}; "
            "cast it first with topi.cast"
        )


def prod(dims: Sequence[Any]) -> Any:
    """The product of dimensions (a constant when they all are).

    Example:
        >>> from pytvmbridge.topi.utils import prod
        >>> prod([2, 3, 4])
        24
    """
    out: Any = 1
    for d in dims:
        c, co = const_int(d), const_int(out)
        out = c * co if c is not None and co is not None else out * d
    return out
