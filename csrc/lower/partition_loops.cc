#include "lower/partition_loops.h"

#include <algorithm>
#include <climits>
#include <numeric>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/simplify.h"
#include "ir/substitute.h"
#include "ir/visitor.h"
#include "lower/value_set.h"

namespace ptb {

namespace {

using NodeSet = std::unordered_set<const ExprNode*>;

// What one loop body holds: its tile loops (unrolled or vectorized, constant bounds), the
// variables it binds otherwise, the conjuncts of its guards (an `if` without else), and which of
// those sit inside an unrolled loop (unrolling copies them).
class BodyScan : public IRVisitor {
 public:
  LoopRanges tiles;
  NodeSet lanes;  // the vectorized loops among the tiles
  NodeSet defined;
  std::vector<Expr> conjuncts;
  NodeSet unrolled;
  NodeSet guarding_several;  // of those, guards copied two or more times per position
  using IRVisitor::visit;
  void visit(const Expr&) override {}  // statements only: the conjuncts are read separately

 protected:
  void visit_node(const For* op) override {
    auto min = as_const_int(op->min);
    auto extent = as_const_int(op->extent);
    bool tile = op->for_kind == ForKind::kUnrolled || op->for_kind == ForKind::kVectorized;
    if (tile && min && extent && *extent >= 1) {
      add_loop_range(tiles, op->var, *min, *extent);
      if (op->for_kind == ForKind::kVectorized) lanes.insert(op->var.get());
    } else {
      defined.insert(op->var.get());
    }
    int unrolled = op->for_kind == ForKind::kUnrolled ? 1 : 0;
    unrolled_depth_ += unrolled;
    // A vectorized loop of 32-bit lanes becomes one vector statement per 16 lanes.
    bool copied = unrolled || op->for_kind == ForKind::kVectorized;
    int64_t copies = !extent ? 1 : unrolled ? *extent : (*extent + 15) / 16;
    if (copied) tile_copies_.emplace_back(op->var.get(), copies);
    IRVisitor::visit_node(op);
    if (copied) tile_copies_.pop_back();
    unrolled_depth_ -= unrolled;
  }
  void visit_node(const LetStmt* op) override {
    defined.insert(op->var.get());
    IRVisitor::visit_node(op);
  }
  void visit_node(const IfThenElse* op) override {
    if (!op->else_case.defined()) {
      size_t first = conjuncts.size();
      split_conjuncts(op->condition, &conjuncts);
      bool heavy = unrolled_depth_ > 0 && copies_per_position(op->condition) >= 2;
      for (size_t i = first; unrolled_depth_ > 0 && i < conjuncts.size(); ++i) {
        unrolled.insert(conjuncts[i].get());
        if (heavy) guarding_several.insert(conjuncts[i].get());
      }
    }
    IRVisitor::visit_node(op);
  }

 private:
  // The copies unrolling and vectorizing make of one guard at one position of its own tile
  // variables: the tile loops inside the innermost one the condition reads (a row's vectors,
  // for a row guard).
  int64_t copies_per_position(const Expr& cond) const {
    int64_t copies = 1;
    for (auto it = tile_copies_.rbegin(); it != tile_copies_.rend(); ++it) {
      bool read = false;
      for_each_expr(cond, [&](const Expr& e) { read |= e.get() == it->first; });
      if (read) break;
      copies *= it->second;
    }
    return copies;
  }

