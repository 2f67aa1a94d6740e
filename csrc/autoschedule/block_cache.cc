// The register block of a micro-kernel: cache_write with the block's loop order as its layout.
// The reduction moves to a new stage whose axes are permuted so that the vector axis is the
// last (contiguous) one, whatever the output's layout (a convolution vectorized over output
// channels in NCHW); the original stage becomes a copy out of it, which the rules then inline
// into the fused epilogue or schedule as the tile's write-back.
#include "autoschedule/analysis.h"
#include "autoschedule/rules.h"
#include "ir/substitute.h"

namespace ptb::autoschedule {

Stage block_cache(Context& ctx, const Stage& st, const std::vector<int>& perm,
                  const std::map<int, Expr>& padded) {
  Operation old = st->op;  // keeps `c` alive after st->op is replaced
  const ComputeOpNode* c = as_compute(old);
  std::vector<IterVar> axes;
  std::vector<Expr> shape;
  VarMap vmap;
  for (int p : perm) {
    const IterVar& iv = c->axis[p];
    auto pad = padded.find(p);
    Range dom = pad == padded.end() ? iv->dom : Range::from_min_extent(iv->dom.min, pad->second);
    axes.push_back(make_iter_var(dom, iv->var.as<Var>()->name, IterKind::kDataPar));
    shape.push_back(pad == padded.end() ? c->shape[p] : pad->second);
    vmap[iv->var.get()] = axes.back()->var;
  }
  std::vector<Expr> bodies;
  for (const Expr& b : c->body) bodies.push_back(substitute(b, vmap));
  Operation block = make_compute(c->name + ".local", shape, axes, bodies);

  std::vector<Expr> idx;
  for (int p : perm) idx.push_back(c->axis[p]->var);
  std::vector<Expr> copies;
  for (int i = 0; i < c->num_outputs(); ++i) copies.push_back(TensorRead::make(block, i, idx));
  st->op = make_compute(c->name, c->shape, c->axis, copies);
  st->root_iter_vars = c->axis;
  st->all_iter_vars = c->axis;
  st->leaf_iter_vars = c->axis;
  st->iter_kind.clear();
  ctx.sch->stage_of_op[st->op.get()] = st;

  Stage block_stage = make_stage(block);
  block_stage->scope = "local";
  ctx.sch->insert_stage(ctx.sch->position(st), block_stage);
  ctx.name_new(block_stage, st, ".local");
  return block_stage;
}

}  // namespace ptb::autoschedule
