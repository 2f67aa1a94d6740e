"""JAX: ``@kernel`` called with traced arrays (``jax.grad``, ``jax.jit``, ``jax.vmap``'s
tracers) runs as a ``jax.custom_vjp`` whose forward and backward call the compiled kernel and its
derived gradient on the host through ``jax.pure_callback``; under ``jax.grad`` the backward is
the kernel's ``te.gradient``.

The callbacks get host JAX arrays and view them as NumPy arrays (``np.asarray``, no copy), the
kernel's fastest route. A bfloat16 view has ml_dtypes' dtype, which neither NumPy's C API nor its
DLPack export knows: such arrays reach the kernel as NDArray views of the same memory
(:func:`_host`), and a call with a bfloat16 output gets NDArray outputs (NumPy cannot allocate
one for the kernel either).

Example:
    >>> import jax, jax.numpy as jnp, pytvmbridge as tvm
    >>> cube = tvm.kernel(lambda A: tvm.compute(A.shape, lambda i: A[i] * A[i] * A[i], name="c"))
    >>> jax.grad(lambda x: cube(x).sum())(jnp.array([1.0, 2.0])).tolist()
    [3.0, 12.0]
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..error import TVMValueError
from ..nd import _from_numpy
from .torch_autograd import _backward_module, _output_specs, run

_BF16 = "bfloat16"


def is_traced(args: tuple[Any, ...]) -> bool:
    """True when an argument is a JAX tracer (the kernel must then join JAX's trace)."""
    core = sys.modules.get("jax.core")
    if core is None:
        return False
    tracer = core.Tracer
    return any(isinstance(a, tracer) for a in args)


def _specs(xs: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((np.dtype(x.dtype).name, tuple(int(d) for d in x.shape)) for x in xs)


def _host(x: np.ndarray) -> Any:
    """What a kernel is handed to read or write ``x``, a NumPy array in a callback, without a
    copy: ``x`` itself (the C++ call path views it through NumPy's C API), except bfloat16 (an
    ml_dtypes dtype that NumPy's C API and DLPack export do not know): an NDArray of the same
    memory, exported as uint16 and viewed as bfloat16 (DLPack's own code for it)."""
    return _from_numpy(x) if x.dtype.name == _BF16 else x


def _function(kernel: Any) -> Any:
    fn = kernel.__dict__.get("_jax_vjp")
    if fn is not None:
        return fn
    import jax

    def shapes_of(xs: Any) -> list[Any]:
        return [jax.ShapeDtypeStruct(s, np.dtype(d)) for s, d in _output_specs(kernel, xs)]

    def run_forward(*xs: Any) -> Any:
        return [np.asarray(o) for o in run(kernel, [_host(np.asarray(x)) for x in xs])]

    def run_forward_ndarrays(*xs: Any) -> Any:
        # A kernel allocates its outputs in its first input's framework, and NumPy's cannot
        # hold bfloat16: every input goes as an NDArray view, so the outputs are NDArrays
        # (np.asarray views a bfloat16 one as ml_dtypes' type, without a copy).
        return [np.asarray(o) for o in run(kernel, [_from_numpy(np.asarray(x)) for x in xs])]

    def primal(*xs: Any) -> Any:
        shapes = shapes_of(xs)
        # Chosen while tracing, from the dtypes alone: calls with no bfloat16 output keep
        # NumPy's faster route.
        bf16_out = any(s.dtype.name == _BF16 for s in shapes)
        callback = run_forward_ndarrays if bf16_out else run_forward
        # Under jax.vmap the kernel runs once per mapped element: it is compiled for the
        # unbatched ranks, and a batched call would be another kernel.
        outs = jax.pure_callback(callback, shapes, *xs, vmap_method="sequential")
        return outs[0] if len(outs) == 1 else tuple(outs)

    f = jax.custom_vjp(primal)

    def fwd(*xs: Any) -> Any:
        outs = primal(*xs)
        # the outputs are residuals too: the derived gradient reads them (softmax's) instead of
        # recomputing the forward
        return outs, (xs, list(outs) if isinstance(outs, tuple) else [outs])

    # One callback per (inputs, outputs) count, made once: the callback is a static parameter
    # of JAX's primitive, so a closure made per call was a new primitive per eager backward,
    # compiled and cached again each time (15 ms and 1.5 MB a call, without bound).
    backward_callbacks: dict[tuple[int, int], Any] = {}

    def backward_callback(n: int, m: int) -> Any:
        callback = backward_callbacks.get((n, m))
        if callback is not None:
            return callback

        def run_backward(*arrays: Any) -> Any:
            inputs, saved, grads = arrays[:n], arrays[n : n + m], arrays[n + m :]
            inputs = [np.asarray(x, order="C") for x in inputs]
            module, _ = _backward_module(kernel, _specs(inputs), saved=True)
            out = [np.empty(x.shape, x.dtype) for x in inputs]
            module(
                *[_host(x) for x in inputs],
                *[_host(np.asarray(h, order="C")) for h in grads],
                *[_host(np.asarray(v, order="C")) for v in saved],
                *[_host(o) for o in out],  # written in place: a view of the same memory
            )
            return out

        backward_callbacks[(n, m)] = run_backward
        return run_backward

    def bwd(res: Any, g: Any) -> Any:
        xs, values = res
        heads = list(g) if isinstance(g, (tuple, list)) else [g]
        run_backward = backward_callback(len(xs), len(values))
        shapes = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in xs]
        return tuple(
            jax.pure_callback(run_backward, shapes, *xs, *values, *heads, vmap_method="sequential")
        )

    f.defvjp(fwd, bwd)
    kernel.__dict__["_jax_vjp"] = f
    return f


def call(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Runs ``kernel`` inside a JAX trace (inputs-only calls)."""
    if kwargs:
        raise TVMValueError(f"kernel '{kernel.name}': out= cannot be used with traced JAX arrays")
    return _function(kernel)(*args)
