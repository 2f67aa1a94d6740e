// Row statistics computed where they are used (TVM's softmax and norm schedules): reductions
// whose results an elementwise output reads once per row (softmax's max and sum of exponentials,
// layer_norm's mean and variance, a mean divided by its count) are attached inside the output's
// loop over rows. One parallel loop then does the whole operator, each row's statistics are
// computed just before the row is written (its data still in L1) and stay in a scalar, instead
// of one pass, one parallel region and one stored intermediate per reduction.
#include <algorithm>
#include <unordered_map>

#include "autoschedule/analysis.h"
#include "autoschedule/rules.h"
#include "ir/op.h"
#include "schedule/primitives.h"
#include "schedule/stage_bodies.h"

namespace ptb::autoschedule {

namespace {

// How many leading axes of the consumer index `producer` in every read of it in `bodies`: reads
// [axes[0], ..., axes[p - 1], 0, ..., 0] (trailing zeros for a statistic kept with keepdims)
// give p, the same for every read; 0 when the reads differ, index otherwise or there are none.
// The last of those indices may be axes[p - 1] // k (a constant k: group_norm's statistics,
// one per group of k channels); `divisor` is then k, else 1.
size_t rows_read(const std::vector<Expr>& bodies, const Operation& producer,
                 const std::vector<IterVar>& axes, int64_t* divisor = nullptr) {
  size_t rows = 0;
  int64_t k_found = 1;
  bool found = false;
  for (const Expr& body : bodies) {
    for (const TensorRead* r : tensor_reads(body)) {
      if (r->op != producer) continue;
      size_t p = 0;
      int64_t k = 1;
      while (p < r->indices.size() && p < axes.size()) {
        const Expr& index = r->indices[p];
        if (index.get() == axes[p]->var.get()) {
          ++p;
          continue;
        }
        const auto* div = index.as<FloorDiv>();
        auto c = div ? as_const_int(div->b) : std::nullopt;
        if (divisor && div && div->a.get() == axes[p]->var.get() && c && *c >= 1) {
          k = *c;
          ++p;
        }
        break;
      }
      for (size_t d = p; d < r->indices.size(); ++d) {
        if (as_const_int(r->indices[d]) != int64_t{0}) return 0;
      }
      if (p == 0 || (found && (p != rows || k != k_found))) return 0;
      rows = p;
      k_found = k;
      found = true;
    }
  }
  if (divisor) *divisor = k_found;
  return rows;
}

}  // namespace

bool schedule_row_group(Context& ctx, const Stage& out,
                        const std::unordered_set<const StageNode*>& tiled) {
  if (classify(out) != StageKind::kInjective || out->attach_type != AttachType::kRoot ||
      !out->relations.empty() || ctx.settled.count(out.get())) {
    return false;
  }
  const ComputeOpNode* oc = as_compute(out->op);
  StageBodies bodies = inline_bodies(ctx.sch);
  // The group: reductions read only by the output, all of one rank (the number of row axes),
  // read at its leading axes. A reduction another one reads too (softmax's max, read by the sum
  // of exponentials) stays at root: compute_at takes a stage with a single consumer.
  std::vector<Stage> group;
  std::unordered_map<const StageNode*, std::vector<Stage>> consumers_of;
  size_t rank = 0;
  int64_t divisor = 1;
  for (const Stage& st : ctx.sch->stages) {
    if (ctx.settled.count(st.get()) || tiled.count(st.get()) || st->is_output) continue;
    if (classify(st) != StageKind::kReduction || st->attach_type != AttachType::kRoot ||
        !st->relations.empty()) {
      continue;
    }
    const ComputeOpNode* rc = as_compute(st->op);
    std::vector<Stage> consumers = effective_consumers(ctx.sch, bodies, st);
    if (std::find(consumers.begin(), consumers.end(), out) == consumers.end()) continue;
    std::vector<IterVar> out_axes(oc->axis.begin(), oc->axis.end());
    int64_t k = 1;
    size_t rows = rows_read(bodies.at(out.get()), st->origin_op, out_axes, &k);
    // Some axes of the output left to vectorize, and the same rows for every statistic.
    if (rows == 0 || rows >= oc->axis.size() || (rank != 0 && (rows != rank || k != divisor))) {
      continue;
    }
    // Same extents as the output's row axes (the last one k times fewer: groups of k), one
    // element in the others: one statistic per row.
    bool same = true;
    for (size_t d = 0; same && d < rc->axis.size(); ++d) {
      if (d + 1 == rows && k > 1) {
        auto se = as_const_int(rc->shape[d]), oe = as_const_int(oc->shape[d]);
        same = se && oe && *se * k == *oe;
      } else {
        same = d < rows ? same_extent(rc->shape[d], oc->shape[d]) : is_const_int(rc->shape[d], 1);
      }
    }
    if (!same) continue;
    rank = rows;
    divisor = k;
    group.push_back(st);
    consumers_of[st.get()] = std::move(consumers);
  }
  // Members read by a stage outside the group (or outside the output) leave it, until none is.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = group.begin(); it != group.end(); ++it) {
      const std::vector<Stage>& readers = consumers_of[it->get()];
      bool inside = std::all_of(readers.begin(), readers.end(), [&](const Stage& c) {
        return c == out || std::find(group.begin(), group.end(), c) != group.end();
      });
      if (!inside) {
        group.erase(it);
        changed = true;
        break;
      }
    }
  }
  if (group.empty()) return false;
  if (ctx.knob(out, "attach_rows", 1, {0, 1}) == 0) return false;
  ctx.rule(out, "row_group");

  // The output: its row axes outermost (parallel), the rest vectorized innermost.
  std::vector<IterVar> axes = out->leaf_iter_vars;
  std::vector<IterVar> rows(axes.begin(), axes.begin() + static_cast<int64_t>(rank));
  if (divisor > 1) {
    // Rows are groups of `divisor` along the last row axis: its outer part is the row.
    auto [go, gi] = split(out, rows.back(), make_const(rows.back()->var.dtype(), divisor), Expr());
    (void)gi;
    rows.back() = go;
  }
  IterVar inner = axes.back();
  int64_t lanes = ctx.lanes(oc->output_dtype(0));
  auto extent = const_extent(inner);
  // An axis of up to four vectors that whole vectors do not divide (a 56-wide image row) stays
  // whole: one vector operation of 56 lanes is three vectors and a half, no masked tail.
  bool whole = extent && *extent % lanes != 0 && *extent <= 4 * lanes;
  if ((!extent || *extent > lanes) && !whole) {
    int64_t factor = lanes;
    if (extent && *extent % (2 * lanes) == 0 && *extent >= 4 * lanes) factor = 2 * lanes;
    auto [io, ii] = split(out, inner, make_const(inner->var.dtype(), factor), Expr());
    (void)io;
    inner = ii;
  }
  if (!extent || *extent >= 4) vectorize(out, inner);
  std::optional<int64_t> work = output_size(oc);
  std::vector<IterVar> outer = parallelize(ctx, out, rows, work);
  IterVar at = outer.back();

  // The statistics, producers first (the order of the schedule's stages), inside that loop.
  std::vector<Stage> ordered;
  for (const Stage& st : ctx.sch->stages) {
    if (std::find(group.begin(), group.end(), st) != group.end()) ordered.push_back(st);
  }
  for (const Stage& st : ordered) {
    compute_at(st, out, at);
    schedule_reduction(ctx, st, /*attached=*/true);
  }
  return true;
}

}  // namespace ptb::autoschedule

