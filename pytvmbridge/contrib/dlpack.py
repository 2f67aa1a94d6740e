"""TVM's ``tvm.contrib.dlpack``: wrap a built module as a function of PyTorch tensors.

Example:
    >>> import torch, pytvmbridge as tvm
    >>> from pytvmbridge.contrib.dlpack import to_pytorch_func
    >>> X = tvm.placeholder((2,), name="X")
    >>> Y = tvm.compute((2,), lambda i: X[i] * 10.0, name="Y")
    >>> f = to_pytorch_func(tvm.build(tvm.create_schedule(Y.op), [X, Y]))
    >>> y = torch.empty(2); f(torch.ones(2), y); y
    tensor([10., 10.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..bridges import to_pytorch

__all__ = ["convert_func", "to_pytorch_func"]


def to_pytorch_func(tvm_func: Any) -> Callable[..., Any]:
    """A function of PyTorch tensors running ``tvm_func`` (a built Module) without copies.

    All arrays: writes the outputs in place and returns None. Inputs only: returns the outputs.

    Example:
        >>> import torch, pytvmbridge as tvm
        >>> X = tvm.placeholder((3,), name="X")
        >>> Y = tvm.compute((3,), lambda i: X[i] + X[i], name="Y")
        >>> to_pytorch_func(tvm.build(tvm.create_schedule(Y.op), [X, Y]))(torch.ones(3))
        tensor([2., 2., 2.])
    """
    return to_pytorch(tvm_func)


def convert_func(
    tvm_func: Any, tensor_type: type, to_dlpack_func: Callable[[Any], Any]
) -> Callable[..., Any]:
    """TVM's generic form: arguments of ``tensor_type`` go through ``to_dlpack_func`` (which
    returns a DLPack capsule or anything with ``__dlpack__``), the rest are passed as they are.
    The function writes in place and returns what the module returns (None).

    Example:
        >>> import torch, pytvmbridge as tvm
        >>> X = tvm.placeholder((2,), name="X")
        >>> Y = tvm.compute((2,), lambda i: X[i] - 1.0, name="Y")
        >>> f = convert_func(tvm.build(tvm.create_schedule(Y.op), [X, Y]), torch.Tensor,
        ...                  torch.utils.dlpack.to_dlpack)
        >>> y = torch.empty(2); f(torch.zeros(2), y); y
        tensor([-1., -1.])
    """

    def converted(*args: Any) -> Any:
        return tvm_func(*(to_dlpack_func(a) if isinstance(a, tensor_type) else a for a in args))

    return converted
