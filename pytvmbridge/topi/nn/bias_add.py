"""``bias_add``: a per-channel bias added along one axis (TVM's ``topi.nn.bias_add``).

Example:
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> X = tvm.placeholder((tvm.var("n"), 8, 4, 4)); b = tvm.placeholder((8,))
    >>> Y = topi.nn.bias_add(X, b)
    >>> Y.shape, Y.op.tag
    ((n, 8, 4, 4), 'broadcast')
"""

from __future__ import annotations

from typing import Any

from ... import te
from ...error import TVMTypeError, TVMValueError
from .. import tag
from ..utils import Tensor, check_ndim, check_tensor, normalize_axis, same_dim


def bias_add(data: Tensor, bias: Tensor, axis: int = 1) -> Tensor:
    """``data + bias`` with ``bias`` (one entry per ``data.shape[axis]``) broadcast along
    ``axis``: the bias of a convolution (axis 1, NCHW) or of a dense layer (axis -1).

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> topi.nn.bias_add(tvm.placeholder((2, 5)), tvm.placeholder((5,)), axis=-1).shape
        (2, 5)
    """
    check_tensor(data, "data of bias_add")
    check_tensor(bias, "bias of bias_add")
    check_ndim(bias, 1, "bias of bias_add")
    axis = normalize_axis(axis, data.ndim, "bias_add")
    if not same_dim(bias.shape[0], data.shape[axis]):
        raise TVMValueError(
            f"bias_add: bias has {bias.shape[0]} entries, data has {data.shape[axis]} on axis "
            f"{axis}"
        )
    if bias.dtype != data.dtype:
        raise TVMTypeError(f"bias_add: data is {data.dtype} and bias is {bias.dtype}; cast one")

    def fcompute(*i: Any) -> te.Expr:
        return data[i] + bias[i[axis]]

    return te.compute(data.shape, fcompute, name="T_bias_add", tag=tag.BROADCAST)
