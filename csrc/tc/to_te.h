// The translation of a checked TC def into te operations: one compute stage per statement (two
// for a reduction that updates values written earlier), sharing the schedule, lowering and
// codegen of every other front end.
//
// Semantics of statements writing a tensor O that earlier statements already wrote: every
// statement produces a new stage of O over O's whole shape, and later reads see the newest one.
//   O(i) = e           the stage is e inside the statement's ranges, O's previous value outside.
//   O(i) +=! e         a fresh reduction: identity, then accumulate e (likewise *=! min=! max=!).
//   O(i) += e          accumulates e into O's previous value. TC's outputs are always fresh
//                      here, so on the first write of O it is the same as +=!.
// The shape of O is set by its first write. Elements that no statement writes are 0.
#pragma once

#include "tc/error.h"
#include "tc/function.h"
#include "tc/sema.h"

namespace ptb::tc {

// Infers ranges and types and builds the stages; throws TCError pointing at the culprit.
TcFunction to_te(const SourceText& source, const DefInfo& def);

}  // namespace ptb::tc
