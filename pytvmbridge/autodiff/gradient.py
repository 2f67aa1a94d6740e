"""``te.gradient``: reverse-mode differentiation of tensor expressions.

The adjoint of every tensor between the inputs and the output is built consumer by consumer, in
reverse topological order. For one read ``T[f(i, r)]`` inside a consumer ``C[i] = reduce_r body``,
the naive adjoint is a scatter: ``adj_T[f(i, r)] += adj_C[i] * d body / d T[f(i, r)]``. Instead
of scattering, each index ``f_d`` is solved for one of the consumer's variables
(:mod:`.gather`), so the adjoint is a gather over the variables left free:
``adj_T[x] = sum_free where(conditions) adj_C[i(x, free)] * d body``. No Jacobian is ever formed.
"""

from __future__ import annotations

from typing import Any

from .. import _core
from .. import te as _te
from ..error import TVMTypeError, TVMValueError
from ..topi.utils import accumulate_dtype
from .algebra import Saved, flatten, use_saved
from .derivative import NotDifferentiable, derivative, mul, site_key
from .gather import gather_adjoint
from .shift import cancels

Tensor = Any


def _reads(e: Any, out: list[tuple[Tensor, list[Any]]]) -> None:
    """Every tensor read in ``e``, in order, with its indices."""
    parts = _core.expr_parts(e)
    if parts[0] == "TensorRead":
        out.append((parts[1], parts[2]))
        for i in parts[2]:
            _reads(i, out)
        return
    for p in parts[1:]:
        if isinstance(p, list):
            for q in p:
                if isinstance(q, _core.Expr) and not isinstance(q, _core.IterVar):
                    _reads(q, out)
        elif isinstance(p, _core.Expr) and not isinstance(p, _core.IterVar):
            _reads(p, out)


def _producers(t: Tensor) -> list[Tensor]:
    if not isinstance(t.op, _te.ComputeOp):
        # an extern stage's inputs: it depends on them (and has no derivative, which the
        # gradient says when one of them needs one); a placeholder has none
        return list(t.op.input_tensors)
    found: list[tuple[Tensor, list[Any]]] = []
    for body in t.op.body:
        _reads(body, found)
    out: list[Tensor] = []
    for tensor, _ in found:
        if tensor not in out:
            out.append(tensor)
    return out


def _post_order(output: Tensor) -> list[Tensor]:
    order: list[Tensor] = []
    seen: set[Tensor] = set()
    stack: list[tuple[Tensor, bool]] = [(output, False)]
    while stack:
        t, expanded = stack.pop()
        if expanded:
            order.append(t)
            continue
        if t in seen:
            continue
        seen.add(t)
        stack.append((t, True))
        for p in _producers(t):
            if p not in seen:
                stack.append((p, False))
    return order


def reachable(outputs: list[Tensor]) -> set[Tensor]:
    """Every tensor that ``outputs`` read, directly or through other stages (themselves too).

    Example:
        >>> import pytvmbridge.te as te
        >>> A, B = te.placeholder((3,), name="A"), te.placeholder((3,), name="B")
        >>> C = te.compute((3,), lambda i: A[i] * 2, name="C")
        >>> A in reachable([C]), B in reachable([C])
        (True, False)
    """
    found: set[Tensor] = set()
    for out in outputs:
        found.update(_post_order(out))
    return found


def _check_tensor(obj: Any, what: str) -> Tensor:
    if not isinstance(obj, _core.Tensor):
        raise TVMTypeError(f"te.gradient(): {what} must be a Tensor, got {type(obj).__name__}")
    return obj


def _same_shape(a: Tensor, b: Tensor) -> bool:
    # Compared simplified: a convolution's output size over a symbolic input,
    # (n - 1) // 1 + 1, is the n of a head made from PyTorch's shapes.
    def dim(x: Any) -> str:
        return repr(_core.simplify(x)) if isinstance(x, _core.Expr) else repr(x)

    return len(a.shape) == len(b.shape) and all(
        dim(x) == dim(y) for x, y in zip(a.shape, b.shape, strict=False)
    )


