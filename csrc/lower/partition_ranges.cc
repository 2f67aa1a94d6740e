#include "lower/partition_ranges.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/simplify.h"
#include "ir/substitute.h"
#include "ir/visitor.h"
#include "lower/value_set.h"
#include "schedule/interval.h"

namespace ptb {

namespace {

// The most parts one loop is split into (each is a copy of its body).
constexpr size_t kMaxParts = 4;

// Whether `v` occurs in e only through sums, differences, products by constants and widening
// casts (e is affine in v).
bool affine_in(const Expr& e, const Expr& v) {
  if (e.same_as(v)) return true;
  bool uses = false;
  for_each_expr(e, [&](const Expr& sub) { uses = uses || sub.same_as(v); });
  if (!uses) return true;
  if (const auto* x = e.as<Add>()) return affine_in(x->a, v) && affine_in(x->b, v);
  if (const auto* x = e.as<Sub>()) return affine_in(x->a, v) && affine_in(x->b, v);
  if (const auto* x = e.as<Mul>()) {
    if (as_const_int(x->b)) return affine_in(x->a, v);
    if (as_const_int(x->a)) return affine_in(x->b, v);
    return false;
  }
  if (const auto* x = e.as<Cast>()) {
    DataType from = x->value.dtype(), to = x->dtype;
    return from.is_integer() && to.is_integer() && to.bits() >= from.bits() &&
           affine_in(x->value, v);
  }
  return false;
}

// A comparison that holds iff coef * v + rest < limit, rest ranging over `rest` as the inner
// loops run.
struct Comparison {
  Expr node;
  int64_t coef;
  ValueSet rest;
  int64_t limit;

  // Over iterations [first, last] of v: 1 holds on all, 0 fails on all, -1 neither.
  int decided(int64_t first, int64_t last) const {
    int64_t low = coef > 0 ? first : last, high = coef > 0 ? last : first;
    if (coef * high + rest.hi < limit) return 1;
    if (coef * low + rest.lo >= limit) return 0;
    return -1;
  }

  // The iterations where it starts or stops holding on every inner iteration, and where it
  // starts or stops failing on all of them.
  std::vector<int64_t> cuts() const {
    if (coef > 0) {
      // all hold while coef * i + rest.hi < limit; all fail from coef * i + rest.lo >= limit
      return {floor_div(limit - rest.hi - 1, coef) + 1, -floor_div(rest.lo - limit, coef)};
    }
    int64_t c = -coef;
    // all hold from c * i > rest.hi - limit; all fail while c * i <= rest.lo - limit
    return {floor_div(rest.hi - limit, c) + 1, floor_div(rest.lo - limit, c) + 1};
  }
};

std::optional<Comparison> comparison_in(const Expr& cmp, const Expr& v, const LoopRanges& inner) {
  Expr a, b;
  int64_t limit = 0;  // a - b < 0, or a - b < 1 for a non-strict comparison
  if (const auto* x = cmp.as<LT>()) a = x->a, b = x->b;
  if (const auto* x = cmp.as<LE>()) a = x->a, b = x->b, limit = 1;
  if (const auto* x = cmp.as<GT>()) a = x->b, b = x->a;
  if (const auto* x = cmp.as<GE>()) a = x->b, b = x->a, limit = 1;
  if (!a.defined() || !a.dtype().is_scalar() || !a.dtype().is_integer()) return std::nullopt;
  bool ok = true, uses_v = false;
  for_each_expr(cmp, [&](const Expr& sub) {
    if (sub.same_as(v)) {
      uses_v = true;
    } else if (sub.as<Var>() && inner.count(sub.get()) == 0) {
      ok = false;  // a variable of an enclosing loop, a let, a size: not known here
    }
    ExprKind k = sub->kind;
    if (k == ExprKind::kLoad || k == ExprKind::kCall || k == ExprKind::kLet) ok = false;
  });
  Expr d = Sub::make(a, b);
  if (!ok || !uses_v || !affine_in(d, v)) return std::nullopt;
  auto at = [&](int64_t value) {
    VarMap m;
    m[v.get()] = make_const(v.dtype(), value);
    return simplify(substitute(d, m));
  };
  Expr d0 = at(0);
  auto coef = as_const_int(simplify(Sub::make(at(1), d0)));
  auto rest = value_set(d0, inner);
  if (!coef || *coef == 0 || !rest) return std::nullopt;
  return Comparison{cmp, *coef, *rest, limit};
}

// Replaces the comparisons a part of the loop decides by constants.
class Decide : public IRMutator {
 public:
  explicit Decide(std::vector<std::pair<Expr, bool>> decided) : decided_(std::move(decided)) {}

