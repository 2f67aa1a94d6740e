"""Layout and indexing operators: matmul (TVM keeps it here), reshape, transpose, concatenate,
split, strided_slice, broadcast_to, take, gather, layout_transform...

All but ``matmul`` are injective (``"injective"`` tag): each output element copies one input
element, so automatic schedules inline them into their consumers.

Example:
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge import topi
    >>> A, B = tvm.placeholder((4, 3), name="A"), tvm.placeholder((4, 5), name="B")
    >>> topi.matmul(A, B, transp_a=True).shape
    (3, 5)
"""

from __future__ import annotations

from . import nn
from .utils import Tensor


def matmul(a: Tensor, b: Tensor, transp_a: bool = False, transp_b: bool = False) -> Tensor:
    """``op(a) @ op(b)`` of two matrices (TVM's ``topi.matmul``), where ``op`` transposes when
    ``transp_a``/``transp_b`` is set. Tagged ``"matmul"``.

    Example:
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import topi
        >>> C = topi.matmul(tvm.placeholder((2, 3)), tvm.placeholder((3, 4)))
        >>> C.shape, C.op.tag
        ((2, 4), 'matmul')
    """
    return nn.matmul(a, b, transpose_a=transp_a, transpose_b=transp_b)
