"""One adjoint contribution as a gather: solve the read's indices for the consumer's variables.

For a read ``T[f_0(v), ..., f_n(v)]`` over the consumer's variables ``v`` (its axes and reduce
axes), each index ``f_d`` that is affine picks one unsolved variable (a data-parallel axis first,
so a convolution keeps its small kernel window as the reduction; a unit coefficient next) and
solves ``f_d(v) = x_d`` for it, with a divisibility condition for a stride. Indices that cannot
be solved become equality conditions, and every variable left unsolved is summed over. The result
reads ``adj_C`` at the solved position under the domain and divisibility conditions.
"""

from __future__ import annotations

from typing import Any

from .. import _core
from .. import te as _te
from ..topi.utils import accumulate_dtype
from .algebra import factor_out, sums_to_zero
from .linear import affine, free_vars, var_key

_LARGE = 1 << 30


def _extent(iv: Any) -> int:
    try:
        return int(iv.dom.extent)
    except (TypeError, ValueError):
        return _LARGE


def _substitute_all(e: Any, solved: list[tuple[Any, Any]], keys: set[int]) -> Any:
    """Substitutes solved variables until none is left (solutions may name later pivots)."""
    for _ in range(len(solved) + 1):
        e = _core.substitute(e, solved)
    return _core.simplify(e)


