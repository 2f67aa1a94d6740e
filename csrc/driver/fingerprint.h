// The identity of a build for the on-disk compile cache (pytvmbridge/cache.py): a canonical text
// of everything that decides the generated code, which the cache hashes with the versions.
#pragma once

#include <string>
#include <vector>

#include "schedule/schedule.h"

namespace ptb {

// The lowered function (arguments, body, scalar parameters), the argument signature, the extents
// the runtime checks, the canonical target string, the name, and which occurrences of variables
// are the same variable.
std::string build_fingerprint(const Schedule& sch, const std::vector<Tensor>& args,
                              const std::string& target, const std::string& name);

}  // namespace ptb
