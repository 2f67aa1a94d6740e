// Splits a serial loop at the iterations where a comparison in its body becomes decided for
// every iteration of the loops inside it, as TVM's LoopPartition does for `likely` conditions.
// A concatenation along the vectorized axis reads
//
//   select(i * 64 + j < 768, x[..., i * 64 + j], y[..., i * 64 + j - 768])
//
// in a loop over i (0..23) around a vectorized j: every vector loads from both inputs under
// lane masks and blends. Split at i = 12, the first part reads x only and the second y only,
// with plain vector loads; a pad's border rows (`y >= 1 && y < 57`) split off the same way.
// Taken for a serial loop of constant bounds that holds a vectorized loop, for comparisons
// affine in its variable whose other terms are the inner loops' variables and constants, into
// at most four parts. Runs after partition_loops, before unroll_loops and vectorize_loops.
#pragma once

#include "ir/stmt.h"

namespace ptb {

Stmt partition_ranges(const Stmt& s);

}  // namespace ptb
