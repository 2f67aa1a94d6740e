// Facts about operations that the rules decide with: which kind of computation a stage is, which
// tensors its body reads and which axes each read depends on.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/expr.h"
#include "ir/visitor.h"  // uses_var, for the rules
#include "schedule/schedule.h"
#include "te/operation.h"

namespace ptb::autoschedule {

enum class StageKind {
  kPlaceholder,
  kInjective,  // a compute without reduction: elementwise, broadcast, pad, reshape, transpose...
  kReduction,  // a compute whose single body is a sum/prod/min/max reduction
  kOther,      // anything else (other operation kinds): left on the default schedule
};

StageKind classify(const Stage& st);

// Whether `c` is a tuple reduction whose combiner adds each value to its accumulator, from 0
// (the one-pass moments of the norms, rule_reduction.cc): reduced as plain sums are.
bool is_tuple_of_sums(const ComputeOpNode* c);

// The compute behind a stage (nullptr when it is not a compute).
const ComputeOpNode* as_compute(const Operation& op);

// The compute producing `read`'s tensor when its stage in `sch` is inlined (its body is part of
// the reader's), else nullptr.
const ComputeOpNode* inlined_producer(const Schedule& sch, const TensorRead* read);

// The Winograd inverse transform (topi/nn/winograd.py, tag "winograd_inverse_transform") that
// `c` is, or reads through stages inlined into it (its bias and activation epilogue), else
// nullptr.
const ComputeOpNode* winograd_inverse_in(const Schedule& sch, const ComputeOpNode* c);

// Elements of output `value_index` of `op`; 0 when a size is symbolic.
int64_t elements_of(const Operation& op, int value_index);

// Every tensor read in `e`, in order of appearance (repeats included).
std::vector<const TensorRead*> tensor_reads(const Expr& e);

// Whether `e` calls a math function (exp, log, erf...; a select does not count).
bool calls_math(const Expr& e);

// The constant extent of an iteration variable, if it has one.
std::optional<int64_t> const_extent(const IterVar& iv);

// Product of the constant extents (nullopt when one of them is symbolic).
std::optional<int64_t> const_product(const std::vector<IterVar>& ivs);

// Elements of a stage's output (nullopt when symbolic).
std::optional<int64_t> output_size(const ComputeOpNode* c);

// Whether two extents are the same: equal constants or the same variable.
bool same_extent(const Expr& a, const Expr& b);

}  // namespace ptb::autoschedule
