#include "lower/vectorize_loops.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/simplify.h"
#include "ir/visitor.h"
#include "support/error.h"

namespace ptb {

namespace {

// Thrown inside the rewrite when the loop cannot become vector code; the loop then stays serial.
struct CannotVectorize {};

Expr make_ramp(const Expr& base, const Expr& stride, int lanes) {
  if (is_const_int(stride, 0)) return Broadcast::make(base, lanes);
  return Ramp::make(base, stride, lanes);
}

// The scalar a vector is made of when it is a Broadcast or already a scalar.
const Expr* uniform_value(const Expr& e) {
  if (e.dtype().is_scalar()) return &e;
  if (const auto* b = e.as<Broadcast>()) return &b->value;
  return nullptr;
}

template <typename T>
constexpr bool is_int_division() {
  return T::kKind == ExprKind::kDiv || T::kKind == ExprKind::kMod ||
         T::kKind == ExprKind::kFloorDiv || T::kKind == ExprKind::kFloorMod;
}

bool uses_any(const Expr& e, const std::unordered_set<const ExprNode*>& vars) {
  bool found = false;
  for_each_expr(e, [&](const Expr& sub) {
    if (!found && sub.as<Var>() && vars.count(sub.get())) found = true;
  });
  return found;
}

// Rewrites the body of one vectorized loop for the lanes base, base + 1, ..., base + lanes - 1.
class LaneRewriter : public IRMutator {
 public:
  LaneRewriter(const Expr& var, const Expr& base, int lanes, const Stmt& body)
      : var_(var.get()), ramp_(make_ramp(base, make_one(base.dtype()), lanes)), lanes_(lanes) {
    for_each_expr(body, [&](const Expr& e) {
      if (const auto* l = e.as<Load>()) loaded_.insert(l->buffer.get());
    });
  }

  using IRMutator::mutate;
  Expr mutate(const Expr& e) override {
    if (!e.defined()) return e;
    // Vector code inside (an inner loop vectorized first): vectorizing again is not supported.
    if (e.dtype().is_vector()) throw CannotVectorize();
    return IRMutator::mutate(e);
  }

 protected:
  using IRMutator::mutate_node;

  Expr widen(const Expr& e) const {
    if (e.dtype().lanes() == lanes_) return e;
    PTB_ICHECK(e.dtype().is_scalar(), "lane count ", e.dtype().lanes(), " vs ", lanes_);
    return Broadcast::make(e, lanes_);
  }

  Expr mutate_node(const Var* op, const Expr& self) override {
    if (op == var_) return ramp_;
    auto it = let_vars_.find(op);
    return it == let_vars_.end() ? self : it->second;
  }

