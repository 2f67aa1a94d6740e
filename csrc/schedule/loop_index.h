// How a stage's loops map to its root iteration variables: the extent of every iteration variable
// (root, split and fused) and the value of each root variable in terms of the leaf loop variables.
// Lowering builds the loop nest from it and bound inference reads the consumer's side of it.
#pragma once

#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/expr.h"
#include "schedule/schedule.h"

namespace ptb {

using IterVarMap = std::unordered_map<const IterVarNode*, Expr>;

struct LoopIndex {
  IterVarMap extent;
  // Root variables: absolute values (their range's min added); leaves: their own loop variable.
  // Every leaf loop runs from 0.
  IterVarMap value;
  // Conditions that keep a non-dividing split inside its parent's range, and whether each one
  // involves a reduce axis (the reduction's init must not test those).
  std::vector<Expr> guards;
  std::vector<bool> guard_on_reduce;
  // For a split's guard: the split's outer leaf and how many of its first iterations never
  // need the guard (whole inner tiles), so that lowering can run those without it. Null and
  // undefined for guards of other kinds.
  std::vector<const IterVarNode*> guard_outer;
  std::vector<Expr> guard_full_tiles;
};

// `root_ranges` holds one range per root iteration variable of the stage: its domain, or for a
// stage computed at another one, the region bound inference derived.
LoopIndex index_loops(const StageNode& stage, const std::vector<Range>& root_ranges);

// The root iteration variables' own domains.
std::vector<Range> root_domains(const StageNode& stage);

// ceil(a / b) for non-negative index expressions, folded when both are constants. Computed as
// (a - 1) // b + 1, which cannot overflow a's type (a + b - 1 can, near its limit).
Expr ceil_div(const Expr& a, const Expr& b);

// The (outer, inner) extents of a split of `parent` by a factor (inner extent) or nparts (outer
// extent), in the split's index type. A factor or nparts larger than the parent is cut to it
// (for a symbolic parent: when over 65536, at run time), so split(factor=2**40) does not run
// 2**40 mostly-guarded iterations.
std::pair<Expr, Expr> split_extents(const Expr& parent, const Expr& factor, const Expr& nparts);

// The largest value an index extent can take: its value when constant, else the largest value of
// its type (the runtime refuses sizes that do not fit their variables' types).
int64_t extent_upper_bound(const Expr& extent);

// The index type of the variables a split or fuse derives: the parent's, or int64 when their
// values (up to outer extent * inner extent - 1) could exceed int32.
DataType split_index_type(const Expr& parent_extent, DataType parent_type, const Expr& factor,
                          const Expr& nparts);
DataType fuse_index_type(const Expr& outer_extent, const Expr& inner_extent, DataType outer_type,
                         DataType inner_type);

}  // namespace ptb
