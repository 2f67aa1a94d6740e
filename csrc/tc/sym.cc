#include "tc/sym.h"

#include <limits>

#include "ir/op.h"
#include "support/error.h"
#include "tc/index_type.h"

namespace ptb::tc {

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) value_error("integer overflow in size arithmetic");
  return r;
}

int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) value_error("integer overflow in size arithmetic");
  return r;
}

int64_t checked_neg(int64_t a) { return checked_mul(a, -1); }

int64_t floor_div(int64_t a, int64_t b) {
  PTB_ICHECK(b > 0, "floor_div by ", b);
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

int64_t ceil_div(int64_t a, int64_t b) {
  PTB_ICHECK(b > 0, "ceil_div by ", b);
  int64_t q = a / b;
  return (a % b != 0 && a > 0) ? q + 1 : q;
}

SymInt SymInt::atom(Expr e) {
  PTB_ICHECK(e.defined() && e.dtype().is_integer() && e.dtype().is_scalar(),
             "a SymInt atom must be a scalar integer");
  if (auto c = as_const_int(e)) return SymInt(*c);
  SymInt s;
  s.terms_.push_back({std::move(e), 1});
  return s;
}

int64_t SymInt::coefficient(const Expr& atom) const {
  for (const auto& [a, c] : terms_) {
    if (a.same_as(atom)) return c;
  }
  return 0;
}

SymInt SymInt::without(const Expr& atom) const {
  SymInt r = *this;
  r.terms_.clear();
  for (const auto& t : terms_) {
    if (!t.first.same_as(atom)) r.terms_.push_back(t);
  }
  return r;
}

void SymInt::add_term(const Expr& atom, int64_t coef) {
  for (auto it = terms_.begin(); it != terms_.end(); ++it) {
    if (it->first.same_as(atom)) {
      it->second = checked_add(it->second, coef);
      if (it->second == 0) terms_.erase(it);
      return;
    }
  }
  if (coef != 0) terms_.push_back({atom, coef});
}

SymInt SymInt::operator+(const SymInt& o) const {
  SymInt r = *this;
  r.constant_ = checked_add(constant_, o.constant_);
  for (const auto& [a, c] : o.terms_) r.add_term(a, c);
  return r;
}

SymInt SymInt::operator-(const SymInt& o) const { return *this + (-o); }

SymInt SymInt::operator-() const { return *this * -1; }

SymInt SymInt::operator*(int64_t c) const {
  SymInt r;
  if (c == 0) return r;
  r.constant_ = checked_mul(constant_, c);
  for (const auto& [a, k] : terms_) r.terms_.push_back({a, checked_mul(k, c)});
  return r;
}

SymInt SymInt::mul(const SymInt& a, const SymInt& b) {
  if (a.is_const()) return b * a.constant_;
  if (b.is_const()) return a * b.constant_;
  return atom(Mul::make(a.to_expr(), b.to_expr()));
}

SymInt SymInt::floordiv(int64_t c) const {
  PTB_ICHECK(c > 0, "SymInt::floordiv by ", c);
  if (c == 1) return *this;
  bool exact = true;
  for (const auto& t : terms_) exact = exact && t.second % c == 0;
  if (exact) {
    // Only the constant may leave a remainder: floor((c*x + k) / c) = x + floor(k / c).
    SymInt r;
    r.constant_ = floor_div(constant_, c);
    for (const auto& [a, k] : terms_) r.terms_.push_back({a, k / c});
    return r;
  }
  return atom(FloorDiv::make(to_expr(), IntImm::make(tc_index_type(), c)));
}

SymInt SymInt::ceildiv(int64_t c) const { return -((-*this).floordiv(c)); }

SymInt SymInt::min(const SymInt& a, const SymInt& b) {
  SymInt d = a - b;
  if (d.is_const()) return d.constant_ <= 0 ? a : b;
  return atom(Min::make(a.to_expr(), b.to_expr()));
}

SymInt SymInt::max(const SymInt& a, const SymInt& b) {
  SymInt d = a - b;
  if (d.is_const()) return d.constant_ >= 0 ? a : b;
  return atom(Max::make(a.to_expr(), b.to_expr()));
}

bool SymInt::provably_le(const SymInt& o) const {
  SymInt d = o - *this;
  return d.is_const() && d.constant_ >= 0;
}

bool SymInt::provably_equal(const SymInt& o) const {
  SymInt d = o - *this;
  return d.is_const() && d.constant_ == 0;
}

namespace {

Expr index_const(int64_t v) {
  if (tc_index_type().bits() == 32 &&
      (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())) {
    value_error("the constant ", v, " does not fit the 32-bit index type");
  }
  return IntImm::make(tc_index_type(), v);
}

Expr scaled(const Expr& atom, int64_t c) {
  Expr a = cast(tc_index_type(), atom);
  return c == 1 ? a : Mul::make(index_const(c), a);
}

}  // namespace

Expr SymInt::to_expr() const {
  // Positive terms first so the text reads `H - KH + 1` rather than `-KH + H + 1`.
  Expr acc;
  for (const auto& [a, c] : terms_) {
    if (c <= 0) continue;
    acc = acc.defined() ? Add::make(acc, scaled(a, c)) : scaled(a, c);
  }
  bool constant_used = false;
  if (!acc.defined()) {
    acc = index_const(constant_);
    constant_used = true;
  }
  for (const auto& [a, c] : terms_) {
    if (c < 0) acc = Sub::make(acc, scaled(a, checked_neg(c)));
  }
  if (!constant_used && constant_ > 0) acc = Add::make(acc, index_const(constant_));
  if (!constant_used && constant_ < 0) acc = Sub::make(acc, index_const(checked_neg(constant_)));
  return acc;
}

std::string index_expr_str(const Expr& e) {
  if (auto c = as_const_int(e)) return std::to_string(*c);
  if (const auto* v = e.as<Var>()) return v->name;
  if (const auto* n = e.as<Cast>()) return index_expr_str(n->value);
  if (const auto* n = e.as<Add>()) return index_expr_str(n->a) + " + " + index_expr_str(n->b);
  if (const auto* n = e.as<Sub>()) {
    bool paren = n->b.as<Add>() || n->b.as<Sub>();
    std::string b = index_expr_str(n->b);
    return index_expr_str(n->a) + " - " + (paren ? "(" + b + ")" : b);
  }
  auto factor = [](const Expr& x) {
    std::string s = index_expr_str(x);
    return (x.as<Add>() || x.as<Sub>()) ? "(" + s + ")" : s;
  };
  if (const auto* n = e.as<Mul>()) return factor(n->a) + "*" + factor(n->b);
  if (const auto* n = e.as<FloorDiv>()) {
    return "floordiv(" + index_expr_str(n->a) + ", " + index_expr_str(n->b) + ")";
  }
  if (const auto* n = e.as<Min>()) {
    return "min(" + index_expr_str(n->a) + ", " + index_expr_str(n->b) + ")";
  }
  if (const auto* n = e.as<Max>()) {
    return "max(" + index_expr_str(n->a) + ", " + index_expr_str(n->b) + ")";
  }
  return "?";
}

std::string SymInt::str() const { return index_expr_str(to_expr()); }

}  // namespace ptb::tc
