#include "schedule/loop_index.h"

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
  if (ca && cb) return IntImm::make(a.dtype(), (*ca + *cb - 1) / *cb);
  if (cb && *cb == 1) return a;
  return index_floordiv(idx_sub(idx_add(a, b), make_one(b.dtype())), b);
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
  for (const IterVarRelation& rel : stage.relations) {
    if (rel.kind == IterVarRelation::Kind::kSplit) {
      Expr parent = ix.extent.at(rel.parent.get());
      if (rel.factor.defined()) {
        ix.extent[rel.outer.get()] = ceil_div(parent, rel.factor);
        ix.extent[rel.inner.get()] = rel.factor;
      } else {
        ix.extent[rel.outer.get()] = rel.nparts;
        ix.extent[rel.inner.get()] = ceil_div(parent, rel.nparts);
      }
    } else {
      ix.extent[rel.fused.get()] =
          idx_mul(ix.extent.at(rel.outer.get()), ix.extent.at(rel.inner.get()));
    }
  }
  for (const IterVar& iv : stage.leaf_iter_vars) ix.value[iv.get()] = iv->var;
  // Relations are recorded in creation order, so walking them backwards expresses every parent
  // once all of its children have values.
  for (auto it = stage.relations.rbegin(); it != stage.relations.rend(); ++it) {
    const IterVarRelation& rel = *it;
    if (rel.kind == IterVarRelation::Kind::kSplit) {
      Expr inner_extent = ix.extent.at(rel.inner.get());
      Expr v = idx_add(idx_mul(ix.value.at(rel.outer.get()), inner_extent),
                       ix.value.at(rel.inner.get()));
      ix.value[rel.parent.get()] = v;
      // The split's loops cover outer * inner >= parent iterations; the extra ones are guarded.
      Expr parent_extent = ix.extent.at(rel.parent.get());
      Expr covered = idx_mul(ix.extent.at(rel.outer.get()), inner_extent);
      if (!same_extent(covered, parent_extent)) {
        ix.guards.push_back(index_lt(v, parent_extent));
        ix.guard_on_reduce.push_back(rel.parent->kind == IterKind::kReduce);
        // outer * inner_extent + inner < parent holds for every inner whenever
        // outer < floor(parent / inner_extent).
        auto cp = as_const_int(parent_extent), ci = as_const_int(inner_extent);
        ix.guard_outer.push_back(rel.outer.get());
        ix.guard_full_tiles.push_back(cp && ci ? make_const(parent_extent.dtype(), *cp / *ci)
                                               : index_floordiv(parent_extent, inner_extent));
      }
    } else {
      Expr fused = ix.value.at(rel.fused.get());
      Expr inner_extent = ix.extent.at(rel.inner.get());
      Expr f = fused, e = inner_extent;
      widen(&f, &e);
      ix.value[rel.outer.get()] = floordiv(f, e);
      ix.value[rel.inner.get()] = floormod(f, e);
    }
  }
  for (size_t i = 0; i < root_ranges.size(); ++i) {
    const IterVar& iv = stage.root_iter_vars[i];
    ix.value[iv.get()] = idx_add(ix.value.at(iv.get()), root_ranges[i].min);
  }
  return ix;
}

}  // namespace ptb