namespace ptb::autoschedule {

bool schedule_reduction_rows(Context& ctx, const Stage& st,
                             const std::unordered_set<const StageNode*>& tiled) {
  if (classify(st) != StageKind::kReduction || tiled.count(st.get()) ||
      st->attach_type != AttachType::kRoot || !st->relations.empty() ||
      ctx.settled.count(st.get())) {
    return false;
  }
  const ComputeOpNode* sc = as_compute(st->op);
  if (sc->axis.empty()) return false;
  StageBodies bodies = inline_bodies(ctx.sch);
  std::vector<IterVar> axes(sc->axis.begin(), sc->axis.end());
  // The statistics: reductions read by nothing but st, at all of st's axes (one element per
  // output element, trailing axes of one).
  std::vector<Stage> group;
  for (const Stage& p : ctx.sch->stages) {
    if (p == st || ctx.settled.count(p.get()) || tiled.count(p.get()) || p->is_output) continue;
    if (classify(p) != StageKind::kReduction || p->attach_type != AttachType::kRoot ||
        !p->relations.empty()) {
      continue;
    }
    std::vector<Stage> consumers = effective_consumers(ctx.sch, bodies, p);
    if (consumers.size() != 1 || consumers[0] != st) continue;
    if (rows_read(bodies.at(st.get()), p->origin_op, axes) != axes.size()) continue;
    const ComputeOpNode* pc = as_compute(p->op);
    bool same = true;
    for (size_t d = 0; same && d < pc->axis.size(); ++d) {
      same =
          d < axes.size() ? same_extent(pc->shape[d], sc->shape[d]) : is_const_int(pc->shape[d], 1);
    }
    if (same) group.push_back(p);
  }
  if (group.empty()) return false;
  std::optional<RowSite> site = schedule_reduction(ctx, st);
  if (!site || ctx.knob(st, "attach_rows", 1, {0, 1}) == 0) return true;
  for (const Stage& p : group) {
    compute_at(p, site->stage, site->at);
    schedule_reduction(ctx, p, /*attached=*/true);
  }
  return true;
}

}  // namespace ptb::autoschedule
