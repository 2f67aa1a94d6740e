// Evaluates the integer expressions of sizes (output shapes, ranges, bounds checks) once the
// size variables are bound from the caller's arrays: what the caller needs to allocate outputs
// before the kernel runs, and to refuse inputs that would make a read go out of bounds.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "ir/expr.h"

namespace ptb::tc {

// Values of size variables, keyed by their Var node.
using SizeEnv = std::unordered_map<const ExprNode*, int64_t>;

// The value of `e`, an integer expression of IntImm, Var (looked up in env), Cast, Add, Sub,
// Mul, FloorDiv, FloorMod, Min and Max, computed in int64 with overflow checks. Throws a
// ValueError on overflow or division by zero; an InternalError on an unbound Var or another node.
int64_t eval_int(const Expr& e, const SizeEnv& env);

}  // namespace ptb::tc
