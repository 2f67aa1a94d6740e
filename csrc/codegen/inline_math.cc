#include "codegen/inline_math.h"

#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>

#include "codegen/zmm_pieces.h"
#include "support/error.h"

namespace ptb {

namespace {

// Coefficients from tools/fit_inline_math.py (its output, pasted), lowest degree first.
// exp(r) = 1 + r + r^2 Q(r) for |r| <= ln2/2.
constexpr float kExpQ[] = {0x1.fffffcp-2f, 0x1.555492p-3f, 0x1.5558f2p-5f, 0x1.1239d4p-7f,
                           0x1.6a2448p-10f};
// tanh(x) = x P(x^2) / Q(x^2) for |x| <= kTanhOne, past which tanh rounds to 1.
constexpr float kTanhOne = 9.1f;
constexpr float kTanhP[] = {0x1p+0f, 0x1.11f86ap-3f, 0x1.c99aap-9f, 0x1.587dccp-16f,
                            0x1.c6fbcap-27f};
constexpr float kTanhQ[] = {0x1p+0f, 0x1.de5182p-2f, 0x1.a7b3c2p-6f, 0x1.57c24ap-12f,
                            0x1.9f1bfp-21f};
// erf(x) = x P(x^2) / Q(x^2) for |x| <= kErfOne, past which erf rounds to 1. One rational
// over the whole range: about 20 vector instructions, where a polynomial near 0 and
// 1 - exp(-x^2) R(x) beyond (1.3 ulp) took about 40, both branches computed for every lane.
constexpr float kErfOne = 3.92f;
constexpr float kErfP[] = {0x1.20dd74p+0f, 0x1.85f094p-3f,  0x1.b01c3p-5f,
                           0x1.ed8782p-9f, 0x1.2ab5f4p-12f, 0x1.13287ap-19f};
constexpr float kErfQ[] = {0x1p+0f,       0x1.010f66p-1f,  0x1.d3615p-4f,
                           0x1.ea7e1p-7f, 0x1.30bb58p-10f, 0x1.3f883cp-15f};

// ln 2 in two parts: the high one has 16 significant bits, so n * hi is exact for the |n| <= 150
// of float32 and r = x - n * hi - n * lo keeps its low bits.
constexpr float kLn2Hi = 0x1.62e4p-1f, kLn2Lo = 0x1.7f7d1cp-20f;
constexpr float kLog2E = 0x1.715476p+0f;
// exp(x) is inf above 88.73 and rounds to 0 below -103.98: clamped to a little beyond, the
// scaling by 2^n then overflows or underflows by itself.
constexpr float kExpHi = 89.0f, kExpLo = -104.0f;
// 1.5 * 2^23: adding it to a float of magnitude below 2^22 rounds that float to an integer (the
// spacing of floats there is 1), subtracting it gives that integer back exactly.
constexpr float kRoundMagic = 0x1.8p+23f;
// With AVX-512, exp(x) = 2^floor(k) 2^(j/16) e^r, k = x log2(e) rounded to a multiple of 1/16
// (adding 1.5 * 2^19, where floats are 1/16 apart), j/16 its fraction, r = x - k ln2 with
// |r| <= ln2/32: 2^(j/16) from a table of 16 floats by one vpermps, whose index is the low four
// bits of x log2(e) + 1.5 * 2^19 (the sixteenths of k); e^r = 1 + r + r^2 (c2 + c3 r).
constexpr float kRoundSixteenth = 0x1.8p+19f;
constexpr float kExpTable[16] = {0x1p+0f,        0x1.0b5586p+0f, 0x1.172b84p+0f, 0x1.2387a6p+0f,
                                 0x1.306fep+0f,  0x1.3dea64p+0f, 0x1.4bfdaep+0f, 0x1.5ab07ep+0f,
                                 0x1.6a09e6p+0f, 0x1.7a1148p+0f, 0x1.8ace54p+0f, 0x1.9c4918p+0f,
                                 0x1.ae89fap+0f, 0x1.c199bep+0f, 0x1.d5818ep+0f, 0x1.ea4afap+0f};
// c2, c3 for |r| <= ln2/32 (tools/fit_inline_math.py): 0.03 x 2^-24 worst.
constexpr float kExpTableQ[] = {0x1.00022p-1f, 0x1.55561cp-3f};

llvm::Value* constant(llvm::Type* ty, float v) {
  return llvm::ConstantFP::get(ty, static_cast<double>(v));
}

// a * m + c, fused where the target has FMA.
llvm::Value* fmuladd(llvm::IRBuilderBase& b, llvm::Value* a, llvm::Value* m, llvm::Value* c) {
  return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, m, c});
}

