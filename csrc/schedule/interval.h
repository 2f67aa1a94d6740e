// Interval arithmetic over integer index expressions, the core of bound inference: which values
// an index takes while some loop variables run over their ranges and the others stay fixed.
//
// Bounds are kept as affine forms over opaque terms rather than as plain expressions so that the
// extent of a region, hi - lo + 1, cancels exactly: [x*32, x*32 + 31] has the constant extent 32,
// which later lets the loops over it unroll and vectorize.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/expr.h"

namespace ptb {

// sum(coefficient * term) + constant, where a term is any integer sub-expression that is not
// affine itself (a variable, a floordiv, a min...). Terms are compared structurally.
class LinearForm {
 public:
  LinearForm() = default;
  explicit LinearForm(int64_t constant) : constant_(constant) {}
  // Expands +, -, multiplication by a constant and widening integer casts.
  static LinearForm of(const Expr& e);
  static LinearForm term(const Expr& e);

  LinearForm operator+(const LinearForm& o) const;
  LinearForm operator-(const LinearForm& o) const;
  LinearForm operator*(int64_t k) const;

  bool is_constant() const { return terms_.empty(); }
  int64_t constant() const { return constant_; }
  const std::vector<std::pair<Expr, int64_t>>& terms() const { return terms_; }
  // floor(this / k) for k > 0: the multiples of k divide exactly, the rest stays one floordiv term.
  LinearForm floor_div(int64_t k, DataType t) const;
  // this mod k when the form is k * (something) + constant, else nothing.
  std::optional<int64_t> const_mod(int64_t k) const;
  Expr to_expr(DataType t) const;

 private:
  void add_term(const Expr& e, int64_t coeff);
  std::vector<std::pair<Expr, int64_t>> terms_;
  int64_t constant_ = 0;
};

// The closed interval [lo, hi]; unbounded when nothing is known about the expression.
struct Interval {
  LinearForm lo, hi;
  bool bounded = false;
  static Interval of(LinearForm lo, LinearForm hi) { return {std::move(lo), std::move(hi), true}; }
  static Interval point(const LinearForm& f) { return {f, f, true}; }
  static Interval unbounded() { return {}; }
};

// Intervals of the variables that vary, keyed by their Var node; every other variable is fixed.
using VarIntervals = std::unordered_map<const ExprNode*, Interval>;

Interval eval_interval(const Expr& e, const VarIntervals& vars);
Interval interval_union(const Interval& a, const Interval& b, DataType t);
LinearForm form_min(const LinearForm& a, const LinearForm& b, DataType t);
LinearForm form_max(const LinearForm& a, const LinearForm& b, DataType t);

// Constant bounds of f when its terms have constant intervals under `vars` (loop variables with
// constant extents); nothing when a term is unknown (a symbolic size, say).
std::optional<int64_t> const_lower_bound(const LinearForm& f, const VarIntervals& vars);
std::optional<int64_t> const_upper_bound(const LinearForm& f, const VarIntervals& vars);

// Whether two expressions have the same structure (variables and buffers by identity).
bool structurally_equal(const Expr& a, const Expr& b);

}  // namespace ptb
