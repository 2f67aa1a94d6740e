"""Shifts that cancel: tensors the output does not depend on at all, in exact arithmetic.

A numerically stable softmax subtracts the row maximum ``m`` before exponentiating:
``y = exp(x - m) / sum(exp(x - m))``. Moving ``m[i]`` by any ``d[i]`` multiplies numerator and
denominator by ``exp(-d[i])``, so ``y`` does not change: the total derivative of ``y`` with
respect to ``m`` is exactly zero, and the gradient need not flow through ``m`` at all (its
adjoint, a reduction, and the argmax mask that would carry it back to ``x`` all vanish; rounded,
they only add noise around zero).

The analysis follows how a perturbation ``t[k] -> t[k] + d[k]`` travels through the output's
expressions. Each expression is classified as

* unchanged (``None``),
* shifted: ``e -> e + sum_k c_k d[k]`` (``("add", terms)``), or
* scaled: ``e -> e * exp(sum_k c_k d[k])`` (``("mul", terms)``),

with ``terms`` mapping each index ``k`` (printed) to ``(index, c_k)``. ``exp`` turns a shift
into a scale, ``log`` a scale into a shift, products and quotients of scales add and subtract
their terms, and a sum reduction keeps a scale that does not depend on its own variables. An
output classified unchanged, or whose terms all cancel, does not depend on ``t``.
"""

from __future__ import annotations

from typing import Any

from .. import _core
from .. import te as _te
from .linear import free_vars, var_key

Expr = Any


class _Unknown(Exception):
    """The perturbation reaches the expression in a way the analysis does not model."""


def _norm(kind: str, terms: dict[str, tuple[list[Expr], float]]) -> Any:
    terms = {k: v for k, v in terms.items() if v[1] != 0.0}
    return (kind, terms) if terms else None


def _combine(a: dict, b: dict, sign: float) -> dict:
    out = dict(a)
    for k, (idx, c) in b.items():
        old = out.get(k, (idx, 0.0))[1]
        out[k] = (idx, old + sign * c)
    return out


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if a[0] != b[0]:
        return False
    return _norm(a[0], _combine(a[1], b[1], -1.0)) is None


class _Analysis:
    def __init__(self, target: Any) -> None:
        self.target = target
        self.tensors: dict[Any, Any] = {}  # compute tensor -> class of its body, over its axes

    def tensor(self, t: Any) -> Any:
        if t == self.target:
            axes = [a.var for a in t.op.axis]
            return ("add", {repr(axes): (axes, 1.0)})
        if t in self.tensors:
            return self.tensors[t]
        if not isinstance(t.op, _te.ComputeOp) or t.op.num_outputs != 1:
            self.tensors[t] = None
            return None
        self.tensors[t] = _UNKNOWN_MARK  # a cycle cannot happen; guards re-entry all the same
        result = self.expr(t.op.body[0])
        self.tensors[t] = result
        return result

    def read(self, t: Any, idx: list[Expr]) -> Any:
        cls = self.tensor(t)
        if cls is _UNKNOWN_MARK:
            raise _Unknown
        if cls is None:
            return None
        axes = [a.var for a in t.op.axis]
        pairs = list(zip(axes, idx, strict=True))
        terms = {}
        for _, (kidx, c) in cls[1].items():
            new = [_core.simplify(_core.substitute(i, pairs)) for i in kidx]
            key = repr(new)
            old = terms.get(key, (new, 0.0))[1]
            terms[key] = (new, old + c)
        return _norm(cls[0], terms)

    def expr(self, e: Expr) -> Any:
        parts = _core.expr_parts(e)
        kind = parts[0]
        if kind == "TensorRead":
            for i in parts[2]:
                if self.expr(i) is not None:
                    raise _Unknown
            return self.read(parts[1], list(parts[2]))
        if kind in ("IntImm", "FloatImm", "Var", "StringImm"):
            return None
        if kind in ("Add", "Sub"):
            a, b = self.expr(parts[1]), self.expr(parts[2])
            if a is None and b is None:
                return None
            if (a is None or a[0] == "add") and (b is None or b[0] == "add"):
                sign = 1.0 if kind == "Add" else -1.0
                return _norm("add", _combine(a[1] if a else {}, b[1] if b else {}, sign))
            if a is not None and b is not None and a[0] == b[0] == "mul" and _same(a, b):
                return a  # a common scale of both terms
            raise _Unknown
        if kind in ("Mul", "Div"):
            a, b = self.expr(parts[1]), self.expr(parts[2])
            if a is None and b is None:
                return None
            if (a is None or a[0] == "mul") and (b is None or b[0] == "mul"):
                sign = 1.0 if kind == "Mul" else -1.0
                return _norm("mul", _combine(a[1] if a else {}, b[1] if b else {}, sign))
            raise _Unknown
        if kind == "Call":
            name, args = parts[1], parts[2]
            classes = [self.expr(a) for a in args]
            if all(c is None for c in classes):
                return None
            if name == "exp" and classes[0][0] == "add":
                return ("mul", classes[0][1])
            if name == "log" and classes[0][0] == "mul":
                return ("add", classes[0][1])
            raise _Unknown
        if kind == "Cast" and _is_float(e.dtype) and _is_float(parts[1].dtype):
            # float to float: the identity in exact arithmetic (a float16 softmax computes in
            # float32 between two casts; seen as opaque, its maximum's two large adjoints were
            # summed in float16 and missed cancelling by 2-3x the element's gradient)
            return self.expr(parts[1])
        if kind == "Reduce":
            combiner, src, raxes, cond = parts[1], parts[2], parts[3], parts[4]
            if cond is not None and self.expr(cond) is not None:
                raise _Unknown
            cls = self.expr(src)
            if cls is None:
                return None
            rkeys = {var_key(iv.var) for iv in raxes}
            for idx, _ in cls[1].values():
                if any(free_vars(i) & rkeys for i in idx):
                    raise _Unknown
            if combiner == "sum" and cls[0] == "mul":
                return cls
            if combiner in ("max", "min") and cls[0] == "add":
                return cls
            raise _Unknown
        # anything else (comparisons, selects, casts...) must not see the perturbation
        for p in parts[1:]:
            for q in p if isinstance(p, list) else [p]:
                if isinstance(q, _core.Expr) and not isinstance(q, _core.IterVar):
                    if self.expr(q) is not None:
                        raise _Unknown
        return None


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))


_UNKNOWN_MARK = ("unknown", {})


def cancels(output: Any, t: Any) -> bool:
    """True when ``output`` does not depend on ``t`` (a compute tensor it reads, directly or
    not) in exact arithmetic: every shift of ``t`` cancels on the way to the output. False
    when the analysis cannot tell.
    """
    try:
        return _Analysis(t).tensor(output) is None
    except _Unknown:
        return False
