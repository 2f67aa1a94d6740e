#include "lower/prefetch_streams.h"

#include <algorithm>
#include <optional>
#include <unordered_set>
#include <vector>

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/simplify.h"
#include "ir/substitute.h"
#include "ir/visitor.h"
#include "schedule/interval.h"

namespace ptb {

namespace {

constexpr int64_t kLineBytes = 64;
// More than this many lines per iteration is a burst again: such a request is not resolved.
constexpr int64_t kMaxLinesPerIteration = 32;
// A region this large is not a stream worth fetching ahead (it would evict what it runs with).
constexpr int64_t kMaxLines = int64_t{1} << 16;

const Load* request_read(const Stmt& s) {
  const auto* ev = s.as<Evaluate>();
  const auto* call = ev ? ev->value.as<Call>() : nullptr;
  if (!call || call->op != Intrinsic::kPrefetch || call->args.size() != 3) return nullptr;
  return call->args[0].as<Load>();
}

int64_t request_offset(const Stmt& s) {
  return *as_const_int(s.as<Evaluate>()->value.as<Call>()->args[1]);
}

Expr request_level(const Stmt& s) { return s.as<Evaluate>()->value.as<Call>()->args[2]; }

// The reads of one buffer inside a loop body, with the intervals of the loops around them (all
// inside the body) and whether any index uses a variable the body binds otherwise (a let).
class ReadCollector : public IRVisitor {
 public:
  explicit ReadCollector(const BufferNode* buffer) : buffer_(buffer) {}
  std::vector<const Load*> reads;
  VarIntervals loops;
  std::unordered_set<const ExprNode*> lets;

 protected:
  using IRVisitor::visit_node;
  void visit_node(const Load* op) override {
    if (op->buffer.get() == buffer_) reads.push_back(op);
    IRVisitor::visit_node(op);
  }
  void visit_node(const For* op) override {
    LinearForm lo = LinearForm::of(op->min);
    loops[op->var.get()] = Interval::of(lo, lo + LinearForm::of(op->extent) - LinearForm(1));
    IRVisitor::visit_node(op);
  }
  void visit_node(const LetStmt* op) override {
    lets.insert(op->var.get());
    IRVisitor::visit_node(op);
  }
  void visit_node(const Let* op) override {
    lets.insert(op->var.get());
    IRVisitor::visit_node(op);
  }

 private:
  const BufferNode* buffer_;
};

bool uses_any(const Expr& e, const std::unordered_set<const ExprNode*>& vars) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) { found = found || vars.count(x.get()) > 0; });
  return found;
}

// The elements [lo, hi] one read touches over the loops inside the body (a vector read: all its
// lanes); unbounded for a gather or a descending ramp.
Interval read_interval(const Load* read, const VarIntervals& loops) {
  const Expr& index = read->index;
  if (index.dtype().is_scalar()) return eval_interval(index, loops);
  if (const auto* bc = index.as<Broadcast>()) return eval_interval(bc->value, loops);
  const auto* ramp = index.as<Ramp>();
  auto stride = ramp ? as_const_int(ramp->stride) : std::nullopt;
  if (!stride || *stride < 0) return Interval::unbounded();
  Interval base = eval_interval(ramp->base, loops);
  if (!base.bounded) return base;
  return Interval::of(base.lo, base.hi + LinearForm(*stride * (ramp->lanes - 1)));
}

// The loops a stream's lines are spread over, from the body down through nested serial loops
// of constant extent (of loops side by side, the one with the most work): the deepest
// prefix whose iterations do not outnumber the lines (each iteration fetches distinct lines, at
// most kMaxLinesPerIteration of them); when even that is a burst, the shortest prefix with at
// least as many iterations as lines (one prefetch per iteration, neighbours repeating a line).
struct Spread {
  std::vector<const For*> chain;
  int64_t iterations = 1;
};

// Iterations of the innermost statements under `s` (loops of unknown extent count once): where
// the time goes, roughly.
int64_t work(const Stmt& s) {
  if (const auto* f = s.as<For>()) {
    auto extent = as_const_int(f->extent);
    return std::max<int64_t>(1, extent ? *extent : 1) * work(f->body);
  }
  if (const auto* b = s.as<Block>()) {
    int64_t sum = 0;
    for (const Stmt& x : b->stmts) sum += work(x);
    return sum;
  }
  if (const auto* a = s.as<Allocate>()) return work(a->body);
  if (const auto* l = s.as<LetStmt>()) return work(l->body);
  if (const auto* c = s.as<IfThenElse>()) {
    return std::max(work(c->then_case), c->else_case.defined() ? work(c->else_case) : 0);
  }
  return 1;
}

