#include "autoschedule/auto_schedule.h"

#include <map>

#include "autoschedule/analysis.h"
#include "autoschedule/context.h"
#include "autoschedule/rules.h"
#include "ir/op.h"
#include "support/error.h"

namespace ptb::autoschedule {

namespace {

void check_unscheduled(const Stage& st) {
  bool fresh = st->relations.empty() && st->attach_type == AttachType::kRoot &&
               st->iter_kind.empty() && st->op == st->origin_op;
  if (!fresh) {
    value_error("auto_schedule: ", st->describe(),
                " is already scheduled (split, fused, annotated, attached or rewritten); "
                "auto_schedule takes a fresh schedule from create_schedule or the output tensors");
  }
}

// Stage keys: operation names, repeated names numbered "#2", "#3"... in producer-first order.
void name_stages(Context& ctx) {
  std::map<std::string, int> seen;
  for (const Stage& st : ctx.sch->stages) {
    int n = ++seen[st->op->name];
    ctx.keys[st.get()] = n == 1 ? st->op->name : st->op->name + "#" + std::to_string(n);
  }
}

}  // namespace

Result auto_schedule(const Schedule& sch, const Target& target, const Config* given) {
  for (const Stage& st : sch->stages) check_unscheduled(st);
  Decisions decisions(given);
  Context ctx;
  ctx.sch = sch;
  ctx.unit = vector_unit(target);
  ctx.decisions = &decisions;
  name_stages(ctx);

  for (const Stage& st : sch->stages) relax_max_nan(ctx, st);
  for (const Stage& st : std::vector<Stage>(sch->stages)) one_pass_moments(ctx, st);
  // Which reductions become micro-kernels decides what must stay stored: their operands.
  std::vector<Stage> snapshot = sch->stages;
  std::map<const StageNode*, TiledPlan> plans;
  std::unordered_set<const StageNode*> keep;
  for (const Stage& st : snapshot) {
    auto plan = plan_tiled(ctx, st);
    if (!plan) continue;
    plans[st.get()] = *plan;
    for (const Stage& producer : sch->stages) {
      for (const Tensor& t : st->op->input_tensors()) {
        if (t.op() == producer->origin_op) keep.insert(producer.get());
      }
    }
  }
  // Winograd's data transform (topi/nn/winograd.py) sums 4 to 16 of its input's elements into
  // each of its own, and reads every element up to 36 times: what it reads stays stored, its
  // padded input and the stage that pad reads (the epilogue of the convolution before it,
  // whose inverse transform would otherwise be recomputed in every sum; with constant shapes
  // the pad then writes only its border, as below).
  auto keep_producers = [&](const Stage& st) {
    std::vector<Stage> kept;
    for (const Tensor& t : st->op->input_tensors()) {
      for (const Stage& producer : sch->stages) {
        if (t.op() == producer->origin_op && classify(producer) == StageKind::kInjective) {
          keep.insert(producer.get());
          kept.push_back(producer);
        }
      }
    }
    return kept;
  };
  for (const Stage& st : snapshot) {
    const ComputeOpNode* c = as_compute(st->op);
    if (c == nullptr || c->tag != "winograd_data_transform") continue;
    for (const Stage& pad : keep_producers(st)) {
      const ComputeOpNode* pc = as_compute(pad->op);
      if (pc != nullptr && pc->tag == "injective,pad") keep_producers(pad);
    }
  }
  // A stored pad's input stays stored as well (the epilogue of the convolution before it, say):
  // storage flattening then keeps it in the pad's interior, and the pad writes only the border
  // (lower/storage_flatten.cc). Inlined into the pad, it was a copy of the whole tensor. Only
  // constant shapes: flattening does not embed a tensor of symbolic size.
  auto constant_shape = [](const Operation& op) {
    for (const Expr& d : op->output_shape(0)) {
      if (!as_const_int(d)) return false;
    }
    return true;
  };
  for (const Stage& pad : snapshot) {
    const ComputeOpNode* pc = as_compute(pad->op);
    if (!keep.count(pad.get()) || pc == nullptr || pc->tag != "injective,pad") continue;
    std::vector<Tensor> inputs = pad->op->input_tensors();
    for (const Stage& producer : sch->stages) {
      if (inputs.size() == 1 && inputs[0].op() == producer->origin_op &&
          classify(producer) == StageKind::kInjective && constant_shape(producer->op) &&
          constant_shape(pad->op)) {
        keep.insert(producer.get());
      }
    }
  }
  inline_injective(ctx, keep);

  // Elementwise outputs of row statistics (softmax, norms) first, consumers before producers:
  // their reductions then go inside their loops.
  std::unordered_set<const StageNode*> tiled;
  for (const auto& entry : plans) tiled.insert(entry.first);
  for (auto it = snapshot.rbegin(); it != snapshot.rend(); ++it) {
    if ((*it)->attach_type == AttachType::kRoot && !ctx.settled.count(it->get())) {
      if (!schedule_row_group(ctx, *it, tiled)) schedule_reduction_rows(ctx, *it, tiled);
    }
  }

  for (const Stage& st : snapshot) {
    if (ctx.settled.count(st.get()) || st->attach_type != AttachType::kRoot) continue;
    switch (classify(st)) {
      case StageKind::kPlaceholder:
        break;
      case StageKind::kInjective:
        if (!schedule_winograd_transform(ctx, st)) schedule_injective(ctx, st);
        break;
      case StageKind::kReduction: {
        auto it = plans.find(st.get());
        if (it != plans.end()) {
          schedule_tiled(ctx, st, it->second);
        } else {
          schedule_reduction(ctx, st);
        }
        break;
      }
      case StageKind::kOther:
        if (!schedule_tuple_reduction(ctx, st)) ctx.rule(st, "default");
        break;
    }
  }
  decisions.check_all_used();
  return {decisions.chosen(), decisions.space()};
}

}  // namespace ptb::autoschedule
