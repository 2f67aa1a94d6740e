"""PyTorch autograd for ``@kernel``: a call with a tensor that requires grad records a node
whose backward runs the kernel's derived gradient (``te.gradient``), compiled once per shapes.

Example:
    >>> import torch, pytvmbridge as tvm
    >>> sq = tvm.kernel(lambda A: tvm.compute(A.shape, lambda i: A[i] * A[i], name="sq"))
    >>> x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    >>> y = sq(x); y.grad_fn is not None
    True
    >>> y.sum().backward(); x.grad.tolist()
    [2.0, 4.0]
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from ..error import TVMError, TVMNotImplementedError, TVMTypeError, TVMValueError
from .derivative import NotDifferentiable

_lock = threading.Lock()


def wants_grad(args: tuple[Any, ...]) -> bool:
    """True when the call must go through the kernel's custom op: torch is loaded and an
    argument is a tensor that requires grad (in grad mode), or a tensor being traced
    (torch.compile, torch.export: a FakeTensor or other subclass)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    tensor = torch.Tensor
    grad = None
    seen = False
    for a in args:
        if isinstance(a, tensor):
            seen = True
            if type(a) is not tensor and type(a) is not torch.nn.Parameter:
                return True
            if a.requires_grad:
                if grad is None:
                    grad = torch.is_grad_enabled()
                if grad:
                    return True
    return seen and torch.compiler.is_compiling()


def _is_kernel(owner: Any) -> bool:
    from .. import _core
    from .bridge_grad import is_bridge

    return isinstance(owner, _core.Caller) and not is_bridge(owner)


def _graph(owner: Any, specs: Any) -> tuple[list[Any], list[Any]]:
    """(placeholders, outputs) of a kernel for these input specs, or of a TC def or a bridged
    Module (their own, possibly symbolic, expressions)."""
    if not _is_kernel(owner):
        if owner.inputs is None:
            raise NotDifferentiable(
                "its module has no tensor expressions to derive a gradient from (it was "
                "loaded, not built by tvm.build in this process)"
            )
        return list(owner.inputs), list(owner.outputs)
    from .. import te

    names = owner._arg_names or [f"x{k}" for k in range(len(specs))]
    phs = [te.placeholder(shape, dtype=dt, name=names[k]) for k, (dt, shape) in enumerate(specs)]
    result = owner.fn(*phs)
    return phs, list(result) if isinstance(result, (tuple, list)) else [result]


def run(owner: Any, inputs: Any) -> list[Any]:
    """The plain (non-differentiable) call of a kernel or TC def on detached inputs."""
    from .. import _core

    plain = isinstance(owner, _core.Caller)  # a kernel or a bridge: never routed again
    out = _core.Caller._plain_call(owner, *inputs) if plain else owner(*inputs)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _backward_graph(
    kernel: Any, specs: tuple[tuple[str, tuple[int, ...]], ...], saved: bool = False
) -> tuple[list[Any], list[Any], list[Any], list[Any], tuple[bool, ...]]:
    """The gradient of ``kernel`` for inputs of these (dtype, shape), as expressions:
    (placeholders, heads, saved-output placeholders, gradients, reads), ``reads`` saying for
    each input and saved output whether the gradient reads it at all (the forward keeps only
    those: an input or output modified in place later is then no error when it is not read,
    as in PyTorch). Raises ``TVMError`` when the kernel has no gradient."""
    cache = kernel.__dict__.setdefault("_grad_graphs", {})
    if not _is_kernel(kernel):
        specs = ()  # a TC def is symbolic in its sizes: one gradient for all
    entry = cache.get((specs, saved))
    if entry is not None:
        return entry
    from .. import te
    from .gradient import gradient_saving, reachable

    try:
        phs, outputs = _graph(kernel, specs)
        heads = [te.placeholder(o.shape, dtype=o.dtype, name=f"{o.name}_head") for o in outputs]
        values = [
            te.placeholder(o.shape, dtype=o.dtype, name=f"{o.name}_saved") if saved else None
            for o in outputs
        ]
        per_output = [
            gradient_saving(o, phs, h, v) for o, h, v in zip(outputs, heads, values, strict=True)
        ]
    except NotDifferentiable as e:
        raise TVMError(f"pytvmbridge kernel '{kernel.name}' has no derived gradient: {e}") from e
    if len(per_output) == 1:
        grads = per_output[0]
    else:
        grads = [
            te.compute(p.shape, lambda *i, gs=gs: _sum(g[i] for g in gs), name=f"{p.name}_grad")
            for p, gs in zip(phs, zip(*per_output, strict=True), strict=True)
        ]
    read = reachable(grads)
    extra = values if saved else []
    reads = tuple(t in read for t in phs + extra)
    with _lock:
        cache[(specs, saved)] = (phs, heads, extra, grads, reads)
    return cache[(specs, saved)]


