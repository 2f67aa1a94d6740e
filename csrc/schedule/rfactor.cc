// rfactor (primitives.h): turns one reduce leaf of a reduction into a data axis of a new stage,
// so its iterations become independent (parallel, vectorizable); the original stage then reduces
// the new stage's output over that axis.
#include <algorithm>
#include <unordered_set>
#include <vector>

#include "ir/op.h"
#include "ir/substitute.h"
#include "ir/visitor.h"
#include "schedule/loop_index.h"
#include "schedule/primitives.h"
#include "support/error.h"

namespace ptb {

namespace {

const std::string& iv_name(const IterVar& iv) { return iv->var.as<Var>()->name; }

}  // namespace

Tensor rfactor(const Schedule& sch, const Tensor& tensor, const IterVar& axis, int factor_axis) {
  Stage st = sch->stage(tensor.op());
  if (st->is_placeholder()) value_error("rfactor of ", st->describe(), ": it is a placeholder");
  const Operation old_op = st->op;  // kept alive while c is read, after st->op is replaced
  const auto* c = static_cast<const ComputeOpNode*>(old_op.get());
  if (!c->is_reduction()) {
    value_error("rfactor of ", st->describe(), ": it is not a reduction");
  }
  st->leaf_position(axis, "rfactor");
  if (axis->kind != IterKind::kReduce) {
    value_error("rfactor of ", st->describe(), ": axis '", iv_name(axis),
                "' is a data axis; rfactor takes a reduce axis (or one split from it)");
  }
  int ndim = static_cast<int>(c->axis.size());
  const int given = factor_axis;
  if (factor_axis < 0) factor_axis += ndim + 1;
  if (factor_axis < 0 || factor_axis > ndim) {
    value_error("rfactor of ", st->describe(), ": factor_axis ", given,
                " is out of range for a result of ", ndim + 1, " dimensions (", -(ndim + 1), " to ",
                ndim, ")");
  }

  // Values of the root variables in terms of the leaves, over the full domain.
  LoopIndex ix = index_loops(*st, root_domains(*st));
  Expr factor_extent = ix.extent.at(axis.get());
  // As TVM: the reduce axes the factored axis comes from or leads to are "touched" (followed up
  // the relations to their roots, then down to every leaf of those roots). The new op reduces
  // over the untouched root reduce axes themselves (the same IterVar objects, their splits
  // dropped: a new stage has default loops), then over copies of the other touched leaves that
  // keep their variables; the factored axis keeps its variable too. So TVM's identities hold:
  // `BF.op.body[0].axis[0] == k2`, `BF.op.body[0].axis[1].var == ko.var`.
  std::unordered_set<const IterVarNode*> touched{axis.get()};
  auto has = [&](const IterVar& iv) { return iv && touched.count(iv.get()) > 0; };
  for (bool changed = true; changed;) {  // up to the roots
    changed = false;
    for (const IterVarRelation& rel : st->relations) {
      if (rel.kind == IterVarRelation::Kind::kSingleton) continue;
      bool up = rel.kind == IterVarRelation::Kind::kSplit ? has(rel.outer) || has(rel.inner)
                                                          : has(rel.fused);
      if (!up) continue;
      for (const IterVar& iv : rel.kind == IterVarRelation::Kind::kSplit
                                   ? std::vector<IterVar>{rel.parent}
                                   : std::vector<IterVar>{rel.outer, rel.inner}) {
        changed |= touched.insert(iv.get()).second;
      }
    }
  }
  for (bool changed = true; changed;) {  // down to the leaves
    changed = false;
    for (const IterVarRelation& rel : st->relations) {
      if (rel.kind == IterVarRelation::Kind::kSingleton) continue;
      bool down = rel.kind == IterVarRelation::Kind::kSplit ? has(rel.parent)
                                                            : has(rel.outer) || has(rel.inner);
      if (!down) continue;
      for (const IterVar& iv : rel.kind == IterVarRelation::Kind::kSplit
                                   ? std::vector<IterVar>{rel.outer, rel.inner}
                                   : std::vector<IterVar>{rel.fused}) {
        changed |= touched.insert(iv.get()).second;
      }
    }
  }
  auto same_var = [](const IterVar& iv, Expr extent, IterKind kind) {
    return std::make_shared<const IterVarNode>(
        IterVarNode{iv->var, Range::from_min_extent(make_zero(iv->var.dtype()), extent), kind});
  };

  std::vector<IterVar> rf_axes;
  VarMap vmap;  // root variables of T -> expressions over the new op's variables
  for (const IterVar& iv : c->axis) {
    rf_axes.push_back(make_iter_var(iv->dom, iv_name(iv), IterKind::kDataPar));
    vmap[iv->var.get()] = rf_axes.back()->var;
  }
  IterVar factor_iv = same_var(axis, factor_extent, IterKind::kDataPar);
  rf_axes.insert(rf_axes.begin() + factor_axis, factor_iv);
  std::vector<IterVar> rf_reduce;
  for (const IterVar& iv : c->reduce_axis) {
    if (has(iv)) {
      vmap[iv->var.get()] = ix.value.at(iv.get());  // over the touched leaves' variables
    } else {
      rf_reduce.push_back(iv);  // its variable stays as it is in the body
    }
  }
  std::unordered_set<const ExprNode*> dropped_leaf_vars;  // leaves of untouched axes
  for (const IterVar& leaf : st->leaf_iter_vars) {
    if (leaf->kind != IterKind::kReduce || leaf == axis) continue;
    if (has(leaf)) {
      rf_reduce.push_back(same_var(leaf, ix.extent.at(leaf.get()), IterKind::kReduce));
    } else {
      dropped_leaf_vars.insert(leaf->var.get());
    }
  }
  // Splits of touched reduce axes that do not divide: the leftover iterations contribute
  // nothing. (Guards of untouched axes' splits go with those splits.)
  std::vector<Expr> conds;
  for (size_t i = 0; i < ix.guards.size(); ++i) {
    if (!ix.guard_on_reduce[i]) continue;
    bool on_dropped = false;
    for_each_expr(ix.guards[i], [&](const Expr& e) {
      if (e.as<Var>() && dropped_leaf_vars.count(e.get())) on_dropped = true;
    });
    if (!on_dropped) conds.push_back(ix.guards[i]);
  }

  std::vector<Expr> rf_bodies;
  for (const Expr& body : c->body) {
    const auto* red = body.as<Reduce>();
    std::vector<Expr> all = conds;
    if (red->condition.defined()) all.push_back(substitute(red->condition, vmap));
    Expr source = substitute(red->source, vmap);
    Expr cond = all.empty() ? Expr() : all_of(all);
    if (!rf_reduce.empty()) {
      rf_bodies.push_back(
          Reduce::make(red->combiner, source, rf_reduce, cond, red->reducer, red->value_index));
    } else {
      rf_bodies.push_back(cond.defined() ? Select::make(cond, source, reduce_identity_of(*red))
                                         : source);
    }
  }
  std::vector<Expr> rf_shape = c->shape;
  rf_shape.insert(rf_shape.begin() + factor_axis, factor_extent);
  Operation rf = make_compute(c->name + ".rf", rf_shape, rf_axes, rf_bodies);

  // T now reduces the factored results over a new reduce axis.
  IterVar rv = make_iter_var(Range::from_min_extent(make_zero(axis->var.dtype()), factor_extent),
                             iv_name(axis) + ".v", IterKind::kReduce);
  std::vector<Expr> bodies;
  for (int i = 0; i < c->num_outputs(); ++i) {
    std::vector<Expr> idx;
    for (const IterVar& iv : c->axis) idx.push_back(iv->var);
    idx.insert(idx.begin() + factor_axis, rv->var);
    const auto* red = c->body[i].as<Reduce>();
    bodies.push_back(Reduce::make(red->combiner, TensorRead::make(rf, i, idx), {rv}, Expr(),
                                  red->reducer, red->value_index));
  }
  Operation replaced = make_compute(c->name, c->shape, c->axis, bodies, c->tag, c->attrs);
  // The stage's loops are reset: its old reduce leaves no longer exist.
  Stage fresh = make_stage(replaced);
  sch->replace_op(st, replaced);
  st->root_iter_vars = fresh->root_iter_vars;
  st->all_iter_vars = fresh->all_iter_vars;
  st->leaf_iter_vars = fresh->leaf_iter_vars;
  st->relations.clear();
  st->iter_kind.clear();

  sch->insert_stage(sch->position(st), make_stage(rf));
  return Tensor(rf, tensor.value_index());
}

}  // namespace ptb
