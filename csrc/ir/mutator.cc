#include "ir/mutator.h"

#include "support/stack.h"

namespace ptb {

Expr IRMutator::mutate(const Expr& e) {
  if (!e.defined()) return e;
  ExprKind k = e->kind;
  if (k == ExprKind::kIntImm || k == ExprKind::kFloatImm || k == ExprKind::kVar) {
    return dispatch(e);
  }
  auto it = memo_.find(e.get());
  if (it != memo_.end()) return it->second.result;
  check_stack();
  Expr r = dispatch(e);
  memo_[e.get()] = MemoEntry{e, r};
  return r;
}

Expr IRMutator::dispatch(const Expr& e) {
  switch (e->kind) {
#define PTB_DISPATCH(T) \
  case ExprKind::k##T:  \
    return mutate_node(static_cast<const T*>(e.get()), e);
    PTB_EXPR_NODES(PTB_DISPATCH)
#undef PTB_DISPATCH
  }
  return e;
}

Stmt IRMutator::mutate(const Stmt& s) {
  if (!s.defined()) return s;
  check_stack();
  MemoScope scope(this);
  switch (s->kind) {
#define PTB_DISPATCH(T) \
  case StmtKind::k##T:  \
    return mutate_node(static_cast<const T*>(s.get()), s);
    PTB_STMT_NODES(PTB_DISPATCH)
#undef PTB_DISPATCH
  }
  return s;
}

std::vector<Expr> IRMutator::mutate_all(const std::vector<Expr>& exprs, bool* changed) {
  std::vector<Expr> out;
  out.reserve(exprs.size());
  for (const Expr& e : exprs) {
    out.push_back(mutate(e));
    if (!out.back().same_as(e)) *changed = true;
  }
  return out;
}

Expr IRMutator::mutate_node(const IntImm*, const Expr& self) { return self; }
Expr IRMutator::mutate_node(const FloatImm*, const Expr& self) { return self; }
Expr IRMutator::mutate_node(const Var*, const Expr& self) { return self; }
Expr IRMutator::mutate_node(const Cast* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : Cast::make(op->dtype, v);
}
#define PTB_MUTATE_BINARY(T)                                            \
  Expr IRMutator::mutate_node(const T* op, const Expr& self) {          \
    Expr a = mutate(op->a), b = mutate(op->b);                          \
    return a.same_as(op->a) && b.same_as(op->b) ? self : T::make(a, b); \
  }
PTB_MUTATE_BINARY(Add)
PTB_MUTATE_BINARY(Sub)
PTB_MUTATE_BINARY(Mul)
PTB_MUTATE_BINARY(Div)
PTB_MUTATE_BINARY(Mod)
PTB_MUTATE_BINARY(FloorDiv)
PTB_MUTATE_BINARY(FloorMod)
PTB_MUTATE_BINARY(Min)
PTB_MUTATE_BINARY(Max)
PTB_MUTATE_BINARY(EQ)
PTB_MUTATE_BINARY(NE)
PTB_MUTATE_BINARY(LT)
PTB_MUTATE_BINARY(LE)
PTB_MUTATE_BINARY(GT)
PTB_MUTATE_BINARY(GE)
PTB_MUTATE_BINARY(And)
PTB_MUTATE_BINARY(Or)
#undef PTB_MUTATE_BINARY
Expr IRMutator::mutate_node(const Not* op, const Expr& self) {
  Expr a = mutate(op->a);
  return a.same_as(op->a) ? self : Not::make(a);
}
Expr IRMutator::mutate_node(const Select* op, const Expr& self) {
  Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) {
    return self;
  }
  return Select::make(c, t, f);
}
Expr IRMutator::mutate_node(const Call* op, const Expr& self) {
  bool changed = false;
  std::vector<Expr> args = mutate_all(op->args, &changed);
  return changed ? Call::make(op->op, std::move(args)) : self;
}
Expr IRMutator::mutate_node(const Let* op, const Expr& self) {
  Expr v = mutate(op->value), b = mutate(op->body);
  return v.same_as(op->value) && b.same_as(op->body) ? self : Let::make(op->var, v, b);
}
Expr IRMutator::mutate_node(const Load* op, const Expr& self) {
  Expr i = mutate(op->index), p = mutate(op->predicate);
  return i.same_as(op->index) && p.same_as(op->predicate) ? self : Load::make(op->buffer, i, p);
}
Expr IRMutator::mutate_node(const Ramp* op, const Expr& self) {
  Expr b = mutate(op->base), s = mutate(op->stride);
  return b.same_as(op->base) && s.same_as(op->stride) ? self : Ramp::make(b, s, op->lanes);
}
Expr IRMutator::mutate_node(const Broadcast* op, const Expr& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : Broadcast::make(v, op->lanes);
}
Expr IRMutator::mutate_node(const TensorRead* op, const Expr& self) {
  bool changed = false;
  std::vector<Expr> idx = mutate_all(op->indices, &changed);
  return changed ? TensorRead::make(op->op, op->value_index, std::move(idx)) : self;
}
Expr IRMutator::mutate_node(const Reduce* op, const Expr& self) {
  Expr s = mutate(op->source), c = mutate(op->condition);
  if (s.same_as(op->source) && c.same_as(op->condition)) return self;
  return Reduce::make(op->combiner, s, op->axis, c, op->reducer, op->value_index);
}