  // Arithmetic keeps ramps structured (ramp + x is a ramp) so that address computations stay
  // recognisably contiguous after flattening's index arithmetic.
  template <typename T>
  Expr binary(const T* op, const Expr& self) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (a.same_as(op->a) && b.same_as(op->b)) return self;
    if (a.dtype().is_scalar() && b.dtype().is_scalar()) return T::make(a, b);
    if constexpr (is_int_division<T>()) {
      // A masked lane would divide by a value the scalar loop never divides by (maybe zero).
      if (predicate_.defined() && a.dtype().is_integer() && !uniform_value(b)) {
        throw CannotVectorize();
      }
    }
    const auto* ra = a.as<Ramp>();
    const auto* rb = b.as<Ramp>();
    const Expr* ua = uniform_value(a);
    const Expr* ub = uniform_value(b);
    if constexpr (T::kKind == ExprKind::kAdd) {
      if (ra && ub) return make_ramp(idx_add(ra->base, *ub), ra->stride, lanes_);
      if (rb && ua) return make_ramp(idx_add(*ua, rb->base), rb->stride, lanes_);
      if (ra && rb) {
        return make_ramp(idx_add(ra->base, rb->base), idx_add(ra->stride, rb->stride), lanes_);
      }
    } else if constexpr (T::kKind == ExprKind::kSub) {
      if (ra && ub) return make_ramp(idx_sub(ra->base, *ub), ra->stride, lanes_);
      if (rb && ua) {
        return make_ramp(idx_sub(*ua, rb->base), idx_sub(make_zero(rb->stride.dtype()), rb->stride),
                         lanes_);
      }
      if (ra && rb) {
        return make_ramp(idx_sub(ra->base, rb->base), idx_sub(ra->stride, rb->stride), lanes_);
      }
    } else if constexpr (T::kKind == ExprKind::kMul) {
      if (ra && ub) return make_ramp(idx_mul(ra->base, *ub), idx_mul(ra->stride, *ub), lanes_);
      if (rb && ua) return make_ramp(idx_mul(*ua, rb->base), idx_mul(*ua, rb->stride), lanes_);
    }
    return T::make(widen(a), widen(b));
  }

#define PTB_VECTORIZE_BINARY(T) \
  Expr mutate_node(const T* op, const Expr& self) override { return binary(op, self); }
  PTB_VECTORIZE_BINARY(Add)
  PTB_VECTORIZE_BINARY(Sub)
  PTB_VECTORIZE_BINARY(Mul)
  PTB_VECTORIZE_BINARY(Div)
  PTB_VECTORIZE_BINARY(Mod)
  PTB_VECTORIZE_BINARY(FloorDiv)
  PTB_VECTORIZE_BINARY(FloorMod)
  PTB_VECTORIZE_BINARY(Min)
  PTB_VECTORIZE_BINARY(Max)
  PTB_VECTORIZE_BINARY(EQ)
  PTB_VECTORIZE_BINARY(NE)
  PTB_VECTORIZE_BINARY(LT)
  PTB_VECTORIZE_BINARY(LE)
  PTB_VECTORIZE_BINARY(GT)
  PTB_VECTORIZE_BINARY(GE)
  PTB_VECTORIZE_BINARY(And)
  PTB_VECTORIZE_BINARY(Or)
#undef PTB_VECTORIZE_BINARY

  Expr mutate_node(const Cast* op, const Expr& self) override {
    Expr v = mutate(op->value);
    if (v.same_as(op->value)) return self;
    if (v.dtype().is_scalar()) return cast(op->dtype, v);
    if (const auto* b = v.as<Broadcast>())
      return Broadcast::make(cast(op->dtype, b->value), lanes_);
    const auto* r = v.as<Ramp>();
    DataType from = v.dtype().element_of(), to = op->dtype;
    // A widening integer cast of a ramp is the ramp of the casts (no lane can wrap).
    if (r && to.is_integer() && from.is_integer() && to.bits() >= from.bits()) {
      return make_ramp(cast(to, r->base), cast(to, r->stride), lanes_);
    }
    return Cast::make(to.with_lanes(lanes_), v);
  }

  Expr mutate_node(const Not* op, const Expr& self) override {
    Expr a = mutate(op->a);
    return a.same_as(op->a) ? self : Not::make(a);
  }

  Expr mutate_node(const Select* op, const Expr& self) override {
    Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) {
      return self;
    }
    if (c.dtype().is_scalar() && t.dtype().is_scalar() && f.dtype().is_scalar()) {
      return Select::make(c, t, f);
    }
    return Select::make(c, widen(t), widen(f));
  }

