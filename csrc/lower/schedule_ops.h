// The first lowering pass: turns a schedule into a loop nest over tensors (For, Provide,
// TensorRead, Realize), one nest per stage, with split/fused loops expressed through the stage's
// relations, reductions initialised and updated, and inlined stages substituted.
#pragma once

#include <vector>

#include "ir/stmt.h"
#include "schedule/schedule.h"

namespace ptb {

// `args` are the operations bound to the function's arguments: they need no Realize.
Stmt schedule_ops(const Schedule& sch, const std::vector<Operation>& args);

}  // namespace ptb
