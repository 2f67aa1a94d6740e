// Inlining: an injective intermediate stage (elementwise, broadcast, pad, reshape, transpose)
// is computed inside its consumers instead of being stored. Stages read by a register-blocked
// reduction stay stored (the micro-kernel reads each element many times; recomputing a pad's
// condition or a transpose's strided read there would cost more than one copy), and so do row
// buffers (rule_row_attach.cc: softmax's exponentials, computed once per row for two readers;
// a separable max pool's column maxima, computed once per output row).
#include "autoschedule/analysis.h"
#include "autoschedule/rules.h"
#include "ir/op.h"
#include "schedule/primitives.h"

namespace ptb::autoschedule {

namespace {

// Whether every consumer of `st` is elementwise or broadcast arithmetic over `st`'s own shape
// (a bias, an activation, a residual add in the same blocked layout), which reads each element
// once, at its own vector lane.
bool elementwise_consumers(const Schedule& sch, const Stage& st) {
  const std::vector<Expr>& shape = st->op->output_shape(0);
  for (const Stage& consumer : sch->consumers(st)) {
    const ComputeOpNode* cc = as_compute(consumer->op);
    if (cc == nullptr || (cc->tag != "elemwise" && cc->tag != "broadcast")) return false;
    const std::vector<Expr>& out = consumer->op->output_shape(0);
    if (out.size() != shape.size()) return false;
    for (size_t d = 0; d < out.size(); ++d) {
      if (as_const_int(out[d]) != as_const_int(shape[d])) return false;
    }
  }
  return true;
}

}  // namespace

void inline_injective(Context& ctx, const std::unordered_set<const StageNode*>& keep) {
  for (const Stage& st : ctx.sch->stages) {
    if (classify(st) != StageKind::kInjective || st->is_output) continue;
    if (st->attach_type != AttachType::kRoot || !st->relations.empty()) continue;
    bool consumers_ok = true;
    for (const Stage& consumer : ctx.sch->consumers(st)) {
      // Only computes can take an inlined body; other operation kinds read stored tensors.
      if (as_compute(consumer->op) == nullptr) consumers_ok = false;
    }
    if (!consumers_ok) continue;
    // Winograd's inverse transform, with the epilogue fused into it, is stored in its own
    // layout before any other reader (a layout change back to NCHW, a pool, the next data
    // transform): read at another lane, or several times, each read would choose and sum
    // its tree anew (a vector whose lanes lie in different tiles sums every branch).
    bool winograd_result = winograd_inverse_in(ctx.sch, as_compute(st->op)) != nullptr &&
                           !elementwise_consumers(ctx.sch, st);
    int64_t fallback = keep.count(st.get()) || row_buffer(ctx, st, keep) ||
                               window_rows_buffer(ctx, st) || winograd_result
                           ? 0
                           : 1;
    if (ctx.knob(st, "inline", fallback, {0, 1}) == 1) {
      compute_inline(st);
      ctx.rule(st, "inline");
    }
  }
}

}  // namespace ptb::autoschedule