  Expr mutate_node(const Call* op, const Expr& self) override {
    if (op->op == Intrinsic::kIfThenElse) {
      Expr c = mutate(op->args[0]);
      if (c.dtype().is_vector()) {
        // Only the taken branch may be evaluated: each side runs under its own lane mask.
        Expr t = masked(c, op->args[1]);
        Expr f = masked(Not::make(c), op->args[2]);
        return Select::make(c, widen(t), widen(f));
      }
      Expr t = mutate(op->args[1]), f = mutate(op->args[2]);
      if (c.same_as(op->args[0]) && t.same_as(op->args[1]) && f.same_as(op->args[2])) return self;
      if (t.dtype().is_scalar() && f.dtype().is_scalar()) {
        return Call::make(Intrinsic::kIfThenElse, {c, t, f});
      }
      return Call::make(Intrinsic::kIfThenElse, {c, widen(t), widen(f)});
    }
    bool changed = false, vector = false;
    std::vector<Expr> args;
    for (const Expr& a : op->args) {
      args.push_back(mutate(a));
      changed |= !args.back().same_as(a);
      vector |= args.back().dtype().is_vector();
    }
    if (!changed) return self;
    if (vector) {
      for (Expr& a : args) a = widen(a);
    }
    return Call::make(op->op, args);
  }

  Expr mutate_node(const Let* op, const Expr& self) override {
    Expr value = mutate(op->value);
    if (value.dtype().is_scalar()) {
      Expr body = mutate(op->body);
      if (value.same_as(op->value) && body.same_as(op->body)) return self;
      return Let::make(op->var, value, body);
    }
    Expr v = Var::make(value.dtype(), op->var.as<Var>()->name);
    let_vars_[op->var.get()] = v;
    Expr body = mutate(op->body);
    return Let::make(v, value, widen(body));
  }

  Expr mutate_node(const Load* op, const Expr& self) override {
    if (op->predicate.defined()) throw CannotVectorize();
    Expr index = mutate(op->index);
    if (index.dtype().is_scalar()) {
      if (!predicate_.defined())
        return index.same_as(op->index) ? self : Load::make(op->buffer, index);
      // Under a lane mask even an invariant address may be one the scalar loop never reads
      // (all lanes off): read it per lane, masked.
      return Load::make(op->buffer, Broadcast::make(index, lanes_), predicate_);
    }
    return Load::make(op->buffer, index, predicate_);
  }

  Expr mutate_node(const Ramp*, const Expr&) override { throw CannotVectorize(); }
  Expr mutate_node(const Broadcast*, const Expr&) override { throw CannotVectorize(); }

  Stmt mutate_node(const Store* op, const Stmt& self) override {
    if (op->predicate.defined()) throw CannotVectorize();
    Expr index = mutate(op->index);
    // Every lane would write the same address: a reduction over the vector variable, or a
    // repeated write. Only the serial loop keeps its meaning.
    if (index.dtype().is_scalar()) throw CannotVectorize();
    // A read-modify-write whose address moves with an inner loop can reach, on one lane, the
    // address another lane reached on an earlier inner iteration: the lanes would not see each
    // other's updates.
    if (!inner_loop_vars_.empty() && loaded_.count(op->buffer.get()) &&
        uses_any(op->index, inner_loop_vars_)) {
      throw CannotVectorize();
    }
    Expr value = widen(mutate(op->value));
    return Store::make(op->buffer, value, index, predicate_);
  }

