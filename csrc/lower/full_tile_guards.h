// Drops the row guards that a loop over whole tiles of a symbolic extent makes true. A tile of
// `c` rows over `n` (symbolic) rows is lowered as two loops (schedule_ops):
//
//   for (i.outer, 0, floordiv(n, c)) { ... }          // whole tiles: the split's guard dropped
//   for (i.outer, floordiv(n, c), ...) { ... }        // the last, partial tile
//
// but stages computed inside (a register tile's accumulator, its store) carry their own guards
// `if (i.outer * c + r < n)`, one per row of the tile, which neither the simplifier (it cannot
// see that c * floordiv(n, c) <= n) nor partition_loops (constant bounds only) removes: in a
// dense layer over a dynamic batch, eight branches per step of the reduction. In the first
// loop `i.outer * c + r < n` holds for every 0 <= r < c, and is replaced by true here. Runs
// after storage_flatten's simplify, before partition_loops and unrolling.
#pragma once

#include "ir/stmt.h"

namespace ptb {

Stmt drop_full_tile_guards(const Stmt& s);

}  // namespace ptb
