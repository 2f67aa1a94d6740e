// float32 exp, erf and sigmoid as straight-line LLVM IR (range reduction and polynomials), on
// scalars or vectors of float. Only csrc/codegen includes this.
//
// A libmvec call keeps an elementwise loop from being memory-bound: the call saves and restores
// vector registers, and glibc's vector erff takes tens of cycles per vector. Inline, these are a
// few dozen vector instructions that LLVM schedules with the loads and stores around them (one
// thread, 8192 floats in L1: exp 0.28 -> 0.19 ns per element, erf 0.52 -> 0.45, exact gelu 0.66
// -> 0.55), and the scalar form is vectorized by LLVM like any arithmetic. tanh stays with
// libmvec: 1 - 2/(e^2x + 1) with a polynomial near 0 measured slower than glibc's tanhf.
// Accuracy (tests/python/test_inline_math.py, against float64 references on random bit patterns
// of the whole float range): exp within 1 ulp, erf 1.2, sigmoid 2.6; inf, -inf and NaN give what
// libm gives; results below the smallest normal float are rounded as denormals, not flushed. The
// coefficients come from tools/fit_inline_math.py.
#pragma once

#include "ir/expr.h"

namespace llvm {
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace ptb {

// Whether emit_inline_math computes `op` (exp, erf, sigmoid).
bool has_inline_math(Intrinsic op);

// op(x) for x of LLVM type float or <N x float>; op as accepted by has_inline_math. `avx512`:
// the target has AVX-512F, whose vscalefps then scales exp's result by 2^n.
llvm::Value* emit_inline_math(llvm::IRBuilderBase& b, Intrinsic op, llvm::Value* x, bool avx512);

}  // namespace ptb
