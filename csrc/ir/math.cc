#include "ir/math.h"

#include <cmath>

#include "ir/op.h"
#include "support/error.h"

namespace ptb {

namespace {

// Functions that are not one intrinsic under their own name.
struct Composite {
  const char* name;
  int arity;
};
constexpr Composite kComposites[] = {
    {"fabs", 1},   {"pow", 2},    {"fdivide", 2}, {"rcbrt", 1},   {"rhypot", 2},
    {"norm3d", 3}, {"norm4d", 4}, {"rnorm3d", 3}, {"rnorm4d", 4}, {"normcdf", 1},
};

bool is_math_intrinsic(Intrinsic op) {
  return op != Intrinsic::kIfThenElse && op != Intrinsic::kIsNan && !is_bitwise_intrinsic(op);
}

int intrinsic_arity(Intrinsic op) {
  switch (op) {
    case Intrinsic::kFma:
      return 3;
    case Intrinsic::kPow:
    case Intrinsic::kFmod:
    case Intrinsic::kAtan2:
    case Intrinsic::kCopysign:
    case Intrinsic::kFdim:
    case Intrinsic::kHypot:
    case Intrinsic::kNextafter:
    case Intrinsic::kRemainder:
    case Intrinsic::kFloorDivide:
    case Intrinsic::kFloorMod:
      return 2;
    default:
      return 1;
  }
}

const Intrinsic* find_intrinsic(const std::string& name) {
  static const std::vector<Intrinsic> all = [] {
    std::vector<Intrinsic> out;
    for (int i = 0; i < static_cast<int>(Intrinsic::kIfThenElse); ++i) {
      auto op = static_cast<Intrinsic>(i);
      if (is_math_intrinsic(op)) out.push_back(op);
    }
    return out;
  }();
  for (const Intrinsic& op : all) {
    if (name == intrinsic_name(op)) return &op;
  }
  return nullptr;
}

Expr call(Intrinsic op, std::vector<Expr> args) { return Call::make(op, std::move(args)); }

Expr reciprocal(const Expr& x) { return Div::make(make_one(x.dtype()), x); }

void check_float(const std::string& name, const std::vector<Expr>& args) {
  for (const Expr& a : args) {
    if (!a.dtype().is_float()) {
      type_error(name, "() needs float operands, found ", a.dtype().str(),
                 "; cast it with astype('float32')");
    }
    if (a.dtype() != args[0].dtype()) {
      type_error(name, "() needs operands of one dtype, found ", args[0].dtype().str(), " and ",
                 a.dtype().str(), "; cast with astype()");
    }
  }
}

// hypot of several values, overflow-free: hypot(hypot(a, b), c)...
Expr norm(const std::vector<Expr>& v) {
  if (v.size() == 4) {
    return call(Intrinsic::kHypot,
                {call(Intrinsic::kHypot, {v[0], v[1]}), call(Intrinsic::kHypot, {v[2], v[3]})});
  }
  return call(Intrinsic::kHypot, {call(Intrinsic::kHypot, {v[0], v[1]}), v[2]});
}

Expr composite(const std::string& name, std::vector<Expr> args) {
  if (name == "fabs") return call(Intrinsic::kAbs, std::move(args));
  if (name == "pow") return call(Intrinsic::kPow, std::move(args));
  check_float(name, args);
  if (name == "fdivide") return Div::make(args[0], args[1]);
  if (name == "rcbrt") return reciprocal(call(Intrinsic::kCbrt, std::move(args)));
  if (name == "rhypot") return reciprocal(call(Intrinsic::kHypot, std::move(args)));
  if (name == "norm3d" || name == "norm4d") return norm(args);
  if (name == "rnorm3d" || name == "rnorm4d") return reciprocal(norm(args));
  PTB_ICHECK(name == "normcdf", name);
  // Phi(x) = erfc(-x / sqrt(2)) / 2, accurate in both tails.
  DataType t = args[0].dtype();
  Expr scaled = Mul::make(args[0], make_const(t, -std::sqrt(0.5)));
  return Mul::make(make_const(t, 0.5), call(Intrinsic::kErfc, {scaled}));
}

}  // namespace

int math_function_arity(const std::string& name) {
  if (const Intrinsic* op = find_intrinsic(name)) return intrinsic_arity(*op);
  for (const Composite& c : kComposites) {
    if (name == c.name) return c.arity;
  }
  return 0;
}

Expr math_function(const std::string& name, std::vector<Expr> args) {
  int arity = math_function_arity(name);
  if (arity == 0) value_error("unknown math function '", name, "'");
  if (static_cast<int>(args.size()) != arity) {
    type_error(name, "() takes ", arity, " argument(s), got ", args.size());
  }
  if (const Intrinsic* op = find_intrinsic(name)) return call(*op, std::move(args));
  return composite(name, std::move(args));
}

std::vector<std::string> math_function_names() {
  std::vector<std::string> out;
  for (int i = 0; i < static_cast<int>(Intrinsic::kIfThenElse); ++i) {
    auto op = static_cast<Intrinsic>(i);
    if (is_math_intrinsic(op)) out.emplace_back(intrinsic_name(op));
  }
  for (const Composite& c : kComposites) out.emplace_back(c.name);
  return out;
}

}  // namespace ptb
