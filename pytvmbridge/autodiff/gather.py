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
from .linear import affine, var_key

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
    tensor: Any, indices: list[Any], value: Any, axes: list[Any], raxes: list[Any], name: str
) -> Any:
    """The contribution of one read to ``tensor``'s adjoint: a function of the adjoint's index
    (no variable left free) or a reduction tensor over the free variables."""
    ivs = [(iv, True) for iv in axes] + [(iv, False) for iv in raxes]
    by_key = {var_key(iv.var): (iv, data) for iv, data in ivs}

    # Which variable each index solves, decided once (it does not depend on x).
    plan: list[tuple[int, Any, int] | None] = []
    unsolved = set(by_key)
    for f in indices:
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

    def build(xs: tuple[Any, ...], free_vars: list[Any]) -> Any:
        solved: list[tuple[Any, Any]] = []
        conds: list[Any] = []
        for d, choice in enumerate(plan):
            if choice is None:
                continue
            key, v, c, others, consts = choice
            rest = None
            for term in [ov * oc if oc != 1 else ov for ov, oc in others] + list(consts):
                rest = term if rest is None else rest + term
            num = xs[d] if rest is None else xs[d] - rest
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
                and not others
                and not consts
                and _is_zero(lo)
                and _same(ext, tensor.shape[d])
            ):
                conds.append(sol >= lo)
                conds.append(sol < lo + ext)
            solved.append((v, sol))
        solved += [(iv.var, fv) for iv, fv in zip(free, free_vars, strict=False)]
        for d, (f, choice) in enumerate(zip(indices, plan, strict=False)):
            if choice is None:
                conds.append(f == xs[d])
        keys = {var_key(v) for v, _ in solved}
        conds = [_substitute_all(cnd, solved, keys) for cnd in conds]
        val = _core.simplify(_substitute_all(value, solved, keys))
        zero = _core.const(0, val.dtype)
        conds = [cnd for cnd in (_core.simplify(cnd) for cnd in conds) if not _is_true(cnd)]
        if conds:
            val = _core.if_then_else(_te.all(*conds) if len(conds) > 1 else conds[0], val, zero)
        return val

    if not free:
        return lambda *xs: build(xs, [])

    def body(*xs: Any) -> Any:
        rvs = [
            _te.reduce_axis((iv.dom.min, iv.dom.min + iv.dom.extent), name=f"{iv.var.name}_r")
            for iv in free
        ]
        return _te.sum(build(xs, [r.var for r in rvs]), axis=rvs)

    order = small_axes_first(tensor.shape)
    if order is None:
        return _te.compute(tensor.shape, body, name=name)
    # A reduction whose innermost axes are short (a convolution's weight gradient ends in its
    # 3x3 window) vectorizes and blocks badly: reduce into a layout with those axes outermost,
    # then transpose back (a copy of the small result).
    where = [order.index(d) for d in range(len(order))]
    inner = _te.compute(
        [tensor.shape[d] for d in order],
        lambda *ys: body(*[ys[w] for w in where]),
        name=f"{name}_t",
    )
    return _te.compute(tensor.shape, lambda *xs: inner[tuple(xs[d] for d in order)], name=name)


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


def _is_zero(e: Any) -> bool:
    return _core.expr_parts(e)[0] == "IntImm" and int(e) == 0


def _same(a: Any, b: Any) -> bool:
    return repr(a) == repr(b)


def _is_true(cnd: Any) -> bool:
    parts = _core.expr_parts(cnd)
    return parts[0] == "IntImm" and int(cnd) == 1