def gradient(output: Tensor, inputs: Tensor | list[Tensor], head: Tensor | None = None) -> Any:
    """The gradients of ``output`` with respect to ``inputs``, as tensor expressions.

    ``head`` is the adjoint of ``output`` (a tensor of its shape and dtype: the gradient flowing
    back from whatever consumes it); without one it is all ones, so the result is the gradient
    of ``sum(output)``. Returns one tensor per input (a single tensor if ``inputs`` is one), each
    of the input's shape; schedule them like any computation (``auto_schedule``).

    The gradients are simplified where exact arithmetic allows (``shift.py``, ``algebra.py``):
    a maximum subtracted for stability and cancelled later (softmax's) passes no gradient,
    factors constant over a reduction move out of it, and a product equal to the output's body
    reads the output (softmax's gradient is ``y * g - sum(g * y) * y``).

    Example:
        >>> import numpy as np
        >>> import pytvmbridge as tvm
        >>> from pytvmbridge import te
        >>> A = te.placeholder((3, 4), name="A", dtype="float64")
        >>> B = te.compute((3, 4), lambda i, j: A[i, j] * A[i, j], name="B")
        >>> dA = te.gradient(B, A)
        >>> f = tvm.build(tvm.auto_schedule([dA]), [A, dA])
        >>> a = np.arange(12.0).reshape(3, 4); out = np.empty_like(a)
        >>> f(a, out); bool(np.allclose(out, 2 * a))
        True
    """
    return gradient_saving(output, inputs, head)


def gradient_saving(
    output: Tensor,
    inputs: Tensor | list[Tensor],
    head: Tensor | None = None,
    saved_output: Tensor | None = None,
) -> Any:
    """:func:`gradient`, where ``saved_output`` (a placeholder of the output's shape and dtype)
    holds the output's values, saved by the forward: the gradient reads it wherever it can be
    written in terms of the output (softmax's is ``y * (g - sum(g * y))``) instead of
    recomputing the forward."""
    _check_tensor(output, "output")
    single = isinstance(inputs, _core.Tensor)
    input_list = [inputs] if single else list(inputs)
    for k, t in enumerate(input_list):
        _check_tensor(t, f"inputs[{k}]")
    if head is None:
        dtype = output.dtype
        head = _te.compute(
            output.shape, lambda *i: _core.const(1, dtype), name=f"{output.name}_grad_head"
        )
    else:
        _check_tensor(head, "head")
        if not _same_shape(head, output):
            raise TVMValueError(
                f"te.gradient(): head must have the output's shape {tuple(output.shape)}, got "
                f"{tuple(head.shape)}"
            )
        if head.dtype != output.dtype:  # a dtype mismatch is a TypeError, as in expressions
            raise TVMTypeError(
                f"te.gradient(): head must have the output's dtype {output.dtype}, got {head.dtype}"
            )

    order = _post_order(output)  # producers before consumers
    wanted = set(input_list)
    needs: set[Tensor] = set()
    for t in order:
        if t in wanted or any(p in needs for p in _producers(t)):
            needs.add(t)
    # A max or min subtracted for stability and cancelled later (softmax's row maximum) has a
    # zero adjoint: leaving it out drops its reductions and its argmax mask from the gradient.
    dropped = {t for t in order if t not in wanted and t != output and _cancelled(output, t)}
    if dropped:
        needs = set()
        for t in order:
            if t in wanted or (t not in dropped and any(p in needs for p in _producers(t))):
                needs.add(t)
    saved = []
    if isinstance(output.op, _te.ComputeOp) and output.op.num_outputs == 1:
        found = Saved(output, output if saved_output is None else saved_output)
        if found.ok:
            saved.append(found)

    contributions: dict[Tensor, list[Any]] = {output: [head]}
    adjoints: dict[Tensor, Tensor] = {}
    for t in reversed(order):
        if t not in needs:
            continue
        adj = _sum_adjoint(t, contributions.get(t, []))
        adjoints[t] = adj
        if t in wanted and not isinstance(t.op, _te.ComputeOp):
            continue
        if not isinstance(t.op, _te.ComputeOp):
            raise NotDifferentiable(
                f"te.gradient: cannot differentiate through operation {t.op.name!r} (an extern "
                "stage: its packed function has no derivative)"
            )
        if _core.scan_axis(t.op) is not None:
            raise NotDifferentiable(
                f"te.gradient: cannot differentiate through scan {t.op.name!r} (its recurrence "
                "has no derived gradient)"
            )
        if t.op.num_outputs != 1:
            raise NotDifferentiable(
                f"te.gradient: operation {t.op.name!r} has {t.op.num_outputs} outputs: gradients "
                "are derived through single-output computes only (tuple reductions such as "
                "argmax have none; write each output of an elementwise compute as its own "
                "te.compute)"
            )
        _propagate(t, adj, needs, contributions, saved)
    result = [adjoints[t] if t in adjoints else _zeros(t) for t in input_list]
    return result[0] if single else result