def _backward_module(
    kernel: Any, specs: tuple[tuple[str, tuple[int, ...]], ...], saved: bool = False
) -> Any:
    """The compiled gradient of ``kernel`` for inputs of these (dtype, shape): arguments are the
    inputs, one head per output, with ``saved`` the outputs' values the forward computed, then
    one gradient per input. The gradient reads a saved output where it can be written in terms
    of it instead of recomputing the forward (softmax's)."""
    cache = kernel.__dict__.setdefault("_grad_modules", {})
    if not _is_kernel(kernel):
        specs = ()
    entry = cache.get((specs, saved))
    if entry is not None:
        return entry
    from ..autoschedule import auto_schedule
    from ..build import build

    phs, heads, extra, grads, _ = _backward_graph(kernel, specs, saved)
    s = auto_schedule(grads)
    module = build(s, phs + heads + extra + grads, name=f"{kernel.name}_backward")
    with _lock:
        cache[(specs, saved)] = (module, len(heads))
    return cache[(specs, saved)]


def _keep_for_backward(ctx: Any, kernel: Any, inputs: Any, outs: Any) -> None:
    """Saves what the kernel's gradient reads of its inputs and outputs (everything when the
    gradient cannot be derived: the backward then says why); of the rest only the shape."""
    tensors = (*inputs, *outs)
    ctx.num_inputs = len(inputs)
    # Per call: one lookup by the inputs' torch dtypes and sizes; the gradient's expressions
    # are derived once per such key, when first seen.
    key = tuple([(x.dtype, x.shape) for x in inputs])
    cache = kernel.__dict__.get("_grad_reads")
    if cache is None:
        cache = kernel.__dict__["_grad_reads"] = {}
    try:
        unread = cache.get(key)
    except TypeError:  # symbolic sizes (a torch.compile trace with dynamic shapes): keep all
        unread = ()
    if unread is None:
        try:
            reads = _backward_graph(kernel, _specs(inputs), saved=True)[4]
        except Exception:  # the forward never fails for its gradient: the backward raises it
            reads = (True,) * len(tensors)
        if len(cache) >= 256:  # a bound, for kernels called with ever new sizes
            cache.clear()
        unread = cache[key] = tuple(k for k, r in enumerate(reads) if not r)
    if not unread:
        ctx.save_for_backward(*tensors)
        ctx.unread = None
        return
    ctx.save_for_backward(*[t for k, t in enumerate(tensors) if k not in unread])
    ctx.unread = [(k, tensors[k].shape, tensors[k].dtype) for k in unread]


def _kept(ctx: Any) -> tuple[list[Any], list[Any]]:
    """(inputs, outputs) for the gradient module: the saved tensors, and never-read
    placeholders (uninitialised) for the rest."""
    import torch

    tensors = list(ctx.saved_tensors)
    for k, shape, dtype in ctx.unread or ():
        tensors.insert(k, torch.empty(shape, dtype=dtype))
    return tensors[: ctx.num_inputs], tensors[ctx.num_inputs :]


