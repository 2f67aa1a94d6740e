#include "ir/expr.h"

#include <cmath>

#include "ir/op.h"
#include "ir/stmt.h"
#include "ir/visitor.h"
#include "support/error.h"
#include "te/operation.h"

namespace ptb {

namespace {

// Wraps an integer to the width and signedness of `t`, as a C cast would.
int64_t wrap_to_dtype(DataType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  if (t.bits() >= 64) return v;
  uint64_t mask = (uint64_t{1} << t.bits()) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (t.is_int() && (u >> (t.bits() - 1)) != 0) u |= ~mask;  // sign-extend
  return static_cast<int64_t>(u);
}

void check_same_dtype(const char* op, const Expr& a, const Expr& b) {
  PTB_ICHECK(a.defined() && b.defined(), op, " needs two operands");
  if (a.dtype() != b.dtype()) {
    type_error("operands of ", op, " have different dtypes: ", a.dtype().str(), " and ",
               b.dtype().str(), "; cast one of them with astype()");
  }
}

template <typename T>
constexpr const char* binary_name();
#define PTB_BINARY_NAME(T, s)              \
  template <>                              \
  constexpr const char* binary_name<T>() { \
    return s;                              \
  }
PTB_BINARY_NAME(Add, "+")
PTB_BINARY_NAME(Sub, "-")
PTB_BINARY_NAME(Mul, "*")
PTB_BINARY_NAME(Div, "/")
PTB_BINARY_NAME(Mod, "%")
PTB_BINARY_NAME(FloorDiv, "//")
PTB_BINARY_NAME(FloorMod, "floormod")
PTB_BINARY_NAME(Min, "min")
PTB_BINARY_NAME(Max, "max")
PTB_BINARY_NAME(EQ, "==")
PTB_BINARY_NAME(NE, "!=")
PTB_BINARY_NAME(LT, "<")
PTB_BINARY_NAME(LE, "<=")
PTB_BINARY_NAME(GT, ">")
PTB_BINARY_NAME(GE, ">=")
PTB_BINARY_NAME(And, "&")
PTB_BINARY_NAME(Or, "|")
#undef PTB_BINARY_NAME

template <typename T>
constexpr bool is_comparison() {
  return T::kKind == ExprKind::kEQ || T::kKind == ExprKind::kNE || T::kKind == ExprKind::kLT ||
         T::kKind == ExprKind::kLE || T::kKind == ExprKind::kGT || T::kKind == ExprKind::kGE;
}

}  // namespace

namespace detail {

namespace {

// The children waiting to be released by the outermost node destructor of this thread.
thread_local std::vector<std::shared_ptr<const void>>* tl_pending = nullptr;

void defer(std::shared_ptr<const void> node) {
  // Shared with others: dropping this reference frees nothing (and if another thread drops its
  // reference at the same moment, the node is freed here, one level deeper, which is harmless).
  if (!node || node.use_count() > 1) return;
  if (tl_pending != nullptr) {
    tl_pending->push_back(std::move(node));
    return;
  }
  std::vector<std::shared_ptr<const void>> pending;
  tl_pending = &pending;
  pending.push_back(std::move(node));
  while (!pending.empty()) {
    std::shared_ptr<const void> next = std::move(pending.back());
    pending.pop_back();
    next.reset();  // its destructor appends its own children to `pending`
  }
  tl_pending = nullptr;
}

}  // namespace

// Destruction ignores constness: the const members of a node being destroyed may be emptied.
void release_child(const Expr& child) { defer(std::move(const_cast<Expr&>(child).node_)); }
void release_child(const Stmt& child) { defer(std::move(const_cast<Stmt&>(child).node_)); }
void release_children(const std::vector<Expr>& children) {
  for (const Expr& c : children) release_child(c);
}
void release_children(const std::vector<Stmt>& children) {
  for (const Stmt& c : children) release_child(c);
}

}  // namespace detail

Expr IntImm::make(DataType t, int64_t value) {
  PTB_ICHECK(t.is_integer() || t.is_bool(), "IntImm of ", t.str());
  PTB_ICHECK(t.is_scalar(), "IntImm must be scalar");
  return Expr(std::make_shared<IntImm>(t, wrap_to_dtype(t, value)));
}

namespace {

// `value` rounded to the nearest number of a binary format with `mantissa_bits` explicit bits,
// normal exponents from `min_exponent` and largest finite `max_finite` (ties to even; past the
// largest finite, infinity), as a conversion to that format rounds.
double round_to_format(double value, int mantissa_bits, int min_exponent, double max_finite) {
  if (!std::isfinite(value) || value == 0) return value;
  int exponent = 0;
  std::frexp(value, &exponent);  // |value| in [2^(exponent-1), 2^exponent)
  const int e = std::max(exponent - 1, min_exponent);
  const double quantum = std::ldexp(1.0, e - mantissa_bits);
  const double rounded = std::nearbyint(value / quantum) * quantum;  // exact scaling
  if (std::fabs(rounded) > max_finite) return std::copysign(INFINITY, value);
  return rounded;
}

}  // namespace

Expr FloatImm::make(DataType t, double value) {
  PTB_ICHECK(t.is_float() && t.is_scalar(), "FloatImm of ", t.str());
  // The value a constant of this dtype holds: a float32 constant of 0.1000000001 is 0.1f, as
  // the kernel computes with it, so that folding (in double) and printing (9 digits, the
  // cache's key) see the same number the kernel does.
  if (t.bits() == 32) {
    value = static_cast<double>(static_cast<float>(value));
  } else if (t.is_bfloat()) {
    value = round_to_format(value, 7, -126, 3.38953138925153547590470800371487866880e38);
  } else if (t.bits() == 16) {
    value = round_to_format(value, 10, -14, 65504.0);
  }
  return Expr(std::make_shared<FloatImm>(t, value));
}

Expr Var::make(DataType t, const std::string& name) { return Expr(std::make_shared<Var>(t, name)); }

Expr Cast::make(DataType t, Expr value) {
  PTB_ICHECK(value.defined(), "cast of nothing");
  if (t.lanes() != value.dtype().lanes()) {
    type_error("cannot cast ", value.dtype().str(), " to ", t.str(), ": lane counts differ");
  }
  if (t.is_void() || value.dtype().is_void()) type_error("cannot cast to or from void");
  return Expr(std::make_shared<Cast>(t, std::move(value)));
}

template <typename T>
Expr BinaryNode<T>::make(Expr a, Expr b) {
  check_same_dtype(binary_name<T>(), a, b);
  DataType t = a.dtype();
  if constexpr (T::kKind == ExprKind::kAnd || T::kKind == ExprKind::kOr) {
    if (!t.is_bool()) {
      type_error("operands of ", binary_name<T>(), " must be bool, found ", t.str(),
                 "; compare them first");
    }
  } else if constexpr (!is_comparison<T>()) {
    if (t.is_bool() && T::kKind != ExprKind::kMin && T::kKind != ExprKind::kMax) {
      type_error("arithmetic ", binary_name<T>(), " on bool operands; cast them with astype()");
    }
  }
  if constexpr (T::kKind == ExprKind::kFloorDiv || T::kKind == ExprKind::kFloorMod) {
    if (!t.is_integer())
      type_error(binary_name<T>(), " node needs integer operands, found ", t.str());
  }
  if constexpr (is_comparison<T>()) t = DataType::Bool(t.lanes());
  return Expr(std::make_shared<T>(t, std::move(a), std::move(b)));
}

template struct BinaryNode<Add>;
template struct BinaryNode<Sub>;
template struct BinaryNode<Mul>;
template struct BinaryNode<Div>;
template struct BinaryNode<Mod>;
template struct BinaryNode<FloorDiv>;
template struct BinaryNode<FloorMod>;
template struct BinaryNode<Min>;
template struct BinaryNode<Max>;
template struct BinaryNode<EQ>;
template struct BinaryNode<NE>;
template struct BinaryNode<LT>;
template struct BinaryNode<LE>;
template struct BinaryNode<GT>;
template struct BinaryNode<GE>;
template struct BinaryNode<And>;
template struct BinaryNode<Or>;

Expr Not::make(Expr a) {
  if (!a.dtype().is_bool()) type_error("operand of ~ must be bool, found ", a.dtype().str());
  DataType t = a.dtype();
  return Expr(std::make_shared<Not>(t, std::move(a)));
}

Expr Select::make(Expr condition, Expr true_value, Expr false_value) {
  if (!condition.dtype().is_bool()) {
    type_error("condition of select must be bool, found ", condition.dtype().str());
  }
  check_same_dtype("select", true_value, false_value);
  if (condition.dtype().lanes() != 1 && condition.dtype().lanes() != true_value.dtype().lanes()) {
    type_error("select condition has ", condition.dtype().lanes(), " lanes, values have ",
               true_value.dtype().lanes());
  }
  DataType t = true_value.dtype();
  return Expr(std::make_shared<Select>(t, std::move(condition), std::move(true_value),
                                       std::move(false_value)));
}

const char* intrinsic_name(Intrinsic op) {
  switch (op) {
    case Intrinsic::kExp:
      return "exp";
    case Intrinsic::kExp2:
      return "exp2";
    case Intrinsic::kLog:
      return "log";
    case Intrinsic::kLog2:
      return "log2";
    case Intrinsic::kLog10:
      return "log10";
    case Intrinsic::kLog1p:
      return "log1p";
    case Intrinsic::kSqrt:
      return "sqrt";
    case Intrinsic::kRsqrt:
      return "rsqrt";
    case Intrinsic::kSin:
      return "sin";
    case Intrinsic::kCos:
      return "cos";
    case Intrinsic::kTan:
      return "tan";
    case Intrinsic::kTanh:
      return "tanh";
    case Intrinsic::kSigmoid:
      return "sigmoid";
    case Intrinsic::kErf:
      return "erf";
    case Intrinsic::kAbs:
      return "abs";
    case Intrinsic::kFloor:
      return "floor";
    case Intrinsic::kCeil:
      return "ceil";
    case Intrinsic::kRound:
      return "round";
    case Intrinsic::kTrunc:
      return "trunc";
    case Intrinsic::kPow:
      return "power";
    case Intrinsic::kFmod:
      return "fmod";
    case Intrinsic::kIsNan:
      return "isnan";
    case Intrinsic::kFma:
      return "fma";
    case Intrinsic::kAcos:
      return "acos";
    case Intrinsic::kAcosh:
      return "acosh";
    case Intrinsic::kAsin:
      return "asin";
    case Intrinsic::kAsinh:
      return "asinh";
    case Intrinsic::kAtan:
      return "atan";
    case Intrinsic::kAtanh:
      return "atanh";
    case Intrinsic::kCbrt:
      return "cbrt";
    case Intrinsic::kCosh:
      return "cosh";
    case Intrinsic::kSinh:
      return "sinh";
    case Intrinsic::kErfc:
      return "erfc";
    case Intrinsic::kExp10:
      return "exp10";
    case Intrinsic::kExpm1:
      return "expm1";
    case Intrinsic::kLgamma:
      return "lgamma";
    case Intrinsic::kTgamma:
      return "tgamma";
    case Intrinsic::kJ0:
      return "j0";
    case Intrinsic::kJ1:
      return "j1";
    case Intrinsic::kY0:
      return "y0";
    case Intrinsic::kY1:
      return "y1";
    case Intrinsic::kLogb:
      return "logb";
    case Intrinsic::kRoundHalfAway:
      return "round_half_away";
    case Intrinsic::kAtan2:
      return "atan2";
    case Intrinsic::kCopysign:
      return "copysign";
    case Intrinsic::kFdim:
      return "fdim";
    case Intrinsic::kHypot:
      return "hypot";
    case Intrinsic::kNextafter:
      return "nextafter";
    case Intrinsic::kRemainder:
      return "remainder";
    case Intrinsic::kFloorDivide:
      return "floor_divide";
    case Intrinsic::kFloorMod:
      return "floor_mod";
    case Intrinsic::kErfinv:
      return "erfinv";
    case Intrinsic::kErfcinv:
      return "erfcinv";
    case Intrinsic::kErfcx:
      return "erfcx";
    case Intrinsic::kNormcdfinv:
      return "normcdfinv";
    case Intrinsic::kBesselI0:
      return "cyl_bessel_i0";
    case Intrinsic::kBesselI1:
      return "cyl_bessel_i1";
    case Intrinsic::kSinpi:
      return "sinpi";
    case Intrinsic::kCospi:
      return "cospi";
    case Intrinsic::kIfThenElse:
      return "if_then_else";
    case Intrinsic::kPrefetch:
      return "prefetch";
    case Intrinsic::kBitwiseAnd:
      return "bitwise_and";
    case Intrinsic::kBitwiseOr:
      return "bitwise_or";
    case Intrinsic::kBitwiseXor:
      return "bitwise_xor";
    case Intrinsic::kBitwiseNot:
      return "bitwise_not";
    case Intrinsic::kShiftLeft:
      return "shift_left";
    case Intrinsic::kShiftRight:
      return "shift_right";
  }
  return "?";
}

const char* bitwise_operator(Intrinsic op) {
  switch (op) {
    case Intrinsic::kBitwiseAnd:
      return "&";
    case Intrinsic::kBitwiseOr:
      return "|";
    case Intrinsic::kBitwiseXor:
      return "^";
    case Intrinsic::kBitwiseNot:
      return "~";
    case Intrinsic::kShiftLeft:
      return "<<";
    case Intrinsic::kShiftRight:
      return ">>";
    default:
      internal_error(__FILE__, __LINE__, intrinsic_name(op), " is not a bitwise operation");
  }
}

Expr Call::make(Intrinsic op, std::vector<Expr> args) {
  auto arity = [&](size_t n) {
    if (args.size() != n) {
      type_error(intrinsic_name(op), "() takes ", n, " arguments, got ", args.size());
    }
    for (const Expr& a : args) PTB_ICHECK(a.defined(), intrinsic_name(op), " of nothing");
  };
  DataType t;
  switch (op) {
    case Intrinsic::kIfThenElse:
      arity(3);
      if (!args[0].dtype().is_bool()) {
        type_error("condition of if_then_else must be bool, found ", args[0].dtype().str());
      }
      check_same_dtype("if_then_else", args[1], args[2]);
      t = args[1].dtype();
      break;
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
      arity(2);
      check_same_dtype(intrinsic_name(op), args[0], args[1]);
      t = args[0].dtype();
      if (!t.is_float()) {
        type_error(intrinsic_name(op), "() needs float operands, found ", t.str(),
                   "; cast with astype()");
      }
      break;
    case Intrinsic::kFma:
      arity(3);
      check_same_dtype("fma", args[0], args[1]);
      check_same_dtype("fma", args[0], args[2]);
      t = args[0].dtype();
      break;
    case Intrinsic::kAbs:
      arity(1);
      t = args[0].dtype();
      if (t.is_bool()) type_error("abs() of a bool expression");
      break;
    case Intrinsic::kPrefetch:
      // A request (read, offset, cache level) or, resolved, (read, cache level).
      if (args.size() != 2 && args.size() != 3) {
        type_error("prefetch() takes 2 or 3 arguments, got ", args.size());
      }
      PTB_ICHECK(args[0].as<Load>() || args[0].as<TensorRead>(), "prefetch of a non-read");
      PTB_ICHECK(args[0].dtype().is_scalar(), "prefetch of a vector read");
      for (size_t i = 1; i < args.size(); ++i) {
        PTB_ICHECK(args[i].as<IntImm>(), "prefetch offset or cache level not a constant");
      }
      t = DataType::Int(32);
      break;
    case Intrinsic::kBitwiseAnd:
    case Intrinsic::kBitwiseOr:
    case Intrinsic::kBitwiseXor:
    case Intrinsic::kShiftLeft:
    case Intrinsic::kShiftRight:
    case Intrinsic::kBitwiseNot: {
      arity(op == Intrinsic::kBitwiseNot ? 1 : 2);
      // Named by operator and function, since users reach these through either.
      std::string name = str_cat(intrinsic_name(op), " (", bitwise_operator(op), ")");
      if (args.size() == 2) check_same_dtype(name.c_str(), args[0], args[1]);
      t = args[0].dtype();
      if (!t.is_integer()) {
        // Bool operands never get here through ir/op.h's bitwise_*(): they become the logical
        // nodes, so only shifts reject bool for a user.
        type_error(name, " needs integer operands, found ", t.str(),
                   t.is_float() ? "; cast them with astype() to an integer dtype" : "");
      }
      break;
    }
    case Intrinsic::kIsNan:
      arity(1);
      if (!args[0].dtype().is_float()) {
        type_error("isnan() needs a float operand, found ", args[0].dtype().str());
      }
      t = DataType::Bool(args[0].dtype().lanes());
      break;
    default:
      arity(1);
      t = args[0].dtype();
      if (!t.is_float()) {
        type_error(intrinsic_name(op), "() needs a float operand, found ", t.str(),
                   "; cast it with astype('float32')");
      }
      break;
  }
  return Expr(std::make_shared<Call>(t, op, std::move(args)));
}

Expr Let::make(Expr var, Expr value, Expr body) {
  PTB_ICHECK(var.as<Var>(), "Let binds a Var");
  PTB_ICHECK(var.dtype() == value.dtype(), "Let value dtype ", value.dtype().str(), " vs ",
             var.dtype().str());
  DataType t = body.dtype();
  return Expr(std::make_shared<Let>(t, std::move(var), std::move(value), std::move(body)));
}

Buffer make_buffer(const std::string& name, DataType dtype, std::vector<Expr> shape,
                   std::vector<Expr> strides) {
  auto b = std::make_shared<BufferNode>();
  b->name = name;
  b->dtype = dtype;
  b->data = Var::make(DataType::Handle(), name);
  b->shape = std::move(shape);
  b->strides = std::move(strides);
  return b;
}

Expr Load::make(Buffer buffer, Expr index, Expr predicate) {
  PTB_ICHECK(buffer && index.defined(), "Load needs a buffer and an index");
  PTB_ICHECK(index.dtype().is_integer(), "Load index must be an integer");
  DataType t = buffer->dtype.with_lanes(index.dtype().lanes());
  return Expr(std::make_shared<Load>(t, std::move(buffer), std::move(index), std::move(predicate)));
}

Expr Ramp::make(Expr base, Expr stride, int lanes) {
  PTB_ICHECK(base.dtype().is_scalar() && base.dtype() == stride.dtype(), "Ramp of ",
             base.dtype().str(), " and ", stride.dtype().str());
  PTB_ICHECK(lanes > 1, "Ramp of ", lanes, " lanes");
  DataType t = base.dtype().with_lanes(lanes);
  return Expr(std::make_shared<Ramp>(t, std::move(base), std::move(stride), lanes));
}

Expr Broadcast::make(Expr value, int lanes) {
  PTB_ICHECK(value.dtype().is_scalar() && lanes > 1, "Broadcast of ", value.dtype().str());
  DataType t = value.dtype().with_lanes(lanes);
  return Expr(std::make_shared<Broadcast>(t, std::move(value), lanes));
}

IterVar make_iter_var(Range dom, const std::string& name, IterKind kind) {
  auto wide = [](const Expr& e) {
    return e.defined() && e.dtype().is_integer() && e.dtype().bits() > kIndexType.bits();
  };
  DataType t = wide(dom.min) || wide(dom.extent) ? DataType::Int(64) : kIndexType;
  return make_iter_var(std::move(dom), name, kind, t);
}

IterVar make_iter_var(Range dom, const std::string& name, IterKind kind, DataType dtype) {
  auto iv = std::make_shared<IterVarNode>();
  iv->var = Var::make(dtype, name);
  auto typed = [&](Expr e) { return e.defined() ? cast(dtype, std::move(e)) : e; };
  iv->dom = Range::from_min_extent(typed(std::move(dom.min)), typed(std::move(dom.extent)));
  iv->kind = kind;
  return iv;
}

Expr TensorRead::make(Operation op, int value_index, std::vector<Expr> indices) {
  PTB_ICHECK(op != nullptr, "read of a null tensor");
  const auto& shape = op->output_shape(value_index);
  if (indices.size() != shape.size()) {
    value_error("tensor '", op->name, "' has ", shape.size(), " dimension(s) but was indexed with ",
                indices.size(), " index(es)");
  }
  for (size_t i = 0; i < indices.size(); ++i) {
    if (!indices[i].defined() || !indices[i].dtype().is_integer() ||
        !indices[i].dtype().is_scalar()) {
      type_error("index ", i, " of tensor '", op->name, "' must be an integer expression, found ",
                 indices[i].defined() ? indices[i].dtype().str() : "nothing");
    }
  }
  DataType t = op->output_dtype(value_index);
  return Expr(std::make_shared<TensorRead>(t, std::move(op), value_index, std::move(indices)));
}

const char* reduce_name(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum:
      return "sum";
    case ReduceKind::kProd:
      return "prod";
    case ReduceKind::kMin:
      return "min";
    case ReduceKind::kMax:
      return "max";
    case ReduceKind::kCustom:
      return "comm_reducer";
  }
  return "?";
}

