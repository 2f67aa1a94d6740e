#include "lower/schedule_ops.h"

#include <algorithm>
#include <unordered_map>

#include "ir/op.h"
#include "ir/substitute.h"
#include "ir/visitor.h"
#include "schedule/bound.h"
#include "schedule/loop_index.h"
#include "schedule/stage_bodies.h"
#include "support/error.h"

namespace ptb {

namespace {

class NestBuilder {
 public:
  NestBuilder(const Schedule& sch, const std::vector<Operation>& args)
      : args_(args), bodies_(inline_bodies(sch)), bounds_(infer_bounds(sch, bodies_)) {
    for (const Stage& st : sch->stages) {
      if (st->attach_type == AttachType::kScope && bodies_.count(st.get())) {
        attached_[st->attach_ivar.get()].push_back(st);
      }
    }
  }

  bool is_arg(const Stage& st) const {
    return std::find(args_.begin(), args_.end(), st->origin_op) != args_.end();
  }

  // The loop nest computing `stage` over its bounds. `in_parallel`: whether an enclosing loop
  // already runs in parallel (nested parallel loops run serially: the pool is not reentrant and
  // the outer loop already occupies it).
  Stmt build(const Stage& stage, bool in_parallel) {
    const StageBound& bound = bounds_.at(stage.get());
    LoopIndex ix = index_loops(*stage, bound.root_ranges);
    VarMap vmap;
    for (const IterVar& iv : stage->root_iter_vars) vmap[iv->var.get()] = ix.value.at(iv.get());
    for (const Expr& g : bound.domain_guards) {
      ix.guards.push_back(substitute(g, vmap));
      ix.guard_on_reduce.push_back(false);
    }
    const auto& leaves = stage->leaf_iter_vars;
    std::vector<ForKind> kinds;
    std::vector<bool> inside_parallel;  // per leaf: a loop around its body runs in parallel
    for (const IterVar& iv : leaves) {
      ForKind k = stage->kind_of(iv);
      if (k == ForKind::kParallel && in_parallel) k = ForKind::kSerial;
      if (k == ForKind::kParallel) in_parallel = true;
      kinds.push_back(k);
      inside_parallel.push_back(in_parallel);
    }

    const auto* compute = static_cast<const ComputeOpNode*>(stage->op.get());
    const std::vector<Expr>& bodies = bodies_.at(stage.get());
    std::vector<Expr> out_index;
    for (const IterVar& iv : compute->axis) out_index.push_back(ix.value.at(iv.get()));
    const Operation& op = stage->origin_op;

    if (!compute->is_reduction()) {
      std::vector<Stmt> provides;
      for (size_t i = 0; i < bodies.size(); ++i) {
        provides.push_back(
            Provide::make(op, static_cast<int>(i), substitute(bodies[i], vmap), out_index));
      }
      auto guards = place_guards(*stage, ix);
      return wrap(*stage, ix, kinds, inside_parallel, 0, leaves.size(), &guards,
                  Block::make(provides));
    }

    // Reduction: the init nest sits just outside the first reduce loop and loops over the
    // data-parallel leaves that come after it; the update runs in the full nest.
    size_t first_reduce = leaves.size();
    for (size_t i = 0; i < leaves.size(); ++i) {
      if (leaves[i]->kind == IterKind::kReduce) {
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
    Stmt init = guard(ix, Block::make(inits), false);
    for (size_t i = leaves.size(); i-- > first_reduce;) {
      if (leaves[i]->kind == IterKind::kReduce) continue;
      init = loop(leaves[i], ix, kinds[i], init);
    }
    auto guards = place_guards(*stage, ix);
    Stmt update = wrap(*stage, ix, kinds, inside_parallel, first_reduce, leaves.size(), &guards,
                       Block::make(updates));
    return wrap(*stage, ix, kinds, inside_parallel, 0, first_reduce, nullptr,
                Block::make({init, update}));
  }

 private:
  static Stmt loop(const IterVar& iv, const LoopIndex& ix, ForKind kind, Stmt body) {
    Expr extent = cast(iv->var.dtype(), ix.extent.at(iv.get()));
    return For::make(iv->var, make_zero(iv->var.dtype()), extent, kind, std::move(body));
  }

  static Stmt guard(const LoopIndex& ix, Stmt body, bool include_reduce) {
    std::vector<Expr> conds;
    for (size_t i = 0; i < ix.guards.size(); ++i) {
      if (include_reduce || !ix.guard_on_reduce[i]) conds.push_back(ix.guards[i]);
    }
    if (conds.empty()) return body;
    return IfThenElse::make(all_of(conds), body);
  }

  // The guards grouped by where they are tested: entry i + 1 right inside the loop of leaf i,
  // the innermost leaf whose variable the guard uses (entry 0: above every loop). A guard then
  // runs once per iteration of the loops it depends on, and an inner vectorized loop sees only
  // the conditions that really vary along it.
  static std::vector<std::vector<Expr>> place_guards(const StageNode& stage, const LoopIndex& ix) {
    std::unordered_map<const ExprNode*, int> depth;
    for (size_t i = 0; i < stage.leaf_iter_vars.size(); ++i) {
      depth[stage.leaf_iter_vars[i]->var.get()] = static_cast<int>(i);
    }
    std::vector<std::vector<Expr>> at(stage.leaf_iter_vars.size() + 1);
    for (const Expr& g : ix.guards) {
      int d = -1;
      for_each_expr(g, [&](const Expr& e) {
        auto it = depth.find(e.get());
        if (it != depth.end()) d = std::max(d, it->second);
      });
      at[static_cast<size_t>(d + 1)].push_back(g);
    }
    return at;
  }

  static Stmt guarded(const std::vector<Expr>& conds, Stmt body) {
    return conds.empty() ? body : IfThenElse::make(all_of(conds), std::move(body));
  }

  // Loops over leaves [begin, end) around `body`, each with the stages computed at it placed
  // first in its body, followed by the rest under the leaf's guards when `guards` is given; the
  // guards of leaves outside the range go around the whole (then skipping stages computed inside
  // is fine too: they only feed the iterations the guard skips).
  Stmt wrap(const StageNode& stage, const LoopIndex& ix, const std::vector<ForKind>& kinds,
            const std::vector<bool>& inside_parallel, size_t begin, size_t end,
            const std::vector<std::vector<Expr>>* guards, Stmt body) {
    for (size_t i = end; i-- > begin;) {
      const IterVar& iv = stage.leaf_iter_vars[i];
      if (guards) body = guarded((*guards)[i + 1], body);
      body = with_attached(iv, inside_parallel[i], body);
      body = loop(iv, ix, kinds[i], body);
    }
    if (guards) {
      std::vector<Expr> outer;
      for (size_t d = 0; d <= begin; ++d)
        outer.insert(outer.end(), (*guards)[d].begin(), (*guards)[d].end());
      body = guarded(outer, body);
    }
    return body;
  }

  Stmt with_attached(const IterVar& leaf, bool in_parallel, Stmt body) {
    auto it = attached_.find(leaf.get());
    if (it == attached_.end()) return body;
    const std::vector<Stage>& producers = it->second;
    for (auto p = producers.rbegin(); p != producers.rend(); ++p) {
      const Stage& st = *p;
      body = Block::make({build(st, in_parallel), body});
      if (!is_arg(st)) {
        body = Realize::make(st->origin_op, bounds_.at(st.get()).storage, body);
      }
    }
    return body;
  }

  const std::vector<Operation>& args_;
  StageBodies bodies_;
  BoundMap bounds_;
  std::unordered_map<const IterVarNode*, std::vector<Stage>> attached_;
};

std::vector<Range> full_bounds(const Operation& op) {
  std::vector<Range> bounds;
  for (const Expr& e : op->output_shape(0)) {
    bounds.push_back(Range::from_min_extent(make_zero(e.dtype()), e));
  }
  return bounds;
}

}  // namespace

Stmt schedule_ops(const Schedule& sch, const std::vector<Operation>& args) {
  NestBuilder builder(sch, args);
  std::vector<Stmt> nests;
  std::vector<Operation> realized;
  for (const Stage& st : sch->stages) {
    if (st->is_placeholder() || st->attach_type != AttachType::kRoot) continue;
    nests.push_back(builder.build(st, false));
    if (!builder.is_arg(st)) realized.push_back(st->origin_op);
  }
  Stmt body = Block::make(std::move(nests));
  // Intermediates at root live for the whole function: simple, and correct for any consumer
  // order. Stages computed at a loop are realized inside it (NestBuilder::with_attached).
  for (auto it = realized.rbegin(); it != realized.rend(); ++it) {
    body = Realize::make(*it, full_bounds(*it), body);
  }
  return body;
}

}  // namespace ptb
