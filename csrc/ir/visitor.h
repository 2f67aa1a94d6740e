// A read-only walk over expressions and statements. Every visit method recurses into the node's
// children by default, so an analysis overrides only the nodes it cares about.
#pragma once

#include "ir/expr.h"
#include "ir/stmt.h"

namespace ptb {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  virtual void visit(const Expr& e);
  virtual void visit(const Stmt& s);

 protected:
#define PTB_DECLARE_VISIT(T) virtual void visit_node(const T* op);
  PTB_EXPR_NODES(PTB_DECLARE_VISIT)
  PTB_STMT_NODES(PTB_DECLARE_VISIT)
#undef PTB_DECLARE_VISIT
};

// Calls f on every expression node under `root`, parents before children.
template <typename F>
void for_each_expr(const Expr& root, F f);
template <typename F>
void for_each_expr(const Stmt& root, F f);

}  // namespace ptb

#include "ir/visitor_inl.h"
