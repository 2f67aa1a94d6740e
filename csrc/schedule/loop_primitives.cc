// split, tile, fuse, reorder and the loop annotations (primitives.h).
#include <algorithm>

#include "ir/op.h"
#include "schedule/loop_index.h"
#include "schedule/primitives.h"
#include "support/error.h"

namespace ptb {

namespace {

const std::string& iv_name(const IterVar& iv) { return iv->var.as<Var>()->name; }

void check_has_loops(const Stage& stage, const char* primitive) {
  if (stage->is_placeholder()) {
    value_error(primitive, " on ", stage->describe(), ": a placeholder has no loops to schedule");
  }
}

// A split factor or nparts: a positive integer constant (the split's index type is chosen from
// it and the extent, so any value up to int64's largest is kept exactly).
int64_t positive_constant(const Stage& stage, const IterVar& axis, const Expr& value,
                          const char* what) {
  auto c = as_const_int(value);
  if (!c || !value.dtype().is_integer()) {
    value_error("split on ", stage->describe(), ", axis '", iv_name(axis), "': ", what,
                " must be a positive integer constant");
  }
  if (value.dtype().is_uint() && value.dtype().bits() == 64 && *c < 0) {
    value_error("split on ", stage->describe(), ", axis '", iv_name(axis), "': ", what, " (",
                static_cast<uint64_t>(*c), ") does not fit int64");
  }
  if (*c <= 0) {
    value_error("split on ", stage->describe(), ", axis '", iv_name(axis), "': ", what,
                " must be positive, got ", *c);
  }
  return *c;
}

// The extent an iteration variable has in the stage's default (full-domain) loops; recorded in
// the derived variables' domains for display, lowering recomputes it from the actual region.
Expr full_extent(const Stage& stage, const IterVar& iv) {
  return index_loops(*stage, root_domains(*stage)).extent.at(iv.get());
}

}  // namespace

std::pair<IterVar, IterVar> split(const Stage& stage, const IterVar& axis, const Expr& factor,
                                  const Expr& nparts) {
  check_has_loops(stage, "split");
  size_t pos = stage->leaf_position(axis, "split");
  if (factor.defined() == nparts.defined()) {
    value_error("split on ", stage->describe(), ", axis '", iv_name(axis),
                "': give exactly one of factor and nparts");
  }
  IterVarRelation rel;
  rel.kind = IterVarRelation::Kind::kSplit;
  rel.parent = axis;
  Expr extent = full_extent(stage, axis);
  int64_t c = positive_constant(stage, axis, factor.defined() ? factor : nparts,
                                factor.defined() ? "factor" : "nparts");
  // The derived loops' type: the axis's, or int64 where their index values could pass int32's
  // largest (a factor of 2**31, an extent near the limit that the factor does not divide).
  DataType t = split_index_type(extent, axis->var.dtype(),
                                factor.defined() ? make_const(DataType::Int(64), c) : Expr(),
                                factor.defined() ? Expr() : make_const(DataType::Int(64), c));
  (factor.defined() ? rel.factor : rel.nparts) = make_const(t, c);
  auto [outer_extent, inner_extent] = split_extents(cast(t, extent), rel.factor, rel.nparts);
  Expr zero = make_zero(t);
  rel.outer = make_iter_var(Range::from_min_extent(zero, outer_extent), iv_name(axis) + ".outer",
                            axis->kind, t);
  rel.inner = make_iter_var(Range::from_min_extent(zero, inner_extent), iv_name(axis) + ".inner",
                            axis->kind, t);
  stage->relations.push_back(rel);
  stage->all_iter_vars.push_back(rel.outer);
  stage->all_iter_vars.push_back(rel.inner);
  auto& leaves = stage->leaf_iter_vars;
  leaves[pos] = rel.inner;
  leaves.insert(leaves.begin() + static_cast<std::ptrdiff_t>(pos), rel.outer);
  move_attachments_to_leaves(stage);  // a stage computed at `axis` moves to `inner`, as in TVM
  return {rel.outer, rel.inner};
}

std::array<IterVar, 4> tile(const Stage& stage, const IterVar& x, const IterVar& y,
                            const Expr& x_factor, const Expr& y_factor) {
  check_has_loops(stage, "tile");
  stage->leaf_position(x, "tile");
  stage->leaf_position(y, "tile");
  if (x == y) {
    value_error("tile on ", stage->describe(), ": x and y are the same axis '", iv_name(x), "'");
  }
  // both factors checked before the first split: a bad y_factor used to leave x split, and
  // the retry was refused ("axis was already split")
  positive_constant(stage, x, x_factor, "factor");
  positive_constant(stage, y, y_factor, "factor");
  auto [xo, xi] = split(stage, x, x_factor, Expr());
  auto [yo, yi] = split(stage, y, y_factor, Expr());
  reorder(stage, {xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

IterVar fuse(const Stage& stage, const std::vector<IterVar>& axes) {
  check_has_loops(stage, "fuse");
  if (axes.empty()) {
    IterVarRelation rel;
    rel.kind = IterVarRelation::Kind::kSingleton;
    rel.fused = make_iter_var(Range::from_min_extent(make_zero(DataType::Int(32)),
                                                     make_const(DataType::Int(32), int64_t{1})),
                              "singleton", IterKind::kDataPar);
    stage->relations.push_back(rel);
    stage->all_iter_vars.push_back(rel.fused);
    stage->leaf_iter_vars.insert(stage->leaf_iter_vars.begin(), rel.fused);
    return rel.fused;
  }
  std::vector<size_t> pos;
  for (const IterVar& iv : axes) pos.push_back(stage->leaf_position(iv, "fuse"));
  for (size_t i = 1; i < axes.size(); ++i) {
    if (pos[i] != pos[i - 1] + 1) {
      value_error("fuse on ", stage->describe(), ": axes '", iv_name(axes[i - 1]), "' and '",
                  iv_name(axes[i]),
                  "' are not adjacent loops in that order (fuse takes consecutive leaves, "
                  "outermost first; reorder them first)");
    }
    if (axes[i]->kind != axes[0]->kind) {
      value_error("fuse on ", stage->describe(), ": axis '", iv_name(axes[0]), "' is a ",
                  axes[0]->kind == IterKind::kReduce ? "reduce" : "data", " axis and '",
                  iv_name(axes[i]), "' is not; a data axis and a reduce axis cannot be fused");
    }
  }
  IterVar fused = axes[0];
  for (size_t i = 1; i < axes.size(); ++i) {
    IterVarRelation rel;
    rel.kind = IterVarRelation::Kind::kFuse;
    rel.outer = fused;
    rel.inner = axes[i];
    Expr outer_extent = full_extent(stage, fused), inner_extent = full_extent(stage, axes[i]);
    // int64 where the product could pass int32's largest value (65537 x 32769, two sizes).
    DataType t =
        fuse_index_type(outer_extent, inner_extent, fused->var.dtype(), axes[i]->var.dtype());
    Expr extent = idx_mul(cast(t, outer_extent), cast(t, inner_extent));
    rel.fused = make_iter_var(Range::from_min_extent(make_zero(t), extent),
                              iv_name(fused) + "." + iv_name(axes[i]) + ".fused", fused->kind, t);
    stage->relations.push_back(rel);
    stage->all_iter_vars.push_back(rel.fused);
    auto& leaves = stage->leaf_iter_vars;
    size_t at = stage->leaf_position(fused, "fuse");
    leaves.erase(leaves.begin() + static_cast<std::ptrdiff_t>(at),
                 leaves.begin() + static_cast<std::ptrdiff_t>(at) + 2);
    leaves.insert(leaves.begin() + static_cast<std::ptrdiff_t>(at), rel.fused);
    fused = rel.fused;
  }
  move_attachments_to_leaves(stage);  // one computed at the innermost axis moves to `fused`
  return fused;
}

void reorder(const Stage& stage, const std::vector<IterVar>& axes) {
  check_has_loops(stage, "reorder");
  std::vector<size_t> pos;
  for (size_t i = 0; i < axes.size(); ++i) {
    pos.push_back(stage->leaf_position(axes[i], "reorder"));
    for (size_t j = 0; j < i; ++j) {
      if (axes[j] == axes[i]) {
        value_error("reorder on ", stage->describe(), ": axis '", iv_name(axes[i]),
                    "' is given twice");
      }
    }
  }
  // The reduction's init is emitted just outside the outermost reduce loop and loops over the
  // data axes inside it, so every order is correct: no order needs to be rejected here.
  std::vector<size_t> slots = pos;
  std::sort(slots.begin(), slots.end());
  for (size_t i = 0; i < axes.size(); ++i) stage->leaf_iter_vars[slots[i]] = axes[i];
}

void vectorize(const Stage& stage, const IterVar& axis) {
  check_has_loops(stage, "vectorize");
  stage->leaf_position(axis, "vectorize");
  stage->iter_kind[axis.get()] = ForKind::kVectorized;
}

void parallel(const Stage& stage, const IterVar& axis) {
  check_has_loops(stage, "parallel");
  stage->leaf_position(axis, "parallel");
  if (axis->kind == IterKind::kReduce) {
    value_error("parallel on ", stage->describe(), ": axis '", iv_name(axis),
                "' is a reduce axis; running its iterations in parallel would race on the "
                "accumulator. Use s.rfactor(T, axis) to make it a data axis of a new stage, "
                "then parallelise that");
  }
  stage->iter_kind[axis.get()] = ForKind::kParallel;
}

void unroll(const Stage& stage, const IterVar& axis) {
  check_has_loops(stage, "unroll");
  stage->leaf_position(axis, "unroll");
  stage->iter_kind[axis.get()] = ForKind::kUnrolled;
}

}  // namespace ptb
