#include "lower/serialize_packed_calls.h"

#include "ir/mutator.h"
#include "ir/visitor.h"

namespace ptb {

namespace {

class FindsPackedCall : public IRVisitor {
 public:
  bool found = false;
  using IRVisitor::visit;

 protected:
  void visit_node(const CallPacked*) override { found = true; }
};

bool contains_packed_call(const Stmt& s) {
  FindsPackedCall finder;
  finder.visit(s);
  return finder.found;
}

class Serializer : public IRMutator {
 protected:
  using IRMutator::mutate_node;
  Stmt mutate_node(const For* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    bool concurrent = op->for_kind == ForKind::kParallel || op->for_kind == ForKind::kVectorized;
    if (concurrent && contains_packed_call(body)) {
      return For::make(op->var, op->min, op->extent, ForKind::kSerial, body);
    }
    return body.same_as(op->body) ? self
                                  : For::make(op->var, op->min, op->extent, op->for_kind, body);
  }
};

}  // namespace

Stmt serialize_packed_calls(const Stmt& s) { return Serializer().mutate(s); }

}  // namespace ptb
