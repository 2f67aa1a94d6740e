"""The one check ``Kernel.__call__`` makes before its C++ call path: does this call need
autograd (a PyTorch tensor that requires grad, or one traced by torch.compile/export) or a JAX
trace (a tracer from jax.grad/jit)? Then the kernel runs through :mod:`.torch_autograd` or
:mod:`.jax_vjp` instead.

Example:
    >>> import numpy as np
    >>> from pytvmbridge.autodiff import hooks
    >>> hooks.route((np.zeros(3),)) is None
    True
"""

from __future__ import annotations

import sys
from typing import Any

from . import jax_vjp, torch_autograd

_modules = sys.modules


def route(args: tuple[Any, ...]) -> Any:
    """The module that must run this call, or None for the ordinary call path."""
    if "torch" in _modules and torch_autograd.wants_grad(args):
        return torch_autograd
    if "jax.core" in _modules and jax_vjp.is_traced(args):
        return jax_vjp
    return None
