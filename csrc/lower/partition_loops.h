// Splits the iterations of a loop whose register tile does not divide the data into a guard-free
// main part and a tail. A non-dividing split leaves a guard such as `if (oc.tile * 48 + v * 16 +
// lane < 64)` on every statement of the tile; once the tile's loops are unrolled, every copy
// carries its own branch (and, with lanes in the test, its own masked twin), which is slow to
// build and to run. For the body of a serial or parallel loop, one split's comparisons (affine
// in the tile's unrolled or vectorized loops, the same outer part `rest`) are tested once:
//
//   if (the comparisons hold at the tile's extreme iteration) { body without them }
//   else { body with each comparison at the one value of rest that fails: the last tile }
//
// In the tail a comparison reads only tile variables and constants, so unrolling leaves each
// copy either unguarded or gone (vectorize_loops drops a lane test no lane passes). Taken only
// when the tail is one value of rest, for a guard on vector lanes or one over two or more
// vector statements per position. Runs before unroll_loops and vectorize_loops.
#pragma once

#include "ir/stmt.h"

namespace ptb {

Stmt partition_loops(const Stmt& s);

}  // namespace ptb
