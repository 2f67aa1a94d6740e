// A rewrite of expressions and statements. The defaults rebuild a node only when a child changed
// (otherwise the original node is returned, so unchanged subtrees stay shared), so a pass
// overrides only the nodes it rewrites.
#pragma once

#include <vector>

#include "ir/expr.h"
#include "ir/stmt.h"

namespace ptb {

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);

 protected:
  std::vector<Expr> mutate_all(const std::vector<Expr>& exprs, bool* changed);

#define PTB_DECLARE_MUTATE(T) virtual Expr mutate_node(const T* op, const Expr& self);
  PTB_EXPR_NODES(PTB_DECLARE_MUTATE)
#undef PTB_DECLARE_MUTATE
#define PTB_DECLARE_MUTATE(T) virtual Stmt mutate_node(const T* op, const Stmt& self);
  PTB_STMT_NODES(PTB_DECLARE_MUTATE)
#undef PTB_DECLARE_MUTATE
};

}  // namespace ptb
