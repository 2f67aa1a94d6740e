// The rules of the automatic scheduler, one per file. Each takes a stage the rules before it
// left at root and unscheduled, schedules it (and the stages it creates or absorbs), marks them
// settled and records its decisions as knobs (config.h).
#pragma once

#include <map>
#include <optional>
#include <unordered_set>
#include <vector>

#include "autoschedule/context.h"

namespace ptb::autoschedule {

// ---- loops.cc: shared loop shaping ----

// Fuses the first `depth` of the adjacent leaves `outer` into one parallel loop, depth being the
// knob "parallel_depth" (default: enough iterations to share among threads, none when `work`
// is too small to pay for waking them). Returns `outer` as it is afterwards. The knob belongs
// to `knob_owner` when given (a micro-kernel's epilogue: the reduction holds its knobs).
// `max_depth` (when >= 1) caps the default depth, not the knob's candidates.
std::vector<IterVar> parallelize(Context& ctx, const Stage& st, const std::vector<IterVar>& outer,
                                 std::optional<int64_t> work, const Stage& knob_owner = nullptr,
                                 int64_t max_depth = 0);

// ---- rule_inline.cc ----

// Marks injective intermediate stages inline (knob "inline"), except those in `keep`.
void inline_injective(Context& ctx, const std::unordered_set<const StageNode*>& keep);

// ---- rule_injective.cc ----

// Elementwise-like stages at root: the innermost axis split by a multiple of the vector width
// and vectorized, the outer loops fused and run in parallel.
void schedule_injective(Context& ctx, const Stage& st);

// ---- rule_winograd.cc ----

// Winograd's data transform (tag "winograd_data_transform"), or a stage holding the inverse
// transform with its epilogue: the points of each tile unrolled innermost, around the vector,
// the tiles' rows in parallel (knob "unroll_tile"). Returns false (nothing changed) for any
// other stage or knob 0.
bool schedule_winograd_transform(Context& ctx, const Stage& st);

// ---- rule_reduction.cc ----

// Reductions without data reuse (sums, means, norms' statistics, pooling windows): vectorized
// through rfactor when the reduced axis is contiguous, reduce loops moved outside a contiguous
// data axis otherwise, small windows unrolled; rfactor for parallelism when nothing else is
// parallel (the sum of a whole tensor).
// An `attached` stage (computed inside its consumer's loop, rule_row_attach.cc) runs nothing in
// parallel itself.
// Returns where a statistic the reduction reads once per output element can be computed (the
// rfactor stage's loop over that element), when the contiguous axis was reduced in lanes.
// With `row_block` > 1 (dividing st's last data axis), st's loop over output elements runs in
// blocks of that many: the reduction is computed for a block at a time (each element's chain of
// steps independent of the next one's), and the site is rf's loop over the block.
struct RowSite {
  Stage stage;
  IterVar at;
};
// `work_hint`, when given, replaces st's own work (elements times reduced size) in the parallel
// decision: a stage computed inside st's loop (an argmax's lanes, rule_tuple_reduction.cc)
// does most of it.
std::optional<RowSite> schedule_reduction(Context& ctx, const Stage& st, bool attached = false,
                                          int64_t row_block = 1,
                                          std::optional<int64_t> work_hint = std::nullopt);

// A float max (min) reduction whose compute has attrs {"nan_insensitive": 1} (topi's softmax
// and log_softmax: a NaN in a row makes every output of the row NaN through exp and the sum,
// whatever the maximum): its op is rewritten, in the schedule only, into a user reducer
// `acc > x ? acc : x` (one vmaxps; the built-in max propagates NaN at two or three times the
// instructions). Knob "plain_max". Runs before the other rules; returns whether it rewrote.
bool relax_max_nan(Context& ctx, const Stage& st);

// A sum of squared deviations whose compute has attrs {"moments": 1} (topi's layer_norm and
// group_norm variance: sum((a - m)^2), m read once per output element) and the sum of the
// same values a: both are rewritten, in the schedule only, to read one tuple of sums of
// (a - k, (a - k)^2) over the same axes, k being the first value (stage "<q>.moments",
// inserted before them; they become elementwise and are inlined): one pass over the data
// instead of two. Knob "one_pass_moments". Runs before the other rules.
bool one_pass_moments(Context& ctx, const Stage& q);

// ---- rule_tuple_reduction.cc ----

// A tuple reduction with a user-defined (te.comm_reducer) combiner (argmax's index and
// value; single-value ones classify as reductions): scheduled as schedule_reduction schedules
// the built-in ones (knob "tuple_reduction"). Returns false (nothing changed) for symbolic
// sizes or knob 0, or when `st` is not one.
// A tuple reduction over the last axis of another one ("lane steps": topi's argmax, per lane
// of a row a running (step, value) over the row's steps of that many elements, then the
// lanes) computes that producer per row inside its own loop, the lanes vectorized and the
// steps outside them (rule "reduction_lane_steps").
bool schedule_tuple_reduction(Context& ctx, const Stage& st);

// ---- rule_row_attach.cc ----

// An elementwise stage that reads reductions once per row (softmax, layer_norm, a mean): those
// reductions (not the `tiled` ones) are computed inside its parallel loop over rows, their
// loops vectorized as schedule_reduction does. Returns false (nothing changed) when there are
// none or the knob "attach_rows" is 0.
bool schedule_row_group(Context& ctx, const Stage& out,
                        const std::unordered_set<const StageNode*>& tiled);

// An elementwise intermediate that calls a math function and is read by an elementwise stage
// that stays stored (an output, or a stage in `keep`) and by reductions that stage reads once
// per row (softmax's exponentials, read by the sum and by the output): it is kept stored, not
// inlined, so that schedule_row_group computes it once per row into a row buffer instead of
// each reader computing the exponential again.
bool row_buffer(Context& ctx, const Stage& st, const std::unordered_set<const StageNode*>& keep);

// A separable max pool's column maxima (TOPI's tag "injective,window_rows"): an injective stage
// read only by one injective stage, at that reader's own axes but the last. It is kept stored
// (not inlined) and computed once per output row into a row buffer inside the reader's loop
// (schedule_reduction_rows, rule "window_rows").
bool window_rows_buffer(Context& ctx, const Stage& st);

// A reduction that reads other reductions once per output element at its own axes (argmax's
// maximum, read by the search for its first index): scheduled here, with those statistics
// computed inside its loop over output elements (one pass over each row instead of two).
// Returns false (nothing changed) when there are none, the knob "attach_rows" is 0 or the
// reduction's schedule has no loop per output element. An injective `st` that reads a
// window_rows_buffer is scheduled here as well, with that buffer attached at its row loop.
bool schedule_reduction_rows(Context& ctx, const Stage& st,
                             const std::unordered_set<const StageNode*>& tiled);

// ---- rule_tiled_reduction.cc ----

// A sum of products with data reuse (matmul, batch matmul, convolution): which output axis is
// vectorized, which one is register-blocked, and which operand is streamed along the vector axis.
struct TiledPlan {
  int vector_axis = -1;                  // index into the compute's axes
  int row_axis = -1;                     // -1: none
  const TensorRead* streamed = nullptr;  // the read that depends on the vector axis
  int streamed_dim = -1;         // its dimension indexed by exactly the vector axis (-1: none)
  std::optional<int64_t> reuse;  // how often each streamed element is used (nullopt: symbolic)
  // The streamed operand is already in panels of this many elements along the vector axis (read
  // as [v // w, ..., v % w], a dense_pack weight); 0: not.
  int64_t panel_width = 0;
};
std::optional<TiledPlan> plan_tiled(Context& ctx, const Stage& st);
// The single consumer that can take a reduction's output as its epilogue: injective, at root,
// same shape, reading the reduction only at its own axes, in order (nullptr: none).
Stage fusable_epilogue(Context& ctx, const Stage& st);
// Register-blocked micro-kernel: packing of the streamed operand, the output (or its single
// elementwise consumer: bias, batch norm, residual add, activation) tiled by rows x vectors,
// the reduction computed per tile into a block that stays in registers.
void schedule_tiled(Context& ctx, const Stage& st, const TiledPlan& plan);

// ---- pack_operand.cc ----

// Copies tensor `read->op` into panels [ceil(n / width), other dims..., width] where n is its
// dimension `dim`, and makes `st` read the panels instead (reads indexed by exactly `axis` in
// that dimension). Returns the packing stage, at root and unscheduled, keyed `st`'s key + suffix.
Stage pack_operand(Context& ctx, const Stage& st, const TensorRead* read, int dim,
                   const IterVar& axis, int64_t width, const std::string& suffix = ".packed");

// A pack whose source is not contiguous along the packed dimension (a weight [O, C, kh, kw] or
// [N, K] packed along O or N) reads each vector with a gather. Unrolls the pack's innermost
// loops, which step along the source's rows, into runs of `lanes` consecutive elements (at
// most kMaxTransposedTaps), and splits a lane loop wider than `lanes`, so that codegen reads
// each lanes x lanes block with contiguous row loads and a transpose in registers
// (codegen/transposed_groups.h) instead of `lanes` gathers. Leaves the pack as it is where the
// loops cannot give a whole run. `source_dims` is the source's rank.
void unroll_for_transposed_reads(const Stage& pack, int dim, size_t source_dims, int64_t lanes);

// ---- block_cache.cc ----

// cache_write of `st` into a new stage whose axes are st's in the order `perm`; `st` becomes a
// copy out of it. Returns the new stage (at root, unscheduled). `padded` (axis of st -> extent)
// widens axes of the block past st's: a last partial tile then computes whole (on operands
// padded as far) with no guard in its loops, and only the copy out is guarded.
Stage block_cache(Context& ctx, const Stage& st, const std::vector<int>& perm,
                  const std::map<int, Expr>& padded = {});

}  // namespace ptb::autoschedule