def _sum(items: Any) -> Any:
    total = None
    for x in items:
        total = x if total is None else total + x
    return total


_counter = iter(range(1 << 62))


def _output_specs(kernel: Any, inputs: Any) -> list[tuple[tuple[int, ...], str]]:
    """The outputs' (shape, dtype) for these inputs, from the kernel's expressions alone (no
    compilation): what the fake implementation returns under torch.compile and torch.export."""
    specs = tuple(
        (str(x.dtype).removeprefix("torch."), tuple(int(d) for d in x.shape)) for x in inputs
    )
    cache = kernel.__dict__.setdefault("_out_specs", {})
    found = cache.get(specs)
    if found is None:
        from .. import _core

        phs, outputs = _graph(kernel, specs)
        # bind the (symbolic, for a TC def) input sizes to the actual ones
        pairs = [
            (d, _core.const(n, d.dtype))
            for p, (_, shape) in zip(phs, specs, strict=True)
            for d, n in zip(p.shape, shape, strict=True)
            if _core.expr_parts(d)[0] == "Var"
        ]
        found = cache[specs] = [
            (tuple(int(_core.simplify(_core.substitute(e, pairs))) for e in o.shape), o.dtype)
            for o in outputs
        ]
    return found


def _specs(inputs: Any) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((str(x.dtype).removeprefix("torch."), tuple(x.shape)) for x in inputs)