  Stmt mutate_node(const IfThenElse* op, const Stmt& self) override {
    std::vector<Expr> conjuncts;
    if (!op->else_case.defined()) {
      split_conjuncts(op->condition, &conjuncts);
    } else {
      conjuncts.push_back(op->condition);
    }
    // Conditions that do not depend on the lanes stay branches; the others become a mask.
    std::vector<Expr> uniform, per_lane;
    for (const Expr& c : conjuncts) {
      Expr m = mutate(c);
      (m.dtype().is_scalar() ? uniform : per_lane).push_back(m);
    }
    if (per_lane.empty()) {
      Stmt t = mutate(op->then_case);
      Stmt e = op->else_case.defined() ? mutate(op->else_case) : Stmt();
      return IfThenElse::make(all_of(uniform), t, e);
    }
    // A lane test that no lane passes (a partitioned tile's tail past the data): the then case
    // never runs.
    for (const Expr& m : per_lane) {
      Expr some = all_lanes(m, /*every=*/false);
      if (some.defined() && is_const_int(simplify(some), 0)) {
        Stmt rest = op->else_case.defined() ? mutate(op->else_case)
                                            : Evaluate::make(make_zero(DataType::Int(32)));
        return uniform.empty() ? rest : IfThenElse::make(all_of(uniform), rest);
      }
    }
    Expr mask = all_of(per_lane);
    Stmt t = masked(mask, op->then_case);
    Stmt e = op->else_case.defined() ? masked(Not::make(mask), op->else_case) : Stmt();
    Stmt result = Block::make({t, e});
    // A guard of a non-dividing split holds for every lane but at the boundary: test that with
    // one scalar comparison and run the unmasked vector code then, the masked one otherwise.
    if (!op->else_case.defined()) {
      std::vector<Expr> every_lane;
      for (const Expr& m : per_lane) {
        Expr all = all_lanes(m);
        if (!all.defined()) break;
        every_lane.push_back(all);
      }
      if (every_lane.size() == per_lane.size()) {
        result = IfThenElse::make(all_of(every_lane), mutate(op->then_case), t);
      }
    }
    if (!uniform.empty()) result = IfThenElse::make(all_of(uniform), result);
    return result;
  }

  Stmt mutate_node(const For* op, const Stmt& self) override {
    if (op->for_kind == ForKind::kParallel) throw CannotVectorize();
    Expr min = mutate(op->min), extent = mutate(op->extent);
    if (min.dtype().is_vector() || extent.dtype().is_vector()) throw CannotVectorize();
    inner_loop_vars_.insert(op->var.get());
    Stmt body = mutate(op->body);
    inner_loop_vars_.erase(op->var.get());
    return For::make(op->var, min, extent, op->for_kind, body);
  }

  Stmt mutate_node(const LetStmt* op, const Stmt& self) override {
    Expr value = mutate(op->value);
    if (value.dtype().is_scalar()) {
      Stmt body = mutate(op->body);
      if (value.same_as(op->value) && body.same_as(op->body)) return self;
      return LetStmt::make(op->var, value, body);
    }
    Expr v = Var::make(value.dtype(), op->var.as<Var>()->name);
    let_vars_[op->var.get()] = v;
    return LetStmt::make(v, value, mutate(op->body));
  }

  // Each iteration would need its own copy of the buffer.
  Stmt mutate_node(const Allocate*, const Stmt&) override { throw CannotVectorize(); }

 private:
  template <typename N>
  N masked(const Expr& mask, const N& node) {
    Expr saved = predicate_;
    predicate_ = predicate_.defined() ? And::make(predicate_, mask) : mask;
    // Loads rewritten under one mask are not valid under another.
    N out = with_fresh_memo([&] { return mutate(node); });
    predicate_ = saved;
    return out;
  }

  // For a comparison between a ramp and a uniform value, the scalar condition that it holds on
  // every lane (it is monotonic along the ramp), or with every false on some lane; undefined for
  // anything else.
  Expr all_lanes(const Expr& cmp, bool every = true) const {
    Expr a, b;
    int kind = 0;  // 1: a < b, 2: a <= b (a > b and a >= b are swapped into these)
    if (const auto* x = cmp.as<LT>()) a = x->a, b = x->b, kind = 1;
    if (const auto* x = cmp.as<LE>()) a = x->a, b = x->b, kind = 2;
    if (const auto* x = cmp.as<GT>()) a = x->b, b = x->a, kind = 1;
    if (const auto* x = cmp.as<GE>()) a = x->b, b = x->a, kind = 2;
    if (!kind) return Expr();
    auto lane_range = [&](const Expr& e, Expr* lo, Expr* hi) {
      if (const Expr* u = uniform_value(e)) {
        *lo = *hi = *u;
        return true;
      }
      const auto* r = e.as<Ramp>();
      auto stride = r ? as_const_int(r->stride) : std::nullopt;
      if (!stride) return false;
      Expr last = idx_add(r->base, make_const(r->base.dtype(), *stride * (r->lanes - 1)));
      *lo = *stride > 0 ? r->base : last;
      *hi = *stride > 0 ? last : r->base;
      return true;
    };
    Expr alo, ahi, blo, bhi;
    if (!lane_range(a, &alo, &ahi) || !lane_range(b, &blo, &bhi)) return Expr();
    // Every lane: the largest left side against the smallest right side; some lane: the least
    // against the largest.
    if (!every) return kind == 1 ? LT::make(alo, bhi) : LE::make(alo, bhi);
    return kind == 1 ? LT::make(ahi, blo) : LE::make(ahi, blo);
  }

