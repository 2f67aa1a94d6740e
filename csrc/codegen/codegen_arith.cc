#include "codegen/codegen_arith.h"

#include <cmath>

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include "support/error.h"

namespace ptb {

namespace {

llvm::Type* with_lanes(llvm::Type* scalar, int lanes) {
  return lanes == 1 ? scalar : llvm::FixedVectorType::get(scalar, lanes);
}

llvm::Type* scalar_register_type(llvm::LLVMContext& ctx, DataType t) {
  switch (t.code()) {
    case DataType::kBool:
      return llvm::Type::getInt1Ty(ctx);
    case DataType::kInt:
    case DataType::kUInt:
      return llvm::Type::getIntNTy(ctx, t.bits());
    case DataType::kBFloat:
      return llvm::Type::getBFloatTy(ctx);
    case DataType::kFloat:
      if (t.bits() == 16) return llvm::Type::getHalfTy(ctx);
      if (t.bits() == 32) return llvm::Type::getFloatTy(ctx);
      if (t.bits() == 64) return llvm::Type::getDoubleTy(ctx);
      break;
    case DataType::kHandle:
      if (t.is_handle()) return llvm::PointerType::get(ctx, 0);
      break;
  }
  internal_error(__FILE__, __LINE__, "no LLVM type for dtype ", t.str());
}

bool is_16bit_float(DataType t) { return t.is_float() && t.bits() == 16; }

// Integer of the same width and lanes as a float value (for bit manipulation).
llvm::Type* int_like(llvm::IRBuilderBase& b, llvm::Value* v, int bits) {
  int lanes = 1;
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) lanes = vt->getNumElements();
  return with_lanes(b.getIntNTy(bits), lanes);
}

// bfloat16 is the top half of a float32: widening is a shift, narrowing rounds to nearest even
// and keeps NaNs quiet. Written out in integer ops so that it needs no runtime library and
// vectorizes on any CPU.
llvm::Value* bf16_to_f32(llvm::IRBuilderBase& b, llvm::Value* v) {
  llvm::Value* bits = b.CreateBitCast(v, int_like(b, v, 16));
  bits = b.CreateShl(b.CreateZExt(bits, int_like(b, v, 32)), 16);
  return b.CreateBitCast(bits, int_like(b, v, 32)->getWithNewType(b.getFloatTy()));
}

llvm::Value* f32_to_bf16(llvm::IRBuilderBase& b, llvm::Value* v) {
  llvm::Type* i32 = int_like(b, v, 32);
  auto c = [&](uint32_t x) { return llvm::ConstantInt::get(i32, x); };
  llvm::Value* bits = b.CreateBitCast(v, i32);
  llvm::Value* lsb = b.CreateAnd(b.CreateLShr(bits, 16), c(1));
  llvm::Value* rounded = b.CreateLShr(b.CreateAdd(b.CreateAdd(bits, c(0x7fff)), lsb), 16);
  llvm::Value* quiet_nan = b.CreateOr(b.CreateLShr(bits, 16), c(0x40));
  llvm::Value* result = b.CreateSelect(b.CreateFCmpUNO(v, v), quiet_nan, rounded);
  llvm::Type* i16 = int_like(b, v, 16);
  return b.CreateBitCast(b.CreateTrunc(result, i16), i16->getWithNewType(b.getBFloatTy()));
}

// A float value (float32 or float64 register) to the float dtype `to`.
llvm::Value* float_to_float(llvm::IRBuilderBase& b, llvm::Value* v, DataType to) {
  llvm::Type* target = register_type(b.getContext(), to);
  if (to.is_bfloat()) {
    llvm::Value* f = v;
    if (!v->getType()->getScalarType()->isFloatTy()) {
      f = b.CreateFPCast(v, int_like(b, v, 32)->getWithNewType(b.getFloatTy()));
    }
    return f32_to_bf16(b, f);
  }
  return b.CreateFPCast(v, target);  // fpext or fptrunc by width
}

llvm::Value* int_resize(llvm::IRBuilderBase& b, llvm::Value* v, DataType from, DataType to) {
  llvm::Type* target = register_type(b.getContext(), to);
  return b.CreateIntCast(v, target, /*isSigned=*/from.is_int());
}

// fptosi to a signed integer of `bits` (32 or 64) with x86's out-of-range result made explicit:
// NaN and values outside the type give INT_MIN (cvttss2si's "integer indefinite"). fptosi alone
// gives poison there: the freeze made it INT_MIN in code the CPU ran but 0 where LLVM folded a
// constant, so one cast gave two answers. Two compares and a select on a vector, folded away
// for a constant.
llvm::Value* float_to_signed(llvm::IRBuilderBase& b, llvm::Value* v, int bits) {
  int lanes =
      v->getType()->isVectorTy()
          ? static_cast<int>(llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements())
          : 1;
  llvm::Type* ity = with_lanes(b.getIntNTy(bits), lanes);
  llvm::Value* converted = b.CreateFreeze(b.CreateFPToSI(v, ity));
  llvm::Value* limit = llvm::ConstantFP::get(v->getType(), std::ldexp(1.0, bits - 1));
  llvm::Value* low = llvm::ConstantFP::get(v->getType(), -std::ldexp(1.0, bits - 1));
  llvm::Value* in_range = b.CreateAnd(b.CreateFCmpOLT(v, limit), b.CreateFCmpOGE(v, low));
  llvm::Value* indefinite =
      llvm::ConstantInt::get(ity, llvm::APInt::getSignedMinValue(static_cast<unsigned>(bits)));
  return b.CreateSelect(in_range, converted, indefinite);
}

llvm::Value* float_to_int(llvm::IRBuilderBase& b, llvm::Value* v, DataType to) {
  // NumPy's astype as compiled for x86 (C casts): a signed conversion to an integer wide enough
  // for every in-range value, truncated; out-of-range values wrap or give INT_MIN as there.
  // Narrow types go through i32 so vector conversions stay in one instruction.
  if (to.is_uint() && to.bits() == 64) {
    // at or above 2**63: converted less 2**63, with the top bit set again (what C compilers
    // emit for float -> uint64); below, the signed conversion, so negatives wrap
    llvm::Value* top = llvm::ConstantFP::get(v->getType(), std::ldexp(1.0, 63));
    llvm::Value* high = b.CreateXor(float_to_signed(b, b.CreateFSub(v, top), 64),
                                    llvm::ConstantInt::get(with_lanes(b.getInt64Ty(), to.lanes()),
                                                           llvm::APInt::getSignMask(64)));
    return b.CreateSelect(b.CreateFCmpOGE(v, top), high, float_to_signed(b, v, 64));
  }
  if (to.bits() == 64) return float_to_signed(b, v, 64);
  llvm::Value* i = float_to_signed(b, v, (to.is_uint() && to.bits() == 32) ? 64 : 32);
  return b.CreateTrunc(i, register_type(b.getContext(), to));
}

// Integer division with NumPy's results where LLVM's are undefined: x / 0 = 0, x % 0 = 0,
// INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0. A constant divisor folds the guards away.
struct DivRem {
  llvm::Value* quotient;
  llvm::Value* remainder;
};
DivRem safe_divrem(llvm::IRBuilderBase& b, llvm::Value* x, llvm::Value* y, bool is_signed,
                   bool want_quotient, bool want_remainder) {
  llvm::Type* ty = x->getType();
  llvm::Value* zero = llvm::Constant::getNullValue(ty);
  llvm::Value* one = llvm::ConstantInt::get(ty, 1);
  llvm::Value* y_zero = b.CreateICmpEQ(y, zero);
  llvm::Value* bad = y_zero;
  llvm::Value* y_minus1 = nullptr;
  if (is_signed) {
    y_minus1 = b.CreateICmpEQ(y, llvm::Constant::getAllOnesValue(ty));
    bad = b.CreateOr(y_zero, y_minus1);
  }
  // Frozen: LLVM 19 folds a division through a select divisor arm by arm, and an arm that is a
  // constant vector with one zero lane (a loop index) makes it treat the whole vector division
  // as undefined, folding every lane to 0 (a vectorised `A[i] % select(c, A[i], i)`). The
  // freeze keeps the division whole; a constant divisor still folds through it.
  llvm::Value* divisor = b.CreateFreeze(b.CreateSelect(bad, one, y));
  DivRem out{nullptr, nullptr};
  if (want_quotient) {
    llvm::Value* q = is_signed ? b.CreateSDiv(x, divisor) : b.CreateUDiv(x, divisor);
    if (is_signed) q = b.CreateSelect(y_minus1, b.CreateNeg(x), q);  // wraps for INT_MIN
    out.quotient = b.CreateSelect(y_zero, zero, q);
  }
  if (want_remainder) {
    llvm::Value* r = is_signed ? b.CreateSRem(x, divisor) : b.CreateURem(x, divisor);
    out.remainder = b.CreateSelect(bad, zero, r);
  }
  return out;
}

// A positive power of two k such that every lane of v is the constant 2^k, or -1.
int power_of_two_shift(llvm::Value* v) {
  auto* c = llvm::dyn_cast<llvm::Constant>(v);
  if (c == nullptr) return -1;
  if (c->getType()->isVectorTy()) c = c->getSplatValue();
  auto* ci = llvm::dyn_cast_or_null<llvm::ConstantInt>(c);
  if (ci == nullptr || !ci->getValue().isStrictlyPositive() || !ci->getValue().isPowerOf2()) {
    return -1;
  }
  return static_cast<int>(ci->getValue().logBase2());
}

// Python's // and %: the truncated quotient rounds toward -inf when the remainder is nonzero
// and has the divisor's opposite sign.
llvm::Value* floor_divmod(llvm::IRBuilderBase& b, llvm::Value* x, llvm::Value* y, bool want_div) {
  int shift = power_of_two_shift(y);
  if (shift >= 0) {  // the common index case: an arithmetic shift, a mask
    if (want_div) return b.CreateAShr(x, llvm::ConstantInt::get(x->getType(), shift));
    return b.CreateAnd(x, b.CreateSub(y, llvm::ConstantInt::get(x->getType(), 1)));
  }
  DivRem dr = safe_divrem(b, x, y, /*is_signed=*/true, want_div, /*want_remainder=*/true);
  llvm::Value* zero = llvm::Constant::getNullValue(x->getType());
  llvm::Value* adjust = b.CreateAnd(b.CreateICmpNE(dr.remainder, zero),
                                    b.CreateICmpSLT(b.CreateXor(dr.remainder, y), zero));
  if (want_div) {
    return b.CreateSub(dr.quotient, b.CreateZExt(adjust, x->getType()));
  }
  return b.CreateAdd(dr.remainder, b.CreateSelect(adjust, y, zero));
}

}  // namespace

