// Row statistics computed where they are used (TVM's softmax and norm schedules): reductions
// whose results an elementwise output reads once per row (softmax's max and sum of exponentials,
// layer_norm's mean and variance, a mean divided by its count) are attached inside the output's
// loop over rows. One parallel loop then does the whole operator, each row's statistics are
// computed just before the row is written (its data still in L1) and stay in a scalar, instead
// of one pass, one parallel region and one stored intermediate per reduction. An expression
// both a statistic and the output compute per element (softmax's exp(x - max)) becomes a row
// buffer computed once, next to the statistics: one exp per element instead of two. Where one
// statistic waits for another (softmax's exponentials for the maximum), they are computed for a
// block of rows at a time.
#include <algorithm>
#include <unordered_map>

#include "autoschedule/analysis.h"
#include "autoschedule/rules.h"
#include "autoschedule/stream_prefetch.h"
#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/substitute.h"
#include "schedule/interval.h"
#include "schedule/primitives.h"
#include "schedule/stage_bodies.h"

namespace ptb::autoschedule {

namespace {

// How far ahead a row block prefetches the rows it streams (schedule_row_group).
constexpr int64_t kRowPrefetchBytes = int64_t{4} << 10;

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

// Replaces every subexpression structurally equal to `pattern` with `replacement`.
class ReplaceEqual : public IRMutator {
 public:
  ReplaceEqual(Expr pattern, Expr replacement)
      : pattern_(std::move(pattern)), replacement_(std::move(replacement)) {}
  using IRMutator::mutate;
  Expr mutate(const Expr& e) override {
    if (e.defined() && e->kind == pattern_->kind && structurally_equal(e, pattern_)) {
      ++count;
      return replacement_;
    }
    return IRMutator::mutate(e);
  }
  int count = 0;

