// build(): schedule + argument list + target -> a callable Module. The one place that runs the
// whole pipeline (lower, specialise, codegen, JIT) and records the signature the runtime checks.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codegen/target.h"
#include "lower/lowered_func.h"
#include "runtime/module.h"
#include "schedule/schedule.h"

namespace ptb {

std::shared_ptr<Module> build_module(const Schedule& sch, const std::vector<Tensor>& args,
                                     const std::string& target, const std::string& name);

// The variant for strided arrays of a kernel lowered as `generic` (every stride a variable),
// with its fast path for last-axis-contiguous views (specialize_unit_stride), in a JIT of its
// own: build_module defers it to the first strided call, and a module loaded from the compile
// cache without it compiles it the same way.
std::pair<std::shared_ptr<JITModule>, KernelFn> compile_strided_variant(const LoweredFunc& generic,
                                                                        const Target& target,
                                                                        const std::string& name);

}  // namespace ptb
