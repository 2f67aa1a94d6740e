"""``softmax`` and ``log_softmax`` along one axis, numerically stable.

Both subtract the maximum along the axis before exponentiating, so large inputs do not
overflow: a max reduction, a sum reduction of ``exp(x - max)``, then an elementwise output
stage tagged ``"softmax_output"`` / ``"log_softmax_output"``.

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> X = tvm.placeholder((tvm.var("n"), 3), name="X")
    >>> Y = topi.nn.softmax(X)
    >>> Y.op.tag
    'softmax_output'
    >>> f = tvm.build(tvm.create_schedule(Y.op), [X, Y])
    >>> y = np.empty((1, 3), "float32"); f(np.array([[1000.0, 1000.0, 1000.0]], "float32"), y)
    >>> np.allclose(y, 1 / 3)
    True
"""

from __future__ import annotations

from typing import Any

from ... import te
from .. import tag
from ..utils import Tensor, accumulate_dtype, cast_to, check_tensor, normalize_axis, require_float


def _stats(x: Tensor, axis: int, what: str) -> tuple[int, Tensor, Tensor]:
    check_tensor(x, f"x of {what}")
    require_float(x, what)
    axis = normalize_axis(axis, x.ndim, what)
    shape = [x.shape[d] for d in range(x.ndim) if d != axis]

    def full(i: tuple, k: Any) -> list:
        return [*i[:axis], k, *i[axis:]]

    k1 = te.reduce_axis((0, x.shape[axis]), name="k")
    # A NaN in a row makes exp(x - max), the sum and so every output of the row NaN whatever
    # the maximum is: the automatic scheduler may take a maximum that does not propagate NaN
    # (one vmaxps per vector instead of two or three instructions; rule_reduction.cc's
    # relax_max_nan). The graph (and its gradient) keep te.max.
    max_elem = te.compute(
        shape,
        lambda *i: te.max(x[full(i, k1)], axis=k1),
        name="T_softmax_maxelem",
        tag=tag.COMM_REDUCE,
        attrs={"nan_insensitive": 1},
    )
    k2 = te.reduce_axis((0, x.shape[axis]), name="k")
    expsum = te.compute(
        shape,
        lambda *i: te.sum(_exp_shifted(x, full(i, k2), max_elem[i]), axis=k2),
        name="T_softmax_expsum",
        tag=tag.COMM_REDUCE,
    )
    return axis, max_elem, expsum


def _exp_shifted(x: Tensor, index: Any, max_value: te.Expr) -> te.Expr:
    """``exp(x[index] - max)``, in float32 for float16/bfloat16 data: the row's sum is taken
    in float32 and the output rounded back once (PyTorch's CPU softmax does the same; a
    float16 sum of a long row drops its small terms)."""
    acc = accumulate_dtype(x.dtype)
    return te.exp(cast_to(x[index], acc) - cast_to(max_value, acc))


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``axis`` (``torch.softmax``).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.softmax(tvm.placeholder((2, 5, 3)), axis=1).shape
        (2, 5, 3)
    """
    axis, max_elem, expsum = _stats(x, axis, "softmax")

    # A product with the reciprocal, computed once per row under the automatic schedule (a
    # division per element costs several multiplications; PyTorch's CPU softmax scales by
    # 1 / sum too). The automatic scheduler computes the exponentials once, into a row buffer
    # both the sum and this stage read (rule_row_attach.cc).
    def fcompute(*i: Any) -> te.Expr:
        rest = (*i[:axis], *i[axis + 1 :])
        scale = te.const(1, expsum.dtype) / expsum[rest]
        return cast_to(_exp_shifted(x, i, max_elem[rest]) * scale, x.dtype)

    return te.compute(
        x.shape, fcompute, name="T_softmax_norm", tag=tag.SOFTMAX, attrs={"axis": axis}
    )


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    """``x - log(sum(exp(x)))`` along ``axis`` (``torch.log_softmax``).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.log_softmax(tvm.placeholder((4, 3))).op.tag
        'log_softmax_output'
    """
    axis, max_elem, expsum = _stats(x, axis, "log_softmax")

    def fcompute(*i: Any) -> te.Expr:
        rest = (*i[:axis], *i[axis + 1 :])
        acc = expsum.dtype
        shifted = cast_to(x[i], acc) - cast_to(max_elem[rest], acc)
        return cast_to(shifted - te.log(expsum[rest]), x.dtype)

    return te.compute(
        x.shape, fcompute, name="T_log_softmax", tag=tag.LOG_SOFTMAX, attrs={"axis": axis}
    )
