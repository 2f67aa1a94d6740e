// Resolves the schedule's prefetch() requests into prefetches of single cache lines.
//
// A request prefetch(T[0], d, c) at the top of loop v's body asks for the region of buffer T
// that iteration v + d reads, fetched into cache level c; each resolved prefetch(T[i], c) keeps
// the level. The pass finds that region from the reads of T inside the loop (their
// interval over the inner loops, which must be one contiguous stretch of constant length once
// the strides are known, so it runs on the compact specialization) and spreads its lines over
// the iterations of the loops nested inside v: a few distinct lines per iteration of the
// deepest inner loop that has no more iterations than there are lines, instead of one burst at
// the top. A burst of hundreds of misses fills
// the core's miss buffers and stalls the computation it was meant to run under; spread, the
// fetches of the next stretch (the next 36 KB slice of a convolution's weights, read from memory
// at batch 1) overlap the current one's arithmetic.
//
// Requests the pass cannot resolve (a read of T through a variable bound inside the loop, a
// gather, a region whose length is not constant) are dropped: a prefetch never changes values.
// Codegen emits nothing for a request, so the generic (strided) function, which this pass does
// not see, simply runs without prefetches.
#pragma once

#include "ir/stmt.h"

namespace ptb {

Stmt prefetch_streams(const Stmt& s);

}  // namespace ptb
