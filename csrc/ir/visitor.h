// A read-only walk over expressions and statements. Every visit method recurses into the node's
// children by default, so an analysis overrides only the nodes it cares about.
//
// Expressions are DAGs: a subexpression shared by several parents (x in `select(c, x + 1, x)`,
// nested 5000 times) is visited once, not once per path to it, unless the visitor asks for
// every occurrence (a printer). Recursion is guarded by check_stack().
#pragma once

#include <unordered_set>

#include "ir/expr.h"
#include "ir/stmt.h"

namespace ptb {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  virtual void visit(const Expr& e);
  virtual void visit(const Stmt& s);

 protected:
  // false: visit a shared subexpression at each of its occurrences.
  bool visit_shared_once_ = true;

#define PTB_DECLARE_VISIT(T) virtual void visit_node(const T* op);
  PTB_EXPR_NODES(PTB_DECLARE_VISIT)
  PTB_STMT_NODES(PTB_DECLARE_VISIT)
#undef PTB_DECLARE_VISIT

 private:
  std::unordered_set<const ExprNode*> visited_;  // the compound expressions already visited
};

// Calls f once on every distinct expression node under `root`, parents before children (an
// iterative walk: any depth).
template <typename F>
void for_each_expr(const Expr& root, F f);
template <typename F>
void for_each_expr(const Stmt& root, F f);

// Whether the variable `var` occurs in `e`.
bool uses_var(const Expr& e, const Expr& var);

}  // namespace ptb

#include "ir/visitor_inl.h"
