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
