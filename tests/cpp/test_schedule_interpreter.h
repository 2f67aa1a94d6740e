// A reference interpreter of lowered IR for the schedule tests: it runs a LoweredFunc on host
// vectors (vector nodes included: Ramp, Broadcast, predicated loads and stores), so that every
// schedule can be checked against the default one without going through codegen.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/expr.h"
#include "ir/op.h"
#include "ir/stmt.h"
#include "lower/lowered_func.h"
#include "lower/storage_flatten.h"

namespace ptb::testing {

// One value per lane; integers and bools are kept in `i`, floats in `f`.
struct Lanes {
  DataType t;
  std::vector<int64_t> i;
  std::vector<double> f;
  int lanes() const { return t.lanes(); }
};

class Interpreter {
 public:
  // Runs `f` on `arrays` (one per argument, compact row-major, as doubles); `sizes` binds the
  // symbolic dimensions by variable name.
  void run(const LoweredFunc& f, std::vector<std::vector<double>>* arrays,
           const std::map<std::string, int64_t>& sizes = {}) {
    for (size_t a = 0; a < f.args.size(); ++a) {
      const Buffer& b = f.args[a];
      buffers_[b->data.get()] = &(*arrays)[a];
      std::vector<Expr> compact = compact_strides(b->shape);
      for (size_t d = 0; d < b->strides.size(); ++d)
        stride_exprs_[b->strides[d].get()] = compact[d];
    }
    for (const Expr& p : f.scalar_params) {
      const auto* v = p.as<Var>();
      auto it = sizes.find(v->name);
      if (it != sizes.end()) scalars_[v] = scalar(p.dtype(), it->second);
    }
    // Strides are products of sizes: evaluate them once the sizes are bound.
    for (auto& [var, e] : stride_exprs_) scalars_[static_cast<const Var*>(var)] = eval(e);
    exec(f.body);
  }

  int64_t stores() const { return stores_; }

 private:
  static Lanes scalar(DataType t, int64_t v) {
    Lanes l{t, {}, {}};
    if (t.is_float()) {
      l.f = {static_cast<double>(v)};
    } else {
      l.i = {v};
    }
    return l;
  }

  static double round_to(DataType t, double v) {
    return t.bits() == 32 ? static_cast<double>(static_cast<float>(v)) : v;
  }

  static int64_t wrap(DataType t, int64_t v) {
    if (t.is_bool()) return v != 0;
    if (t.bits() >= 64) return v;
    uint64_t mask = (uint64_t{1} << t.bits()) - 1;
    uint64_t u = static_cast<uint64_t>(v) & mask;
    if (t.is_int() && (u >> (t.bits() - 1))) u |= ~mask;
    return static_cast<int64_t>(u);
  }

  static Lanes broadcast(const Lanes& x, int lanes) {
    if (x.lanes() == lanes) return x;
    Lanes r{x.t.with_lanes(lanes), {}, {}};
    if (!x.i.empty()) r.i.assign(lanes, x.i[0]);
    if (!x.f.empty()) r.f.assign(lanes, x.f[0]);
    return r;
  }

  static int64_t floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }

  template <typename F, typename G>
  Lanes binary(const Expr& ea, const Expr& eb, DataType out, F fi, G ff) {
    Lanes a = eval(ea), b = eval(eb);
    int n = std::max(a.lanes(), b.lanes());
    a = broadcast(a, n);
    b = broadcast(b, n);
    Lanes r{out, {}, {}};
    for (int k = 0; k < n; ++k) {
      if (a.t.is_float()) {
        double v = ff(a.f[k], b.f[k]);
        if (out.is_float()) {
          r.f.push_back(round_to(out, v));
        } else {
          r.i.push_back(static_cast<int64_t>(v));
        }
      } else {
        r.i.push_back(wrap(out, fi(a.i[k], b.i[k])));
      }
    }
    return r;
  }

  std::vector<int64_t> ints(const Lanes& l) const {
    if (!l.i.empty()) return l.i;
    throw std::runtime_error("integer expected");
  }

