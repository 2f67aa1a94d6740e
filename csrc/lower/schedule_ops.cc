#include "lower/schedule_ops.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/substitute.h"
#include "support/error.h"

namespace ptb {

namespace {

using IterVarMap = std::unordered_map<const IterVarNode*, Expr>;

// Replaces reads of inlined operations by their bodies, recursively.
class InlineReads : public IRMutator {
 public:
  explicit InlineReads(const std::unordered_set<const OperationNode*>& inlined) : inlined_(inlined) {}

 protected:
  using IRMutator::mutate_node;
  Expr mutate_node(const TensorRead* op, const Expr& self) override {
    Expr read = IRMutator::mutate_node(op, self);
    const auto* r = read.as<TensorRead>();
    if (!inlined_.count(r->op.get())) return read;
    const auto* compute = static_cast<const ComputeOpNode*>(r->op.get());
    VarMap vmap;
    for (size_t d = 0; d < compute->axis.size(); ++d) {
      vmap[compute->axis[d]->var.get()] = r->indices[d];
    }
    return mutate(substitute(compute->body[r->value_index], vmap));
  }

 private:
  const std::unordered_set<const OperationNode*>& inlined_;
};

// Extents of every iteration variable of a stage, and the value of each root variable in terms
// of the leaf loop variables (all leaf loops run from 0).
struct LoopIndexing {
  IterVarMap extent;
  IterVarMap value;                 // root vars: absolute values (dom.min added)
  std::vector<Expr> guards;         // split bounds that do not provably divide
  std::vector<bool> guard_on_reduce;  // whether the guard involves a reduce axis
};

Expr ceil_div(const Expr& a, const Expr& b) {
  auto ca = as_const_int(a), cb = as_const_int(b);
  if (ca && cb) return IntImm::make(a.dtype(), (*ca + *cb - 1) / *cb);
  return floordiv(idx_sub(idx_add(a, b), make_one(b.dtype())), b);
}

bool divides(const Expr& extent, const Expr& factor) {
  auto ce = as_const_int(extent), cf = as_const_int(factor);
  return ce && cf && *cf != 0 && *ce % *cf == 0;
}

LoopIndexing index_loops(const StageNode& stage) {
  LoopIndexing ix;
  for (const IterVar& iv : stage.root_iter_vars) ix.extent[iv.get()] = iv->dom.extent;
  for (const IterVarRelation& rel : stage.relations) {
    if (rel.kind == IterVarRelation::Kind::kSplit) {
      Expr parent = ix.extent.at(rel.parent.get());
      if (rel.factor.defined()) {
        ix.extent[rel.outer.get()] = ceil_div(parent, rel.factor);
        ix.extent[rel.inner.get()] = rel.factor;
      } else {
        ix.extent[rel.outer.get()] = rel.nparts;
        ix.extent[rel.inner.get()] = ceil_div(parent, rel.nparts);
      }
    } else {
      ix.extent[rel.fused.get()] =
          idx_mul(ix.extent.at(rel.outer.get()), ix.extent.at(rel.inner.get()));
    }
  }
  for (const IterVar& iv : stage.leaf_iter_vars) ix.value[iv.get()] = iv->var;
  for (auto it = stage.relations.rbegin(); it != stage.relations.rend(); ++it) {
    const IterVarRelation& rel = *it;
    if (rel.kind == IterVarRelation::Kind::kSplit) {
      Expr inner_extent = ix.extent.at(rel.inner.get());
      Expr v = idx_add(idx_mul(ix.value.at(rel.outer.get()), inner_extent),
                       ix.value.at(rel.inner.get()));
      ix.value[rel.parent.get()] = v;
      Expr parent_extent = ix.extent.at(rel.parent.get());
      Expr covered = idx_mul(ix.extent.at(rel.outer.get()), inner_extent);
      if (!divides(parent_extent, inner_extent) || !divides(covered, parent_extent)) {
        ix.guards.push_back(LT::make(v, parent_extent));
        ix.guard_on_reduce.push_back(rel.parent->kind == IterKind::kReduce);
      }
    } else {
      Expr fused = ix.value.at(rel.fused.get());
      Expr inner_extent = ix.extent.at(rel.inner.get());
      ix.value[rel.outer.get()] = floordiv(fused, inner_extent);
      ix.value[rel.inner.get()] = floormod(fused, inner_extent);
    }
  }
  for (const IterVar& iv : stage.root_iter_vars) {
    ix.value[iv.get()] = idx_add(ix.value.at(iv.get()), iv->dom.min);
  }
  return ix;
}

// Whether `iv` derives (through the relations) from a reduce axis.
bool is_reduce_leaf(const StageNode& stage, const IterVar& iv) { return iv->kind == IterKind::kReduce; }

Stmt wrap_loops(const StageNode& stage, const LoopIndexing& ix, const std::vector<IterVar>& leaves,
                Stmt body) {
  for (auto it = leaves.rbegin(); it != leaves.rend(); ++it) {
    const IterVar& iv = *it;
    Expr extent = cast(iv->var.dtype(), ix.extent.at(iv.get()));
    body = For::make(iv->var, make_zero(iv->var.dtype()), extent, stage.kind_of(iv), body);
  }
  return body;
}

Stmt guard(const LoopIndexing& ix, Stmt body, bool include_reduce) {
  std::vector<Expr> conds;
  for (size_t i = 0; i < ix.guards.size(); ++i) {
    if (include_reduce || !ix.guard_on_reduce[i]) conds.push_back(ix.guards[i]);
  }
  if (conds.empty()) return body;
  return IfThenElse::make(all_of(conds), body);
}

Stmt make_compute_nest(const StageNode& stage, const ComputeOpNode* compute,
                       const std::vector<Expr>& bodies) {
  LoopIndexing ix = index_loops(stage);
  VarMap vmap;
  for (const IterVar& iv : stage.root_iter_vars) vmap[iv->var.get()] = ix.value.at(iv.get());
  std::vector<Expr> out_index;
  for (const IterVar& iv : compute->axis) out_index.push_back(ix.value.at(iv.get()));
  Operation op = stage.op;

  if (!compute->is_reduction()) {
    std::vector<Stmt> provides;
    for (size_t i = 0; i < bodies.size(); ++i) {
      provides.push_back(
          Provide::make(op, static_cast<int>(i), substitute(bodies[i], vmap), out_index));
    }
    return wrap_loops(stage, ix, stage.leaf_iter_vars, guard(ix, Block::make(provides), true));
  }

  // Reduction: the init nest sits just outside the first reduce loop and loops over the
  // data-parallel leaves that come after it; the update runs in the full nest.
  size_t first_reduce = stage.leaf_iter_vars.size();
  for (size_t i = 0; i < stage.leaf_iter_vars.size(); ++i) {
    if (is_reduce_leaf(stage, stage.leaf_iter_vars[i])) {
      first_reduce = i;
      break;
    }
  }
  std::vector<Stmt> inits, updates;
  for (size_t i = 0; i < bodies.size(); ++i) {
    const auto* red = bodies[i].as<Reduce>();
    PTB_ICHECK(red, "reduction body expected");
    int vi = static_cast<int>(i);
    inits.push_back(Provide::make(op, vi, reduce_identity(red->combiner, red->dtype), out_index));
    Expr acc = TensorRead::make(op, vi, out_index);
    Stmt update = Provide::make(
        op, vi, reduce_combine(red->combiner, acc, substitute(red->source, vmap)), out_index);
    if (red->condition.defined()) {
      update = IfThenElse::make(substitute(red->condition, vmap), update);
    }
    updates.push_back(update);
  }
  std::vector<IterVar> outer(stage.leaf_iter_vars.begin(),
                             stage.leaf_iter_vars.begin() + first_reduce);
  std::vector<IterVar> inner_data, inner_all(stage.leaf_iter_vars.begin() + first_reduce,
                                              stage.leaf_iter_vars.end());
  for (const IterVar& iv : inner_all) {
    if (!is_reduce_leaf(stage, iv)) inner_data.push_back(iv);
  }
  Stmt init = wrap_loops(stage, ix, inner_data, guard(ix, Block::make(inits), false));
  Stmt update = wrap_loops(stage, ix, inner_all, guard(ix, Block::make(updates), true));
  return wrap_loops(stage, ix, outer, Block::make({init, update}));
}

std::vector<Range> full_bounds(const Operation& op) {
  std::vector<Range> bounds;
  for (const Expr& e : op->output_shape(0)) {
    bounds.push_back(Range::from_min_extent(make_zero(e.dtype()), e));
  }
  return bounds;
}

}  // namespace

Stmt schedule_ops(const Schedule& sch, const std::vector<Operation>& args) {
  std::unordered_set<const OperationNode*> inlined;
  for (const Stage& st : sch->stages) {
    if (st->attach_type == AttachType::kInline) inlined.insert(st->op.get());
  }
  InlineReads inliner(inlined);

  std::vector<Stmt> nests;
  std::vector<Operation> realized;
  for (const Stage& st : sch->stages) {
    if (st->is_placeholder() || st->attach_type == AttachType::kInline) continue;
    const auto* compute = static_cast<const ComputeOpNode*>(st->op.get());
    std::vector<Expr> bodies;
    for (const Expr& b : compute->body) bodies.push_back(inliner.mutate(b));
    nests.push_back(make_compute_nest(*st, compute, bodies));
    if (std::find(args.begin(), args.end(), st->op) == args.end()) realized.push_back(st->op);
  }
  Stmt body = Block::make(std::move(nests));
  // Intermediates live for the whole function: simple, and correct for any consumer order.
  for (auto it = realized.rbegin(); it != realized.rend(); ++it) {
    body = Realize::make(*it, full_bounds(*it), body);
  }
  return body;
}

}  // namespace ptb