template <size_t N>
llvm::Value* horner(llvm::IRBuilderBase& b, llvm::Value* t, const float (&c)[N]) {
  llvm::Type* ty = t->getType();
  llvm::Value* acc = constant(ty, c[N - 1]);
  for (size_t i = N - 1; i-- > 0;) acc = fmuladd(b, acc, t, constant(ty, c[i]));
  return acc;
}

// 2^n for integers n in [-126, 127], built in the exponent field.
llvm::Value* power_of_two(llvm::IRBuilderBase& b, llvm::Value* n, llvm::Type* ty) {
  llvm::Type* ity = n->getType();
  llvm::Value* biased = b.CreateAdd(n, llvm::ConstantInt::get(ity, 127));
  return b.CreateBitCast(b.CreateShl(biased, llvm::ConstantInt::get(ity, 23)), ty);
}

// An AVX-512 intrinsic over every lane of `operands`, 16 lanes (one zmm register) at a time;
// `tail` are its trailing non-vector arguments.
llvm::Value* per_zmm(llvm::IRBuilderBase& b, llvm::Intrinsic::ID id,
                     const std::vector<llvm::Value*>& operands,
                     const std::vector<llvm::Value*>& tail) {
  int lanes =
      static_cast<int>(llvm::cast<llvm::FixedVectorType>(operands[0]->getType())->getNumElements());
  llvm::Function* fn = llvm::Intrinsic::getDeclaration(b.GetInsertBlock()->getModule(), id);
  std::vector<llvm::Value*> pieces;
  for (int offset = 0; offset < lanes; offset += 16) {
    std::vector<llvm::Value*> args;
    for (llvm::Value* v : operands) args.push_back(zmm_piece(b, v, offset));
    args.insert(args.end(), tail.begin(), tail.end());
    pieces.push_back(b.CreateCall(fn, args));
  }
  return join_pieces(b, std::move(pieces));
}

// p * 2^n by vscalefps: it rounds to a denormal, 0 or inf where the product does and passes NaN
// through, so no clamping or exponent arithmetic is needed.
llvm::Value* scalef(llvm::IRBuilderBase& b, llvm::Value* p, llvm::Value* n) {
  auto* piece = llvm::FixedVectorType::get(b.getFloatTy(), 16);
  // All lanes (mask -1), the current rounding mode (4).
  return per_zmm(b, llvm::Intrinsic::x86_avx512_mask_scalef_ps_512,
                 {p, n, llvm::PoisonValue::get(piece)}, {b.getInt16(0xffff), b.getInt32(4)});
}

// 1 / d for positive normal d (or NaN) whose reciprocal is finite. With AVX-512: vrcp14ps (14 bits)
// and one Newton step, a few cycles where vdivps on 16 lanes takes 16.
llvm::Value* reciprocal(llvm::IRBuilderBase& b, llvm::Value* d, bool avx512) {
  llvm::Type* ty = d->getType();
  if (!avx512 || !splits_into_zmm(ty)) return b.CreateFDiv(constant(ty, 1.0f), d);
  auto* piece = llvm::FixedVectorType::get(b.getFloatTy(), 16);
  llvm::Value* y = per_zmm(b, llvm::Intrinsic::x86_avx512_rcp14_ps_512,
                           {d, llvm::PoisonValue::get(piece)}, {b.getInt16(0xffff)});
  llvm::Value* e = fmuladd(b, b.CreateFNeg(d), y, constant(ty, 1.0f));
  return fmuladd(b, y, e, y);
}

