#include "schedule/scan_group.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

#include "ir/visitor.h"

namespace ptb {

bool reads_scan_state(const ScanOpNode& scan, const Expr& body) {
  bool found = false;
  for_each_expr(body, [&](const Expr& e) {
    const auto* r = e.as<TensorRead>();
    if (!r || found) return;
    for (const Tensor& s : scan.state_placeholder) found |= r->op == s.op();
  });
  return found;
}

Stage enclosing_scan(const Stage& stage) {
  std::unordered_set<const StageNode*> seen;  // compute_at cycles are refused later, not here
  for (Stage s = stage; s && s->attach_type == AttachType::kScope; s = s->attach_stage) {
    if (!seen.insert(s.get()).second) return nullptr;
    if (as_scan(s->attach_stage->origin_op)) return s->attach_stage;
  }
  return nullptr;
}

void attach_scan_groups(const Schedule& sch) {
  for (const Stage& scan_stage : sch->stages) {
    const ScanOpNode* scan = as_scan(scan_stage->origin_op);
    if (!scan) continue;
    // Producers come first in sch->stages: a stage is in the group when it reads a state
    // placeholder or a stage already found to be in it.
    std::unordered_set<const OperationNode*> group;
    for (const Tensor& s : scan->state_placeholder) group.insert(s.op().get());
    std::vector<Stage> members;
    for (const Stage& st : sch->stages) {
      if (st == scan_stage || st->is_placeholder() || st->op->kind != OpKind::kCompute) continue;
      if (as_scan(st->op)) continue;
      const auto inputs = st->op->input_tensors();
      if (std::any_of(inputs.begin(), inputs.end(),
                      [&](const Tensor& t) { return group.count(t.op().get()) > 0; })) {
        group.insert(st->origin_op.get());
        members.push_back(st);
      }
    }
    for (const Stage& st : members) {
      std::vector<Stage> consumers = sch->consumers(st);
      if (consumers.size() != 1 || st->is_output) continue;  // left at root: lowering says why
      const Stage& target = consumers[0];
      if (target != scan_stage && !group.count(target->origin_op.get())) continue;
      if (target->leaf_iter_vars.empty()) continue;
      st->attach_type = AttachType::kScope;
      st->attach_stage = target;
      st->attach_ivar = target->leaf_iter_vars.front();  // the scan's time loop, or a member's
    }
  }
}

}  // namespace ptb
