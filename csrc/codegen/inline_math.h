// float32 exp, erf, sigmoid, tanh, log and log1p as straight-line LLVM IR (range reduction,
// polynomials, rational functions for tanh and erf, 2 atanh((m - 1) / (m + 1)) for log's
// mantissa m), on scalars or vectors of float. Only csrc/codegen includes this.
//
// A libmvec call keeps an elementwise loop from being memory-bound: the call saves and restores
// vector registers, and glibc's vector erff and tanhf take tens of cycles per vector. Inline,
// these are one or two dozen vector instructions that LLVM schedules with the loads and stores
// around them (one thread, 8192 floats in L1, ns per element: exp 0.28 -> 0.20, tanh 0.34 ->
// 0.23, erf 0.52 -> 0.45, exact gelu 0.66 -> 0.55; erf as one rational function then halved
// exact gelu's time again), and the scalar form is vectorized by LLVM like any arithmetic (but
// codegen_math keeps a scalar log a logf call: see there).
// Accuracy (tests/python/test_inline_math.py, against float64 references on random bit patterns
// of the whole float range), in ulps: exp 1.0, sigmoid 2.6, tanh 5.3, erf 4.7 (6.4 at worst on
// a dense grid of [0, 4]; PyTorch's vectorized erf has about 1e-7 absolute error, far more
// than that relative to erf near 0), log 1.2, log1p 1.5: the two polynomials of a rational round by
// up to 2.5 ulp each where the result is just below 1. inf, -inf, NaN and -0 give what libm gives;
// results below the smallest normal float are rounded as denormals, not flushed. The
// coefficients come from tools/fit_inline_math.py (log's are its Taylor series).
#pragma once

#include "ir/expr.h"

namespace llvm {
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace ptb {

// Whether emit_inline_math computes `op` (exp, erf, sigmoid, tanh, log, log1p).
bool has_inline_math(Intrinsic op);

// op(x) for x of LLVM type float or <N x float>; op as accepted by has_inline_math. `avx512`:
// the target has AVX-512F: exp's result is then scaled by 2^n with vscalefps, reciprocals
// are vrcp14ps and a Newton step, and log splits x with vgetmantps and vgetexpps and takes its
// special values from one vfixupimmps.
llvm::Value* emit_inline_math(llvm::IRBuilderBase& b, Intrinsic op, llvm::Value* x, bool avx512);

}  // namespace ptb
