#include "lower/lower.h"

#include "support/phase_timer.h"

#include <algorithm>
#include <cstdlib>
#include <unordered_set>

#include "ir/op.h"
#include "ir/simplify.h"
#include "ir/substitute.h"
#include "ir/visitor.h"
#include "lower/balance_sums.h"
#include "lower/clamp_guarded_loops.h"
#include "lower/full_tile_guards.h"
#include "lower/partition_loops.h"
#include "lower/partition_ranges.h"
#include "lower/plan_memory.h"
#include "lower/schedule_ops.h"
#include "lower/serialize_packed_calls.h"
#include "lower/storage_flatten.h"
#include "lower/unroll_loops.h"
#include "lower/vectorize_loops.h"
#include "lower/version_guards.h"
#include "support/error.h"
#include "support/stack.h"
#include "te/scan.h"

namespace ptb {

namespace {

// Vars used but not defined in the body: they must all be bound from the arguments.
class FreeVarCheck : public IRVisitor {
 public:
  explicit FreeVarCheck(std::unordered_set<const ExprNode*> bound) : bound_(std::move(bound)) {}
  using IRVisitor::visit;

 protected:
  void visit_node(const Var* op) override {
    if (!op->dtype.is_handle() && !bound_.count(op)) {
      value_error("variable '", op->name,
                  "' is not bound: a size variable must be a whole dimension of one of the "
                  "arguments' shapes (n, not only inside n + 2), bound from the arrays passed at "
                  "call time; a reduce_axis must be reduced over (te.sum/max/min/prod) in the "
                  "compute that reads it");
    }
  }
  void visit_node(const For* op) override {
    bound_.insert(op->var.get());
    IRVisitor::visit_node(op);
  }
  void visit_node(const LetStmt* op) override {
    bound_.insert(op->var.get());
    IRVisitor::visit_node(op);
  }
  void visit_node(const Let* op) override {
    bound_.insert(op->var.get());
    IRVisitor::visit_node(op);
  }

 private:
  std::unordered_set<const ExprNode*> bound_;
};

std::string unique_name(const std::string& base, std::unordered_set<std::string>* used) {
  std::string name = base;
  for (int i = 1; used->count(name); ++i) name = base + "_" + std::to_string(i);
  used->insert(name);
  return name;
}

}  // namespace

static LoweredFunc lower_here(const Schedule& sch, const std::vector<Tensor>& args,
                              const std::string& name, bool structure_only) {
  std::vector<Operation> arg_ops;
  BufferMap buffers;
  LoweredFunc f;
  f.name = name;
  std::unordered_set<const ExprNode*> shape_vars;
  std::unordered_set<std::string> names;
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor& t = args[i];
    if (buffers.count({t.op().get(), t.value_index()})) {
      value_error("tensor '", t.name(), "' appears twice in the argument list (argument ", i, ")");
    }
    // An argument the kernel would never write is refused (its array would be left as it
    // was): a stage inlined into its consumers, or a compute outside this schedule.
    auto stage = sch->stage_of_op.find(t.op().get());
    if (stage != sch->stage_of_op.end() && stage->second->attach_type == AttachType::kInline) {
      value_error("tensor '", t.name(), "' (argument ", i,
                  ") was inlined with compute_inline, so the kernel never stores it; leave it out "
                  "of the arguments, or do not inline it");
    }
    if (stage == sch->stage_of_op.end() && t.op()->kind != OpKind::kPlaceholder) {
      value_error("tensor '", t.name(), "' (argument ", i,
                  ") is computed by an operation that is not part of this schedule, so the kernel "
                  "never writes it; create the schedule from the outputs that include it");
    }
    std::string buf_name = unique_name(t.name(), &names);
    std::vector<Expr> strides;
    for (int d = 0; d < t.ndim(); ++d) {
      Expr stride = Var::make(kOffsetType, buf_name + "_stride" + std::to_string(d));
      strides.push_back(stride);
    }
    Buffer buf = make_buffer(buf_name, t.dtype(), t.shape(), strides);
    buffers[{t.op().get(), t.value_index()}] = buf;
    f.args.push_back(buf);
    arg_ops.push_back(t.op());
    for (const Expr& dim : t.shape()) {
      if (dim.as<Var>() && shape_vars.insert(dim.get()).second) f.scalar_params.push_back(dim);
    }
  }
  for (const Buffer& b : f.args) {
    for (const Expr& s : b->strides) f.scalar_params.push_back(s);
  }
  // A scan's state placeholders stand for the scan itself (read by the stages of its group).
  std::vector<Operation> states;
  for (const Stage& st : sch->stages) {
    if (const ScanOpNode* scan = as_scan(st->origin_op)) {
      for (const Tensor& t : scan->state_placeholder) states.push_back(t.op());
    }
  }
  for (const Stage& st : sch->stages) {
    if (st->is_placeholder() &&
        std::find(arg_ops.begin(), arg_ops.end(), st->op) == arg_ops.end() &&
        std::find(states.begin(), states.end(), st->op) == states.end()) {
      value_error("placeholder '", st->op->name,
                  "' is read by the schedule but missing from the argument list");
    }
  }

