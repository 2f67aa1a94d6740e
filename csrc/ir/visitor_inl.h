#pragma once

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace ptb {

namespace detail {

// Pushes the expression children of `e` (in reverse, so that they pop in order).
void push_expr_children(const Expr& e, std::vector<const Expr*>* stack);
// The expressions directly under statement `s`, and its sub-statements.
void stmt_children(const Stmt& s, std::vector<const Expr*>* exprs, std::vector<const Stmt*>* stmts);

template <typename F>
void for_each_expr_from(std::vector<const Expr*> stack, F& f) {
  std::unordered_set<const ExprNode*> seen;
  while (!stack.empty()) {
    const Expr* e = stack.back();
    stack.pop_back();
    if (!e->defined() || !seen.insert(e->get()).second) continue;
    f(*e);
    push_expr_children(*e, &stack);
  }
}

}  // namespace detail

template <typename F>
void for_each_expr(const Expr& root, F f) {
  detail::for_each_expr_from({&root}, f);
}

template <typename F>
void for_each_expr(const Stmt& root, F f) {
  std::vector<const Expr*> exprs;
  std::vector<const Stmt*> stmts{&root};
  while (!stmts.empty()) {
    const Stmt* s = stmts.back();
    stmts.pop_back();
    detail::stmt_children(*s, &exprs, &stmts);
  }
  std::reverse(exprs.begin(), exprs.end());
  detail::for_each_expr_from(std::move(exprs), f);
}

}  // namespace ptb