def _zeros(t: Tensor) -> Tensor:
    dtype = t.dtype
    return _te.compute(t.shape, lambda *i: _core.const(0, dtype), name=f"{t.name}_grad")


def _sum_adjoint(t: Tensor, parts: list[Any]) -> Tensor:
    if not parts:
        return _zeros(t)
    if len(parts) == 1 and isinstance(parts[0], _core.Tensor):
        return parts[0]

    def body(*x: Any) -> Any:
        total = None
        for p in parts:
            v = p[tuple(x)] if isinstance(p, _core.Tensor) else p(*x)
            total = v if total is None else total + v
        return total

    return _te.compute(t.shape, body, name=f"{t.name}_grad")


def _cancelled(output: Tensor, t: Tensor) -> bool:
    if not isinstance(t.op, _te.ComputeOp) or t.op.num_outputs != 1:
        return False
    parts = _core.expr_parts(t.op.body[0])
    return parts[0] == "Reduce" and parts[1] in ("max", "min") and cancels(output, t)


def _inline(adj: Tensor) -> Any:
    """The adjoint's body when it is a small product of reads (a factored reduction times the
    factors moved out of it), to be read in place: None otherwise."""
    op = adj.op
    if not isinstance(op, _te.ComputeOp) or op.num_outputs != 1:
        return None
    body = op.body[0]
    m = flatten(body)
    if len(m.num) + len(m.den) < 2:
        return None
    for f in m.num + m.den:
        if _core.expr_parts(f)[0] != "TensorRead":
            return None
    return [a.var for a in op.axis], body


