// The first lowering pass: turns a schedule into a loop nest over tensors (For, Provide,
// TensorRead, Realize), one nest per stage at root, with the nests of stages computed at a loop
// of another stage (compute_at) placed inside that loop over the region bound inference gives.
// Split/fused loops are expressed through the stage's relations, non-dividing splits and regions
// that may reach past a domain are guarded, reductions are initialised just outside their
// outermost reduce loop, and inlined stages are substituted.
#pragma once

#include <vector>

#include "ir/stmt.h"
#include "schedule/schedule.h"

namespace ptb {

// `args` are the operations bound to the function's arguments: they need no Realize.
Stmt schedule_ops(const Schedule& sch, const std::vector<Operation>& args);

}  // namespace ptb