def torch_op(kernel: Any) -> Any:
    """The ``torch.library.custom_op`` that runs ``kernel`` (registered on first use), with a
    fake implementation and a registered backward running the derived gradient; it takes and
    returns lists of tensors."""
    op = kernel.__dict__.get("_torch_op")
    if op is not None:
        return op
    import torch

    base = "".join(ch if ch.isalnum() else "_" for ch in str(kernel.name))
    name = f"pytvmbridge::{base}_{next(_counter)}"

    # explicit schemas: this module's annotations are strings (from __future__ import annotations)
    @torch.library.custom_op(name, mutates_args=(), schema="(Tensor[] inputs) -> Tensor[]")
    def forward(inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        return run(kernel, [x.detach() for x in inputs])

    @forward.register_fake
    def _(inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        dtypes = {"bfloat16": torch.bfloat16}
        return [
            torch.empty(shape, dtype=dtypes.get(dt) or getattr(torch, dt))  # a kernel may take none
            for shape, dt in _output_specs(kernel, inputs)
        ]

    @torch.library.custom_op(
        name + "_backward",
        mutates_args=(),
        schema="(Tensor[] inputs, Tensor[] values, Tensor[] grads) -> Tensor[]",
    )
    def backward_op(
        inputs: list[torch.Tensor], values: list[torch.Tensor], grads: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        # values: the forward's outputs, which the derived gradient reads instead of recomputing
        module, _ = _backward_module(kernel, _specs(inputs), saved=True)
        out = [torch.empty(x.shape, dtype=x.dtype) for x in inputs]
        module(
            *[x.detach().contiguous() for x in inputs],
            *[g.contiguous() for g in grads],
            *[v.detach().contiguous() for v in values],
            *out,
        )
        return out

    @backward_op.register_fake
    def _(
        inputs: list[torch.Tensor], values: list[torch.Tensor], grads: list[torch.Tensor]
    ) -> list[torch.Tensor]:
        return [torch.empty_like(x, memory_format=torch.contiguous_format) for x in inputs]

    def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
        _keep_for_backward(ctx, kernel, inputs[0], output)
        ctx.out_meta = [(o.shape, o.dtype) for o in output]

    def backward(ctx: Any, grads: Any) -> Any:
        inputs, values = _kept(ctx)
        heads = [
            torch.zeros(shape, dtype=dt) if g is None else g
            for g, (shape, dt) in zip(grads, ctx.out_meta, strict=True)
        ]
        return (backward_op(inputs, values, heads),)

    forward.register_autograd(backward, setup_context=setup_context)

    def no_second_derivative(ctx: Any, grads: Any) -> Any:
        del ctx, grads
        raise TVMNotImplementedError(
            f"kernel '{kernel.name}': its gradient is not differentiable again (no second "
            "derivatives: create_graph=True through a kernel's backward is not supported)"
        )

    def no_context(ctx: Any, inputs: Any, output: Any) -> None:
        del ctx, inputs, output  # PyTorch passes these by keyword

    backward_op.register_autograd(no_second_derivative, setup_context=no_context)
    kernel.__dict__["_torch_op"] = forward
    return forward


def _eager(args: tuple[Any, ...]) -> bool:
    """Plain tensors outside a torch.compile/export trace: the cheaper autograd.Function path
    (the custom op's dispatch costs tens of microseconds per call, forward and backward)."""
    torch = sys.modules["torch"]
    for a in args:
        if isinstance(a, torch.Tensor) and type(a) is not torch.Tensor:
            if type(a) is not torch.nn.Parameter:
                return False
    return not torch.compiler.is_compiling()


def _no_second_derivative(kernel: Any, out: list[Any], sources: list[Any]) -> tuple[Any, ...]:
    """The gradients, made to raise when differentiated again (``create_graph=True``, then a
    gradient of them): the kernel's gradient depends on its inputs, but the derived gradient
    is not differentiable itself, and a second derivative that silently left that out would be
    wrong. Unlike ``once_differentiable``, whose error node hangs off detached copies (so that
    ``autograd.grad`` with respect to the inputs finds no path and answers zero or None), the
    node here takes the saved inputs and the incoming gradients as its inputs: any path from
    the gradients back to them goes through it and raises."""
    torch = sys.modules["torch"]
    tracked = [t for t in sources if isinstance(t, torch.Tensor) and t.requires_grad]
    if not torch.is_grad_enabled() or not tracked:
        return tuple(out)
    message = (
        f"kernel '{kernel.name}': its gradient is not differentiable again (second derivatives "
        "through a pytvmbridge kernel are not supported)"
    )
    wrapped = _second_derivative_error().apply(message, out, *tracked)
    return tuple(wrapped)


_error_function: Any = None


def _second_derivative_error() -> Any:
    """An autograd function: forward returns the given gradients as new outputs of a node
    whose inputs are ``tensors``; its backward raises ``message``."""
    global _error_function
    if _error_function is None:
        import torch

        class SecondDerivativeError(torch.autograd.Function):
            @staticmethod
            def forward(ctx: Any, message: str, out: list[Any], *tensors: Any) -> Any:
                ctx.message = message
                return tuple(out)

            @staticmethod
            def backward(ctx: Any, *grads: Any) -> Any:
                raise TVMNotImplementedError(ctx.message)

        _error_function = SecondDerivativeError
    return _error_function


def _eager_function(kernel: Any) -> Any:
    """A ``torch.autograd.Function`` running ``kernel`` and, as its backward, the derived
    gradient: the same computation as the custom op, for eager calls."""
    fn = kernel.__dict__.get("_autograd_function")
    if fn is not None:
        return fn
    import torch

    class KernelFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *inputs: Any) -> Any:
            outs = run(kernel, [x.detach() if isinstance(x, torch.Tensor) else x for x in inputs])
            # the outputs too: a gradient written in terms of them need not rerun the forward
            _keep_for_backward(ctx, kernel, inputs, outs)
            ctx.out_meta = [(o.shape, o.dtype) for o in outs]
            return outs[0] if len(outs) == 1 else tuple(outs)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            inputs, values = _kept(ctx)
            inputs = [x.detach().contiguous() for x in inputs]
            values = [x.detach().contiguous() for x in values]
            module, _ = _backward_module(kernel, _specs(inputs), saved=True)
            heads = [
                torch.zeros(shape, dtype=dt) if g is None else g.contiguous()
                for g, (shape, dt) in zip(grads, ctx.out_meta, strict=True)
            ]
            out = [torch.empty(x.shape, dtype=x.dtype) for x in inputs]
            module(*inputs, *heads, *values, *out)
            return _no_second_derivative(kernel, out, [*ctx.saved_tensors, *grads])

    KernelFunction.__name__ = f"{kernel.name}_autograd"
    kernel.__dict__["_autograd_function"] = KernelFunction
    return KernelFunction


def _as_list(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def call(kernel: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Runs ``kernel`` as its custom op (inputs-only calls; ``out=`` is not differentiable).
    Arrays of other frameworks among the inputs (a NumPy array beside a tensor that requires
    grad) are read as torch tensors, without a copy where DLPack allows."""
    import torch

    if kwargs:
        grad = torch.is_grad_enabled() and any(
            isinstance(a, torch.Tensor) and a.requires_grad for a in args
        )
        if not grad and not torch.compiler.is_compiling():
            return NotImplemented  # a tensor subclass that needs no autograd: the plain call
        raise TVMValueError(
            f"kernel '{kernel.name}': out= cannot be used with inputs that require grad "
            "(autograd would not see the write); call it with the inputs only"
        )
    if not all(isinstance(a, torch.Tensor) for a in args):
        args = tuple(_as_tensor(kernel, k, a) for k, a in enumerate(args))
    if _eager(args):
        outs = _eager_function(kernel).apply(*args)
        return outs

    # Registering inside a torch.compile trace is not traceable: custom_op_name runs at trace
    # time instead of being traced (fullgraph=True holds, where torch.compiler.disable broke it).
    outs = getattr(torch.ops.pytvmbridge, custom_op_name(kernel))(list(args))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _as_tensor(kernel: Any, k: int, value: Any) -> Any:
    """Input ``k``, of another framework, as a torch tensor (shared memory through DLPack; a
    copy where DLPack refuses, as for a read-only NumPy array)."""
    import numpy as np
    import torch

    from .. import _core

    if isinstance(value, torch.Tensor):
        return value
    # Read through pytvmbridge's own import first: it reads any producer (a capsule too) and
    # never aborts, where PyTorch's from_dlpack aborts the process on a negative stride (a
    # reversed NumPy view); such a view, and what PyTorch refuses, is copied instead.
    name = getattr(kernel, "name", "kernel")
    try:
        value = _core.from_dlpack(value, f"kernel '{name}': input {k}")
    except TypeError:
        raise  # no array at all (a list): an error, as on the plain call path
    except (BufferError, ValueError):
        pass
    else:
        if all(s >= 0 for s in value.strides):
            try:
                return torch.from_dlpack(value)
            except (BufferError, TypeError, RuntimeError, ValueError):
                pass
    try:
        return torch.as_tensor(np.array(value, copy=True))
    except Exception as err:
        raise TVMTypeError(
            f"kernel '{name}': input {k} is a {type(value).__name__}, which cannot be read as a "
            f"torch tensor beside the inputs that require grad ({err})"
        ) from None


def custom_op_name(kernel: Any) -> str:
    """The name of ``kernel``'s custom op in ``torch.ops.pytvmbridge``, registered on first use.
    torch.compile runs this function while tracing instead of tracing it: the mark is what
    ``torch._dynamo.assume_constant_result`` sets (importing torch._dynamo here would cost
    seconds at import), so registration never happens inside a graph.

    Example:
        >>> import pytvmbridge as tvm
        >>> k = tvm.kernel(lambda a: tvm.compute(a.shape, lambda i: a[i] + 1.0), name="inc")
        >>> custom_op_name(k).startswith("inc_")
        True
    """
    return str(torch_op(kernel)._qualname).split("::", 1)[1]


custom_op_name._dynamo_marked_constant = True  # type: ignore[attr-defined]