  int unrolled_depth_ = 0;
  std::vector<std::pair<const ExprNode*, int64_t>> tile_copies_;  // (variable, copies)
};

bool uses_any(const Expr& e, const LoopRanges& vars) {
  bool found = false;
  for_each_expr(e, [&](const Expr& sub) {
    if (!found && sub.as<Var>() && vars.count(sub.get())) found = true;
  });
  return found;
}

// Adds `sign * e` to the tile variables' coefficients; false when e is not affine in them.
bool affine(const Expr& e, const LoopRanges& tiles, int64_t sign,
            std::unordered_map<const ExprNode*, int64_t>* coef) {
  if (!uses_any(e, tiles)) return true;
  if (e.as<Var>()) {
    (*coef)[e.get()] += sign;
    return true;
  }
  if (const auto* x = e.as<Add>()) {
    return affine(x->a, tiles, sign, coef) && affine(x->b, tiles, sign, coef);
  }
  if (const auto* x = e.as<Sub>()) {
    return affine(x->a, tiles, sign, coef) && affine(x->b, tiles, -sign, coef);
  }
  if (const auto* x = e.as<Mul>()) {
    if (auto c = as_const_int(x->b)) return affine(x->a, tiles, sign * *c, coef);
    if (auto c = as_const_int(x->a)) return affine(x->b, tiles, sign * *c, coef);
    return false;
  }
  if (const auto* x = e.as<Cast>()) {
    DataType from = x->value.dtype(), to = x->dtype;
    if (from.is_integer() && to.is_integer() && to.bits() >= from.bits()) {
      return affine(x->value, tiles, sign, coef);
    }
  }
  return false;
}

// A guard's comparison affine in the tile variables, as
// `rest + offset + sum(coef * tile variable) < bound` (rest: the enclosing loops' part).
struct AffineGuard {
  Expr cmp;
  Expr rest;
  int64_t offset = 0;
  int64_t bound = 0;  // 0 for a strict comparison, 1 otherwise
  std::unordered_map<const ExprNode*, int64_t> coef;
  int64_t max_tile = 0;  // the largest sum(coef * tile variable) over the tile
  Expr all_hold;         // the comparison at the tile's extreme iteration: true on every one
};

std::optional<AffineGuard> affine_guard(const Expr& cmp, const BodyScan& scan) {
  Expr a, b;
  bool strict = true;
  if (const auto* x = cmp.as<LT>()) a = x->a, b = x->b;
  if (const auto* x = cmp.as<LE>()) a = x->a, b = x->b, strict = false;
  if (const auto* x = cmp.as<GT>()) a = x->b, b = x->a;
  if (const auto* x = cmp.as<GE>()) a = x->b, b = x->a, strict = false;
  if (!a.defined() || !a.dtype().is_scalar() || !a.dtype().is_integer()) return std::nullopt;
  bool ok = true;
  for_each_expr(cmp, [&](const Expr& sub) {
    ExprKind k = sub->kind;
    if (k == ExprKind::kLoad || k == ExprKind::kCall || k == ExprKind::kLet) ok = false;
    if (sub.as<Var>() && scan.defined.count(sub.get())) ok = false;
  });
  if (!ok || !uses_any(cmp, scan.tiles)) return std::nullopt;
  AffineGuard g;
  g.cmp = cmp;
  g.bound = strict ? 0 : 1;
  if (!affine(a, scan.tiles, 1, &g.coef) || !affine(b, scan.tiles, -1, &g.coef)) {
    return std::nullopt;
  }
  VarMap extreme, zero;
  for (const auto& [node, r] : scan.tiles) {
    auto it = g.coef.find(node);
    int64_t c = it == g.coef.end() ? 0 : it->second;
    int64_t v = c > 0 ? r.min + r.extent - 1 : r.min;
    g.max_tile += c * v;
    extreme[node] = make_const(r.var.dtype(), v);
    zero[node] = make_zero(r.var.dtype());
  }
  g.all_hold = simplify(substitute(cmp, extreme));
  // a - b at tile variables 0, its constant split off.
  Expr d = simplify(substitute(Sub::make(a, b), zero));
  if (auto c = as_const_int(d)) {
    g.offset = *c;
  } else if (const auto* x = d.as<Add>(); x && as_const_int(x->b)) {
    g.rest = x->a;
    g.offset = *as_const_int(x->b);
  } else if (const auto* y = d.as<Sub>(); y && as_const_int(y->b)) {
    g.rest = y->a;
    g.offset = -*as_const_int(y->b);
  } else {
    g.rest = d;
  }
  return g;
}

// Replaces conjuncts of guards (an `if` whose conjuncts all become true is its body).
class RewriteConjuncts : public IRMutator {
 public:
  explicit RewriteConjuncts(std::unordered_map<const ExprNode*, Expr> to) : to_(std::move(to)) {}

 protected:
  using IRMutator::mutate_node;
  Stmt mutate_node(const IfThenElse* op, const Stmt& self) override {
    if (op->else_case.defined()) return IRMutator::mutate_node(op, self);
    std::vector<Expr> all, kept;
    split_conjuncts(op->condition, &all);
    bool changed = false;
    for (const Expr& c : all) {
      auto it = to_.find(c.get());
      if (it == to_.end()) {
        kept.push_back(c);
        continue;
      }
      changed = true;
      if (!is_const_int(it->second, 1)) kept.push_back(it->second);
    }
    Stmt then_case = mutate(op->then_case);
    if (!changed && then_case.same_as(op->then_case)) return self;
    if (kept.empty()) return then_case;
    return IfThenElse::make(all_of(kept), then_case);
  }

 private:
  std::unordered_map<const ExprNode*, Expr> to_;
};

class PartitionLoops : public IRMutator {
 protected:
  using IRMutator::mutate_node;
  Stmt mutate_node(const For* op, const Stmt& self) override {
    auto min = as_const_int(op->min);
    auto extent = as_const_int(op->extent);
    bool known = min && extent && *extent >= 1;
    if (known) loops_[op->var.get()] = {op->var, *min, *extent};
    bool outer = op->for_kind == ForKind::kSerial || op->for_kind == ForKind::kParallel;
    Stmt body = outer ? partition(op->body) : mutate(op->body);
    if (known) loops_.erase(op->var.get());
    if (body.same_as(op->body)) return self;
    return For::make(op->var, op->min, op->extent, op->for_kind, body);
  }

