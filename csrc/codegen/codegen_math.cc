#include "codegen/codegen_math.h"

#include <string>
#include <utility>

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "codegen/codegen_arith.h"
#include "codegen/inline_math.h"
#include "support/error.h"

namespace ptb {

namespace {

// A function of the math library: its double name ("exp"; float appends 'f') and the LLVM
// intrinsic for it, if LLVM has one that it lowers to the same libm call on scalars.
struct LibraryFunction {
  const char* name;
  llvm::Intrinsic::ID intrinsic;
};

LibraryFunction library_function(Intrinsic op) {
  switch (op) {
    case Intrinsic::kExp:
      return {"exp", llvm::Intrinsic::exp};
    case Intrinsic::kExp2:
      return {"exp2", llvm::Intrinsic::exp2};
    case Intrinsic::kLog:
      return {"log", llvm::Intrinsic::log};
    case Intrinsic::kLog2:
      return {"log2", llvm::Intrinsic::log2};
    case Intrinsic::kLog10:
      return {"log10", llvm::Intrinsic::log10};
    case Intrinsic::kLog1p:
      return {"log1p", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kSin:
      return {"sin", llvm::Intrinsic::sin};
    case Intrinsic::kCos:
      return {"cos", llvm::Intrinsic::cos};
    // llvm.tan is new in LLVM 19 and not lowered by every backend: call tanf directly.
    case Intrinsic::kTan:
      return {"tan", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kTanh:
      return {"tanh", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kErf:
      return {"erf", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kPow:
      return {"pow", llvm::Intrinsic::pow};
    // The rest of libm: LLVM 19's intrinsics for some of them (llvm.asin...) are not lowered
    // by every backend, so the library is called by name.
    case Intrinsic::kAcos:
      return {"acos", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kAcosh:
      return {"acosh", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kAsin:
      return {"asin", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kAsinh:
      return {"asinh", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kAtan:
      return {"atan", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kAtanh:
      return {"atanh", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kCbrt:
      return {"cbrt", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kCosh:
      return {"cosh", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kSinh:
      return {"sinh", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kErfc:
      return {"erfc", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kExp10:
      return {"exp10", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kExpm1:
      return {"expm1", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kLgamma:
      return {"lgamma", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kTgamma:
      return {"tgamma", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kJ0:
      return {"j0", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kJ1:
      return {"j1", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kY0:
      return {"y0", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kY1:
      return {"y1", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kLogb:
      return {"logb", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kAtan2:
      return {"atan2", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kFdim:
      return {"fdim", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kHypot:
      return {"hypot", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kNextafter:
      return {"nextafter", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kRemainder:
      return {"remainder", llvm::Intrinsic::not_intrinsic};
    // Special functions libm lacks: the runtime's (runtime/special_math.h).
    case Intrinsic::kErfinv:
      return {"ptb_erfinv", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kErfcinv:
      return {"ptb_erfcinv", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kErfcx:
      return {"ptb_erfcx", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kNormcdfinv:
      return {"ptb_normcdfinv", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kBesselI0:
      return {"ptb_cyl_bessel_i0", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kBesselI1:
      return {"ptb_cyl_bessel_i1", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kSinpi:
      return {"ptb_sinpi", llvm::Intrinsic::not_intrinsic};
    case Intrinsic::kCospi:
      return {"ptb_cospi", llvm::Intrinsic::not_intrinsic};
    default:
      internal_error(__FILE__, __LINE__, intrinsic_name(op), " is not a library function");
  }
}

// Declares a pure math function: no errno, no memory access, so calls can be hoisted, removed
// and vectorized.
llvm::FunctionCallee declare_pure(llvm::Module& m, const std::string& name, llvm::Type* ty,
                                  size_t arity) {
  std::vector<llvm::Type*> params(arity, ty);
  auto callee = m.getOrInsertFunction(name, llvm::FunctionType::get(ty, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotThrow();
    f->setDoesNotAccessMemory();
    f->setWillReturn();
  }
  return callee;
}

llvm::Value* call_scalar(llvm::IRBuilderBase& b, const LibraryFunction& fn,
                         const std::vector<llvm::Value*>& args) {
  llvm::Type* ty = args[0]->getType();
  if (fn.intrinsic != llvm::Intrinsic::not_intrinsic) {
    return b.CreateIntrinsic(fn.intrinsic, {ty}, args);
  }
  std::string name = std::string(fn.name) + (ty->isFloatTy() ? "f" : "");
  llvm::Module& m = *b.GetInsertBlock()->getModule();
  return b.CreateCall(declare_pure(m, name, ty, args.size()), args);
}

// The widest libmvec variant of `scalar` with at most max_lanes lanes.
const VectorMathVariant* widest_variant(const std::vector<VectorMathVariant>& variants,
                                        const std::string& scalar, int max_lanes) {
  const VectorMathVariant* best = nullptr;
  for (const VectorMathVariant& v : variants) {
    if (v.scalar == scalar && v.lanes <= max_lanes && (!best || v.lanes > best->lanes)) best = &v;
  }
  return best;
}

llvm::Value* call_vector(llvm::IRBuilderBase& b, const LibraryFunction& fn,
                         const std::vector<llvm::Value*>& args,
                         const std::vector<VectorMathVariant>& variants) {
  auto* vty = llvm::cast<llvm::FixedVectorType>(args[0]->getType());
  llvm::Type* elem = vty->getElementType();
  int lanes = static_cast<int>(vty->getNumElements());
  std::string scalar = std::string(fn.name) + (elem->isFloatTy() ? "f" : "");
  llvm::Module& m = *b.GetInsertBlock()->getModule();

  llvm::Value* result = llvm::PoisonValue::get(vty);
  for (int offset = 0; offset < lanes;) {
    const VectorMathVariant* v = widest_variant(variants, scalar, lanes - offset);
    if (v == nullptr) {  // no vector variant this narrow: one lane through libm
      std::vector<llvm::Value*> lane_args;
      for (llvm::Value* a : args) lane_args.push_back(b.CreateExtractElement(a, offset));
      result = b.CreateInsertElement(result, call_scalar(b, fn, lane_args), offset);
      ++offset;
      continue;
    }
    int w = v->lanes;
    auto* chunk_ty = llvm::FixedVectorType::get(elem, w);
    auto callee = declare_pure(m, v->vector, chunk_ty, args.size());
    if (w == lanes) return b.CreateCall(callee, args);
    std::vector<int> take(w);
    for (int i = 0; i < w; ++i) take[i] = offset + i;
    std::vector<llvm::Value*> chunk_args;
    for (llvm::Value* a : args) chunk_args.push_back(b.CreateShuffleVector(a, take));
    llvm::Value* chunk = b.CreateCall(callee, chunk_args);
    // Widen the chunk to `lanes` and blend it into lanes [offset, offset + w).
    std::vector<int> widen_mask(lanes, -1), blend(lanes);
    for (int i = 0; i < w; ++i) widen_mask[i] = i;
    llvm::Value* wide = b.CreateShuffleVector(chunk, widen_mask);
    for (int i = 0; i < lanes; ++i) {
      blend[i] = (i >= offset && i < offset + w) ? lanes + (i - offset) : i;
    }
    result = b.CreateShuffleVector(result, wide, blend);
    offset += w;
  }
  return result;
}

llvm::Value* call_library(llvm::IRBuilderBase& b, Intrinsic op,
                          const std::vector<llvm::Value*>& args,
                          const std::vector<VectorMathVariant>& variants) {
  LibraryFunction fn = library_function(op);
  if (args[0]->getType()->isVectorTy()) return call_vector(b, fn, args, variants);
  return call_scalar(b, fn, args);
}

// NumPy's divmod of floats (npy_divmod): the remainder from fmod, moved to b's sign; the
// quotient (a - remainder) / b, a whole number up to rounding, rounded to the nearest; 0 with
// the sign of a / b where it is 0; a / b itself where b is 0. Lane-wise, for vectors too.
std::pair<llvm::Value*, llvm::Value*> float_divmod(llvm::IRBuilderBase& b, llvm::Value* x,
                                                   llvm::Value* y) {
  llvm::Type* type = x->getType();
  llvm::Value* zero = llvm::ConstantFP::get(type, 0.0);
  llvm::Value* one = llvm::ConstantFP::get(type, 1.0);
  llvm::Value* fmod = b.CreateFRem(x, y);
  // fmod has x's sign, the floor remainder y's: one y more where they differ
  llvm::Value* differ =
      b.CreateAnd(b.CreateFCmpONE(fmod, zero),
                  b.CreateXor(b.CreateFCmpOLT(y, zero), b.CreateFCmpOLT(fmod, zero)));
  llvm::Value* signed_zero = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, zero, y);
  llvm::Value* mod = b.CreateSelect(differ, b.CreateFAdd(fmod, y),
                                    b.CreateSelect(b.CreateFCmpOEQ(fmod, zero), signed_zero, fmod));
  llvm::Value* exact = b.CreateFDiv(b.CreateFSub(x, fmod), y);
  exact = b.CreateSelect(differ, b.CreateFSub(exact, one), exact);
  llvm::Value* floor = b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, exact);
  llvm::Value* half = llvm::ConstantFP::get(type, 0.5);
  floor = b.CreateSelect(b.CreateFCmpOGT(b.CreateFSub(exact, floor), half),
                         b.CreateFAdd(floor, one), floor);
  llvm::Value* quotient = b.CreateFDiv(x, y);
  llvm::Value* div =
      b.CreateSelect(b.CreateFCmpUNE(exact, zero), floor,
                     b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, zero, quotient));
  div = b.CreateSelect(b.CreateFCmpOEQ(y, zero), quotient, div);
  return {div, mod};
}

}  // namespace

llvm::Value* emit_math(llvm::IRBuilderBase& b, Intrinsic op, const std::vector<llvm::Value*>& args,
                       DataType t, const std::vector<VectorMathVariant>& vector_math, bool avx512) {
  PTB_ICHECK(!args.empty() && op != Intrinsic::kIfThenElse, intrinsic_name(op));
  if (!t.is_float()) {
    PTB_ICHECK(t.is_integer(), intrinsic_name(op), " of ", t.str());
    if (op == Intrinsic::kAbs) {
      if (t.is_uint()) return args[0];
      // abs(INT_MIN) wraps to INT_MIN, as in NumPy.
      return b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, args[0], b.getFalse());
    }
    if (op == Intrinsic::kFma) {
      return emit_binary(b, BinaryOp::kAdd, emit_binary(b, BinaryOp::kMul, args[0], args[1], t),
                         args[2], t);
    }
    internal_error(__FILE__, __LINE__, intrinsic_name(op), " of ", t.str());
  }

  std::vector<llvm::Value*> w;
  for (llvm::Value* a : args) w.push_back(widen(b, a, t));
  llvm::Value* x = w[0];
  auto unary = [&](llvm::Intrinsic::ID id) { return b.CreateUnaryIntrinsic(id, x); };
  llvm::Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
  llvm::Value* r = nullptr;
  // A scalar log (or log1p) stays a logf call: log_softmax's, one per row at the end of a chain of
  // dependent reductions, measured 6% slower inline (58 -> 62 us at batch 1, one thread), the
  // inline form's longer latency (a division and a dozen dependent FMAs) not hidden there.
  bool scalar_log =
      (op == Intrinsic::kLog || op == Intrinsic::kLog1p) && !x->getType()->isVectorTy();
  if (x->getType()->getScalarType()->isFloatTy() && has_inline_math(op) && !scalar_log) {
    return narrow(b, emit_inline_math(b, op, x, avx512), t);
  }
  switch (op) {
    case Intrinsic::kIsNan:
      return b.CreateFCmpUNO(x, x);
    case Intrinsic::kSqrt:
      r = unary(llvm::Intrinsic::sqrt);
      break;
    case Intrinsic::kRsqrt:
      r = b.CreateFDiv(one, unary(llvm::Intrinsic::sqrt));
      break;
    case Intrinsic::kAbs:
      r = unary(llvm::Intrinsic::fabs);
      break;
    case Intrinsic::kFloor:
      r = unary(llvm::Intrinsic::floor);
      break;
    case Intrinsic::kCeil:
      r = unary(llvm::Intrinsic::ceil);
      break;
    case Intrinsic::kTrunc:
      r = unary(llvm::Intrinsic::trunc);
      break;
    // NumPy rounds halves to even.
    case Intrinsic::kRound:
      r = unary(llvm::Intrinsic::roundeven);
      break;
    case Intrinsic::kFmod:
      r = b.CreateFRem(x, w[1]);
      break;
    case Intrinsic::kFloorDivide:
      r = float_divmod(b, x, w[1]).first;
      break;
    case Intrinsic::kFloorMod:
      r = float_divmod(b, x, w[1]).second;
      break;
    case Intrinsic::kRoundHalfAway:
      r = unary(llvm::Intrinsic::round);
      break;
    case Intrinsic::kCopysign:
      r = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, x, w[1]);
      break;
    case Intrinsic::kFma:
      r = b.CreateIntrinsic(llvm::Intrinsic::fma, {x->getType()}, {x, w[1], w[2]});
      break;
    case Intrinsic::kSigmoid: {
      llvm::Value* e = call_library(b, Intrinsic::kExp, {b.CreateFNeg(x)}, vector_math);
      r = b.CreateFDiv(one, b.CreateFAdd(one, e));
      break;
    }
    default:
      r = call_library(b, op, w, vector_math);
      break;
  }
  return narrow(b, r, t);
}

}  // namespace ptb
