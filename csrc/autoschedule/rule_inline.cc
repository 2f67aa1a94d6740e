// Inlining: an injective intermediate stage (elementwise, broadcast, pad, reshape, transpose)
// is computed inside its consumers instead of being stored. Stages read by a register-blocked
// reduction stay stored (the micro-kernel reads each element many times; recomputing a pad's
// condition or a transpose's strided read there would cost more than one copy), and so do row
// buffers (rule_row_attach.cc: softmax's exponentials, computed once per row for two readers;
// a separable max pool's column maxima, computed once per output row).
#include "autoschedule/analysis.h"
#include "autoschedule/rules.h"
#include "schedule/primitives.h"

namespace ptb::autoschedule {

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
    int64_t fallback =
        keep.count(st.get()) || row_buffer(ctx, st, keep) || window_rows_buffer(ctx, st) ? 0 : 1;
    if (ctx.knob(st, "inline", fallback, {0, 1}) == 1) {
      compute_inline(st);
      ctx.rule(st, "inline");
    }
  }
}

}  // namespace ptb::autoschedule
