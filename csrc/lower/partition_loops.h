// Splits the iterations of a loop whose register tile does not divide the data into a guard-free
// main part and a tail. A non-dividing split leaves a guard such as `if (x.outer * 6 + x.inner <
// 56)` on every statement of the tile; once the tile's loops are unrolled, every copy carries
// its own branch (and, in a vectorized loop, its own masked twin), which is slow to build and
// to run. For the body of a serial or parallel loop, the guards' comparisons that are affine in
// the tile's loops (unrolled or vectorized, constant bounds) are tested once for the whole tile:
//
//   if (the comparisons hold at the tile's extreme iterations) { body without them }
//   else { body with them, its guarded unrolled loops left as serial loops (one copy) }
//
// Runs before unroll_loops and vectorize_loops.
#pragma once

#include "ir/stmt.h"

namespace ptb {

Stmt partition_loops(const Stmt& s);

}  // namespace ptb