def gather_adjoint(
    tensor: Any,
    indices: list[Any],
    value: Any,
    axes: list[Any],
    raxes: list[Any],
    name: str,
    split: tuple[Any, Any] | None = None,
) -> Any:
    """The contribution of one read to ``tensor``'s adjoint: a function of the adjoint's index
    (no variable left free) or a reduction tensor over the free variables.

    ``split`` is ``(adj, d)`` with ``value == adj[axes] * d``: where ``d`` is safe to evaluate
    outside the consumer's domain, ``adj`` is read from a zero-padded copy instead of under
    bound conditions (a convolution's data gradient becomes a plain convolution of the padded
    head, which vectorizes and blocks like the forward one)."""
    ivs = [(iv, True) for iv in axes] + [(iv, False) for iv in raxes]
    by_key = {var_key(iv.var): (iv, data) for iv, data in ivs}
    # A run read along one index k as [k // c, k % c] (a flattened image): the pair of indices
    # is the one index k at position c * x_d1 + x_d2, so k is solved instead of summed over.
    pairs = _div_mod_pairs(tensor, indices)
    indices = list(indices)
    for d1, (d2, _, dividend) in pairs.items():
        indices[d1] = dividend
        indices[d2] = None

    def x_at(xs: tuple[Any, ...], d: int) -> Any:
        """The position index d is solved against: x_d, or c * x_d1 + x_d2 for a pair."""
        if d not in pairs:
            return xs[d]
        d2, c, _ = pairs[d]
        return xs[d] * c + xs[d2]

    # Which variable each index solves, decided once (it does not depend on x).
    plan: list[tuple[int, Any, int] | None] = []
    unsolved = set(by_key)
    for f in indices:
        if f is None:  # the remainder of a pair, solved with its quotient
            plan.append(None)
            continue
        # Over all variables: an index that still names an earlier pivot becomes a condition,
        # so every solution only names later pivots and the substitution terminates.
        form = affine(f, set(by_key))
        choice = None
        if form is not None and all(k in unsolved for k in form.coeffs):
            candidates = [(k, v, c) for k, (v, c) in form.coeffs.items()]
            if candidates:
                choice = min(
                    candidates,
                    key=lambda kvc: (
                        not by_key[kvc[0]][1],
                        abs(kvc[2]) != 1,
                        -_extent(by_key[kvc[0]][0]),
                    ),
                )
                unsolved.discard(choice[0])
                others = [(v, c) for k, (v, c) in form.coeffs.items() if k != choice[0]]
                choice = (*choice, others, form.rest)
        plan.append(choice)
    free = [by_key[k][0] for k in by_key if k in unsolved]
    # A free variable of extent one (the kept axis of layer_norm's statistics, (n, 1)) takes its
    # single value: summing over it would make the contribution a reduction, stored on its own.
    unit = [iv for iv in free if _extent(iv) == 1]
    free = [iv for iv in free if _extent(iv) != 1]

    pads: dict[Any, Any] = {}  # padded copies of the consumer's adjoint, made once

    def build(xs: tuple[Any, ...], free_vars: list[Any]) -> Any:
        solved: list[tuple[Any, Any]] = []
        conds: list[Any] = []
        bounds: list[Any] = []  # the adjoint's read position inside the consumer's domain
        bounded: set[int] = set()  # the consumer's axes those bounds are about
        for d, choice in enumerate(plan):
            if choice is None:
                continue
            key, v, c, others, consts = choice
            rest = None
            for term in [ov * oc if oc != 1 else ov for ov, oc in others] + list(consts):
                rest = term if rest is None else rest + term
            num = x_at(xs, d) if rest is None else x_at(xs, d) - rest
            if rest is None:
                rest = _core.const(0, num.dtype)
            if c == 1:
                sol = num
            elif c == -1:
                sol = rest - xs[d]
            else:
                sol = _te.floordiv(num, c)
                conds.append(_te.floormod(num, c) == 0)
            iv = by_key[key][0]
            lo, ext = iv.dom.min, iv.dom.extent
            # x_d already ranges over the consumer's axis when the read is the identity
            if not (
                c == 1
                and d not in pairs
                and not others
                and not consts
                and _is_zero(lo)
                and _same(ext, tensor.shape[d])
            ):
                if by_key[key][1]:
                    bounded.add(key)
                    bounds.append(sol >= lo)
                    bounds.append(sol < lo + ext)
                else:
                    conds.append(sol >= lo)
                    conds.append(sol < lo + ext)
            solved.append((v, sol))
        solved += [(iv.var, fv) for iv, fv in zip(free, free_vars, strict=False)]
        solved += [(iv.var, iv.dom.min) for iv in unit]
        ranged = conds + bounds  # the solved positions inside the consumer's domain
        for d, (f, choice) in enumerate(zip(indices, plan, strict=False)):
            if choice is None and f is not None:
                x_d = x_at(xs, d)
                if x_d.dtype != f.dtype:  # an index computed in int64
                    x_d = _core.cast(f.dtype, x_d)
                hit = f == x_d
                if ranged:
                    # f reads the index tensor at the solved positions: only inside the
                    # consumer's domain (an index tensor narrower than the data on another
                    # axis, gather's rule, was read past its end)
                    inside = _te.all(*ranged) if len(ranged) > 1 else ranged[0]
                    hit = _core.if_then_else(inside, hit, _core.const(0, "bool"))
                conds.append(hit)
        keys = {var_key(v) for v, _ in solved}
        padded = None
        if split is not None and bounded and _safe(split[1], bounded):
            ranges = _ranges(tensor, xs, free, free_vars)
            positions = [_substitute_all(a.var, solved, keys) for a in axes]
            padded = _padded_read(split[0], positions, ranges, pads)
        if padded is None:
            conds += bounds
            ranges = _ranges(tensor, xs, free, free_vars)
            val = _core.simplify(
                pad_guarded_reads(_substitute_all(value, solved, keys), ranges, pads)
            )
        else:
            d = _substitute_all(_as_expr(split[1], value), solved, keys)
            val = _core.simplify(padded * pad_guarded_reads(d, ranges, pads))
        conds = [_substitute_all(cnd, solved, keys) for cnd in conds]
        zero = _core.const(0, val.dtype)
        conds = [cnd for cnd in (_core.simplify(cnd) for cnd in conds) if not _is_true(cnd)]
        # bounds the index's own range already keeps (a reduce variable solved as x1 with
        # 0 <= x1 < its extent): a guard left there would mask every element of the gradient
        conds = [cnd for cnd in conds if not _holds(cnd, _ranges(tensor, xs, free, free_vars))]
        if conds:
            val = _core.if_then_else(_te.all(*conds) if len(conds) > 1 else conds[0], val, zero)
        return val

    if not free:
        return lambda *xs: build(xs, [])

    def reduce_axes() -> list[Any]:
        return [
            _te.reduce_axis((iv.dom.min, iv.dom.min + iv.dom.extent), name=f"{iv.var.name}_r")
            for iv in free
        ]

    factored = _factored(tensor, build, reduce_axes, name)
    if factored is not None:
        return factored

    # float16/bfloat16 terms are summed in float32, as the forward's reductions are (summed in
    # 16 bits, 65536 terms of 0.5 came to 1024 in float16 and 128 in bfloat16)
    acc = accumulate_dtype(tensor.dtype)

    def body(*xs: Any) -> Any:
        rvs = reduce_axes()
        return _te.sum(_widened(build(xs, [r.var for r in rvs]), acc), axis=rvs)

    order = small_axes_first(tensor.shape)
    if order is None:
        if acc == tensor.dtype:
            return _te.compute(tensor.shape, body, name=name)
        summed = _te.compute(tensor.shape, body, name=f"{name}_acc")
        return _te.compute(tensor.shape, lambda *xs: summed[xs].astype(tensor.dtype), name=name)
    # A reduction whose innermost axes are short (a convolution's weight gradient ends in its
    # 3x3 window) vectorizes and blocks badly: reduce into a layout with those axes outermost,
    # then transpose back (a copy of the small result).
    where = [order.index(d) for d in range(len(order))]
    inner = _te.compute(
        [tensor.shape[d] for d in order],
        lambda *ys: body(*[ys[w] for w in where]),
        name=f"{name}_t",
    )
    return _te.compute(
        tensor.shape,
        lambda *xs: _widened(inner[tuple(xs[d] for d in order)], tensor.dtype),
        name=name,
    )


