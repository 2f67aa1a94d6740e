// Packing of the operand a micro-kernel streams along its vector axis: the elements one
// register tile reads per reduction step become contiguous (matmul's B: [K, N] -> [N / w, K, w];
// a convolution's weights: [O, I, kh, kw] -> [O / w, I, kh, kw, w]). The copy costs one pass over
// the operand; it pays when each element is read many times.
#include "autoschedule/analysis.h"
#include "autoschedule/rules.h"
#include "ir/mutator.h"
#include "ir/op.h"
#include "schedule/loop_index.h"

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

}  // namespace ptb::autoschedule
