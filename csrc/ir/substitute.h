// Replaces variables by expressions. The map is keyed by the Var node (variables are compared
// by identity), so two variables with the same name never get confused.
#pragma once

#include <unordered_map>

#include "ir/expr.h"
#include "ir/stmt.h"

namespace ptb {

using VarMap = std::unordered_map<const ExprNode*, Expr>;

Expr substitute(const Expr& e, const VarMap& vmap);
Stmt substitute(const Stmt& s, const VarMap& vmap);

}  // namespace ptb
