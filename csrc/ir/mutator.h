// A rewrite of expressions and statements. The defaults rebuild a node only when a child changed
// (otherwise the original node is returned, so unchanged subtrees stay shared), so a pass
// overrides only the nodes it rewrites.
//
// Expressions are DAGs, and a rewrite keeps them so: within one context, the result for a
// compound expression node is remembered, and a node shared by several parents is rewritten
// once (a chain of 5000 `select(c, x + 1, x)` stays 5000 nodes, not 2^5000). The context is
// what a pass knows while rewriting: each statement starts a fresh memo (its loop variables'
// ranges, its Let bindings), and a pass whose result for an expression depends on other state
// (a substitution in force, a lane mask) runs the rewrite under that state in with_fresh_memo().
#pragma once

#include <unordered_map>
#include <utility>
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

  // Runs f with an empty memo, and restores the current one afterwards.
  template <typename F>
  auto with_fresh_memo(F f) -> decltype(f()) {
    MemoScope scope(this);
    return f();
  }

#define PTB_DECLARE_MUTATE(T) virtual Expr mutate_node(const T* op, const Expr& self);
  PTB_EXPR_NODES(PTB_DECLARE_MUTATE)
#undef PTB_DECLARE_MUTATE
#define PTB_DECLARE_MUTATE(T) virtual Stmt mutate_node(const T* op, const Stmt& self);
  PTB_STMT_NODES(PTB_DECLARE_MUTATE)
#undef PTB_DECLARE_MUTATE

 private:
  Expr dispatch(const Expr& e);

  struct MemoEntry {
    Expr key;  // holds the node, so that its address is not reused while remembered
    Expr result;
  };
  using Memo = std::unordered_map<const ExprNode*, MemoEntry>;
  class MemoScope {
   public:
    explicit MemoScope(IRMutator* m) : m_(m) { std::swap(saved_, m_->memo_); }
    ~MemoScope() { std::swap(saved_, m_->memo_); }
    MemoScope(const MemoScope&) = delete;
    MemoScope& operator=(const MemoScope&) = delete;

   private:
    IRMutator* m_;
    Memo saved_;
  };
  Memo memo_;
};

}  // namespace ptb
