#include "lower/clamp_guarded_loops.h"

#include <optional>
#include <vector>

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/simplify.h"
#include "ir/substitute.h"
#include "ir/visitor.h"
#include "lower/value_set.h"

namespace ptb {

namespace {

// Whether a statement holds a loop (through blocks, branches, lets and allocations): a guard
// around one is not split, so that the copies stay two per loop.
bool holds_loop(const Stmt& s) {
  std::vector<Stmt> stack{s};
  while (!stack.empty()) {
    Stmt cur = stack.back();
    stack.pop_back();
    if (!cur.defined()) continue;
    if (cur.as<For>()) return true;
    if (const auto* b = cur.as<Block>()) {
      for (const Stmt& st : b->stmts) stack.push_back(st);
    } else if (const auto* i = cur.as<IfThenElse>()) {
      stack.push_back(i->then_case);
      stack.push_back(i->else_case);
    } else if (const auto* l = cur.as<LetStmt>()) {
      stack.push_back(l->body);
    } else if (const auto* a = cur.as<Allocate>()) {
      stack.push_back(a->body);
    }
  }
  return false;
}

// `var * c + g + rest < bound` split into its parts; nullopt for any other conjunct.
struct SplitPoint {
  int64_t c;
  int64_t g_lo, g_hi;
  Expr rest, bound;
};

std::optional<SplitPoint> split_point(const Expr& cond, const Expr& var,
                                      const std::vector<const For*>& nest) {
  const auto* lt = cond.as<LT>();
  DataType t = var.dtype();
  if (lt == nullptr || lt->a.dtype() != t || !uses_var(lt->a, var) || uses_var(lt->b, var)) {
    return std::nullopt;
  }
  LoopRanges ranges;
  VarMap at_min;
  for (const For* f : nest) {
    if (uses_var(lt->b, f->var)) return std::nullopt;
    auto min = as_const_int(f->min), extent = as_const_int(f->extent);
    if (!min || !extent || *extent < 1) return std::nullopt;
    add_loop_range(ranges, f->var, *min, *extent);
    at_min[f->var.get()] = make_const(f->var.dtype(), *min);
  }
  VarMap one, zero;
  one[var.get()] = make_const(t, int64_t{1});
  zero[var.get()] = make_zero(t);
  auto c = as_const_int(simplify(Sub::make(substitute(lt->a, one), substitute(lt->a, zero))));
  if (!c || *c < 1) return std::nullopt;
  Expr others = simplify(Sub::make(lt->a, Mul::make(var, make_const(t, *c))));
  if (uses_var(others, var)) return std::nullopt;
  Expr rest = simplify(substitute(others, at_min));
  Expr g = simplify(Sub::make(others, rest));
  for (const auto& [node, range] : ranges) {
    (void)node;
    if (uses_var(rest, range.var)) return std::nullopt;
  }
  auto values = value_set(g, ranges);
  if (!values) return std::nullopt;
  return SplitPoint{*c, values->lo, values->hi, rest, lt->b};
}

class ClampGuardedLoops : public IRMutator {
 protected:
  using IRMutator::mutate_node;

  Stmt mutate_node(const For* op, const Stmt& self) override {
    return split(IRMutator::mutate_node(op, self));
  }

  // `visited` split at one of its guard's conjuncts, then the main part at the next one.
  Stmt split(const Stmt& visited) {
    const auto* loop = visited.as<For>();
    if (loop == nullptr || loop->for_kind != ForKind::kSerial) return visited;
    const Expr& var = loop->var;
    DataType t = var.dtype();
    if (!t.is_scalar() || !t.is_int()) return visited;
    std::vector<const For*> nest;
    Stmt inner = loop->body;
    while (const auto* f = inner.as<For>()) {
      nest.push_back(f);
      inner = f->body;
    }
    const auto* guard = inner.as<IfThenElse>();
    if (guard == nullptr || guard->else_case.defined() || holds_loop(guard->then_case)) {
      return visited;
    }
    std::vector<Expr> terms;
    split_conjuncts(guard->condition, &terms);
    for (size_t i = 0; i < terms.size(); ++i) {
      std::optional<SplitPoint> p = split_point(terms[i], var, nest);
      if (!p) continue;
      // var * c + g + rest < bound for every g in [g_lo, g_hi] iff
      // var < ceil((bound - rest - g_hi) / c); for no g iff var >= ceil((bound - rest - g_lo) / c).
      auto first_failing = [&](int64_t g) {
        Expr room = Sub::make(Sub::make(p->bound, p->rest), make_const(t, g));
        return floordiv(Add::make(room, make_const(t, p->c - 1)), make_const(t, p->c));
      };
      auto clamped = [&](const Expr& end) {  // iterations of the loop before `end`
        return simplify(idx_max(make_zero(t), idx_min(loop->extent, Sub::make(end, loop->min))));
      };
      Expr whole = clamped(first_failing(p->g_hi));
      std::vector<Expr> kept = terms;
      kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(i));
      auto nested = [&](const Expr& cond) {
        Stmt body = is_const_int(cond, 1) ? guard->then_case
                                          : IfThenElse::make(cond, guard->then_case, Stmt());
        for (auto f = nest.rbegin(); f != nest.rend(); ++f) {
          body = For::make((*f)->var, (*f)->min, (*f)->extent, (*f)->for_kind, body);
        }
        return body;
      };
      Expr rest_cond = kept.empty() ? make_const(DataType::Bool(), int64_t{1}) : all_of(kept);
      // Each part runs a variable of its own: the passes after this one take a variable's
      // range from its loop, and a variable shared by a loop of symbolic bounds and one of
      // constant bounds got the constant one's range in both (partition_ranges then decided the
      // tail's guard from it and dropped the tail).
      auto part = [&](const Expr& min, const Expr& extent, const Expr& cond) {
        Expr fresh = Var::make(t, var.as<Var>()->name);
        VarMap rename;
        rename[var.get()] = fresh;
        return For::make(fresh, min, extent, loop->for_kind, substitute(nested(cond), rename));
      };
      Stmt main = split(part(loop->min, whole, rest_cond));
      if (p->g_lo == p->g_hi) return main;  // the same test for every nested iteration
      Expr some = clamped(first_failing(p->g_lo));
      Stmt tail = part(simplify(Add::make(loop->min, whole)), simplify(Sub::make(some, whole)),
                       guard->condition);
      return Block::make({main, tail});
    }
    return visited;
  }
};

}  // namespace

Stmt clamp_guarded_loops(const Stmt& s) { return ClampGuardedLoops().mutate(s); }

}  // namespace ptb
