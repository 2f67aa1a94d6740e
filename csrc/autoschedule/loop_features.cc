#include "autoschedule/loop_features.h"

#include <algorithm>
#include <cmath>

#include "ir/op.h"
#include "ir/visitor.h"
#include "lower/unroll_loops.h"
#include "lower/vectorize_loops.h"

namespace ptb {

namespace {

// A symbolic extent or size is taken to be this (a guess the model can learn around).
constexpr double kUnknownExtent = 16;

double extent_of(const Expr& e) {
  auto v = as_const_int(e);
  return v ? static_cast<double>(std::max<int64_t>(*v, 1)) : kUnknownExtent;
}

int count_loads(const Expr& e) {
  int n = 0;
  for_each_expr(e, [&](const Expr& x) {
    if (x.as<Load>()) ++n;
  });
  return n;
}

int lanes_in(const Expr& e) {
  int lanes = e.dtype().lanes();
  for_each_expr(e, [&](const Expr& x) { lanes = std::max(lanes, x.dtype().lanes()); });
  return lanes;
}

class FeatureWalk : public IRVisitor {
 public:
  double serial = 0, parallel = 0, log_parallel_extent = 0, innermost = 1, log_total_serial = 0;
  double vector_stmts = 0, max_lanes = 0, stores = 0, allocations = 0, allocated = 0, lines = 1;
  double loads = 0;
  int depth = 0, max_depth = 0;

 protected:
  using IRVisitor::visit_node;

  void visit_node(const For* op) override {
    auto extent = as_const_int(op->extent);
    if (extent && *extent == 1) {  // simplified away
      visit(op->body);
      return;
    }
    if (op->for_kind == ForKind::kUnrolled && extent && *extent <= kMaxUnrollCopies) {
      with_copies(static_cast<double>(std::max<int64_t>(*extent, 0)), 0, op->body);
      return;
    }
    if (op->for_kind == ForKind::kVectorized && extent) {
      // as vectorize_loops splits it: chunks of the widest vector (512 bits), inline up to
      // four of them, a loop over more, and a narrower vector for what remains
      const int64_t lanes =
          std::min<int64_t>(*extent, std::max(2, kVectorBits / vector_element_bits(op->body)));
      const int64_t chunks = *extent / lanes, rest = *extent % lanes;
      if (chunks > kMaxInlineVectorChunks) {
        open_loop(ForKind::kSerial, static_cast<double>(chunks));
        with_copies(1, static_cast<int>(lanes), op->body);
        close_loop();
      } else {
        with_copies(static_cast<double>(chunks), static_cast<int>(lanes), op->body);
      }
      if (rest > 0) with_copies(1, static_cast<int>(rest), op->body);
      return;
    }
    open_loop(op->for_kind, extent_of(op->extent));
    visit(op->body);
    close_loop();
  }

  void visit_node(const Store* op) override {
    stores += copies_;
    lines += copies_;
    loads += copies_ * count_loads(op->value);
    int lanes = std::max(lanes_, lanes_in(op->value));
    if (lanes > 1) {
      vector_stmts += copies_;
      max_lanes = std::max<double>(max_lanes, lanes);
    }
  }

  void visit_node(const Allocate* op) override {
    allocations += copies_;
    lines += copies_;
    double size = 1;
    for (const Expr& d : op->buffer->shape) size *= extent_of(d);
    allocated += copies_ * size;
    visit(op->body);
  }

  void visit_node(const LetStmt* op) override {
    lines += copies_;
    IRVisitor::visit_node(op);
  }

  void visit_node(const IfThenElse* op) override {
    lines += (op->else_case ? 3 : 2) * copies_;
    visit(op->then_case);
    if (op->else_case) visit(op->else_case);
  }

  void visit_node(const Evaluate*) override { lines += copies_; }
  void visit_node(const CallPacked*) override { lines += copies_; }

 private:
  void open_loop(ForKind kind, double n) {
    if (kind == ForKind::kParallel) {
      parallel += copies_;
      log_parallel_extent += copies_ * std::log2(n);
    } else {
      serial += copies_;
      log_total_serial += copies_ * std::log2(n);
    }
    innermost = n;
    lines += 2 * copies_;
    max_depth = std::max(max_depth, ++depth);
  }
  void close_loop() { --depth; }

  // Visits body as `times` copies, each `lanes` wide (0: as wide as now).
  void with_copies(double times, int lanes, const Stmt& body) {
    double saved_copies = copies_;
    int saved_lanes = lanes_;
    copies_ *= times;
    if (lanes > 0) lanes_ = lanes;
    visit(body);
    copies_ = saved_copies;
    lanes_ = saved_lanes;
  }

  double copies_ = 1;  // how many copies of the statement being visited unrolling makes
  int lanes_ = 1;      // the lanes of an enclosing vectorized loop
};

}  // namespace

const std::vector<std::string>& loop_feature_names() {
  static const std::vector<std::string> names = {"serial_loops",
                                                 "parallel_loops",
                                                 "max_depth",
                                                 "log_parallel_extent",
                                                 "log_innermost_extent",
                                                 "log_total_serial_extent",
                                                 "vector_stmts",
                                                 "max_lanes",
                                                 "stores",
                                                 "allocations",
                                                 "log_allocated",
                                                 "lines",
                                                 "loads"};
  return names;
}

std::vector<double> loop_features(const Stmt& body) {
  FeatureWalk w;
  if (body) w.visit(body);
  return {w.serial,
          w.parallel,
          static_cast<double>(w.max_depth),
          w.log_parallel_extent,
          std::log2(std::max(1.0, w.innermost)),
          w.log_total_serial,
          w.vector_stmts,
          w.max_lanes,
          w.stores,
          w.allocations,
          std::log2(1 + w.allocated),
          w.lines,
          w.loads};
}

}  // namespace ptb
