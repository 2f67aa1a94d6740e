// Software prefetch of the tensors a stage streams from memory: which tensors those are, and the
// request that fetches them a few KB ahead of the loop that walks them (knob "prefetch").
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "autoschedule/context.h"

namespace ptb::autoschedule {

// Data a stage streams is taken to come from memory on every call from this many bytes (the
// L2s of the cores running it hold less). Below it a software prefetch finds its lines in cache
// and only takes load slots: group_norm (1, 64, 56, 56), 1.6 MB in and out, 2 threads, ran 14.8
// -> 18.6 us with one; softmax (1, 12, 128, 128), 1.5 MB, 22.9 -> 23.6 us. From 3 MB it pays:
// GELU (4, 128, 768), 56.7 -> 54.5 us (off, on, on, off in one process, means).
constexpr int64_t kFromMemoryBytes = int64_t{3} << 20;

// Whether `st`'s operation as written, or a producer inlined into it, calls a math function
// (exp, erf, tanh...).
bool computes_math(const Context& ctx, const Stage& st);

// The stored tensors that `stages` read (through producers inlined into them) with at least
// `elements` elements each, those the stages produce left out: what they stream through at
// their own pace, not a broadcast bias, a statistic or a row buffer. Empty when a size is
// symbolic.
std::vector<Tensor> streamed_tensors(const Context& ctx, const std::vector<Stage>& stages,
                                     int64_t elements);

// Bytes of `inputs` (whole tensors) and of `output_bytes` together; nullopt when a size is
// symbolic.
std::optional<int64_t> streamed_bytes(const std::vector<Tensor>& inputs, int64_t output_bytes);

// Knob "prefetch" of `st` (default on): each tensor of `inputs` is prefetched `ahead_bytes`
// ahead on `loop`, whose `iterations` (those of the loops around it included) walk through
// each input once. Offered only when `output_bytes` and the inputs together are several MB
// (they come from memory on every call); does nothing for an empty `inputs`.
void prefetch_ahead(Context& ctx, const Stage& st, const IterVar& loop,
                    const std::vector<Tensor>& inputs, int64_t iterations, int64_t output_bytes,
                    int64_t ahead_bytes);

}  // namespace ptb::autoschedule
