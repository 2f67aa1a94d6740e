// Algebraic simplification: constant folding, identities and canonical integer index arithmetic,
// so that the lowered loop nest is small and readable and codegen sees constants where there are
// some. Every rewrite preserves the value of the expression for all inputs (integer arithmetic
// wraps at its dtype's width, floats are folded in their own precision and never reassociated).
#pragma once

#include "ir/expr.h"
#include "ir/stmt.h"

namespace ptb {

Expr simplify(const Expr& e);

// Also: loops of extent 0 are removed, loops of extent 1 become their body with the variable
// replaced by the minimum, conditionals with a constant condition are resolved and blocks are
// flattened.
Stmt simplify(const Stmt& s);

}  // namespace ptb
