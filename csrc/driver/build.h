// build(): schedule + argument list + target -> a callable Module. The one place that runs the
// whole pipeline (lower, specialise, codegen, JIT) and records the signature the runtime checks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/module.h"
#include "schedule/schedule.h"

namespace ptb {

std::shared_ptr<Module> build_module(const Schedule& sch, const std::vector<Tensor>& args,
                                     const std::string& target, const std::string& name);

}  // namespace ptb