 private:
  Stmt partition(const Stmt& body) {
    BodyScan scan;
    scan.visit(body);
    // The guards of one split: comparisons affine in the tile with the same outer part. Taken
    // for a split whose guard masks vector lanes in an unrolled tile (each copy becomes an
    // `all lanes in range` branch and a masked twin), else for one whose guard stands on two or
    // more vector statements per position (a row of several vectors). A guard on rows of one
    // vector is one uniform branch per statement, which LLVM unswitches about as well
    // (measured: as many candidates slower as faster), and is left alone.
    std::unordered_map<std::string, std::vector<AffineGuard>> splits;
    std::string chosen, rows_key;
    NodeSet taken;
    for (const Expr& c : scan.conjuncts) {
      if (!taken.insert(c.get()).second) continue;
      auto g = affine_guard(c, scan);
      if (!g || !g->rest.defined()) continue;
      std::string key = to_string(g->rest);
      bool masks_copied_lanes = scan.unrolled.count(c.get()) > 0 &&
                                std::any_of(g->coef.begin(), g->coef.end(), [&](const auto& kv) {
                                  return kv.second != 0 && scan.lanes.count(kv.first);
                                });
      bool heavy_rows = scan.guarding_several.count(c.get()) > 0;
      if (masks_copied_lanes && chosen.empty()) chosen = key;
      if (heavy_rows && rows_key.empty()) rows_key = key;
      splits[key].push_back(std::move(*g));
    }
    if (chosen.empty()) chosen = rows_key;
    if (chosen.empty()) return mutate(body);
    const std::vector<AffineGuard>& guards = splits[chosen];
    auto values = value_set(guards[0].rest, loops_);
    if (!values || values->step <= 0) return mutate(body);
    // Comparison i fails somewhere in the tile where rest >= bound - offset - max_tile.
    int64_t first_failing = INT64_MAX;
    for (const AffineGuard& g : guards) {
      first_failing = std::min(first_failing, g.bound - g.offset - g.max_tile);
    }
    int64_t last = values->lo + (values->hi - values->lo) / values->step * values->step;
    std::unordered_map<const ExprNode*, Expr> in_main, in_tail;
    for (const AffineGuard& g : guards)
      in_main[g.cmp.get()] = make_const(DataType::Bool(), int64_t{1});
    if (last < first_failing) return mutate(RewriteConjuncts(in_main).mutate(body));
    // The tail must be a single value of rest (the last, partial tile of a split): there each
    // comparison is a constant per unrolled copy, so that no guard survives unrolling.
    if (last - values->step >= first_failing) return mutate(body);
    std::vector<Expr> tests;
    std::unordered_set<std::string> seen;
    for (const AffineGuard& g : guards) {
      DataType t = g.rest.dtype();
      Expr lhs = make_const(t, last + g.offset);
      for (const auto& [node, c] : g.coef) {
        if (c != 0) lhs = idx_add(lhs, idx_mul(make_const(t, c), cast(t, scan.tiles.at(node).var)));
      }
      in_tail[g.cmp.get()] = LT::make(lhs, make_const(t, g.bound));
      if (!is_const_int(g.all_hold, 1) && seen.insert(to_string(g.all_hold)).second) {
        tests.push_back(g.all_hold);
      }
    }
    Stmt main = mutate(RewriteConjuncts(std::move(in_main)).mutate(body));
    if (tests.empty()) return main;
    Stmt tail = RewriteConjuncts(std::move(in_tail)).mutate(body);
    return IfThenElse::make(simplify(all_of(tests)), main, tail);
  }

  LoopRanges loops_;  // the enclosing loops with constant bounds
};

// Whether some guard (an `if` without else) sits inside an unrolled loop: without one there is
// nothing to partition, and the per-loop scans are skipped.
bool has_unrolled_guard(const Stmt& s) {
  class Find : public IRVisitor {
   public:
    bool found = false;
    using IRVisitor::visit;
    void visit(const Expr&) override {}

   protected:
    void visit_node(const For* op) override {
      depth_ += op->for_kind == ForKind::kUnrolled;
      if (!found) IRVisitor::visit_node(op);
      depth_ -= op->for_kind == ForKind::kUnrolled;
    }
    void visit_node(const IfThenElse* op) override {
      if (depth_ > 0 && !op->else_case.defined()) found = true;
      if (!found) IRVisitor::visit_node(op);
    }

   private:
    int depth_ = 0;
  } find;
  find.visit(s);
  return find.found;
}

}  // namespace

Stmt partition_loops(const Stmt& s) {
  return has_unrolled_guard(s) ? PartitionLoops().mutate(s) : s;
}

}  // namespace ptb
