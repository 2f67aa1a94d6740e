#include "ir/simplify.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/visitor.h"
#include "support/stack.h"

namespace ptb {

namespace {

// ---------------------------------------------------------------------------------------------
// Integer arithmetic on constants.
//
// IntImm stores every integer dtype in an int64: signed values sign-extended, unsigned values
// zero-extended (so only uint64 needs unsigned operations), each already wrapped to its width.
// Sums and products are computed in uint64 (no undefined overflow in C++) and IntImm::make wraps
// them back to the dtype, which is exactly the machine's wrap-around.

bool is_u64(DataType t) { return t.is_uint() && t.bits() == 64; }

bool signed_min(DataType t, int64_t v) {
  return t.is_int() && v == (t.bits() == 64 ? std::numeric_limits<int64_t>::min()
                                            : -(int64_t{1} << (t.bits() - 1)));
}

// A bitwise operation of constants (b unused for bitwise_not). Bitwise and / or / xor / not of
// sign- or zero-extended values are again sign- or zero-extended, and IntImm::make wraps the
// rest. Shifts follow expr.h: an amount outside [0, bits), read as unsigned, shifts every bit
// out.
Expr fold_bitwise(Intrinsic op, DataType t, int64_t a, int64_t b) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  bool in_range = ub < static_cast<uint64_t>(t.bits());
  switch (op) {
    case Intrinsic::kBitwiseAnd:
      return IntImm::make(t, a & b);
    case Intrinsic::kBitwiseOr:
      return IntImm::make(t, a | b);
    case Intrinsic::kBitwiseXor:
      return IntImm::make(t, a ^ b);
    case Intrinsic::kBitwiseNot:
      return IntImm::make(t, ~a);
    case Intrinsic::kShiftLeft:
      return IntImm::make(t, in_range ? static_cast<int64_t>(ua << ub) : 0);
    case Intrinsic::kShiftRight:
      if (t.is_int()) {
        // Arithmetic shift written without shifting a negative value (implementation-defined
        // before C++20): ~(~a >> n) for negative a.
        if (!in_range) return IntImm::make(t, a < 0 ? -1 : 0);
        return IntImm::make(t, a < 0 ? ~(~a >> ub) : a >> ub);
      }
      // Unsigned values are zero-extended: a logical shift of the 64-bit pattern.
      return IntImm::make(t, in_range ? static_cast<int64_t>(ua >> ub) : 0);
    default:
      return Expr();
  }
}

template <typename T>
std::optional<Expr> fold_int(DataType t, int64_t a, int64_t b) {
  auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  auto less = [&](int64_t x, int64_t y) {
    return is_u64(t) ? static_cast<uint64_t>(x) < static_cast<uint64_t>(y) : x < y;
  };
  auto boolean = [](bool v) { return IntImm::make(DataType::Bool(), v); };
  constexpr ExprKind k = T::kKind;
  if constexpr (k == ExprKind::kAdd) return IntImm::make(t, static_cast<int64_t>(ua + ub));
  if constexpr (k == ExprKind::kSub) return IntImm::make(t, static_cast<int64_t>(ua - ub));
  if constexpr (k == ExprKind::kMul) return IntImm::make(t, static_cast<int64_t>(ua * ub));
  if constexpr (k == ExprKind::kDiv || k == ExprKind::kMod || k == ExprKind::kFloorDiv ||
                k == ExprKind::kFloorMod) {
    // Division by zero and MIN / -1 are left for run time (they trap or are undefined there).
    if (b == 0 || (signed_min(t, a) && b == -1)) return std::nullopt;
    if (is_u64(t)) {
      bool div = k == ExprKind::kDiv || k == ExprKind::kFloorDiv;
      return IntImm::make(t, static_cast<int64_t>(div ? ua / ub : ua % ub));
    }
    if constexpr (k == ExprKind::kDiv) return IntImm::make(t, a / b);
    if constexpr (k == ExprKind::kMod) return IntImm::make(t, a % b);
    if constexpr (k == ExprKind::kFloorDiv) return IntImm::make(t, floor_div(a, b));
    if constexpr (k == ExprKind::kFloorMod) return IntImm::make(t, floor_mod(a, b));
  }
  if constexpr (k == ExprKind::kMin) return IntImm::make(t, less(b, a) ? b : a);
  if constexpr (k == ExprKind::kMax) return IntImm::make(t, less(a, b) ? b : a);
  if constexpr (k == ExprKind::kEQ) return boolean(a == b);
  if constexpr (k == ExprKind::kNE) return boolean(a != b);
  if constexpr (k == ExprKind::kLT) return boolean(less(a, b));
  if constexpr (k == ExprKind::kLE) return boolean(!less(b, a));
  if constexpr (k == ExprKind::kGT) return boolean(less(b, a));
  if constexpr (k == ExprKind::kGE) return boolean(!less(a, b));
  if constexpr (k == ExprKind::kAnd) return boolean(a && b);
  if constexpr (k == ExprKind::kOr) return boolean(a || b);
  return std::nullopt;
}

// Float constants are folded in their own precision (float32 arithmetic for float32), so the
// result is the one the generated code would compute. 16-bit floats are left alone: C++ has no
// portable arithmetic type for them.
template <typename T, typename F>
std::optional<Expr> fold_float_as(DataType t, F a, F b) {
  auto boolean = [](bool v) { return IntImm::make(DataType::Bool(), v); };
  auto value = [&](F v) { return FloatImm::make(t, static_cast<double>(v)); };
  constexpr ExprKind k = T::kKind;
  if constexpr (k == ExprKind::kAdd) return value(a + b);
  if constexpr (k == ExprKind::kSub) return value(a - b);
  if constexpr (k == ExprKind::kMul) return value(a * b);
  if constexpr (k == ExprKind::kDiv) return value(a / b);
  if constexpr (k == ExprKind::kMod) return value(std::fmod(a, b));
  // NaN handling of min/max is the code generator's choice; only fold ordinary values.
  if constexpr (k == ExprKind::kMin || k == ExprKind::kMax) {
    if (std::isnan(a) || std::isnan(b)) return std::nullopt;
    return value(k == ExprKind::kMin ? (b < a ? b : a) : (a < b ? b : a));
  }
  if constexpr (k == ExprKind::kEQ) return boolean(a == b);
  if constexpr (k == ExprKind::kNE) return boolean(a != b);
  if constexpr (k == ExprKind::kLT) return boolean(a < b);
  if constexpr (k == ExprKind::kLE) return boolean(a <= b);
  if constexpr (k == ExprKind::kGT) return boolean(a > b);
  if constexpr (k == ExprKind::kGE) return boolean(a >= b);
  return std::nullopt;
}

template <typename T>
std::optional<Expr> fold_float(DataType t, double a, double b) {
  if (t.code() != DataType::kFloat) return std::nullopt;
  if (t.bits() == 64) return fold_float_as<T, double>(t, a, b);
  if (t.bits() == 32)
    return fold_float_as<T, float>(t, static_cast<float>(a), static_cast<float>(b));
  return std::nullopt;
}

bool is_const_float(const Expr& e, double v) {
  auto f = as_const_float(e);
  return f && *f == v && !std::signbit(*f) == !std::signbit(v);
}

// ---------------------------------------------------------------------------------------------
// Structural equality: the same computation, Vars and buffers compared by identity.

bool equal(const Expr& a, const Expr& b);

bool equal_all(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!equal(a[i], b[i])) return false;
  }
  return true;
}

