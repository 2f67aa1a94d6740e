// Rewrites loops marked vectorized into vector operations (Ramp, Broadcast, vector loads and
// stores); extents that are not a constant stay serial loops.
#pragma once

#include "ir/stmt.h"

namespace ptb {

Stmt vectorize_loops(const Stmt& s);

}  // namespace ptb
