#include "lower/unroll_loops.h"

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/simplify.h"
#include "ir/substitute.h"

namespace ptb {

namespace {

// Keeps only the taken side of each `if_then_else` whose condition a copy's constant makes
// constant: Winograd's transforms choose each tile point's sum from a tree on the point's
// loop indices (autoschedule/rule_winograd.cc), and each unrolled copy then holds one sum
// instead of the whole tree for the passes after this one to rewrite.
class ConstantBranches : public IRMutator {
 protected:
  using IRMutator::mutate_node;
  Expr mutate_node(const Call* op, const Expr& self) override {
    if (op->op == Intrinsic::kIfThenElse) {
      Expr c = simplify(op->args[0]);
      if (auto v = as_const_int(c)) return mutate(op->args[*v != 0 ? 1 : 2]);
    }
    return IRMutator::mutate_node(op, self);
  }
};

class Unroller : public IRMutator {
 protected:
  using IRMutator::mutate_node;
  Stmt mutate_node(const For* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    if (op->for_kind != ForKind::kUnrolled) {
      return body.same_as(op->body) ? self
                                    : For::make(op->var, op->min, op->extent, op->for_kind, body);
    }
    auto extent = as_const_int(op->extent);
    if (!extent || *extent > kMaxUnrollCopies) {
      return For::make(op->var, op->min, op->extent, ForKind::kSerial, body);
    }
    std::vector<Stmt> copies;
    for (int64_t i = 0; i < *extent; ++i) {
      VarMap vmap{{op->var.get(), idx_add(op->min, make_const(op->var.dtype(), i))}};
      copies.push_back(ConstantBranches().mutate(substitute(body, vmap)));
    }
    return Block::make(std::move(copies));
  }
};

}  // namespace

Stmt unroll_loops(const Stmt& s) { return Unroller().mutate(s); }

}  // namespace ptb