llvm::Type* register_type(llvm::LLVMContext& ctx, DataType t) {
  PTB_ICHECK(!t.is_void(), "no value has the void dtype");
  return with_lanes(scalar_register_type(ctx, t.element_of()), t.lanes());
}

llvm::Type* memory_type(llvm::LLVMContext& ctx, DataType t) {
  if (t.is_bool()) return with_lanes(llvm::Type::getInt8Ty(ctx), t.lanes());
  return register_type(ctx, t);
}

llvm::Value* to_memory(llvm::IRBuilderBase& b, llvm::Value* v, DataType t) {
  return t.is_bool() ? b.CreateZExt(v, memory_type(b.getContext(), t)) : v;
}

llvm::Value* from_memory(llvm::IRBuilderBase& b, llvm::Value* v, DataType t) {
  // Any nonzero byte is true: arrays from other frameworks are not guaranteed to hold 0/1.
  return t.is_bool() ? b.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType())) : v;
}

DataType compute_type(DataType t) { return is_16bit_float(t) ? DataType::Float(32, t.lanes()) : t; }

llvm::Value* widen(llvm::IRBuilderBase& b, llvm::Value* v, DataType t) {
  if (!is_16bit_float(t)) return v;
  if (t.is_bfloat()) return bf16_to_f32(b, v);
  return b.CreateFPExt(v, register_type(b.getContext(), compute_type(t)));
}

