// auto_schedule: a fast schedule for any tensor-expression computation, with no search. Rules
// in the spirit of TVM's default x86 schedules, Ansor's sketch rules and Halide's
// autoschedulers, applied to the stages producer-first:
//
//   rule_inline            injective intermediates computed inside their consumers
//   rule_tiled_reduction   sums of products with reuse (matmul, conv): register-blocked
//                          micro-kernel, packed streamed operand, fused elementwise epilogue
//   rule_reduction         other reductions: vector accumulators (rfactor or reordering),
//                          unrolled windows, rfactor for parallelism
//   rule_injective         outputs and stored intermediates: vectorized, parallel
//
// Stages of other operation kinds keep the default schedule. Every decision is a knob of the
// returned configuration (config.h): giving a configuration replays or changes them.
#pragma once

#include "autoschedule/config.h"
#include "codegen/target.h"
#include "schedule/schedule.h"

namespace ptb::autoschedule {

struct Result {
  Config config;  // the point applied (the defaults, with the given values where given)
  Space space;    // the knobs the rules asked for on this path, with their candidates
};

// Schedules `sch` in place. `sch` must be unscheduled (as create_schedule made it): a stage that
// already has splits, fusions or an attachment is a ValueError naming it. `given` (may be null)
// sets knobs; a stage or knob it names that no rule asks for is a ValueError.
Result auto_schedule(const Schedule& sch, const Target& target, const Config* given);

}  // namespace ptb::autoschedule
