// Bound inference: which part of its output each stage computes. A stage at root computes its
// whole domain; a stage computed at a loop of a consumer (compute_at) computes, on each iteration
// of that loop, the region the consumer reads in the loops nested inside it. The region is the
// interval of the consumer's read indices over those inner loops (interval.h).
#pragma once

#include <unordered_map>
#include <vector>

#include "ir/expr.h"
#include "schedule/schedule.h"
#include "schedule/stage_bodies.h"

namespace ptb {

struct StageBound {
  std::vector<Range> root_ranges;  // one per root iteration variable (axes, then reduce axes)
  // The region to allocate, one range per dimension: it covers root_ranges, and its extents
  // never depend on loop variables (passes that rewrite loops, like unrolling, substitute in
  // statements but not in buffer shapes).
  std::vector<Range> storage;
  // Conditions on the root variables keeping a stage inside its operation's domain where the
  // region its consumer reads may reach past it (a consumer split by a non-dividing factor).
  std::vector<Expr> domain_guards;
};
using BoundMap = std::unordered_map<const StageNode*, StageBound>;

// Checks every compute_at (ValueError naming the stages and the axis when one cannot be honoured)
// and infers the bounds of every compute stage that is not inlined.
BoundMap infer_bounds(const Schedule& sch, const StageBodies& bodies);

}  // namespace ptb
