// Packing of the operand a micro-kernel streams along its vector axis: the elements one
// register tile reads per reduction step become contiguous (matmul's B: [K, N] -> [N / w, K, w];
// a convolution's weights: [O, I, kh, kw] -> [O / w, I, kh, kw, w]). The copy costs one pass over
// the operand; it pays when each element is read many times.
#include <algorithm>
#include <numeric>

#include "autoschedule/analysis.h"
#include "autoschedule/rules.h"
#include "ir/mutator.h"
#include "ir/op.h"
#include "schedule/loop_index.h"
#include "schedule/primitives.h"

namespace ptb::autoschedule {

namespace {

// Replaces reads of one tensor indexed by exactly `axis` in dimension `dim` with reads of the
// panels.
class ReadPanels : public IRMutator {
 public:
  ReadPanels(const TensorRead* read, int dim, const Expr& axis, const Operation& panels,
             int64_t width)
      : op_(read->op),
        value_index_(read->value_index),
        dim_(dim),
        axis_(axis),
        panels_(panels),
        width_(width) {}

 protected:
  using IRMutator::mutate_node;
  Expr mutate_node(const TensorRead* op, const Expr& self) override {
    Expr e = IRMutator::mutate_node(op, self);
    const auto* r = e.as<TensorRead>();
    if (r->op != op_ || r->value_index != value_index_ || r->indices[dim_].get() != axis_.get()) {
      return e;
    }
    Expr w = make_const(axis_.dtype(), width_);
    std::vector<Expr> idx = {floordiv(axis_, w)};
    for (size_t d = 0; d < r->indices.size(); ++d) {
      if (static_cast<int>(d) != dim_) idx.push_back(r->indices[d]);
    }
    idx.push_back(floormod(axis_, w));
    return TensorRead::make(panels_, 0, idx);
  }

 private:
  Operation op_;
  int value_index_, dim_;
  Expr axis_;
  Operation panels_;
  int64_t width_;
};

}  // namespace

Stage pack_operand(Context& ctx, const Stage& st, const TensorRead* read, int dim,
                   const IterVar& axis, int64_t width, const std::string& suffix) {
  const std::vector<Expr>& shape = read->op->output_shape(read->value_index);
  Expr n = shape[dim];
  Expr w = make_const(n.dtype(), width);
  auto n_const = as_const_int(n);
  bool exact = n_const && *n_const % width == 0;

  std::vector<Expr> panel_shape = {ceil_div(n, w)};
  std::vector<IterVar> axes = {make_iter_var(
      Range::from_min_extent(make_zero(n.dtype()), panel_shape[0]), "panel", IterKind::kDataPar)};
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int>(d) == dim) continue;
    panel_shape.push_back(shape[d]);
    axes.push_back(make_iter_var(Range::from_min_extent(make_zero(shape[d].dtype()), shape[d]),
                                 "ax" + std::to_string(d), IterKind::kDataPar));
  }
  panel_shape.push_back(w);
  axes.push_back(
      make_iter_var(Range::from_min_extent(make_zero(n.dtype()), w), "lane", IterKind::kDataPar));
  // Source index in the packed dimension; the last panel is padded with zeros when the width
  // does not divide it (its extra lanes are computed, never stored).
  Expr src = idx_add(idx_mul(axes.front()->var, w), axes.back()->var);
  std::vector<Expr> idx;
  size_t k = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (static_cast<int>(d) == dim) {
      idx.push_back(exact ? src : idx_min(src, idx_sub(n, make_one(n.dtype()))));
    } else {
      idx.push_back(axes[k++]->var);
    }
  }
  Expr value = TensorRead::make(read->op, read->value_index, idx);
  if (!exact) {
    value = Call::make(Intrinsic::kIfThenElse, {LT::make(src, n), value, make_zero(value.dtype())});
  }
  Operation panels = make_compute(read->op->name + ".packed", panel_shape, axes, {value});

  const ComputeOpNode* c = as_compute(st->op);
  ReadPanels rewrite(read, dim, axis->var, panels, width);
  std::vector<Expr> bodies;
  for (const Expr& b : c->body) bodies.push_back(rewrite.mutate(b));
  st->op = make_compute(c->name, c->shape, c->axis, bodies);
  ctx.sch->stage_of_op[st->op.get()] = st;

  Stage pack = make_stage(panels);
  ctx.sch->insert_stage(ctx.sch->position(st), pack);
  ctx.name_new(pack, st, suffix);
  return pack;
}

