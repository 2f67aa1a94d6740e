// Loops around a packed function call (an extern stage computed at a loop) run serially.
//
// The functions registered from Python run under the GIL, one at a time anyway, and a small
// kernel is called with the GIL held (python/bind_bridges.cc): a pool worker calling back into
// Python would then wait forever for the calling thread. A vector loop cannot hold a call either.
#pragma once

#include "ir/stmt.h"

namespace ptb {

Stmt serialize_packed_calls(const Stmt& s);

}  // namespace ptb
