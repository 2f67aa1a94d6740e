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
constexpr int64_t kMaxLinesPerIteration = 16;
// A region this large is not a stream worth fetching ahead (it would evict what it runs with).
constexpr int64_t kMaxLines = int64_t{1} << 16;

const Load* request_read(const Stmt& s) {
  const auto* ev = s.as<Evaluate>();
  const auto* call = ev ? ev->value.as<Call>() : nullptr;
  if (!call || call->op != Intrinsic::kPrefetch || call->args.size() != 2) return nullptr;
  return call->args[0].as<Load>();
}

int64_t request_offset(const Stmt& s) {
  return *as_const_int(s.as<Evaluate>()->value.as<Call>()->args[1]);
}

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
// of constant extent (of loops side by side, the longest, where the time goes): the deepest
// prefix whose iterations do not outnumber the lines (each iteration fetches distinct lines, at
// most kMaxLinesPerIteration of them); when even that is a burst, the shortest prefix with at
// least as many iterations as lines (one prefetch per iteration, neighbours repeating a line).
struct Spread {
  std::vector<const For*> chain;
  int64_t iterations = 1;
};

Spread spread_loops(const Stmt& body, int64_t lines) {
  std::vector<const For*> nest;
  Stmt cur = body;
  while (cur.defined()) {
    if (const auto* a = cur.as<Allocate>()) {
      cur = a->body;
    } else if (const auto* l = cur.as<LetStmt>()) {
      cur = l->body;
    } else if (const auto* b = cur.as<Block>()) {
      Stmt longest;
      int64_t most = 0;
      for (const Stmt& s : b->stmts) {
        const auto* f = s.as<For>();
        auto extent = f ? as_const_int(f->extent) : std::nullopt;
        if (extent && *extent > most) {
          most = *extent;
          longest = s;
        }
      }
      cur = longest;
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

// The request of `loop` for `read`'s buffer, `offset` iterations ahead, resolved inside `body`
// (the loop's body without its requests); nothing when the region is not one constant stretch.
std::optional<Stmt> resolve(const For* loop, const Load* request, int64_t offset,
                            const Stmt& body) {
  ReadCollector reads(request->buffer.get());
  reads.visit(body);
  if (reads.reads.empty()) return std::nullopt;
  DataType t = request->index.dtype();
  Interval region;
  for (const Load* r : reads.reads) {
    if (uses_any(r->index, reads.lets)) return std::nullopt;
    Interval one = read_interval(r, reads.loops);
    region = region.bounded ? interval_union(region, one, t) : one;
    if (!region.bounded) return std::nullopt;
  }
  LinearForm length = region.hi - region.lo;
  if (!length.is_constant()) return std::nullopt;
  int64_t bytes = request->buffer->dtype.bytes();
  int64_t per_line = std::max<int64_t>(1, kLineBytes / bytes);
  // One more line than the elements fill: the stretch need not start at a line's beginning.
  int64_t lines = ((length.constant() + 1) * bytes + kLineBytes - 1) / kLineBytes + 1;
  if (lines > kMaxLines) return std::nullopt;

  VarMap ahead{{loop->var.get(), idx_add(loop->var, make_const(loop->var.dtype(), offset))}};
  Expr next = simplify(substitute(region.lo.to_expr(t), ahead));
  Spread spread = spread_loops(body, lines);
  // The iteration's number among the spread loops' (row-major), from 0.
  Expr i = make_zero(t);
  for (const For* f : spread.chain) {
    i = idx_add(idx_mul(i, cast(t, f->extent)), cast(t, idx_sub(f->var, f->min)));
  }
  auto prefetch_line = [&](const Expr& line) {
    Expr index = simplify(idx_add(next, idx_mul(line, make_const(t, per_line))));
    return Evaluate::make(Call::make(Intrinsic::kPrefetch, {Load::make(request->buffer, index)}));
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
      if (auto resolved = resolve(op, request_read(r), request_offset(r), inner)) inner = *resolved;
    }
    return For::make(op->var, op->min, op->extent, op->for_kind, inner);
  }
};

}  // namespace

Stmt prefetch_streams(const Stmt& s) { return Resolver().mutate(s); }

}  // namespace ptb