  const ExprNode* var_;
  Expr ramp_;
  int lanes_;
  Expr predicate_;  // bool vector of the active lanes; undefined when all are active
  std::unordered_map<const ExprNode*, Expr> let_vars_;
  std::unordered_set<const ExprNode*> inner_loop_vars_;
  std::unordered_set<const BufferNode*> loaded_;
};

class VectorizeLoops : public IRMutator {
 protected:
  using IRMutator::mutate_node;
  Stmt mutate_node(const For* op, const Stmt& self) override {
    Stmt body = mutate(op->body);  // inner loops first
    if (op->for_kind != ForKind::kVectorized) {
      return body.same_as(op->body) ? self
                                    : For::make(op->var, op->min, op->extent, op->for_kind, body);
    }
    Stmt serial = For::make(op->var, op->min, op->extent, ForKind::kSerial, body);
    auto extent = as_const_int(op->extent);
    if (!extent || *extent < 2) return serial;
    int64_t lanes =
        std::min<int64_t>(*extent, std::max(2, kVectorBits / vector_element_bits(body)));
    int64_t chunks = *extent / lanes, rest = *extent % lanes;
    DataType t = op->var.dtype();
    auto chunk = [&](const Expr& base, int64_t n) {
      return LaneRewriter(op->var, base, static_cast<int>(n), body).mutate(body);
    };
    try {
      std::vector<Stmt> parts;
      if (chunks <= kMaxInlineVectorChunks) {
        for (int64_t c = 0; c < chunks; ++c) {
          parts.push_back(chunk(idx_add(op->min, make_const(t, c * lanes)), lanes));
        }
      } else {
        Expr c = Var::make(t, op->var.as<Var>()->name + ".c");
        Stmt vbody = chunk(idx_add(op->min, idx_mul(c, make_const(t, lanes))), lanes);
        parts.push_back(For::make(c, make_zero(t), make_const(t, chunks), ForKind::kSerial, vbody));
      }
      Expr rest_min = idx_add(op->min, make_const(t, chunks * lanes));
      if (rest >= 2) {
        parts.push_back(chunk(rest_min, rest));
      } else if (rest == 1) {
        parts.push_back(For::make(op->var, rest_min, make_one(t), ForKind::kSerial, body));
      }
      return Block::make(std::move(parts));
    } catch (const CannotVectorize&) {
      return serial;
    }
  }
};

}  // namespace

int vector_element_bits(const Stmt& body) {
  int bits = 0;
  for_each_expr(body, [&](const Expr& e) {
    if (const auto* l = e.as<Load>()) bits = std::max(bits, l->buffer->dtype.bits());
  });
  class StoreBits : public IRVisitor {
   public:
    int bits = 0;
    using IRVisitor::visit;

   protected:
    void visit_node(const Store* op) override {
      bits = std::max(bits, op->buffer->dtype.bits());
      IRVisitor::visit_node(op);
    }
  } stores;
  stores.visit(body);
  bits = std::max(bits, stores.bits);
  return bits > 0 ? bits : 32;
}

Stmt vectorize_loops(const Stmt& s) { return VectorizeLoops().mutate(s); }

}  // namespace ptb
