// Helpers that build expressions with the user-level rules of API.md section 1 (the node make()
// functions only check; these pick the right node for the dtypes).
#pragma once

#include <cstdint>
#include <optional>

#include "ir/expr.h"

namespace ptb {

Expr make_const(DataType t, int64_t value);
Expr make_const(DataType t, double value);
Expr make_zero(DataType t);
Expr make_one(DataType t);
// Largest / smallest finite value of a scalar dtype (infinity for floats is not used: TVM uses
// the finite limits, and they survive float16 casts).
Expr max_value(DataType t);
Expr min_value(DataType t);

// A value of a constant integer (or bool) expression, if it is one.
std::optional<int64_t> as_const_int(const Expr& e);
std::optional<double> as_const_float(const Expr& e);
bool is_const_int(const Expr& e, int64_t value);

Expr cast(DataType t, Expr value);  // no-op when the dtype already matches

// Python's // and % on 64-bit constants (b != 0): what FloorDiv/FloorMod compute.
inline int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

// Python's // and % for integers; for floats floor(a / b) and a - floor(a / b) * b.
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
// C's / and % on integers.
Expr truncdiv(Expr a, Expr b);
Expr truncmod(Expr a, Expr b);
// True division; a TypeError for two integers (use // or astype).
Expr true_div(Expr a, Expr b);
Expr power(Expr a, Expr b);

// Python's & | ^ ~ << >>: bitwise on integers (Call intrinsics, expr.h), and for bool operands
// the logical nodes they always were (And, Or, NE, Not; shifts of bools are a TypeError).
// Operands must share a dtype; floats are a TypeError naming the operator.
Expr bitwise_and(Expr a, Expr b);
Expr bitwise_or(Expr a, Expr b);
Expr bitwise_xor(Expr a, Expr b);
Expr bitwise_not(Expr a);
Expr shift_left(Expr a, Expr b);
Expr shift_right(Expr a, Expr b);

// Logical and / or of several bool conditions (true / false when empty).
Expr all_of(const std::vector<Expr>& conds);
Expr any_of(const std::vector<Expr>& conds);
// The conditions of an And chain, in order: a && (b && c) gives a, b, c; e itself when it is
// not an And.
void split_conjuncts(const Expr& e, std::vector<Expr>* out);

// Index arithmetic on kIndexType / kOffsetType values that folds constants as it builds, so the
// lowered IR stays readable. Operands are cast to the wider of the two types.
Expr idx_add(Expr a, Expr b);
Expr idx_sub(Expr a, Expr b);
Expr idx_mul(Expr a, Expr b);
Expr idx_min(Expr a, Expr b);
Expr idx_max(Expr a, Expr b);

}  // namespace ptb
