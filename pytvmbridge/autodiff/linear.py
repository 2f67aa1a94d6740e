"""Affine forms of index expressions: ``sum(coeff[v] * v) + rest`` over chosen variables.

Used to turn the scatter of a naive adjoint into a gather: an index ``h * 2 + kh`` read by a
convolution is solved for ``h`` (the gradient reads ``(x - kh) / 2`` where it divides).
"""

from __future__ import annotations

from typing import Any

from .. import _core

Expr = Any


class Affine:
    """``sum(coeffs[k] * var_k) + sum(rest)``; ``coeffs`` maps a variable key to (var, int)."""

    def __init__(
        self, coeffs: dict[int, tuple[Expr, int]] | None = None, rest: list[Expr] | None = None
    ):
        self.coeffs = coeffs or {}
        self.rest = rest or []

    def scaled(self, k: int) -> Affine:
        return Affine(
            {key: (v, c * k) for key, (v, c) in self.coeffs.items()}, [r * k for r in self.rest]
        )

    def plus(self, other: Affine) -> Affine:
        coeffs = dict(self.coeffs)
        for key, (v, c) in other.coeffs.items():
            old = coeffs.get(key, (v, 0))[1]
            if old + c == 0:
                coeffs.pop(key, None)
            else:
                coeffs[key] = (v, old + c)
        return Affine(coeffs, self.rest + other.rest)

    def rest_expr(self, dtype: str) -> Expr:
        out = _core.const(0, dtype)
        for r in self.rest:
            out = out + r
        return out


def var_key(v: Expr) -> int:
    """Variables are compared by node identity (the wrapper's hash is the node's address)."""
    return hash(v)


def free_vars(e: Expr, out: set[int] | None = None) -> set[int]:
    out = set() if out is None else out
    parts = _core.expr_parts(e)
    if parts[0] == "Var":
        out.add(var_key(e))
        return out
    for p in parts[1:]:
        if isinstance(p, list):
            for q in p:
                if isinstance(q, _core.Expr):
                    free_vars(q, out)
        elif isinstance(p, _core.Expr):
            free_vars(p, out)
    return out


def affine(e: Expr, variables: set[int]) -> Affine | None:
    """The affine form of integer expression ``e`` in ``variables``, or None if it is not one
    (a product of two variables, a division of one, a data-dependent index...)."""
    parts = _core.expr_parts(e)
    kind = parts[0]
    if not (free_vars(e) & variables):
        return Affine(rest=[e])
    if kind == "Var":
        return Affine({var_key(e): (e, 1)})
    if kind in ("Add", "Sub"):
        a, b = affine(parts[1], variables), affine(parts[2], variables)
        if a is None or b is None:
            return None
        return a.plus(b if kind == "Add" else b.scaled(-1))
    if kind == "Mul":
        for x, y in ((parts[1], parts[2]), (parts[2], parts[1])):
            if _core.expr_parts(y)[0] == "IntImm":
                a = affine(x, variables)
                return None if a is None else a.scaled(int(y))
        return None
    return None
