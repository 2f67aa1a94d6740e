"""Framework bridges: a built Module as a function of PyTorch, NumPy, JAX or MXNet arrays.

``to_pytorch(module)`` (and ``to_numpy``, ``to_jax``, ``to_mxnet``) returns a function that is
called in one of two forms:

* with every array of the kernel's signature, inputs and outputs in order: the kernel writes
  the outputs in place and the function returns ``None`` (the form of TVM's ``to_pytorch``);
* with the inputs only: the outputs are allocated in the bridge's framework with the shapes
  bound from the inputs, written, and returned (one array, or a tuple for several outputs).

Nothing is copied: every array is viewed in place (PyTorch through its C exchange table, NumPy
through its C API, JAX through the buffer protocol, MXNet through ``to_dlpack_for_read``/
``to_dlpack_for_write``, anything else through DLPack). Arrays of another framework may be mixed
in; outputs that are allocated are always the bridge's framework's. JAX arrays are immutable:
``to_jax`` functions take the inputs only.

The whole call is one C++ object, ``_core.Caller`` (csrc/python/bind_bridges.cc): it reads the
arrays, binds the sizes, computes the outputs' shapes, allocates them through the framework's
fastest route (memory of ours handed to PyTorch through its DLPack exchange table, NumPy's C
API), runs the kernel with the GIL released and returns. ``@kernel`` (kernel.py), ``tc.define``
and ``module(*arrays)`` on a built Module call kernels through the same code.

Errors are raised before anything is written, naming the argument: wrong count, shape, dtype or
device, an output that requires grad (PyTorch) or is immutable (JAX) or read-only (NumPy).

Example:
    >>> import numpy as np, torch
    >>> import pytvmbridge as tvm
    >>> from pytvmbridge.bridges import to_pytorch
    >>> n = tvm.var("n")
    >>> A = tvm.placeholder((n,), name="A")
    >>> B = tvm.compute((n,), lambda i: A[i] * 2.0, name="B")
    >>> f = to_pytorch(tvm.build(tvm.create_schedule(B.op), [A, B], name="double"))
    >>> f(torch.arange(3.0))
    tensor([0., 2., 4.])
    >>> b = torch.empty(3); f(torch.ones(3), b); b
    tensor([2., 2., 2.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _core, frameworks
from .autodiff.bridge_grad import DIFFERENTIABLE_FRAMEWORKS, DifferentiableBridge
from .frameworks import Framework

__all__ = ["bridge", "to_jax", "to_mxnet", "to_numpy", "to_pytorch"]


class Bridge(_core.Caller):
    """A Module's bridge to a framework without autograd (NumPy, MXNet...): called in C++ like
    any Caller (the vectorcall), and, being a Python class, weak-referenceable (``jax.jit``,
    ``functools`` caches and weak-keyed registries hold it) with a readable ``repr``."""

    def __repr__(self) -> str:
        return f"<pytvmbridge bridge {self.__name__!r}>"


def bridge(module: Any, framework: str | Framework) -> Callable[..., Any]:
    """``module`` as a function of ``framework``'s arrays, in both forms (see the module doc).

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> A = tvm.placeholder((3,), name="A")
        >>> B = tvm.compute((3,), lambda i: A[i] * A[i], name="B")
        >>> f = bridge(tvm.build(tvm.create_schedule(B.op), [A, B]), "numpy")
        >>> f(np.arange(3, dtype="float32"))
        array([0., 1., 4.], dtype=float32)
    """
    fw = frameworks.get(framework) if isinstance(framework, str) else framework
    if fw.name in DIFFERENTIABLE_FRAMEWORKS:  # inputs-only calls join autograd (autodiff/)
        call = DifferentiableBridge()
        call.setup(module, fw)
    else:
        call = Bridge()
        call._bridge(module, fw)
    name = module.entry_name
    n_all = len(module.is_output)
    n_in = n_all - sum(bool(o) for o in module.is_output)
    call.__name__ = call.__qualname__ = f"{name}_{fw.name}"
    call.__doc__ = (
        f"Kernel '{name}' on {fw.name} arrays: pass all {n_all} arrays to write the outputs "
        f"in place (returns None), or the {n_in} input(s) to get the outputs back."
    )
    call.framework = fw.name
    return call


class Signature:
    """A compiled Module and its callers, one per framework that outputs are allocated in (for
    callers that choose the framework per call, as ``tc.define`` does).

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> A = tvm.placeholder((4,), name="A")
        >>> B = tvm.compute((4,), lambda i: A[i] + 1.0, name="B")
        >>> sig = Signature(tvm.build(tvm.create_schedule(B.op), [A, B]))
        >>> sig.outputs, sig.caller("numpy")(np.zeros(4, "float32"))
        ((1,), array([1., 1., 1., 1.], dtype=float32))
    """

    __slots__ = ("_callers", "module", "outputs")

    def __init__(self, module: Any) -> None:
        self.module = module
        self.outputs = tuple(i for i, o in enumerate(module.is_output) if o)
        self._callers: dict[str, Any] = {}

    def caller(self, framework: str | Framework) -> Any:
        """The module's bridge to ``framework`` (made once)."""
        fw = frameworks.get(framework) if isinstance(framework, str) else framework
        call = self._callers.get(fw.name)
        if call is None:
            call = self._callers[fw.name] = bridge(self.module, fw)
        return call