 private:
  Expr pattern_, replacement_;
};

// A statistic summing (or taking the max of) an expression that the output also computes for
// each element (softmax: the sum of exp(x - max) and the output exp(x - max) / sum): that
// expression becomes a stage of the output's shape, read by both, so that it is computed once
// per element (one exp, not two). Returns the new stage (inserted before the statistic), or
// nullptr when the output does not compute the summand or it calls no math function (a read
// or a subtraction costs less than storing and loading it again).
Stage share_summand(Context& ctx, const Stage& out, const Stage& stat, size_t rank) {
  const ComputeOpNode* oc = as_compute(out->op);
  const ComputeOpNode* rc = as_compute(stat->op);
  const auto* red = rc->body[0].as<Reduce>();
  if (oc->body.size() != 1 || red == nullptr || red->axis.size() != 1 ||
      red->combiner == ReduceKind::kCustom || rank + 1 != oc->axis.size() ||
      rc->axis.size() < rank || !calls_math(red->source)) {
    return nullptr;
  }
  if (red->condition.defined() && !is_const_int(red->condition, 1)) return nullptr;
  // The reduce axis must cover exactly the output's last axis (the buffer holds that many).
  if (!is_const_int(red->axis[0]->dom.min, 0) ||
      !same_extent(red->axis[0]->dom.extent, oc->shape[rank])) {
    return nullptr;
  }
  // The summand at the output's element: the statistic's axes are the output's rows, its
  // reduce axis the output's last axis (trailing statistic axes of one are index 0).
  auto at_element = [&](const std::vector<Expr>& axes) {
    VarMap vmap;
    for (size_t d = 0; d < rc->axis.size(); ++d) {
      vmap[rc->axis[d]->var.get()] = d < rank ? axes[d] : make_zero(rc->axis[d]->var.dtype());
    }
    vmap[red->axis[0]->var.get()] = axes[rank];
    return substitute(red->source, vmap);
  };
  std::vector<Expr> out_vars;
  for (const IterVar& iv : oc->axis) out_vars.push_back(iv->var);
  Expr pattern = at_element(out_vars);
  std::vector<IterVar> axes;
  std::vector<Expr> vars;
  for (size_t d = 0; d < oc->axis.size(); ++d) {
    axes.push_back(
        make_iter_var(Range::from_min_extent(make_zero(oc->shape[d].dtype()), oc->shape[d]),
                      "ax" + std::to_string(d), IterKind::kDataPar));
    vars.push_back(axes.back()->var);
  }
  Operation summand = make_compute(rc->name + ".summand", oc->shape, axes, {at_element(vars)});
  ReplaceEqual rewrite(pattern, TensorRead::make(summand, 0, out_vars));
  Expr out_body = rewrite.mutate(oc->body[0]);
  if (rewrite.count == 0) return nullptr;
  if (ctx.knob(out, "share_summand", 1, {0, 1}) == 0) return nullptr;

  out->op = make_compute(oc->name, oc->shape, oc->axis, {out_body});
  ctx.sch->stage_of_op[out->op.get()] = out;
  std::vector<Expr> idx;
  for (size_t d = 0; d < rank; ++d) idx.push_back(rc->axis[d]->var);
  idx.push_back(red->axis[0]->var);
  Expr source = TensorRead::make(summand, 0, idx);
  stat->op = make_compute(rc->name, rc->shape, rc->axis,
                          {Reduce::make(red->combiner, source, red->axis, red->condition)});
  ctx.sch->stage_of_op[stat->op.get()] = stat;
  Stage st = make_stage(summand);
  ctx.sch->insert_stage(ctx.sch->position(stat), st);
  ctx.name_new(st, stat, ".summand");
  return st;
}

}  // namespace

bool row_buffer(Context& ctx, const Stage& st, const std::unordered_set<const StageNode*>& keep) {
  if (classify(st) != StageKind::kInjective || st->is_output ||
      st->attach_type != AttachType::kRoot || !st->relations.empty()) {
    return false;
  }
  const ComputeOpNode* bc = as_compute(st->op);
  if (bc->body.size() != 1 || !calls_math(bc->body[0])) return false;
  Stage out;
  std::vector<Stage> reductions;
  for (const Stage& c : ctx.sch->consumers(st)) {
    StageKind kind = classify(c);
    if (kind == StageKind::kInjective && !out) {
      out = c;
    } else if (kind == StageKind::kReduction) {
      reductions.push_back(c);
    } else {
      return false;
    }
  }
  if (!out || reductions.empty() || !(out->is_output || keep.count(out.get()))) return false;
  const ComputeOpNode* oc = as_compute(out->op);
  if (oc->axis.size() != bc->axis.size()) return false;
  for (size_t d = 0; d < oc->axis.size(); ++d) {
    if (!same_extent(oc->shape[d], bc->shape[d])) return false;
  }
  std::vector<IterVar> axes(oc->axis.begin(), oc->axis.end());
  for (const Stage& r : reductions) {
    size_t rows = rows_read(oc->body, r->origin_op, axes);
    if (rows == 0 || rows >= axes.size()) return false;
  }
  return true;
}

namespace {

// The reader of a window-rows buffer `st` (see window_rows_buffer), or nullptr.
Stage window_rows_reader(Context& ctx, const Stage& st) {
  const ComputeOpNode* bc = as_compute(st->op);
  if (bc == nullptr || bc->tag != "injective,window_rows" ||
      classify(st) != StageKind::kInjective || st->is_output ||
      st->attach_type != AttachType::kRoot || !st->relations.empty()) {
    return nullptr;
  }
  std::vector<Stage> consumers = ctx.sch->consumers(st);
  if (consumers.size() != 1) return nullptr;
  const Stage& out = consumers[0];
  const ComputeOpNode* oc = as_compute(out->op);
  if (oc == nullptr || classify(out) != StageKind::kInjective || !out->relations.empty() ||
      out->attach_type != AttachType::kRoot || oc->axis.size() != bc->axis.size() ||
      oc->axis.size() < 2) {
    return nullptr;
  }
  size_t rank = oc->axis.size();
  for (size_t d = 0; d + 1 < rank; ++d) {
    if (!same_extent(oc->shape[d], bc->shape[d])) return nullptr;
  }
  // Every read: the reader's own row (its axes but the last), any column.
  int reads = 0;
  for (const Expr& body : oc->body) {
    for (const TensorRead* r : tensor_reads(body)) {
      if (r->op != st->origin_op) continue;
      ++reads;
      for (size_t d = 0; d + 1 < rank; ++d) {
        if (r->indices[d].get() != oc->axis[d]->var.get()) return nullptr;
      }
    }
  }
  return reads > 0 ? out : nullptr;
}

}  // namespace

bool window_rows_buffer(Context& ctx, const Stage& st) {
  return window_rows_reader(ctx, st) != nullptr;
}

namespace {

// `out` reads a window-rows buffer: its last axis vectorized (whole up to four vectors, else in
// vectors), its row axes parallel, the buffer computed for each output row inside the loop over
// rows, vectorized the same way. As chains of maxima rather than reductions (pooling.py), the
// columns' and the window's maxima start from their first element instead of the lowest float
// (and, with padded rows read as the nearest input row, take plain loads): one thread, a 3x3
// stride-2 pool's (1, 32, 112, 112) (one thread's share at batch 1, in L2), three alternations
// with the reduction form: 49.4-49.7 -> 44.7-45.6 us (a copy of the same bytes: 29-33 us).
bool schedule_window_rows_injective(Context& ctx, const Stage& out) {
  Stage rows;
  for (const Stage& p : ctx.sch->stages) {
    if (p == out || ctx.settled.count(p.get())) continue;
    if (window_rows_reader(ctx, p) == out) {
      rows = p;
      break;
    }
  }
  if (!rows || ctx.knob(out, "window_rows", 1, {0, 1}) == 0) return false;
  const ComputeOpNode* oc = as_compute(out->op);
  int64_t lanes = ctx.lanes(oc->output_dtype(0));
  // Vectorizes the last leaf of st: whole up to four vectors (a 56-wide row: three vectors and
  // a half, no masked tail loop), else split into vectors. Returns the leaves outside it.
  auto vectorize_last = [&](const Stage& st) {
    std::vector<IterVar> axes = st->leaf_iter_vars;
    IterVar inner = axes.back();
    axes.pop_back();
    auto extent = const_extent(inner);
    if (!extent || *extent > 4 * lanes) {
      auto [io, ii] = split(st, inner, make_const(inner->var.dtype(), lanes), Expr());
      (void)io;
      inner = ii;
    }
    if (!extent || *extent >= 4) vectorize(st, inner);
    return axes;
  };
  ctx.rule(out, "injective");
  std::vector<IterVar> row_axes = vectorize_last(out);
  std::vector<IterVar> outer = parallelize(ctx, out, row_axes, output_size(as_compute(rows->op)));
  compute_at(rows, out, outer.back());
  vectorize_last(rows);
  ctx.rule(rows, "window_rows");
  ctx.settled.insert(out.get());
  ctx.settled.insert(rows.get());
  return true;
}

}  // namespace

bool schedule_row_group(Context& ctx, const Stage& out,
                        const std::unordered_set<const StageNode*>& tiled) {
  if (classify(out) != StageKind::kInjective || out->attach_type != AttachType::kRoot ||
      !out->relations.empty() || ctx.settled.count(out.get())) {
    return false;
  }
  const ComputeOpNode* oc = as_compute(out->op);
  std::shared_ptr<const StageBodies> cached_bodies = ctx.bodies();
  const StageBodies& bodies = *cached_bodies;
  // Row buffers (row_buffer above, left stored by the inlining rule): elementwise stages of the
  // output's shape that the output reads; their elements are computed once per row, next to
  // the statistics that read them.
  std::vector<Stage> buffers;
  for (const Stage& st : ctx.sch->stages) {
    if (st == out || ctx.settled.count(st.get()) || st->is_output) continue;
    if (classify(st) != StageKind::kInjective || st->attach_type != AttachType::kRoot ||
        !st->relations.empty()) {
      continue;
    }
    const ComputeOpNode* bc = as_compute(st->op);
    bool same = bc->axis.size() == oc->axis.size();
    for (size_t d = 0; same && d < bc->axis.size(); ++d) {
      same = same_extent(bc->shape[d], oc->shape[d]);
    }
    std::vector<Stage> readers = effective_consumers(ctx.sch, bodies, st);
    if (same && std::find(readers.begin(), readers.end(), out) != readers.end()) {
      buffers.push_back(st);
    }
  }
  auto in = [](const std::vector<Stage>& v, const Stage& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  // The group: reductions read only by the output and its buffers, all of one rank (the number
  // of row axes), read at their leading axes.
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
    // Read by the output or a buffer, at the same rows in each of them.
    size_t rows = 0;
    int64_t k = 1;
    bool consistent = true, read = false;
    for (const Stage& reader : consumers) {
      if (reader != out && !in(buffers, reader)) continue;
      const ComputeOpNode* c = as_compute(reader->op);
      std::vector<IterVar> reader_axes(c->axis.begin(), c->axis.end());
      int64_t kr = 1;
      size_t r = rows_read(bodies.at(reader.get()), st->origin_op, reader_axes, &kr);
      consistent &= !read || (r == rows && kr == k);
      rows = r;
      k = kr;
      read = true;
    }
    // Some axes of the output left to vectorize, and the same rows for every statistic.
    if (!read || !consistent || rows == 0 || rows >= oc->axis.size() ||
        (rank != 0 && (rows != rank || k != divisor))) {
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
  // Buffers are read by the output and by members only; members by the output, other members
  // and buffers only. Those read from outside leave, until none is.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = buffers.begin(); it != buffers.end(); ++it) {
      std::vector<Stage> readers = effective_consumers(ctx.sch, bodies, *it);
      bool inside = std::all_of(readers.begin(), readers.end(),
                                [&](const Stage& c) { return c == out || in(group, c); });
      bool used =
          std::any_of(readers.begin(), readers.end(), [&](const Stage& c) { return in(group, c); });
      // A buffer's rows are whole rows of the output (not groups of channels).
      if (!inside || !used || divisor != 1) {
        buffers.erase(it);
        changed = true;
        break;
      }
    }
    for (auto it = group.begin(); !changed && it != group.end(); ++it) {
      const std::vector<Stage>& readers = consumers_of[it->get()];
      bool inside = std::all_of(readers.begin(), readers.end(), [&](const Stage& c) {
        return c == out || in(group, c) || in(buffers, c);
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
  if (divisor == 1) {
    for (const Stage& st : std::vector<Stage>(group)) {
      if (Stage summand = share_summand(ctx, out, st, rank)) buffers.push_back(summand);
    }
  }

  int64_t lanes = ctx.lanes(oc->output_dtype(0));
  // The innermost axis of the output or a buffer: split into vectors (two per step when they
  // divide it), vectorized.
  auto vectorize_inner = [&](const Stage& st) {
    IterVar inner = st->leaf_iter_vars.back();
    // The output's last two axes, the last a short one that whole vectors do not divide (a
    // 56-wide image row) and both together a whole number of two-vector steps: fused, so
    // that each vector is a contiguous, aligned run of the (compact) image instead of rows
    // of three vectors and a half, every other one across cache lines. One thread,
    // group_norm (1, 64, 56, 56): 28.7 -> 25.8 us.
    const std::vector<IterVar>& leaves = st->leaf_iter_vars;
    size_t n = oc->axis.size();
    if (st == out && n >= rank + 2 && leaves.size() >= 2 &&
        leaves[leaves.size() - 2] == oc->axis[n - 2] && inner == oc->axis[n - 1]) {
      auto e1 = const_extent(leaves[leaves.size() - 2]), e2 = const_extent(inner);
      bool short_row = e2 && *e2 % lanes != 0 && *e2 <= 4 * lanes;
      if (short_row && e1 && (*e1 * *e2) % (2 * lanes) == 0 &&
          ctx.knob(out, "fuse_rows", 1, {0, 1}) == 1) {
        inner = fuse(st, std::vector<IterVar>{leaves[leaves.size() - 2], inner});
      }
    }
    auto extent = const_extent(inner);
    // An axis of up to four vectors that whole vectors do not divide (a 56-wide image row)
    // stays whole: one vector operation of 56 lanes is three vectors and a half, no masked
    // tail.
    bool whole = extent && *extent % lanes != 0 && *extent <= 4 * lanes;
    if ((!extent || *extent > lanes) && !whole) {
      int64_t factor = lanes;
      if (extent && *extent % (2 * lanes) == 0 && *extent >= 4 * lanes) factor = 2 * lanes;
      auto [io, ii] = split(st, inner, make_const(inner->var.dtype(), factor), Expr());
      (void)io;
      inner = ii;
    }
    if (!extent || *extent >= 4) vectorize(st, inner);
  };

  // The output: its row axes outermost (parallel), the rest vectorized innermost.
  std::vector<IterVar> axes = out->leaf_iter_vars;
  std::vector<IterVar> rows(axes.begin(), axes.begin() + static_cast<int64_t>(rank));
  if (divisor > 1) {
    // Rows are groups of `divisor` along the last row axis: its outer part is the row.
    auto [go, gi] = split(out, rows.back(), make_const(rows.back()->var.dtype(), divisor), Expr());
    (void)gi;
    rows.back() = go;
  }
  vectorize_inner(out);

  // When a statistic is read by other statistics or by buffers (softmax's maximum, which every
  // exponential waits for), the statistics and buffers are computed for a block of rows, then
  // the block's output: one row's maximum is a short chain of dependent steps and a tree of its
  // lanes, which the same row's exponentials wait for and the next row's work (hundreds of
  // instructions later) cannot overlap; in a block the rows' chains are independent. The
  // block's rows stay in L1 for the second read. LLVM unrolls the block's loops over rows:
  // softmax compiles in about twice the time (32 -> 60 ms of CPU, loaded machine).
  bool chained = false;
  for (const Stage& st : group) {
    for (const Stage& r : group) chained |= r != st && reads_through_inline(ctx.sch, r, st);
    for (const Stage& b : buffers) chained |= reads_through_inline(ctx.sch, b, st);
  }
  int64_t block = 1;
  auto row_extent = const_extent(rows.back());
  if (chained && divisor == 1 && row_extent) {
    // Four rows (two where four do not divide the axis) that stay in L1 beside the rest (16
    // KB): one thread, softmax (1, 12, 128, 128) 82 -> 51-58 us with 4, 58-61 with 8 or 16.
    auto row_elems = const_product(std::vector<IterVar>(axes.begin() + rank, axes.end()));
    int64_t row_bytes = row_elems ? *row_elems * oc->output_dtype(0).bytes() : 0;
    for (int64_t r : {4, 2}) {
      if (row_bytes > 0 && r * row_bytes <= 16384 && *row_extent % r == 0 && *row_extent > r) {
        block = r;
        break;
      }
    }
  }
  if (chained) block = ctx.knob(out, "row_block", block, {1, 2, 4, 8, 16});
  if (block > 1 && (!row_extent || *row_extent % block != 0 || divisor != 1)) block = 1;
  if (block > 1) {
    auto [ro, ri] = split(out, rows.back(), make_const(rows.back()->var.dtype(), block), Expr());
    (void)ri;
    rows.back() = ro;
  }
  std::optional<int64_t> work = output_size(oc);
  std::vector<IterVar> outer = parallelize(ctx, out, rows, work);
  IterVar at = outer.back();
  // What the block's stages stream through (softmax's input), found before rfactor adds stages.
  std::vector<Stage> members = {out};
  members.insert(members.end(), buffers.begin(), buffers.end());
  members.insert(members.end(), group.begin(), group.end());
  std::vector<Tensor> streamed =
      work ? streamed_tensors(ctx, members, *work) : std::vector<Tensor>{};
  // Where in a buffer a statistic only it reads is computed: its loop over one row, or over the
  // block (the outer part of its last row axis split by the block: one iteration).
  std::unordered_map<const StageNode*, IterVar> buffer_rows;

  // The buffers, then the statistics, producers first (the order of the schedule's stages),
  // inside that loop; a statistic only a buffer reads (softmax's maximum, read by the
  // exponentials) inside the buffer's loop over the row or the block. (A copy of the list:
  // rfactor adds stages to it.)
  std::vector<Stage> stages = ctx.sch->stages;
  // Buffers consumers first: a buffer only another buffer reads (a math function of the input,
  // log(x), read by softmax's shared exp(log(x) - max)) is computed in the loop its reader is
  // computed in, which must be placed already.
  for (auto it = stages.rbegin(); it != stages.rend(); ++it) {
    const Stage& st = *it;
    if (in(buffers, st)) {
      ctx.rule(st, "row_buffer");
      compute_at(st, out, at);
      vectorize_inner(st);
      IterVar row = st->leaf_iter_vars[rank - 1];
      if (block > 1) {
        auto [bo, bi] = split(st, row, make_const(row->var.dtype(), block), Expr());
        (void)bi;
        row = bo;
      }
      buffer_rows[st.get()] = row;
    }
  }
  for (const Stage& st : stages) {
    if (in(group, st)) {
      // Inside a buffer's loop only when no other statistic reads it: one that does is
      // computed in the output's loop (a float16 softmax's backward reads the maximum in the
      // exponentials' buffer and in the sum of its gradient: attached in the buffer, the sum's
      // partial results read it from outside that loop and the schedule was refused).
      bool read_by_member = std::any_of(group.begin(), group.end(), [&](const Stage& g) {
        return g != st && reads_through_inline(ctx.sch, g, st);
      });
      if (read_by_member || reads_through_inline(ctx.sch, out, st)) {
        compute_at(st, out, at);
      } else {
        auto reader = std::find_if(buffers.begin(), buffers.end(), [&](const Stage& b) {
          return reads_through_inline(ctx.sch, b, st);
        });
        compute_at(st, *reader, buffer_rows.at(reader->get()));
      }
      schedule_reduction(ctx, st, /*attached=*/true);
    }
  }
  // The rows a few blocks ahead prefetched (knob "prefetch", when the data comes from memory)
  // where the statistics or buffers compute a math function of every element (softmax's
  // exponentials): the block's instructions then take about as long as its memory traffic,
  // and the hardware prefetchers alone do not overlap the two. (8, 12, 128, 128) float32, 2
  // threads, off and on compiled twice each in one process (off, on, on, off: the variant timed
  // right after PyTorch's copy pays for its spinning OpenMP workers), against a copy of the same
  // bytes: softmax 0.90 -> 1.00 of the copy, log_softmax 0.88 -> 1.01 with 4 KB ahead. The norms,
  // whose statistics are sums, gained nothing (layer_norm (8, 128, 768) 1.03 -> 1.01).
  bool math = std::any_of(members.begin() + 1, members.end(),
                          [&](const Stage& st) { return computes_math(ctx, st); });
  auto iterations = const_product(outer);
  if (math && work && iterations && *iterations > 0 && *work >= kMinParallelWork) {
    prefetch_ahead(ctx, out, at, streamed, *iterations, *work * oc->output_dtype(0).bytes(),
                   kRowPrefetchBytes);
  }
  return true;
}

}  // namespace ptb::autoschedule

namespace ptb::autoschedule {

namespace {

// Whether p is a reduction at the root, not yet scheduled, not tiled and not an output, whose
// only consumer (through inlined stages) is st: a statistic or a window's partial result that
// st's rule may compute inside st's loops.
bool reduction_only_for(Context& ctx, const std::unordered_set<const StageNode*>& tiled,
                        const StageBodies& bodies, const Stage& p, const Stage& st) {
  if (p == st || ctx.settled.count(p.get()) || tiled.count(p.get()) || p->is_output) return false;
  if (classify(p) != StageKind::kReduction || p->attach_type != AttachType::kRoot ||
      !p->relations.empty()) {
    return false;
  }
  std::vector<Stage> consumers = effective_consumers(ctx.sch, bodies, p);
  return consumers.size() == 1 && consumers[0] == st;
}

// A small window reduction (a separable max pool's maximum across the window's columns) that
// reads, at its own leading axes, another small window reduction over the last axis only read
// by it (the maximum down each column, topi's "pool_max_rows"): st is scheduled as any
// reduction, and the producer is computed for one output row at a time, in st's loop over
// rows, into a row buffer (its columns vectorized). Stored whole, it was a second pass over a
// tensor larger than the output. Returns false (nothing changed) when there is no such producer
// or the knob "window_rows" is 0.
bool schedule_window_rows(Context& ctx, const Stage& st,
                          const std::unordered_set<const StageNode*>& tiled,
                          const StageBodies& bodies) {
  const ComputeOpNode* sc = as_compute(st->op);
  size_t rank = sc->axis.size();
  auto small = [](const ComputeOpNode* c) {
    if (c->reduce_axis.empty()) return false;
    for (const IterVar& r : c->reduce_axis) {
      auto e = const_extent(r);
      if (!e || *e > 8) return false;
    }
    return true;
  };
  if (rank < 2 || !small(sc)) return false;
  Stage rows;
  for (const Stage& p : ctx.sch->stages) {
    if (!reduction_only_for(ctx, tiled, bodies, p, st)) continue;
    const ComputeOpNode* pc = as_compute(p->op);
    if (pc->axis.size() != rank || !small(pc)) continue;
    bool same = true;
    for (size_t d = 0; same && d + 1 < rank; ++d) same = same_extent(pc->shape[d], sc->shape[d]);
    // Every read of p: st's own axes but the last (one row of p per row of st).
    for (const Expr& body : bodies.at(st.get())) {
      for (const TensorRead* r : tensor_reads(body)) {
        if (r->op != p->origin_op) continue;
        for (size_t d = 0; same && d + 1 < rank; ++d) {
          same = r->indices[d].get() == sc->axis[d]->var.get();
        }
      }
    }
    if (same) {
      rows = p;
      break;
    }
  }
  if (!rows || ctx.knob(st, "window_rows", 1, {0, 1}) == 0) return false;
  schedule_reduction(ctx, st);
  // st's loop over one output row: the data loop outside its innermost (vectorized) one.
  std::vector<IterVar> data;
  for (const IterVar& iv : st->leaf_iter_vars) {
    if (iv->kind != IterKind::kReduce) data.push_back(iv);
  }
  if (data.size() < 2) return true;
  compute_at(rows, st, data[data.size() - 2]);
  schedule_reduction(ctx, rows, /*attached=*/true);
  ctx.rule(rows, "window_rows");
  return true;
}

}  // namespace

bool schedule_reduction_rows(Context& ctx, const Stage& st,
                             const std::unordered_set<const StageNode*>& tiled) {
  if (classify(st) == StageKind::kInjective && st->attach_type == AttachType::kRoot &&
      st->relations.empty() && !ctx.settled.count(st.get())) {
    return schedule_window_rows_injective(ctx, st);
  }
  if (classify(st) != StageKind::kReduction || tiled.count(st.get()) ||
      st->attach_type != AttachType::kRoot || !st->relations.empty() ||
      ctx.settled.count(st.get())) {
    return false;
  }
  const ComputeOpNode* sc = as_compute(st->op);
  if (sc->axis.empty()) return false;
  std::shared_ptr<const StageBodies> cached_bodies = ctx.bodies();
  const StageBodies& bodies = *cached_bodies;
  std::vector<IterVar> axes(sc->axis.begin(), sc->axis.end());
  // The statistics: reductions read by nothing but st, at all of st's axes (one element per
  // output element, trailing axes of one).
  std::vector<Stage> group;
  for (const Stage& p : ctx.sch->stages) {
    if (!reduction_only_for(ctx, tiled, bodies, p, st)) continue;
    if (rows_read(bodies.at(st.get()), p->origin_op, axes) != axes.size()) continue;
    const ComputeOpNode* pc = as_compute(p->op);
    bool same = true;
    for (size_t d = 0; same && d < pc->axis.size(); ++d) {
      same =
          d < axes.size() ? same_extent(pc->shape[d], sc->shape[d]) : is_const_int(pc->shape[d], 1);
    }
    if (same) group.push_back(p);
  }
  if (group.empty()) return schedule_window_rows(ctx, st, tiled, bodies);
  // Two output elements (rows) at a time: their statistics, then their reduction (argmax's
  // maximum, then its index search). As for softmax (schedule_row_group): one row's maximum is
  // a chain of dependent steps that the row's second pass waits for; for two rows the chains
  // are independent. One thread, argmax (1, 128, 768) 10.1-11.1 -> 8.5-9.1 us, (8, 128, 768)
  // 186 -> 166 us; four or eight rows were no faster and compile longer.
  int64_t block = ctx.knob(st, "row_block", 2, {1, 2, 4, 8, 16});
  std::optional<RowSite> site = schedule_reduction(ctx, st, /*attached=*/false, block);
  if (!site || ctx.knob(st, "attach_rows", 1, {0, 1}) == 0) return true;
  for (const Stage& p : group) {
    compute_at(p, site->stage, site->at);
    schedule_reduction(ctx, p, /*attached=*/true);
  }
  return true;
}

}  // namespace ptb::autoschedule
