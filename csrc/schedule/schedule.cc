#include "schedule/schedule.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "schedule/scan_group.h"
#include "support/error.h"
#include "te/scan.h"

namespace ptb {

namespace {
const std::string& iv_name(const IterVar& iv) { return iv->var.as<Var>()->name; }
}  // namespace

std::string StageNode::describe() const { return "stage '" + op->name + "'"; }

void StageNode::check_owns(const IterVar& iv, const char* primitive) const {
  if (!iv) value_error(primitive, " on ", describe(), ": the axis is None");
  if (std::find(all_iter_vars.begin(), all_iter_vars.end(), iv) == all_iter_vars.end()) {
    value_error(primitive, " on ", describe(), ": axis '", iv_name(iv),
                "' is not an axis of this stage (is it an axis of another stage?)");
  }
}

size_t StageNode::leaf_position(const IterVar& iv, const char* primitive) const {
  check_owns(iv, primitive);
  auto it = std::find(leaf_iter_vars.begin(), leaf_iter_vars.end(), iv);
  if (it == leaf_iter_vars.end()) {
    value_error(primitive, " on ", describe(), ": axis '", iv_name(iv),
                "' was already split or fused; use the axes that split/fuse returned");
  }
  return static_cast<size_t>(it - leaf_iter_vars.begin());
}

ForKind StageNode::kind_of(const IterVar& iv) const {
  auto it = iter_kind.find(iv.get());
  return it == iter_kind.end() ? ForKind::kSerial : it->second;
}

Stage ScheduleNode::stage(const Operation& op) const {
  auto it = stage_of_op.find(op.get());
  if (it == stage_of_op.end()) {
    value_error("operation '", op->name, "' is not part of this schedule");
  }
  return it->second;
}

std::vector<Stage> ScheduleNode::consumers(const Stage& producer) const {
  std::vector<Stage> out;
  for (const Stage& s : stages) {
    for (const Tensor& t : s->op->input_tensors()) {
      if (t.op() == producer->origin_op) {
        out.push_back(s);
        break;
      }
    }
  }
  return out;
}

std::vector<Operation> topological_order(const std::vector<Operation>& outputs) {
  std::vector<Operation> order;
  std::unordered_set<const OperationNode*> visited;
  // Iterative post-order, so a deep pipeline cannot overflow the C++ stack.
  std::vector<std::pair<Operation, bool>> todo;
  for (auto it = outputs.rbegin(); it != outputs.rend(); ++it) todo.emplace_back(*it, false);
  while (!todo.empty()) {
    auto [op, expanded] = todo.back();
    todo.pop_back();
    if (expanded) {
      order.push_back(op);
      continue;
    }
    if (!visited.insert(op.get()).second) continue;
    todo.emplace_back(op, true);
    auto inputs = op->input_tensors();
    for (auto it = inputs.rbegin(); it != inputs.rend(); ++it) {
      if (!visited.count(it->op().get())) todo.emplace_back(it->op(), false);
    }
  }
  return order;
}

void ScheduleNode::insert_stage(size_t pos, const Stage& stage) {
  PTB_ICHECK(pos <= stages.size(), "stage position out of range");
  stages.insert(stages.begin() + static_cast<std::ptrdiff_t>(pos), stage);
  stage->schedule = weak_from_this();
  stage_of_op[stage->op.get()] = stage;
}

void ScheduleNode::replace_op(const Stage& stage, const Operation& op) {
  if (stage->op != stage->origin_op) stage_of_op.erase(stage->op.get());
  stage->op = op;
  stage_of_op[op.get()] = stage;
}

size_t ScheduleNode::position(const Stage& stage) const {
  auto it = std::find(stages.begin(), stages.end(), stage);
  PTB_ICHECK(it != stages.end(), "stage of ", stage->op->name, " is not in its schedule");
  return static_cast<size_t>(it - stages.begin());
}

Stage make_stage(const Operation& op) {
  auto stage = std::make_shared<StageNode>();
  stage->op = op;
  stage->origin_op = op;
  if (const auto* c = dynamic_cast<const ComputeOpNode*>(op.get())) {
    stage->root_iter_vars = c->axis;
    stage->root_iter_vars.insert(stage->root_iter_vars.end(), c->reduce_axis.begin(),
                                 c->reduce_axis.end());
  }
  stage->all_iter_vars = stage->root_iter_vars;
  stage->leaf_iter_vars = stage->root_iter_vars;
  return stage;
}

Schedule create_schedule(const std::vector<Operation>& outputs) {
  if (outputs.empty()) value_error("create_schedule() needs at least one operation");
  auto sch = std::make_shared<ScheduleNode>();
  sch->outputs = outputs;
  for (const Operation& op : topological_order(outputs)) {
    Stage stage = make_stage(op);
    stage->is_output = std::find(outputs.begin(), outputs.end(), op) != outputs.end();
    stage->schedule = sch;
    sch->stage_of_op[op.get()] = stage;
    sch->stages.push_back(stage);
  }
  // s[update] of a scan schedules the scan, whose loops are the update's axes.
  for (const Stage& st : sch->stages) {
    if (const ScanOpNode* scan = as_scan(st->op)) {
      for (const Operation& u : scan->update_ops) sch->stage_of_op.emplace(u.get(), st);
    }
  }
  attach_scan_groups(sch);  // a scan's intermediate stages run inside its time loop, as in TVM
  return sch;
}

}  // namespace ptb
