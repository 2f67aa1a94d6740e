// Memory planning: intermediate buffers whose lifetimes do not overlap share one allocation.
//
// After storage flattening every realized tensor of the root stages is an Allocate around the
// rest of the function: a compiled graph held every layer's activations at once (ResNet-18 at
// batch 1: about 30 MB). The function's top-level statements run once each, in order, so a
// buffer is live from the first statement that touches it to the last. Buffers of constant size
// and the same element type are assigned, statement by statement, to storages: a buffer takes a
// storage freed by an earlier statement (the smallest that holds it, else the largest, grown),
// or a new one. Each storage becomes one Allocate; its buffers keep their names and indices and
// read and write its memory (one data variable, so one alias scope for the code generator).
#pragma once

#include <cstdint>

#include "ir/stmt.h"

namespace ptb {

struct MemoryPlanStats {
  int64_t bytes_before = 0;  // the planned buffers' sizes, summed
  int64_t bytes_after = 0;   // their storages' sizes, summed
  int buffers = 0;           // planned buffers
  int storages = 0;          // storages they share
};

// The function body with its top-level intermediate buffers sharing storages; `stats` (optional)
// receives what changed.
Stmt plan_memory(const Stmt& body, MemoryPlanStats* stats = nullptr);

}  // namespace ptb
