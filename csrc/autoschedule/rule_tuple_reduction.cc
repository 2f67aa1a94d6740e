// Tuple reductions with a user-defined combiner (te.comm_reducer): argmax's (index, value)
// pairs (single-value user reducers classify as reductions and go to rule_reduction.cc
// directly). A combiner is commutative and associative by contract, so the plain
// reductions' schedule holds for it: the contiguous axis reduced in vector lanes through
// rfactor (one running vector per tuple value, the combiner evaluated on whole vectors: compare
// and blend), the lanes combined as a tree, the rows in parallel. Left on the default schedule
// (serial, scalar), a torch-exact (index, value) argmax over (1, 128, 768) took 282 us; this
// way 12 us, one thread.
//
// topi's argmax has two: per lane of a row, a running (step, value) over the row's steps of
// one lane width (an ordered combiner: two compares and two blends per vector), then the lanes
// with NumPy's rule (ties to the first index, NaN first). The first ("lane steps") is computed
// per row inside the second's loop, its lanes vectorized: one pass over the data.
#include "autoschedule/analysis.h"
#include "autoschedule/rules.h"
#include "ir/op.h"
#include "schedule/primitives.h"

namespace ptb::autoschedule {

namespace {

bool is_custom_reduction(const Stage& st) {
  const ComputeOpNode* c = as_compute(st->op);
  if (c == nullptr || !c->is_reduction() || c->body.empty()) return false;
  for (const Expr& b : c->body) {
    const auto* red = b.as<Reduce>();
    if (red == nullptr || red->combiner != ReduceKind::kCustom) return false;
  }
  return true;
}

// The lane steps `st` reduces: a root custom reduction, not an output, read only by st, whose every
// read in st is indexed by st's data axes then st's single reduce axis (over the producer's last
// axis, whole).
Stage lane_steps_of(Context& ctx, const Stage& st) {
  const ComputeOpNode* c = as_compute(st->op);
  if (c->reduce_axis.size() != 1) return nullptr;
  const IterVar& k = c->reduce_axis[0];
  Stage found;
  for (const Expr& body : c->body) {
    for (const TensorRead* r : tensor_reads(body.as<Reduce>()->source)) {
      Stage p = ctx.sch->stage(r->op);
      if (!is_custom_reduction(p) || p->attach_type != AttachType::kRoot) return nullptr;
      if (found && found.get() != p.get()) return nullptr;
      const ComputeOpNode* pc = as_compute(p->op);
      if (r->indices.size() != c->axis.size() + 1 || pc->axis.size() != r->indices.size()) {
        return nullptr;
      }
      for (size_t d = 0; d < c->axis.size(); ++d) {
        if (r->indices[d].get() != c->axis[d]->var.get()) return nullptr;
      }
      if (r->indices.back().get() != k->var.get()) return nullptr;
      if (!same_extent(pc->axis.back()->dom.extent, k->dom.extent)) return nullptr;
      found = p;
    }
  }
  if (!found || found->is_output || ctx.sch->consumers(found).size() != 1) return nullptr;
  return found;
}

// Is `st` the lane steps of a reduction that will take it (see lane_steps_of)?
bool is_lane_steps(Context& ctx, const Stage& st) {
  for (const Stage& s : ctx.sch->stages) {
    if (s.get() == st.get() || !is_custom_reduction(s)) continue;
    Stage p = lane_steps_of(ctx, s);
    if (p && p.get() == st.get()) return true;
  }
  return false;
}

// The lane steps computed at `site` (or at root, their rows in parallel, without one): the
// steps outside the lanes, the lanes vectorized.
void schedule_lane_steps(Context& ctx, const Stage& p, const std::optional<RowSite>& site,
                         std::optional<int64_t> work) {
  ctx.rule(p, "reduction_lane_steps");
  std::vector<IterVar> data, reds;
  for (const IterVar& iv : p->leaf_iter_vars) {
    (iv->kind == IterKind::kReduce ? reds : data).push_back(iv);
  }
  if (site) compute_at(p, site->stage, site->at);
  IterVar lanes_axis = data.back();
  std::vector<IterVar> order(data.begin(), data.end() - 1);
  order.insert(order.end(), reds.begin(), reds.end());
  int64_t lanes = ctx.lanes(as_compute(p->op)->output_dtype(0));
  auto extent = const_extent(lanes_axis);
  if (extent && *extent > lanes && *extent % lanes == 0) {
    // Several running vectors per row, each its own chain of compares and blends.
    auto [lo, li] = split(p, lanes_axis, make_const(lanes_axis->var.dtype(), lanes), Expr());
    order.push_back(lo);
    order.push_back(li);
    reorder(p, order);
    unroll(p, lo);
    vectorize(p, li);
  } else {
    order.push_back(lanes_axis);
    reorder(p, order);
    vectorize(p, lanes_axis);
  }
  if (!site) parallelize(ctx, p, std::vector<IterVar>(data.begin(), data.end() - 1), work);
}

}  // namespace

bool schedule_tuple_reduction(Context& ctx, const Stage& st) {
  if (!is_custom_reduction(st)) return false;
  const ComputeOpNode* c = as_compute(st->op);
  // Constant sizes only: the lanes and the tree are cut from the reduced axis's extent.
  if (!output_size(c)) return false;
  for (const IterVar& iv : st->leaf_iter_vars) {
    if (!const_extent(iv)) return false;
  }
  if (ctx.knob(st, "tuple_reduction", 1, {0, 1}) == 0) return false;
  // Lane steps wait for their reader (stages come producers first), which places them.
  if (is_lane_steps(ctx, st)) {
    ctx.settled.insert(st.get());
    return true;
  }
  Stage steps = lane_steps_of(ctx, st);
  std::optional<int64_t> work;
  if (steps) {
    const ComputeOpNode* pc = as_compute(steps->op);
    auto size = output_size(pc);
    auto red = const_product(pc->reduce_axis);
    if (size && red) work = *size * *red;
  }
  auto site = schedule_reduction(ctx, st, false, 1, work);
  if (!steps) return true;
  // Nowhere per row to put them (16 lanes, a row of 16 k elements: the lanes' reduction
  // is too short for a row site): their own loop nest over the rows, still one pass with the
  // lanes vectorized. (schedule_reduction's default nest ran each lane's strided column
  // alone, 5.5x slower than PyTorch on (1000, 10000).)
  schedule_lane_steps(ctx, steps, site, work);
  return true;
}

}  // namespace ptb::autoschedule
