"""Products and quotients of factors, for simplifying derived gradients.

A derived gradient is mostly products: ``adj_C[i] * d body / d T[...]``. Seen as a monomial
(a constant times numerator factors over denominator factors), two rewrites become simple:

* factors that do not depend on a reduction's variables move out of the reduction
  (``sum_j g[i, j] * y[i, j] / s[i]`` is ``(sum_j g[i, j] * y[i, j]) / s[i]``), and
* factors that together form the body of a tensor the forward computed are replaced by a read
  of that tensor (``exp(x[i, j] - m[i]) / s[i]`` is ``softmax[i, j]``), so the gradient reads a
  forward result instead of recomputing it.

Both hold in exact arithmetic; in floating point they change rounding only (they reassociate
products), as PyTorch's hand-written backward formulas do.
"""

from __future__ import annotations

from typing import Any

from .. import _core
from .linear import free_vars, var_key

Expr = Any


class Monomial:
    """``coef * prod(num) / prod(den)``."""

    def __init__(self, coef: float, num: list[Expr], den: list[Expr]) -> None:
        self.coef = coef
        self.num = num
        self.den = den

    def build(self, dtype: str) -> Expr:
        out = None
        for f in self.num:
            out = f if out is None else out * f
        if out is None:
            out = _core.const(self.coef, dtype)
        elif self.coef != 1.0:
            out = _core.const(self.coef, dtype) * out
        for f in self.den:
            out = out / f
        return out


def _float_const(e: Expr) -> float | None:
    if isinstance(e, float):
        return e
    if _core.expr_parts(e)[0] == "FloatImm":
        return float(e)
    return None


def flatten(e: Expr) -> Monomial:
    """``e`` as a monomial (a single factor when it is not a product or quotient)."""
    if isinstance(e, float):
        return Monomial(e, [], [])
    parts = _core.expr_parts(e)
    kind = parts[0]
    c = _float_const(e)
    if c is not None:
        return Monomial(c, [], [])
    if kind == "Mul":
        a, b = flatten(parts[1]), flatten(parts[2])
        return Monomial(a.coef * b.coef, a.num + b.num, a.den + b.den)
    if kind == "Div":
        a, b = flatten(parts[1]), flatten(parts[2])
        if b.coef == 0.0:
            return Monomial(1.0, [e], [])
        return Monomial(a.coef / b.coef, a.num + b.den, a.den + b.num)
    if kind == "Sub" and _float_const(parts[1]) == 0.0:  # -x
        inner = flatten(parts[2])
        return Monomial(-inner.coef, inner.num, inner.den)
    return Monomial(1.0, [e], [])


def _key(e: Expr) -> str:
    return repr(_core.simplify(e))


def _mentions(e: Expr, keys: set[int]) -> bool:
    return bool(free_vars(e) & keys)


def factor_out(e: Expr, variables: list[Any]) -> tuple[Expr, Expr] | None:
    """``(outside, inside)`` with ``e == outside * inside`` where ``outside`` does not depend on
    ``variables`` (a reduction's variables), or None when nothing (or everything) moves out."""
    keys = {var_key(v) for v in variables}
    m = flatten(e)
    num_in = [f for f in m.num if _mentions(f, keys)]
    den_in = [f for f in m.den if _mentions(f, keys)]
    num_out = [f for f in m.num if not _mentions(f, keys)]
    den_out = [f for f in m.den if not _mentions(f, keys)]
    # only worth a stage of its own when a read moves out (a constant or a guard stays in)
    if not any(_has_read(f) for f in num_out + den_out):
        return None
    if not num_in and not den_in:
        return None
    dtype = e.dtype
    return Monomial(m.coef, num_out, den_out).build(dtype), Monomial(1.0, num_in, den_in).build(
        dtype
    )


def _has_read(e: Expr) -> bool:
    found: list[tuple[Any, list[Expr]]] = []
    _all_reads(e, found)
    return bool(found)


def _reads_of(e: Expr, tensor: Any, out: list[list[Expr]]) -> None:
    parts = _core.expr_parts(e)
    if parts[0] == "TensorRead":
        if parts[1] == tensor:
            out.append(list(parts[2]))
        for i in parts[2]:
            _reads_of(i, tensor, out)
        return
    for p in parts[1:]:
        for q in p if isinstance(p, list) else [p]:
            if isinstance(q, _core.Expr) and not isinstance(q, _core.IterVar):
                _reads_of(q, tensor, out)


