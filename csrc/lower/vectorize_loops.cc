#include "lower/vectorize_loops.h"

#include "ir/mutator.h"

namespace ptb {

namespace {

// For now every vectorized loop runs serially (correct, not yet fast); the vectorizer replaces
// this with Ramp/Broadcast rewriting.
class SerializeVectorLoops : public IRMutator {
 protected:
  using IRMutator::mutate_node;
  Stmt mutate_node(const For* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    if (op->for_kind != ForKind::kVectorized && body.same_as(op->body)) return self;
    ForKind kind = op->for_kind == ForKind::kVectorized ? ForKind::kSerial : op->for_kind;
    return For::make(op->var, op->min, op->extent, kind, body);
  }
};

}  // namespace

Stmt vectorize_loops(const Stmt& s) { return SerializeVectorLoops().mutate(s); }

}  // namespace ptb
