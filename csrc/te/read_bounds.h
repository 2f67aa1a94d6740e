// The index ranges a kernel's computes read from each tensor, checked against the tensor's
// sizes: a compute that reads B[i] for i < m of a B of n elements reads past B's end when
// m > n. build() refuses such a kernel when the sizes are constants, and the runtime checks the
// others once the sizes are bound (runtime/module.cc), before anything runs.
//
// Only reads whose bounds over a box of loop ranges are exact are checked, so that a check never
// refuses a kernel that reads in bounds: indices affine in the loop variables and size variables
// (B[i + 1], B[2 * i + k]), and those built of sums, products with fixed values, divisions by
// positive constants, min and max with each loop variable once (B[i // 2 + 5], B[max(i, 8)]).
// Reads under a condition (a pad's if_then_else, a select) and any other index (a gather, a
// mod, i * i) are left alone.
#pragma once

#include <string>
#include <vector>

#include "te/operation.h"

namespace ptb {

struct ReadBound {
  std::string what;  // "compute 'D' reads 'B' in dimension 0"
  Expr lo, hi;       // the smallest and the largest index read
  Expr extent;       // the tensor's size in that dimension
  // The extents of the loops the index varies over: when one is 0 nothing is read.
  std::vector<Expr> loops;
  // Not a read: `extent` must be at least 1 where the compute has elements (argmax has no
  // index over an empty axis, take no element to clip or wrap to), `what` names it; lo and hi
  // are 0.
  bool nonempty = false;
  // Not a read either, where > 0: `extent` must be a multiple of it (a split into that many
  // equal parts, attrs["divisible_reads"]); lo and hi are 0, `loops` empty.
  int64_t divisor = 0;
};

// Every checked read of the computes reachable from `args`' outputs, and the dimensions a
// compute's attrs["nonempty_reads"] requires an element of (argmax's, take's) where they are
// size variables. A read whose
// bounds are constants and in range is left out; one that is constant and out of range is a
// ValueError naming the compute, the tensor, the dimension and both ranges.
std::vector<ReadBound> read_bounds(const std::vector<Tensor>& args);

}  // namespace ptb