def call_inplace(sig: Signature, arrays: tuple[Any, ...]) -> None:
    """Run with every array given; outputs are written in place.

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> A = tvm.placeholder((2,), name="A")
        >>> B = tvm.compute((2,), lambda i: A[i] + 1.0, name="B")
        >>> sig = Signature(tvm.build(tvm.create_schedule(B.op), [A, B]))
        >>> b = np.zeros(2, "float32"); call_inplace(sig, (np.ones(2, "float32"), b)); b
        array([2., 2.], dtype=float32)
    """
    sig.caller("dlpack")(*arrays)


def call_allocating(sig: Signature, out_fw: str | Framework, inputs: tuple[Any, ...]) -> Any:
    """Run with the inputs only: allocate the outputs in ``out_fw``, run, return them (one
    array, or a tuple for several).

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> A = tvm.placeholder((2,), name="A")
        >>> B = tvm.compute((2,), lambda i: A[i] + 1.0, name="B")
        >>> sig = Signature(tvm.build(tvm.create_schedule(B.op), [A, B]))
        >>> call_allocating(sig, "numpy", (np.ones(2, "float32"),))
        array([2., 2.], dtype=float32)
    """
    return sig.caller(out_fw)(*inputs)


def to_pytorch(module: Any) -> Callable[..., Any]:
    """``module`` as a function of PyTorch tensors (TVM's ``to_pytorch``).

    All arrays: runs in place, returns None. Inputs only: returns new tensors.

    Example:
        >>> import torch, pytvmbridge as tvm
        >>> n = tvm.var("n")
        >>> X = tvm.placeholder((n,), name="X")
        >>> Y = tvm.compute((n,), lambda i: X[i] + 1.0, name="Y")
        >>> f = to_pytorch(tvm.build(tvm.create_schedule(Y.op), [X, Y]))
        >>> f(torch.zeros(2))
        tensor([1., 1.])
    """
    return bridge(module, "torch")


def to_numpy(module: Any) -> Callable[..., Any]:
    """``module`` as a function of NumPy arrays.

    Example:
        >>> import numpy as np, pytvmbridge as tvm
        >>> X = tvm.placeholder((2,), name="X", dtype="int32")
        >>> Y = tvm.compute((2,), lambda i: X[i] * 3, name="Y")
        >>> to_numpy(tvm.build(tvm.create_schedule(Y.op), [X, Y]))(np.array([1, 2], "int32"))
        array([3, 6], dtype=int32)
    """
    return bridge(module, "numpy")


def to_jax(module: Any) -> Callable[..., Any]:
    """``module`` as a function of JAX arrays: inputs only (JAX arrays are immutable).

    The outputs are allocated by pytvmbridge and handed to JAX without a copy.

    Example:
        >>> import jax.numpy as jnp, pytvmbridge as tvm
        >>> X = tvm.placeholder((3,), name="X")
        >>> Y = tvm.compute((3,), lambda i: X[i] - 1.0, name="Y")
        >>> to_jax(tvm.build(tvm.create_schedule(Y.op), [X, Y]))(jnp.ones(3)).tolist()
        [0.0, 0.0, 0.0]
    """
    return bridge(module, "jax")


def to_mxnet(module: Any) -> Callable[..., Any]:
    """``module`` as a function of MXNet NDArrays (TVM's ``to_mxnet_func``), MXNet 1.x included.

    Arrays are exchanged through ``to_dlpack_for_read``/``to_dlpack_for_write``.

    Example:
        >>> import mxnet as mx, pytvmbridge as tvm  # doctest: +SKIP
        >>> X = tvm.placeholder((2,), name="X")  # doctest: +SKIP
        >>> Y = tvm.compute((2,), lambda i: X[i] * 2.0, name="Y")  # doctest: +SKIP
        >>> f = to_mxnet(tvm.build(tvm.create_schedule(Y.op), [X, Y]))  # doctest: +SKIP
        >>> f(mx.nd.ones((2,))).asnumpy()  # doctest: +SKIP
        array([2., 2.], dtype=float32)
    """
    return bridge(module, "mxnet")
