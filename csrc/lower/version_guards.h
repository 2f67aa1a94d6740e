// Versions a loop's body on the guards that stay fixed while it runs. A tile over a symbolic
// extent guards each of its statements on where the tile lies: a batched product's 32 columns
// against a symbolic sequence length s test `j * 32 + 31 < s` (and its masked twin) for every
// accumulator, inside the reduction loop. The test does not change along the reduction, but a
// branch per accumulator and step keeps LLVM from holding the accumulators in registers. When a
// loop's body holds guards inside its inner loops whose conditions read no variable the body
// binds (and no memory), the body is tested once per iteration instead:
//
//   for (j, ...) { if (all the guards) { body, guards taken as true } else { body } }
//
// The first version is the one nearly every iteration runs (every tile but the last); further
// guards inside it are versioned in turn, up to a fixed number of versions per function.
// Runs after vectorize_loops (whose full-vector tests `x + 15 < s` are among the guards).
#pragma once

#include "ir/stmt.h"

namespace ptb {

Stmt version_invariant_guards(const Stmt& s);

}  // namespace ptb