CommReducer make_comm_reducer(const std::string& name, std::vector<Expr> lhs, std::vector<Expr> rhs,
                              std::vector<Expr> result, std::vector<Expr> identity) {
  const size_t n = lhs.size();
  if (n == 0) value_error("reducer '", name, "' reduces no value");
  if (rhs.size() != n || result.size() != n || identity.size() != n) {
    value_error("reducer '", name, "' combines ", n, " value(s) but has ", result.size(),
                " result(s) and ", identity.size(), " identity value(s)");
  }
  for (size_t k = 0; k < n; ++k) {
    PTB_ICHECK(lhs[k].as<Var>() && rhs[k].as<Var>(), "reducer arguments must be Vars");
    DataType t = lhs[k].dtype();
    PTB_ICHECK(rhs[k].dtype() == t, "reducer argument dtypes differ");
    if (!result[k].defined() || result[k].dtype() != t) {
      type_error("the combiner of reducer '", name, "' returns ",
                 result[k].defined() ? result[k].dtype().str() : "nothing", " for value ", k,
                 ", which is ", t.str());
    }
    if (!identity[k].defined() || identity[k].dtype() != t) {
      type_error("the identity of reducer '", name, "' is ",
                 identity[k].defined() ? identity[k].dtype().str() : "nothing", " for value ", k,
                 ", which is ", t.str());
    }
    for_each_expr(identity[k], [&](const Expr& e) {
      if (e.as<Var>()) {
        value_error("the identity of reducer '", name, "' must be a constant, found variable '",
                    e.as<Var>()->name, "'");
      }
    });
  }
  auto node = std::make_shared<CommReducerNode>();
  node->name = name;
  node->lhs = std::move(lhs);
  node->rhs = std::move(rhs);
  node->result = std::move(result);
  node->identity = std::move(identity);
  return node;
}

