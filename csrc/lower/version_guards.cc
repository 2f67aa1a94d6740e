#include "lower/version_guards.h"

#include <unordered_set>
#include <vector>

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/visitor.h"
#include "schedule/interval.h"

namespace ptb {

namespace {

// Versions per function: each doubles the code of the loop body it versions.
constexpr int kMaxVersions = 16;
// Guards one version tests at most.
constexpr size_t kMaxGuards = 8;

// The variables a statement binds: its loops' and lets' variables.
struct BoundVars : IRVisitor {
  std::unordered_set<const ExprNode*> vars;
  using IRVisitor::visit;
  void visit(const Expr&) override {}

 protected:
  void visit_node(const For* op) override {
    vars.insert(op->var.get());
    IRVisitor::visit_node(op);
  }
  void visit_node(const LetStmt* op) override {
    vars.insert(op->var.get());
    IRVisitor::visit_node(op);
  }
};

// Whether a condition reads only variables bound outside the body and no memory.
bool invariant(const Expr& cond, const std::unordered_set<const ExprNode*>& bound) {
  bool ok = cond.dtype().is_scalar();
  for_each_expr(cond, [&](const Expr& e) {
    if (!ok) return;
    if (e.as<Load>() || e.as<Call>() || e.as<Let>()) ok = false;
    if (e.as<Var>() && bound.count(e.get())) ok = false;
  });
  return ok;
}

// The guards inside the inner loops of a body (at loop depth >= 1) that are invariant in it.
class InvariantGuards : public IRVisitor {
 public:
  explicit InvariantGuards(const std::unordered_set<const ExprNode*>& bound) : bound_(bound) {}
  std::vector<Expr> guards;
  using IRVisitor::visit;
  void visit(const Expr&) override {}

 protected:
  void visit_node(const For* op) override {
    ++depth_;
    IRVisitor::visit_node(op);
    --depth_;
  }
  void visit_node(const IfThenElse* op) override {
    if (depth_ > 0 && guards.size() < kMaxGuards && invariant(op->condition, bound_)) {
      bool seen = false;
      for (const Expr& g : guards) seen = seen || structurally_equal(g, op->condition);
      if (!seen) guards.push_back(op->condition);
    }
    IRVisitor::visit_node(op);
  }

 private:
  const std::unordered_set<const ExprNode*>& bound_;
  int depth_ = 0;
};

// The body with the given guards taken as true: their branches replaced by the then case.
class TakeGuards : public IRMutator {
 public:
  explicit TakeGuards(const std::vector<Expr>& guards) : guards_(guards) {}

 protected:
  using IRMutator::mutate_node;
  Stmt mutate_node(const IfThenElse* op, const Stmt& self) override {
    for (const Expr& g : guards_) {
      if (structurally_equal(g, op->condition)) return mutate(op->then_case);
    }
    return IRMutator::mutate_node(op, self);
  }

 private:
  const std::vector<Expr>& guards_;
};

class VersionInvariantGuards : public IRMutator {
 protected:
  using IRMutator::mutate_node;

  Stmt mutate_node(const For* op, const Stmt& self) override {
    if (versions_ >= kMaxVersions) return IRMutator::mutate_node(op, self);
    BoundVars bound;
    bound.visit(op->body);
    InvariantGuards found(bound.vars);
    found.visit(op->body);
    if (found.guards.empty()) return IRMutator::mutate_node(op, self);
    ++versions_;
    Stmt taken = mutate(TakeGuards(found.guards).mutate(op->body));
    Stmt body = IfThenElse::make(all_of(found.guards), taken, op->body);
    return For::make(op->var, op->min, op->extent, op->for_kind, body);
  }

 private:
  int versions_ = 0;
};

}  // namespace

Stmt version_invariant_guards(const Stmt& s) { return VersionInvariantGuards().mutate(s); }

}  // namespace ptb
