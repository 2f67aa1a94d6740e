#include "lower/unroll_loops.h"

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/substitute.h"

namespace ptb {

namespace {

// Unrolling more copies than this only bloats code; such loops stay loops.
constexpr int64_t kMaxUnroll = 64;

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
    if (!extent || *extent > kMaxUnroll) {
      return For::make(op->var, op->min, op->extent, ForKind::kSerial, body);
    }
    std::vector<Stmt> copies;
    for (int64_t i = 0; i < *extent; ++i) {
      VarMap vmap{{op->var.get(), idx_add(op->min, make_const(op->var.dtype(), i))}};
      copies.push_back(substitute(body, vmap));
    }
    return Block::make(std::move(copies));
  }
};

}  // namespace

Stmt unroll_loops(const Stmt& s) { return Unroller().mutate(s); }

}  // namespace ptb
