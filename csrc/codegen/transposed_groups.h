// Gathers that together read a block of a matrix: in a run of stores, L loads of one buffer
// with L lanes and a common stride S (the distance between rows), whose starts are b, b + 1,
// ..., b + L - 1. Load k reads column k of the L x L block whose row r starts at b + r * S, so
// the group can read the block's L rows with contiguous loads and transpose them in registers
// instead of issuing L gathers of L elements each. A weight pack is such a run once its
// source-contiguous loops are unrolled (dense [N, K] -> [N / 16, K, 16]: load k reads
// w[16 p + lane, 16 ko + k]); a gather costs a load per lane, the block L loads and
// L log2(L) two-input shuffles. Only csrc/codegen includes this.
#pragma once

#include <vector>

#include "ir/expr.h"
#include "ir/stmt.h"

namespace ptb {

struct TransposedGroup {
  Buffer buffer;
  Expr base;    // the start of column 0 (row 0's first element)
  Expr stride;  // the distance between rows, in elements
  int lanes;    // L: rows, columns and each load's lanes
  // (load, k): the load reads column k, base + k + stride * lane (a column read twice has two)
  std::vector<std::pair<const Load*, int>> taps;
};

// The groups among `stores`, a run of statements executed one after another with nothing in
// between: each tap is the whole value of an unpredicated store of L lanes, an unpredicated
// load whose index is a ramp of L in {4, 8, 16} lanes and a stride other than a small
// constant (-4 .. 4: those have their own shuffled loads); no store of the run writes the
// loaded buffer (the group's rows are read at its first tap, before stores that come earlier
// than its later taps). Starts are compared after simplification, so a group forms where the
// strides are constants (a compact kernel) and the loops that step along a row are unrolled.
std::vector<TransposedGroup> find_transposed_groups(const std::vector<const Store*>& stores);

}  // namespace ptb
