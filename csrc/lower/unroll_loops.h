// Unrolls loops marked unrolled: a constant extent becomes copies of the body; an extent only
// known at run time stays a serial loop (still correct, as API.md requires).
#pragma once

#include "ir/stmt.h"

namespace ptb {

Stmt unroll_loops(const Stmt& s);

}  // namespace ptb
