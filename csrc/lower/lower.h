// The lowering recipe: schedule -> loop nest over tensors -> flat buffers -> simplified,
// vectorized, unrolled loops, ready for codegen. Each step is one pass (one file).
#pragma once

#include <string>
#include <vector>

#include "lower/lowered_func.h"
#include "schedule/schedule.h"

namespace ptb {

// `args` are the tensors the function takes, in call order (placeholders and outputs).
// Throws ValueError when a tensor the schedule reads is missing from `args`, or when a symbolic
// size cannot be bound from the arguments' shapes.
LoweredFunc lower(const Schedule& sch, const std::vector<Tensor>& args, const std::string& name);

// The same recipe stopped before unrolling and vectorizing: loops still marked as such. What the
// tuner's loop features read (autoschedule/loop_features.h), in a fraction of the time a
// heavily unrolled candidate takes to lower; not for code generation.
LoweredFunc lower_structure(const Schedule& sch, const std::vector<Tensor>& args,
                            const std::string& name);

}  // namespace ptb