def _propagate(
    c: Tensor,
    adj_c: Tensor,
    needs: set[Tensor],
    contributions: dict[Tensor, list[Any]],
    saved: list[Saved],
) -> None:
    """Adds the contributions of consumer ``c`` (adjoint ``adj_c``) to its producers' adjoints."""
    op = c.op
    body = op.body[0]
    parts = _core.expr_parts(body)
    axes = list(op.axis)
    if parts[0] == "Reduce":
        kind, src, raxes, rcond = parts[1], parts[2], list(parts[3]), parts[4]
        if kind not in ("sum", "max", "min", "prod"):
            raise NotDifferentiable(
                f"te.gradient: operation {op.name!r} reduces with a custom reducer ({kind})"
            )
    else:
        kind, src, raxes, rcond = None, body, [], None
    found: list[tuple[Tensor, list[Any]]] = []
    _reads(src, found)
    seen: set[tuple[Any, str]] = set()
    here = c[tuple(a.var for a in axes)]
    inline = _inline(adj_c)
    if inline is None:
        adj_here = adj_c[tuple(a.var for a in axes)]
    else:
        adj_here = _core.substitute(
            inline[1], [(v, a.var) for v, a in zip(inline[0], axes, strict=True)]
        )
    for tensor, indices in found:
        if tensor not in needs:
            continue
        key = site_key(tensor, indices)
        if key in seen:
            continue
        seen.add(key)
        d = derivative(src, key)
        if d is None:
            continue
        if kind in ("max", "min"):
            # The extreme's mask, split evenly between tied elements (PyTorch's amax and JAX's
            # max: the gradients of a row add up to its head). A row holding a NaN has no
            # element equal to its extreme, so 0 / 0 makes its gradient NaN, as theirs.
            ties = _row_stat(c, src, raxes, rcond, "ties")
            mask = _core.select(src == here, _as_expr(d, c.dtype), _core.const(0, c.dtype))
            d = mask / ties[tuple(a.var for a in axes)]
        elif kind == "prod":
            # The product of the other elements: output / element where the element is not 0;
            # where it is, the product of the nonzero elements if it is the row's only zero,
            # else 0 (output / element gave NaN there).
            at = tuple(a.var for a in axes)
            zeros = _row_stat(c, src, raxes, rcond, "zeros")[at]
            nonzero = _row_stat(c, src, raxes, rcond, "nonzero_prod")[at]
            zero = _core.const(0, c.dtype)
            others = _core.select(src != zero, here / src, _core.select(zeros == 1, nonzero, zero))
            d = mul(d, others)
        value = mul(adj_here, d)
        value = _as_expr(value, c.dtype)
        if saved:
            value = use_saved(value, saved)
        split = None  # value == adj_c[axes] * d, for reading adj_c through a padded copy
        if value.dtype != tensor.dtype:
            value = value.astype(tensor.dtype)
        elif rcond is None and inline is None:
            split = (adj_c, d)
        if rcond is not None:
            value = _core.if_then_else(rcond, value, _core.const(0, value.dtype))
        name = f"{tensor.name}_grad_{op.name}"
        contributions.setdefault(tensor, []).append(
            gather_adjoint(tensor, indices, value, axes, raxes, name, split)
        )


def _row_stat(c: Tensor, src: Any, raxes: list[Any], rcond: Any, what: str) -> Tensor:
    """A statistic of reduction ``c``'s rows (``src`` over ``raxes`` where ``rcond``), of
    ``c``'s shape: ``"ties"`` counts the elements equal to ``c``, ``"zeros"`` the zero elements,
    ``"nonzero_prod"`` multiplies the nonzero ones."""
    op = c.op
    dtype = accumulate_dtype(c.dtype)  # counted in float32 for 16-bit floats (see gather.py)

    def body(*idx: Any) -> Any:
        fresh = [
            _te.reduce_axis((iv.dom.min, iv.dom.min + iv.dom.extent), name=f"{iv.var.name}_{what}")
            for iv in raxes
        ]
        pairs = [(a.var, i) for a, i in zip(op.axis, idx, strict=True)]
        pairs += [(iv.var, f.var) for iv, f in zip(raxes, fresh, strict=True)]
        x = _core.substitute(src, pairs)
        where = _core.substitute(rcond, pairs) if rcond is not None else None
        one, zero = _core.const(1, dtype), _core.const(0, dtype)
        if what == "nonzero_prod":
            x = x if x.dtype == dtype else x.astype(dtype)
            return _te.prod(_core.select(x != zero, x, one), axis=fresh, where=where)
        hit = x == c[idx] if what == "ties" else x == _core.const(0, x.dtype)
        return _te.sum(_core.select(hit, one, zero), axis=fresh, where=where)

    if dtype == c.dtype:
        return _te.compute(c.shape, body, name=f"{op.name}_{what}")
    stat = _te.compute(c.shape, body, name=f"{op.name}_{what}_acc")
    return _te.compute(c.shape, lambda *i: stat[i].astype(c.dtype), name=f"{op.name}_{what}")


def _as_expr(v: Any, dtype: str) -> Any:
    return _core.const(v, dtype) if isinstance(v, float) else v


__all__ = ["NotDifferentiable", "gradient"]
