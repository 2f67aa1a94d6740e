// Strided loads of one buffer whose ramps differ only by a constant start (the taps of a
// stride-2 pooling window: x[2i], x[2i + 1], x[2i + 2]). Each such load alone reads the s
// contiguous vectors its lanes span and picks every s-th element; a group of them can read
// the vectors of their common span once and pick each tap from those (codegen_llvm.cc).
// Only csrc/codegen includes this.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/expr.h"

namespace ptb {

struct StridedTap {
  const Load* load;
  int64_t offset;  // the ramp's start minus the group's `base`
};

struct StridedGroup {
  Buffer buffer;
  Expr base;       // the ramps' common start, without their constant offsets
  int64_t stride;  // 1 .. max_stride (contiguous taps too: the caller decides where they pay)
  int lanes;
  std::vector<StridedTap> taps;  // two or more distinct loads, at least two distinct offsets
};

// The groups among the loads that `value` evaluates unconditionally: loads under a Select's
// operands, an if_then_else or a Let body are left out (they may be guarded or masked), as
// are predicated loads and loads of a non-constant or out-of-range stride. A load reached
// twice (a shared subexpression) is one tap.
std::vector<StridedGroup> find_strided_groups(const Expr& value, int64_t max_stride);

}  // namespace ptb
