#pragma once

namespace ptb {

namespace detail {
template <typename F>
class PreOrderVisitor : public IRVisitor {
 public:
  explicit PreOrderVisitor(F& f) : f_(f) {}
  using IRVisitor::visit;
  void visit(const Expr& e) override {
    if (!e.defined()) return;
    f_(e);
    IRVisitor::visit(e);
  }

 private:
  F& f_;
};
}  // namespace detail

template <typename F>
void for_each_expr(const Expr& root, F f) {
  detail::PreOrderVisitor<F> v(f);
  v.visit(root);
}
template <typename F>
void for_each_expr(const Stmt& root, F f) {
  detail::PreOrderVisitor<F> v(f);
  v.visit(root);
}

}  // namespace ptb
