#include "schedule/stage_bodies.h"

#include <algorithm>

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/substitute.h"
#include "ir/visitor.h"
#include "schedule/scan_group.h"
#include "support/error.h"
#include "te/scan.h"

namespace ptb {

namespace {

class InlineReads : public IRMutator {
 public:
  explicit InlineReads(const ScheduleNode& sch) : sch_(sch) {}

 protected:
  using IRMutator::mutate_node;
  Expr mutate_node(const TensorRead* op, const Expr& self) override {
    Expr read = IRMutator::mutate_node(op, self);
    const auto* r = read.as<TensorRead>();
    auto it = sch_.stage_of_op.find(r->op.get());
    if (it == sch_.stage_of_op.end() || it->second->attach_type != AttachType::kInline) {
      return read;
    }
    // The stage's current op (it may have been rewritten by cache_read) defines the values.
    const auto* compute = static_cast<const ComputeOpNode*>(it->second->op.get());
    VarMap vmap;
    for (size_t d = 0; d < compute->axis.size(); ++d) {
      // An index read from an int64 tensor (a gather) meets the axis variable's own dtype in
      // the body's arithmetic, whose operands must agree.
      const Expr& axis_var = compute->axis[d]->var;
      vmap[axis_var.get()] = cast(axis_var.dtype(), r->indices[d]);
    }
    return mutate(substitute(compute->body[r->value_index], vmap));
  }

 private:
  const ScheduleNode& sch_;
};

}  // namespace

StageBodies inline_bodies(const Schedule& sch) {
  StageBodies out;
  InlineReads inliner(*sch);
  std::vector<Stage> scans;
  for (const Stage& st : sch->stages) {
    if (as_scan(st->origin_op)) scans.push_back(st);
  }
  for (const Stage& st : sch->stages) {
    if (st->is_placeholder() || st->attach_type == AttachType::kInline) continue;
    if (st->op->kind == OpKind::kExtern) continue;  // a call, not a body (te/extern.h)
    const auto* compute = static_cast<const ComputeOpNode*>(st->op.get());
    std::vector<Expr> bodies;
    for (const Expr& b : compute->body) bodies.push_back(inliner.mutate(b));
    // A scan reads its own earlier time steps through its state placeholders.
    if (const ScanOpNode* scan = as_scan(st->origin_op)) {
      for (Expr& b : bodies) b = resolve_scan_state(*scan, st->origin_op, b);
    } else {
      // A stage of a scan's group reads the scan's earlier time steps through the state too,
      // which only exist inside the scan's time loop (scan_group.h).
      for (const Stage& scan_stage : scans) {
        const ScanOpNode& scan = *as_scan(scan_stage->origin_op);
        bool reads = std::any_of(bodies.begin(), bodies.end(),
                                 [&](const Expr& b) { return reads_scan_state(scan, b); });
        if (!reads) continue;
        if (enclosing_scan(st) != scan_stage) {
          value_error(st->describe(), " reads the state of scan '", scan_stage->op->name,
                      "', so it must be computed inside the scan's time loop: inline it, or ",
                      "compute_at it in the scan (s[update]) or in a stage computed there (the ",
                      "default schedule does so when it has a single consumer)");
        }
        for (Expr& b : bodies) b = resolve_scan_state(scan, scan_stage->origin_op, b);
      }
    }
    out[st.get()] = std::move(bodies);
  }
  return out;
}

std::vector<Stage> effective_consumers(const Schedule& sch, const StageBodies& bodies,
                                       const Stage& producer) {
  std::vector<Stage> out;
  for (const Stage& st : sch->stages) {
    auto it = bodies.find(st.get());
    if (it == bodies.end()) {
      // An extern call reads its input tensors whole.
      if (st->op->kind != OpKind::kExtern || st->attach_type == AttachType::kInline) continue;
      const auto inputs = st->op->input_tensors();
      if (std::any_of(inputs.begin(), inputs.end(),
                      [&](const Tensor& t) { return t.op() == producer->origin_op; })) {
        out.push_back(st);
      }
      continue;
    }
    // Only a stage whose inputs lead to the producer (through inlined stages) can read it: a
    // walk over operations, where the bodies can be large (Winograd's transforms: 600 reads).
    if (!reads_through_inline(sch, st, producer)) continue;
    bool reads = false;
    for (const Expr& b : it->second) {
      for_each_expr(b, [&](const Expr& e) {
        if (const auto* r = e.as<TensorRead>(); r && r->op == producer->origin_op) reads = true;
      });
    }
    if (reads) out.push_back(st);
  }
  return out;
}

bool reads_through_inline(const Schedule& sch, const Stage& consumer, const Stage& producer) {
  std::vector<Stage> todo{consumer};
  std::vector<const StageNode*> seen;
  while (!todo.empty()) {
    Stage st = todo.back();
    todo.pop_back();
    if (std::find(seen.begin(), seen.end(), st.get()) != seen.end()) continue;
    seen.push_back(st.get());
    for (const Tensor& t : st->op->input_tensors()) {
      if (t.op() == producer->origin_op) return true;
      auto it = sch->stage_of_op.find(t.op().get());
      if (it != sch->stage_of_op.end() && it->second->attach_type == AttachType::kInline) {
        todo.push_back(it->second);
      }
    }
  }
  return false;
}

}  // namespace ptb
