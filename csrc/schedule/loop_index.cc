#include "schedule/loop_index.h"

#include <algorithm>
#include <limits>

#include "ir/op.h"
#include "schedule/interval.h"
#include "support/error.h"

namespace ptb {

namespace {

// Index expressions of different integer widths (an int64 size, an int32 factor) in the wider.
void widen(Expr* a, Expr* b) {
  if (a->dtype().bits() < b->dtype().bits()) *a = cast(b->dtype(), *a);
  if (b->dtype().bits() < a->dtype().bits()) *b = cast(a->dtype(), *b);
}

Expr index_lt(Expr a, Expr b) {
  widen(&a, &b);
  return LT::make(a, b);
}

Expr index_floordiv(Expr a, Expr b) {
  widen(&a, &b);
  return floordiv(a, b);
}

bool same_extent(const Expr& a, const Expr& b) {
  auto ca = as_const_int(a), cb = as_const_int(b);
  if (ca && cb) return *ca == *cb;
  return structurally_equal(a, b);
}

}  // namespace

Expr ceil_div(const Expr& a, const Expr& b) {
  auto ca = as_const_int(a), cb = as_const_int(b);
  if (ca && cb) return IntImm::make(a.dtype(), *ca == 0 ? 0 : (*ca - 1) / *cb + 1);
  if (cb && *cb == 1) return a;
  // For a = 0, floor(-1 / b) + 1 = 0.
  return idx_add(index_floordiv(idx_sub(a, make_one(a.dtype())), b), make_one(a.dtype()));
}

std::pair<Expr, Expr> split_extents(const Expr& parent, const Expr& factor, const Expr& nparts) {
  // Loops longer than this are never vectorized or unrolled, so their extent need not stay a
  // constant: a larger factor over a symbolic parent is cut to the parent at run time.
  constexpr int64_t kLongLoop = 1 << 16;
  auto cp = as_const_int(parent);
  // A factor or nparts larger than the parent covers it in one tile / one part per element:
  // cut to the parent, or a small array would run 2**31 mostly-guarded iterations.
  auto cut = [&](const Expr& c) {
    int64_t v = *as_const_int(c);
    if (cp) return v > *cp ? parent : c;
    return v > kLongLoop ? idx_min(parent, c) : c;
  };
  if (factor.defined()) return {ceil_div(parent, factor), cut(factor)};
  return {cut(nparts), ceil_div(parent, nparts)};
}

int64_t extent_upper_bound(const Expr& extent) {
  if (auto c = as_const_int(extent)) return *c;
  return extent.dtype().bits() >= 64 ? std::numeric_limits<int64_t>::max()
                                     : std::numeric_limits<int32_t>::max();
}

DataType split_index_type(const Expr& parent_extent, DataType parent_type, const Expr& factor,
                          const Expr& nparts) {
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  if (parent_type.bits() >= 64) return parent_type;
  int64_t c = *as_const_int(factor.defined() ? factor : nparts);
  if (c > kInt32Max) return DataType::Int(64);
  // Both at most 2**31 - 1 from here on: the products below fit int64.
  int64_t e = std::min(extent_upper_bound(parent_extent), kInt32Max);
  if (e <= 0) return parent_type;
  // outer extent * inner extent: the index values the split's loops produce, guarded or not.
  int64_t covered =
      factor.defined() ? (c >= e ? e : (e + c - 1) / c * c) : std::min(c, e) * ((e + c - 1) / c);
  return covered - 1 > kInt32Max ? DataType::Int(64) : parent_type;
}

DataType fuse_index_type(const Expr& outer_extent, const Expr& inner_extent, DataType outer_type,
                         DataType inner_type) {
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  if (outer_type.bits() >= 64 || inner_type.bits() >= 64) return DataType::Int(64);
  int64_t o = std::min(extent_upper_bound(outer_extent), kInt32Max);
  int64_t i = std::min(extent_upper_bound(inner_extent), kInt32Max);
  return o * i - 1 > kInt32Max ? DataType::Int(64) : kIndexType;
}

std::vector<Range> root_domains(const StageNode& stage) {
  std::vector<Range> out;
  for (const IterVar& iv : stage.root_iter_vars) out.push_back(iv->dom);
  return out;
}

LoopIndex index_loops(const StageNode& stage, const std::vector<Range>& root_ranges) {
  PTB_ICHECK(root_ranges.size() == stage.root_iter_vars.size(), "one range per root variable");
  LoopIndex ix;
  for (size_t i = 0; i < root_ranges.size(); ++i) {
    ix.extent[stage.root_iter_vars[i].get()] = root_ranges[i].extent;
  }
  // Each relation's extents and values are computed in its derived variables' type, which
  // split_index_type / fuse_index_type chose wide enough for them.
  for (const IterVarRelation& rel : stage.relations) {
    if (rel.kind == IterVarRelation::Kind::kSplit) {
      DataType t = rel.outer->var.dtype();
      Expr parent = cast(t, ix.extent.at(rel.parent.get()));
      auto [outer, inner] = split_extents(parent, rel.factor, rel.nparts);
      ix.extent[rel.outer.get()] = outer;
      ix.extent[rel.inner.get()] = inner;
    } else if (rel.kind == IterVarRelation::Kind::kSingleton) {
      ix.extent[rel.fused.get()] = rel.fused->dom.extent;
    } else {
      DataType t = rel.fused->var.dtype();
      ix.extent[rel.fused.get()] =
          idx_mul(cast(t, ix.extent.at(rel.outer.get())), cast(t, ix.extent.at(rel.inner.get())));
    }
  }
  for (const IterVar& iv : stage.leaf_iter_vars) ix.value[iv.get()] = iv->var;
  // Relations are recorded in creation order, so walking them backwards expresses every parent
  // once all of its children have values.
  for (auto it = stage.relations.rbegin(); it != stage.relations.rend(); ++it) {
    const IterVarRelation& rel = *it;
    if (rel.kind == IterVarRelation::Kind::kSplit) {
      DataType t = rel.outer->var.dtype();
      Expr inner_extent = ix.extent.at(rel.inner.get());
      Expr v = idx_add(idx_mul(ix.value.at(rel.outer.get()), inner_extent),
                       ix.value.at(rel.inner.get()));
      // In the parent's own type: exact wherever the guard below holds.
      ix.value[rel.parent.get()] = cast(rel.parent->var.dtype(), v);
      // The split's loops cover outer * inner >= parent iterations; the extra ones are guarded.
      Expr parent_extent = cast(t, ix.extent.at(rel.parent.get()));
      Expr covered = idx_mul(ix.extent.at(rel.outer.get()), inner_extent);
      if (!same_extent(covered, parent_extent)) {
        ix.guards.push_back(index_lt(v, parent_extent));
        ix.guard_on_reduce.push_back(rel.parent->kind == IterKind::kReduce);
        // outer * inner_extent + inner < parent holds for every inner whenever
        // outer < floor(parent / inner_extent).
        auto cp = as_const_int(parent_extent), ci = as_const_int(inner_extent);
        ix.guard_outer.push_back(rel.outer.get());
        ix.guard_full_tiles.push_back(cp && ci ? make_const(t, *cp / *ci)
                                               : index_floordiv(parent_extent, inner_extent));
      }
    } else if (rel.kind == IterVarRelation::Kind::kFuse) {
      DataType t = rel.fused->var.dtype();
      Expr fused = ix.value.at(rel.fused.get());
      Expr inner_extent = cast(t, ix.extent.at(rel.inner.get()));
      ix.value[rel.outer.get()] = cast(rel.outer->var.dtype(), floordiv(fused, inner_extent));
      ix.value[rel.inner.get()] = cast(rel.inner->var.dtype(), floormod(fused, inner_extent));
    }
  }
  for (size_t i = 0; i < root_ranges.size(); ++i) {
    const IterVar& iv = stage.root_iter_vars[i];
    ix.value[iv.get()] = cast(iv->var.dtype(), idx_add(ix.value.at(iv.get()), root_ranges[i].min));
  }
  return ix;
}

}  // namespace ptb
