#include "codegen/strided_groups.h"

#include <algorithm>
#include <unordered_set>

#include "ir/op.h"
#include "ir/visitor.h"
#include "schedule/interval.h"

namespace ptb {

namespace {

// base = rest + c for a constant c (rest + c, c + rest, rest - c, and a widening cast of
// those: index arithmetic does not overflow), else base + 0.
std::pair<Expr, int64_t> split_constant(const Expr& base) {
  if (const auto* cast = base.as<Cast>()) {
    DataType from = cast->value.dtype();
    if (from.is_int() && base.dtype().is_int() && from.bits() < base.dtype().bits()) {
      auto [rest, c] = split_constant(cast->value);
      if (c != 0) return {Cast::make(base.dtype(), rest), c};
    }
  }
  if (const auto* add = base.as<Add>()) {
    if (auto c = as_const_int(add->b)) return {add->a, *c};
    if (auto c = as_const_int(add->a)) return {add->b, *c};
  }
  if (const auto* sub = base.as<Sub>()) {
    if (auto c = as_const_int(sub->b)) return {sub->a, -*c};
  }
  if (auto c = as_const_int(base)) return {make_zero(base.dtype()), *c};
  return {base, 0};
}

class Finder {
 public:
  explicit Finder(int64_t max_stride) : max_stride_(max_stride) {}

  void visit(const Expr& e) {
    if (!e.defined() || !seen_.insert(e.get()).second) return;
    switch (e->kind) {
      case ExprKind::kSelect:
        visit(e.as<Select>()->condition);  // the operands may be masked by it
        return;
      case ExprKind::kLet:
        visit(e.as<Let>()->value);  // the body may read through the bound variable
        return;
      case ExprKind::kCall:
        if (e.as<Call>()->op == Intrinsic::kIfThenElse) {
          visit(e.as<Call>()->args[0]);
          return;
        }
        break;
      case ExprKind::kLoad:
        add(e.as<Load>());
        return;  // an index of loads is left alone
      default:
        break;
    }
    std::vector<const Expr*> children;
    detail::push_expr_children(e, &children);
    for (auto it = children.rbegin(); it != children.rend(); ++it) visit(**it);
  }

  std::vector<StridedGroup> groups() {
    std::vector<StridedGroup> out;
    for (StridedGroup& g : groups_) {
      bool distinct = std::any_of(g.taps.begin(), g.taps.end(), [&](const StridedTap& t) {
        return t.offset != g.taps[0].offset;
      });
      if (g.taps.size() >= 2 && distinct) out.push_back(std::move(g));
    }
    return out;
  }

 private:
  void add(const Load* load) {
    if (load->predicate.defined()) return;
    const auto* ramp = load->index.as<Ramp>();
    if (!ramp || load->dtype.lanes() < 4) return;
    if (!load->dtype.is_float() && load->dtype.bits() < 8) return;
    auto stride = as_const_int(ramp->stride);
    if (!stride || *stride < 1 || *stride > max_stride_) return;
    auto [base, offset] = split_constant(ramp->base);
    for (StridedGroup& g : groups_) {
      if (g.buffer->data.same_as(load->buffer->data) && g.stride == *stride &&
          g.lanes == load->dtype.lanes() && g.taps[0].load->dtype == load->dtype &&
          structurally_equal(g.base, base)) {
        g.taps.push_back({load, offset});
        return;
      }
    }
    groups_.push_back({load->buffer, base, *stride, load->dtype.lanes(), {{load, offset}}});
  }

  int64_t max_stride_;
  std::unordered_set<const ExprNode*> seen_;
  std::vector<StridedGroup> groups_;
};

}  // namespace

std::vector<StridedGroup> find_strided_groups(const Expr& value, int64_t max_stride) {
  Finder f(max_stride);
  f.visit(value);
  return f.groups();
}

}  // namespace ptb
