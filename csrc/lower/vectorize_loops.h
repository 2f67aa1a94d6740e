// Rewrites loops marked vectorized into vector operations: the loop variable becomes a Ramp,
// loop-invariant values are Broadcast, loads and stores take vector indices (a stride-1 Ramp is
// a contiguous access, anything else a gather/scatter), and conditions that depend on the loop
// variable become lane masks (predicated loads and stores).
//
// A loop of constant extent runs in chunks of min(extent, 512 bits / element width) lanes, with
// a narrower vector for what remains. A loop that cannot be vectorized (a non-constant extent, a
// store to an address that does not depend on the vector variable, as in a reduction over it, a
// read-modify-write inside an inner loop that revisits lanes, an allocation or a parallel loop
// inside) stays a serial loop: always correct.
#pragma once

#include "ir/stmt.h"

namespace ptb {

Stmt vectorize_loops(const Stmt& s);

}  // namespace ptb