def _widened(e: Any, dtype: str) -> Any:
    """``e`` cast to ``dtype`` where it has another dtype."""
    return e if e.dtype == dtype else e.astype(dtype)


def _div_mod_pairs(tensor: Any, indices: list[Any]) -> dict[int, tuple[int, int, Any]]:
    """Pairs of indices ``[.., e // c, .., e % c]`` (e possibly widened by a cast) where the
    remainder's axis is exactly c long, so each (quotient, remainder) position is one e:
    ``{d1: (d2, c, e)}`` with e unwidened (the same value)."""

    def split(f: Any, kind: str) -> tuple[Any, int] | None:
        parts = _core.expr_parts(f)
        if parts[0] != kind or _core.expr_parts(parts[2])[0] != "IntImm" or int(parts[2]) <= 0:
            return None
        e = parts[1]
        if _core.expr_parts(e)[0] == "Cast":
            inner = _core.expr_parts(e)[1]
            if not inner.dtype.startswith("int"):
                return None
            e = inner
        return e, int(parts[2])

    pairs: dict[int, tuple[int, int, Any]] = {}
    used: set[int] = set()
    for d1, f1 in enumerate(indices):
        q = split(f1, "FloorDiv")
        if q is None:
            continue
        for d2, f2 in enumerate(indices):
            r = split(f2, "FloorMod")
            if d2 in used or d2 == d1 or r is None or r[1] != q[1] or not _same(r[0], q[0]):
                continue
            try:
                exact = int(tensor.shape[d2]) == q[1]
            except (TypeError, ValueError):
                exact = False
            if exact:
                pairs[d1] = (d2, q[1], q[0])
                used.update((d1, d2))
                break
    return pairs


def _factored(tensor: Any, build: Any, reduce_axes: Any, name: str) -> Any:
    """The contribution as ``outside(x) * R[x]`` when factors of the summand do not depend on
    the summed variables: ``R`` reduces only the rest (``sum_j g[i, j] * y[i, j] / s[i]`` is
    ``(sum_j g[i, j] * y[i, j]) / s[i]``: one division per row, and the factors outside can
    meet others of the same kind where the contribution is read). None when nothing factors."""
    xs0 = [_te.var(f"x{d}") for d in range(len(tensor.shape))]
    rvs = reduce_axes()
    rkeys = {var_key(r.var) for r in rvs}
    val = build(tuple(xs0), [r.var for r in rvs])
    cond = None
    parts = _core.expr_parts(val)
    if parts[0] == "Call" and parts[1] == "if_then_else":
        # a guard that does not depend on the summed variables (a size-1 axis of kept
        # statistics, x1 == 0) guards both factors; any other keeps the reduction as it is
        cond, val, other = parts[2]
        if free_vars(cond) & rkeys or not _is_zero_float(other):
            return None
    split = factor_out(val, [r.var for r in rvs])
    if sums_to_zero(val if split is None else split[1], rvs):
        zero = _core.const(0, val.dtype)
        return lambda *xs: zero
    if split is None:
        return None
    outside, inside = split
    if cond is not None:
        zero = _core.const(0, val.dtype)
        outside = _core.if_then_else(cond, outside, zero)
        inside = _core.if_then_else(cond, inside, zero)

    def at(e: Any, xs: Any) -> Any:
        return _core.substitute(e, list(zip(xs0, xs, strict=True)))

    acc = accumulate_dtype(val.dtype)  # (see gather_adjoint's body)
    inner = _te.compute(
        tensor.shape,
        lambda *xs: _te.sum(_widened(at(inside, xs), acc), axis=rvs),
        name=f"{name}_sum",
    )
    return lambda *xs: at(outside, xs) * _widened(inner[tuple(xs)], val.dtype)


def _is_zero_float(e: Any) -> bool:
    return _core.expr_parts(e)[0] in ("FloatImm", "IntImm") and float(e) == 0.0


# Axes shorter than this are moved outermost in a reduction's layout (less than half an
# AVX-512 float32 vector: vectorizing or register-blocking along them wastes most lanes).
_SHORT = 8


