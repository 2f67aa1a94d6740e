#include "autoschedule/stream_prefetch.h"

#include <algorithm>

#include "autoschedule/analysis.h"
#include "ir/op.h"
#include "schedule/primitives.h"

namespace ptb::autoschedule {

namespace {

// Inlined producers are followed at most this deep (a chain of elementwise stages).
constexpr int kMaxInlineDepth = 8;

bool math_in(const Context& ctx, const ComputeOpNode* c, int depth) {
  for (const Expr& body : c->body) {
    if (calls_math(body)) return true;
    for (const TensorRead* read : tensor_reads(body)) {
      const ComputeOpNode* pc = inlined_producer(ctx.sch, read);
      if (pc != nullptr && depth < kMaxInlineDepth && math_in(ctx, pc, depth + 1)) return true;
    }
  }
  return false;
}

void collect_streamed(const Context& ctx, const ComputeOpNode* c, int64_t elements, int depth,
                      const std::vector<Stage>& stages, std::vector<Tensor>& found) {
  for (const Expr& body : c->body) {
    for (const TensorRead* read : tensor_reads(body)) {
      const ComputeOpNode* pc = inlined_producer(ctx.sch, read);
      if (pc != nullptr) {
        if (depth < kMaxInlineDepth) collect_streamed(ctx, pc, elements, depth + 1, stages, found);
        continue;
      }
      bool own = std::any_of(stages.begin(), stages.end(),
                             [&](const Stage& st) { return st->origin_op == read->op; });
      int64_t n = elements_of(read->op, read->value_index);
      Tensor t(read->op, read->value_index);
      if (!own && n >= elements && std::find(found.begin(), found.end(), t) == found.end()) {
        found.push_back(t);
      }
    }
  }
}

}  // namespace

bool computes_math(const Context& ctx, const Stage& st) {
  // The operation as written: a rule may have rewritten the stage's (softmax's sum of
  // exponentials then reads them from a summand stage of its own, which is not inlined).
  const ComputeOpNode* c = as_compute(st->origin_op);
  return c != nullptr && math_in(ctx, c, 0);
}

std::vector<Tensor> streamed_tensors(const Context& ctx, const std::vector<Stage>& stages,
                                     int64_t elements) {
  std::vector<Tensor> found;
  for (const Stage& st : stages) {
    const ComputeOpNode* c = as_compute(st->op);
    if (c != nullptr) collect_streamed(ctx, c, elements, 0, stages, found);
  }
  return found;
}

std::optional<int64_t> streamed_bytes(const std::vector<Tensor>& inputs, int64_t output_bytes) {
  int64_t bytes = output_bytes;
  for (const Tensor& t : inputs) {
    int64_t n = elements_of(t.op(), t.value_index());
    if (n == 0) return std::nullopt;
    bytes += n * t.dtype().bytes();
  }
  return bytes;
}

void prefetch_ahead(Context& ctx, const Stage& st, const IterVar& loop,
                    const std::vector<Tensor>& inputs, int64_t iterations, int64_t output_bytes,
                    int64_t ahead_bytes) {
  if (inputs.empty() || iterations <= 0) return;
  auto bytes = streamed_bytes(inputs, output_bytes);
  if (!bytes || *bytes < kFromMemoryBytes || ctx.knob(st, "prefetch", 1, {0, 1}) == 0) return;
  for (const Tensor& t : inputs) {
    // The bytes of the tensor one iteration of the loop walks through.
    int64_t step = std::max<int64_t>(1, *streamed_bytes({t}, 0) / iterations);
    prefetch(st, t, loop, std::max<int64_t>(1, (ahead_bytes + step - 1) / step));
  }
}

}  // namespace ptb::autoschedule
