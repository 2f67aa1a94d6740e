// Winograd's transforms (topi/nn/winograd.py): the data transform, and the stage holding the
// inverse transform with its epilogue fused in. Each point of a tile is one branch of a tree
// chosen by the point's place in the tile. Scheduled with the tile's points as unrolled inner
// loops, each copy's tree resolves at compile time to its own sum, the copies read the same
// tile (loaded once) and share their partial sums (a row of the tile combined once, then used
// by every point of that row: LLVM's CSE), and one pass over the tiles writes every point.
// Left to the injective rule, every vector chose its branch at run time and summed its points
// from scratch, and LLVM compiled one copy of the whole tree per vector loop.
#include "autoschedule/analysis.h"
#include "autoschedule/rules.h"
#include "ir/op.h"
#include "schedule/primitives.h"

namespace ptb::autoschedule {

namespace {

std::optional<int64_t> tile_size_of(const ComputeOpNode* c) {
  auto it = c->attrs.find("tile_size");
  if (it == c->attrs.end() || !std::holds_alternative<int64_t>(it->second)) return std::nullopt;
  return std::get<int64_t>(it->second);
}

// The vector axis: `lane` whole when it is one vector or less, else split into vectors (the
// outer part returned first, to go outside the unrolled points: one vector's points at a time).
std::pair<std::optional<IterVar>, IterVar> vector_lanes(const Stage& st, const IterVar& lane,
                                                        int64_t lanes) {
  auto extent = const_extent(lane);
  if (!extent || *extent <= lanes || *extent % lanes != 0) return {std::nullopt, lane};
  auto [outer, inner] = split(st, lane, make_const(lane->var.dtype(), lanes), Expr());
  return {outer, inner};
}

// (eps, nu, n, c_block, tile_y, tile_x, lane) -> parallel (n, c_block, tile_y), then tile_x,
// the lane's vectors, the unrolled points (eps, nu) and the vector.
bool schedule_data_transform(Context& ctx, const Stage& st, const ComputeOpNode* c) {
  const std::vector<IterVar> axes = st->leaf_iter_vars;  // a copy: splits change the leaves
  if (axes.size() != 7 || !tile_size_of(c)) return false;
  if (ctx.knob(st, "unroll_tile", 1, {0, 1}) == 0) return false;
  ctx.rule(st, "winograd_transform");
  auto [lane_outer, lane] = vector_lanes(st, axes[6], ctx.lanes(c->output_dtype(0)));
  std::vector<IterVar> outer = {axes[2], axes[3], axes[4]};
  std::vector<IterVar> order = {axes[2], axes[3], axes[4], axes[5]};
  if (lane_outer) order.push_back(*lane_outer);
  order.insert(order.end(), {axes[0], axes[1], lane});
  reorder(st, order);
  unroll(st, axes[0]);
  unroll(st, axes[1]);
  vectorize(st, lane);
  parallelize(ctx, st, outer, output_size(c));
  return true;
}

// (n, k_block, y, x, lane) holding the inverse transform of tile size m -> parallel (n, k_block,
// y / m), then x / m, the lane's vectors, the unrolled points (y % m, x % m) and the vector.
bool schedule_inverse_transform(Context& ctx, const Stage& st, const ComputeOpNode* c,
                                const ComputeOpNode* inverse) {
  const std::vector<IterVar> axes = st->leaf_iter_vars;  // a copy: splits change the leaves
  auto m = tile_size_of(inverse);
  if (axes.size() != 5 || !m || c->axis.size() != 5) return false;
  // The epilogue's stages index the inverse's output at their own axes (same shape).
  for (size_t d = 0; d < 5; ++d) {
    if (as_const_int(c->shape[d]) != as_const_int(inverse->shape[d])) return false;
  }
  if (ctx.knob(st, "unroll_tile", 1, {0, 1}) == 0) return false;
  ctx.rule(st, "winograd_transform");
  Expr tile = make_const(axes[2]->var.dtype(), *m);
  auto [ty, dy] = split(st, axes[2], tile, Expr());
  auto [tx, dx] = split(st, axes[3], tile, Expr());
  auto [lane_outer, lane] = vector_lanes(st, axes[4], ctx.lanes(c->output_dtype(0)));
  std::vector<IterVar> outer = {axes[0], axes[1], ty};
  std::vector<IterVar> order = {axes[0], axes[1], ty, tx};
  if (lane_outer) order.push_back(*lane_outer);
  order.insert(order.end(), {dy, dx, lane});
  reorder(st, order);
  unroll(st, dy);
  unroll(st, dx);
  vectorize(st, lane);
  parallelize(ctx, st, outer, output_size(c));
  return true;
}

}  // namespace

bool schedule_winograd_transform(Context& ctx, const Stage& st) {
  const ComputeOpNode* c = as_compute(st->op);
  if (c == nullptr) return false;
  if (c->tag == "winograd_data_transform") return schedule_data_transform(ctx, st, c);
  const ComputeOpNode* inverse = winograd_inverse_in(ctx.sch, c);
  return inverse != nullptr && schedule_inverse_transform(ctx, st, c, inverse);
}

}  // namespace ptb::autoschedule
