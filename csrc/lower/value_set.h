// The values an integer expression of loop variables can take, from the loops' constant
// bounds: what the loop-partitioning passes (partition_loops, partition_ranges) decide their
// splits by.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "ir/expr.h"

namespace ptb {

// A loop of constant bounds: min .. min + extent - 1.
struct LoopRange {
  Expr var;
  int64_t min;
  int64_t extent;
};
using LoopRanges = std::unordered_map<const ExprNode*, LoopRange>;

// Records a loop of `var` over min .. min + extent - 1. A variable may run several loops (the
// parts a split loop leaves keep its variable): it then gets the union of their ranges, whose
// values bound every copy. (Keeping the last part's range alone once decided a comparison of a
// masked reduction false for all its copies from its tail's range.)
void add_loop_range(LoopRanges& loops, const Expr& var, int64_t min, int64_t extent);

// The values an integer expression of the enclosing loops' variables can take: a superset,
// within [lo, hi] and congruent to lo modulo step (step 0: lo only).
struct ValueSet {
  int64_t lo;
  int64_t hi;
  int64_t step;
};

// Of an expression of `loops`' variables and constants through +, -, * by a constant, widening
// casts, and // and % by a positive constant; nullopt for anything else.
std::optional<ValueSet> value_set(const Expr& e, const LoopRanges& loops);

}  // namespace ptb
