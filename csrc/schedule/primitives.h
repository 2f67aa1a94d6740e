// The schedule primitives of API.md section 2. Each one validates its request and raises a
// ValueError naming the stage and the axis when the request is illegal; a legal schedule always
// computes the same values as the default one.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "schedule/schedule.h"

namespace ptb {

// ---- loop structure (loop_primitives.cc) ----

// Splits a leaf into (outer, inner): exactly one of factor (the inner extent) and nparts (the
// outer extent) is given, a positive integer constant. A factor that does not divide the extent
// is guarded in the loop nest.
std::pair<IterVar, IterVar> split(const Stage& stage, const IterVar& axis, const Expr& factor,
                                  const Expr& nparts);
// split(x) and split(y), then reorder(xo, yo, xi, yi).
std::array<IterVar, 4> tile(const Stage& stage, const IterVar& x, const IterVar& y,
                            const Expr& x_factor, const Expr& y_factor);
// Fuses adjacent leaves, outermost first, into one loop; data and reduce axes do not mix. No
// axis: TVM's singleton, a new outermost loop of extent 1 (also on a stage without loops).
IterVar fuse(const Stage& stage, const std::vector<IterVar>& axes);
// Puts `axes` (distinct leaves) in this order in the positions they occupy.
void reorder(const Stage& stage, const std::vector<IterVar>& axes);
void vectorize(const Stage& stage, const IterVar& axis);
void parallel(const Stage& stage, const IterVar& axis);  // not a reduce axis (see rfactor)
void unroll(const Stage& stage, const IterVar& axis);

// ---- memory hints (prefetch.cc) ----

// TVM's prefetch: on each iteration of leaf `axis` of `stage`, the region of `tensor` that
// iteration + `offset` will read (in this stage or a stage computed inside `axis`) is fetched
// into cache ahead of its use, spread over the iterations of the loops inside `axis` so that
// the fetches overlap the computation. A hint: values never change, and a region lowering cannot
// describe as one contiguous stretch (a strided argument, say) is not prefetched.
// `cache_level` 2 (the default) fetches into L2: a stream from memory, used after the next
// iterations of an outer loop, which L1 could not hold until then. 1 fetches into L1: the next
// steps of an inner loop reading from L2, whose loads would otherwise wait on it (a GEMM's
// packed panel, a few hundred bytes per reduction step).
void prefetch(const Stage& stage, const Tensor& tensor, const IterVar& axis, int64_t offset,
              int cache_level = 2);
// Whether `producer` is computed (compute_at) at a loop around leaf `axis` of `stage`: its
// buffer then exists throughout that loop (a panel packed at the panel loop, read by the
// row tiles' reduction inside it), and a prefetch of it there has a region.
bool computed_around(const Stage& producer, const Stage& stage, const IterVar& axis);

// ---- where a stage is computed (attach_primitives.cc) ----

// Computes `stage` inside leaf `axis` of `target`, which must read it: on each iteration, the
// region of it that the loops inside `axis` read (bound.h).
void compute_at(const Stage& stage, const Stage& target, const IterVar& axis);
void compute_inline(const Stage& stage);  // not an output, not a reduction
// TVM's legalization of an attach axis that is no longer a loop: an axis that was split stands
// for its inner part, an axis fused as the inner operand for the fused loop (followed until
// nothing changes). An axis fused as the outer operand stays what it was (not a leaf).
IterVar attach_axis_after_rewrites(const StageNode& target, IterVar axis);
// Moves the stages computed at `target` onto the loops their axes became (after split/fuse).
void move_attachments_to_leaves(const Stage& target);
void compute_root(const Stage& stage);

// ---- data flow rewrites (cache.cc, rfactor.cc) ----

// A new stage computing `tensor`'s body into a cache; `tensor` becomes a copy of it.
Tensor cache_write(const Schedule& sch, const Tensor& tensor, const std::string& scope);
// A new stage copying `tensor`, read by `readers` instead of `tensor`.
Tensor cache_read(const Schedule& sch, const Tensor& tensor, const std::string& scope,
                  const std::vector<Operation>& readers);
// Factors the reduction `tensor` over its reduce leaf `axis`: a new stage reduces over the other
// reduce leaves with `axis` as a data axis (at position `factor_axis` of its shape), and `tensor`
// then reduces that stage's output over a new reduce axis. `tensor`'s loops are reset.
Tensor rfactor(const Schedule& sch, const Tensor& tensor, const IterVar& axis, int factor_axis = 0);

}  // namespace ptb
