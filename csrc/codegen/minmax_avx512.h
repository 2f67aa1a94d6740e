// NumPy's float minimum / maximum on AVX-512 as x86's vmaxps/vminps plus a NaN select.
// Only csrc/codegen includes this.
#pragma once

#include "codegen/codegen_arith.h"

namespace llvm {
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace ptb {

// Whether emit_minmax_avx512 takes values of this LLVM type: <N x float>, N 16 times
// a power of two.
bool minmax_avx512_applies(llvm::Value* v);

// min(a, c) / max(a, c) (op kMin or kMax) with numpy.minimum/maximum's results: a NaN in either
// operand is the result, ties (+0 against -0 included) give a. Same results as emit_binary.
// `fix_up`: put c's NaNs back with vfixupimmps instead of a compare and a masked move: one
// instruction instead of two, with 4 cycles more latency on the chain through a.
llvm::Value* emit_minmax_avx512(llvm::IRBuilderBase& b, BinaryOp op, llvm::Value* a, llvm::Value* c,
                                bool fix_up);

}  // namespace ptb