llvm::Value* narrow(llvm::IRBuilderBase& b, llvm::Value* v, DataType t) {
  if (!is_16bit_float(t)) return v;
  if (t.is_bfloat()) return f32_to_bf16(b, v);
  return b.CreateFPTrunc(v, register_type(b.getContext(), t));
}

llvm::Value* emit_cast(llvm::IRBuilderBase& b, llvm::Value* v, DataType from, DataType to) {
  if (from == to) return v;
  PTB_ICHECK(from.lanes() == to.lanes(), "cast from ", from.str(), " to ", to.str());
  if (from.is_handle() || to.is_handle()) {
    internal_error(__FILE__, __LINE__, "cast between ", from.str(), " and ", to.str());
  }
  llvm::LLVMContext& ctx = b.getContext();
  if (to.is_bool()) {
    if (from.is_float()) {
      llvm::Value* w = widen(b, v, from);
      return b.CreateFCmpUNE(w, llvm::Constant::getNullValue(w->getType()));
    }
    return b.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (from.is_bool() || from.is_integer()) {
    bool is_signed = from.is_int();
    if (to.is_integer()) {
      return from.is_bool() ? b.CreateZExt(v, register_type(ctx, to)) : int_resize(b, v, from, to);
    }
    // Integer to float: 16-bit floats go through float32, which holds every integer up to 2^24
    // exactly, far beyond float16's range.
    llvm::Type* ty = register_type(ctx, compute_type(to));
    llvm::Value* f = is_signed ? b.CreateSIToFP(v, ty) : b.CreateUIToFP(v, ty);
    return narrow(b, f, to);
  }
  // From a float.
  llvm::Value* w = widen(b, v, from);
  if (to.is_integer()) return float_to_int(b, w, to);
  return float_to_float(b, w, to);
}

llvm::Value* emit_binary(llvm::IRBuilderBase& b, BinaryOp op, llvm::Value* x, llvm::Value* y,
                         DataType t) {
  if (t.is_float()) {
    llvm::Value* a = widen(b, x, t);
    llvm::Value* c = widen(b, y, t);
    llvm::Value* r = nullptr;
    switch (op) {
      case BinaryOp::kAdd:
        r = b.CreateFAdd(a, c);
        break;
      case BinaryOp::kSub:
        r = b.CreateFSub(a, c);
        break;
      case BinaryOp::kMul:
        r = b.CreateFMul(a, c);
        break;
      case BinaryOp::kDiv:
        r = b.CreateFDiv(a, c);
        break;
      case BinaryOp::kMod:
        r = b.CreateFRem(a, c);
        break;
      // NumPy's minimum/maximum: a NaN in either operand is the result, ties give the first
      // operand. Written as x86's own min/max (c < a ? c : a, which is a for a NaN in either)
      // plus one select for a NaN in c: three instructions, where llvm.minimum/maximum's
      // signed-zero ordering costs six (a stride-2 max pool: 3.1 -> 2.3 ms).
      case BinaryOp::kMin:
      case BinaryOp::kMax: {
        llvm::Value* c_wins = op == BinaryOp::kMin ? b.CreateFCmpOLT(c, a) : b.CreateFCmpOGT(c, a);
        llvm::Value* m = b.CreateSelect(c_wins, c, a);
        r = b.CreateSelect(b.CreateFCmpUNO(c, c), c, m);
        break;
      }
      case BinaryOp::kEQ:
        return b.CreateFCmpOEQ(a, c);
      case BinaryOp::kNE:
        return b.CreateFCmpUNE(a, c);
      case BinaryOp::kLT:
        return b.CreateFCmpOLT(a, c);
      case BinaryOp::kLE:
        return b.CreateFCmpOLE(a, c);
      case BinaryOp::kGT:
        return b.CreateFCmpOGT(a, c);
      case BinaryOp::kGE:
        return b.CreateFCmpOGE(a, c);
      default:
        internal_error(__FILE__, __LINE__, "binary operator ", static_cast<int>(op), " on ",
                       t.str());
    }
    return narrow(b, r, t);
  }
  PTB_ICHECK(t.is_integer() || t.is_bool(), "binary operator on ", t.str());
  bool is_signed = t.is_int();
  // nsw only where C would make overflow undefined: signed types of at least 32 bits.
  bool nsw = is_signed && t.bits() >= 32;
  switch (op) {
    case BinaryOp::kAdd:
      return b.CreateAdd(x, y, "", /*HasNUW=*/false, nsw);
    case BinaryOp::kSub:
      return b.CreateSub(x, y, "", /*HasNUW=*/false, nsw);
    case BinaryOp::kMul:
      return b.CreateMul(x, y, "", /*HasNUW=*/false, nsw);
    case BinaryOp::kDiv:
      return safe_divrem(b, x, y, is_signed, true, false).quotient;
    case BinaryOp::kMod:
      return safe_divrem(b, x, y, is_signed, false, true).remainder;
    case BinaryOp::kFloorDiv:
      if (!is_signed) return safe_divrem(b, x, y, false, true, false).quotient;
      return floor_divmod(b, x, y, /*want_div=*/true);
    case BinaryOp::kFloorMod:
      if (!is_signed) return safe_divrem(b, x, y, false, false, true).remainder;
      return floor_divmod(b, x, y, /*want_div=*/false);
    case BinaryOp::kMin:
      return b.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, x,
                                     y);
    case BinaryOp::kMax:
      return b.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, x,
                                     y);
    case BinaryOp::kEQ:
      return b.CreateICmpEQ(x, y);
    case BinaryOp::kNE:
      return b.CreateICmpNE(x, y);
    case BinaryOp::kLT:
      return is_signed ? b.CreateICmpSLT(x, y) : b.CreateICmpULT(x, y);
    case BinaryOp::kLE:
      return is_signed ? b.CreateICmpSLE(x, y) : b.CreateICmpULE(x, y);
    case BinaryOp::kGT:
      return is_signed ? b.CreateICmpSGT(x, y) : b.CreateICmpUGT(x, y);
    case BinaryOp::kGE:
      return is_signed ? b.CreateICmpSGE(x, y) : b.CreateICmpUGE(x, y);
    case BinaryOp::kAnd:
      return b.CreateAnd(x, y);
    case BinaryOp::kOr:
      return b.CreateOr(x, y);
  }
  internal_error(__FILE__, __LINE__, "unknown binary operator");
}

