#include "schedule/interval.h"

#include <algorithm>

#include "ir/op.h"
#include "ir/visitor.h"
#include "support/error.h"

namespace ptb {

namespace {

bool is_widening_int_cast(const Cast* c) {
  DataType to = c->dtype, from = c->value.dtype();
  return to.is_integer() && from.is_integer() && from.is_scalar() &&
         (to.bits() > from.bits() || (to.bits() == from.bits() && to.code() == from.code())) &&
         !(from.is_uint() && to.is_int() && to.bits() == from.bits());
}

bool depends_on(const Expr& e, const VarIntervals& vars) {
  bool found = false;
  for_each_expr(e, [&](const Expr& sub) {
    if (!found && sub.as<Var>() && vars.count(sub.get())) found = true;
  });
  return found;
}

template <typename T>
bool binary_equal(const Expr& a, const Expr& b) {
  const auto* x = a.as<T>();
  const auto* y = b.as<T>();
  return structurally_equal(x->a, y->a) && structurally_equal(x->b, y->b);
}

bool all_equal(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!structurally_equal(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

bool structurally_equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a->kind != b->kind || a.dtype() != b.dtype()) return false;
  switch (a->kind) {
    case ExprKind::kIntImm:
      return a.as<IntImm>()->value == b.as<IntImm>()->value;
    case ExprKind::kFloatImm:
      return a.as<FloatImm>()->value == b.as<FloatImm>()->value;
    case ExprKind::kVar:
      return false;  // identity, checked above
    case ExprKind::kCast:
      return structurally_equal(a.as<Cast>()->value, b.as<Cast>()->value);
#define PTB_BINARY_CASE(T) \
  case ExprKind::k##T:     \
    return binary_equal<T>(a, b);
      PTB_BINARY_CASE(Add)
      PTB_BINARY_CASE(Sub)
      PTB_BINARY_CASE(Mul)
      PTB_BINARY_CASE(Div)
      PTB_BINARY_CASE(Mod)
      PTB_BINARY_CASE(FloorDiv)
      PTB_BINARY_CASE(FloorMod)
      PTB_BINARY_CASE(Min)
      PTB_BINARY_CASE(Max)
      PTB_BINARY_CASE(EQ)
      PTB_BINARY_CASE(NE)
      PTB_BINARY_CASE(LT)
      PTB_BINARY_CASE(LE)
      PTB_BINARY_CASE(GT)
      PTB_BINARY_CASE(GE)
      PTB_BINARY_CASE(And)
      PTB_BINARY_CASE(Or)
#undef PTB_BINARY_CASE
    case ExprKind::kNot:
      return structurally_equal(a.as<Not>()->a, b.as<Not>()->a);
    case ExprKind::kSelect: {
      const auto *x = a.as<Select>(), *y = b.as<Select>();
      return structurally_equal(x->condition, y->condition) &&
             structurally_equal(x->true_value, y->true_value) &&
             structurally_equal(x->false_value, y->false_value);
    }
    case ExprKind::kCall: {
      const auto *x = a.as<Call>(), *y = b.as<Call>();
      return x->op == y->op && all_equal(x->args, y->args);
    }
    case ExprKind::kLoad: {
      const auto *x = a.as<Load>(), *y = b.as<Load>();
      return x->buffer == y->buffer && structurally_equal(x->index, y->index) &&
             structurally_equal(x->predicate, y->predicate);
    }
    case ExprKind::kRamp: {
      const auto *x = a.as<Ramp>(), *y = b.as<Ramp>();
      return x->lanes == y->lanes && structurally_equal(x->base, y->base) &&
             structurally_equal(x->stride, y->stride);
    }
    case ExprKind::kBroadcast: {
      const auto *x = a.as<Broadcast>(), *y = b.as<Broadcast>();
      return x->lanes == y->lanes && structurally_equal(x->value, y->value);
    }
    case ExprKind::kTensorRead: {
      const auto *x = a.as<TensorRead>(), *y = b.as<TensorRead>();
      return x->op == y->op && x->value_index == y->value_index &&
             all_equal(x->indices, y->indices);
    }
    default:
      return false;  // Let, Reduce: only identical nodes are known to be equal
  }
}

// ---- LinearForm ----

void LinearForm::add_term(const Expr& e, int64_t coeff) {
  if (coeff == 0) return;
  for (auto it = terms_.begin(); it != terms_.end(); ++it) {
    if (structurally_equal(it->first, e)) {
      it->second += coeff;
      if (it->second == 0) terms_.erase(it);
      return;
    }
  }
  terms_.emplace_back(e, coeff);
}

LinearForm LinearForm::term(const Expr& e) {
  LinearForm f;
  f.add_term(e, 1);
  return f;
}

LinearForm LinearForm::of(const Expr& e) {
  if (auto c = as_const_int(e)) return LinearForm(*c);
  if (const auto* add = e.as<Add>()) return of(add->a) + of(add->b);
  if (const auto* sub = e.as<Sub>()) return of(sub->a) - of(sub->b);
  if (const auto* mul = e.as<Mul>()) {
    if (auto c = as_const_int(mul->b)) return of(mul->a) * *c;
    if (auto c = as_const_int(mul->a)) return of(mul->b) * *c;
  }
  if (const auto* c = e.as<Cast>(); c && is_widening_int_cast(c)) return of(c->value);
  return term(e);
}

LinearForm LinearForm::operator+(const LinearForm& o) const {
  LinearForm r = *this;
  for (const auto& [t, c] : o.terms_) r.add_term(t, c);
  r.constant_ += o.constant_;
  return r;
}

LinearForm LinearForm::operator-(const LinearForm& o) const { return *this + o * -1; }

LinearForm LinearForm::operator*(int64_t k) const {
  LinearForm r;
  if (k == 0) return r;
  r.terms_ = terms_;
  for (auto& tc : r.terms_) tc.second *= k;
  r.constant_ = constant_ * k;
  return r;
}

LinearForm LinearForm::floor_div(int64_t k, DataType t) const {
  PTB_ICHECK(k > 0, "floor_div by ", k);
  // this = k * quotient + rest, where rest keeps the terms whose coefficient k does not divide
  // and the constant's remainder; floor(this / k) = quotient + floor(rest / k).
  LinearForm quotient(ptb::floor_div(constant_, k)), rest(ptb::floor_mod(constant_, k));
  for (const auto& [term, coeff] : terms_) {
    if (coeff % k == 0) {
      quotient.add_term(term, coeff / k);
    } else {
      rest.add_term(term, coeff);
    }
  }
  if (rest.is_constant()) return quotient;  // 0 <= rest < k
  return quotient + LinearForm::term(FloorDiv::make(rest.to_expr(t), make_const(t, k)));
}

std::optional<int64_t> LinearForm::const_mod(int64_t k) const {
  for (const auto& tc : terms_) {
    if (tc.second % k != 0) return std::nullopt;
  }
  return ptb::floor_mod(constant_, k);
}

Expr LinearForm::to_expr(DataType t) const {
  Expr acc;
  for (const auto& [term, coeff] : terms_) {
    Expr x = cast(t, term);
    if (!acc.defined()) {
      acc = idx_mul(x, make_const(t, coeff));
    } else if (coeff < 0) {
      acc = idx_sub(acc, idx_mul(x, make_const(t, -coeff)));
    } else {
      acc = idx_add(acc, idx_mul(x, make_const(t, coeff)));
    }
  }
  if (!acc.defined()) return make_const(t, constant_);
  if (constant_ < 0) return idx_sub(acc, make_const(t, -constant_));
  return idx_add(acc, make_const(t, constant_));
}

// ---- intervals ----

LinearForm form_min(const LinearForm& a, const LinearForm& b, DataType t) {
  LinearForm d = a - b;
  if (d.is_constant()) return d.constant() <= 0 ? a : b;
  return LinearForm::term(Min::make(a.to_expr(t), b.to_expr(t)));
}

LinearForm form_max(const LinearForm& a, const LinearForm& b, DataType t) {
  LinearForm d = a - b;
  if (d.is_constant()) return d.constant() >= 0 ? a : b;
  return LinearForm::term(Max::make(a.to_expr(t), b.to_expr(t)));
}

Interval interval_union(const Interval& a, const Interval& b, DataType t) {
  if (!a.bounded || !b.bounded) return Interval::unbounded();
  return Interval::of(form_min(a.lo, b.lo, t), form_max(a.hi, b.hi, t));
}

namespace {

Interval scale(const Interval& a, int64_t k) {
  if (!a.bounded) return a;
  if (k >= 0) return Interval::of(a.lo * k, a.hi * k);
  return Interval::of(a.hi * k, a.lo * k);
}

std::optional<int64_t> point_constant(const Interval& a) {
  if (a.bounded && a.lo.is_constant() && a.hi.is_constant() && a.lo.constant() == a.hi.constant()) {
    return a.lo.constant();
  }
  return std::nullopt;
}

Interval eval_mul(const Interval& a, const Interval& b) {
  if (auto k = point_constant(b)) return scale(a, *k);
  if (auto k = point_constant(a)) return scale(b, *k);
  if (a.bounded && b.bounded && a.lo.is_constant() && a.hi.is_constant() && b.lo.is_constant() &&
      b.hi.is_constant()) {
    int64_t c[4] = {a.lo.constant() * b.lo.constant(), a.lo.constant() * b.hi.constant(),
                    a.hi.constant() * b.lo.constant(), a.hi.constant() * b.hi.constant()};
    return Interval::of(LinearForm(*std::min_element(c, c + 4)),
                        LinearForm(*std::max_element(c, c + 4)));
  }
  return Interval::unbounded();
}

Interval eval_floor_mod(const Interval& a, int64_t k) {
  if (!a.bounded) return Interval::of(LinearForm(0), LinearForm(k - 1));
  LinearForm width = a.hi - a.lo;
  auto lo_mod = a.lo.const_mod(k);
  // The whole interval lies within one period: it maps to [lo mod k, lo mod k + width].
  if (width.is_constant() && lo_mod && *lo_mod + width.constant() < k) {
    return Interval::of(LinearForm(*lo_mod), LinearForm(*lo_mod + width.constant()));
  }
  return Interval::of(LinearForm(0), LinearForm(k - 1));
}

}  // namespace

namespace {

// A shift by a constant amount in range is a product or a floor division by a power of two
// (an arithmetic right shift rounds toward -inf), and `x & m` with a constant m >= 0 lies in
// [0, m] whatever x is: index arithmetic such as A[i >> 1] or A[i & 7] gets a tight region.
// Other bitwise operations are unbounded.
Interval eval_bitwise(const Call* op, const VarIntervals& vars) {
  const DataType t = op->dtype;
  if ((op->op == Intrinsic::kShiftLeft || op->op == Intrinsic::kShiftRight) && t.is_int()) {
    auto amount = as_const_int(op->args[1]);
    if (!amount || *amount < 0 || *amount >= std::min(t.bits(), 62)) return Interval::unbounded();
    const int64_t power = int64_t{1} << *amount;
    Interval a = eval_interval(op->args[0], vars);
    if (!a.bounded) return a;
    if (op->op == Intrinsic::kShiftLeft) return eval_mul(a, Interval::point(LinearForm(power)));
    return Interval::of(a.lo.floor_div(power, t), a.hi.floor_div(power, t));
  }
  if (op->op == Intrinsic::kBitwiseAnd && (t.is_int() || t.is_uint())) {
    for (int k = 0; k < 2; ++k) {
      auto mask = as_const_int(op->args[k]);
      if (mask && *mask >= 0) return Interval::of(LinearForm(0), LinearForm(*mask));
    }
  }
  return Interval::unbounded();
}

}  // namespace

Interval eval_interval(const Expr& e, const VarIntervals& vars) {
  if (!e.dtype().is_integer() || !e.dtype().is_scalar()) return Interval::unbounded();
  if (!depends_on(e, vars)) return Interval::point(LinearForm::of(e));
  DataType t = e.dtype();
  switch (e->kind) {
    case ExprKind::kVar:
      return vars.at(e.get());
    case ExprKind::kAdd: {
      const auto* op = e.as<Add>();
      Interval a = eval_interval(op->a, vars), b = eval_interval(op->b, vars);
      if (!a.bounded || !b.bounded) return Interval::unbounded();
      return Interval::of(a.lo + b.lo, a.hi + b.hi);
    }
    case ExprKind::kSub: {
      const auto* op = e.as<Sub>();
      Interval a = eval_interval(op->a, vars), b = eval_interval(op->b, vars);
      if (!a.bounded || !b.bounded) return Interval::unbounded();
      return Interval::of(a.lo - b.hi, a.hi - b.lo);
    }
    case ExprKind::kMul: {
      const auto* op = e.as<Mul>();
      return eval_mul(eval_interval(op->a, vars), eval_interval(op->b, vars));
    }
    case ExprKind::kFloorDiv:
    case ExprKind::kDiv: {
      Expr lhs = e->kind == ExprKind::kDiv ? e.as<Div>()->a : e.as<FloorDiv>()->a;
      Expr rhs = e->kind == ExprKind::kDiv ? e.as<Div>()->b : e.as<FloorDiv>()->b;
      auto k = as_const_int(rhs);
      if (!k || *k <= 0) return Interval::unbounded();
      Interval a = eval_interval(lhs, vars);
      if (!a.bounded) return a;
      // Truncating division equals floor division only for non-negative dividends.
      if (e->kind == ExprKind::kDiv && !(a.lo.is_constant() && a.lo.constant() >= 0)) {
        return Interval::unbounded();
      }
      return Interval::of(a.lo.floor_div(*k, t), a.hi.floor_div(*k, t));
    }
    case ExprKind::kFloorMod:
    case ExprKind::kMod: {
      Expr lhs = e->kind == ExprKind::kMod ? e.as<Mod>()->a : e.as<FloorMod>()->a;
      Expr rhs = e->kind == ExprKind::kMod ? e.as<Mod>()->b : e.as<FloorMod>()->b;
      auto k = as_const_int(rhs);
      if (!k || *k <= 0) return Interval::unbounded();
      Interval a = eval_interval(lhs, vars);
      if (e->kind == ExprKind::kMod && !(a.bounded && a.lo.is_constant() && a.lo.constant() >= 0)) {
        return Interval::unbounded();
      }
      return eval_floor_mod(a, *k);
    }
    case ExprKind::kMin:
    case ExprKind::kMax: {
      bool is_min = e->kind == ExprKind::kMin;
      Expr lhs = is_min ? e.as<Min>()->a : e.as<Max>()->a;
      Expr rhs = is_min ? e.as<Min>()->b : e.as<Max>()->b;
      Interval a = eval_interval(lhs, vars), b = eval_interval(rhs, vars);
      if (!a.bounded || !b.bounded) return Interval::unbounded();
      if (is_min) return Interval::of(form_min(a.lo, b.lo, t), form_min(a.hi, b.hi, t));
      return Interval::of(form_max(a.lo, b.lo, t), form_max(a.hi, b.hi, t));
    }
    case ExprKind::kCast: {
      const auto* op = e.as<Cast>();
      if (!is_widening_int_cast(op)) return Interval::unbounded();
      return eval_interval(op->value, vars);
    }
    case ExprKind::kSelect: {
      const auto* op = e.as<Select>();
      return interval_union(eval_interval(op->true_value, vars),
                            eval_interval(op->false_value, vars), t);
    }
    case ExprKind::kCall: {
      const auto* op = e.as<Call>();
      if (op->op == Intrinsic::kIfThenElse) {
        return interval_union(eval_interval(op->args[1], vars), eval_interval(op->args[2], vars),
                              t);
      }
      return eval_bitwise(op, vars);
    }
    default:
      return Interval::unbounded();
  }
}

namespace {

std::optional<int64_t> const_bound(const LinearForm& f, const VarIntervals& vars, bool lower) {
  int64_t total = f.constant();
  for (const auto& [term, coeff] : f.terms()) {
    Interval i = eval_interval(term, vars);
    if (!i.bounded || !i.lo.is_constant() || !i.hi.is_constant()) return std::nullopt;
    bool take_lo = (coeff > 0) == lower;
    total += coeff * (take_lo ? i.lo.constant() : i.hi.constant());
  }
  return total;
}

// Interval arithmetic forgets that the two sides of hi - lo move together; expanding the min and
// max terms first keeps that: max(a, b) - min(c, d) = max(a - c, a - d, b - c, b - d), each a
// difference whose variables cancel.
std::optional<int64_t> upper_bound_expanding(const LinearForm& f, const VarIntervals& vars,
                                             int budget) {
  const auto& terms = f.terms();
  for (size_t t = 0; budget > 0 && t < terms.size(); ++t) {
    const auto* mn = terms[t].first.as<Min>();
    const auto* mx = terms[t].first.as<Max>();
    if (!mn && !mx) continue;
    int64_t c = terms[t].second;
    LinearForm rest = f - LinearForm::term(terms[t].first) * c;
    Expr p = mn ? mn->a : mx->a;
    Expr q = mn ? mn->b : mx->b;
    auto up = upper_bound_expanding(rest + LinearForm::of(p) * c, vars, budget - 1);
    auto uq = upper_bound_expanding(rest + LinearForm::of(q) * c, vars, budget - 1);
    // c * min(p, q) is at most both alternatives when c > 0 (c * max(p, q) when c < 0); the
    // other two cases are the larger of the alternatives.
    if ((mn && c > 0) || (mx && c < 0)) {
      if (!up) return uq;
      if (!uq) return up;
      return std::min(*up, *uq);
    }
    if (!up || !uq) return std::nullopt;
    return std::max(*up, *uq);
  }
  return const_bound(f, vars, false);
}

// Expansions per bound: 2^kExpansionBudget evaluations at most.
constexpr int kExpansionBudget = 6;

}  // namespace

std::optional<int64_t> const_lower_bound(const LinearForm& f, const VarIntervals& vars) {
  auto u = upper_bound_expanding(f * -1, vars, kExpansionBudget);
  if (!u) return std::nullopt;
  return -*u;
}

std::optional<int64_t> const_upper_bound(const LinearForm& f, const VarIntervals& vars) {
  return upper_bound_expanding(f, vars, kExpansionBudget);
}

}  // namespace ptb
