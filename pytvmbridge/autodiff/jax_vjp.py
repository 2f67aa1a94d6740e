"""JAX: ``@kernel`` called with traced arrays (``jax.grad``, ``jax.jit``, ``jax.vmap``'s
tracers) runs as a ``jax.custom_vjp`` whose forward and backward call the compiled kernel and its
derived gradient on the host through ``jax.pure_callback``; under ``jax.grad`` the backward is
the kernel's ``te.gradient``.

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
from .torch_autograd import _backward_module, _output_specs, run


def is_traced(args: tuple[Any, ...]) -> bool:
    """True when an argument is a JAX tracer (the kernel must then join JAX's trace)."""
    core = sys.modules.get("jax.core")
    if core is None:
        return False
    tracer = core.Tracer
    return any(isinstance(a, tracer) for a in args)


def _specs(xs: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((np.dtype(x.dtype).name, tuple(int(d) for d in x.shape)) for x in xs)


def _function(kernel: Any) -> Any:
    fn = kernel.__dict__.get("_jax_vjp")
    if fn is not None:
        return fn
    import jax

    def shapes_of(xs: Any) -> list[Any]:
        return [jax.ShapeDtypeStruct(s, np.dtype(d)) for s, d in _output_specs(kernel, xs)]

    def run_forward(*xs: Any) -> Any:
        return [np.asarray(o) for o in run(kernel, [np.asarray(x) for x in xs])]

    def primal(*xs: Any) -> Any:
        # Under jax.vmap the kernel runs once per mapped element: it is compiled for the
        # unbatched ranks, and a batched call would be another kernel.
        outs = jax.pure_callback(run_forward, shapes_of(xs), *xs, vmap_method="sequential")
        return outs[0] if len(outs) == 1 else tuple(outs)

    f = jax.custom_vjp(primal)

    def fwd(*xs: Any) -> Any:
        outs = primal(*xs)
        # the outputs are residuals too: the derived gradient reads them (softmax's) instead of
        # recomputing the forward
        return outs, (xs, list(outs) if isinstance(outs, tuple) else [outs])

    def bwd(res: Any, g: Any) -> Any:
        xs, values = res
        heads = list(g) if isinstance(g, (tuple, list)) else [g]
        n, m = len(xs), len(values)

        def run_backward(*arrays: Any) -> Any:
            inputs, saved, grads = arrays[:n], arrays[n : n + m], arrays[n + m :]
            inputs = [np.ascontiguousarray(x) for x in inputs]
            module, _ = _backward_module(kernel, _specs(inputs), saved=True)
            out = [np.empty(x.shape, x.dtype) for x in inputs]
            module(
                *inputs,
                *[np.ascontiguousarray(h) for h in grads],
                *[np.ascontiguousarray(v) for v in saved],
                *out,
            )
            return out

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
