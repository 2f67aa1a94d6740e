#include "lower/schedule_ops.h"

#include <algorithm>
#include <functional>
#include <unordered_map>

#include "ir/op.h"
#include "ir/substitute.h"
#include "ir/visitor.h"
#include "schedule/bound.h"
#include "schedule/loop_index.h"
#include "schedule/primitives.h"
#include "schedule/scan_group.h"
#include "schedule/stage_bodies.h"
#include "support/error.h"
#include "te/extern.h"
#include "te/scan.h"

namespace ptb {

namespace {

class NestBuilder {
 public:
  NestBuilder(const Schedule& sch, const std::vector<Operation>& args)
      : args_(args), bodies_(inline_bodies(sch)), bounds_(infer_bounds(sch, bodies_)) {
    for (const Stage& st : sch->stages) {
      if (st->attach_type == AttachType::kScope && bounds_.count(st.get())) {
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
    if (const ExternOpNode* ext = as_extern(stage->op)) return extern_call(*ext, stage->origin_op);
    if (const ScanOpNode* scan = as_scan(stage->origin_op)) check_scan_loops(*stage, *scan);
    Nest n = make_nest(stage, in_parallel);
    const auto* compute = static_cast<const ComputeOpNode*>(stage->op.get());
    const std::vector<Expr>& bodies = bodies_.at(stage.get());
    VarMap vmap;
    for (const IterVar& iv : stage->root_iter_vars) vmap[iv->var.get()] = n.ix.value.at(iv.get());
    std::vector<Expr> out_index;
    for (const IterVar& iv : compute->axis) out_index.push_back(n.ix.value.at(iv.get()));
    const Operation& op = stage->origin_op;
    const size_t num_leaves = stage->leaf_iter_vars.size();
    Dropped none(n.guards.size(), false);

    if (!compute->is_reduction()) {
      std::vector<Stmt> provides;
      for (size_t i = 0; i < bodies.size(); ++i) {
        provides.push_back(
            Provide::make(op, static_cast<int>(i), substitute(bodies[i], vmap), out_index));
      }
      Stmt body = Block::make(provides);
      return segment(n, 0, num_leaves, none, [&](const Dropped&) { return body; });
    }

    // Reduction: the init nest sits just outside the first reduce loop and loops over the
    // data-parallel leaves that come after it; the update runs in the full nest.
    const auto& leaves = stage->leaf_iter_vars;
    size_t first_reduce = num_leaves;
    for (size_t i = 0; i < num_leaves; ++i) {
      if (leaves[i]->kind == IterKind::kReduce) {
        first_reduce = i;
        break;
      }
    }
    std::vector<Stmt> inits, updates;
    if (bodies[0].as<Reduce>()->reducer)
      updates.push_back(custom_update(op, bodies, vmap, out_index));
    for (size_t i = 0; i < bodies.size(); ++i) {
      const auto* red = bodies[i].as<Reduce>();
      PTB_ICHECK(red, "reduction body expected");
      int vi = static_cast<int>(i);
      inits.push_back(Provide::make(op, vi, reduce_identity_of(*red), out_index));
      if (red->reducer) continue;
      Expr acc = TensorRead::make(op, vi, out_index);
      Stmt update = Provide::make(
          op, vi, reduce_combine(red->combiner, acc, substitute(red->source, vmap)), out_index);
      if (red->condition.defined()) {
        update = IfThenElse::make(substitute(red->condition, vmap), update);
      }
      updates.push_back(update);
    }
    Stmt init_body = Block::make(inits), update_body = Block::make(updates);
    auto inner = [&](const Dropped& dropped) {
      // The init is cheap (one pass over the outputs): its data guards stay innermost.
      std::vector<Expr> conds;
      for (size_t g = 0; g < n.guards.size(); ++g) {
        if (!dropped[g] && !n.guards[g].on_reduce) conds.push_back(n.guards[g].cond);
      }
      Stmt init = guarded(conds, init_body);
      for (size_t i = num_leaves; i-- > first_reduce;) {
        if (leaves[i]->kind != IterKind::kReduce) init = loop(n, i, init);
      }
      Stmt update = segment(n, first_reduce, num_leaves, dropped,
                            [&](const Dropped&) { return update_body; });
      return Block::make({init, update});
    };
    return loops(n, 0, first_reduce, false, none, inner);
  }

 private:
  // An extern stage is one call of its packed function with its tensors and scalars.
  static Stmt extern_call(const ExternOpNode& ext, const Operation& self) {
    std::vector<PackedCallArg> args;
    for (const ExternArg& a : ext.args) {
      PackedCallArg p;
      if (a.input >= 0) {
        const Tensor& t = ext.inputs[static_cast<size_t>(a.input)];
        p.op = t.op();
        p.value_index = t.value_index();
      } else if (a.output >= 0) {
        p.op = self;
        p.value_index = a.output;
      } else {
        p.scalar = a.scalar;
      }
      args.push_back(p);
    }
    return CallPacked::make(ext.func, std::move(args));
  }

  // A scan's time steps depend on earlier ones: its time axis must stay the outermost loop,
  // whole and serial (the other axes may be scheduled freely).
  static void check_scan_loops(const StageNode& stage, const ScanOpNode& scan) {
    const auto& leaves = stage.leaf_iter_vars;
    if (leaves.empty() || leaves[0] != scan.scan_axis() ||
        stage.kind_of(leaves[0]) != ForKind::kSerial) {
      value_error(stage.describe(), ": the time axis '", scan.scan_axis()->var.as<Var>()->name,
                  "' of a scan must stay its outermost loop, unsplit and serial");
    }
  }

  // One update of a custom (tuple) reducer: every new value is computed from all the old
  // accumulators before any is stored (argmax's index depends on the old value).
  static Stmt custom_update(const Operation& op, const std::vector<Expr>& bodies,
                            const VarMap& vmap, const std::vector<Expr>& out_index) {
    const auto* first = bodies[0].as<Reduce>();
    const CommReducerNode& r = *first->reducer;
    VarMap args;
    for (size_t k = 0; k < bodies.size(); ++k) {
      const auto* red = bodies[k].as<Reduce>();
      args[r.lhs[k].get()] = TensorRead::make(op, static_cast<int>(k), out_index);
      args[r.rhs[k].get()] = substitute(red->source, vmap);
    }
    std::vector<Expr> fresh;
    std::vector<Stmt> stores;
    for (size_t k = 0; k < bodies.size(); ++k) {
      fresh.push_back(Var::make(r.result[k].dtype(), op->name + ".v" + std::to_string(k)));
      stores.push_back(Provide::make(op, static_cast<int>(k), fresh[k], out_index));
    }
    Stmt update = Block::make(stores);
    for (size_t k = bodies.size(); k-- > 0;) {
      update = LetStmt::make(fresh[k], substitute(r.result[k], args), update);
    }
    // TVM requires one condition for all values of a tuple reduction; the first one's is used.
    if (first->condition.defined()) {
      update = IfThenElse::make(substitute(first->condition, vmap), update);
    }
    return update;
  }

  struct Guard {
    Expr cond;
    int depth;  // the innermost leaf whose variable the condition uses (-1: none)
    bool on_reduce;
  };
  using Dropped = std::vector<bool>;  // per guard: not needed in this part of the nest
  using Inner = std::function<Stmt(const Dropped&)>;

  // What building one stage's nest needs, per leaf and per guard.
  struct Nest {
    const StageNode* stage;
    LoopIndex ix;
    std::vector<ForKind> kinds;
    std::vector<bool> inside_parallel;  // a loop around the leaf's body runs in parallel
    std::vector<Guard> guards;
    // Loop partitioning: the guard a leaf's first iterations can drop (-1: none), and how many.
    std::vector<int> partition;
    std::vector<Expr> full_tiles;
  };

  // Non-dividing splits guard the innermost body, which costs a test per iteration and keeps
  // LLVM from holding accumulators in registers. The split's outer loop is cut in two instead:
  // whole tiles without the guard, then the last tile with it. Each cut doubles the code under
  // it, so a few suffice (the row and column tiles of a 2-D tiling).
  static constexpr int kMaxPartitions = 2;

  Nest make_nest(const Stage& stage, bool in_parallel) {
    const StageBound& bound = bounds_.at(stage.get());
    Nest n{stage.get(), index_loops(*stage, bound.root_ranges), {}, {}, {}, {}, {}};
    VarMap vmap;
    for (const IterVar& iv : stage->root_iter_vars) vmap[iv->var.get()] = n.ix.value.at(iv.get());
    for (const Expr& g : bound.domain_guards) {
      n.ix.guards.push_back(substitute(g, vmap));
      n.ix.guard_on_reduce.push_back(false);
      n.ix.guard_outer.push_back(nullptr);
      n.ix.guard_full_tiles.push_back(Expr());
    }
    const auto& leaves = stage->leaf_iter_vars;
    std::unordered_map<const ExprNode*, int> depth;
    std::unordered_map<const IterVarNode*, int> position;
    for (size_t i = 0; i < leaves.size(); ++i) {
      ForKind k = stage->kind_of(leaves[i]);
      if (k == ForKind::kParallel && in_parallel) k = ForKind::kSerial;
      if (k == ForKind::kParallel) in_parallel = true;
      n.kinds.push_back(k);
      n.inside_parallel.push_back(in_parallel);
      depth[leaves[i]->var.get()] = static_cast<int>(i);
      position[leaves[i].get()] = static_cast<int>(i);
    }
    n.partition.assign(leaves.size(), -1);
    n.full_tiles.resize(leaves.size());
    int partitions = 0;
    for (size_t g = 0; g < n.ix.guards.size(); ++g) {
      int d = -1;
      for_each_expr(n.ix.guards[g], [&](const Expr& e) {
        auto it = depth.find(e.get());
        if (it != depth.end()) d = std::max(d, it->second);
      });
      n.guards.push_back({n.ix.guards[g], d, n.ix.guard_on_reduce[g]});
      auto outer = position.find(n.ix.guard_outer[g]);
      if (outer == position.end() || partitions == kMaxPartitions) continue;
      const Expr& full = n.ix.guard_full_tiles[g];
      size_t leaf = static_cast<size_t>(outer->second);
      if (n.partition[leaf] >= 0 || is_const_int(full, 0)) continue;
      n.partition[leaf] = static_cast<int>(g);
      n.full_tiles[leaf] = cast(leaves[leaf]->var.dtype(), full);
      ++partitions;
    }
    return n;
  }

  Stmt loop(const Nest& n, size_t i, Stmt body) const {
    const IterVar& iv = n.stage->leaf_iter_vars[i];
    Expr extent = cast(iv->var.dtype(), n.ix.extent.at(iv.get()));
    return For::make(iv->var, make_zero(iv->var.dtype()), extent, n.kinds[i], std::move(body));
  }

  static Stmt guarded(const std::vector<Expr>& conds, Stmt body) {
    return conds.empty() ? body : IfThenElse::make(all_of(conds), std::move(body));
  }

  // The guards tested right inside the loop of leaf `depth` (-1: above every loop): each guard
  // goes to the innermost leaf whose variable it uses, so it runs once per iteration of the loops
  // it depends on, and an inner vectorized loop sees only the conditions varying along it.
  static std::vector<Expr> guards_at(const Nest& n, int lo, int hi, const Dropped& dropped) {
    std::vector<Expr> out;
    for (size_t g = 0; g < n.guards.size(); ++g) {
      if (!dropped[g] && n.guards[g].depth >= lo && n.guards[g].depth <= hi) {
        out.push_back(n.guards[g].cond);
      }
    }
    return out;
  }

  // Loops [begin, end) with their guards, the guards of outer leaves around the whole (skipping
  // stages computed inside is then fine too: they only feed the iterations the guard skips).
  Stmt segment(const Nest& n, size_t begin, size_t end, const Dropped& dropped,
               const Inner& inner) {
    Stmt body = loops(n, begin, end, true, dropped, inner);
    return guarded(guards_at(n, -1, static_cast<int>(begin) - 1, dropped), body);
  }

  // Loops [i, end) around inner(), each with the stages computed at it placed first in its body
  // and, in a guarded segment, its guards around the rest.
  Stmt loops(const Nest& n, size_t i, size_t end, bool with_guards, const Dropped& dropped,
             const Inner& inner) {
    if (i == end) return inner(dropped);
    const IterVar& iv = n.stage->leaf_iter_vars[i];
    auto body = [&](const Dropped& d) {
      Stmt b = loops(n, i + 1, end, with_guards, d, inner);
      if (with_guards) b = guarded(guards_at(n, static_cast<int>(i), static_cast<int>(i), d), b);
      return with_prefetches(*n.stage, iv, with_attached(iv, n.inside_parallel[i], b));
    };
    int g = n.partition[i];
    if (g < 0 || dropped[static_cast<size_t>(g)]) return loop(n, i, body(dropped));
    Dropped whole = dropped;
    whole[static_cast<size_t>(g)] = true;
    Expr full = n.full_tiles[i];
    Expr extent = cast(iv->var.dtype(), n.ix.extent.at(iv.get()));
    return Block::make(
        {For::make(iv->var, make_zero(full.dtype()), full, n.kinds[i], body(whole)),
         For::make(iv->var, full, idx_sub(extent, full), n.kinds[i], body(dropped))});
  }

  // A stage computed in a scan's loops runs from the first step the update computes: the steps
  // before come from the init (the scan's body does not read the stage there), and the stage's
  // reads of step t - 1 would be out of bounds. Stages computed inside it are covered too.
  static Stmt scan_step_guard(const Stage& st, Stmt produce) {
    if (st->attach_type != AttachType::kScope) return produce;
    const ScanOpNode* scan = as_scan(st->attach_stage->origin_op);
    if (!scan) return produce;
    const Expr& t = scan->scan_axis()->var;
    return IfThenElse::make(GE::make(t, cast(t.dtype(), scan->init_extent)), std::move(produce));
  }

  // The stage's prefetch() requests on `leaf`, first in the loop's body: prefetch(T[0...], d, c)
  // stands for "the region of T that iteration + d reads, into cache level c", which
  // lower/prefetch_streams.cc resolves once the loop nest is flat and its strides known.
  static Stmt with_prefetches(const StageNode& stage, const IterVar& leaf, Stmt body) {
    std::vector<Stmt> stmts;
    auto sch = stage.schedule.lock();
    for (const StageNode::Prefetch& p : stage.prefetches) {
      if (p.axis != leaf) continue;
      // A tensor moved inside some loop after the request (compute_at) has no buffer here,
      // unless that loop is around this one.
      if (sch) {
        Stage producer = sch->stage(p.tensor.op());
        if (producer->attach_type == AttachType::kScope &&
            !computed_around(producer, sch->stage(stage.op), leaf)) {
          continue;
        }
      }
      std::vector<Expr> origin(p.tensor.ndim(), make_zero(DataType::Int(32)));
      Expr read = TensorRead::make(p.tensor.op(), p.tensor.value_index(), std::move(origin));
      Expr offset = make_const(DataType::Int(32), p.offset);
      Expr level = make_const(DataType::Int(32), int64_t{p.cache_level});
      stmts.push_back(Evaluate::make(Call::make(Intrinsic::kPrefetch, {read, offset, level})));
    }
    if (stmts.empty()) return body;
    stmts.push_back(std::move(body));
    return Block::make(std::move(stmts));
  }

  Stmt with_attached(const IterVar& leaf, bool in_parallel, Stmt body) {
    auto it = attached_.find(leaf.get());
    if (it == attached_.end()) return body;
    const std::vector<Stage>& producers = it->second;
    for (auto p = producers.rbegin(); p != producers.rend(); ++p) {
      const Stage& st = *p;
      body = Block::make({scan_step_guard(st, build(st, in_parallel)), body});
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
