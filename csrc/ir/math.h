// Math functions by name: every function the te language and TC's builtins offer beyond the
// operators. Most are one intrinsic (exp, acos, erfinv...); a few are expressions over them
// (rcbrt = 1 / cbrt, norm3d = hypot(hypot(a, b), c), normcdf through erfc). Python's te
// functions and TC's builtins both come here, so they agree.
#pragma once

#include <string>
#include <vector>

#include "ir/expr.h"

namespace ptb {

// The number of arguments of the math function `name`, or 0 when there is none.
int math_function_arity(const std::string& name);

// name(args), with dtypes already matched; raises TypeError for a wrong count or dtype.
Expr math_function(const std::string& name, std::vector<Expr> args);

// Every name, in a stable order (the intrinsics' names first).
std::vector<std::string> math_function_names();

}  // namespace ptb