 protected:
  using IRMutator::mutate_node;
  Expr mutate_node(const LT* op, const Expr& self) override {
    return decide(self, [&] { return IRMutator::mutate_node(op, self); });
  }
  Expr mutate_node(const LE* op, const Expr& self) override {
    return decide(self, [&] { return IRMutator::mutate_node(op, self); });
  }
  Expr mutate_node(const GT* op, const Expr& self) override {
    return decide(self, [&] { return IRMutator::mutate_node(op, self); });
  }
  Expr mutate_node(const GE* op, const Expr& self) override {
    return decide(self, [&] { return IRMutator::mutate_node(op, self); });
  }

 private:
  template <typename F>
  Expr decide(const Expr& self, F otherwise) {
    for (const auto& [cmp, value] : decided_) {
      if (structurally_equal(self, cmp)) return make_const(self.dtype(), int64_t{value ? 1 : 0});
    }
    return otherwise();
  }
  std::vector<std::pair<Expr, bool>> decided_;
};

// The loops inside a loop body with constant bounds, and whether one of them is vectorized. A
// variable that also runs a loop of symbolic bounds has no range: the constant loop's alone
// would not bound it.
struct InnerLoops : IRVisitor {
  LoopRanges ranges;
  bool vectorized = false;
  using IRVisitor::visit;
  void visit(const Expr&) override {}

  void scan(const Stmt& body) {
    visit(body);
    for (const ExprNode* v : unbounded_) ranges.erase(v);
  }

 protected:
  void visit_node(const For* op) override {
    vectorized = vectorized || op->for_kind == ForKind::kVectorized;
    auto min = as_const_int(op->min), extent = as_const_int(op->extent);
    if (min && extent && *extent >= 1) {
      add_loop_range(ranges, op->var, *min, *extent);
    } else if (!(extent && *extent < 1)) {
      unbounded_.push_back(op->var.get());
    }
    IRVisitor::visit_node(op);
  }

 private:
  std::vector<const ExprNode*> unbounded_;
};

class PartitionRanges : public IRMutator {
 protected:
  using IRMutator::mutate_node;
  Stmt mutate_node(const For* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    Stmt loop =
        body.same_as(op->body) ? self : For::make(op->var, op->min, op->extent, op->for_kind, body);
    auto min = as_const_int(op->min), extent = as_const_int(op->extent);
    if (op->for_kind != ForKind::kSerial || !min || !extent || *extent < 2) return loop;
    InnerLoops scan;
    scan.scan(body);
    if (!scan.vectorized) return loop;
    const LoopRanges& inner = scan.ranges;
    int64_t first = *min, last = *min + *extent - 1;
    std::vector<Comparison> comparisons;
    std::vector<int64_t> cuts;  // iterations that start a part
    for_each_expr(body, [&](const Expr& e) {
      ExprKind k = e->kind;
      if (k != ExprKind::kLT && k != ExprKind::kLE && k != ExprKind::kGT && k != ExprKind::kGE) {
        return;
      }
      for (const Comparison& c : comparisons) {
        if (structurally_equal(c.node, e)) return;
      }
      auto c = comparison_in(e, op->var, inner);
      if (!c || c->decided(first, last) != -1) return;
      comparisons.push_back(*c);
      for (int64_t cut : c->cuts()) {
        if (cut > first && cut <= last) cuts.push_back(cut);
      }
    });
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    if (cuts.empty() || cuts.size() + 1 > kMaxParts) return loop;
    std::vector<Stmt> parts;
    cuts.push_back(last + 1);
    int64_t start = first;
    for (int64_t end : cuts) {
      std::vector<std::pair<Expr, bool>> decided;
      for (const Comparison& c : comparisons) {
        int d = c.decided(start, end - 1);
        if (d != -1) decided.emplace_back(c.node, d == 1);
      }
      Stmt part = simplify(Decide(decided).mutate(body));
      parts.push_back(For::make(op->var, make_const(op->min.dtype(), start),
                                make_const(op->extent.dtype(), end - start), op->for_kind, part));
      start = end;
    }
    return Block::make(parts);
  }
};

}  // namespace

Stmt partition_ranges(const Stmt& s) { return PartitionRanges().mutate(s); }

}  // namespace ptb
