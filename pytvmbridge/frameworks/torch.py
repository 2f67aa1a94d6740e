"""PyTorch: tensors go to kernels as they are (the C++ call path views them, and allocates
outputs, through ``torch.Tensor.__dlpack_c_exchange_api__``).

A tensor that requires grad may be an input (it is read, as ``x.detach()`` would be), and an
output only under ``torch.no_grad()`` (an optimizer step, as PyTorch allows in-place writes
there): in grad mode autograd would not know about the write. Every tensor written in place has
its version counter bumped, as by PyTorch's in-place operators.

Example:
    >>> import torch
    >>> from pytvmbridge.frameworks import get
    >>> fw = get("torch")
    >>> t = fw.empty((2, 3), "float32")
    >>> fw.dtype(t), fw.shape(t)
    ('float32', (2, 3))
"""

from __future__ import annotations

from typing import Any

import torch

from ..error import TVMValueError
from ._base import Framework

_NAMES: dict[Any, str] = {}
_DTYPES: dict[str, Any] = {}


class TorchFramework(Framework):
    """torch.Tensor (and subclasses such as nn.Parameter)."""

    name = "torch"

    def view(self, x: Any) -> Any:
        from .. import _core

        return _core.from_dlpack(x.detach() if x.requires_grad else x)

    def dtype(self, x: Any) -> str:
        dt = x.dtype
        name = _NAMES.get(dt)
        if name is None:
            name = _NAMES[dt] = str(dt).removeprefix("torch.")
        return name

    def shape(self, x: Any) -> tuple[int, ...]:
        return tuple(x.shape)

    def as_input(self, x: Any, what: str) -> Any:
        return x.detach() if x.requires_grad else x

    def as_output(self, x: Any, what: str) -> Any:
        if x.requires_grad and torch.is_grad_enabled():  # no_grad: an optimizer step's write
            raise TVMValueError(
                f"{what} is an output but the tensor requires grad: autograd would not see the "
                "kernel's write; pass a tensor with requires_grad=False (e.g. "
                "torch.empty_like(x)), or write under torch.no_grad() (an optimizer step)"
            )
        return x

    def empty(self, shape: tuple[int, ...], dtype: str) -> Any:
        dt = _DTYPES.get(dtype)
        if dt is None:
            dt = _DTYPES[dtype] = getattr(torch, dtype)
        return torch.empty(size=shape, dtype=dt)  # the keyword form parses faster (~1 µs)


FRAMEWORK = TorchFramework()