  Lanes eval(const Expr& e) {
    DataType t = e.dtype();
    if (const auto* x = e.as<IntImm>()) return scalar(t, x->value);
    if (const auto* x = e.as<FloatImm>()) return Lanes{t, {}, {x->value}};
    if (const auto* x = e.as<Var>()) {
      auto it = scalars_.find(x);
      if (it == scalars_.end()) throw std::runtime_error("unbound variable " + x->name);
      return it->second;
    }
    if (const auto* x = e.as<Cast>()) {
      Lanes v = eval(x->value);
      Lanes r{t, {}, {}};
      for (int k = 0; k < v.lanes(); ++k) {
        double d = v.t.is_float() ? v.f[k] : static_cast<double>(v.i[k]);
        if (t.is_float()) {
          r.f.push_back(round_to(t, d));
        } else if (v.t.is_float()) {
          r.i.push_back(wrap(t, static_cast<int64_t>(d)));
        } else {
          r.i.push_back(wrap(t, v.i[k]));
        }
      }
      return r;
    }
#define PTB_ARITH(T, OPI, OPF)                                   \
  if (const auto* x = e.as<T>()) {                               \
    return binary(                                               \
        x->a, x->b, t, [](int64_t a, int64_t b) { return OPI; }, \
        [](double a, double b) { return OPF; });                 \
  }
    PTB_ARITH(Add, a + b, a + b)
    PTB_ARITH(Sub, a - b, a - b)
    PTB_ARITH(Mul, a * b, a * b)
    PTB_ARITH(Div, a / b, a / b)
    PTB_ARITH(Mod, a % b, std::fmod(a, b))
    PTB_ARITH(FloorDiv, floordiv(a, b), std::floor(a / b))
    PTB_ARITH(FloorMod, a - floordiv(a, b) * b, a - std::floor(a / b) * b)
    PTB_ARITH(Min, std::min(a, b), std::min(a, b))
    PTB_ARITH(Max, std::max(a, b), std::max(a, b))
    PTB_ARITH(EQ, a == b, a == b)
    PTB_ARITH(NE, a != b, a != b)
    PTB_ARITH(LT, a < b, a < b)
    PTB_ARITH(LE, a <= b, a <= b)
    PTB_ARITH(GT, a > b, a > b)
    PTB_ARITH(GE, a >= b, a >= b)
    PTB_ARITH(And, a && b, a && b)
    PTB_ARITH(Or, a || b, a || b)
#undef PTB_ARITH
    if (const auto* x = e.as<Not>()) {
      Lanes a = eval(x->a);
      for (auto& v : a.i) v = !v;
      return a;
    }
    if (const auto* x = e.as<Select>()) {
      Lanes c = eval(x->condition), a = eval(x->true_value), b = eval(x->false_value);
      int n = t.lanes();
      c = broadcast(c, n);
      Lanes r = broadcast(a, n);
      b = broadcast(b, n);
      for (int k = 0; k < n; ++k) {
        if (!c.i[k]) {
          if (t.is_float()) {
            r.f[k] = b.f[k];
          } else {
            r.i[k] = b.i[k];
          }
        }
      }
      return r;
    }
    if (const auto* x = e.as<Call>()) return call(x);
    if (const auto* x = e.as<Let>()) {
      scalars_[x->var.as<Var>()] = eval(x->value);
      return eval(x->body);
    }
    if (const auto* x = e.as<Ramp>()) {
      int64_t base = ints(eval(x->base))[0], stride = ints(eval(x->stride))[0];
      Lanes r{t, {}, {}};
      for (int k = 0; k < x->lanes; ++k) r.i.push_back(base + k * stride);
      return r;
    }
    if (const auto* x = e.as<Broadcast>()) return broadcast(eval(x->value), x->lanes);
    if (const auto* x = e.as<Load>()) {
      std::vector<int64_t> idx = ints(eval(x->index));
      std::vector<int64_t> pred(idx.size(), 1);
      if (x->predicate.defined()) pred = ints(broadcast(eval(x->predicate), idx.size()));
      std::vector<double>& mem = memory(x->buffer);
      Lanes r{t, {}, {}};
      for (size_t k = 0; k < idx.size(); ++k) {
        double v = 0;
        if (pred[k]) {
          if (idx[k] < 0 || idx[k] >= static_cast<int64_t>(mem.size())) {
            throw std::runtime_error("out-of-bounds load of " + x->buffer->name + "[" +
                                     std::to_string(idx[k]) + "]");
          }
          v = mem[idx[k]];
        }
        if (t.is_float()) {
          r.f.push_back(v);
        } else {
          r.i.push_back(static_cast<int64_t>(v));
        }
      }
      return r;
    }
    throw std::runtime_error("interpreter: unsupported expression");
  }