template <typename T>
bool equal_binary(const Expr& a, const Expr& b) {
  const T* x = a.as<T>();
  const T* y = b.as<T>();
  return equal(x->a, y->a) && equal(x->b, y->b);
}

bool equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined() || a->kind != b->kind || a.dtype() != b.dtype()) return false;
  check_stack();
  switch (a->kind) {
    case ExprKind::kIntImm:
      return a.as<IntImm>()->value == b.as<IntImm>()->value;
    case ExprKind::kFloatImm: {
      double x = a.as<FloatImm>()->value, y = b.as<FloatImm>()->value;
      return std::memcmp(&x, &y, sizeof x) == 0;
    }
    case ExprKind::kCast:
      return equal(a.as<Cast>()->value, b.as<Cast>()->value);
#define PTB_EQUAL_BINARY(T) \
  case ExprKind::k##T:      \
    return equal_binary<T>(a, b);
      PTB_EQUAL_BINARY(Add)
      PTB_EQUAL_BINARY(Sub)
      PTB_EQUAL_BINARY(Mul)
      PTB_EQUAL_BINARY(Div)
      PTB_EQUAL_BINARY(Mod)
      PTB_EQUAL_BINARY(FloorDiv)
      PTB_EQUAL_BINARY(FloorMod)
      PTB_EQUAL_BINARY(Min)
      PTB_EQUAL_BINARY(Max)
      PTB_EQUAL_BINARY(EQ)
      PTB_EQUAL_BINARY(NE)
      PTB_EQUAL_BINARY(LT)
      PTB_EQUAL_BINARY(LE)
      PTB_EQUAL_BINARY(GT)
      PTB_EQUAL_BINARY(GE)
      PTB_EQUAL_BINARY(And)
      PTB_EQUAL_BINARY(Or)
#undef PTB_EQUAL_BINARY
    case ExprKind::kNot:
      return equal(a.as<Not>()->a, b.as<Not>()->a);
    case ExprKind::kSelect: {
      const auto *x = a.as<Select>(), *y = b.as<Select>();
      return equal(x->condition, y->condition) && equal(x->true_value, y->true_value) &&
             equal(x->false_value, y->false_value);
    }
    case ExprKind::kCall: {
      const auto *x = a.as<Call>(), *y = b.as<Call>();
      return x->op == y->op && equal_all(x->args, y->args);
    }
    case ExprKind::kLoad: {
      const auto *x = a.as<Load>(), *y = b.as<Load>();
      return x->buffer == y->buffer && equal(x->index, y->index) &&
             (x->predicate.defined() == y->predicate.defined()) &&
             (!x->predicate.defined() || equal(x->predicate, y->predicate));
    }
    case ExprKind::kRamp: {
      const auto *x = a.as<Ramp>(), *y = b.as<Ramp>();
      return equal(x->base, y->base) && equal(x->stride, y->stride);
    }
    case ExprKind::kBroadcast:
      return equal(a.as<Broadcast>()->value, b.as<Broadcast>()->value);
    case ExprKind::kTensorRead: {
      const auto *x = a.as<TensorRead>(), *y = b.as<TensorRead>();
      return x->op == y->op && x->value_index == y->value_index &&
             equal_all(x->indices, y->indices);
    }
    default:
      return false;  // Vars (identity, checked above), Let, Reduce
  }
}

size_t node_count(const Expr& e) {
  size_t n = 0;
  for_each_expr(e, [&](const Expr&) { ++n; });
  return n;
}

// ---------------------------------------------------------------------------------------------
// Integer intervals, for the rewrites that need to know a value's range (a loop variable lies
// in [min, min + extent - 1]). A missing side is unbounded.

struct Interval {
  std::optional<int64_t> lo, hi;
  static Interval point(int64_t v) { return {v, v}; }
  bool known() const { return lo && hi; }
};

