#include "autoschedule/analysis.h"

#include <algorithm>
#include <unordered_set>

#include "ir/op.h"
#include "ir/visitor.h"
#include "te/scan.h"

namespace ptb::autoschedule {

const ComputeOpNode* as_compute(const Operation& op) {
  if (!op || op->kind != OpKind::kCompute) return nullptr;
  return static_cast<const ComputeOpNode*>(op.get());
}

const ComputeOpNode* inlined_producer(const Schedule& sch, const TensorRead* read) {
  for (const Stage& producer : sch->stages) {
    if (producer->origin_op == read->op && producer->attach_type == AttachType::kInline) {
      return as_compute(producer->op);
    }
  }
  return nullptr;
}

const ComputeOpNode* winograd_inverse_in(const Schedule& sch, const ComputeOpNode* c) {
  auto is_inverse = [](const ComputeOpNode* op) {
    return op != nullptr && op->tag == "winograd_inverse_transform";
  };
  // Asked of every injective stage: most schedules hold none (one pass over the stages).
  if (std::none_of(sch->stages.begin(), sch->stages.end(),
                   [&](const Stage& st) { return is_inverse(as_compute(st->origin_op)); })) {
    return nullptr;
  }
  // Each inlined producer visited once (an epilogue's reads join: a residual add reads the
  // block's input and the convolution's result), at most 8 deep.
  std::unordered_set<const ComputeOpNode*> seen;
  std::vector<std::pair<const ComputeOpNode*, int>> todo{{c, 0}};
  while (!todo.empty()) {
    auto [op, depth] = todo.back();
    todo.pop_back();
    if (op == nullptr || !seen.insert(op).second) continue;
    if (is_inverse(op)) return op;
    if (depth >= 8) continue;
    for (const Expr& body : op->body) {
      for (const TensorRead* read : tensor_reads(body)) {
        todo.emplace_back(inlined_producer(sch, read), depth + 1);
      }
    }
  }
  return nullptr;
}

int64_t elements_of(const Operation& op, int value_index) {
  int64_t n = 1;
  for (const Expr& e : op->output_shape(value_index)) {
    auto v = as_const_int(e);
    if (!v) return 0;
    n *= *v;
  }
  return n;
}

bool is_tuple_of_sums(const ComputeOpNode* c) {
  if (c == nullptr || c->body.size() < 2) return false;
  const auto* first = c->body[0].as<Reduce>();
  if (first == nullptr || first->combiner != ReduceKind::kCustom || !first->reducer) return false;
  const CommReducerNode& r = *first->reducer;
  for (size_t k = 0; k < r.result.size(); ++k) {
    const auto* add = r.result[k].as<Add>();
    if (add == nullptr) return false;
    bool in_order = add->a.get() == r.lhs[k].get() && add->b.get() == r.rhs[k].get();
    bool swapped = add->a.get() == r.rhs[k].get() && add->b.get() == r.lhs[k].get();
    if (!in_order && !swapped) return false;
    auto fzero = as_const_float(r.identity[k]);
    if (!is_const_int(r.identity[k], 0) && !(fzero && *fzero == 0.0)) return false;
  }
  return true;
}

StageKind classify(const Stage& st) {
  if (st->op->kind == OpKind::kPlaceholder) return StageKind::kPlaceholder;
  const ComputeOpNode* c = as_compute(st->op);
  // A scan is a compute whose time loop must stay outermost and serial: neither inlined nor
  // given an injective stage's fused, parallel loops; computed at root as it is.
  if (c == nullptr || as_scan(st->op) != nullptr) return StageKind::kOther;
  if (!c->is_reduction()) return StageKind::kInjective;
  if (c->body.size() != 1) return is_tuple_of_sums(c) ? StageKind::kReduction : StageKind::kOther;
  const auto* red = c->body[0].as<Reduce>();
  if (red == nullptr) return StageKind::kOther;
  switch (red->combiner) {
    case ReduceKind::kSum:
    case ReduceKind::kProd:
    case ReduceKind::kMin:
    case ReduceKind::kMax:
      return StageKind::kReduction;
    case ReduceKind::kCustom:  // one value: commutative by contract, reduced as the others
      return StageKind::kReduction;
  }
  return StageKind::kOther;
}

std::vector<const TensorRead*> tensor_reads(const Expr& e) {
  std::vector<const TensorRead*> reads;
  for_each_expr(e, [&](const Expr& sub) {
    if (const auto* r = sub.as<TensorRead>()) reads.push_back(r);
  });
  return reads;
}

bool calls_math(const Expr& e) {
  bool found = false;
  for_each_expr(e, [&](const Expr& sub) {
    // Bitwise operations are single integer instructions, not math calls.
    if (const auto* call = sub.as<Call>()) {
      found |= call->op != Intrinsic::kIfThenElse && !is_bitwise_intrinsic(call->op);
    }
  });
  return found;
}

std::optional<int64_t> const_extent(const IterVar& iv) { return as_const_int(iv->dom.extent); }

std::optional<int64_t> const_product(const std::vector<IterVar>& ivs) {
  int64_t product = 1;
  for (const IterVar& iv : ivs) {
    auto e = const_extent(iv);
    if (!e) return std::nullopt;
    product *= *e;
  }
  return product;
}

std::optional<int64_t> output_size(const ComputeOpNode* c) {
  int64_t n = 1;
  for (const Expr& e : c->shape) {
    auto v = as_const_int(e);
    if (!v) return std::nullopt;
    n *= *v;
  }
  return n;
}

bool same_extent(const Expr& a, const Expr& b) {
  if (a.get() == b.get()) return true;
  auto x = as_const_int(a), y = as_const_int(b);
  return x && y && *x == *y;
}

}  // namespace ptb::autoschedule
