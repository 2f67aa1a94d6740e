// Variants of a lowered function for the strides the runtime sees most: the kernel is lowered
// once with every stride a variable, and these substitute what a call's arrays have in common.
#pragma once

#include <string>

#include "lower/lowered_func.h"

namespace ptb {

// The function specialised for compact (row-major, contiguous) arguments: every stride
// variable replaced by the product of the inner extents, which lets loads become vector loads.
LoweredFunc specialize_compact(const LoweredFunc& f, const std::string& name);

// The function for any strides (the runtime's variant for non-compact arrays), with a fast path
// for the common strided call, a view whose last axis is still contiguous (a slice of outer
// axes, one of the chunks of a fused projection, an output written into part of a bigger
// array): when every argument's last stride is 1, a copy of the body with those strides
// constant runs, whose loads and stores along the last axis are vector loads and stores, not
// gathers and scatters (a copy into a column slice, (8, 128, 768) of (8, 128, 1536): 330 us
// -> 40 us on two threads). Any other stride takes the general body.
LoweredFunc specialize_unit_stride(const LoweredFunc& f);

}  // namespace ptb
