// Register-blocked micro-kernels for sums of products with data reuse (matmul, batch matmul,
// convolution), generalising the GEMM ladder's last step (benchmarks/gemm.py):
//
//   parallel for (outer tiles, the streamed operand's panel outermost)
//     for reduce axes                      <- the block below stays in registers throughout
//       for r in rows (unrolled)           <- one broadcast of the other operand per row
//         for v in vector lanes x count    <- loads of the packed streamed operand
//           block[r, v] += a * b
//     epilogue over the block (vectorized): the copy to the output, or the single elementwise
//     consumer (bias, batch norm, residual add, activation) fused in.
//
// The vector axis is an output axis that only one operand (the streamed one) depends on, the row
// axis one that only the other operands depend on; the tile is rows x (vectors of the target's
// width), with rows * vectors accumulators sized from the target's register count.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <tuple>

#include "autoschedule/analysis.h"
#include "autoschedule/rules.h"
#include "ir/op.h"
#include "schedule/primitives.h"
#include "schedule/stage_bodies.h"

namespace ptb::autoschedule {

namespace {

// A streamed operand read at least this many times per element is packed.
constexpr int64_t kPackReuse = 16;
// Registers kept free of accumulators: the streamed vectors and the broadcast value.
constexpr int kSpareRegisters = 4;
// Bytes of an operand taken to stay in cache when it is swept again and again (about a core's
// L2): re-reading it costs little, so its sweeps are not counted as memory traffic.
constexpr int64_t kCachedBytes = int64_t{1} << 20;
// Panels read by at most this many rows are prefetched by default ("prefetch", below), when
// each iteration's slice of the streamed operand is at least this long.
constexpr int64_t kPrefetchRows = 256;
constexpr int64_t kPrefetchSliceBytes = int64_t{4} << 10;
// How many rows ahead a panel pack prefetches the streamed operand's rows.
constexpr int64_t kPackPrefetchRows = 16;
// How many reduction steps ahead a panel's next rows are fetched into L1 ("prefetch_steps").
constexpr int64_t kPrefetchSteps = 8;
// The input a convolution's tiles broadcast is fetched this many steps of its channel loop
// ahead ("prefetch_input") where consecutive channels are at least kInputStrideBytes apart.
constexpr int64_t kInputPrefetchSteps = 8;
constexpr int64_t kInputStrideBytes = 512;
// Accumulator registers a tile aims for: 8 x 2 and 6 x 2 AVX-512 vectors measured best for
// SGEMM (4 x 1 is latency-bound, 14 x 2 spills).
constexpr int64_t kTargetAccumulators = 16;
// The band of accumulator counts a tile's rows are chosen in before a row count that divides
// the axis is preferred: fewer leave the FMA units waiting on their latency (6 x 2 is the
// smallest tile measured at the full rate); more crowd out the broadcast values of a window.
constexpr int64_t kMinAccumulators = 12;
constexpr int64_t kMaxAccumulators = 20;
// Panels that must read a row operand for the 6 x 4 tile (below) to pay by default.
constexpr int64_t kPackedRowsPanels = 8;
// The tag of a convolution in the blocked NCHW[b]c layout (pytvmbridge/graph/layout.py).
constexpr const char* kBlockedConvTag = "conv2d_NCHWc";

std::optional<int64_t> extent_of(const IterVar& iv) { return const_extent(iv); }

// Whether `read` indexes some dimension by exactly `var`, and no other dimension uses it.
int exact_dim(const TensorRead* read, const Expr& var) {
  int found = -1;
  for (size_t d = 0; d < read->indices.size(); ++d) {
    const Expr& index = read->indices[d];
    if (index.get() == var.get()) {
      if (found >= 0) return -1;
      found = static_cast<int>(d);
    } else if (uses_var(index, var)) {
      return -1;
    }
  }
  return found;
}

// Whether a read other than the streamed operand indexes the row axis together with a reduction
// axis in one dimension: a convolution's window along its rows (x + rx). The window's taps
// share the broadcast row values, which then stay live beside the accumulators.
bool row_window(const ComputeOpNode* c, const TiledPlan& plan) {
  const auto* red = c->body[0].as<Reduce>();
  const Expr& row = c->axis[plan.row_axis]->var;
  for (const TensorRead* r : tensor_reads(red->source)) {
    if (r == plan.streamed) continue;
    for (const Expr& index : r->indices) {
      if (!uses_var(index, row)) continue;
      for (const IterVar& k : red->axis) {
        auto extent = extent_of(k);
        if ((!extent || *extent > 1) && uses_var(index, k->var)) return true;
      }
    }
  }
  return false;
}

// w when `read` indexes some dimension by var // w and its last one by var % w (a constant w),
// and no other dimension uses var: an operand pre-packed in panels of w along var.
int64_t panel_width(const TensorRead* read, const Expr& var) {
  const auto& idx = read->indices;
  if (idx.size() < 2) return 0;
  const auto* mod = idx.back().as<FloorMod>();
  if (!mod || mod->a.get() != var.get()) return 0;
  auto w = as_const_int(mod->b);
  if (!w || *w <= 0) return 0;
  int divs = 0;
  for (size_t d = 0; d + 1 < idx.size(); ++d) {
    const auto* div = idx[d].as<FloorDiv>();
    if (div && div->a.get() == var.get() && as_const_int(div->b) == w) {
      ++divs;
    } else if (uses_var(idx[d], var)) {
      return 0;
    }
  }
  return divs == 1 ? *w : 0;
}

bool depends(const TensorRead* read, const Expr& var) {
  return std::any_of(read->indices.begin(), read->indices.end(),
                     [&](const Expr& i) { return uses_var(i, var); });
}

std::optional<int64_t> bytes_of(const TensorRead* read) {
  int64_t n = read->dtype.bytes();
  for (const Expr& d : read->op->output_shape(read->value_index)) {
    auto e = as_const_int(d);
    if (!e) return std::nullopt;
    n *= *e;
  }
  return n;
}

// The one operand besides the streamed one (a convolution's input, which its tiles broadcast)
// and the reduction axis along which its consecutive elements lie furthest apart in memory, as
// an index into `reduce_axis`, with that distance in bytes (a dense layout: the product of the
// later dimensions' extents); {nullptr, -1, 0} when there is no such operand or axis (other
// reads, or no reduction axis indexes one of its dimensions exactly).
struct StridedOperand {
  const TensorRead* read = nullptr;
  int axis = -1;
  int64_t stride_bytes = 0;
};
StridedOperand broadcast_operand_stride(const ComputeOpNode* c, const TiledPlan& plan) {
  const TensorRead* other = nullptr;
  for (const TensorRead* r : tensor_reads(c->body[0].as<Reduce>()->source)) {
    if (r->indices.empty() || r == plan.streamed) continue;
    if (other && (other->op != r->op || other->value_index != r->value_index)) return {};
    other = r;
  }
  if (!other) return {};
  const auto& shape = other->op->output_shape(other->value_index);
  StridedOperand best;
  for (size_t a = 0; a < c->reduce_axis.size(); ++a) {
    int dim = exact_dim(other, c->reduce_axis[a]->var);
    if (dim < 0) continue;
    std::optional<int64_t> stride = other->dtype.bytes();
    for (size_t d = dim + 1; d < shape.size() && stride; ++d) {
      auto e = as_const_int(shape[d]);
      stride = e ? std::optional<int64_t>(*stride * *e) : std::nullopt;
    }
    if (stride && *stride > best.stride_bytes) best = {other, static_cast<int>(a), *stride};
  }
  return best;
}

// Whether prefetching the streamed operand ahead pays by default: it is larger than a core's
// cache share (so it comes from memory on every call) and each of its `slices` (the part one
// iteration of the prefetching loop reads) is at least a few KB. One thread, CPU time, paired
// against the same build without prefetches (PYTVMBRIDGE_NO_PREFETCH), loaded machine, batch 1:
// with slices from 4 KB (the 1x1 plane blocks of ResNet-50's and MobileNetV2's last stages
// included) ResNet-50 0.936, MobileNetV2 0.974. (Before the lowering spread few lines over an
// outer loop, one prefetch per inner iteration made MobileNetV2 1.04x.)
bool prefetch_pays(const TiledPlan& plan, std::optional<int64_t> slices) {
  auto bytes = bytes_of(plan.streamed);
  return bytes && slices && *slices > 0 && *bytes > kCachedBytes &&
         *bytes / *slices >= kPrefetchSliceBytes;
}

// A blocked convolution whose batch or image size is symbolic: its sizes unknown, in axis order
// (0), so that each image's input is swept once per panel of output channels, not every image's
// once per panel (panels outermost, which the other products keep). ResNet-50 under
// dynamic=True, batch 8: the panels outermost swept 8 images of 56 x 56 x 256 once per panel.
int64_t symbolic_conv_order(const ComputeOpNode* c, const TiledPlan& plan) {
  bool image_axes = c->tag == kBlockedConvTag && !depends(plan.streamed, c->axis[0]->var);
  return image_axes ? 0 : 1;
}

// Whether the loops over the streamed operand's tiles (its panels) go outermost (1) or the
// other operands' tiles do (0): whichever moves fewer bytes from memory. Outermost panels sweep
// the other operands once per panel; outermost rows sweep the streamed operand once per row
// tile; a sweep of an operand that stays in cache is nearly free. 1 when sizes are symbolic
// or the two are even (the streamed operand is the packed one).
int64_t streamed_outer_default(const ComputeOpNode* c, const TiledPlan& plan,
                               const std::vector<const TensorRead*>& reads, int64_t width,
                               int64_t rows) {
  auto streamed = bytes_of(plan.streamed);
  std::optional<int64_t> others = 0;
  for (const TensorRead* r : reads) {
    if (r == plan.streamed) continue;
    auto b = bytes_of(r);
    others = others && b ? std::optional<int64_t>(*others + *b) : std::nullopt;
  }
  std::optional<int64_t> panels = 1, row_tiles = 1;
  for (size_t a = 0; a < c->axis.size(); ++a) {
    auto e = const_extent(c->axis[a]);
    if (!e || !streamed || !others) return symbolic_conv_order(c, plan);
    int ai = static_cast<int>(a);
    if (ai == plan.vector_axis) {
      *panels *= (*e + width - 1) / width;
    } else if (depends(plan.streamed, c->axis[a]->var)) {
      *panels *= *e;
    } else {
      *row_tiles *= ai == plan.row_axis ? (*e + rows - 1) / rows : *e;
    }
  }
  auto sweeps = [](int64_t bytes, int64_t times) {
    return bytes <= kCachedBytes ? bytes : bytes * times;
  };
  int64_t panels_outer = *streamed + sweeps(*others, *panels);
  int64_t rows_outer = *others + sweeps(*streamed, *row_tiles);
  if (c->tag != kBlockedConvTag || depends(plan.streamed, c->axis[0]->var) ||
      !const_extent(c->axis[0]) || *const_extent(c->axis[0]) < 1) {
    return rows_outer < panels_outer ? 0 : 1;
  }
  // A blocked convolution, [N, O/b, H, W, b]. In axis order (0) it is neither of the two
  // above: each image's input is swept once per panel of output channels, and the weights once
  // per image.
  int64_t batch = *const_extent(c->axis[0]);
  int64_t image = *others / batch;
  // Where one image's input does not stay in cache and the weights do, the panels go innermost
  // instead (2): each row tile of the input is read from memory once and meets every panel of
  // the (cached) weight. Where the weights are large and an image is small, axis order sweeps
  // the weights once per image instead of every image's input once per panel (1). ResNet-50 at
  // batch 8, one thread, thread CPU time of each layer's loop nest, old and new in separate
  // processes (loaded machine): the 11 layers this moves took 116.0 -> 100.1 ms (a second pair
  // 142.5 -> 95.4), e.g. 2 for the two 256->64 1x1 at 56x56 15.8 -> 12.3, the 256->512 stride-2
  // 1x1 12.8 -> 11.1; 0 for the 1024->512 1x1 12.3 -> 11.0, the 1024->2048 stride-2 1x1 17.4 ->
  // 14.5. Panels innermost with cached inputs or uncached weights (the 14x14 and 7x7 layers)
  // measured up to 2.4x slower alone, axis order instead of panels outermost for the 3x3
  // layers at 7x7 about 1.1-1.2x.
  if (rows_outer < panels_outer) {
    bool panels_inner = image > kCachedBytes && *streamed <= kCachedBytes;
    return panels_inner ? 2 : 0;
  }
  int64_t axis_order =
      batch * sweeps(image, *panels) + (*streamed <= kCachedBytes ? *streamed : *streamed * batch);
  if (axis_order < panels_outer) return 0;
  return 1;
}

// Bytes of the accumulators of a whole output plane that "plane_block" keeps: offered up to a
// 14x14 plane of 32 channels (25 KB), on by default up to a 7x7 one (6 KB).
constexpr int64_t kPlaneBytes = int64_t{32} << 10;
constexpr int64_t kSmallPlaneBytes = int64_t{8} << 10;
// Panels (parallel tasks) "plane_block" needs by default, so that 2 threads stay balanced.
constexpr int64_t kPlanePanels = 8;

// Bytes of the accumulators of one panel's whole output plane (`second`: the loops of the row
// tiles, `rows` x `width` each); nullopt where they are not constant.
std::optional<int64_t> plane_bytes(const ComputeOpNode* c, const std::vector<IterVar>& second,
                                   int64_t rows, int64_t width) {
  auto plane = const_product(second);
  if (!plane) return std::nullopt;
  return *plane * rows * width * c->output_dtype(0).bytes();
}

// Knob "plane_block" (blocked convolutions with a small output plane): 1 computes each panel's
// whole plane of outputs (N x H x W, the tile's width) into one buffer attached at the (only
// parallel) panel loop, with the first reduction axis (the input-channel blocks) outermost, so
// each block's slice of the weight (b x kh x kw x b floats, 36 KB at 32 x 3 x 3 x 32) is read
// from memory or L2 once and then from L1 by every row tile of the plane; otherwise each row
// tile streams the whole panel of the weight (590 KB for 512 input channels) from L2, the first
// one from memory. Offered where the tile divides the output rows, there are several reduction
// axes and the plane's accumulators take at most kPlaneBytes. The row tiles of one output row
// are unrolled: as a loop, the tile's offset (x.outer * 7 + j, an int32 sum cast to int64) kept
// LLVM from proving the accumulators apart, and they were loaded and stored around every FMA
// (256x14x14->256 k3 2.7x slower).
std::vector<int64_t> plane_block_candidates(const ComputeOpNode* c, const TiledPlan& plan,
                                            const std::vector<IterVar>& second,
                                            std::optional<int64_t> rext, int64_t rows,
                                            int64_t width) {
  if (c->tag != kBlockedConvTag || c->reduce_axis.size() < 2 || plan.row_axis < 0 || !rext ||
      *rext % rows != 0)
    return {0};
  auto bytes = plane_bytes(c, second, rows, width);
  if (!bytes || *bytes > kPlaneBytes) return {0};
  return {0, 1};
}

// The default of "plane_block" where it is offered: with at least kPlanePanels panels, for a
// plane of at most kSmallPlaneBytes (ResNet's 7x7 layers at batch 1). One thread, thread CPU
// time, the graph's blocked convolution + ReLU at batch 1, both values in one process (medians
// of 7-9 rounds), off -> on: 512x7x7->512 k3 1.382-1.488 -> 1.340-1.422 ms, 256x14x14->512
// k3s2 0.684-0.708 -> 0.668-0.707, 2048->512 k1 at 7x7 0.687 -> 0.606, 512->2048 k1 at 7x7
// 0.645 -> 0.631. At 14x14 (for the tuner only): 256->256 k3 1.256 -> 1.202, 128x28x28->256
// k3s2 0.706 -> 0.655 alone, but ResNet-18 b1 with these on measured 23.3-24.0 ms against
// 22.2-23.5 without (main: 23.4-24.6, same session, one thread); 1x1 layers slower alone
// (1024->256 0.558 -> 0.576, 256->1024 0.544 -> 0.584).
bool plane_block_default(const std::vector<IterVar>& first, const ComputeOpNode* c,
                         const std::vector<IterVar>& second, int64_t rows, int64_t width) {
  auto panels = const_product(first);
  auto bytes = plane_bytes(c, second, rows, width);
  return panels && *panels >= kPlanePanels && bytes && *bytes <= kSmallPlaneBytes;
}

// The default tile of a matrix product whose rows are broadcast from one row operand read in
// place, encoded as rows * 8 + vectors; 0 where the product keeps the other default. The tile
// is the one that loads the least per multiply-add (rows + vectors loads for rows x vectors of
// them) with its accumulators, its streamed vectors and the broadcast value all in registers:
// 6 x 4 with AVX-512's 32 registers (4 x 3 with 16). Only for a single reduction whose row
// operand alone depends on the rows, indexed by them exactly (matmul, dense, batch_matmul; not
// convolutions), and not where the streamed operand is packed one panel at a time
// ("pack_inner" below) over rows the tile does not divide (8 x 2 with that measured 0.93x,
// 6 x 4 unpacked with the row tiles in the parallel loop 0.87x on dense 1024x3072->768).
// Idle machine, 6 x 4 with the rows read in place and only the panel loop parallel, against
// the same tile with the rows packed (GotoBLAS's A panels, knob "pack_rows") and the row tiles
// in the parallel loop, in torch.matmul's time: SGEMM 1024^3 0.97x vs 0.88x at 2 threads and
// 0.94-0.95x vs 0.93x on one (8 x 2: 0.90x, 0.88x); dense 1024x768->768 1.02x vs 0.91x and
// 0.98-0.99x vs 0.95-0.96x, 1024x768->3072 0.96x vs 0.94-0.95x and 0.93-0.96x vs 0.94-0.96x.
// The packing copy is a scalar, guarded pass that the contiguous broadcasts do not repay.
// The one operand a matrix product broadcasts its rows from (a single reduction; the operand
// alone depends on the rows, indexed by them exactly, and is not the streamed one: matmul,
// dense, batch_matmul, never a convolution); null for anything else.
const TensorRead* row_operand(const ComputeOpNode* c, const TiledPlan& plan) {
  if (plan.row_axis < 0 || c->reduce_axis.size() != 1) return nullptr;
  const Expr& rvar = c->axis[plan.row_axis]->var;
  int readers = 0, row_dim = -1;
  const TensorRead* row_read = nullptr;
  for (const TensorRead* r : tensor_reads(c->body[0].as<Reduce>()->source)) {
    if (r->indices.empty() || !depends(r, rvar)) continue;
    ++readers;
    row_read = r;
    row_dim = exact_dim(r, rvar);
  }
  if (readers != 1 || row_dim < 0 || row_read == plan.streamed) return nullptr;
  return row_read;
}

int64_t packed_rows_default(const Context& ctx, const ComputeOpNode* c, const TiledPlan& plan,
                            std::optional<int64_t> vext, const std::vector<int64_t>& vectors) {
  const TensorRead* row_read = row_operand(c, plan);
  if (!row_read) return 0;
  // Whatever the row operand's size (it is read in place). One thread, 6 x 4 against 8 x 2, in
  // PyTorch's time: 2048x1024 @ 1024x1024 (8 MiB of rows) 0.96x vs 0.86x, 2048x1536 @
  // 1536x1024 (12 MiB) 0.99x vs 0.92x, pre-packed dense 1024x3072->768 (12 MiB) 1.02x vs 0.93x.
  // (With the rows packed, the old default, 6 x 4 had measured slower there.)
  if (!bytes_of(row_read)) return 0;
  auto rext = extent_of(c->axis[plan.row_axis]);
  auto kext = extent_of(c->reduce_axis[0]);
  auto sbytes = bytes_of(plan.streamed);
  if (!rext) return 0;  // a symbolic batch of rows keeps the unpadded default
  bool others_rows_only = true;
  for (size_t a = 0; a < c->axis.size(); ++a) {
    int ai = static_cast<int>(a);
    if (ai != plan.row_axis && ai != plan.vector_axis && !depends(plan.streamed, c->axis[a]->var))
      others_rows_only = false;
  }
  // The case "pack_inner" takes (its conditions, before the tile is known), which needs a tile
  // that divides the rows: where this one does not, the 8 x 2 tile packing inside the loop
  // measured better for a streamed operand packed with a transpose (a dense layer's weight).
  // Where it does, the two combine (dense 1024x3072->768 streaming its activations against the
  // weight's 768 rows: 0.99-1.01x PyTorch, 8 x 2 0.94-0.97x). An operand packed as it is
  // (matmul's b, (K, N)) keeps this tile, its panel then packed at the panel loop ("pack_inner"
  // 2): 2 threads, in torch.matmul's time, 8 x 2 packing inside the loop against 6 x 4 packing
  // each panel: 128x768 @ 768x3072 0.77-0.81x -> 0.91-0.98x, 128x3072 @ 3072x768 0.76-0.80x ->
  // 0.85-0.88x, 128x768 @ 768x768 0.83-0.86x -> 0.92-0.95x, 1024x3072 @ 3072x768 0.95-0.98x
  // -> 1.02-1.05x.
  bool transposed = plan.streamed_dim >= 0 &&
                    plan.streamed_dim != static_cast<int>(plan.streamed->indices.size()) - 1;
  bool inner_case = plan.panel_width == 0 && others_rows_only && kext && *kext > *rext &&
                    (!sbytes || *sbytes > kCachedBytes) && transposed;
  int64_t lanes = ctx.lanes(c->output_dtype(0));
  int64_t best = 0;
  double best_cost = 0;
  for (int64_t v : vectors) {
    // One vector per row is latency-bound.
    if (v < 2 || (vext && *vext % (v * lanes) != 0)) continue;
    int64_t budget = std::max<int64_t>(1, ctx.unit.vector_registers - kSpareRegisters);
    int64_t r = std::min({(ctx.unit.vector_registers - 1 - v) / v, budget / v, *rext});
    if (r < 2) continue;
    double cost = 1.0 / static_cast<double>(r) + 1.0 / static_cast<double>(v);
    if (best == 0 || cost < best_cost) {
      best = r * 8 + v;
      best_cost = cost;
    }
  }
  if (best > 0 && inner_case && *rext % (best / 8) != 0) return 0;
  // Pre-packed panels fix the tile's width: they take the tile only when they are as wide as
  // it (64 floats on AVX-512, the width pack_dense_weight's default block follows), and
  // narrower ones keep their default (32-wide: 8 x 2).
  if (best > 0 && plan.panel_width > 0 && plan.panel_width != best % 8 * lanes) return 0;
  // At least kPackedRowsPanels panels (a 12x128x64 batch_matmul's two panels of 4 vectors,
  // rows packed, measured 0.88x against 1.04x with 8 x 2); they are then also enough to share
  // among threads without the row tiles (below).
  // Fewer panels do for a streamed operand packed with a transpose when the tile divides the
  // rows: the row tiles then share the parallel loop with no guard (dense x @ w.T at batch 1
  // streaming its 128 rows of activations, two panels, against 768 or 3072 weight rows: 6 x 4
  // 1.06-1.16x against 8 x 2's 0.98-1.10x PyTorch, one thread).
  // Fewer panels do too for a batched product (batch_matmul: both operands depend on another
  // output axis), whose batches the threads share: 2 threads, in torch.matmul's time, 6 x 4
  // against 8 x 2 (with the rows read in place): BERT's attention at batch 8, (96, 128, 64) @
  // (96, 64, 128) with k transposed 0.89-0.91x -> 0.97-1.00x, (96, 128, 128) @ (96, 128, 64)
  // 0.88-0.93x -> 1.11-1.18x; at batch 1 (12 heads) level, and 1.31x -> 1.43x (level in a
  // second run).
  int64_t batches = 1;
  for (size_t a = 0; a < c->axis.size(); ++a) {
    int ai = static_cast<int>(a);
    const Expr& v = c->axis[a]->var;
    if (ai == plan.row_axis || ai == plan.vector_axis) continue;
    auto ext = extent_of(c->axis[a]);
    if (ext && depends(plan.streamed, v) && depends(row_read, v)) batches *= *ext;
  }
  if (best > 0 && vext && *vext / (best % 8 * lanes) < kPackedRowsPanels &&
      !(transposed && *rext % (best / 8) == 0) && batches < kPackedRowsPanels)
    return 0;
  return best;
}

// "block_rows": the row axis cut into blocks of this many rows (dividing it), outermost, each
// block swept by every panel before the next (GotoBLAS's mc: row block, panel, row tile). With
// the panels outermost each panel sweeps the whole row operand, from L3 when it is larger than
// L2 (SGEMM 1024^3: 4 MiB, 16 times); a block of it stays in L2 for all the panels. The streamed
// operand is then packed in a pass of its own (its copy read once per block), rows outermost.
// Rows the tile does not divide leave each block a last, partial tile, peeled like the axis's.
// Off by default: on one thread SGEMM 1024^3 with blocks of 256 or 512 rows measured level with
// the default (0.94-0.99x against 0.96-0.98x torch.matmul, loaded machine, CPU time); it is
// there for the tuner (2 threads share L3 bandwidth, which the blocks save). Candidates: 64 to
// 512 rows, at least two tiles, for a matrix product with the panels outermost and rows read
// in place, streaming an operand packed without a transpose. Pre-packed panels read in place
// (dense_pack's wp[j / 64, k, j % 64], which no single dimension follows) are offered too: 2
// threads, idle, BERT's batch-8 shapes (1024 rows; 768->768, ->2304, ->3072, 3072->768),
// blocks of 512 rows measured level with the unblocked kernel (-1% to +3%, order rotating), so
// the default stays off.
std::vector<int64_t> block_rows_candidates(const ComputeOpNode* c, const TiledPlan& plan,
                                           int64_t order, int64_t rows, bool rows_packed) {
  std::vector<int64_t> out = {0};
  auto rext = plan.row_axis >= 0 ? const_extent(c->axis[plan.row_axis]) : std::nullopt;
  // Not for a streamed operand packed with a transpose (a dense layer's weight as PyTorch holds
  // it): there the separate transposing pass measured 0.75-0.91x torch against the default's
  // 0.94-1.01x on BERT's b8 layers (one thread).
  bool transposed = plan.streamed_dim >= 0 &&
                    plan.streamed_dim != static_cast<int>(plan.streamed->indices.size()) - 1;
  if (order != 1 || rows_packed || transposed || !rext || !row_operand(c, plan)) return out;
  for (int64_t r : {64, 128, 256, 512}) {
    if (r < *rext && *rext % r == 0 && r >= 2 * rows) out.push_back(r);
  }
  return out;
}

}  // namespace

Stage fusable_epilogue(Context& ctx, const Stage& st) {
  if (st->is_output) return nullptr;
  std::shared_ptr<const StageBodies> cached_bodies = ctx.bodies();
  const StageBodies& bodies = *cached_bodies;
  std::vector<Stage> consumers = effective_consumers(ctx.sch, bodies, st);
  if (consumers.size() != 1) return nullptr;
  Stage e = consumers[0];
  if (classify(e) != StageKind::kInjective || ctx.settled.count(e.get())) return nullptr;
  if (e->attach_type != AttachType::kRoot || !e->relations.empty()) return nullptr;
  const ComputeOpNode* ec = as_compute(e->op);
  const ComputeOpNode* rc = as_compute(st->op);
  if (ec->shape.size() != rc->shape.size()) return nullptr;
  for (size_t d = 0; d < ec->shape.size(); ++d) {
    if (!same_extent(ec->shape[d], rc->shape[d])) return nullptr;
  }
  for (const Expr& body : bodies.at(e.get())) {
    for (const TensorRead* r : tensor_reads(body)) {
      if (r->op != st->origin_op) continue;
      for (size_t d = 0; d < r->indices.size(); ++d) {
        if (r->indices[d].get() != ec->axis[d]->var.get()) return nullptr;
      }
    }
  }
  return e;
}

std::optional<TiledPlan> plan_tiled(Context& ctx, const Stage& st) {
  if (classify(st) != StageKind::kReduction) return std::nullopt;
  const ComputeOpNode* c = as_compute(st->op);
  const auto* red = c->body[0].as<Reduce>();
  if (red->combiner != ReduceKind::kSum || !st->relations.empty()) return std::nullopt;
  if (st->attach_type != AttachType::kRoot) return std::nullopt;
  std::vector<const TensorRead*> reads;
  for (const TensorRead* r : tensor_reads(red->source)) {
    if (!r->indices.empty()) reads.push_back(r);
  }
  if (reads.size() < 2) return std::nullopt;
  int lanes = ctx.lanes(c->output_dtype(0));
  int n = static_cast<int>(c->axis.size());

  TiledPlan best;
  int best_score = -1;
  // Every axis that can be the vector axis, with its streamed read (for the knob below).
  std::vector<std::pair<int, const TensorRead*>> valid;
  for (int a = 0; a < n; ++a) {
    const Expr& var = c->axis[a]->var;
    std::vector<const TensorRead*> deps;
    for (const TensorRead* r : reads) {
      if (depends(r, var)) deps.push_back(r);
    }
    if (deps.size() != 1) continue;
    auto extent = extent_of(c->axis[a]);
    if (extent && *extent < lanes) continue;
    // A constant extent that whole vectors divide is the best vector axis. A symbolic one is
    // usually a batch: vectorizing it would stream (and pack, on every call) the activations
    // instead of the weights, and compute whole vectors of rows, masked, when the batch is
    // smaller (a decode step's 2 rows against a 1000-word vocabulary, in tiles of 64 rows:
    // 2.7 ms against PyTorch's 0.1): it loses to any constant extent of a vector or more,
    // whose last partial vector lowering peels.
    int score = 0;
    // The streamed operand's contiguous dimension, whole vectors wide (a blocked convolution's
    // channels in a block, a matmul's columns): every vector is a plain load, whatever the
    // extents of the other candidates.
    int dim = exact_dim(deps[0], var);
    bool contiguous = dim >= 0 && dim == static_cast<int>(deps[0]->indices.size()) - 1;
    if (contiguous && extent && *extent % lanes == 0) score += 8;
    if (extent && *extent % (2 * lanes) == 0) score += 4;
    if (extent && *extent % lanes == 0) score += 2;
    if (extent) score += 1;
    if (a == n - 1) score += 1;
    valid.emplace_back(a, deps[0]);
    if (score > best_score) {
      best_score = score;
      best.vector_axis = a;
      best.streamed = deps[0];
      best.streamed_dim = exact_dim(deps[0], var);
    }
  }
  if (best_score < 0) return std::nullopt;
  if (!extent_of(c->axis[best.vector_axis])) {
    // Only a symbolic row count can be vectorized (a classifier's 10 outputs over a dynamic
    // batch): its tiles of rows are padded to whole vectors, 64 rows for 1 (0.11 ms against
    // PyTorch's 0.003): left to the reduction rules, which vectorize the dot products.
    bool narrow = true;
    for (int a = 0; a < n; ++a) {
      auto extent = extent_of(c->axis[a]);
      if (a != best.vector_axis && (!extent || *extent >= lanes)) narrow = false;
    }
    if (narrow) return std::nullopt;
  }
  // Which operand is streamed (packed into panels, one vector axis) and which is broadcast row
  // by row: knob "vector_axis". When both operands hold the reduction contiguous (dense's
  // x @ w.T, the layout PyTorch keeps a linear weight in), either one must be packed with a
  // transpose, whose strided gathers cost about the operand's size, while the broadcast one is
  // read in place: by default the smaller operand is streamed. A BERT layer at batch 1 (128
  // rows against a 768x768 weight) then packs its 393 KB of activations instead of the 2.4 MB
  // weight on every call.
  std::vector<int64_t> axis_candidates = {best.vector_axis};
  int64_t axis_default = best.vector_axis;
  auto best_bytes = bytes_of(best.streamed);
  bool transposing = best.streamed_dim >= 0 &&
                     best.streamed_dim != static_cast<int>(best.streamed->indices.size()) - 1;
  for (const auto& [a, read] : valid) {
    if (a == best.vector_axis || read == best.streamed || exact_dim(read, c->axis[a]->var) < 0)
      continue;
    axis_candidates.push_back(a);
    auto extent = extent_of(c->axis[a]);
    auto bytes = bytes_of(read);
    int dim = exact_dim(read, c->axis[a]->var);
    bool also_transposing = dim != static_cast<int>(read->indices.size()) - 1;
    // Also when the larger operand is streamed in the case "pack_inner" takes (a weight out of
    // cache, packed one panel at a time inside the loop, with a reduction longer than the rows,
    // which keeps the 8 x 2 tile): dense 1024x3072->768 streaming its activations (6 x 4 over
    // the weight's 768 rows) measured 0.99-1.01x against 0.94-0.96x PyTorch, one thread, while
    // 1024x768->768 (6 x 4 either way) measured 0.93x against 0.97x.
    auto kext = extent_of(red->axis[0]);
    bool inner_packed =
        best_bytes && *best_bytes > kCachedBytes && kext && extent && *kext > *extent;
    if (transposing && also_transposing && red->axis.size() == 1 && best_bytes && bytes &&
        (*bytes < *best_bytes || inner_packed) && extent && *extent % (2 * lanes) == 0 &&
        axis_default == best.vector_axis)
      axis_default = a;
  }
  int64_t chosen = axis_candidates.size() > 1
                       ? ctx.knob(st, "vector_axis", axis_default, axis_candidates)
                       : best.vector_axis;
  if (chosen != best.vector_axis) {
    for (const auto& [a, read] : valid) {
      if (a != chosen) continue;
      best.vector_axis = a;
      best.streamed = read;
      best.streamed_dim = exact_dim(read, c->axis[a]->var);
    }
  }
  best.panel_width = panel_width(best.streamed, c->axis[best.vector_axis]->var);
  // The row axis: the innermost axis the streamed operand does not depend on but another does.
  std::optional<int64_t> reuse = 1;
  for (int a = n - 1; a >= 0; --a) {
    const Expr& var = c->axis[a]->var;
    if (a == best.vector_axis || depends(best.streamed, var)) continue;
    auto extent = extent_of(c->axis[a]);
    reuse = reuse && extent ? std::optional<int64_t>(*reuse * *extent) : std::nullopt;
    bool others = std::any_of(reads.begin(), reads.end(), [&](const TensorRead* r) {
      return r != best.streamed && depends(r, var);
    });
    if (others && best.row_axis < 0 && (!extent || *extent >= 2)) best.row_axis = a;
  }
  best.reuse = reuse;
  // Without reuse (a matrix-vector product) the reduction rule's schedule is the right one.
  if (reuse && *reuse < 2) return std::nullopt;
  return best;
}

void schedule_tiled(Context& ctx, const Stage& st, const TiledPlan& plan) {
  ctx.rule(st, "tiled_reduction");
  const ComputeOpNode* c = as_compute(st->op);
  int64_t lanes = ctx.lanes(c->output_dtype(0));
  IterVar vaxis = c->axis[plan.vector_axis];
  auto vext = extent_of(vaxis);

  // Tile: rows x (vectors x lanes), accumulators within the register file.
  int64_t budget = std::max<int64_t>(1, ctx.unit.vector_registers - kSpareRegisters);
  int64_t vectors = (!vext || *vext % (2 * lanes) == 0 || *vext >= 4 * lanes) ? 2 : 1;
  std::vector<int64_t> vector_candidates;
  for (int64_t v = 1; v <= 4 && v <= budget && (!vext || v * lanes <= *vext); ++v) {
    vector_candidates.push_back(v);
  }
  // Pre-packed panels: one panel per tile (its index then simplifies to the tile's).
  if (plan.panel_width > 0 && plan.panel_width % lanes == 0 &&
      std::count(vector_candidates.begin(), vector_candidates.end(), plan.panel_width / lanes)) {
    vectors = plan.panel_width / lanes;
  }
  int64_t packed_rows_tile = packed_rows_default(ctx, c, plan, vext, vector_candidates);
  if (packed_rows_tile > 0) vectors = packed_rows_tile % 8;
  vectors = ctx.knob(st, "tile_vectors", vectors, vector_candidates);
  int64_t width = vectors * lanes;

  int64_t rows = 1;
  std::vector<int64_t> row_candidates = {1};
  if (plan.row_axis >= 0) {
    auto rext = extent_of(c->axis[plan.row_axis]);
    int64_t max_rows = budget / vectors;
    for (int64_t r = 2; r <= max_rows && (!rext || r <= *rext); ++r) row_candidates.push_back(r);
    // About kTargetAccumulators accumulators (enough independent FMAs in flight to hide their
    // latency without spilling), preferring a row count that divides the axis (no guard), but
    // where the register file holds the target, only among tiles of kMinAccumulators to
    // kMaxAccumulators: a guarded last tile costs less than a tile that is latency-bound, or
    // whose broadcast values spill. 2 threads, against PyTorch, NCHW conv2d 256->128 1x1 at
    // batch 8: 57 wide 3 x 2 -> 8 x 2 (the last tile 1 row) 0.62x -> 1.06x, 55 wide 5 x 2 ->
    // 8 x 2 (the last 7) 0.88x -> 1.13x (11 x 2, a divisor, 1.15x); 64->64 3x3 at batch 1, 55
    // wide: 5 x 2 1.81x, 8 x 2 2.06x, 11 x 2 1.70x.
    bool target_fits = max_rows * vectors >= kTargetAccumulators;
    rows = 0;
    auto key = [&](int64_t r) {
      bool divides = rext && *rext % r == 0;
      int64_t acc = r * vectors;
      bool off_band = target_fits && (acc < kMinAccumulators || acc > kMaxAccumulators);
      return std::make_tuple(off_band ? 1 : 0, divides ? 0 : 1, std::abs(acc - kTargetAccumulators),
                             r);
    };
    for (int64_t r = 1; r <= max_rows; ++r) {
      if (rext && r > *rext) break;
      if (rows == 0 || key(r) < key(rows)) rows = r;
    }
    // A short row (a convolution's 14 or 28 output columns) in one or two tiles of up to the
    // whole register budget: 14 x 2 AVX-512 vectors measured 10-15% faster than 7 x 2 on
    // ResNet-50's 14- and 28-wide layers (each weight vector is loaded for more FMAs). Not for
    // a window along the row read from an operand the schedule packs itself (an NCHW 3x3
    // conv2d, a convolution's data gradient): there 14 x 2 measured 1.7-2.1x slower than 7 x 2
    // or 8 x 2 (the broadcast row values shared by the taps spill); pre-packed panels (the
    // graph's NCHWc weights) and 1x1 convolutions keep it.
    bool spills = plan.panel_width == 0 && row_window(c, plan);
    if (rext && *rext <= 2 * max_rows && vectors >= 2 && !spills) {
      for (int64_t r = max_rows; r * vectors >= kTargetAccumulators; --r) {
        if (*rext % r == 0) {
          rows = r;
          break;
        }
      }
    }
    if (packed_rows_tile > 0 && vectors == packed_rows_tile % 8) rows = packed_rows_tile / 8;
    rows = ctx.knob(st, "tile_rows", rows, row_candidates);
  }

  // Packing the streamed operand when it is read often enough and its vector dimension can
  // become the panels' contiguous one.
  // Already panels: the streamed operand's last dimension is the vector axis, exactly one tile
  // wide (a convolution's pre-packed NCHWc weights).
  const auto& sshape = plan.streamed->op->output_shape(plan.streamed->value_index);
  bool panels = plan.streamed_dim == static_cast<int>(sshape.size()) - 1 && vext && *vext == width;
  bool can_pack = plan.streamed_dim >= 0 && !panels;
  bool pays = !plan.reuse || *plan.reuse >= kPackReuse;
  std::map<int, Expr> padded;
  Stage stream_pack;
  if (can_pack && ctx.knob(st, "pack", pays ? 1 : 0, {0, 1}) == 1) {
    // The panels' last lanes are zeros past the end, and only the streamed operand depends on
    // the vector axis: the block computes the last tile whole, unguarded.
    if (vext && *vext % width != 0) {
      padded[plan.vector_axis] =
          make_const(vaxis->var.dtype(), (*vext + width - 1) / width * width);
    }
    stream_pack = pack_operand(ctx, st, plan.streamed, plan.streamed_dim, vaxis, width);
    ctx.rule(stream_pack, "pack");
    vectorize(stream_pack, stream_pack->leaf_iter_vars.back());
  }

  // Packing the row operand as well (GotoBLAS's A panels: [M, K] -> [M / rows, K, rows]): the
  // rows one tile broadcasts per reduction step become adjacent, so a tile reads one stream of
  // contiguous memory instead of `rows` streams a row's length apart. Off by default (measured
  // slower, see packed_rows_default); for the tuner.
  bool rows_packed = false;
  if (plan.row_axis >= 0 && rows > 1) {
    const Expr& rvar = c->axis[plan.row_axis]->var;
    const TensorRead* row_read = nullptr;
    int row_dim = -1, readers = 0;
    for (const TensorRead* r : tensor_reads(as_compute(st->op)->body[0].as<Reduce>()->source)) {
      if (r->indices.empty() || !depends(r, rvar)) continue;
      ++readers;
      row_read = r;
      row_dim = exact_dim(r, rvar);
    }
    if (readers == 1 && row_dim >= 0 && ctx.knob(st, "pack_rows", 0, {0, 1}) == 1) {
      Stage pack =
          pack_operand(ctx, st, row_read, row_dim, c->axis[plan.row_axis], rows, ".packed_rows");
      ctx.rule(pack, "pack");
      rows_packed = true;
      const ComputeOpNode* pc = as_compute(pack->op);
      std::vector<IterVar> outer(pack->leaf_iter_vars.begin(), pack->leaf_iter_vars.end() - 1);
      parallelize(ctx, pack, {outer.front()}, output_size(pc));
      // Rows past the end read the panels' zero padding: the block computes the last tile
      // whole, unguarded (when the other operands do not depend on the rows).
      auto rext = extent_of(c->axis[plan.row_axis]);
      if (rext && *rext % rows != 0) {
        padded[plan.row_axis] = make_const(rvar.dtype(), (*rext + rows - 1) / rows * rows);
      }
    }
  }

  // The block: the reduction computed into a tile-sized buffer laid out rows x vectors (so the
  // vectors are contiguous and LLVM keeps it in registers). The tile is written out by the
  // single elementwise consumer when there is one that can take it (the copy is then inlined
  // into it), else by the copy itself.
  int n = static_cast<int>(c->axis.size());
  std::vector<int> perm;
  for (int a = 0; a < n; ++a) {
    if (a != plan.vector_axis && a != plan.row_axis) perm.push_back(a);
  }
  if (plan.row_axis >= 0) perm.push_back(plan.row_axis);
  perm.push_back(plan.vector_axis);
  Stage fused = ctx.knob(st, "fuse_epilogue", 1, {0, 1}) == 1 ? fusable_epilogue(ctx, st) : nullptr;
  Stage compute = block_cache(ctx, st, perm, padded);
  ctx.rule(compute, "block");
  Stage epilogue = st;
  if (fused) {
    compute_inline(st);
    epilogue = fused;
    ctx.rule(epilogue, "epilogue");
  }
  ctx.settled.insert(epilogue.get());

  // Epilogue loops: outer tiles (the streamed operand's axes first, so its packed panel is
  // reused by every row block), then the tile's rows and vectors.
  const ComputeOpNode* ec = as_compute(epilogue->op);
  std::vector<IterVar> axes = epilogue->leaf_iter_vars;
  std::vector<const TensorRead*> reads;
  for (const TensorRead* r : tensor_reads(c->body[0].as<Reduce>()->source)) {
    if (!r->indices.empty()) reads.push_back(r);
  }
  // 0: the axes in order; 1: the streamed operand's panels outermost; 2 (blocked convolutions
  // only): its panels innermost of the outer loops, see streamed_outer_default.
  std::vector<int64_t> orders = {0, 1};
  if (c->tag == kBlockedConvTag) orders.push_back(2);
  int64_t order =
      ctx.knob(st, "streamed_outer", streamed_outer_default(c, plan, reads, width, rows), orders);
  auto rext = plan.row_axis >= 0 ? extent_of(c->axis[plan.row_axis]) : std::nullopt;
  std::vector<int64_t> block_rows_options =
      block_rows_candidates(c, plan, order, rows, rows_packed);
  int64_t block_rows = ctx.knob(st, "block_rows", 0, block_rows_options);
  auto [vo, vi] =
      split(epilogue, axes[plan.vector_axis], make_const(vaxis->var.dtype(), width), Expr());
  IterVar ro, ri, rbo;
  if (plan.row_axis >= 0) {
    IterVar row = axes[plan.row_axis];
    if (block_rows > 0)
      std::tie(rbo, row) = split(epilogue, row, make_const(row->var.dtype(), block_rows), Expr());
    std::tie(ro, ri) = split(epilogue, row, make_const(row->var.dtype(), rows), Expr());
  }
  // The rows a tile loop sweeps: a block's with "block_rows", else the whole axis.
  auto swept = block_rows > 0 ? std::optional<int64_t>(block_rows) : rext;
  std::vector<IterVar> first, second;
  for (int a = 0; a < static_cast<int>(axes.size()); ++a) {
    IterVar leaf = a == plan.vector_axis ? vo : a == plan.row_axis ? ro : axes[a];
    bool streamed_axis = depends(plan.streamed, c->axis[a]->var) || a == plan.vector_axis;
    if (order == 2) {
      (streamed_axis ? second : first).push_back(leaf);
    } else {
      (order == 1 && !streamed_axis ? second : first).push_back(leaf);
    }
  }
  if (order == 2) {  // one outer nest, the panels last
    first.insert(first.end(), second.begin(), second.end());
    second.clear();
  }
  if (rbo) first.insert(first.begin(), rbo);  // row blocks outermost, then the panels
  // Panels outermost sweep the other operands once per panel; the knob "row_block" takes the
  // row tiles in blocks instead (GotoBLAS's mc blocking: block, panel, row tile), each panel
  // then read once per block. Off by default: on the 2 MiB-L2 AVX-512 machine it measured 0.87x
  // (blocks of 128 rows) to 0.98x the unblocked SGEMM 1024^3 on one thread; it is there for the
  // tuner (candidates: row tiles per block).
  int64_t block = 0;  // row tiles per block; 0: no blocking
  std::vector<int64_t> block_candidates = {0};
  if (order == 1 && block_rows == 0 && rext && second.size() == 1 && second[0] == ro) {
    int64_t tiles = (*rext + rows - 1) / rows;
    for (int64_t t = 2; t < tiles; t *= 2) block_candidates.push_back(t);
  }
  block = ctx.knob(st, "row_block", block, block_candidates);
  if (block > 0) {
    auto [rbo, rbi] = split(epilogue, ro, make_const(ro->var.dtype(), block), Expr());
    first.insert(first.begin(), rbo);
    second = {rbi};
  }
  // Panels outermost, with one row axis that the tile divides and one constant reduction: the
  // tile's accumulators can live in a buffer of a whole panel's rows x the tile's width,
  // computed at the (parallel) panel loop, which two knobs use.
  // "k_block" blocks the reduction (GotoBLAS's kc): for each block of it every row tile runs,
  // so the block's slice of the panel (kc x width) stays in L1 while all the row tiles read it.
  // "pack_inner" packs the streamed operand inside that loop, one slice of a panel at a time,
  // just before the row tiles read it, instead of the whole operand in a pass of its own: the
  // packed copy is then never written to memory and read back.
  auto kext = c->reduce_axis.size() == 1 ? extent_of(c->reduce_axis[0]) : std::nullopt;
  bool can_region = order == 1 && block == 0 && block_rows == 0 && second.size() == 1 &&
                    second[0] == ro && rext && *rext % rows == 0 && kext;
  std::vector<int64_t> k_candidates = {0};
  if (can_region) {
    for (int64_t kc : {64, 128, 256, 512}) {
      if (kc < *kext && *kext % kc == 0) k_candidates.push_back(kc);
    }
  }
  int64_t k_block = ctx.knob(st, "k_block", 0, k_candidates);
  bool inner_pack = false;
  // "pack_inner" 2: the streamed operand's panel is packed at the panel loop itself, the tile
  // keeping its register-sized buffer (no panel-high accumulators): the row tiles of the panel
  // then read a packed copy just written to cache, and the separate packing pass (its round
  // trip through memory and its own parallel loop) is gone. The default for matrix products
  // with at least kPackedRowsPanels panel iterations to share among threads (where "pack_inner"
  // 1 does not pay). One thread, CPU time, paired against the separate pass in PyTorch's time
  // (loaded machine): SGEMM 1024^3 0.88x/0.95x -> 0.93x/0.98x, batch_matmul 12x128x64 QK^T
  // 1.05x -> 1.16-1.24x, dense 1024x768->768 0.99x -> 1.06x, 1024x768->3072 0.94-0.99x ->
  // 0.95-0.97x.
  bool panel_pack = false;
  bool panel_pack_pays = false;
  if (stream_pack) {
    std::vector<int64_t> candidates = {0};
    if (can_region) candidates.push_back(1);
    if (order == 1 && block == 0 && block_rows == 0 && !first.empty() && k_block == 0) {
      candidates.push_back(2);
      auto panel_iterations = const_product(first);
      // Also for a convolution with a window (3 x 3) whose weight does not stay in cache: its
      // separate packing pass writes the whole copy to memory and reads it back on every call.
      // 2 threads, in PyTorch's time, the separate pass (all loops parallel) against each panel
      // packed at the panel loop: ResNet's 512x7x7 3x3 (9.4 MB of weight) at batch 1
      // 1.16-1.38x -> 1.32-1.63x, batch 8 0.97x -> 1.01x; 256x14x14->512 stride 2 (4.7 MB)
      // 1.26-1.30x -> 1.47-1.53x, batch 8 0.98x -> 1.01x; 256x14x14 (2.4 MB) and 128x28x28->256
      // stride 2 (1.2 MB) level. Not for 1 x 1 windows: 1024x14x14->2048 stride 2 0.99x ->
      // 0.93x, 512x7x7->2048 at batch 8 0.99x -> 0.91x (at batch 1 level).
      auto sbytes = bytes_of(plan.streamed);
      int windowed = 0;
      for (const IterVar& r : c->reduce_axis) {
        auto ext = extent_of(r);
        if (!ext || *ext > 1) ++windowed;
      }
      bool weight_out_of_cache = windowed >= 2 && sbytes && *sbytes > kCachedBytes;
      panel_pack_pays = (row_operand(c, plan) || weight_out_of_cache) && panel_iterations &&
                        *panel_iterations >= kPackedRowsPanels;
    }
    // On by default when the streamed operand does not stay in cache and the reduction is
    // longer than the rows (a BERT dense layer at batch 1: 128 rows, 768 or 3072 long): then
    // its round trip through memory costs more than the panel-high buffer's (about the
    // output's size). One thread, CPU time: 128x768->3072 0.75x -> 0.89x PyTorch, 128x3072->768
    // 0.67x -> 0.87x; 1024x3072->768 and SGEMM 1024^3 unchanged (0.90x/0.91x, 0.84x/0.83x).
    auto sbytes = bytes_of(plan.streamed);
    bool pays_inner = can_region && (!sbytes || *sbytes > kCachedBytes) && *kext > *rext;
    int64_t mode = ctx.knob(st, "pack_inner", pays_inner ? 1 : panel_pack_pays ? 2 : 0, candidates);
    inner_pack = mode == 1;
    panel_pack = mode == 2;
  }
  std::vector<int64_t> plane_options = {0};
  if (order == 1 && block == 0 && block_rows == 0 && !stream_pack && k_block == 0)
    plane_options = plane_block_candidates(c, plan, second, rext, rows, width);
  bool plane_pays = plane_options.size() > 1 && plane_block_default(first, c, second, rows, width);
  bool plane = ctx.knob(st, "plane_block", plane_pays ? 1 : 0, plane_options) == 1;
  bool region = inner_pack || k_block > 0 || plane;
  std::vector<IterVar> outer = first;
  outer.insert(outer.end(), second.begin(), second.end());
  std::vector<IterVar> inner;
  if (plan.row_axis >= 0 && plan.row_axis < plan.vector_axis)
    inner = {ri, vi};
  else if (plan.row_axis >= 0)
    inner = {vi, ri};
  else
    inner = {vi};
  std::vector<IterVar> loop_order = outer;
  loop_order.insert(loop_order.end(), inner.begin(), inner.end());
  reorder(epilogue, loop_order);
  // The innermost epilogue loop is contiguous in the output when it is the output's last axis.
  IterVar last_inner = inner.back();
  int last_axis = last_inner == vi ? plan.vector_axis : plan.row_axis;
  if (last_axis == static_cast<int>(axes.size()) - 1) vectorize(epilogue, last_inner);

  std::optional<int64_t> work;
  if (auto out = output_size(ec)) {
    std::vector<IterVar> reds(c->reduce_axis.begin(), c->reduce_axis.end());
    if (auto r = const_product(reds)) work = *out * *r;
  }
  IterVar panel_loop;  // "prefetch" of the streamed operand's next panel (below)
  if (region) {
    // Only the panel loops run in parallel: each thread computes (and packs) whole panels.
    std::vector<IterVar> head = parallelize(ctx, epilogue, first, work, st);
    compute_at(compute, epilogue, head.back());
    outer = head;
    outer.insert(outer.end(), second.begin(), second.end());
  } else if (panel_pack) {
    // Only the panel loops run in parallel, each thread packing the panels it computes.
    std::vector<IterVar> head = parallelize(ctx, epilogue, first, work, st);
    outer = head;
    outer.insert(outer.end(), second.begin(), second.end());
    compute_at(compute, epilogue, outer.back());
    compute_at(stream_pack, epilogue, head.back());
    // "prefetch" (for the tuner, off by default): the pack reads its panel's slice of each row
    // of the streamed operand (4 KB apart in SGEMM 1024^3's B: each row a new page), fetched
    // kPackPrefetchRows rows ahead. SGEMM 1024^3 against torch.matmul, same process: one
    // thread 0.940x against 0.950x without, two threads 0.966x / 0.944x against 0.985x /
    // 0.954x. (Fetching the next panel's rows during this panel's row tiles measured 0.93-0.95x
    // against 0.95-0.97x, one thread.) So the pack is not waiting on those rows.
    // The pack's loop over the operand's rows: [panel, row, lane], the panel computed at the
    // panel loop (one iteration here), the lanes vectorized.
    const auto& pack_leaves = stream_pack->leaf_iter_vars;
    IterVar pack_rows = pack_leaves.size() == 3 ? pack_leaves[1] : nullptr;
    if (pack_rows && ctx.knob(st, "prefetch", 0, {0, 1}) == 1) {
      prefetch(stream_pack, Tensor(plan.streamed->op, plan.streamed->value_index), pack_rows,
               kPackPrefetchRows);
    }
  } else {
    // The tile's default product (see packed_rows_default) with rows that the tile does not
    // divide: only the panel loops run in parallel by default, so that the row tiles stay a
    // serial loop whose last, partial tile lowering peels off; fused with the panels, every
    // tile would test the guard. Idle machine, SGEMM 1024^3, 6 x 4: 0.97x against 0.79x
    // torch.matmul at 2 threads, 0.96x against 0.83x on one.
    // The same for a symbolic row count (a dynamic batch), whatever the tile: fused with the
    // panels, every row of every tile tested it; serial, lowering peels a guard-free main body.
    // One thread, CPU time, dense_pack 8 (symbolic) x 1024 -> 1024 + bias + ReLU: 772 -> 230 us.
    int64_t max_depth = 0;
    // Row blocks that the tile does not divide: each block's last tile is peeled, whatever
    // the tile (fused, the row tiles of every block would test the guard in the reduction).
    bool peel_rows = ((packed_rows_tile > 0 || block_rows > 0) && swept && *swept % rows != 0) ||
                     (plan.row_axis >= 0 && !rext && rows > 1);
    if (peel_rows && !padded.count(plan.row_axis) && order == 1 && block == 0 && !first.empty()) {
      max_depth = static_cast<int64_t>(first.size());
    }
    size_t before = outer.size();
    outer = parallelize(ctx, epilogue, outer, work, st, max_depth);
    // "prefetch" on the panel loop (panels outermost and parallel on their own, the streamed
    // operand read in place: a pre-packed weight): the next panel's slice is fetched during
    // this panel's row tiles. On by default for at most kPrefetchRows rows, where each panel
    // is read by few row tiles and comes from memory: one thread, CPU time, the BERT encoder
    // layer at batch 1 (128 rows; its dense weights, 28 MB, do not stay in cache between calls)
    // 12.72 -> 10.99 ms, paired 0.86. With 1024 rows (batch 8) each panel serves 171 row tiles
    // from cache and the prefetches only take load slots: 1.035 there, so off.
    if (!stream_pack && order == 1 && !first.empty() &&
        before - (outer.size() - 1) == first.size()) {
      // The rows one panel serves: its row tiles and any other loops inside it (a linear
      // layer's batch of sequences).
      auto tiles = const_product(second);
      bool few_rows =
          tiles && *tiles * rows <= kPrefetchRows && prefetch_pays(plan, const_product(first));
      if (ctx.knob(st, "prefetch", few_rows ? 1 : 0, {0, 1}) == 1) panel_loop = outer[0];
    }
    if (stream_pack) {
      std::vector<IterVar> pack_outer(stream_pack->leaf_iter_vars.begin(),
                                      stream_pack->leaf_iter_vars.end() - 1);
      // With row blocks, the operand's rows outermost: each pass of the copy reads one whole
      // row of a [K, N] operand (contiguous) into every panel, where panels outermost read each
      // panel's slice of every row (4 KiB apart for SGEMM 1024^3): one thread, SGEMM 1024^3 with
      // blocks of 256 rows, 0.98-0.99x against 0.95-0.97x torch.matmul.
      if (block_rows > 0 && pack_outer.size() == 2 && plan.streamed_dim == 1) {
        reorder(stream_pack, {pack_outer[1], pack_outer[0], stream_pack->leaf_iter_vars.back()});
        std::swap(pack_outer[0], pack_outer[1]);
      }
      parallelize(ctx, stream_pack, {pack_outer.front()}, output_size(as_compute(stream_pack->op)));
    }
  }
  if (!region && !panel_pack) compute_at(compute, epilogue, outer.back());
  if (panel_loop) {
    prefetch(epilogue, Tensor(plan.streamed->op, plan.streamed->value_index), panel_loop, 1);
  }

  // The block's loops: the other axes (one iteration each), the reductions, the rows
  // (unrolled), the vectors.
  std::vector<IterVar> data, reds;
  for (const IterVar& iv : compute->leaf_iter_vars) {
    (iv->kind == IterKind::kReduce ? reds : data).push_back(iv);
  }
  IterVar cv = data.back();
  IterVar cr = plan.row_axis >= 0 ? data[data.size() - 2] : nullptr;
  std::vector<IterVar> block_order(data.begin(), data.end() - (cr ? 2 : 1));
  IterVar ko;
  IterVar streamed_block;  // the reduction loop whose iterations read the next weight slice
  if (plane) {
    // The whole plane: the input-channel blocks outermost, then each row tile, the rest of
    // the reduction inside it.
    auto [cro, cri] = split(compute, cr, make_const(cr->var.dtype(), rows), Expr());
    streamed_block = reds[0];
    block_order.insert(block_order.begin(), reds[0]);
    block_order.push_back(cro);
    block_order.insert(block_order.end(), reds.begin() + 1, reds.end());
    if (*rext > rows) unroll(compute, cro);
    cr = cri;
  } else if (region) {
    // The block spans a panel's rows: for each block of the reduction, every row tile.
    auto [cro, cri] = split(compute, cr, make_const(cr->var.dtype(), rows), Expr());
    IterVar ki;
    std::tie(ko, ki) = split(compute, reds[0],
                             make_const(reds[0]->var.dtype(), k_block ? k_block : *kext), Expr());
    block_order.insert(block_order.end(), {ko, cro, ki});
    cr = cri;
    reds = {ki};
  } else {
    block_order.insert(block_order.end(), reds.begin(), reds.end());
  }
  if (cr) block_order.push_back(cr);
  block_order.push_back(cv);
  reorder(compute, block_order);
  // "prefetch": each input-channel block's slice of the streamed operand (a plane block's 36 KB
  // of 3x3 weights) is fetched during the block before it, spread over its row tiles
  // (lower/prefetch_streams.h). At batch 1 a network's weights come from memory on every call
  // (ResNet-18's 46 MB do not stay in cache from one call to the next), and the first of the
  // seven row tiles that read a slice otherwise waits for it. One thread, CPU time, loaded
  // machine, ResNet-18's 512x7x7 3x3 layer with the weights flushed from cache before each call
  // (as in the model): 1.90 -> 1.40 ms; with them in cache 1.40 -> 1.16 ms.
  if (streamed_block) {
    // One slice per input-channel block of each panel.
    auto panels = const_product(first);
    auto blocks = extent_of(streamed_block);
    std::optional<int64_t> slices;
    if (panels && blocks) slices = *panels * *blocks;
    if (ctx.knob(st, "prefetch", prefetch_pays(plan, slices) ? 1 : 0, {0, 1}) == 0) {
      streamed_block = nullptr;
    }
  }
  if (streamed_block) {
    prefetch(compute, Tensor(plan.streamed->op, plan.streamed->value_index), streamed_block, 1);
  }
  // "prefetch_steps": the panel's slice for the reduction step that many steps ahead is
  // fetched into L1 (a panel's next row: 256 bytes for 4 AVX-512 vectors). A panel swept by
  // many row tiles sits in L2, and the tile's vector loads otherwise wait on it there: a step's
  // 24 FMAs take about 12 cycles, its 4 lines about as long from L2. On by default, 8 steps
  // ahead, for a pre-packed operand and one reduction axis (dense and batch-matmul panels). Two
  // threads, interleaved against the same build without: dense_pack 1024x768->3072 0.966,
  // 1024x3072->768 0.971, 1024x768->2304 0.982, 128x768->768 0.961, 128x3072->768 0.942-0.976,
  // 128x768->3072 1.000-1.008; the BERT layer at batch 8 0.98 (paired, whole model). Offered
  // to the tuner, off by default: a panel packed at the panel loop (SGEMM 1024^3: 0.99-1.01,
  // the panel just written) and convolutions' blocked weights (54 layers of ResNet-50 at batch
  // 8: 0.998; ResNet-18 at batch 1: 0.992).
  std::vector<int64_t> step_candidates = {0};
  bool stepped = (!stream_pack || panel_pack) && !plane && !region;
  if (stepped) step_candidates = {0, 4, 8, 16};
  bool steps_pay = stepped && !stream_pack && c->reduce_axis.size() == 1;
  int64_t steps = ctx.knob(st, "prefetch_steps", steps_pay ? kPrefetchSteps : 0, step_candidates);
  if (steps > 0) {
    // The panel the row tiles read: the operand itself, or its copy packed at the panel loop.
    Tensor panel = panel_pack ? Tensor(stream_pack->op, 0)
                              : Tensor(plan.streamed->op, plan.streamed->value_index);
    prefetch(compute, panel, reds.back(), steps, /*cache_level=*/1);
  }
  // "prefetch_input": the broadcast operand (a convolution's input in NCHW) for the step of
  // its channel loop that many steps ahead, into L1. Consecutive channels are a whole image
  // plane apart (12.5 KB at 56x56), so no hardware prefetcher follows them, and each
  // broadcast's FMAs wait on a line from L2 or L3. On by default, 8 steps ahead, where the
  // channels are at least kInputStrideBytes apart, at least twice the distance of them, and
  // the reduction axes are not split. Two threads, without and with, in PyTorch's time: 1x1 at
  // batch 8 256x56x56->64 0.84x -> 1.03x, ->128 0.68x -> 0.87x, 512x28x28->128 0.83x -> 1.28x,
  // 1024x14x14->256 1.00x -> 1.16x; batch 1 256x56x56->64 1.15x -> 1.47x; ResNet-18's 3x3
  // layers level to 3.5% faster. The blocked (NCHWc) convolutions of compiled models, whose
  // channel blocks are a plane apart, take it too: ResNet-18/50 and MobileNetV2 whole, level to
  // 3% faster.
  StridedOperand input = broadcast_operand_stride(c, plan);
  // Only where the block reads the operand itself: not its packed rows, nor a stage inlined
  // into it (a convolution's padding, read through as its input).
  if (rows_packed || (input.read && inlined_producer(ctx.sch, input.read))) input = {};
  std::vector<int64_t> input_candidates = {0};
  bool unsplit = reds.size() == c->reduce_axis.size();
  if (input.read && unsplit && input.stride_bytes >= 64) input_candidates = {0, 4, 8, 16};
  auto channels = input.read ? extent_of(c->reduce_axis[input.axis]) : std::nullopt;
  bool input_pays = unsplit && input.read && input.stride_bytes >= kInputStrideBytes && channels &&
                    *channels >= 2 * kInputPrefetchSteps;
  int64_t input_steps =
      ctx.knob(st, "prefetch_input", input_pays ? kInputPrefetchSteps : 0, input_candidates);
  if (input_steps > 0) {
    prefetch(compute, Tensor(input.read->op, input.read->value_index), reds[input.axis],
             input_steps, /*cache_level=*/1);
  }
  if (inner_pack) compute_at(stream_pack, compute, ko);
  if (cr && rows > 1) unroll(compute, cr);
  vectorize(compute, cv);
  // A short innermost reduce loop (a convolution's kernel width) is unrolled as well.
  auto last_red = extent_of(reds.back());
  bool short_red = last_red && *last_red <= 4 && reds.size() > 1;
  if (ctx.knob(st, "unroll_reduce", short_red ? 1 : 0, {0, 1}) == 1) unroll(compute, reds.back());
  if (stream_pack) {
    DataType packed_type = as_compute(stream_pack->op)->output_dtype(0);
    unroll_for_transposed_reads(stream_pack, plan.streamed_dim, sshape.size(),
                                ctx.lanes(packed_type));
  }
}

}  // namespace ptb::autoschedule