Spread spread_loops(const Stmt& body, int64_t lines) {
  std::vector<const For*> nest;
  Stmt cur = body;
  while (cur.defined()) {
    if (const auto* a = cur.as<Allocate>()) {
      cur = a->body;
    } else if (const auto* l = cur.as<LetStmt>()) {
      cur = l->body;
    } else if (const auto* b = cur.as<Block>()) {
      Stmt busiest;
      int64_t most = 0;
      for (const Stmt& s : b->stmts) {
        // A loop, or one inside the allocation a rule made for it (softmax's row block holds
        // its maximum's loop inside the allocation of that maximum).
        bool loops = s.as<For>() || s.as<Allocate>() || s.as<LetStmt>() || s.as<Block>();
        int64_t w = loops ? work(s) : 0;
        if (w > most) {
          most = w;
          busiest = s;
        }
      }
      cur = busiest;
    } else if (const auto* f = cur.as<For>()) {
      auto extent = as_const_int(f->extent);
      if (f->for_kind != ForKind::kSerial || !extent || *extent < 1) break;
      nest.push_back(f);
      cur = f->body;
    } else {
      break;
    }
  }
  Spread out;
  for (const For* f : nest) {
    int64_t next = out.iterations * *as_const_int(f->extent);
    bool burst = (lines + out.iterations - 1) / out.iterations > kMaxLinesPerIteration;
    if (next > lines && !burst) break;
    out.chain.push_back(f);
    out.iterations = next;
    if (next >= lines) break;
  }
  return out;
}

// Puts `stmts` first in the body of loop `target`, found by identity.
class PrependToLoop : public IRMutator {
 public:
  PrependToLoop(const For* target, std::vector<Stmt> stmts)
      : target_(target), stmts_(std::move(stmts)) {}

 protected:
  using IRMutator::mutate_node;
  Stmt mutate_node(const For* op, const Stmt& self) override {
    if (op != target_) return IRMutator::mutate_node(op, self);
    std::vector<Stmt> body = stmts_;
    body.push_back(op->body);
    return For::make(op->var, op->min, op->extent, op->for_kind, Block::make(std::move(body)));
  }

 private:
  const For* target_;
  std::vector<Stmt> stmts_;
};

// The elements of a buffer one iteration reads: `rows` stretches of `width` elements, `stride`
// apart, the first at `start` (one stretch: rows 1). Lines are counted per stretch, one more
// than its elements fill (a stretch need not start at a line's beginning).
struct Region {
  LinearForm start;
  int64_t rows = 1, stride = 0, width = 0;
  int64_t lines_per_row(int64_t bytes) const {
    return (width * bytes + kLineBytes - 1) / kLineBytes + 1;
  }
};

// The interval of every read of the buffer with the loops in `loops` varying; unbounded when a
// read goes through a let or a gather.
Interval reads_interval(const ReadCollector& reads, const VarIntervals& loops, DataType t) {
  Interval region;
  for (const Load* r : reads.reads) {
    if (uses_any(r->index, reads.lets)) return Interval::unbounded();
    Interval one = read_interval(r, loops);
    region = region.bounded ? interval_union(region, one, t) : one;
    if (!region.bounded) return region;
  }
  return region;
}

// The region one iteration reads: one constant stretch, or, when that stretch is mostly
// skipped (the 64-column panel of a [K, N] matrix that a pack reads row by row, 4 KB apart),
// the rows of the inner loop with the largest stride, each a constant stretch.
std::optional<Region> read_region(const ReadCollector& reads, DataType t, int64_t bytes) {
  Interval whole = reads_interval(reads, reads.loops, t);
  if (!whole.bounded || !(whole.hi - whole.lo).is_constant()) return std::nullopt;
  Region one{whole.lo, 1, 0, (whole.hi - whole.lo).constant() + 1};
  // The row loop: the inner loop variable with the largest constant coefficient in the reads.
  const ExprNode* row = nullptr;
  int64_t stride = 0;
  for (const Load* r : reads.reads) {
    const auto* ramp = r->index.as<Ramp>();
    LinearForm form = LinearForm::of(ramp ? ramp->base : r->index);
    for (const auto& [term, coeff] : form.terms()) {
      const Expr* var = &term;  // a loop variable, possibly widened to the index type
      while (const auto* c = var->as<Cast>()) var = &c->value;
      if (reads.loops.count(var->get()) && coeff > stride) {
        row = var->get();
        stride = coeff;
      }
    }
  }
  if (!row) return one;
  const Interval& rows = reads.loops.at(row);
  LinearForm span = rows.hi - rows.lo;
  if (!span.is_constant()) return one;
  VarIntervals others = reads.loops;
  others.erase(row);
  Interval stretch = reads_interval(reads, others, t);
  if (!stretch.bounded || !(stretch.hi - stretch.lo).is_constant()) return one;
  Region split{whole.lo, span.constant() + 1, stride, (stretch.hi - stretch.lo).constant() + 1};
  bool disjoint = split.width <= split.stride;
  bool sparser = split.rows * split.lines_per_row(bytes) * 2 < one.lines_per_row(bytes);
  return disjoint && sparser ? split : one;
}