def small_axes_first(shape: Any) -> list[int] | None:
    """The axis order that puts short constant axes first, when an axis after them is long; None
    when the shape is fine as it is (or not constant).

    Example:
        >>> small_axes_first((64, 32, 3, 3)), small_axes_first((8, 32, 28, 28))
        ([2, 3, 0, 1], None)
    """
    extents = []
    for d in shape:
        try:
            extents.append(int(d))
        except (TypeError, ValueError):
            return None
    short = [d for d, e in enumerate(extents) if e < _SHORT]
    long = [d for d, e in enumerate(extents) if e >= _SHORT]
    if not short or not long or max(short) < min(long):
        return None
    return short + long


def _as_expr(d: Any, like: Any) -> Any:
    return _core.const(d, like.dtype) if isinstance(d, float) else d


_COMPARISONS = ("EQ", "NE", "LT", "LE", "GT", "GE")


def _has_read(e: Any) -> bool:
    parts = _core.expr_parts(e)
    if parts[0] == "TensorRead":
        return True
    return any(_has_read(q) for q in _children(parts))


def _children(parts: Any) -> list[Any]:
    out = []
    for p in parts[1:]:
        for q in p if isinstance(p, list) else [p]:
            if isinstance(q, _core.Expr) and not isinstance(q, _core.IterVar):
                out.append(q)
    return out


def _safe(d: Any, keys: set[int]) -> bool:
    """Whether ``d`` can be evaluated with the variables ``keys`` out of their range: they
    appear only in comparisons without tensor reads (no read out of bounds, no division by a
    zero that multiplied by the padding's zero would give NaN)."""
    if isinstance(d, float):
        return True
    parts = _core.expr_parts(d)
    if parts[0] == "Var":
        return var_key(d) not in keys
    if parts[0] in _COMPARISONS and not _has_read(d):
        return True
    return all(_safe(q, keys) for q in _children(parts))


def _ranges(tensor: Any, xs: Any, free: list[Any], free_vars: list[Any]) -> dict[int, Any]:
    """(min, max) of the adjoint's index variables and the free variables, where constant."""
    out: dict[int, Any] = {}
    for x, n in zip(xs, tensor.shape, strict=False):
        try:
            out[var_key(x)] = (0, int(n) - 1)
        except (TypeError, ValueError):
            pass
    for iv, fv in zip(free, free_vars, strict=False):
        try:
            lo = int(iv.dom.min)
            out[var_key(fv)] = (lo, lo + int(iv.dom.extent) - 1)
        except (TypeError, ValueError):
            pass
    return out


def _interval(e: Any, ranges: dict[int, Any]) -> tuple[int, int] | None:
    form = affine(e, set(ranges))
    if form is None:
        return None
    try:
        base = sum(int(_core.simplify(r)) for r in form.rest)
    except (TypeError, ValueError):
        return None
    lo = hi = base
    for key, (_, c) in form.coeffs.items():
        if key not in ranges:
            return None
        a, b = ranges[key]
        lo += min(c * a, c * b)
        hi += max(c * a, c * b)
    return lo, hi


def _padded_read(adj: Any, positions: list[Any], ranges: Any, pads: dict[Any, Any]) -> Any:
    """``adj`` read at ``positions`` through a copy padded with zeros wide enough for every
    position; None where a position's range is not constant."""
    before, after = [], []
    for pos, n in zip(positions, adj.shape, strict=True):
        span = _interval(pos, ranges)
        try:
            n = int(n)
        except (TypeError, ValueError):
            return None
        if span is None:
            return None
        before.append(max(0, -span[0]))
        after.append(max(0, span[1] - (n - 1)))
    if not any(before) and not any(after):  # always inside: no copy needed
        return adj[tuple(positions)]
    key = (adj, tuple(before), tuple(after))
    padded = pads.get(key)
    if padded is None:
        shape = [int(n) + b + a for n, b, a in zip(adj.shape, before, after, strict=True)]
        zero = _core.const(0, adj.dtype)

        def body(*j: Any) -> Any:
            inside = []
            for jj, b, a, n in zip(j, before, after, adj.shape, strict=True):
                if b:
                    inside.append(jj >= b)
                if a:
                    inside.append(jj < b + int(n))
            src = adj[tuple(jj - b if b else jj for jj, b in zip(j, before, strict=True))]
            cond = _te.all(*inside) if len(inside) > 1 else inside[0]
            return _core.if_then_else(cond, src, zero)

        padded = pads[key] = _te.compute(shape, body, name=f"{adj.name}_pad")
    return padded[tuple(p + b if b else p for p, b in zip(positions, before, strict=True))]


