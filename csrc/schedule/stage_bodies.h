// The expressions each stage evaluates once inlining is applied: reads of a stage marked
// compute_inline() are replaced by that stage's body, recursively. Lowering emits these bodies and
// bound inference reads the consumers' indices from them, so both see the same data flow.
#pragma once

#include <unordered_map>
#include <vector>

#include "ir/expr.h"
#include "schedule/schedule.h"

namespace ptb {

using StageBodies = std::unordered_map<const StageNode*, std::vector<Expr>>;

// One entry per compute stage that is not inlined; reads in it refer to origin operations.
StageBodies inline_bodies(const Schedule& sch);

// The (non-inlined) stages whose bodies read an output of `producer`.
std::vector<Stage> effective_consumers(const Schedule& sch, const StageBodies& bodies,
                                       const Stage& producer);

// Whether `consumer`'s op reads `producer` directly or through stages marked inline.
bool reads_through_inline(const Schedule& sch, const Stage& consumer, const Stage& producer);

}  // namespace ptb