// The request of `loop` for `read`'s buffer, `offset` iterations ahead, resolved inside `body`
// (the loop's body without its requests); nothing when the region is not one constant stretch
// or a set of them.
std::optional<Stmt> resolve(const For* loop, const Load* request, int64_t offset, const Expr& level,
                            const Stmt& body) {
  ReadCollector reads(request->buffer.get());
  reads.visit(body);
  if (reads.reads.empty()) return std::nullopt;
  DataType t = request->index.dtype();
  int64_t bytes = request->buffer->dtype.bytes();
  int64_t per_line = std::max<int64_t>(1, kLineBytes / bytes);
  auto region = read_region(reads, t, bytes);
  if (!region) return std::nullopt;
  int64_t row_lines = region->lines_per_row(bytes);
  int64_t lines = region->rows * row_lines;
  if (lines > kMaxLines) return std::nullopt;

  VarMap ahead{{loop->var.get(), idx_add(loop->var, make_const(loop->var.dtype(), offset))}};
  Expr next = simplify(substitute(region->start.to_expr(t), ahead));
  Spread spread = spread_loops(body, lines);
  // The iteration's number among the spread loops' (row-major), from 0.
  Expr i = make_zero(t);
  for (const For* f : spread.chain) {
    i = idx_add(idx_mul(i, cast(t, f->extent)), cast(t, idx_sub(f->var, f->min)));
  }
  auto prefetch_line = [&](const Expr& line) {
    Expr offset_in_region = idx_mul(line, make_const(t, per_line));
    if (region->rows > 1) {
      Expr r = floordiv(line, make_const(t, row_lines));
      Expr c = idx_sub(line, idx_mul(r, make_const(t, row_lines)));
      offset_in_region =
          idx_add(idx_mul(r, make_const(t, region->stride)), idx_mul(c, make_const(t, per_line)));
    }
    Expr index = simplify(idx_add(next, offset_in_region));
    return Evaluate::make(
        Call::make(Intrinsic::kPrefetch, {Load::make(request->buffer, index), level}));
  };
  int64_t k = (lines + spread.iterations - 1) / spread.iterations;
  // A burst after all (no inner loop to spread over, or too few iterations): not worth it.
  if (k > kMaxLinesPerIteration) return std::nullopt;
  std::vector<Stmt> fetches;
  if (spread.iterations >= lines) {
    // More iterations than lines: line i * lines / iterations (neighbours repeat a line, which
    // costs a load slot, not a second fetch).
    Expr line = floordiv(idx_mul(i, make_const(t, lines)), make_const(t, spread.iterations));
    fetches.push_back(prefetch_line(line));
  } else {
    for (int64_t j = 0; j < k; ++j) {
      fetches.push_back(prefetch_line(idx_add(idx_mul(i, make_const(t, k)), make_const(t, j))));
    }
  }
  if (spread.chain.empty()) {
    std::vector<Stmt> stmts = std::move(fetches);
    stmts.push_back(body);
    return Block::make(std::move(stmts));
  }
  return PrependToLoop(spread.chain.back(), std::move(fetches)).mutate(body);
}

class Resolver : public IRMutator {
 protected:
  using IRMutator::mutate_node;
  Stmt mutate_node(const For* op, const Stmt& self) override {
    Stmt body = mutate(op->body);
    std::vector<Stmt> requests, rest;
    const auto* block = body.as<Block>();
    for (const Stmt& s : block ? block->stmts : std::vector<Stmt>{body}) {
      (request_read(s) ? requests : rest).push_back(s);
    }
    if (requests.empty()) {
      return body.same_as(op->body) ? self
                                    : For::make(op->var, op->min, op->extent, op->for_kind, body);
    }
    Stmt inner = Block::make(std::move(rest));
    for (const Stmt& r : requests) {
      if (auto resolved =
              resolve(op, request_read(r), request_offset(r), request_level(r), inner)) {
        inner = *resolved;
      }
    }
    return For::make(op->var, op->min, op->extent, op->for_kind, inner);
  }
};

}  // namespace

Stmt prefetch_streams(const Stmt& s) { return Resolver().mutate(s); }

}  // namespace ptb