def _bound_clauses(cond: Any, out: list[tuple[str, Any, int]]) -> bool:
    """Flattens a conjunction of ``expr >= c`` / ``expr < c`` (either orientation, constant c)
    into (kind, expr, c) with kind "lo" (expr >= c) or "hi" (expr < c); False if it is not one."""
    parts = _core.expr_parts(cond)
    kind = parts[0]
    if kind == "And":
        return _bound_clauses(parts[1], out) and _bound_clauses(parts[2], out)
    if kind not in ("GE", "GT", "LE", "LT"):
        return False
    a, b = parts[1], parts[2]
    if _core.expr_parts(b)[0] == "IntImm":
        c = int(b)
        clause = {"GE": ("lo", c), "GT": ("lo", c + 1), "LT": ("hi", c), "LE": ("hi", c + 1)}
        side, bound = clause[kind]
        out.append((side, a, bound))
        return True
    if _core.expr_parts(a)[0] == "IntImm":  # c >= expr is expr <= c, etc.
        c = int(a)
        clause = {"LE": ("lo", c), "LT": ("lo", c + 1), "GT": ("hi", c), "GE": ("hi", c + 1)}
        side, bound = clause[kind]
        out.append((side, b, bound))
        return True
    return False


def _guarded_read(e: Any) -> tuple[Any, list[Any]] | None:
    """``if_then_else(inside(T, idx), T[idx], 0)`` -> (T, idx): a read that is zero outside T,
    written as bound checks of its own indices (a convolution's zero padding)."""
    parts = _core.expr_parts(e)
    if parts[0] != "Call" or parts[1] != "if_then_else":
        return None
    cond, then, other = parts[2]
    other_parts = _core.expr_parts(other)
    if other_parts[0] not in ("FloatImm", "IntImm") or float(other) != 0.0:
        return None
    read = _core.expr_parts(then)
    if read[0] != "TensorRead":
        return None
    tensor, idx = read[1], read[2]
    clauses: list[tuple[str, Any, int]] = []
    if not _bound_clauses(cond, clauses):
        return None
    printed = [repr(_core.simplify(i)) for i in idx]
    for side, expr, bound in clauses:
        text = repr(_core.simplify(expr))
        if text not in printed:
            return None
        d = printed.index(text)
        try:
            n = int(tensor.shape[d])
        except (TypeError, ValueError):
            return None
        if bound != (0 if side == "lo" else n):
            return None
    return tensor, list(idx)


_REBUILD = {
    "Add": lambda a, b: a + b,
    "Sub": lambda a, b: a - b,
    "Mul": lambda a, b: a * b,
    "Div": lambda a, b: a / b,
}


def pad_guarded_reads(e: Any, ranges: dict[int, Any], pads: dict[Any, Any]) -> Any:
    """``e`` with every zero-guarded read (see :func:`_guarded_read`) replaced by a read of a
    zero-padded copy of the tensor, without the condition: the reduction's body is then a plain
    product that vectorizes (what a convolution's weight gradient reads of its input)."""
    if isinstance(e, float):
        return e
    parts = _core.expr_parts(e)
    kind = parts[0]
    if kind in _REBUILD:
        a = pad_guarded_reads(parts[1], ranges, pads)
        b = pad_guarded_reads(parts[2], ranges, pads)
        if a is parts[1] and b is parts[2]:
            return e
        return _REBUILD[kind](a, b)
    if kind == "Call" and parts[1] == "if_then_else":
        found = _guarded_read(e)
        if found is not None:
            padded = _padded_read(found[0], found[1], ranges, pads)
            if padded is not None:
                return padded
    return e


def _holds(cnd: Any, ranges: dict[int, Any]) -> bool:
    """Whether a bound ``e >= c`` / ``e < c`` (constant c) holds over the variables' ranges."""
    parts = _core.expr_parts(cnd)
    if parts[0] == "EQ":  # an index equal to a constant it cannot differ from (a unit axis)
        span = _interval(parts[1] - parts[2], ranges)
        return span == (0, 0)
    clauses: list[tuple[str, Any, int]] = []
    if not _bound_clauses(cnd, clauses):
        return False
    for side, e, bound in clauses:
        span = _interval(e, ranges)
        if span is None or (span[0] < bound if side == "lo" else span[1] >= bound):
            return False
    return True


def _is_zero(e: Any) -> bool:
    return _core.expr_parts(e)[0] == "IntImm" and int(e) == 0


def _same(a: Any, b: Any) -> bool:
    return repr(a) == repr(b)


def _is_true(cnd: Any) -> bool:
    parts = _core.expr_parts(cnd)
    return parts[0] == "IntImm" and int(cnd) == 1
