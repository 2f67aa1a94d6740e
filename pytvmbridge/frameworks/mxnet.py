"""MXNet 1.x: no ``__dlpack__``; arrays are exchanged with the old functions
``to_dlpack_for_read`` (inputs: waits for pending writes), ``to_dlpack_for_write`` (outputs:
waits for pending reads and writes) and ``mx.nd.from_dlpack``. Outputs are ``mx.nd.empty``.

Example:
    >>> import mxnet as mx  # doctest: +SKIP
    >>> from pytvmbridge.frameworks import get
    >>> get("mxnet").shape(mx.nd.zeros((2, 3)))  # doctest: +SKIP
    (2, 3)
"""

from __future__ import annotations

from typing import Any

import mxnet as mx
import numpy as np

from .. import _core
from ..error import TVMValueError
from ._base import Framework


class MXNetFramework(Framework):
    """mxnet.nd.NDArray (and mxnet.numpy.ndarray, its subclass)."""

    name = "mxnet"
    native = False

    def view(self, x: Any) -> Any:
        return _core.from_dlpack(x.to_dlpack_for_read())

    def dtype(self, x: Any) -> str:
        return np.dtype(x.dtype).name

    def shape(self, x: Any) -> tuple[int, ...]:
        return tuple(x.shape)

    def as_input(self, x: Any, what: str) -> Any:
        self._check_device(x, what)
        return _core.from_dlpack(x.to_dlpack_for_read())

    def as_output(self, x: Any, what: str) -> Any:
        self._check_device(x, what)
        return _core.from_dlpack(x.to_dlpack_for_write())

    def empty(self, shape: tuple[int, ...], dtype: str) -> Any:
        return mx.nd.empty(shape, dtype=dtype)

    def writable(self, buffer: Any) -> Any:
        return _core.from_dlpack(buffer.to_dlpack_for_write())

    @staticmethod
    def _check_device(x: Any, what: str) -> None:
        ctx = x.ctx
        if ctx.device_type not in ("cpu", "cpu_pinned", "cpu_shared"):
            raise TVMValueError(
                f"{what} is an MXNet array on {ctx}; pytvmbridge kernels run on the CPU: move it "
                "with x.as_in_context(mx.cpu())"
            )


FRAMEWORK = MXNetFramework()
