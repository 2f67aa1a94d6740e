// Symbolic integers for sizes, ranges and tensor indices: an integer constant plus a sum of
// atoms with integer coefficients, where an atom is any integer expression treated as an
// unknown (a size Var, an index variable, or an opaque min/floordiv that did not simplify).
//
// Keeping sizes in this form rather than as raw Exprs is what lets range inference cancel terms
// (`H - 1 - (KH - 1)` is `H - KH`), decide `lo == 0` statically and read off the coefficient of
// an index variable. Arithmetic on the constants is overflow-checked (a UserError, never UB).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/expr.h"

namespace ptb::tc {

class SymInt {
 public:
  SymInt() = default;
  SymInt(int64_t constant) : constant_(constant) {}  // NOLINT: constants convert implicitly
  // An unknown: `e` must be a scalar integer expression.
  static SymInt atom(Expr e);

  bool is_const() const { return terms_.empty(); }
  int64_t constant() const { return constant_; }
  const std::vector<std::pair<Expr, int64_t>>& terms() const { return terms_; }
  // The coefficient of `atom` (compared by identity), 0 when absent.
  int64_t coefficient(const Expr& atom) const;
  // This value with the term of `atom` removed.
  SymInt without(const Expr& atom) const;

  SymInt operator+(const SymInt& o) const;
  SymInt operator-(const SymInt& o) const;
  SymInt operator-() const;
  SymInt operator*(int64_t c) const;
  // The product; an opaque atom unless one side is a constant.
  static SymInt mul(const SymInt& a, const SymInt& b);
  // Floor and ceiling division by a positive constant; exact when every coefficient divides.
  SymInt floordiv(int64_t c) const;
  SymInt ceildiv(int64_t c) const;
  // Picks a side when the difference is a constant, else an opaque min/max.
  static SymInt min(const SymInt& a, const SymInt& b);
  static SymInt max(const SymInt& a, const SymInt& b);

  // True only when provable from the form alone (the difference is a constant).
  bool provably_le(const SymInt& o) const;
  bool provably_equal(const SymInt& o) const;

  // The value as an index expression (int32). Throws a UserError when a constant does not fit.
  Expr to_expr() const;
  // Readable text for messages: "H - KH + 1", "floordiv(H - KH, 2) + 1".
  std::string str() const;

 private:
  void add_term(const Expr& atom, int64_t coef);
  int64_t constant_ = 0;
  std::vector<std::pair<Expr, int64_t>> terms_;
};

// Readable text of the integer expressions SymInt builds (for messages).
std::string index_expr_str(const Expr& e);

// Overflow-checked int64 arithmetic; a UserError (ValueError) on overflow.
int64_t checked_add(int64_t a, int64_t b);
int64_t checked_mul(int64_t a, int64_t b);
int64_t checked_neg(int64_t a);
// Floor division and ceiling division of a by b > 0.
int64_t floor_div(int64_t a, int64_t b);
int64_t ceil_div(int64_t a, int64_t b);

}  // namespace ptb::tc
