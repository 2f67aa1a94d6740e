// Injective stages at root (outputs, and intermediates kept stored): vectorize the innermost
// axis (the output is row-major, so its innermost axis is the contiguous one), run the outer
// loops in parallel.
#include <algorithm>
#include <optional>

#include "autoschedule/analysis.h"
#include "autoschedule/rules.h"
#include "autoschedule/stream_prefetch.h"
#include "ir/op.h"
#include "schedule/primitives.h"

namespace ptb::autoschedule {

namespace {

// How far ahead a math-heavy stage prefetches the tensors it streams (prefetch_inputs).
constexpr int64_t kStreamPrefetchBytes = int64_t{2} << 10;

// Whether `c`, with the producers inlined into it, is TOPI's elementwise or broadcast
// arithmetic (by tag): every read streams along the innermost axis or repeats one value, and no
// math function is called.
bool streaming_arithmetic(const Context& ctx, const ComputeOpNode* c) {
  if (c->tag != "elemwise" && c->tag != "broadcast") return false;
  for (const Expr& body : c->body) {
    if (calls_math(body)) return false;
    for (const TensorRead* read : tensor_reads(body)) {
      const ComputeOpNode* pc = inlined_producer(ctx.sch, read);
      if (pc != nullptr && !streaming_arithmetic(ctx, pc)) return false;
    }
  }
  return true;
}

// The largest tensor `c` reads, in elements, looking through producers inlined into it (an
// injective window sum over an inlined pad reads the input); 0 when a size is symbolic.
int64_t largest_read(const Context& ctx, const ComputeOpNode* c, int depth) {
  int64_t most = 0;
  for (const Expr& body : c->body) {
    for (const TensorRead* read : tensor_reads(body)) {
      const ComputeOpNode* pc = inlined_producer(ctx.sch, read);
      if (pc != nullptr && depth < 8) {
        most = std::max(most, largest_read(ctx, pc, depth + 1));
        continue;
      }
      most = std::max(most, elements_of(read->op, read->value_index));
    }
  }
  return most;
}

// Elements the stage streams through, for the decision to run it in parallel: its output, or
// more where it reads a larger tensor (a strided slice reads every other row of an input four
// times its size, and the prefetchers fetch most of the rows between; a pool's window sum
// reads its input through the inlined sum), counted up to four times the output (a gather
// reads only the rows it selects of a large table). nullopt when the output's size is
// symbolic.
std::optional<int64_t> streamed_size(const Context& ctx, const ComputeOpNode* c) {
  auto size = output_size(c);
  if (!size) return size;
  return std::max(*size, std::min(largest_read(ctx, c, 0), 4 * *size));
}

// Whether `read` indexes the last two dimensions of its tensor with exactly the variables `h`
// and `w` of the stage's last two axes, over dimensions of the same extents as the stage's
// (`eh`, `ew`), or does not use `h` and `w` at all (a per-channel parameter).
bool rows_read_alike(const TensorRead* read, const Expr& h, const Expr& w, int64_t eh, int64_t ew) {
  const std::vector<Expr>& idx = read->indices;
  bool uses = std::any_of(idx.begin(), idx.end(),
                          [&](const Expr& e) { return uses_var(e, h) || uses_var(e, w); });
  if (!uses) return true;
  size_t n = idx.size();
  const std::vector<Expr>& shape = read->op->output_shape(read->value_index);
  if (n < 2 || !idx[n - 2].same_as(h) || !idx[n - 1].same_as(w)) return false;
  for (size_t d = 0; d + 2 < n; ++d) {
    if (uses_var(idx[d], h) || uses_var(idx[d], w)) return false;
  }
  return as_const_int(shape[n - 2]) == eh && as_const_int(shape[n - 1]) == ew;
}

// Knob "fuse_rows": the stage's last two axes fused into its vector axis when the last is a
// short row that whole vectors do not divide (a 56-wide image row: three vectors and a half,
// every other one across cache lines) and the two together are whole vectors, provided every
// read indexes them as the output does (or not at all), so that each vector of the fused axis
// is one contiguous, aligned run of every operand. The same fusion as the row groups'
// (rule_row_attach.cc). batch_norm (1, 64, 56, 56), rows and fused compiled twice each in one
// process (rows, fused, fused, rows), against a copy of the same bytes: 2 threads 0.85 -> 0.91
// of the copy (13.1 -> 12.3 us), one thread 0.96 -> 1.01; (8, 64, 56, 56) level.
bool rows_fuse(Context& ctx, const Stage& st, const ComputeOpNode* c, int64_t lanes) {
  const std::vector<IterVar>& leaves = st->leaf_iter_vars;
  size_t n = c->axis.size();
  if (n < 2 || leaves.size() < 2 || leaves[leaves.size() - 2] != c->axis[n - 2] ||
      leaves.back() != c->axis[n - 1]) {
    return false;
  }
  auto eh = const_extent(c->axis[n - 2]), ew = const_extent(c->axis[n - 1]);
  if (!eh || !ew || *ew % lanes == 0 || *ew > 4 * lanes || (*eh * *ew) % lanes != 0) {
    return false;
  }
  Expr h = c->axis[n - 2]->var, w = c->axis[n - 1]->var;
  for (const Expr& body : c->body) {
    for (const TensorRead* read : tensor_reads(body)) {
      // An inlined producer's reads are in its own axes: not followed, the rows stay apart.
      if (inlined_producer(ctx.sch, read) != nullptr) return false;
      if (!rows_read_alike(read, h, w, *eh, *ew)) return false;
    }
  }
  return ctx.knob(st, "fuse_rows", 1, {0, 1}) == 1;
}

// A stage that computes math functions on data streamed from memory prefetches its inputs
// kStreamPrefetchBytes ahead, on the loop around the vector loop (knob "prefetch"). Its
// instructions (exact GELU: 21 per vector of 16 floats) take about as long as the memory
// traffic, and the hardware prefetchers alone do not keep enough lines in flight for the two to
// overlap. (8, 128, 768) float32, 2 threads, off and on compiled twice each in one process
// (off, on, on, off: the variant timed right after PyTorch's copy pays for its spinning OpenMP
// workers) and timed in rotating rounds against a copy of the same bytes: GELU 0.95 -> 1.07 of
// the copy, tanh GELU 0.94 -> 1.06, SiLU 0.94 -> 1.07, sigmoid 0.97 -> 1.07, tanh 0.97 -> 1.05,
// exp 1.09 -> 1.15. ReLU, whose few instructions keep up with memory, ran 4% slower with it,
// and data that stays in L2 (batch 1, 786 KB) gains nothing: both are left alone.
void prefetch_inputs(Context& ctx, const Stage& st, const std::vector<IterVar>& outer) {
  const ComputeOpNode* c = as_compute(st->op);
  auto size = output_size(c);
  auto iterations = const_product(outer);
  if (!size || !iterations || *iterations <= 0 || !computes_math(ctx, st)) return;
  prefetch_ahead(ctx, st, outer.back(), streamed_tensors(ctx, {st}, *size), *iterations,
                 *size * c->output_dtype(0).bytes(), kStreamPrefetchBytes);
}

// Knob "transpose_block": a copy (the body is one read of a stored tensor) whose vector axis
// steps along a dimension of its source other than the last, while another of its axes steps
// along the source's last (a transpose, a permute that moves the last axis, NCHW -> NHWC or
// NCHW16c). As vectorized, each vector is a gather of `lanes` elements a row apart; tiled in blocks
// of `lanes` x `lanes`, the block's rows one unrolled loop and its columns the vector, each block
// is `lanes` stores whose loads codegen reads as the block's rows, transposed in registers
// (codegen/transposed_groups.h). Both extents must be multiples of the block (16 lanes, or 8).
// 2 threads, float32, PyTorch's `copy_(x.permute(...))` in the same process: 1024 x 1024
// transposed 1.78 -> 0.13 ms (PyTorch 0.70-1.03), (8, 128, 768) -> (0, 2, 1) 0.39 -> 0.05 ms
// (0.33-0.41), (1, 64, 56, 56) -> NHWC in blocks of 8, 0.042 -> 0.013 ms (0.07-0.11).
bool transpose_blocks(Context& ctx, const Stage& st, const ComputeOpNode* c, int64_t lanes) {
  if (c->body.size() != 1) return false;
  const auto* read = c->body[0].as<TensorRead>();
  const std::vector<IterVar>& leaves = st->leaf_iter_vars;
  if (!read || inlined_producer(ctx.sch, read) != nullptr || read->indices.size() < 2 ||
      leaves.size() < 2 || leaves.size() != c->axis.size()) {
    return false;
  }
  IterVar vec = leaves.back();
  int row = -1;
  for (size_t i = 0; i + 1 < leaves.size(); ++i) {
    if (read->indices.back().same_as(leaves[i]->var)) row = static_cast<int>(i);
  }
  if (row < 0) return false;
  // The vector axis in one other dimension, alone or plus an offset (a channel block's
  // `16 cb + ci`: NCHW -> NCHW16c).
  auto steps_with_vector = [&](const Expr& e) {
    if (e.same_as(vec->var)) return true;
    const auto* add = e.as<Add>();
    return add && ((add->a.same_as(vec->var) && !uses_var(add->b, vec->var)) ||
                   (add->b.same_as(vec->var) && !uses_var(add->a, vec->var)));
  };
  bool strided = false;
  for (size_t d = 0; d + 1 < read->indices.size(); ++d) {
    if (!strided && steps_with_vector(read->indices[d])) {
      strided = true;
    } else if (uses_var(read->indices[d], vec->var)) {
      return false;
    }
  }
  auto ev = const_extent(vec), er = const_extent(leaves[row]);
  if (!strided || !ev || !er) return false;
  int64_t block = 0;
  for (int64_t b : {lanes, lanes / 2}) {
    if (b >= 4 && b <= 16 && *ev % b == 0 && *er % b == 0) {
      block = b;
      break;
    }
  }
  if (block == 0) return false;
  // The blocks' order (knob value 1 or 2). 2: along the source's rows, so the loads stream
  // through `block` source rows while the stores cut across the output's rows, one line per
  // row; faster in 10 of 13 shapes measured (below). 1: along the output's rows (the stores
  // stream, the loads cut across), where the output's rows are a multiple of 4 KB apart: the
  // stores of a block then fall into one cache set (1024 x 1024: 0.14 against 0.34 ms; 2048 x
  // 256 0.07 against 0.18), though 1024 x 768 (4 KB output rows) ran 0.12 against 0.10.
  // Order 2 against 1, same process: (8, 128, 768) -> (0, 2, 1) 0.054 against 0.095 ms, (8,
  // 64, 56, 56) -> NHWC 0.25 against 0.47, 1008 x 1008 0.075 against 0.165.
  std::optional<int64_t> row_bytes = c->output_dtype(0).bytes();
  for (size_t k = static_cast<size_t>(row) + 1; k < c->axis.size() && row_bytes; ++k) {
    auto e = const_extent(c->axis[k]);
    row_bytes = e ? std::optional<int64_t>(*row_bytes * *e) : std::nullopt;
  }
  int64_t order_default = row_bytes && *row_bytes % 4096 == 0 ? 1 : 2;
  int64_t mode = ctx.knob(st, "transpose_block", order_default, {0, 1, 2});
  if (mode == 0) return false;
  IterVar row_axis = leaves[row];
  std::vector<IterVar> outer;
  for (const IterVar& leaf : leaves) {
    if (leaf != row_axis && leaf != vec) outer.push_back(leaf);
  }
  auto [ro, ri] = split(st, row_axis, make_const(row_axis->var.dtype(), block), Expr());
  auto [vo, vi] = split(st, vec, make_const(vec->var.dtype(), block), Expr());
  if (mode == 1) {
    outer.push_back(ro);
    outer.push_back(vo);
  } else {
    outer.push_back(vo);
    outer.push_back(ro);
  }
  std::vector<IterVar> order = outer;
  order.push_back(ri);
  order.push_back(vi);
  reorder(st, order);
  unroll(st, ri);
  vectorize(st, vi);
  parallelize(ctx, st, outer, streamed_size(ctx, c));
  return true;
}

}  // namespace

void schedule_injective(Context& ctx, const Stage& st) {
  ctx.rule(st, "injective");
  const ComputeOpNode* c = as_compute(st->op);
  std::vector<IterVar> axes = st->leaf_iter_vars;
  if (axes.empty()) return;
  int64_t lanes = ctx.lanes(c->output_dtype(0));
  // Trailing axes of extent one (a pooled (n, c, 1, 1) output) move outside the last axis that
  // iterates, which becomes the vector axis: left innermost they hide the contiguous axis, LLVM
  // then vectorizes and fully unrolls the whole nest itself (thousands of instructions, slow to
  // compile).
  size_t units = 0;
  while (units + 1 < axes.size() && const_extent(axes[axes.size() - 1 - units]) == 1) ++units;
  if (units > 0 && const_extent(axes[axes.size() - 1 - units]) != 1) {
    std::vector<IterVar> order(axes.begin(), axes.end() - static_cast<int64_t>(units) - 1);
    order.insert(order.end(), axes.end() - static_cast<int64_t>(units), axes.end());
    order.push_back(axes[axes.size() - 1 - units]);
    reorder(st, order);
    axes = order;
  }
  if (units == 0 && transpose_blocks(ctx, st, c, lanes)) return;
  if (units == 0 && rows_fuse(ctx, st, c, lanes)) {
    IterVar fused = fuse(st, std::vector<IterVar>{axes[axes.size() - 2], axes.back()});
    axes.pop_back();
    axes.back() = fused;
  }
  IterVar inner = axes.back();
  std::vector<IterVar> outer(axes.begin(), axes.end() - 1);
  auto extent = const_extent(inner);

  // Factor of the innermost split: the widest multiple of the vector width (up to four
  // registers, so each iteration issues several independent loads) that divides the extent;
  // 0 leaves the axis whole.
  std::vector<int64_t> factors = {lanes, 2 * lanes, 4 * lanes};
  int64_t factor = 4 * lanes;
  if (extent) {
    factor = 0;
    for (int64_t f : {4 * lanes, 2 * lanes, lanes}) {
      if (*extent % f == 0 && *extent > f) {
        factor = f;
        break;
      }
    }
    if (factor == 0 && *extent > 4 * lanes) factor = 4 * lanes;
  }
  // A nest too small to run in parallel stays one serial loop nest of constant trip counts,
  // which LLVM unrolls completely: one vector per iteration keeps that code (and its compile
  // time: 100 ms for a (8, 768) mean's division at four vectors) small.
  auto size = streamed_size(ctx, c);
  bool serial = size && *size < kMinParallelWork;
  if (serial && factor > lanes && extent && *extent % lanes == 0) factor = lanes;
  // With 512-bit registers, elementwise and broadcast arithmetic (no math calls, whose inline
  // forms want whole 512-bit registers) takes half-width vectors: with the data in L2, one
  // thread, (1, 128, 768) float32: relu 9.3 -> 8.4 us, add 11.8 -> 9.9 us, clip 9.3 -> 8.6 us (a
  // copy 8.9 us); from memory both widths run at the same speed ((8, 128, 768), 2 threads, each
  // width compiled twice in one process and timed in rotating rounds: relu, bias add, clip and
  // broadcast_to within 0-3%). Not for other injective stages: pad and strided_slice measured
  // slower with them. One vector per iteration: a wider vector of them would be legalized back
  // into 512-bit registers; LLVM unrolls the loop.
  int64_t half = lanes / 2;
  if (half > 1) factors.insert(factors.begin(), half);
  if (ctx.unit.vector_bits >= 512 && half > 1 && streaming_arithmetic(ctx, c) &&
      (!extent || (*extent % half == 0 && *extent > half))) {
    factor = half;
  }
  factors.push_back(0);
  factor = ctx.knob(st, "vector_factor", factor, factors);
  bool worth = !extent || *extent >= 4;
  bool vector = ctx.knob(st, "vectorize", worth ? 1 : 0, {0, 1}) == 1;
  if (vector && factor > 0 && (!extent || *extent > factor)) {
    auto [io, ii] = split(st, inner, make_const(inner->var.dtype(), factor), Expr());
    outer.push_back(io);
    inner = ii;
  }
  if (vector) vectorize(st, inner);
  // Fused through a symbolic extent, but not through a second one: each loop fused costs every
  // iteration a division of the fused index by its (unknown, so not multiply-and-shift)
  // extent. A pad over (batch, channels, height, width) of symbolic sizes divided three times
  // per vector; the width stays a loop of its own (a UNet under dynamic=True, batch 1: 56 ->
  // 34 ms). Only here: a product's epilogue fused the same way slowed ResNet-50 and
  // MobileNetV2 at batch 8 by 1.4-1.7x.
  int64_t depth = 0;
  for (int symbolic = 0; depth < static_cast<int64_t>(outer.size()) && symbolic < 2; ++depth) {
    if (!const_extent(outer[static_cast<size_t>(depth)])) ++symbolic;
  }
  outer = parallelize(ctx, st, outer, size, nullptr,
                      depth < static_cast<int64_t>(outer.size()) ? depth : 0);
  if (!serial && !outer.empty()) prefetch_inputs(ctx, st, outer);
  // Serial outer loops fused into one: a single loop of many iterations is unrolled by a small
  // factor instead of completely.
  if (serial && outer.size() > 1) fuse(st, outer);
}

}  // namespace ptb::autoschedule