// exp of an argument already clamped to [kExpLo, kExpHi]: x = n ln2 + r with |r| <= ln2/2, and
// exp(r) by its polynomial. Returns n (as a float) and exp(r); the callers differ only in how
// they clamp (NaN) and how they scale by 2^n.
std::pair<llvm::Value*, llvm::Value*> exp_reduced(llvm::IRBuilderBase& b, llvm::Value* xc) {
  llvm::Type* ty = xc->getType();
  // n = x log2(e) rounded to an integer by adding and subtracting kRoundMagic: an FMA and a
  // subtraction, where vmulps and vrndscaleps were three micro-ops on AVX-512 (vrndscaleps
  // takes two). Under contraction only, LLVM keeps the pair (no reassociation).
  llvm::Value* magic = constant(ty, kRoundMagic);
  llvm::Value* fn = b.CreateFSub(fmuladd(b, xc, constant(ty, kLog2E), magic), magic);
  llvm::Value* r = fmuladd(b, fn, constant(ty, -kLn2Hi), xc);
  r = fmuladd(b, fn, constant(ty, -kLn2Lo), r);
  // 1 + r + r^2 Q(r) as one Horner chain, 1 + r (1 + r (q0 + r (q1 + ...))): six FMAs where
  // r^2, Q, an FMA and the add of 1 were seven vector operations; as accurate (within 1 ulp of
  // exp on a dense grid of [-87, 88], emulated in float64).
  llvm::Value* q = horner(b, r, kExpQ);
  llvm::Value* one = constant(ty, 1.0f);
  llvm::Value* p = fmuladd(b, fmuladd(b, q, r, one), r, one);
  return {fn, p};
}

// exp of an argument clamped to [kExpLo, kExpHi] (or NaN), AVX-512, vectors of 16k floats: the
// table form above, 12 vector instructions with the clamps where the polynomial over |r| <=
// ln2/2 took 13 (two fewer FMAs, one vpermps more). Within 1 ulp of exp over every float32
// (0.99 at -22.03: the table's rounding, at most half an ulp, and the result's).
llvm::Value* exp_table(llvm::IRBuilderBase& b, llvm::Value* xc) {
  llvm::Type* ty = xc->getType();
  llvm::Value* magic = constant(ty, kRoundSixteenth);
  llvm::Value* s = fmuladd(b, xc, constant(ty, kLog2E), magic);
  llvm::Value* k = b.CreateFSub(s, magic);
  // x - k kLn2Hi is exact in one FMA: kLn2Hi is a multiple of 2^-15 and k of 2^-4, so the
  // difference is a multiple of 2^-19 (or of x's spacing, if finer) below 0.022 in magnitude
  // (|x - k ln2| <= ln2/32 and |k| <= 151): at most 24 significant bits.
  llvm::Value* r = fmuladd(b, k, constant(ty, -kLn2Hi), xc);
  r = fmuladd(b, k, constant(ty, -kLn2Lo), r);
  std::vector<llvm::Constant*> entries;
  for (float v : kExpTable) entries.push_back(llvm::ConstantFP::get(b.getFloatTy(), v));
  llvm::Value* table = llvm::ConstantVector::get(entries);
  // vpermps reads the low four bits of each index lane: the sixteenths of k, in s's last bits.
  llvm::Value* index = b.CreateBitCast(s, ty->getWithNewType(b.getInt32Ty()));
  int lanes = static_cast<int>(llvm::cast<llvm::FixedVectorType>(ty)->getNumElements());
  std::vector<llvm::Value*> pieces;
  llvm::Function* permute = llvm::Intrinsic::getDeclaration(
      b.GetInsertBlock()->getModule(), llvm::Intrinsic::x86_avx512_permvar_sf_512);
  for (int offset = 0; offset < lanes; offset += 16) {
    pieces.push_back(b.CreateCall(permute, {table, zmm_piece(b, index, offset)}));
  }
  llvm::Value* t = join_pieces(b, std::move(pieces));
  // t e^r = t + t (r + r^2 (c2 + c3 r)): the table's entry enters unrounded by the polynomial.
  llvm::Value* q = fmuladd(b, constant(ty, kExpTableQ[1]), r, constant(ty, kExpTableQ[0]));
  llvm::Value* p = fmuladd(b, q, b.CreateFMul(r, r), r);
  return scalef(b, fmuladd(b, t, p, t), k);
}

