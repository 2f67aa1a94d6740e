// Unrolls loops marked unrolled: a constant extent becomes copies of the body; an extent only
// known at run time stays a serial loop (still correct, as API.md requires).
#pragma once

#include <cstdint>

#include "ir/stmt.h"

namespace ptb {

// Unrolling more copies than this only bloats code; such loops stay loops.
constexpr int64_t kMaxUnrollCopies = 64;

Stmt unroll_loops(const Stmt& s);

}  // namespace ptb
