#include "ir/visitor.h"

#include "support/error.h"

namespace ptb {

void IRVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  switch (e->kind) {
#define PTB_DISPATCH(T) \
  case ExprKind::k##T:  \
    return visit_node(static_cast<const T*>(e.get()));
    PTB_EXPR_NODES(PTB_DISPATCH)
#undef PTB_DISPATCH
  }
}

void IRVisitor::visit(const Stmt& s) {
  if (!s.defined()) return;
  switch (s->kind) {
#define PTB_DISPATCH(T) \
  case StmtKind::k##T:  \
    return visit_node(static_cast<const T*>(s.get()));
    PTB_STMT_NODES(PTB_DISPATCH)
#undef PTB_DISPATCH
  }
}

void IRVisitor::visit_node(const IntImm*) {}
void IRVisitor::visit_node(const FloatImm*) {}
void IRVisitor::visit_node(const Var*) {}
void IRVisitor::visit_node(const Cast* op) { visit(op->value); }
#define PTB_VISIT_BINARY(T)                 \
  void IRVisitor::visit_node(const T* op) { \
    visit(op->a);                           \
    visit(op->b);                           \
  }
PTB_VISIT_BINARY(Add)
PTB_VISIT_BINARY(Sub)
PTB_VISIT_BINARY(Mul)
PTB_VISIT_BINARY(Div)
PTB_VISIT_BINARY(Mod)
PTB_VISIT_BINARY(FloorDiv)
PTB_VISIT_BINARY(FloorMod)
PTB_VISIT_BINARY(Min)
PTB_VISIT_BINARY(Max)
PTB_VISIT_BINARY(EQ)
PTB_VISIT_BINARY(NE)
PTB_VISIT_BINARY(LT)
PTB_VISIT_BINARY(LE)
PTB_VISIT_BINARY(GT)
PTB_VISIT_BINARY(GE)
PTB_VISIT_BINARY(And)
PTB_VISIT_BINARY(Or)
#undef PTB_VISIT_BINARY
void IRVisitor::visit_node(const Not* op) { visit(op->a); }
void IRVisitor::visit_node(const Select* op) {
  visit(op->condition);
  visit(op->true_value);
  visit(op->false_value);
}
void IRVisitor::visit_node(const Call* op) {
  for (const Expr& a : op->args) visit(a);
}
void IRVisitor::visit_node(const Let* op) {
  visit(op->var);
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit_node(const Load* op) {
  visit(op->index);
  visit(op->predicate);
}
void IRVisitor::visit_node(const Ramp* op) {
  visit(op->base);
  visit(op->stride);
}
void IRVisitor::visit_node(const Broadcast* op) { visit(op->value); }
void IRVisitor::visit_node(const TensorRead* op) {
  for (const Expr& i : op->indices) visit(i);
}
void IRVisitor::visit_node(const Reduce* op) {
  visit(op->source);
  visit(op->condition);
}

void IRVisitor::visit_node(const For* op) {
  visit(op->min);
  visit(op->extent);
  visit(op->body);
}
void IRVisitor::visit_node(const Store* op) {
  visit(op->value);
  visit(op->index);
  visit(op->predicate);
}
void IRVisitor::visit_node(const Allocate* op) { visit(op->body); }
void IRVisitor::visit_node(const Block* op) {
  for (const Stmt& s : op->stmts) visit(s);
}
void IRVisitor::visit_node(const IfThenElse* op) {
  visit(op->condition);
  visit(op->then_case);
  visit(op->else_case);
}
void IRVisitor::visit_node(const LetStmt* op) {
  visit(op->value);
  visit(op->body);
}
void IRVisitor::visit_node(const Evaluate* op) { visit(op->value); }
void IRVisitor::visit_node(const Provide* op) {
  visit(op->value);
  for (const Expr& i : op->indices) visit(i);
}
void IRVisitor::visit_node(const Realize* op) {
  for (const Range& r : op->bounds) {
    visit(r.min);
    visit(r.extent);
  }
  visit(op->body);
}

}  // namespace ptb
