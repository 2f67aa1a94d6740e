"""TVM's ``tvm.contrib.mxnet``: wrap a built module as a function of MXNet NDArrays.

MXNet 1.x exchanges arrays through ``to_dlpack_for_read``/``to_dlpack_for_write``; no copy.

Example:
    >>> import mxnet, pytvmbridge as tvm  # doctest: +SKIP
    >>> from pytvmbridge.contrib.mxnet import to_mxnet_func  # doctest: +SKIP
    >>> X = tvm.placeholder((2,), name="X")  # doctest: +SKIP
    >>> Y = tvm.compute((2,), lambda i: X[i] * 2.0, name="Y")  # doctest: +SKIP
    >>> f = to_mxnet_func(tvm.build(tvm.create_schedule(Y.op), [X, Y]))  # doctest: +SKIP
    >>> y = mxnet.nd.empty((2,)); f(mxnet.nd.ones((2,)), y); y.asnumpy()  # doctest: +SKIP
    array([2., 2.], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..bridges import to_mxnet

__all__ = ["to_mxnet_func"]


def to_mxnet_func(func: Any, const_loc: list[int] | None = None) -> Callable[..., Any]:
    """A function of MXNet NDArrays running ``func`` (a built Module) without copies.

    ``const_loc`` (TVM's list of the positions of read-only arguments) is accepted for
    compatibility; which arguments are inputs is known from the module itself.

    Example:
        >>> import mxnet as mx, pytvmbridge as tvm  # doctest: +SKIP
        >>> X = tvm.placeholder((2,), name="X")  # doctest: +SKIP
        >>> Y = tvm.compute((2,), lambda i: X[i] + 1.0, name="Y")  # doctest: +SKIP
        >>> f = to_mxnet_func(tvm.build(tvm.create_schedule(Y.op), [X, Y]))  # doctest: +SKIP
        >>> f(mx.nd.zeros((2,))).asnumpy()  # doctest: +SKIP
        array([1., 1.], dtype=float32)
    """
    return to_mxnet(func)
