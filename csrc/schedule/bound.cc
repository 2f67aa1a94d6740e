#include "schedule/bound.h"

#include <algorithm>

#include "ir/op.h"
#include "ir/substitute.h"
#include "ir/visitor.h"
#include "schedule/interval.h"
#include "schedule/loop_index.h"
#include "support/error.h"
#include "te/scan.h"

namespace ptb {

namespace {

const std::string& iv_name(const IterVar& iv) { return iv->var.as<Var>()->name; }

// Whether a term of f mentions one of the (loop) variables of `vars`.
bool uses_any(const LinearForm& f, const VarIntervals& vars) {
  bool found = false;
  for (const auto& tc : f.terms()) {
    for_each_expr(tc.first, [&](const Expr& e) {
      if (e.as<Var>() && vars.count(e.get())) found = true;
    });
  }
  return found;
}

// Whether `c` is computed inside the loop of st's target that `st` is computed at (at that loop
// or one inside it, directly or through stages computed there): such a consumer runs after
// `st` in each iteration of that loop (stages at one loop are emitted producers first), so st's
// region there must cover its reads too (softmax's maximum, read by the sum of exponentials and
// by the output, both computed in the output's loop over rows).
bool inside_attach_loop(Stage c, const Stage& st) {
  const Stage& target = st->attach_stage;
  size_t pos = target->leaf_position(st->attach_ivar, "compute_at");
  for (; c && c->attach_type == AttachType::kScope; c = c->attach_stage) {
    if (c->attach_stage == target) {
      return c != st && target->leaf_position(c->attach_ivar, "compute_at") >= pos;
    }
  }
  return false;
}

void validate_attachment(const Schedule& sch, const StageBodies& bodies, const Stage& st) {
  const Stage& target = st->attach_stage;
  const IterVar& axis = st->attach_ivar;
  auto where = [&]() {
    return str_cat(st->describe(), " is computed at axis '", iv_name(axis), "' of ",
                   target->describe());
  };
  auto it = sch->stage_of_op.find(target->op.get());
  if (it == sch->stage_of_op.end() || it->second != target) {
    value_error(where(), ", which is not part of this schedule");
  }
  if (st->is_output) {
    value_error(where(), ", but it is an output: outputs are computed at root");
  }
  if (target->attach_type == AttachType::kInline) {
    value_error(where(), ", which is inlined; compute it at a stage that has loops");
  }
  if (std::find(target->leaf_iter_vars.begin(), target->leaf_iter_vars.end(), axis) ==
      target->leaf_iter_vars.end()) {
    value_error(where(), ", but that axis was later fused as the outer operand of a fuse, so no ",
                "loop stands for it (TVM refuses this too); compute at the fused axis instead");
  }
  for (Stage s = target; s && s->attach_type == AttachType::kScope; s = s->attach_stage) {
    if (s == st) value_error(where(), ", which is itself computed inside ", st->describe());
  }
  std::vector<Stage> consumers = effective_consumers(sch, bodies, st);
  bool reads = std::find(consumers.begin(), consumers.end(), target) != consumers.end();
  if (!reads && std::none_of(consumers.begin(), consumers.end(),
                             [&](const Stage& c) { return inside_attach_loop(c, st); })) {
    value_error(where(), ", which does not read it; compute_at needs a consumer");
  }
  // A scan reads its own earlier steps, and so do the stages of its group computed inside it.
  auto inside_st = [&](Stage c) {
    // at most one step per stage: a compute_at cycle elsewhere is reported on its own
    for (size_t steps = 0; c && steps <= sch->stages.size(); ++steps) {
      if (c == st) return true;
      c = c->attach_type == AttachType::kScope ? c->attach_stage : nullptr;
    }
    return false;
  };
  for (const Stage& c : consumers) {
    if (c != target && !inside_st(c) && !inside_attach_loop(c, st)) {
      value_error(where(), " but ", c->describe(), " also reads it, outside that loop; ",
                  "compute_at needs every consumer inside the loop it is computed at (compute ",
                  "the stage at root, or inline it)");
    }
  }
}

// The consumers of `st` other than its target: each computed (through stages computed inside
// one another) inside the target's loop `st` is computed at, after `st`.
std::vector<Stage> other_consumers(const Schedule& sch, const StageBodies& bodies,
                                   const Stage& st) {
  std::vector<Stage> out;
  for (const Stage& c : effective_consumers(sch, bodies, st)) {
    if (c != st->attach_stage && inside_attach_loop(c, st)) out.push_back(c);
  }
  return out;
}

// The region of `st` read by `target` in the loops inside leaf `pos`.
// Other consumers of a stage computed inside the same loop, each with its bounds and the
// intervals of the loops around it.
struct InnerConsumer {
  const StageNode* stage;
  const StageBound* bound;
  const VarIntervals* context;
  const std::vector<Expr>* bodies;
};

StageBound infer_region(const Stage& st, const Stage& target, const StageBound& target_bound,
                        const std::vector<Expr>& target_bodies, VarIntervals* context,
                        const std::vector<InnerConsumer>& inner_consumers) {
  LoopIndex ix = index_loops(*target, target_bound.root_ranges);
  size_t pos = target->leaf_position(st->attach_ivar, "compute_at");
  VarIntervals inner;
  for (size_t j = 0; j < target->leaf_iter_vars.size(); ++j) {
    const IterVar& leaf = target->leaf_iter_vars[j];
    LinearForm hi = LinearForm::of(ix.extent.at(leaf.get())) - LinearForm(1);
    Interval range = Interval::of(LinearForm(0), hi);
    if (j > pos) {
      inner[leaf->var.get()] = range;
    } else {
      (*context)[leaf->var.get()] = range;  // a loop enclosing st
    }
  }
  VarMap vmap;
  for (const IterVar& iv : target->root_iter_vars) vmap[iv->var.get()] = ix.value.at(iv.get());

  const auto* compute = static_cast<const ComputeOpNode*>(st->op.get());
  size_t ndim = compute->axis.size();
  std::vector<Interval> region(ndim);
  bool any_read = false;
  for (const Expr& body : target_bodies) {
    for_each_expr(substitute(body, vmap), [&](const Expr& e) {
      const auto* r = e.as<TensorRead>();
      if (!r || r->op != st->origin_op) return;
      for (size_t d = 0; d < ndim; ++d) {
        Interval i = eval_interval(r->indices[d], inner);
        region[d] = any_read ? interval_union(region[d], i, r->indices[d].dtype()) : i;
      }
      any_read = true;
    });
  }
  // Reads by consumers computed inside the loop: over their own loops and every loop between
  // them and the attach point (the loops around `st` stay fixed).
  for (const InnerConsumer& c : inner_consumers) {
    LoopIndex cix = index_loops(*c.stage, c.bound->root_ranges);
    VarIntervals varying;
    for (const auto& entry : *c.context) {
      if (!context->count(entry.first)) varying.insert(entry);
    }
    for (const IterVar& leaf : c.stage->leaf_iter_vars) {
      LinearForm hi = LinearForm::of(cix.extent.at(leaf.get())) - LinearForm(1);
      varying[leaf->var.get()] = Interval::of(LinearForm(0), hi);
    }
    VarMap cmap;
    for (const IterVar& iv : c.stage->root_iter_vars) cmap[iv->var.get()] = cix.value.at(iv.get());
    for (const Expr& body : *c.bodies) {
      for_each_expr(substitute(body, cmap), [&](const Expr& e) {
        const auto* r = e.as<TensorRead>();
        if (!r || r->op != st->origin_op) return;
        for (size_t d = 0; d < ndim; ++d) {
          Interval i = eval_interval(r->indices[d], varying);
          region[d] = any_read ? interval_union(region[d], i, r->indices[d].dtype()) : i;
        }
        any_read = true;
      });
    }
  }

  StageBound bound;
  for (size_t d = 0; d < ndim; ++d) {
    const IterVar& iv = compute->axis[d];
    DataType t = iv->var.dtype();
    const Range& dom = iv->dom;
    auto whole_domain = [&]() {
      bound.root_ranges.push_back(dom);
      bound.storage.push_back(dom);
    };
    if (!any_read || !region[d].bounded) {
      whole_domain();
      continue;
    }
    const LinearForm& lo = region[d].lo;
    LinearForm extent = region[d].hi - lo + LinearForm(1);
    // The extent over every iteration of the enclosing loops: a constant one makes the loops
    // over the region constant (unrollable, vectorizable, stack-allocated) at the price of a few
    // extra elements; a symbolic one still gives a loop-independent size to allocate.
    if (!extent.is_constant()) {
      if (auto c = const_upper_bound(extent, *context)) extent = LinearForm(*c);
    }
    LinearForm alloc = extent;
    if (!extent.is_constant()) {
      Interval cover = eval_interval(extent.to_expr(t), *context);
      if (!cover.bounded || uses_any(cover.hi, *context)) {
        whole_domain();
        continue;
      }
      alloc = cover.hi;
    }
    Expr min = lo.to_expr(t);
    LinearForm hi = lo + extent - LinearForm(1);
    LinearForm dom_lo = LinearForm::of(dom.min);
    LinearForm dom_hi = LinearForm::of(dom.min) + LinearForm::of(dom.extent) - LinearForm(1);
    auto above = const_upper_bound(hi - dom_hi, *context);
    Expr root_extent = extent.to_expr(t);
    if (!extent.is_constant() && (!above || *above > 0)) {
      // A symbolic region that may pass the end of the domain stops there: the elements past
      // it are guarded off below and never read, but the loop would still run over them. A
      // sum's blocks over a symbolic row (cascade_sum's 4096 elements) made a softmax's row
      // buffer of exponentials 4096 wide for rows of 120, each masked vector computed.
      root_extent = idx_min(root_extent, (dom_hi - lo + LinearForm(1)).to_expr(t));
    }
    bound.root_ranges.push_back(Range::from_min_extent(min, root_extent));
    bound.storage.push_back(Range::from_min_extent(min, alloc.to_expr(t)));
    auto below = const_lower_bound(lo - dom_lo, *context);
    if (!below || *below < 0) bound.domain_guards.push_back(GE::make(iv->var, cast(t, dom.min)));
    if (!above || *above > 0) {
      bound.domain_guards.push_back(LT::make(iv->var, cast(t, idx_add(dom.min, dom.extent))));
    }
  }
  for (const IterVar& iv : compute->reduce_axis) bound.root_ranges.push_back(iv->dom);
  return bound;
}

}  // namespace

BoundMap infer_bounds(const Schedule& sch, const StageBodies& bodies) {
  BoundMap out;
  // Constant ranges of the loops enclosing each stage's nest.
  std::unordered_map<const StageNode*, VarIntervals> context;
  // Consumers come after their producers in sch->stages: walking backwards, a stage's target
  // has its bounds when the stage is reached.
  for (auto it = sch->stages.rbegin(); it != sch->stages.rend(); ++it) {
    const Stage& st = *it;
    const bool is_extern = st->op->kind == OpKind::kExtern;
    // placeholders and inlined stages (an extern call has no body but is computed)
    if (!bodies.count(st.get()) && !is_extern) continue;
    std::vector<Range> storage;
    for (const Expr& e : st->origin_op->output_shape(0)) {
      storage.push_back(Range::from_min_extent(make_zero(e.dtype()), e));
    }
    if (st->attach_type != AttachType::kScope) {
      out[st.get()] = StageBound{root_domains(*st), storage, {}};
      context[st.get()] = {};
      continue;
    }
    validate_attachment(sch, bodies, st);
    const Stage& target = st->attach_stage;
    PTB_ICHECK(out.count(target.get()), "consumer ", target->op->name, " not bounded before ",
               st->op->name);
    // An extern call computes its whole outputs (it takes whole buffers), and a scan's time
    // steps need every earlier one: both run over their whole domain at the loop.
    if (is_extern || as_scan(st->origin_op)) {
      out[st.get()] = StageBound{root_domains(*st), storage, {}};
      context[st.get()] = context[target.get()];
      continue;
    }
    VarIntervals ctx = context[target.get()];
    std::vector<InnerConsumer> inner;
    for (const Stage& c : other_consumers(sch, bodies, st)) {
      PTB_ICHECK(out.count(c.get()), "consumer ", c->op->name, " not bounded before ",
                 st->op->name);
      inner.push_back({c.get(), &out[c.get()], &context[c.get()], &bodies.at(c.get())});
    }
    out[st.get()] =
        infer_region(st, target, out[target.get()], bodies.at(target.get()), &ctx, inner);
    context[st.get()] = std::move(ctx);
  }
  return out;
}

}  // namespace ptb