namespace {

// Whether v is a constant (splat, for vectors) shift amount below `bits`, read as unsigned.
bool constant_in_range(llvm::Value* v, unsigned bits) {
  auto* c = llvm::dyn_cast<llvm::Constant>(v);
  if (c == nullptr) return false;
  if (c->getType()->isVectorTy()) c = c->getSplatValue();
  auto* ci = llvm::dyn_cast_or_null<llvm::ConstantInt>(c);
  return ci != nullptr && ci->getValue().ult(bits);
}

}  // namespace

llvm::Value* emit_bitwise(llvm::IRBuilderBase& b, Intrinsic op,
                          const std::vector<llvm::Value*>& args, DataType t) {
  PTB_ICHECK(t.is_integer() && is_bitwise_intrinsic(op), intrinsic_name(op), " of ", t.str());
  llvm::Value* x = args[0];
  switch (op) {
    case Intrinsic::kBitwiseAnd:
      return b.CreateAnd(x, args[1]);
    case Intrinsic::kBitwiseOr:
      return b.CreateOr(x, args[1]);
    case Intrinsic::kBitwiseXor:
      return b.CreateXor(x, args[1]);
    case Intrinsic::kBitwiseNot:
      return b.CreateNot(x);
    default:
      break;
  }
  llvm::Value* n = args[1];
  auto bits = static_cast<unsigned>(t.bits());
  bool left = op == Intrinsic::kShiftLeft;
  if (constant_in_range(n, bits)) {
    if (left) return b.CreateShl(x, n);
    return t.is_int() ? b.CreateAShr(x, n) : b.CreateLShr(x, n);
  }
  llvm::Value* width = make_int_constant(b.getContext(), t, bits);
  // A signed right shift by bits - 1 or more gives the sign in every bit: 0 or -1, NumPy's
  // result. The unsigned minimum also catches negative amounts (huge as unsigned).
  if (!left && t.is_int()) {
    llvm::Value* last = make_int_constant(b.getContext(), t, bits - 1);
    return b.CreateAShr(x, b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, n, last));
  }
  // The shift is poison where n >= bits (negative n included, read as unsigned); the select
  // never takes those lanes, and select does not pass on the poison of the side it does not
  // pick. x86 (AVX2 vpsllv / vpsrlv) gives exactly this form's 0 for such amounts, so LLVM
  // folds the select into the shift there.
  llvm::Value* shifted = left ? b.CreateShl(x, n) : b.CreateLShr(x, n);
  return b.CreateSelect(b.CreateICmpULT(n, width), shifted,
                        llvm::Constant::getNullValue(x->getType()));
}

llvm::Value* make_int_constant(llvm::LLVMContext& ctx, DataType t, int64_t value) {
  llvm::Type* ty = register_type(ctx, t);
  // uint64 values arrive as int64 bit patterns: the APInt keeps all 64 bits either way.
  return llvm::ConstantInt::get(ty, static_cast<uint64_t>(value), /*isSigned=*/t.is_int());
}

llvm::Value* make_float_constant(llvm::LLVMContext& ctx, DataType t, double value) {
  // Rounds to nearest even for float32, float16 and bfloat16.
  return llvm::ConstantFP::get(register_type(ctx, t), value);
}

}  // namespace ptb