Expr Reduce::make(ReduceKind kind, Expr source, std::vector<IterVar> axis, Expr condition,
                  CommReducer reducer, int value_index) {
  PTB_ICHECK(source.defined(), "reduction of nothing");
  PTB_ICHECK((kind == ReduceKind::kCustom) == (reducer != nullptr), "reducer without kCustom");
  if (reducer) {
    PTB_ICHECK(value_index >= 0 && static_cast<size_t>(value_index) < reducer->lhs.size(),
               "reducer value index out of range");
    DataType want = reducer->lhs[static_cast<size_t>(value_index)].dtype();
    if (source.dtype() != want) {
      type_error("value ", value_index, " of reducer '", reducer->name, "' is ", want.str(),
                 " but the reduced expression is ", source.dtype().str());
    }
  }
  if (axis.empty()) value_error(reduce_name(kind), "() needs at least one reduce axis");
  for (const IterVar& iv : axis) {
    if (iv->kind != IterKind::kReduce) {
      value_error("axis '", iv->var.as<Var>()->name, "' of ", reduce_name(kind),
                  "() is not a reduce axis; create it with reduce_axis()");
    }
  }
  if (condition.defined() && !condition.dtype().is_bool()) {
    type_error("where= of ", reduce_name(kind), "() must be a bool condition, found ",
               condition.dtype().str());
  }
  if (source.dtype().is_bool() && !reducer) {
    type_error(reduce_name(kind), "() of a bool expression; cast it with astype() first");
  }
  DataType t = source.dtype();
  return Expr(std::make_shared<Reduce>(t, kind, std::move(source), std::move(axis),
                                       std::move(condition), std::move(reducer), value_index));
}

}  // namespace ptb