namespace {

// The most elements one unrolled body of a pack reads (its stores, before the lane split): the
// compile time grows with it, several times faster than the pack's speed does. A 3 x 3 window
// has 9 elements a channel and whole runs only every 16 channels (144 elements: 0.5 s to
// compile a 3x3 convolution, against 45 ms); two channels (18) give one run and two gathers.
constexpr int64_t kMaxTransposedTaps = 32;

// Whether `iv` is still a loop of `st` (not split or fused by an earlier rule).
bool is_leaf(const Stage& st, const IterVar& iv) {
  const auto& leaves = st->leaf_iter_vars;
  return std::find(leaves.begin(), leaves.end(), iv) != leaves.end();
}

}  // namespace

void unroll_for_transposed_reads(const Stage& pack, int dim, size_t source_dims, int64_t lanes) {
  // Contiguous along the packed dimension: plain vector loads already.
  // Codegen transposes blocks of 4, 8 or 16 lanes (a 32-lane float16 vector stays a gather).
  if (dim < 0 || static_cast<size_t>(dim) + 1 >= source_dims || lanes < 4 || lanes > 16) return;
  const std::vector<IterVar>& roots = pack->root_iter_vars;  // [panel, other dims..., lane]
  const IterVar& lane = roots.back();
  auto width = const_extent(lane);
  if (lane != pack->leaf_iter_vars.back() || !width || *width % lanes != 0) return;
  // A prefetch along a row of the source (the tuner's "prefetch" of a pack) stays on its loop.
  for (const auto& p : pack->prefetches) {
    auto on_root = [&](const IterVar& r) { return r.get() == p.axis.get(); };
    if (std::any_of(roots.begin(), roots.end(), on_root)) return;
  }
  // Innermost first: unroll whole loops while the run is short, split the loop that completes
  // a multiple of `lanes`.
  std::vector<IterVar> whole;
  IterVar split_axis;
  int64_t split_factor = 0;
  int64_t taps = 1;
  for (size_t i = roots.size() - 2; i >= 1 && taps < lanes; --i) {
    const IterVar& axis = roots[i];
    auto extent = const_extent(axis);
    if (!is_leaf(pack, axis) || !extent) break;
    if (taps * *extent <= kMaxTransposedTaps) {
      // Whole, or split where a factor completes a multiple of `lanes`.
      int64_t need = lanes / std::gcd(taps, lanes);
      if (*extent % need == 0 && *extent > need) {
        split_axis = axis;
        split_factor = need;
        taps *= need;
        break;
      }
      whole.push_back(axis);
      taps *= *extent;
      continue;
    }
    // Too long whole: the smallest factor of the loop that gives at least one run.
    for (int64_t f = (lanes + taps - 1) / taps; taps * f <= kMaxTransposedTaps; ++f) {
      if (*extent % f == 0) {
        split_axis = axis;
        split_factor = f;
        taps *= f;
        break;
      }
    }
    break;
  }
  if (taps < lanes) return;
  // The unrolled body, outermost first.
  std::vector<IterVar> body(whole.rbegin(), whole.rend());
  for (const IterVar& axis : whole) unroll(pack, axis);
  if (split_axis) {
    auto [outer, inner] =
        split(pack, split_axis, make_const(split_axis->var.dtype(), split_factor), Expr());
    unroll(pack, inner);
    body.insert(body.begin(), inner);
  }
  if (*width > lanes) {
    // A panel of several vectors: one vector of lanes per iteration of a loop around the
    // unrolled body, whose stores then take one transpose per run (unrolled as well, a
    // 64-wide panel's body took four: 122 ms to compile batch_matmul's, against 52).
    auto [outer, inner] = split(pack, lane, make_const(lane->var.dtype(), lanes), Expr());
    vectorize(pack, inner);
    std::vector<IterVar> order = {outer};
    order.insert(order.end(), body.begin(), body.end());
    reorder(pack, order);
  }
}

}  // namespace ptb::autoschedule
