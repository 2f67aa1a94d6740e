// Software prefetch of the tensors a stage streams from memory: which tensors those are, and the
// request that fetches them a few KB ahead of the loop that walks them (knob "prefetch").
#pragma once

#include <cstdint>
#include <vector>

#include "autoschedule/context.h"

namespace ptb::autoschedule {

// Whether `st`, or a producer inlined into it, calls a math function (exp, erf, tanh...).
bool computes_math(const Context& ctx, const Stage& st);

// The stored tensors that `stages` read (through producers inlined into them) with at least
// `elements` elements each, those the stages produce left out: what they stream through at
// their own pace, not a broadcast bias, a statistic or a row buffer. Empty when a size is
// symbolic.
std::vector<Tensor> streamed_tensors(const Context& ctx, const std::vector<Stage>& stages,
                                     int64_t elements);

// Knob "prefetch" of `st` (default on): each tensor of `inputs` is prefetched `ahead_bytes`
// ahead on `loop`, whose `iterations` (those of the loops around it included) walk through
// each input once. Offered only when `output_bytes` and the inputs together are several MB
// (they come from memory on every call); does nothing for an empty `inputs`.
void prefetch_ahead(Context& ctx, const Stage& st, const IterVar& loop,
                    const std::vector<Tensor>& inputs, int64_t iterations, int64_t output_bytes,
                    int64_t ahead_bytes);

}  // namespace ptb::autoschedule
