// How a stage's loops map to its root iteration variables: the extent of every iteration variable
// (root, split and fused) and the value of each root variable in terms of the leaf loop variables.
// Lowering builds the loop nest from it and bound inference reads the consumer's side of it.
#pragma once

#include <unordered_map>
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

// ceil(a / b) for non-negative index expressions, folded when both are constants.
Expr ceil_div(const Expr& a, const Expr& b);

}  // namespace ptb
