#include "te/read_bounds.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "ir/op.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "schedule/interval.h"
#include "support/error.h"
#include "te/scan.h"

namespace ptb {

namespace {

// The unconditional reads of one body: a select's values, an if_then_else's branches and a
// conditional reduction's source may not be evaluated for every point (a pad reads its input
// only inside the border), so reads there are not collected.
class UnconditionalReads : public IRVisitor {
 public:
  std::vector<const TensorRead*> reads;

 protected:
  using IRVisitor::visit_node;
  void visit_node(const TensorRead* op) override {
    reads.push_back(op);
    IRVisitor::visit_node(op);
  }
  void visit_node(const Select* op) override { visit(op->condition); }
  void visit_node(const Call* op) override {
    if (op->op == Intrinsic::kIfThenElse) {
      visit(op->args[0]);
      return;
    }
    IRVisitor::visit_node(op);
  }
  void visit_node(const Reduce* op) override {
    if (op->condition.defined() && !is_const_int(op->condition, 1)) return;
    IRVisitor::visit_node(op);
  }
};

struct LoopVar {
  Expr extent;
  Interval range;
};

// Whether interval arithmetic gives `index`'s exact range over a box of loop ranges: the index
// is built of additions, subtractions, products with values fixed during the loops, floor or
// truncating divisions by positive constants, min and max (each monotone in each operand), and
// each loop variable occurs once. Its extremes are then reached at corners of the box
// (i // 2 + 5, max(i, 8)); i * i or (i * 5) % 9 may never reach the bounds intervals give.
class ExactByIntervals {
 public:
  explicit ExactByIntervals(const std::unordered_map<const ExprNode*, LoopVar>& loops)
      : loops_(loops) {}

  bool check(const Expr& index) { return walk(index) && exact_; }

 private:
  // Walks `e`; returns whether a loop variable occurs in it (and clears exact_ on what breaks
  // exactness).
  bool walk(const Expr& e) {
    if (!exact_) return false;
    if (e.as<IntImm>()) return false;
    if (e.as<Var>()) {
      if (!loops_.count(e.get())) return false;  // a size: fixed
      if (!seen_.insert(e.get()).second) exact_ = false;
      return true;
    }
    if (const auto* c = e.as<Cast>()) {
      if (!c->value.dtype().is_int() && !c->value.dtype().is_uint()) exact_ = false;
      return walk(c->value);
    }
    if (const auto* o = e.as<Add>()) return walk_both(o->a, o->b);
    if (const auto* o = e.as<Sub>()) return walk_both(o->a, o->b);
    if (const auto* o = e.as<Min>()) return walk_both(o->a, o->b);
    if (const auto* o = e.as<Max>()) return walk_both(o->a, o->b);
    if (const auto* o = e.as<Mul>()) {
      bool a = walk(o->a), b = walk(o->b);
      if (a && b) exact_ = false;  // i * j: monotone in neither over signed ranges
      return a || b;
    }
    const Expr* divisor = nullptr;
    const Expr* dividend = nullptr;
    if (const auto* o = e.as<FloorDiv>()) dividend = &o->a, divisor = &o->b;
    if (const auto* o = e.as<Div>()) dividend = &o->a, divisor = &o->b;
    if (divisor != nullptr) {
      auto d = as_const_int(*divisor);
      if (!d || *d <= 0) exact_ = false;
      return walk(*dividend);
    }
    if (const auto* c = e.as<Call>()) {
      // a shift by a constant: a product or a floor division by a power of two
      if ((c->op == Intrinsic::kShiftLeft || c->op == Intrinsic::kShiftRight) &&
          c->dtype.is_int()) {
        auto amount = as_const_int(c->args[1]);
        if (!amount || *amount < 0 || *amount >= c->dtype.bits()) exact_ = false;
        return walk(c->args[0]);
      }
    }
    exact_ = false;  // mod, select, a gathered index, another call...
    return false;
  }
  bool walk_both(const Expr& a, const Expr& b) {
    bool x = walk(a);
    return walk(b) || x;
  }