  PhaseTimer timer("lower passes " + name);  // PYTVMBRIDGE_COMPILE_TIMES=1
  Stmt s = schedule_ops(sch, arg_ops);
  s = serialize_packed_calls(s);
  timer.mark("schedule_ops");
  s = storage_flatten(s, buffers);
  timer.mark("flatten");
  s = simplify(s);
  timer.mark("simplify");
  // A symbolic extent's whole tiles: the guards of the stages inside them hold.
  s = drop_full_tile_guards(s);
  timer.mark("full_tile_guards");
  // A loop whose body one guard on its variable skips from some iteration on: stopped there.
  s = clamp_guarded_loops(s);
  timer.mark("clamp_guarded_loops");
  // A non-dividing tile's guards: tested once per tile (main part), before unrolling copies them.
  if (!std::getenv("PYTVMBRIDGE_NO_PARTITION")) s = partition_loops(s);
  timer.mark("partition");
  // A comparison a part of a loop decides (a concatenation's, a pad's): that part without it.
  // PYTVMBRIDGE_NO_PARTITION_RANGES=1 turns this one off alone (tests of partition_loops).
  if (!std::getenv("PYTVMBRIDGE_NO_PARTITION") && !std::getenv("PYTVMBRIDGE_NO_PARTITION_RANGES")) {
    s = partition_ranges(s);
  }
  timer.mark("partition_ranges");
  if (structure_only) {
    f.body = s;
    return f;
  }
  s = unroll_loops(s);
  timer.mark("unroll");
  s = vectorize_loops(s);
  timer.mark("vectorize");
  s = simplify(s);
  timer.mark("simplify");
  // Guards a loop's iteration fixes (a symbolic extent's partial tile): tested once per
  // iteration, not inside its inner loops.
  s = version_invariant_guards(s);
  timer.mark("version_guards");
  s = balance_sums(s);
  timer.mark("balance_sums");
  s = plan_memory(s);  // dead intermediates' memory reused by later ones
  timer.mark("plan_memory");

  std::unordered_set<const ExprNode*> bound;
  for (const Expr& v : f.scalar_params) bound.insert(v.get());
  FreeVarCheck(bound).visit(s);
  f.body = s;
  return f;
}

// The passes recurse as deep as the expressions are; a deep one is lowered again on a deep stack.
LoweredFunc lower(const Schedule& sch, const std::vector<Tensor>& args, const std::string& name) {
  return with_deep_stack([&] { return lower_here(sch, args, name, false); });
}

LoweredFunc lower_structure(const Schedule& sch, const std::vector<Tensor>& args,
                            const std::string& name) {
  return with_deep_stack([&] { return lower_here(sch, args, name, true); });
}

}  // namespace ptb