class Saved:
    """A forward tensor whose values the gradient may read: its elementwise body as a monomial
    over its axes, an anchor read (a tensor read at exactly the axes, in some order) to find the
    index it is used at, and the tensor to read instead (the tensor itself, or a placeholder
    holding its values)."""

    def __init__(self, tensor: Any, value: Any) -> None:
        self.value = value
        self.ok = False
        op = tensor.op
        body = op.body[0]
        if _core.expr_parts(body)[0] == "Reduce":
            return
        self.axes = [a.var for a in op.axis]
        self.body = body
        m = flatten(body)
        if len(m.num) + len(m.den) < 2:  # a single factor: nothing to gain
            return
        axis_keys = [var_key(v) for v in self.axes]
        for f in m.num + m.den:
            found: list[tuple[Any, list[Expr]]] = []
            _all_reads(f, found)
            for t, idx in found:
                keys = [var_key(i) if _core.expr_parts(i)[0] == "Var" else None for i in idx]
                if sorted(k for k in keys if k is not None) == sorted(axis_keys) and len(
                    idx
                ) == len(axis_keys):
                    self.anchor = (t, [axis_keys.index(k) for k in keys])
                    self.ok = True
                    return

    def at(self, idx: list[Expr]) -> Monomial:
        body = _core.substitute(self.body, list(zip(self.axes, idx, strict=True)))
        return flatten(body)


def _all_reads(e: Expr, out: list[tuple[Any, list[Expr]]]) -> None:
    parts = _core.expr_parts(e)
    if parts[0] == "TensorRead":
        out.append((parts[1], list(parts[2])))
        return
    for p in parts[1:]:
        for q in p if isinstance(p, list) else [p]:
            if isinstance(q, _core.Expr) and not isinstance(q, _core.IterVar):
                _all_reads(q, out)


def _take(have: list[str], want: list[str]) -> list[int] | None:
    """Positions in ``have`` covering the multiset ``want``, or None."""
    used: list[int] = []
    for w in want:
        for k, h in enumerate(have):
            if h == w and k not in used:
                used.append(k)
                break
        else:
            return None
    return used


def use_saved(e: Expr, saved: list[Saved]) -> Expr:
    """``e`` with products that equal a saved tensor's body replaced by a read of it."""
    if isinstance(e, float) or not saved:
        return e
    parts = _core.expr_parts(e)
    kind = parts[0]
    if kind in ("Add", "Sub"):
        a, b = use_saved(parts[1], saved), use_saved(parts[2], saved)
        if a is parts[1] and b is parts[2]:
            return e
        return a + b if kind == "Add" else a - b
    if kind not in ("Mul", "Div"):
        return e
    m = flatten(e)
    changed = False
    for s in saved:
        while True:
            found: list[list[Expr]] = []
            for f in m.num + m.den:
                _reads_of(f, s.anchor[0], found)
            hit = False
            for read_idx in found:
                idx = [None] * len(s.anchor[1])
                for pos, axis in enumerate(s.anchor[1]):
                    idx[axis] = read_idx[pos]
                body = s.at(idx)
                if body.coef == 0.0:
                    continue
                have_num = [_key(f) for f in m.num]
                have_den = [_key(f) for f in m.den]
                pn = _take(have_num, [_key(f) for f in body.num])
                pd = _take(have_den, [_key(f) for f in body.den])
                if pn is None or pd is None:
                    continue
                num = [f for k, f in enumerate(m.num) if k not in pn]
                den = [f for k, f in enumerate(m.den) if k not in pd]
                m = Monomial(m.coef / body.coef, [*num, s.value[tuple(idx)]], den)
                hit = changed = True
                break
            if not hit:
                break
    return m.build(e.dtype) if changed else e


# Stand-ins for summed variables, so that two sums over the same range compare equal whatever
# their variables are called.
_CANONICAL: list[Any] = []


def _canonical(n: int) -> list[Any]:
    from .. import te as _te

    while len(_CANONICAL) < n:
        _CANONICAL.append(_te.var(f"sum_{len(_CANONICAL)}"))
    return _CANONICAL[:n]


