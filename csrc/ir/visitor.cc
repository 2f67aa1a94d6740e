#include "ir/visitor.h"

#include "support/error.h"
#include "support/stack.h"

#include <iterator>

namespace ptb {

namespace {
bool is_leaf(const Expr& e) {
  ExprKind k = e->kind;
  return k == ExprKind::kIntImm || k == ExprKind::kFloatImm || k == ExprKind::kVar;
}
}  // namespace

void IRVisitor::visit(const Expr& e) {
  if (!e.defined()) return;
  if (visit_shared_once_ && !is_leaf(e) && !visited_.insert(e.get()).second) return;
  check_stack();
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
  check_stack();
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
void IRVisitor::visit_node(const CallPacked* op) {
  for (const PackedCallArg& a : op->args) {
    if (a.scalar.defined()) visit(a.scalar);
  }
}
void IRVisitor::visit_node(const Realize* op) {
  for (const Range& r : op->bounds) {
    visit(r.min);
    visit(r.extent);
  }
  visit(op->body);
}

bool uses_var(const Expr& e, const Expr& var) {
  bool found = false;
  for_each_expr(e, [&](const Expr& sub) {
    if (!found && sub.get() == var.get()) found = true;
  });
  return found;
}

}  // namespace ptb

namespace ptb::detail {

void push_expr_children(const Expr& e, std::vector<const Expr*>* stack) {
  auto push = [&](std::initializer_list<const Expr*> children) {
    for (auto it = std::rbegin(children); it != std::rend(children); ++it) stack->push_back(*it);
  };
  auto push_all = [&](const std::vector<Expr>& children) {
    for (auto it = children.rbegin(); it != children.rend(); ++it) stack->push_back(&*it);
  };
  switch (e->kind) {
    case ExprKind::kIntImm:
    case ExprKind::kFloatImm:
    case ExprKind::kVar:
      return;
    case ExprKind::kCast:
      return push({&e.as<Cast>()->value});
#define PTB_PUSH_BINARY(T) \
  case ExprKind::k##T:     \
    return push({&e.as<T>()->a, &e.as<T>()->b});
      PTB_PUSH_BINARY(Add)
      PTB_PUSH_BINARY(Sub)
      PTB_PUSH_BINARY(Mul)
      PTB_PUSH_BINARY(Div)
      PTB_PUSH_BINARY(Mod)
      PTB_PUSH_BINARY(FloorDiv)
      PTB_PUSH_BINARY(FloorMod)
      PTB_PUSH_BINARY(Min)
      PTB_PUSH_BINARY(Max)
      PTB_PUSH_BINARY(EQ)
      PTB_PUSH_BINARY(NE)
      PTB_PUSH_BINARY(LT)
      PTB_PUSH_BINARY(LE)
      PTB_PUSH_BINARY(GT)
      PTB_PUSH_BINARY(GE)
      PTB_PUSH_BINARY(And)
      PTB_PUSH_BINARY(Or)
#undef PTB_PUSH_BINARY
    case ExprKind::kNot:
      return push({&e.as<Not>()->a});
    case ExprKind::kSelect: {
      const auto* op = e.as<Select>();
      return push({&op->condition, &op->true_value, &op->false_value});
    }
    case ExprKind::kCall:
      return push_all(e.as<Call>()->args);
    case ExprKind::kLet: {
      const auto* op = e.as<Let>();
      return push({&op->var, &op->value, &op->body});
    }
    case ExprKind::kLoad:
      return push({&e.as<Load>()->index, &e.as<Load>()->predicate});
    case ExprKind::kRamp:
      return push({&e.as<Ramp>()->base, &e.as<Ramp>()->stride});
    case ExprKind::kBroadcast:
      return push({&e.as<Broadcast>()->value});
    case ExprKind::kTensorRead:
      return push_all(e.as<TensorRead>()->indices);
    case ExprKind::kReduce:
      return push({&e.as<Reduce>()->source, &e.as<Reduce>()->condition});
  }
}

void stmt_children(const Stmt& s, std::vector<const Expr*>* exprs,
                   std::vector<const Stmt*>* stmts) {
  if (!s.defined()) return;
  auto sub = [&](std::initializer_list<const Stmt*> children) {
    for (auto it = std::rbegin(children); it != std::rend(children); ++it) stmts->push_back(*it);
  };
  switch (s->kind) {
    case StmtKind::kFor: {
      const auto* op = s.as<For>();
      exprs->insert(exprs->end(), {&op->min, &op->extent});
      return sub({&op->body});
    }
    case StmtKind::kStore: {
      const auto* op = s.as<Store>();
      exprs->insert(exprs->end(), {&op->value, &op->index, &op->predicate});
      return;
    }
    case StmtKind::kAllocate:
      return sub({&s.as<Allocate>()->body});
    case StmtKind::kBlock: {
      const auto& children = s.as<Block>()->stmts;
      for (auto it = children.rbegin(); it != children.rend(); ++it) stmts->push_back(&*it);
      return;
    }
    case StmtKind::kIfThenElse: {
      const auto* op = s.as<IfThenElse>();
      exprs->push_back(&op->condition);
      return sub({&op->then_case, &op->else_case});
    }
    case StmtKind::kLetStmt: {
      const auto* op = s.as<LetStmt>();
      exprs->push_back(&op->value);
      return sub({&op->body});
    }
    case StmtKind::kEvaluate:
      exprs->push_back(&s.as<Evaluate>()->value);
      return;
    case StmtKind::kProvide: {
      const auto* op = s.as<Provide>();
      exprs->push_back(&op->value);
      for (const Expr& i : op->indices) exprs->push_back(&i);
      return;
    }
    case StmtKind::kRealize: {
      const auto* op = s.as<Realize>();
      for (const Range& r : op->bounds) exprs->insert(exprs->end(), {&r.min, &r.extent});
      return sub({&op->body});
    }
  }
}

}  // namespace ptb::detail
