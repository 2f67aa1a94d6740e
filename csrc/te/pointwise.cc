#include "te/pointwise.h"

#include <unordered_set>

#include "ir/visitor.h"
#include "te/scan.h"

namespace ptb {

namespace {

bool same_dim(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  const auto* x = a.as<IntImm>();
  const auto* y = b.as<IntImm>();
  return x != nullptr && y != nullptr && x->value == y->value;
}

bool same_shape(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!same_dim(a[i], b[i])) return false;
  }
  return true;
}

// Walks one compute body: every tensor it reads must be read at exactly the compute's own axes,
// in order, and the axes may appear nowhere else. The tensors read are collected for the caller
// to check in turn.
class BodyCheck : public IRVisitor {
 public:
  explicit BodyCheck(const std::vector<IterVar>& axis) {
    for (const IterVar& iv : axis) axes_.push_back(iv->var);
  }
  bool ok = true;
  std::vector<Operation> reads;

 protected:
  using IRVisitor::visit_node;
  void visit_node(const Var* op) override {
    for (const Expr& a : axes_) {
      if (a.get() == op) ok = false;  // the index used as a value (iota, a mask of positions)
    }
  }
  void visit_node(const TensorRead* op) override {
    if (op->indices.size() != axes_.size()) {
      ok = false;
      return;
    }
    for (size_t i = 0; i < axes_.size(); ++i) {
      if (!op->indices[i].same_as(axes_[i])) ok = false;
    }
    reads.push_back(op->op);  // its indices are the axes themselves: nothing more to visit
  }
  void visit_node(const Reduce*) override { ok = false; }
  void visit_node(const Load*) override { ok = false; }
  void visit_node(const Ramp*) override { ok = false; }
  void visit_node(const Broadcast*) override { ok = false; }
  void visit_node(const Call* op) override {
    if (op->op == Intrinsic::kPrefetch) ok = false;
    IRVisitor::visit_node(op);
  }

 private:
  std::vector<Expr> axes_;
};

}  // namespace

bool is_pointwise(const std::vector<Tensor>& args) {
  if (args.empty()) return false;
  const std::vector<Expr>& shape = args[0].shape();
  std::vector<Operation> todo;
  for (const Tensor& t : args) {
    if (!same_shape(t.shape(), shape)) return false;
    todo.push_back(t.op());
  }
  std::unordered_set<const OperationNode*> seen;
  while (!todo.empty()) {
    Operation op = todo.back();
    todo.pop_back();
    if (!seen.insert(op.get()).second) continue;
    if (op->kind == OpKind::kPlaceholder) {
      if (!same_shape(op->output_shape(0), shape)) return false;
      continue;
    }
    const auto* compute = dynamic_cast<const ComputeOpNode*>(op.get());
    if (compute == nullptr || as_scan(op) != nullptr || compute->is_reduction()) return false;
    if (!same_shape(compute->shape, shape)) return false;
    for (const IterVar& iv : compute->axis) {
      const auto* lo = iv->dom.min.as<IntImm>();
      if (lo == nullptr || lo->value != 0) return false;
    }
    BodyCheck check(compute->axis);
    for (const Expr& e : compute->body) check.visit(e);
    if (!check.ok) return false;
    todo.insert(todo.end(), check.reads.begin(), check.reads.end());
  }
  return true;
}

}  // namespace ptb