// `hi`: the upper clamp (kExpHi, or less where the caller needs a smaller bound). `table`: the
// table form with AVX-512 (exp itself); sigmoid keeps the polynomial over |r| <= ln2/2, whose
// smaller error its quotient needs (2.7 ulp worst over every float32; 3.4 from the table form,
// over the 3 its tests hold).
llvm::Value* exp_f32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512, float hi = kExpHi,
                     bool table = true) {
  llvm::Type* ty = x->getType();
  if (avx512 && splits_into_zmm(ty)) {
    // Clamped so that x - n ln2 stays finite (inf - inf is NaN); NaN fails both comparisons.
    // (vrangeps would clamp both ends in one instruction, but it turns NaN into the bound.)
    llvm::Value* xc = b.CreateSelect(b.CreateFCmpOGT(x, constant(ty, hi)), constant(ty, hi), x);
    xc = b.CreateSelect(b.CreateFCmpOLT(xc, constant(ty, kExpLo)), constant(ty, kExpLo), xc);
    if (table) return exp_table(b, xc);
    auto [fn, p] = exp_reduced(b, xc);
    return scalef(b, p, fn);
  }
  llvm::Type* ity = ty->getWithNewType(b.getInt32Ty());
  // NaN goes to the top of the range (the conversion to integer below must not see it: LLVM
  // leaves that undefined) and is put back at the end.
  llvm::Value* xc = b.CreateSelect(b.CreateFCmpOLT(x, constant(ty, hi)), x, constant(ty, hi));
  xc = b.CreateSelect(b.CreateFCmpOGT(xc, constant(ty, kExpLo)), xc, constant(ty, kExpLo));
  auto [fn, p] = exp_reduced(b, xc);
  // 2^n as two factors 2^(n/2) that are normal floats for every n in [-150, 128]: their product
  // with p rounds once, to a denormal, 0 or inf where exp does.
  llvm::Value* n = b.CreateFPToSI(fn, ity);
  llvm::Value* n1 = b.CreateAShr(n, llvm::ConstantInt::get(ity, 1));
  llvm::Value* n2 = b.CreateSub(n, n1);
  llvm::Value* result =
      b.CreateFMul(b.CreateFMul(p, power_of_two(b, n1, ty)), power_of_two(b, n2, ty));
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, result);
}

// The constant c of x = v * c (a splat of a float with 1/8 <= |c| <= 8), and v; or 1 and x.
// Exact GELU's erf(x / sqrt(2)) is such an argument.
std::pair<double, llvm::Value*> constant_factor(llvm::Value* x) {
  auto* mul = llvm::dyn_cast<llvm::BinaryOperator>(x);
  if (mul == nullptr || mul->getOpcode() != llvm::Instruction::FMul) return {1.0, x};
  for (int i = 0; i < 2; ++i) {
    auto* c = llvm::dyn_cast<llvm::Constant>(mul->getOperand(1 - i));
    if (c == nullptr) continue;
    if (c->getType()->isVectorTy()) c = c->getSplatValue();
    auto* cfp = llvm::dyn_cast_or_null<llvm::ConstantFP>(c);
    if (cfp == nullptr || !cfp->getValueAPF().isFiniteNonZero()) continue;
    double v = cfp->getValueAPF().convertToDouble();
    if (v < 0 ? (v < -8 || v > -0.125) : (v > 8 || v < 0.125)) continue;
    return {v, mul->getOperand(i)};
  }
  return {1.0, x};
}