  Lanes call(const Call* x) {
    if (x->op == Intrinsic::kIfThenElse) {
      Lanes c = eval(x->args[0]);
      if (c.lanes() != 1) throw std::runtime_error("vector if_then_else condition");
      return eval(c.i[0] ? x->args[1] : x->args[2]);
    }
    std::vector<Lanes> args;
    for (const Expr& a : x->args) args.push_back(eval(a));
    DataType t = x->dtype;
    Lanes r{t, {}, {}};
    for (int k = 0; k < t.lanes(); ++k) {
      auto arg = [&](int n) { return broadcast(args[n], t.lanes()).f[k]; };
      double v = 0;
      switch (x->op) {
        case Intrinsic::kExp:
          v = std::exp(arg(0));
          break;
        case Intrinsic::kSqrt:
          v = std::sqrt(arg(0));
          break;
        case Intrinsic::kTanh:
          v = std::tanh(arg(0));
          break;
        case Intrinsic::kFloor:
          v = std::floor(arg(0));
          break;
        case Intrinsic::kAbs:
          v = std::fabs(arg(0));
          break;
        default:
          throw std::runtime_error("interpreter: unsupported intrinsic");
      }
      r.f.push_back(round_to(t, v));
    }
    return r;
  }

  std::vector<double>& memory(const Buffer& b) {
    auto it = buffers_.find(b->data.get());
    if (it == buffers_.end()) throw std::runtime_error("unallocated buffer " + b->name);
    return *it->second;
  }

  void exec(const Stmt& s) {
    if (!s.defined()) return;
    if (const auto* x = s.as<For>()) {
      int64_t lo = ints(eval(x->min))[0], n = ints(eval(x->extent))[0];
      const auto* v = x->var.as<Var>();
      for (int64_t k = lo; k < lo + n; ++k) {
        scalars_[v] = scalar(x->var.dtype(), k);
        exec(x->body);
      }
      return;
    }
    if (const auto* x = s.as<Store>()) {
      std::vector<int64_t> idx = ints(eval(x->index));
      Lanes v = broadcast(eval(x->value), idx.size());
      std::vector<int64_t> pred(idx.size(), 1);
      if (x->predicate.defined()) pred = ints(broadcast(eval(x->predicate), idx.size()));
      std::vector<double>& mem = memory(x->buffer);
      for (size_t k = 0; k < idx.size(); ++k) {
        if (!pred[k]) continue;
        if (idx[k] < 0 || idx[k] >= static_cast<int64_t>(mem.size())) {
          throw std::runtime_error("out-of-bounds store to " + x->buffer->name + "[" +
                                   std::to_string(idx[k]) + "]");
        }
        mem[idx[k]] = v.t.is_float() ? v.f[k] : static_cast<double>(v.i[k]);
        ++stores_;
      }
      return;
    }
    if (const auto* x = s.as<Allocate>()) {
      int64_t n = 1;
      for (const Expr& d : x->buffer->shape) n *= ints(eval(d))[0];
      if (n < 0) throw std::runtime_error("negative allocation");
      // NaN: a read of an element nobody wrote shows up in the results.
      auto storage = std::make_unique<std::vector<double>>(n, std::nan(""));
      const ExprNode* data = x->buffer->data.get();
      auto* saved = buffers_.count(data) ? buffers_[data] : nullptr;
      buffers_[data] = storage.get();
      exec(x->body);
      buffers_[data] = saved;
      return;
    }
    if (const auto* x = s.as<Block>()) {
      for (const Stmt& c : x->stmts) exec(c);
      return;
    }
    if (const auto* x = s.as<IfThenElse>()) {
      Lanes c = eval(x->condition);
      if (c.lanes() != 1) throw std::runtime_error("vector IfThenElse condition");
      exec(c.i[0] ? x->then_case : x->else_case);
      return;
    }
    if (const auto* x = s.as<LetStmt>()) {
      scalars_[x->var.as<Var>()] = eval(x->value);
      exec(x->body);
      return;
    }
    if (const auto* x = s.as<Evaluate>()) {
      eval(x->value);
      return;
    }
    throw std::runtime_error("interpreter: unsupported statement");
  }

  // By data variable: buffers that share memory (lower/plan_memory.cc) share one.
  std::unordered_map<const ExprNode*, std::vector<double>*> buffers_;
  std::unordered_map<const Var*, Lanes> scalars_;
  std::unordered_map<const ExprNode*, Expr> stride_exprs_;
  int64_t stores_ = 0;
};

}  // namespace ptb::testing
