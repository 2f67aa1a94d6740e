// Inlining: an injective intermediate stage (elementwise, broadcast, pad, reshape, transpose)
// is computed inside its consumers instead of being stored. Stages read by a register-blocked
// reduction stay stored (the micro-kernel reads each element many times; recomputing a pad's
// condition or a transpose's strided read there would cost more than one copy), and so do row
// buffers (rule_row_attach.cc: softmax's exponentials, computed once per row for two readers;
// a separable max pool's column maxima, computed once per output row). So does a stage that one
// consumer reads many times over when its inlined body is large: each read is a copy of the
// whole expression tree, and a chain of stages that each read the last twice (exp(D) + sin(D))
// doubles the tree at every stage (14 stages took 6 s to build, 40 did not finish).
#include <algorithm>
#include <unordered_map>

#include "autoschedule/analysis.h"
#include "autoschedule/rules.h"
#include "ir/op.h"
#include "ir/visitor.h"
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

// The most expression nodes that inlining one stage may put into one consumer's body (its
// inlined body's size times the number of times the consumer reads it).
constexpr int64_t kMaxInlinedNodes = 2048;
constexpr int64_t kSaturated = int64_t{1} << 40;

// Sizes of expressions as trees: a node shared by two parents (the DAG the DSL builds when a
// value is read twice) counts once per path, as lowering's tree walks see it. A read of an
// inlined stage counts as that stage's body. Memoized over the DAG, iterative (bodies can be
// tens of thousands of nodes deep).
class TreeSizes {
 public:
  // Tree sizes of the stages inlined so far (their reads expand to this).
  std::unordered_map<const OperationNode*, int64_t> inlined;

  int64_t size(const Expr& root) {
    return fold(root, [&](const Expr& e) -> int64_t {
      const auto* read = e.as<TensorRead>();
      if (read == nullptr) return 1;
      auto it = inlined.find(read->op.get());
      return it == inlined.end() ? 1 : it->second;
    });
  }

  // How many times the tree of `root` reads `op`.
  int64_t reads(const Expr& root, const OperationNode* op) {
    return fold(root, [&](const Expr& e) -> int64_t {
      const auto* read = e.as<TensorRead>();
      return read != nullptr && read->op.get() == op ? 1 : 0;
    });
  }

 private:
  // Sum over the tree of own(node), saturating.
  template <typename F>
  int64_t fold(const Expr& root, F own) {
    std::unordered_map<const ExprNode*, int64_t> memo;
    std::vector<std::pair<const Expr*, bool>> stack{{&root, false}};
    std::vector<const Expr*> children;
    while (!stack.empty()) {
      auto [e, expanded] = stack.back();
      stack.pop_back();
      if (!e->defined() || (!expanded && memo.count(e->get()))) continue;
      children.clear();
      detail::push_expr_children(*e, &children);
      if (!expanded) {
        stack.push_back({e, true});
        for (const Expr* c : children) stack.push_back({c, false});
        continue;
      }
      int64_t total = own(*e);
      for (const Expr* c : children) {
        if (c->defined()) total = std::min(kSaturated, total + memo.at(c->get()));
      }
      memo[e->get()] = total;
    }
    return root.defined() ? memo.at(root.get()) : 0;
  }
};

// The tree size of `st`'s body, or -1 when inlining it would put more than kMaxInlinedNodes
// nodes into one consumer's body.
int64_t inlined_size(const Schedule& sch, const Stage& st, TreeSizes& sizes) {
  const ComputeOpNode* compute = as_compute(st->op);
  int64_t body = 0;
  for (const Expr& e : compute->body) body = std::min(kSaturated, body + sizes.size(e));
  for (const Stage& consumer : sch->consumers(st)) {
    int64_t reads = 0;
    for (const Expr& e : as_compute(consumer->op)->body) {
      reads = std::min(kSaturated, reads + sizes.reads(e, st->op.get()));
    }
    if (reads > 1 && body > kMaxInlinedNodes / reads) return -1;
  }
  return body;
}

}  // namespace

void inline_injective(Context& ctx, const std::unordered_set<const StageNode*>& keep) {
  TreeSizes sizes;
  for (const Stage& st : ctx.sch->stages) {
    if (classify(st) != StageKind::kInjective || st->is_output) continue;
    if (st->attach_type != AttachType::kRoot || !st->relations.empty()) continue;
    bool consumers_ok = true;
    for (const Stage& consumer : ctx.sch->consumers(st)) {
      // Only computes can take an inlined body; other operation kinds read stored tensors.
      if (as_compute(consumer->op) == nullptr) consumers_ok = false;
    }
    if (!consumers_ok) continue;
    int64_t size = inlined_size(ctx.sch, st, sizes);
    if (size < 0) continue;  // stored, and scheduled as any other injective stage
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
      sizes.inlined[st->op.get()] = size;
      ctx.rule(st, "inline");
    }
  }
}

}  // namespace ptb::autoschedule