std::optional<int64_t> checked_add(std::optional<int64_t> a, std::optional<int64_t> b) {
  int64_t r;
  if (!a || !b || __builtin_add_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> checked_mul(std::optional<int64_t> a, int64_t b) {
  int64_t r;
  if (!a || __builtin_mul_overflow(*a, b, &r)) return std::nullopt;
  return r;
}

// Whether every value of `range` is representable in the integer type `t`.
bool fits_type(const Interval& range, DataType t) {
  if (!range.known()) return false;
  if (t.bits() >= 64) return true;
  int64_t max = (int64_t{1} << (t.bits() - 1)) - 1;
  int64_t min = t.is_uint() ? 0 : -max - 1;
  if (t.is_uint()) max = (int64_t{1} << t.bits()) - 1;
  return *range.lo >= min && *range.hi <= max;
}

Interval add(const Interval& a, const Interval& b) {
  return {checked_add(a.lo, b.lo), checked_add(a.hi, b.hi)};
}
Interval scale(const Interval& a, int64_t c) {
  if (c >= 0) return {checked_mul(a.lo, c), checked_mul(a.hi, c)};
  return {checked_mul(a.hi, c), checked_mul(a.lo, c)};
}
Interval hull(const Interval& a, const Interval& b) {
  Interval r;
  if (a.lo && b.lo) r.lo = std::min(*a.lo, *b.lo);
  if (a.hi && b.hi) r.hi = std::max(*a.hi, *b.hi);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Affine integer expressions: sum(coefficient * atom) + constant, where atoms are whatever is not
// an addition, a subtraction or a multiplication by a constant. Integers modulo 2^bits form a
// ring, so collecting terms is exact even where the arithmetic wraps.

struct Term {
  Expr atom;
  int64_t coeff;
};

struct Linear {
  DataType dtype;
  std::vector<Term> terms;
  int64_t constant = 0;
  // Nodes left to look into: past it, a subexpression stays one opaque term, so that a sum of
  // 20 000 reads costs the simplifier a bounded amount of work at each of its nodes.
  int budget = 64;
};

// Coefficients are kept wrapped to the dtype's width and sign-extended, so that a uint32
// "minus one" prints as a subtraction rather than as 4294967295.
int64_t wrap_signed(DataType t, uint64_t v) {
  if (t.bits() >= 64) return static_cast<int64_t>(v);
  uint64_t mask = (uint64_t{1} << t.bits()) - 1;
  v &= mask;
  if (v >> (t.bits() - 1)) v |= ~mask;
  return static_cast<int64_t>(v);
}
int64_t mul_wrap(DataType t, int64_t a, int64_t b) {
  return wrap_signed(t, static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t add_wrap(DataType t, int64_t a, int64_t b) {
  return wrap_signed(t, static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

bool is_affine_type(DataType t) { return t.is_integer() && t.is_scalar(); }

void add_term(Linear* l, const Expr& atom, int64_t coeff) {
  for (Term& t : l->terms) {
    if (equal(t.atom, atom)) {
      t.coeff = add_wrap(l->dtype, t.coeff, coeff);
      return;
    }
  }
  l->terms.push_back({atom, coeff});
}

void accumulate(const Expr& e, int64_t scale_by, Linear* l) {
  if (--l->budget < 0) {
    add_term(l, e, scale_by);
    return;
  }
  if (auto c = as_const_int(e)) {
    l->constant = add_wrap(l->dtype, l->constant, mul_wrap(l->dtype, *c, scale_by));
  } else if (const auto* add = e.as<Add>()) {
    accumulate(add->a, scale_by, l);
    accumulate(add->b, scale_by, l);
  } else if (const auto* sub = e.as<Sub>()) {
    accumulate(sub->a, scale_by, l);
    accumulate(sub->b, mul_wrap(l->dtype, scale_by, -1), l);
  } else if (const auto* mul = e.as<Mul>(); mul && as_const_int(mul->b)) {
    accumulate(mul->a, mul_wrap(l->dtype, scale_by, *as_const_int(mul->b)), l);
  } else if (mul && as_const_int(mul->a)) {
    accumulate(mul->b, mul_wrap(l->dtype, scale_by, *as_const_int(mul->a)), l);
  } else {
    add_term(l, e, scale_by);
  }
}

Linear drop_zero_terms(Linear l) {
  std::vector<Term> kept;
  for (const Term& t : l.terms) {
    if (t.coeff != 0) kept.push_back(t);
  }
  l.terms = std::move(kept);
  return l;
}

Linear linearize(const Expr& e) {
  Linear l;
  l.dtype = e.dtype();
  accumulate(e, 1, &l);
  return drop_zero_terms(l);
}

// Terms with positive coefficients first (in order of appearance), then the subtracted ones,
// then the constant: `n - i + 1` rather than `(0 - i) + n + 1`.
Expr delinearize(const Linear& l) {
  DataType t = l.dtype;
  int64_t constant = l.constant;
  Expr r;
  auto scaled = [&](const Term& term, int64_t c) {
    return c == 1 ? term.atom : Mul::make(term.atom, IntImm::make(t, c));
  };
  for (const Term& term : l.terms) {
    if (term.coeff > 0)
      r = r.defined() ? Add::make(r, scaled(term, term.coeff)) : scaled(term, term.coeff);
  }
  for (const Term& term : l.terms) {
    if (term.coeff >= 0) continue;
    bool negatable = term.coeff != std::numeric_limits<int64_t>::min() &&
                     wrap_signed(t, static_cast<uint64_t>(-term.coeff)) == -term.coeff;
    if (!r.defined() && negatable) {
      // A leading subtraction starts from the constant: `3 - i`, or `0 - i`.
      r = IntImm::make(t, constant);
      constant = 0;
    }
    if (!r.defined() || !negatable) {
      Expr s = scaled(term, term.coeff);
      r = r.defined() ? Add::make(r, s) : s;
    } else {
      r = Sub::make(r, scaled(term, -term.coeff));
    }
  }
  if (!r.defined()) return IntImm::make(t, constant);
  if (constant > 0 ||
      (constant < 0 && wrap_signed(t, static_cast<uint64_t>(-constant)) != -constant)) {
    return Add::make(r, IntImm::make(t, constant));
  }
  if (constant < 0) return Sub::make(r, IntImm::make(t, -constant));
  return r;
}

// ---------------------------------------------------------------------------------------------

class Simplifier : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::mutate_node;

  // -- ranges ---------------------------------------------------------------------------------

  Interval bounds(const Expr& e) {
    if (!e.dtype().is_int() || !e.dtype().is_scalar()) return {};
    Linear l = linearize(e);
    Interval r = Interval::point(l.constant);
    for (const Term& t : l.terms) r = add(r, scale(atom_bounds(t.atom), t.coeff));
    return r;
  }

  Interval atom_bounds(const Expr& e) {
    check_stack();
    if (const auto* v = e.as<Var>()) {
      auto it = var_bounds_.find(v);
      return it == var_bounds_.end() ? Interval{} : it->second;
    }
    if (const auto* c = e.as<Cast>()) {
      DataType from = c->value.dtype();
      if (from.is_int() && e.dtype().bits() >= from.bits()) return bounds(c->value);
      return {};
    }
    if (const auto* m = e.as<Min>()) {
      Interval a = bounds(m->a), b = bounds(m->b);
      Interval r;
      if (a.lo && b.lo) r.lo = std::min(*a.lo, *b.lo);
      r.hi = a.hi && b.hi ? std::min(*a.hi, *b.hi) : a.hi ? a.hi : b.hi;
      return r;
    }
    if (const auto* m = e.as<Max>()) {
      Interval a = bounds(m->a), b = bounds(m->b);
      Interval r;
      if (a.hi && b.hi) r.hi = std::max(*a.hi, *b.hi);
      r.lo = a.lo && b.lo ? std::max(*a.lo, *b.lo) : a.lo ? a.lo : b.lo;
      return r;
    }
    if (const auto* s = e.as<Select>()) return hull(bounds(s->true_value), bounds(s->false_value));
    if (const auto* d = e.as<FloorDiv>()) {
      auto c = as_const_int(d->b);
      if (!c || *c <= 0) return {};
      Interval a = bounds(d->a);
      Interval r;
      if (a.lo) r.lo = floor_div(*a.lo, *c);
      if (a.hi) r.hi = floor_div(*a.hi, *c);
      return r;
    }
    if (const auto* m = e.as<FloorMod>()) {
      auto c = as_const_int(m->b);
      if (!c || *c <= 0) return {};
      Interval a = bounds(m->a);
      if (a.lo && a.hi && *a.lo >= 0 && *a.hi < *c) return a;
      return {int64_t{0}, *c - 1};
    }
    if (const auto* m = e.as<Mod>()) {
      auto c = as_const_int(m->b);
      if (!c || *c <= 0) return {};
      Interval a = bounds(m->a);
      if (a.lo && *a.lo >= 0) return {int64_t{0}, a.hi && *a.hi < *c ? *a.hi : *c - 1};
      return {1 - *c, *c - 1};
    }
    if (const auto* m = e.as<Mul>()) {
      Interval a = bounds(m->a), b = bounds(m->b);
      if (!a.known() || !b.known()) return {};
      Interval r;
      for (int64_t x : {*a.lo, *a.hi}) {
        for (int64_t y : {*b.lo, *b.hi}) {
          auto p = checked_mul(x, y);
          if (!p) return {};
          r = r.lo ? Interval{std::min(*r.lo, *p), std::max(*r.hi, *p)} : Interval::point(*p);
        }
      }
      return r;
    }
    return {};
  }

  // The sign of a - b where it is provable: -1 (a < b), 0 (a == b), 1 (a > b), and also "a <= b"
  // / "a >= b" through the interval itself.
  Interval difference(const Expr& a, const Expr& b) {
    if (!a.dtype().is_int() || !a.dtype().is_scalar()) return {};
    // Signed index arithmetic is assumed not to overflow (as in Halide and TVM), so a - b is the
    // mathematical difference.
    return bounds(Sub::make(a, b));
  }

  // -- expressions ----------------------------------------------------------------------------

  Expr mutate_node(const Var* op, const Expr& self) override {
    auto it = subst_.find(op);
    return it == subst_.end() ? self : it->second;
  }

  Expr mutate_node(const Cast* op, const Expr& self) override {
    Expr v = mutate(op->value);
    DataType to = op->dtype, from = v.dtype();
    if (to == from) return v;
    if (to.is_scalar()) {
      if (auto i = as_const_int(v)) {
        if (to.is_bool()) return IntImm::make(to, *i != 0);
        if (to.is_integer()) return IntImm::make(to, *i);  // wraps like a C cast
        if (to.code() == DataType::kFloat && to.bits() >= 32) {
          // rounded once, from the integer (through double first, 2**60 + 2**36 + 1 rounded
          // twice: one float32 ulp from what the generated code's conversion gives)
          const bool u = is_u64(from);
          const uint64_t bits = static_cast<uint64_t>(*i);
          double d = to.bits() == 32 ? (u ? static_cast<float>(bits) : static_cast<float>(*i))
                                     : (u ? static_cast<double>(bits) : static_cast<double>(*i));
          return FloatImm::make(to, d);
        }
      }
      if (auto f = as_const_float(v); f && from.code() == DataType::kFloat) {
        if (to.is_bool()) return IntImm::make(to, *f != 0);
        if (to.code() == DataType::kFloat && to.bits() >= 32) {
          return FloatImm::make(to,
                                to.bits() == 32 ? static_cast<double>(static_cast<float>(*f)) : *f);
        }
        // float -> int only when the value is representable (otherwise undefined at run time).
        if (to.is_int() && to.bits() <= 32 && std::isfinite(*f)) {
          double t = std::trunc(*f);
          double lo = std::ldexp(-1.0, to.bits() - 1), hi = -lo;
          if (t >= lo && t < hi) return IntImm::make(to, static_cast<int64_t>(t));
        }
      }
    } else if (const auto* b = v.as<Broadcast>()) {
      return Broadcast::make(mutate(Cast::make(to.element_of(), b->value)), to.lanes());
    } else if (const auto* r = v.as<Ramp>();
               r && to.is_int() && from.is_int() && to.bits() >= from.bits()) {
      // A widened constant ramp (a vectorised int32 loop index flattened into an int64
      // offset) stays a ramp: cast(ramp(0, 1, 16)) * stride + base must become ramp(base,
      // stride, 16) once the strides are constants, a contiguous load instead of a gather.
      auto base = as_const_int(r->base), stride = as_const_int(r->stride);
      // A variable base whose range is known (a fused loop's vector of indices, (h, w) of a
      // compact image flattened): widened lane by lane when every lane fits the narrow type.
      if (!base && stride) {
        Interval b = bounds(r->base);
        auto span = checked_mul(*stride, r->lanes - 1);
        Interval lanes = span ? hull(b, add(b, Interval::point(*span))) : Interval{};
        if (fits_type(lanes, from)) {
          return Ramp::make(mutate(Cast::make(to.element_of(), r->base)),
                            IntImm::make(to.element_of(), *stride), r->lanes);
        }
      }
      if (base && stride) {
        const int64_t last = *base + *stride * (r->lanes - 1);
        const int64_t lo = std::min(*base, last), hi = std::max(*base, last);
        const int64_t limit = from.bits() >= 64 ? INT64_MAX : (int64_t{1} << (from.bits() - 1));
        if (from.bits() >= 64 || (lo >= -limit && hi < limit)) {
          return Ramp::make(IntImm::make(to.element_of(), *base),
                            IntImm::make(to.element_of(), *stride), r->lanes);
        }
      }
    }
    return v.same_as(op->value) ? self : Cast::make(to, v);
  }

  template <typename T>
  Expr binary(const T* op, const Expr& self) {
    Expr a = mutate(op->a), b = mutate(op->b);
    Expr r = rewrite<T>(a, b);
    if (r.defined()) return r;
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    return T::make(a, b);
  }

#define PTB_SIMPLIFY_BINARY(T) \
  Expr mutate_node(const T* op, const Expr& self) override { return binary(op, self); }
  PTB_SIMPLIFY_BINARY(Add)
  PTB_SIMPLIFY_BINARY(Sub)
  PTB_SIMPLIFY_BINARY(Mul)
  PTB_SIMPLIFY_BINARY(Div)
  PTB_SIMPLIFY_BINARY(Mod)
  PTB_SIMPLIFY_BINARY(FloorDiv)
  PTB_SIMPLIFY_BINARY(FloorMod)
  PTB_SIMPLIFY_BINARY(Min)
  PTB_SIMPLIFY_BINARY(Max)
  PTB_SIMPLIFY_BINARY(EQ)
  PTB_SIMPLIFY_BINARY(NE)
  PTB_SIMPLIFY_BINARY(LT)
  PTB_SIMPLIFY_BINARY(LE)
  PTB_SIMPLIFY_BINARY(GT)
  PTB_SIMPLIFY_BINARY(GE)
  PTB_SIMPLIFY_BINARY(And)
  PTB_SIMPLIFY_BINARY(Or)
#undef PTB_SIMPLIFY_BINARY

  // The simplified form of T(a, b) for already simplified operands, or undefined if T(a, b)
  // itself is as simple as it gets.
  template <typename T>
  Expr rewrite(const Expr& a, const Expr& b) {
    constexpr ExprKind k = T::kKind;
    DataType t = a.dtype();
    if (auto x = as_const_int(a)) {
      if (auto y = as_const_int(b)) {
        if (auto r = fold_int<T>(t, *x, *y)) return *r;
        return Expr();
      }
    }
    if (auto x = as_const_float(a)) {
      if (auto y = as_const_float(b)) {
        if (auto r = fold_float<T>(t, *x, *y)) return *r;
        return Expr();
      }
    }
    if (t.is_vector()) return rewrite_vector<T>(a, b);

    if constexpr (k == ExprKind::kAnd || k == ExprKind::kOr) {
      bool is_and = k == ExprKind::kAnd;
      // x && true -> x, x && false -> false (and dually for ||).
      for (const Expr* c : {&a, &b}) {
        if (auto v = as_const_int(*c)) {
          const Expr& other = c == &a ? b : a;
          return (*v != 0) == is_and ? other : *c;
        }
      }
      if (equal(a, b)) return a;
      return Expr();
    }
    if constexpr (k == ExprKind::kMin || k == ExprKind::kMax) {
      if (equal(a, b)) return a;
      Interval d = difference(a, b);
      bool a_le_b = d.hi && *d.hi <= 0, a_ge_b = d.lo && *d.lo >= 0;
      if (k == ExprKind::kMin && (a_le_b || a_ge_b)) return a_le_b ? a : b;
      if (k == ExprKind::kMax && (a_le_b || a_ge_b)) return a_ge_b ? a : b;
      return Expr();
    }
    if constexpr (k == ExprKind::kEQ || k == ExprKind::kNE || k == ExprKind::kLT ||
                  k == ExprKind::kLE || k == ExprKind::kGT || k == ExprKind::kGE) {
      return compare<T>(a, b);
    }
    if (t.is_float()) return rewrite_float<T>(a, b);
    if (!is_affine_type(t)) return Expr();
    if constexpr (k == ExprKind::kAdd) {
      // Widened quotient and remainder (a fused loop's indices into a compact tensor,
      // int64(f // 512) * 25088 + int64(f % 512) * 49): affine() sees the casts as atoms.
      if (Expr folded = fold_vector_div_mod(a, b); folded.defined()) return folded;
    }
    if constexpr (k == ExprKind::kAdd || k == ExprKind::kSub || k == ExprKind::kMul) {
      return affine(T::make(a, b));
    }
    if constexpr (k == ExprKind::kDiv || k == ExprKind::kFloorDiv) {
      if (is_const_int(b, 1)) return a;
    }
    if constexpr (k == ExprKind::kMod || k == ExprKind::kFloorMod) {
      if (is_const_int(b, 1)) return make_zero(t);
    }
    if constexpr (k == ExprKind::kFloorDiv || k == ExprKind::kFloorMod) {
      if (t.is_int()) return floor_division(k == ExprKind::kFloorDiv, a, b);
    }
    return Expr();
  }

  // x * 1.0, x / 1.0 and x - 0.0 are x for every float x, NaN and -0.0 included; x + 0.0 is not
  // (-0.0 + 0.0 is 0.0), nor is x * 0.0 (NaN, infinities).
  template <typename T>
  Expr rewrite_float(const Expr& a, const Expr& b) {
    constexpr ExprKind k = T::kKind;
    if constexpr (k == ExprKind::kMul) {
      if (is_const_float(b, 1.0)) return a;
      if (is_const_float(a, 1.0)) return b;
    }
    if constexpr (k == ExprKind::kDiv) {
      if (is_const_float(b, 1.0)) return a;
    }
    if constexpr (k == ExprKind::kSub) {
      if (is_const_float(b, 0.0)) return a;
    }
    return Expr();
  }

  // Collects the terms of an integer sum. The canonical form is used only when it is no larger
  // than the expression as written: (x + 3) + 4 becomes x + 7, x*2 + x*3 becomes x*5, but
  // (x + y) * 2 is not expanded into x*2 + y*2.
  Expr affine(const Expr& e) {
    Linear l = linearize(e);
    Expr best = delinearize(l);
    // c * (a // c) is a - a % c exactly: `(n + 3) // 4 * 4 - n` becomes `3 - (n + 3) % 4`.
    Linear expanded = l;
    expanded.terms.clear();
    bool any = false;
    for (const Term& term : l.terms) {
      const auto* d = term.atom.as<FloorDiv>();
      auto c = d ? as_const_int(d->b) : std::nullopt;
      if (c && *c > 0 && term.coeff % *c == 0) {
        accumulate(d->a, term.coeff / *c, &expanded);
        add_term(&expanded, FloorMod::make(d->a, d->b), -(term.coeff / *c));
        any = true;
      } else {
        add_term(&expanded, term.atom, term.coeff);
      }
    }
    if (any) {
      Expr alt = delinearize(drop_zero_terms(expanded));
      if (node_count(alt) < node_count(best)) best = alt;
    }
    if (equal(best, e) || node_count(best) > node_count(e)) return Expr();
    return best;
  }

  // k*x - k*(x % c1) is k*c1*(x // c1): a multiple of c when c divides c1. Written as one term,
  // the division below sees it (a tile's start, `fused - fused % 32` after fusing, divided by
  // the tile width 32, is `fused // 32`; without this a packed operand's index stays a gather).
  static Linear pair_remainders(Linear l, int64_t c) {
    for (size_t i = 0; i < l.terms.size(); ++i) {
      const auto* m = l.terms[i].atom.as<FloorMod>();
      auto c1 = m ? as_const_int(m->b) : std::nullopt;
      if (!c1 || *c1 <= 0 || *c1 % c != 0) continue;
      for (size_t j = 0; j < l.terms.size(); ++j) {
        if (j == i || l.terms[j].coeff != -l.terms[i].coeff || !equal(l.terms[j].atom, m->a)) {
          continue;
        }
        int64_t coeff;
        if (__builtin_mul_overflow(l.terms[j].coeff, *c1, &coeff)) continue;
        Term merged{FloorDiv::make(m->a, m->b), coeff};
        l.terms[i] = merged;
        l.terms.erase(l.terms.begin() + static_cast<std::ptrdiff_t>(j));
        break;
      }
    }
    return l;
  }

  // floordiv / floormod by a positive constant c: (c*q + r) // c is q + r // c and
  // (c*q + r) % c is r % c; when r is known to lie in [k*c, (k+1)*c), r // c is the constant k.
  Expr floor_division(bool div, const Expr& a, const Expr& b) {
    auto c = as_const_int(b);
    if (!c || *c <= 0) return Expr();
    DataType t = a.dtype();
    // Nested: (x // c1) // c2 == x // (c1 * c2) and (x % c1) % c2 == x % c2 when c2 divides c1.
    if (const auto* inner = a.as<FloorDiv>(); div && inner) {
      auto c1 = as_const_int(inner->b);
      int64_t prod;
      if (c1 && *c1 > 0 && !__builtin_mul_overflow(*c1, *c, &prod) &&
          IntImm::make(t, prod).as<IntImm>()->value == prod) {
        return mutate(FloorDiv::make(inner->a, IntImm::make(t, prod)));
      }
    }
    if (const auto* inner = a.as<FloorMod>(); !div && inner) {
      auto c1 = as_const_int(inner->b);
      if (c1 && *c1 > 0 && *c1 % *c == 0) return mutate(FloorMod::make(inner->a, b));
    }
    Linear l = pair_remainders(linearize(a), *c);
    Linear q{t, {}, floor_div(l.constant, *c)};
    Linear r{t, {}, floor_mod(l.constant, *c)};
    for (const Term& term : l.terms) {
      if (term.coeff % *c == 0) {
        q.terms.push_back({term.atom, term.coeff / *c});
      } else {
        r.terms.push_back(term);
      }
    }
    Expr rest = delinearize(r);
    Interval rb = bounds(rest);
    // Moving a negative constant into [0, c) can overflow the remainder: (n - 1) // c + 1 would
    // become (n + (c - 1)) // c, which wraps for int32 n near 2**31 - c. Keep the constant where
    // it was unless the moved remainder provably fits the type. (A positive constant only shrinks
    // towards zero, so it cannot overflow where the original sum did not.)
    if (l.constant < 0 && r.constant > 0 && !fits_type(rb, t)) {
      q.constant = 0;
      r.constant = l.constant;
      rest = delinearize(r);
      rb = bounds(rest);
    }
    std::optional<int64_t> k;
    if (rb.known() && floor_div(*rb.lo, *c) == floor_div(*rb.hi, *c)) k = floor_div(*rb.lo, *c);
    if (div) {
      if (k) {
        q.constant += *k;
        return delinearize(q);
      }
      if (q.terms.empty() && q.constant == 0) return Expr();
      q.terms.push_back({FloorDiv::make(rest, b), 1});
      return delinearize(q);
    }
    if (k) return mutate(Sub::make(rest, IntImm::make(t, *k * *c)));
    if (q.terms.empty() && floor_div(l.constant, *c) == 0) return Expr();
    return FloorMod::make(rest, b);
  }

  template <typename T>
  Expr compare(const Expr& a, const Expr& b) {
    constexpr ExprKind k = T::kKind;
    auto boolean = [](bool v) { return IntImm::make(DataType::Bool(), v); };
    DataType t = a.dtype();
    if (t.is_vector()) return rewrite_vector<T>(a, b);
    // Floats: x == x is false for NaN, so nothing is decided without constants.
    if (!t.is_integer() && !t.is_bool()) return Expr();
    if (equal(a, b)) {
      return boolean(k == ExprKind::kEQ || k == ExprKind::kLE || k == ExprKind::kGE);
    }
    Interval d = difference(a, b);
    bool lt = d.hi && *d.hi < 0, gt = d.lo && *d.lo > 0;
    bool le = d.hi && *d.hi <= 0, ge = d.lo && *d.lo >= 0;
    bool zero = le && ge;
    if constexpr (k == ExprKind::kEQ) {
      if (zero || lt || gt) return boolean(zero);
    }
    if constexpr (k == ExprKind::kNE) {
      if (zero || lt || gt) return boolean(!zero);
    }
    if constexpr (k == ExprKind::kLT) {
      if (lt || ge) return boolean(lt);
    }
    if constexpr (k == ExprKind::kLE) {
      if (le || gt) return boolean(le);
    }
    if constexpr (k == ExprKind::kGT) {
      if (gt || le) return boolean(gt);
    }
    if constexpr (k == ExprKind::kGE) {
      if (ge || lt) return boolean(ge);
    }
    return Expr();
  }

  // Vectors: an operation on two broadcasts is the broadcast of the scalar operation, and ramps
  // stay ramps under + and - of a broadcast, + of a ramp, and * by a broadcast.
  template <typename T>
  Expr rewrite_vector(const Expr& a, const Expr& b) {
    constexpr ExprKind k = T::kKind;
    int lanes = a.dtype().lanes();
    const auto *ba = a.as<Broadcast>(), *bb = b.as<Broadcast>();
    const auto *ra = a.as<Ramp>(), *rb = b.as<Ramp>();
    if (ba && bb) return Broadcast::make(mutate(T::make(ba->value, bb->value)), lanes);
    auto ramp = [&](const Expr& base, const Expr& stride) {
      Expr s = mutate(stride);
      if (is_const_int(s, 0)) return Broadcast::make(mutate(base), lanes);
      return Ramp::make(mutate(base), s, lanes);
    };
    if constexpr (k == ExprKind::kAdd) {
      if (ra && bb) return ramp(Add::make(ra->base, bb->value), ra->stride);
      if (ba && rb) return ramp(Add::make(ba->value, rb->base), rb->stride);
      if (ra && rb) return ramp(Add::make(ra->base, rb->base), Add::make(ra->stride, rb->stride));
    }
    if constexpr (k == ExprKind::kSub) {
      if (ra && bb) return ramp(Sub::make(ra->base, bb->value), ra->stride);
      if (ra && rb) return ramp(Sub::make(ra->base, rb->base), Sub::make(ra->stride, rb->stride));
    }
    if constexpr (k == ExprKind::kMul) {
      if (ra && bb) return ramp(Mul::make(ra->base, bb->value), Mul::make(ra->stride, bb->value));
      if (ba && rb) return ramp(Mul::make(ba->value, rb->base), Mul::make(ba->value, rb->stride));
    }
    if constexpr (k == ExprKind::kFloorDiv || k == ExprKind::kFloorMod) {
      // ramp(b, s, n) // c where b % c == r and r + s*(n-1) < c: every lane has the quotient
      // b // c, and the remainders are ramp(r, s, n) (a vector of loads, not a gather)
      auto c = bb ? as_const_int(bb->value) : std::nullopt;
      auto s = ra ? as_const_int(ra->stride) : std::nullopt;
      if (c && s && *c > 0 && *s >= 0 && ra->base.dtype().is_int()) {
        auto r = as_const_int(mutate(FloorMod::make(ra->base, bb->value)));
        if (r && *r >= 0 && *r + *s * (lanes - 1) < *c) {
          if constexpr (k == ExprKind::kFloorDiv) {
            return Broadcast::make(mutate(FloorDiv::make(ra->base, bb->value)), lanes);
          } else {
            return Ramp::make(IntImm::make(ra->base.dtype(), *r), ra->stride, lanes);
          }
        }
        // The same when b is g*k + r0 for any k, g divides c and r0 + s*(n-1) < g: the lanes
        // stay inside one multiple of g, which no multiple of c splits. A vectorized fused
        // loop over whole rows, ramp(8 * i, 1, 8) // 56 and % 56, is then a row and a ramp
        // within it (a vector load from a view whose rows are apart, not a gather).
        if (!r) {
          Linear l = linearize(ra->base);
          int64_t g = 0;
          for (const Term& t : l.terms) g = std::gcd(g, t.coeff < 0 ? -t.coeff : t.coeff);
          if (g > 0 && *c % g == 0) {
            int64_t r0 = ((l.constant % g) + g) % g;
            if (r0 + *s * (lanes - 1) < g) {
              if constexpr (k == ExprKind::kFloorDiv) {
                return Broadcast::make(mutate(FloorDiv::make(ra->base, bb->value)), lanes);
              } else {
                return Ramp::make(mutate(FloorMod::make(ra->base, bb->value)), ra->stride, lanes);
              }
            }
          }
        }
      }
    }
    if constexpr (k == ExprKind::kAdd) return fold_vector_div_mod(a, b);
    return Expr();
  }

  // A term of a vector sum, k * cast(x op c) with op // or % by a constant c > 0 (k is 1 and
  // the cast absent where not written); `op` is null for any other term.
  struct DivModTerm {
    Expr x;  // undefined for any other term
    bool is_div = false;
    int64_t c = 0, k = 1;
  };

  static DivModTerm div_mod_term(const Expr& term) {
    DivModTerm d;
    Expr e = term;
    if (const auto* m = e.as<Mul>()) {
      const auto* bk = m->b.as<Broadcast>();
      auto k = bk ? as_const_int(bk->value) : as_const_int(m->b);
      if (!k) return d;
      d.k = *k;
      e = m->a;
    }
    if (const auto* c = e.as<Cast>()) {
      if (!c->value.dtype().is_int()) return d;
      e = c->value;
    }
    Expr x, divisor;
    if (const auto* v = e.as<FloorDiv>()) x = v->a, divisor = v->b, d.is_div = true;
    if (const auto* v = e.as<FloorMod>()) x = v->a, divisor = v->b;
    const auto* bc = divisor.defined() ? divisor.as<Broadcast>() : nullptr;
    auto c = bc                  ? as_const_int(bc->value)
             : divisor.defined() ? as_const_int(divisor)
                                 : std::nullopt;
    if (!c || *c <= 0) return d;
    d.x = x;
    d.c = *c;
    return d;
  }

  static void sum_terms(const Expr& e, std::vector<Expr>* terms) {
    if (const auto* add = e.as<Add>()) {
      sum_terms(add->a, terms);
      sum_terms(add->b, terms);
    } else {
      terms->push_back(e);
    }
  }

  // k*c * cast(x // c) + k * cast(x % c) is k * cast(x) for vectors as for scalars (affine()
  // does the scalar case; the cast widens exactly, as the quotient and remainder of x fit its
  // type): the flat index of an (h, w) tile read along one axis k, (k // w) * w + k % w once
  // the strides are the compact ones, is then a ramp and its load contiguous, not a gather.
  Expr fold_vector_div_mod(const Expr& a, const Expr& b) {
    if (!a.dtype().is_int()) return Expr();
    std::vector<Expr> terms;
    sum_terms(a, &terms);
    sum_terms(b, &terms);
    for (size_t i = 0; i < terms.size(); ++i) {
      DivModTerm r = div_mod_term(terms[i]);
      if (!r.x.defined() || r.is_div) continue;
      for (size_t j = 0; j < terms.size(); ++j) {
        DivModTerm q = div_mod_term(terms[j]);
        int64_t kc;
        if (j == i || !q.x.defined() || !q.is_div || q.c != r.c ||
            __builtin_mul_overflow(r.k, r.c, &kc) || q.k != kc || !equal(q.x, r.x)) {
          continue;
        }
        DataType t = a.dtype();
        Expr x = r.x.dtype() == t ? r.x : Cast::make(t, r.x);
        if (r.k != 1) {
          Expr k = IntImm::make(t.element_of(), r.k);
          x = Mul::make(x, t.is_vector() ? Broadcast::make(k, t.lanes()) : k);
        }
        terms[i] = x;
        terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(j));
        Expr sum = terms[0];
        for (size_t n = 1; n < terms.size(); ++n) sum = Add::make(sum, terms[n]);
        return mutate(sum);
      }
    }
    return Expr();
  }

  Expr mutate_node(const Not* op, const Expr& self) override {
    Expr a = mutate(op->a);
    if (auto v = as_const_int(a)) return IntImm::make(a.dtype(), *v == 0);
    if (const auto* n = a.as<Not>()) return n->a;
    if (const auto* b = a.as<Broadcast>()) {
      return Broadcast::make(mutate(Not::make(b->value)), b->lanes);
    }
    // !(a < b) is a >= b for integers; not for floats, where both are false with a NaN.
    if (a.dtype().is_scalar()) {
      if (Expr inv = invert_int_comparison(a); inv.defined()) return inv;
    }
    return a.same_as(op->a) ? self : Not::make(a);
  }

  static Expr invert_int_comparison(const Expr& e) {
    auto integer = [](const Expr& x) { return x.dtype().is_integer() || x.dtype().is_bool(); };
    if (const auto* c = e.as<LT>(); c && integer(c->a)) return GE::make(c->a, c->b);
    if (const auto* c = e.as<LE>(); c && integer(c->a)) return GT::make(c->a, c->b);
    if (const auto* c = e.as<GT>(); c && integer(c->a)) return LE::make(c->a, c->b);
    if (const auto* c = e.as<GE>(); c && integer(c->a)) return LT::make(c->a, c->b);
    if (const auto* c = e.as<EQ>(); c && integer(c->a)) return NE::make(c->a, c->b);
    if (const auto* c = e.as<NE>(); c && integer(c->a)) return EQ::make(c->a, c->b);
    return Expr();
  }

  // A condition's constant value, also through a broadcast.
  static std::optional<int64_t> const_condition(const Expr& c) {
    if (const auto* b = c.as<Broadcast>()) return as_const_int(b->value);
    return as_const_int(c);
  }

  Expr mutate_node(const Select* op, const Expr& self) override {
    Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
    if (auto v = const_condition(c)) return *v ? t : f;
    if (equal(t, f)) return t;
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) {
      return self;
    }
    return Select::make(c, t, f);
  }

  Expr mutate_node(const Call* op, const Expr& self) override {
    if (op->op == Intrinsic::kIfThenElse) {
      // Only the taken branch is kept, so the other one need not be simplified.
      Expr c = mutate(op->args[0]);
      if (auto v = const_condition(c)) return mutate(op->args[*v ? 1 : 2]);
    }
    bool changed = false;
    std::vector<Expr> args = mutate_all(op->args, &changed);
    if (op->op == Intrinsic::kIfThenElse && equal(args[1], args[2])) return args[1];
    if (is_bitwise_intrinsic(op->op)) {
      auto x = as_const_int(args[0]);
      auto y = args.size() == 2 ? as_const_int(args[1]) : std::optional<int64_t>(0);
      if (x && y) return fold_bitwise(op->op, op->dtype, *x, *y);
      // A shift by 0 is the value itself.
      bool shift = op->op == Intrinsic::kShiftLeft || op->op == Intrinsic::kShiftRight;
      if (shift && is_const_int(args[1], 0)) return args[0];
    }
    if (args.size() == 1) {
      if (Expr r = fold_call(op->op, args[0]); r.defined()) return r;
    }
    return changed ? Call::make(op->op, std::move(args)) : self;
  }

  // The exact functions of constants (no rounding question: floor, ceil, trunc, abs, isnan).
  static Expr fold_call(Intrinsic fn, const Expr& x) {
    DataType t = x.dtype();
    if (auto i = as_const_int(x); i && fn == Intrinsic::kAbs && t.is_int()) {
      return IntImm::make(t, *i < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(*i)) : *i);
    }
    auto f = as_const_float(x);
    if (!f || t.code() != DataType::kFloat || t.bits() < 32) return Expr();
    switch (fn) {
      case Intrinsic::kFloor:
        return FloatImm::make(t, std::floor(*f));
      case Intrinsic::kCeil:
        return FloatImm::make(t, std::ceil(*f));
      case Intrinsic::kTrunc:
        return FloatImm::make(t, std::trunc(*f));
      case Intrinsic::kAbs:
        return FloatImm::make(t, std::fabs(*f));
      case Intrinsic::kIsNan:
        return IntImm::make(DataType::Bool(), std::isnan(*f));
      default:
        return Expr();
    }
  }

  // Constants and variables are cheap to repeat: they are substituted into the body.
  static bool trivial(const Expr& e) { return e.as<IntImm>() || e.as<FloatImm>() || e.as<Var>(); }

  Expr mutate_node(const Let* op, const Expr& self) override {
    Expr v = mutate(op->value);
    if (trivial(v)) return with_substitution(op->var, v, [&] { return mutate(op->body); });
    Expr b = with_bounds(op->var, bounds(v), [&] { return mutate(op->body); });
    return v.same_as(op->value) && b.same_as(op->body) ? self : Let::make(op->var, v, b);
  }

  // -- statements -----------------------------------------------------------------------------

  static Stmt noop() { return Evaluate::make(IntImm::make(kIndexType, 0)); }
  static bool is_noop(const Stmt& s) {
    if (!s.defined()) return true;
    const auto* e = s.as<Evaluate>();
    return e && e->value.as<IntImm>();
  }

  Stmt mutate_node(const For* op, const Stmt& self) override {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    auto n = as_const_int(extent);
    if (n && *n <= 0) return noop();
    if (n && *n == 1) return with_substitution(op->var, min, [&] { return mutate(op->body); });
    Interval mb = bounds(min), eb = bounds(extent);
    Interval range{mb.lo, checked_add(checked_add(mb.hi, eb.hi), int64_t{-1})};
    Stmt body = with_bounds(op->var, range, [&] { return mutate(op->body); });
    if (is_noop(body)) return noop();
    if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return self;
    return For::make(op->var, min, extent, op->for_kind, body);
  }

  Stmt mutate_node(const IfThenElse* op, const Stmt& self) override {
    Expr c = mutate(op->condition);
    if (auto v = as_const_int(c)) {
      if (*v) return mutate(op->then_case);
      return op->else_case.defined() ? mutate(op->else_case) : noop();
    }
    Stmt t = mutate(op->then_case), e = mutate(op->else_case);
    if (is_noop(e)) e = Stmt();
    if (is_noop(t)) {
      if (!e.defined()) return noop();
      return IfThenElse::make(mutate(Not::make(c)), e);
    }
    if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) {
      return self;
    }
    return IfThenElse::make(c, t, e);
  }

  Stmt mutate_node(const LetStmt* op, const Stmt& self) override {
    Expr v = mutate(op->value);
    if (trivial(v)) return with_substitution(op->var, v, [&] { return mutate(op->body); });
    Stmt b = with_bounds(op->var, bounds(v), [&] { return mutate(op->body); });
    if (is_noop(b)) return noop();
    return v.same_as(op->value) && b.same_as(op->body) ? self : LetStmt::make(op->var, v, b);
  }

  Stmt mutate_node(const Block* op, const Stmt& self) override {
    std::vector<Stmt> out;
    bool changed = false;
    for (const Stmt& s : op->stmts) {
      Stmt m = mutate(s);
      changed |= !m.same_as(s) || m.as<Block>() != nullptr;
      if (is_noop(m)) {
        changed = true;
      } else {
        out.push_back(m);
      }
    }
    return changed ? Block::make(std::move(out)) : self;
  }

  Stmt mutate_node(const Allocate* op, const Stmt& self) override {
    Stmt b = mutate(op->body);
    if (is_noop(b)) return noop();
    return b.same_as(op->body) ? self : Allocate::make(op->buffer, b);
  }

  Stmt mutate_node(const Realize* op, const Stmt& self) override {
    Stmt s = IRMutator::mutate_node(op, self);
    const auto* r = s.as<Realize>();
    return r && is_noop(r->body) ? noop() : s;
  }

 private:
  // What is known about var holds only inside f: results remembered outside do not apply there,
  // nor the ones remembered there outside.
  template <typename F>
  auto with_substitution(const Expr& var, const Expr& value, F f) -> decltype(f()) {
    subst_[var.get()] = value;
    auto r = with_fresh_memo(f);
    subst_.erase(var.get());
    return r;
  }

  template <typename F>
  auto with_bounds(const Expr& var, const Interval& range, F f) -> decltype(f()) {
    const auto* v = var.as<Var>();
    bool bounded = v && v->dtype.is_int() && (range.lo || range.hi);
    if (!bounded) return f();
    var_bounds_[v] = range;
    auto r = with_fresh_memo(f);
    var_bounds_.erase(v);
    return r;
  }

  std::unordered_map<const ExprNode*, Expr> subst_;
  std::unordered_map<const Var*, Interval> var_bounds_;
};

}  // namespace

Expr simplify(const Expr& e) { return Simplifier().mutate(e); }
Stmt simplify(const Stmt& s) { return Simplifier().mutate(s); }

}  // namespace ptb