  const std::unordered_map<const ExprNode*, LoopVar>& loops_;
  std::unordered_set<const ExprNode*> seen_;
  bool exact_ = true;
};

// [lo, hi] of an index whose range interval arithmetic gives exactly (affine in the loop
// variables and other, fixed, variables, or ExactByIntervals), and the extents of the loops
// it varies over; nothing for any other index.
std::optional<std::pair<Interval, std::vector<Expr>>> exact_range(
    const Expr& index, const std::unordered_map<const ExprNode*, LoopVar>& loops,
    const VarIntervals& vars) {
  LinearForm form = LinearForm::of(index);
  bool affine = true;
  for (const auto& [term, coeff] : form.terms()) affine = affine && term.as<Var>();
  if (!affine && !ExactByIntervals(loops).check(index)) return std::nullopt;
  std::vector<Expr> used;
  std::unordered_set<const ExprNode*> listed;
  for_each_expr(index, [&](const Expr& x) {
    auto it = loops.find(x.get());
    if (it != loops.end() && listed.insert(x.get()).second) used.push_back(it->second.extent);
  });
  Interval range = eval_interval(index, vars);
  if (!range.bounded) return std::nullopt;
  return std::make_pair(range, used);
}

// The size requirements a compute's attrs state: attrs[name] holds groups of `width` ints, the
// first two an input (by position in input_tensors()) and one of its dimensions; each group is
// checked to name one. Calls f(input, dimension, the group's remaining ints).
template <typename F>
void for_each_requirement(const Operation& op, const ComputeOpNode* compute, const char* name,
                          size_t width, F f) {
  auto attr = compute->attrs.find(name);
  if (attr == compute->attrs.end()) return;
  const auto* values = std::get_if<std::vector<int64_t>>(&attr->second);
  std::vector<Tensor> inputs = op->input_tensors();
  for (size_t k = 0; values && k + width <= values->size(); k += width) {
    auto in = static_cast<size_t>((*values)[k]);
    auto d = static_cast<size_t>((*values)[k + 1]);
    if (in >= inputs.size() || d >= inputs[in].shape().size()) {
      value_error("compute '", op->name, "': attrs['", name, "'] names dimension ", d, " of input ",
                  in, ", which it does not have");
    }
    f(inputs[in], d, values->data() + k + 2);
  }
}

// The checks of those requirements, made per call where the size is a variable:
// - attrs["nonempty_reads"] = [k, d, ...]: dimension d of input k must have an element
//   wherever the compute has one: the index of an extreme (argmax) over it, an element taken
//   from it (take's clipped or wrapped index), which over an empty axis read outside the
//   tensor or gave an index out of range. NumPy and PyTorch refuse both. (A constant empty
//   axis is checked per call too: topi refuses it when it can tell the compute is not empty.)
// - attrs["divisible_reads"] = [k, d, m, ...]: dimension d of input k must split into m equal
//   parts (topi.split into sections of a size variable dropped the remainder).
void add_size_requirements(const Operation& op, const ComputeOpNode* compute,
                           std::vector<ReadBound>* out) {
  std::vector<Expr> outputs;
  for (const IterVar& iv : compute->axis) outputs.push_back(iv->dom.extent);
  auto what = [&](const char* verb, const Tensor& input, size_t d) {
    return str_cat("compute '", op->name, "' ", verb, " dimension ", d, " of '", input.op()->name,
                   "' (", to_string(input.shape()[d]), ")");
  };
  for_each_requirement(
      op, compute, "nonempty_reads", 2, [&](const Tensor& input, size_t d, const int64_t*) {
        const Expr& extent = input.shape()[d];
        if (auto c = as_const_int(extent); c && *c > 0) return;
        DataType t = extent.dtype();
        out->push_back(
            {what("reads", input, d), make_zero(t), make_zero(t), extent, outputs, true});
      });
  for_each_requirement(
      op, compute, "divisible_reads", 3, [&](const Tensor& input, size_t d, const int64_t* parts) {
        const Expr& extent = input.shape()[d];
        if (as_const_int(extent)) return;  // (topi checks a constant)
        if (*parts < 1) {
          value_error("compute '", op->name, "': attrs['divisible_reads'] asks for ", *parts,
                      " parts");
        }
        DataType t = extent.dtype();
        ReadBound b{what("splits", input, d), make_zero(t), make_zero(t), extent, {}};
        b.divisor = *parts;
        out->push_back(std::move(b));
      });
}

}  // namespace

std::vector<ReadBound> read_bounds(const std::vector<Tensor>& args) {
  std::vector<ReadBound> out;
  std::vector<Operation> todo, ops;
  for (const Tensor& t : args) todo.push_back(t.op());
  std::unordered_set<const OperationNode*> seen;
  // A scan's state placeholders stand for the scan's earlier time steps: its update (and the
  // stages of its cell) read them at t - 1 for t from the init's extent only, though their
  // axes run from 0. Reads of them are not checked.
  std::unordered_set<const OperationNode*> states;
  while (!todo.empty()) {
    Operation op = todo.back();
    todo.pop_back();
    if (!seen.insert(op.get()).second) continue;
    ops.push_back(op);
    for (const Tensor& in : op->input_tensors()) todo.push_back(in.op());
    if (const ScanOpNode* scan = as_scan(op)) {
      for (const Tensor& state : scan->state_placeholder) states.insert(state.op().get());
      for (const Operation& update : scan->update_ops) todo.push_back(update);
    }
  }
  for (const Operation& op : ops) {
    const auto* compute = dynamic_cast<const ComputeOpNode*>(op.get());
    if (compute == nullptr || as_scan(op) != nullptr) continue;
    std::unordered_map<const ExprNode*, LoopVar> loops;
    VarIntervals vars;
    auto add_loop = [&](const IterVar& iv) {
      const Range& dom = iv->dom;
      LinearForm lo = LinearForm::of(dom.min);
      LinearForm hi = lo + LinearForm::of(dom.extent) - LinearForm(1);
      loops[iv->var.get()] = {dom.extent, Interval::of(lo, hi)};
      vars[iv->var.get()] = Interval::of(lo, hi);
    };
    for (const IterVar& iv : compute->axis) add_loop(iv);
    for (const IterVar& iv : compute->reduce_axis) add_loop(iv);
    add_size_requirements(op, compute, &out);
    UnconditionalReads finder;
    for (const Expr& e : compute->body) finder.visit(e);
    for (const TensorRead* read : finder.reads) {
      if (states.count(read->op.get())) continue;
      const std::vector<Expr>& shape = read->op->output_shape(read->value_index);
      for (size_t d = 0; d < read->indices.size() && d < shape.size(); ++d) {
        auto range = exact_range(read->indices[d], loops, vars);
        if (!range) continue;
        DataType t = read->indices[d].dtype();
        ReadBound bound{
            str_cat("compute '", op->name, "' reads '", read->op->name, "' in dimension ", d),
            range->first.lo.to_expr(t), range->first.hi.to_expr(t), shape[d], range->second};
        // In bounds whatever the sizes (B[i] over i < n of a B of n): nothing to check per call.
        LinearForm slack = LinearForm::of(shape[d]) - range->first.hi - LinearForm(1);
        const LinearForm& low = range->first.lo;
        if (low.is_constant() && low.constant() >= 0 && slack.is_constant() &&
            slack.constant() >= 0) {
          continue;
        }
        auto lo = as_const_int(bound.lo), hi = as_const_int(bound.hi);
        auto extent = as_const_int(bound.extent);
        bool all_const = lo && hi && extent;
        for (const Expr& e : bound.loops) all_const = all_const && as_const_int(e).has_value();
        if (all_const) {
          bool empty = false;
          for (const Expr& e : bound.loops) empty = empty || *as_const_int(e) <= 0;
          if (!empty && (*lo < 0 || *hi >= *extent)) {
            value_error(bound.what, " at indices ", *lo, "..", *hi, ", but '", read->op->name,
                        "' has ", *extent, " there: the compute reads outside the tensor");
          }
          continue;
        }
        out.push_back(std::move(bound));
      }
    }
  }
  return out;
}

}  // namespace ptb