// x P(x^2) / Q(x^2), an odd function that rounds to +-1 past |x| = one (tanh, erf). Only x^2 is
// clamped, to one^2 (one vminps, where clamping x took two): past the clamp the quotient is
// x / one times about 1, at least 1 in magnitude, and the clamp of the quotient to [-1, 1] (which
// the rounding of P and Q needs near |x| = one anyway) makes it +-1; x = +-inf gives +-inf there.
// NaN fails every comparison and stays NaN; the factor x keeps the sign of -0. For x = v c with
// a constant c, c goes into the coefficients (x P(x^2) = v sum P_k c^(2k+1) (v^2)^k, and so
// for Q): exact GELU's multiplication by 1/sqrt(2) is left out, and f(v c) is evaluated without
// the rounding of v c.
template <size_t NP, size_t NQ>
llvm::Value* odd_rational_to_one(llvm::IRBuilderBase& b, llvm::Value* x, float one_at,
                                 const float (&P)[NP], const float (&Q)[NQ], bool avx512) {
  llvm::Type* ty = x->getType();
  auto [c, v] = constant_factor(x);
  float p_scaled[NP], q_scaled[NQ];
  double power = c;  // c^(2k+1)
  for (size_t k = 0; k < NP; ++k, power *= c * c) {
    p_scaled[k] = static_cast<float>(static_cast<double>(P[k]) * power);
  }
  power = 1.0;  // c^(2k)
  for (size_t k = 0; k < NQ; ++k, power *= c * c) {
    q_scaled[k] = static_cast<float>(static_cast<double>(Q[k]) * power);
  }
  llvm::Value* z = b.CreateFMul(v, v);
  double top_v = static_cast<double>(one_at) / c;
  llvm::Value* top = constant(ty, static_cast<float>(top_v * top_v));
  z = b.CreateSelect(b.CreateFCmpOGT(z, top), top, z);
  llvm::Value* p = b.CreateFMul(v, horner(b, z, p_scaled));
  llvm::Value* r = b.CreateFMul(p, reciprocal(b, horner(b, z, q_scaled), avx512));
  llvm::Value* one = constant(ty, 1.0f);
  r = b.CreateSelect(b.CreateFCmpOGT(r, one), one, r);
  return b.CreateSelect(b.CreateFCmpOLT(r, b.CreateFNeg(one)), b.CreateFNeg(one), r);
}

llvm::Value* tanh_f32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512) {
  return odd_rational_to_one(b, x, kTanhOne, kTanhP, kTanhQ, avx512);
}

llvm::Value* erf_f32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512) {
  return odd_rational_to_one(b, x, kErfOne, kErfP, kErfQ, avx512);
}

// e^x / (1 + e^x) with x clamped to at most kSigmoidOne, where the quotient rounds to 1: no
// overflow, and below -87 e^x is the denormal (or 0) that sigmoid is, not 1 / inf. One clamp,
// the quotient and nothing else (18 vector instructions), where 1 / (1 + e^-|x|) with a choice
// of e^-|x| times that by the sign of x took 19.
constexpr float kSigmoidOne = 20.0f;

llvm::Value* sigmoid_f32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512) {
  llvm::Type* ty = x->getType();
  llvm::Value* e = exp_f32(b, x, avx512, kSigmoidOne, false);
  return b.CreateFMul(e, reciprocal(b, b.CreateFAdd(constant(ty, 1.0f), e), avx512));
}

// log(m) for m in [0.75, 1.5) as 2 atanh(s), s = (m - 1) / (m + 1) in [-1/7, 1/5]: with t = 2s,
// t + t u (1/12 + u/80 + u^2/448 + u^3/2304), u = t^2 (the series of 2 atanh; the next term is
// below 0.2 ulp). t = 2r / (2 + r), r = m - 1 exact, to within an ulp: t0 = 2r y with y about
// 1 / (2 + r) (vrcp14ps's 14 bits are enough), then t0 + y (2r - t0 (2 + r)), the residual
// computed without rounding error but the last (2r - 2 t0 is exact: t0 is within a factor 1.25
// of r). Where t was 2r / (2 + r) rounded (2 + r rounds) the error of log was 2.4 ulp.
llvm::Value* log_mantissa(llvm::IRBuilderBase& b, llvm::Value* m, bool avx512) {
  llvm::Type* ty = m->getType();
  llvm::Value* r = b.CreateFSub(m, constant(ty, 1.0f));
  llvm::Value* two_r = b.CreateFAdd(r, r);
  llvm::Value* den = b.CreateFAdd(r, constant(ty, 2.0f));
  llvm::Value* y = nullptr;
  if (avx512 && splits_into_zmm(ty)) {
    auto* piece = llvm::FixedVectorType::get(b.getFloatTy(), 16);
    y = per_zmm(b, llvm::Intrinsic::x86_avx512_rcp14_ps_512, {den, llvm::PoisonValue::get(piece)},
                {b.getInt16(static_cast<int16_t>(0xffff))});
  } else {
    y = b.CreateFDiv(constant(ty, 1.0f), den);
  }
  llvm::Value* t0 = b.CreateFMul(two_r, y);
  llvm::Value* res = fmuladd(b, constant(ty, -2.0f), t0, two_r);
  res = fmuladd(b, b.CreateFNeg(t0), r, res);
  llvm::Value* t = fmuladd(b, res, y, t0);
  llvm::Value* u = b.CreateFMul(t, t);
  constexpr float kLogQ[] = {1.0f / 12, 1.0f / 80, 1.0f / 448, 1.0f / 2304};
  return fmuladd(b, b.CreateFMul(t, u), horner(b, u, kLogQ), t);
}