def _linear_terms(e: Expr, out: list[tuple[float, Expr | None]], scale: float) -> None:
    """``e`` as ``sum(coef * factor)`` (``factor`` None for a constant) over its additions."""
    parts = _core.expr_parts(e)
    if parts[0] in ("Add", "Sub"):
        _linear_terms(parts[1], out, scale)
        _linear_terms(parts[2], out, scale if parts[0] == "Add" else -scale)
        return
    m = flatten(e)
    if not m.num and not m.den:
        out.append((scale * m.coef, None))
    elif len(m.num) == 1 and not m.den:
        f = m.num[0]
        if _core.expr_parts(f)[0] in ("Add", "Sub"):
            _linear_terms(f, out, scale * m.coef)
        else:
            out.append((scale * m.coef, f))
    else:
        out.append((scale * m.coef, Monomial(1.0, m.num, m.den).build(e.dtype)))


def _sum_key(source: Expr, raxes: list[Any]) -> str | None:
    """A printed key of ``sum over raxes of source``, the same for any names of the variables."""
    ranges = []
    for iv in raxes:
        try:
            ranges.append((int(iv.dom.min), int(iv.dom.extent)))
        except (TypeError, ValueError):
            return None
    names = _canonical(len(raxes))
    renamed = _core.substitute(source, [(iv.var, v) for iv, v in zip(raxes, names, strict=True)])
    return f"sum {ranges} {_key(renamed)}"


def _expand(
    coef: float, f: Expr, totals: dict[str, float], depth: int, raxes: list[Any] | None
) -> bool:
    """Adds ``coef * f`` to ``totals`` (key -> coefficient), with ``f`` summed over ``raxes``
    when it depends on them and replaced by its tensor's body when that helps comparing."""
    from .. import te as _te

    keys = {var_key(iv.var) for iv in raxes} if raxes else set()
    if raxes and _mentions(f, keys):
        if _core.expr_parts(f)[0] != "TensorRead":
            return False
        key = _sum_key(f, raxes)
        if key is None:
            return False
        totals[key] = totals.get(key, 0.0) + coef
        return True
    if raxes:  # constant over the sum: counted once per summed element
        for iv in raxes:
            try:
                coef *= int(iv.dom.extent)
            except (TypeError, ValueError):
                return False
    parts = _core.expr_parts(f)
    if depth > 0 and parts[0] == "TensorRead" and isinstance(parts[1].op, _te.ComputeOp):
        op = parts[1].op
        if op.num_outputs == 1:
            pairs = [(a.var, i) for a, i in zip(op.axis, parts[2], strict=True)]
            body = op.body[0]
            bp = _core.expr_parts(body)
            if bp[0] == "Reduce":
                if bp[1] == "sum" and _core.expr_parts(bp[2])[0] == "TensorRead":
                    cond = bp[4]
                    if cond is None or _core.expr_parts(cond)[0] == "IntImm":
                        key = _sum_key(_core.substitute(bp[2], pairs), list(bp[3]))
                        if key is not None:
                            totals[key] = totals.get(key, 0.0) + coef
                            return True
            else:
                terms: list[tuple[float, Expr | None]] = []
                _linear_terms(_core.substitute(body, pairs), terms, coef)
                return all(_add_term(c, t, totals, depth - 1) for c, t in terms)
    key = _key(f)
    totals[key] = totals.get(key, 0.0) + coef
    return True


def _add_term(c: float, t: Expr | None, totals: dict[str, float], depth: int) -> bool:
    if t is None:
        totals["1"] = totals.get("1", 0.0) + c
        return True
    return _expand(c, t, totals, depth, None)


def sums_to_zero(e: Expr, raxes: list[Any]) -> bool:
    """True when ``sum over raxes of e`` is zero in exact arithmetic because ``e`` is a linear
    combination whose sum cancels, such as ``sum_k (x[i, k] - mean[i])`` where
    ``mean[i] = sum_k x[i, k] / n`` (the derivative of a variance with respect to its mean)."""
    terms: list[tuple[float, Expr | None]] = []
    _linear_terms(e, terms, 1.0)
    if len(terms) < 2:
        return False
    totals: dict[str, float] = {}
    for c, t in terms:
        if t is None:
            return False
        if not _expand(c, t, totals, 3, raxes):
            return False
    scale = max(1.0, *(abs(c) for c, _ in terms))
    return all(abs(v) <= 1e-9 * scale for v in totals.values())
