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

#include <cstdint>

#include "ir/stmt.h"

namespace ptb {

// Widest vector emitted per operation; LLVM splits it into native registers (two 256-bit
// halves on AVX2, one register on AVX-512).
constexpr int kVectorBits = 512;
// Up to this many chunks are emitted one after the other rather than as a loop, so that a short
// vectorized loop (an unrolled register tile) leaves no loop control behind.
constexpr int64_t kMaxInlineVectorChunks = 4;

// The widest element a loop body moves through memory, in bits (32 if it moves none): a
// vectorized loop runs in chunks of kVectorBits / this many lanes.
int vector_element_bits(const Stmt& body);

Stmt vectorize_loops(const Stmt& s);

}  // namespace ptb
