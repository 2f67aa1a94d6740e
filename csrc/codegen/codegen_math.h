// Math intrinsics of the IR (expr.h's Intrinsic, all but if_then_else, which needs control flow)
// on scalar or vector LLVM values. Only csrc/codegen includes this.
//
// Where LLVM has an intrinsic that compiles to instructions (sqrt, fabs, floor, ceil, trunc,
// roundeven, fma) it is used at any width. float32 exp, erf, sigmoid and tanh are
// inline code (inline_math.h). Other transcendental functions are llvm.exp / llvm.log /...
// or libm calls (log1pf, erfcf, float64 tanh) on scalars; on vectors they call glibc's libmvec in
// chunks of the widest width it has, and libm per lane for what remains.
#pragma once

#include <vector>

#include "codegen/libmvec.h"
#include "ir/expr.h"

namespace llvm {
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace ptb {

// op applied to args, all of dtype t (isnan gives bool); 16-bit floats are computed in float32.
llvm::Value* emit_math(llvm::IRBuilderBase& b, Intrinsic op, const std::vector<llvm::Value*>& args,
                       DataType t, const std::vector<VectorMathVariant>& vector_math, bool avx512);

}  // namespace ptb
