// The identity of a build for the on-disk compile cache (pytvmbridge/cache.py): a canonical text
// of everything that decides the generated code, which the cache hashes with the versions.
#pragma once

#include <string>
#include <vector>

#include "lower/lowered_func.h"
#include "schedule/schedule.h"

namespace ptb {

// The lowered function (arguments, body, scalar parameters), the argument signature, the extents
// the runtime checks, the canonical target string, the name, and which occurrences of variables
// are the same variable.
std::string build_fingerprint(const Schedule& sch, const std::vector<Tensor>& args,
                              const std::string& target, const std::string& name);

// The same text from `lowered`, the result of lower(sch, args, any name): no second lowering
// (the lowered body does not depend on the function's name). The autotuner hashes the
// candidates it has lowered for its cost model's features this way.
std::string build_fingerprint(const Schedule& sch, const std::vector<Tensor>& args,
                              const LoweredFunc& lowered, const std::string& target,
                              const std::string& name);

// The computation before any schedule: every operation reachable from `args` (placeholders and
// computes: axes, reduce axes, bodies, custom reducers, tags, attributes), the argument
// signature, the canonical target string and the name, with variable identity as above. With a
// description of the schedule recipe (auto_schedule and its configuration) it identifies a build
// without scheduling or lowering, which is what makes a cache hit cheap. Empty when the
// computation holds an operation this text cannot describe completely (extern ops, scans,
// distinct operations sharing a name): the caller then keys on build_fingerprint.
std::string dag_fingerprint(const std::vector<Tensor>& args, const std::string& target,
                            const std::string& name);

}  // namespace ptb
