"""Differentiable ``to_pytorch``/``to_jax`` functions: a Module built by ``tvm.build`` keeps its
tensor expressions (``module._te_args``), and its PyTorch and JAX bridges are
:class:`DifferentiableBridge` callers. Their inputs-only calls with a tensor that requires grad
(or a JAX tracer) run through the same custom op / ``jax.custom_vjp`` as ``@kernel``, with the
gradient derived by ``te.gradient`` from those expressions. The all-arrays form writes outputs in
place and stays outside autograd (as ``out=`` does for ``@kernel``).

Example:
    >>> import torch, pytvmbridge as tvm
    >>> from pytvmbridge.bridges import to_pytorch
    >>> n = tvm.var("n")
    >>> X = tvm.placeholder((n,), name="X", dtype="float64")
    >>> Y = tvm.compute((n,), lambda i: X[i] * X[i], name="Y")
    >>> f = to_pytorch(tvm.build(tvm.create_schedule(Y.op), [X, Y], name="square"))
    >>> x = torch.tensor([1.0, 3.0], dtype=torch.float64, requires_grad=True)
    >>> f(x).sum().backward(); x.grad.tolist()
    [2.0, 6.0]
"""

from __future__ import annotations

import sys
from typing import Any

from .. import _core
from . import hooks

# Frameworks whose bridges take part in autograd.
DIFFERENTIABLE_FRAMEWORKS = ("torch", "jax")


def remember(module: Any, args: Any) -> Any:
    """Keeps ``args`` (the placeholders and computed tensors ``module`` was built from) on it."""
    try:
        module._te_args = tuple(args)
    except AttributeError:  # a module type without attributes: its bridges stay plain
        pass
    return module


class DifferentiableBridge(_core.Caller):
    """A Module's bridge whose inputs-only calls are differentiable (see the module doc)."""

    def setup(self, module: Any, framework: Any) -> None:
        """Binds the bridge (``_bridge``) and the expressions the gradient is derived from."""
        self._bridge(module, framework)
        args = getattr(module, "_te_args", None)
        flags = list(module.is_output)
        self.name = module.entry_name
        self.inputs = (
            None if args is None else [a for a, o in zip(args, flags, strict=True) if not o]
        )
        self.outputs = None if args is None else [a for a, o in zip(args, flags, strict=True) if o]
        self._n_inputs = len(flags) - sum(bool(o) for o in flags)

    # Calls stay in C++ (the vectorcall; _core.Caller keeps it for a type whose __call__ carries
    # `_same_as_vectorcall`). torch.compile's tracer reads __call__ to trace a call: there an
    # inputs-only call is the bridge's custom op, one node of the graph (fullgraph=True holds).
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the bridge on ``args`` (exactly as the C++ call does; see the class)."""
        if not kwargs and len(args) == self._n_inputs and _torch_compiling():
            from .torch_autograd import call

            return call(self, args, {})
        return _core.Caller.__call__(self, *args, **kwargs)

    __call__._same_as_vectorcall = True  # type: ignore[attr-defined]

    def _autodiff_call(self, args: tuple[Any, ...], out: Any) -> Any:
        if len(args) != self._n_inputs:  # the all-arrays (in place) form: not differentiable
            return NotImplemented
        route = hooks.route(args)
        if route is None:
            return NotImplemented
        return route.call(self, args, {})


def _torch_compiling() -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


def is_bridge(owner: Any) -> bool:
    """True for a :class:`DifferentiableBridge` (run with ``_plain_call``, graph from its
    expressions)."""
    return isinstance(owner, DifferentiableBridge)