Stmt IRMutator::mutate_node(const For* op, const Stmt& self) {
  Expr m = mutate(op->min), e = mutate(op->extent);
  Stmt b = mutate(op->body);
  if (m.same_as(op->min) && e.same_as(op->extent) && b.same_as(op->body)) return self;
  return For::make(op->var, m, e, op->for_kind, b);
}
Stmt IRMutator::mutate_node(const Store* op, const Stmt& self) {
  Expr v = mutate(op->value), i = mutate(op->index), p = mutate(op->predicate);
  if (v.same_as(op->value) && i.same_as(op->index) && p.same_as(op->predicate)) return self;
  return Store::make(op->buffer, v, i, p);
}
Stmt IRMutator::mutate_node(const Allocate* op, const Stmt& self) {
  Stmt b = mutate(op->body);
  return b.same_as(op->body) ? self : Allocate::make(op->buffer, b);
}
Stmt IRMutator::mutate_node(const Block* op, const Stmt& self) {
  std::vector<Stmt> out;
  bool changed = false;
  for (const Stmt& s : op->stmts) {
    out.push_back(mutate(s));
    if (!out.back().same_as(s)) changed = true;
  }
  return changed ? Block::make(std::move(out)) : self;
}
Stmt IRMutator::mutate_node(const IfThenElse* op, const Stmt& self) {
  Expr c = mutate(op->condition);
  Stmt t = mutate(op->then_case), e = mutate(op->else_case);
  if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
  return IfThenElse::make(c, t, e);
}
Stmt IRMutator::mutate_node(const LetStmt* op, const Stmt& self) {
  Expr v = mutate(op->value);
  Stmt b = mutate(op->body);
  return v.same_as(op->value) && b.same_as(op->body) ? self : LetStmt::make(op->var, v, b);
}
Stmt IRMutator::mutate_node(const Evaluate* op, const Stmt& self) {
  Expr v = mutate(op->value);
  return v.same_as(op->value) ? self : Evaluate::make(v);
}
Stmt IRMutator::mutate_node(const Provide* op, const Stmt& self) {
  bool changed = false;
  Expr v = mutate(op->value);
  std::vector<Expr> idx = mutate_all(op->indices, &changed);
  if (!changed && v.same_as(op->value)) return self;
  return Provide::make(op->op, op->value_index, v, std::move(idx));
}
Stmt IRMutator::mutate_node(const CallPacked* op, const Stmt& self) {
  bool changed = false;
  std::vector<PackedCallArg> args = op->args;
  for (PackedCallArg& a : args) {
    if (!a.scalar.defined()) continue;
    Expr s = mutate(a.scalar);
    changed = changed || !s.same_as(a.scalar);
    a.scalar = s;
  }
  return changed ? CallPacked::make(op->name, std::move(args)) : self;
}
Stmt IRMutator::mutate_node(const Realize* op, const Stmt& self) {
  bool changed = false;
  std::vector<Range> bounds;
  for (const Range& r : op->bounds) {
    Range nr{mutate(r.min), mutate(r.extent)};
    if (!nr.min.same_as(r.min) || !nr.extent.same_as(r.extent)) changed = true;
    bounds.push_back(nr);
  }
  Stmt b = mutate(op->body);
  if (!changed && b.same_as(op->body)) return self;
  return Realize::make(op->op, std::move(bounds), b);
}

}  // namespace ptb