constexpr float kLn2 = 0x1.62e43p-1f;

// log(x) + add (add: nullptr, or log1p's correction), log(x) = e ln2 + log(m), x = m 2^e with
// m in [0.75, 1.5). With AVX-512, m and e come from vgetmantps and vgetexpps (denormals
// included) and one vfixupimmps gives the special values; elsewhere from the bits of x, with
// selects for the special values.
llvm::Value* log_plus(llvm::IRBuilderBase& b, llvm::Value* x, llvm::Value* add, bool avx512) {
  llvm::Type* ty = x->getType();
  if (avx512 && splits_into_zmm(ty)) {
    auto* piece = llvm::FixedVectorType::get(b.getFloatTy(), 16);
    llvm::Value* poison = llvm::PoisonValue::get(piece);
    llvm::Value* all = b.getInt16(static_cast<int16_t>(0xffff));
    llvm::Value* mode = b.getInt32(4);
    // Interval [0.75, 1.5) (3), sign of the result 0 (1 << 2).
    llvm::Value* m = per_zmm(b, llvm::Intrinsic::x86_avx512_mask_getmant_ps_512, {x},
                             {b.getInt32(7), poison, all, mode});
    // getmant halves mantissas of 1.5 and above: e = floor(log2 x) - floor(log2 m).
    auto getexp = [&](llvm::Value* v) {
      return per_zmm(b, llvm::Intrinsic::x86_avx512_mask_getexp_ps_512, {v, poison}, {all, mode});
    };
    llvm::Value* e = b.CreateFSub(getexp(x), getexp(m));
    llvm::Value* r = fmuladd(b, e, constant(ty, kLn2), log_mantissa(b, m, avx512));
    if (add != nullptr) r = b.CreateFAdd(r, add);
    // vfixupimmps: a 4-bit answer per class of x, class j at bits 4j: quiet and signalling NaN
    // (0, 1) -> x made quiet (2); +-0 (2) -> -inf (4); 1 (3) -> +0 (8), or r (0) where add may
    // make it other than 0; -inf (4) and negative (6) -> the default NaN (3); +inf (5) -> +inf
    // (5); positive (7) -> r (0).
    llvm::Value* table = llvm::ConstantVector::getSplat(
        llvm::ElementCount::getFixed(16), b.getInt32(add == nullptr ? 0x03538422 : 0x03530422));
    std::vector<llvm::Value*> pieces;
    int lanes = static_cast<int>(llvm::cast<llvm::FixedVectorType>(ty)->getNumElements());
    llvm::Function* fixup = llvm::Intrinsic::getDeclaration(
        b.GetInsertBlock()->getModule(), llvm::Intrinsic::x86_avx512_mask_fixupimm_ps_512);
    for (int offset = 0; offset < lanes; offset += 16) {
      pieces.push_back(b.CreateCall(fixup, {zmm_piece(b, r, offset), zmm_piece(b, x, offset), table,
                                            b.getInt32(0), all, mode}));
    }
    return join_pieces(b, std::move(pieces));
  }
  llvm::Type* ity = ty->getWithNewType(b.getInt32Ty());
  // Denormals (and every x below the smallest normal, which the selects below replace) are
  // scaled by 2^23 into the normal range first.
  llvm::Value* tiny = b.CreateFCmpOLT(x, constant(ty, 0x1p-126f));
  llvm::Value* xs = b.CreateSelect(tiny, b.CreateFMul(x, constant(ty, 0x1p23f)), x);
  llvm::Value* bits = b.CreateBitCast(xs, ity);
  // k = the exponent of x / 0.75: the bits of m are those of x less k in the exponent field.
  llvm::Value* k = b.CreateAShr(b.CreateSub(bits, llvm::ConstantInt::get(ity, 0x3f400000)),
                                llvm::ConstantInt::get(ity, 23));
  llvm::Value* m =
      b.CreateBitCast(b.CreateSub(bits, b.CreateShl(k, llvm::ConstantInt::get(ity, 23))), ty);
  llvm::Value* e = b.CreateFAdd(b.CreateSIToFP(k, ty),
                                b.CreateSelect(tiny, constant(ty, -23.0f), constant(ty, 0.0f)));
  llvm::Value* r = fmuladd(b, e, constant(ty, kLn2), log_mantissa(b, m, avx512));
  if (add != nullptr) r = b.CreateFAdd(r, add);
  float inf = std::numeric_limits<float>::infinity();
  r = b.CreateSelect(b.CreateFCmpOEQ(x, constant(ty, inf)), x, r);
  r = b.CreateSelect(b.CreateFCmpOLT(x, constant(ty, 0.0f)),
                     constant(ty, std::numeric_limits<float>::quiet_NaN()), r);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, constant(ty, 0.0f)), constant(ty, -inf), r);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, r);
}

