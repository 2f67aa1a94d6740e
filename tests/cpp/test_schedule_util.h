// Helpers shared by the schedule tests: small computes, lowering, running through the reference
// interpreter, and walking the lowered loop nest.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "ir/op.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "lower/lower.h"
#include "schedule/primitives.h"
#include "schedule/schedule.h"
#include "support/error.h"
#include "te/operation.h"
#include "test_schedule_interpreter.h"

namespace ptb::testing {

inline Expr ci(int64_t v) { return IntImm::make(kIndexType, v); }
inline Expr cf(double v) { return FloatImm::make(DataType::Float(32), v); }
constexpr DataType kF32 = DataType::Float(32);

inline IterVar reduce_axis(int64_t extent, const std::string& name) {
  return make_iter_var(Range::from_min_extent(ci(0), ci(extent)), name, IterKind::kReduce);
}

inline Expr sum(Expr source, std::vector<IterVar> axes, Expr cond = Expr()) {
  return Reduce::make(ReduceKind::kSum, std::move(source), std::move(axes), std::move(cond));
}

inline Stage stage_of(const Schedule& s, const Tensor& t) { return s->stage(t.op()); }
inline IterVar axis(const Tensor& t, int i) {
  return static_cast<const ComputeOpNode*>(t.op().get())->axis.at(i);
}
inline IterVar raxis(const Tensor& t, int i) {
  return static_cast<const ComputeOpNode*>(t.op().get())->reduce_axis.at(i);
}

// A shape expression (constants, size variables, + - *) for the given sizes.
inline int64_t eval_size(const Expr& e, const std::map<std::string, int64_t>& sizes) {
  if (auto c = as_const_int(e)) return *c;
  if (const auto* v = e.as<Var>()) return sizes.at(v->name);
  if (const auto* x = e.as<Add>()) return eval_size(x->a, sizes) + eval_size(x->b, sizes);
  if (const auto* x = e.as<Sub>()) return eval_size(x->a, sizes) - eval_size(x->b, sizes);
  if (const auto* x = e.as<Mul>()) return eval_size(x->a, sizes) * eval_size(x->b, sizes);
  if (const auto* x = e.as<Cast>()) return eval_size(x->value, sizes);
  throw std::runtime_error("unsupported shape expression " + to_string(e));
}

inline int64_t element_count(const Tensor& t, const std::map<std::string, int64_t>& sizes) {
  int64_t n = 1;
  for (const Expr& d : t.shape()) n *= eval_size(d, sizes);
  return n;
}

// Lowers and runs the schedule on deterministic small-integer inputs (sums stay exact in float32,
// so every evaluation order gives the same result); returns every argument's final contents.
inline std::vector<std::vector<double>> run_schedule(
    const Schedule& s, const std::vector<Tensor>& args,
    const std::map<std::string, int64_t>& sizes = {}) {
  LoweredFunc f = lower(s, args, "f");
  std::vector<std::vector<double>> arrays;
  for (size_t a = 0; a < args.size(); ++a) {
    int64_t n = element_count(args[a], sizes);
    std::vector<double> v(n);
    bool input = args[a].op()->kind == OpKind::kPlaceholder;
    for (int64_t k = 0; k < n; ++k)
      v[k] = input ? static_cast<double>((k * 7 + a * 3) % 11 - 5) : -999.0;
    arrays.push_back(std::move(v));
  }
  Interpreter().run(f, &arrays, sizes);
  return arrays;
}

inline std::string lowered_text(const Schedule& s, const std::vector<Tensor>& args) {
  return to_string(lower(s, args, "f").body);
}

// The loops of a statement in pre-order: name, extent (-1 when not constant), kind.
struct LoopInfo {
  std::string name;
  int64_t extent;
  ForKind kind;
};

inline std::vector<LoopInfo> loops_of(const Stmt& s) {
  class Collect : public IRVisitor {
   public:
    std::vector<LoopInfo> loops;
    using IRVisitor::visit;

   protected:
    void visit_node(const For* op) override {
      auto e = as_const_int(op->extent);
      loops.push_back({op->var.as<Var>()->name, e ? *e : -1, op->for_kind});
      IRVisitor::visit_node(op);
    }
  } c;
  c.visit(s);
  return c.loops;
}

template <typename T>
int count_stmts(const Stmt& s) {
  class Count : public IRVisitor {
   public:
    int n = 0;
    using IRVisitor::visit;
    void visit(const Stmt& st) override {
      if (st.as<T>()) ++n;
      IRVisitor::visit(st);
    }
  } c;
  c.visit(s);
  return c.n;
}

template <typename T>
int count_exprs(const Stmt& s) {
  int n = 0;
  for_each_expr(s, [&](const Expr& e) {
    if (e.as<T>()) ++n;
  });
  return n;
}

// Expects a ValueError whose message contains every one of `parts`.
template <typename F>
void expect_value_error(F f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected a ValueError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue) << e.what();
    for (const std::string& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "'" << p << "' not in: " << e.what();
    }
  }
}

}  // namespace ptb::testing
