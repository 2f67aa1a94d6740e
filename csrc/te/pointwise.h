// Whether a kernel is pointwise: every argument has the same shape and each output element is a
// function of the inputs' elements at its own index only (relu, a residual add, a cast, gelu;
// not a broadcast, a reduction, a transpose or anything that reads its index). Such a kernel
// computes the same thing on any memory layout its arrays share, so the runtime may run its
// compact variant on arrays that are dense in another order of their dimensions (channels_last,
// a transposed array) instead of the strided variant (runtime/module.cc).
#pragma once

#include <vector>

#include "te/operation.h"

namespace ptb {

// `args`: the kernel's arguments, inputs (placeholders) and outputs (computes) together. False
// when in doubt: an extern or scan stage, a reduction, a read at any other index, an axis used
// as a value, shapes that are not the same constants or size variables.
bool is_pointwise(const std::vector<Tensor>& args);

}  // namespace ptb