llvm::Value* log_f32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512) {
  return log_plus(b, x, nullptr, avx512);
}

// log1p(x) = log(u) + (x - (u - 1)) / u, u = 1 + x rounded: the correction is u's rounding error
// (exact for x >= -1: Fast2Sum where |x| <= 1, Sterbenz's lemma beyond) over u, and the whole
// result where u rounds to 1. u = 0, inf, NaN or below 0 take log's special values; +-0 stays.
llvm::Value* log1p_f32(llvm::IRBuilderBase& b, llvm::Value* x, bool avx512) {
  llvm::Type* ty = x->getType();
  llvm::Value* one = constant(ty, 1.0f);
  llvm::Value* u = b.CreateFAdd(x, one);
  llvm::Value* c = b.CreateFSub(x, b.CreateFSub(u, one));
  llvm::Value* r = log_plus(b, u, b.CreateFMul(c, reciprocal(b, u, avx512)), avx512);
  return b.CreateSelect(b.CreateFCmpOEQ(x, constant(ty, 0.0f)), x, r);
}

}  // namespace

bool has_inline_math(Intrinsic op) {
  return op == Intrinsic::kExp || op == Intrinsic::kErf || op == Intrinsic::kSigmoid ||
         op == Intrinsic::kTanh || op == Intrinsic::kLog || op == Intrinsic::kLog1p;
}

llvm::Value* emit_inline_math(llvm::IRBuilderBase& b, Intrinsic op, llvm::Value* x, bool avx512) {
  PTB_ICHECK(x->getType()->getScalarType()->isFloatTy(), intrinsic_name(op), " inline");
  // The reductions above depend on the order of their operations: no reassociation or
  // no-NaN assumptions from a fast-math target, only contraction into FMA.
  llvm::IRBuilderBase::FastMathFlagGuard keep(b);
  llvm::FastMathFlags contract;
  contract.setAllowContract(true);
  b.setFastMathFlags(contract);
  switch (op) {
    case Intrinsic::kExp:
      return exp_f32(b, x, avx512);
    case Intrinsic::kErf:
      return erf_f32(b, x, avx512);
    case Intrinsic::kTanh:
      return tanh_f32(b, x, avx512);
    case Intrinsic::kSigmoid:
      return sigmoid_f32(b, x, avx512);
    case Intrinsic::kLog:
      return log_f32(b, x, avx512);
    case Intrinsic::kLog1p:
      return log1p_f32(b, x, avx512);
    default:
      internal_error(__FILE__, __LINE__, intrinsic_name(op), " has no inline form");
  }
}

}  // namespace ptb
