#include "ir/op.h"

#include <cmath>
#include <limits>

#include "ir/printer.h"
#include "support/error.h"

namespace ptb {

Expr make_const(DataType t, int64_t value) {
  // float32 rounded once, from the integer: through double first, 2**60 + 2**36 + 1 rounds
  // twice and lands one ulp from what the generated code's conversion gives
  if (t.code() == DataType::kFloat && t.bits() == 32) {
    return FloatImm::make(t, static_cast<float>(value));
  }
  if (t.is_float()) return FloatImm::make(t, static_cast<double>(value));
  return IntImm::make(t, value);
}

Expr make_const(DataType t, double value) {
  if (t.is_float()) return FloatImm::make(t, value);
  return IntImm::make(t, static_cast<int64_t>(value));
}

Expr make_zero(DataType t) { return make_const(t, int64_t{0}); }
Expr make_one(DataType t) { return make_const(t, int64_t{1}); }

Expr max_value(DataType t) {
  PTB_ICHECK(t.is_scalar(), "max_value of a vector type");
  switch (t.code()) {
    case DataType::kInt:
      return IntImm::make(t, t.bits() == 64 ? std::numeric_limits<int64_t>::max()
                                            : (int64_t{1} << (t.bits() - 1)) - 1);
    case DataType::kUInt:
      return IntImm::make(t, t.bits() == 64 ? -1 : (int64_t{1} << t.bits()) - 1);
    case DataType::kBool:
      return IntImm::make(t, 1);
    case DataType::kBFloat:
      return FloatImm::make(t, 3.3895313892515355e38);
    case DataType::kFloat:
      if (t.bits() == 16) return FloatImm::make(t, 65504.0);
      if (t.bits() == 32) return FloatImm::make(t, std::numeric_limits<float>::max());
      return FloatImm::make(t, std::numeric_limits<double>::max());
    default:
      type_error("max_value() of ", t.str());
  }
}

Expr min_value(DataType t) {
  PTB_ICHECK(t.is_scalar(), "min_value of a vector type");
  switch (t.code()) {
    case DataType::kInt:
      return IntImm::make(t, t.bits() == 64 ? std::numeric_limits<int64_t>::min()
                                            : -(int64_t{1} << (t.bits() - 1)));
    case DataType::kUInt:
    case DataType::kBool:
      return IntImm::make(t, 0);
    case DataType::kBFloat:
    case DataType::kFloat:
      return FloatImm::make(t, -as_const_float(max_value(t)).value());
    default:
      type_error("min_value() of ", t.str());
  }
}

std::optional<int64_t> as_const_int(const Expr& e) {
  if (const auto* i = e.as<IntImm>()) return i->value;
  return std::nullopt;
}

std::optional<double> as_const_float(const Expr& e) {
  if (const auto* f = e.as<FloatImm>()) return f->value;
  return std::nullopt;
}

bool is_const_int(const Expr& e, int64_t value) {
  auto v = as_const_int(e);
  return v && *v == value;
}

Expr cast(DataType t, Expr value) {
  if (value.dtype() == t) return value;
  if (t.is_scalar()) {
    if (auto i = as_const_int(value); i && !value.dtype().is_uint()) return make_const(t, *i);
    if (auto f = as_const_float(value); f && t.is_float()) return FloatImm::make(t, *f);
  }
  return Cast::make(t, std::move(value));
}

Expr floordiv(Expr a, Expr b) {
  if (a.dtype().is_float()) return Call::make(Intrinsic::kFloorDivide, {a, b});
  return FloorDiv::make(std::move(a), std::move(b));
}

Expr floormod(Expr a, Expr b) {
  if (a.dtype().is_float()) return Call::make(Intrinsic::kFloorMod, {a, b});
  return FloorMod::make(std::move(a), std::move(b));
}

Expr truncdiv(Expr a, Expr b) {
  if (!a.dtype().is_integer()) type_error("truncdiv() needs integers, found ", a.dtype().str());
  return Div::make(std::move(a), std::move(b));
}

Expr truncmod(Expr a, Expr b) {
  if (!a.dtype().is_integer()) type_error("truncmod() needs integers, found ", a.dtype().str());
  return Mod::make(std::move(a), std::move(b));
}

Expr true_div(Expr a, Expr b) {
  if (a.dtype().is_integer() && b.dtype().is_integer()) {
    type_error("'/' between integer expressions (", a.dtype().str(), ", ", b.dtype().str(),
               "): use '//' for floor division or astype() to a float dtype");
  }
  return Div::make(std::move(a), std::move(b));
}

Expr power(Expr a, Expr b) {
  if (!a.dtype().is_integer()) return Call::make(Intrinsic::kPow, {std::move(a), std::move(b)});
  // Integers, as NumPy's int ** int: a constant exponent >= 0 is repeated multiplication (by
  // squaring), wrapping as the products do.
  auto exponent = as_const_int(b);
  if (!exponent) {
    type_error("power() of integers needs a constant exponent, found ", to_string(b),
               "; cast the base to a float dtype with astype()");
  }
  if (*exponent < 0) {
    value_error("integers to negative integer powers are not allowed (exponent ", *exponent,
                "); cast the base to a float dtype with astype()");
  }
  Expr result = make_const(a.dtype(), int64_t{1});
  bool first = true;
  for (int64_t k = *exponent; k > 0; k >>= 1) {
    if (k & 1) {
      result = first ? a : Mul::make(result, a);
      first = false;
    }
    if (k > 1) a = Mul::make(a, a);
  }
  return result;
}

namespace {

bool both_bool(const Expr& a, const Expr& b) { return a.dtype().is_bool() && b.dtype().is_bool(); }

}  // namespace

Expr bitwise_and(Expr a, Expr b) {
  if (both_bool(a, b)) return And::make(std::move(a), std::move(b));
  return Call::make(Intrinsic::kBitwiseAnd, {std::move(a), std::move(b)});
}

Expr bitwise_or(Expr a, Expr b) {
  if (both_bool(a, b)) return Or::make(std::move(a), std::move(b));
  return Call::make(Intrinsic::kBitwiseOr, {std::move(a), std::move(b)});
}

Expr bitwise_xor(Expr a, Expr b) {
  // Exclusive or of truth values is inequality.
  if (both_bool(a, b)) return NE::make(std::move(a), std::move(b));
  return Call::make(Intrinsic::kBitwiseXor, {std::move(a), std::move(b)});
}

Expr bitwise_not(Expr a) {
  if (a.dtype().is_bool()) return Not::make(std::move(a));
  return Call::make(Intrinsic::kBitwiseNot, {std::move(a)});
}

Expr shift_left(Expr a, Expr b) {
  return Call::make(Intrinsic::kShiftLeft, {std::move(a), std::move(b)});
}

Expr shift_right(Expr a, Expr b) {
  return Call::make(Intrinsic::kShiftRight, {std::move(a), std::move(b)});
}

Expr all_of(const std::vector<Expr>& conds) {
  if (conds.empty()) return IntImm::make(DataType::Bool(), 1);
  Expr r = conds[0];
  for (size_t i = 1; i < conds.size(); ++i) r = And::make(r, conds[i]);
  return r;
}

Expr any_of(const std::vector<Expr>& conds) {
  if (conds.empty()) return IntImm::make(DataType::Bool(), 0);
  Expr r = conds[0];
  for (size_t i = 1; i < conds.size(); ++i) r = Or::make(r, conds[i]);
  return r;
}

void split_conjuncts(const Expr& e, std::vector<Expr>* out) {
  if (const auto* a = e.as<And>()) {
    split_conjuncts(a->a, out);
    split_conjuncts(a->b, out);
  } else {
    out->push_back(e);
  }
}

namespace {

// Brings two index operands to a common integer type (the wider one).
void unify_index_types(Expr* a, Expr* b) {
  if (a->dtype() == b->dtype()) return;
  DataType t = a->dtype().bits() >= b->dtype().bits() ? a->dtype() : b->dtype();
  *a = cast(t, *a);
  *b = cast(t, *b);
}

}  // namespace

Expr idx_add(Expr a, Expr b) {
  unify_index_types(&a, &b);
  auto ca = as_const_int(a), cb = as_const_int(b);
  if (ca && cb) return IntImm::make(a.dtype(), *ca + *cb);
  if (ca && *ca == 0) return b;
  if (cb && *cb == 0) return a;
  return Add::make(a, b);
}

Expr idx_sub(Expr a, Expr b) {
  unify_index_types(&a, &b);
  auto ca = as_const_int(a), cb = as_const_int(b);
  if (ca && cb) return IntImm::make(a.dtype(), *ca - *cb);
  if (cb && *cb == 0) return a;
  if (a.same_as(b)) return make_zero(a.dtype());
  return Sub::make(a, b);
}

Expr idx_mul(Expr a, Expr b) {
  unify_index_types(&a, &b);
  auto ca = as_const_int(a), cb = as_const_int(b);
  if (ca && cb) return IntImm::make(a.dtype(), *ca * *cb);
  if ((ca && *ca == 0) || (cb && *cb == 0)) return make_zero(a.dtype());
  if (ca && *ca == 1) return b;
  if (cb && *cb == 1) return a;
  return Mul::make(a, b);
}

Expr idx_min(Expr a, Expr b) {
  unify_index_types(&a, &b);
  auto ca = as_const_int(a), cb = as_const_int(b);
  if (ca && cb) return IntImm::make(a.dtype(), std::min(*ca, *cb));
  if (a.same_as(b)) return a;
  return Min::make(a, b);
}

Expr idx_max(Expr a, Expr b) {
  unify_index_types(&a, &b);
  auto ca = as_const_int(a), cb = as_const_int(b);
  if (ca && cb) return IntImm::make(a.dtype(), std::max(*ca, *cb));
  if (a.same_as(b)) return a;
  return Max::make(a, b);
}

Expr reduce_identity(ReduceKind kind, DataType dtype) {
  switch (kind) {
    case ReduceKind::kSum:
      return make_zero(dtype);
    case ReduceKind::kProd:
      return make_one(dtype);
    // Floats start from the infinities, as NumPy and PyTorch do: the maximum of a row of -inf
    // (a fully masked attention row) is -inf, not the lowest finite value TVM starts from.
    case ReduceKind::kMin:
      if (dtype.is_float()) {
        return FloatImm::make(dtype, std::numeric_limits<double>::infinity());
      }
      return max_value(dtype);
    case ReduceKind::kMax:
      if (dtype.is_float()) {
        return FloatImm::make(dtype, -std::numeric_limits<double>::infinity());
      }
      return min_value(dtype);
    case ReduceKind::kCustom:
      break;
  }
  PTB_ICHECK(false, "a custom reducer's identity comes from the reducer (reduce_identity_of)");
  return Expr();
}

Expr reduce_identity_of(const Reduce& r) {
  if (r.reducer) return r.reducer->identity.at(static_cast<size_t>(r.value_index));
  return reduce_identity(r.combiner, r.dtype);
}

Expr reduce_combine(ReduceKind kind, Expr acc, Expr value) {
  switch (kind) {
    case ReduceKind::kSum:
      return Add::make(std::move(acc), std::move(value));
    case ReduceKind::kProd:
      return Mul::make(std::move(acc), std::move(value));
    case ReduceKind::kMin:
      return Min::make(std::move(acc), std::move(value));
    case ReduceKind::kMax:
      return Max::make(std::move(acc), std::move(value));
    case ReduceKind::kCustom:
      break;
  }
  PTB_ICHECK(false, "a custom reducer combines all its values at once (schedule_ops)");
  return Expr();
}

}  // namespace ptb
