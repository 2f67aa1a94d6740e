// cache_write and cache_read (primitives.h): new stages that copy data, with the data flow of the
// existing stages rewritten around them. Stages keep their origin operation, so tensors the user
// holds (and the build() argument list) still name the same storage.
#include <algorithm>

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/substitute.h"
#include "schedule/primitives.h"
#include "support/error.h"
#include "te/scan.h"

namespace ptb {

namespace {

const std::string& iv_name(const IterVar& iv) { return iv->var.as<Var>()->name; }

std::string checked_scope(const std::string& scope, const char* primitive) {
  if (scope.empty()) value_error(primitive, ": the scope must be a non-empty string");
  return scope;
}

// Replaces reads of one tensor by reads of another with the same indices.
class ReplaceReads : public IRMutator {
 public:
  ReplaceReads(const Tensor& from, const Tensor& to) : from_(from), to_(to) {}

 protected:
  using IRMutator::mutate_node;
  Expr mutate_node(const TensorRead* op, const Expr& self) override {
    Expr read = IRMutator::mutate_node(op, self);
    const auto* r = read.as<TensorRead>();
    if (r->op != from_.op() || r->value_index != from_.value_index()) return read;
    return TensorRead::make(to_.op(), to_.value_index(), r->indices);
  }

 private:
  Tensor from_, to_;
};

bool reads(const Operation& reader, const Tensor& t) {
  auto inputs = reader->input_tensors();
  return std::find(inputs.begin(), inputs.end(), t) != inputs.end();
}

}  // namespace

Tensor cache_write(const Schedule& sch, const Tensor& tensor, const std::string& scope) {
  checked_scope(scope, "cache_write");
  Stage st = sch->stage(tensor.op());
  if (st->is_placeholder()) {
    value_error("cache_write of ", st->describe(),
                ": it is a placeholder (an input, never written); use cache_read");
  }
  if (st->attach_type == AttachType::kInline) {
    value_error("cache_write of ", st->describe(),
                ": it is inlined, so it has no storage to cache");
  }
  if (!st->relations.empty()) {
    value_error("cache_write of ", st->describe(),
                ": its loops were already split or fused; call cache_write before scheduling "
                "the stage");
  }
  if (st->op->kind != OpKind::kCompute || as_scan(st->op)) {
    not_implemented("cache_write of ", st->describe(), ": only computes can be cached");
  }
  // Held: st->op is replaced below while its axes are still read (it may be a previous
  // cache_write's copy, owned by nothing else).
  const Operation old_op = st->op;
  const auto* c = static_cast<const ComputeOpNode*>(old_op.get());
  // The cache gets fresh data axes and takes over the reduce axes; the stage keeps its own axes
  // (so T.op.axis stays valid for scheduling the copy, as in TVM).
  std::vector<IterVar> cache_axes;
  VarMap vmap;
  for (const IterVar& iv : c->axis) {
    cache_axes.push_back(make_iter_var(iv->dom, iv_name(iv), IterKind::kDataPar));
    vmap[iv->var.get()] = cache_axes.back()->var;
  }
  std::vector<Expr> cache_bodies;
  for (const Expr& b : c->body) cache_bodies.push_back(substitute(b, vmap));
  Operation cache = make_compute(c->name + "." + scope, c->shape, cache_axes, cache_bodies);

  std::vector<Expr> axis_vars;
  for (const IterVar& iv : c->axis) axis_vars.push_back(iv->var);
  std::vector<Expr> copies;
  for (int i = 0; i < c->num_outputs(); ++i) {
    copies.push_back(TensorRead::make(cache, i, axis_vars));
  }
  sch->replace_op(st, make_compute(c->name, c->shape, c->axis, copies, c->tag, c->attrs));
  st->root_iter_vars = c->axis;
  st->all_iter_vars = c->axis;
  std::vector<IterVar> leaves;
  for (const IterVar& iv : st->leaf_iter_vars) {
    if (iv->kind == IterKind::kDataPar) leaves.push_back(iv);
  }
  st->leaf_iter_vars = leaves;
  for (const IterVar& iv : c->reduce_axis) st->iter_kind.erase(iv.get());

  Stage cache_stage = make_stage(cache);
  cache_stage->scope = scope;
  sch->insert_stage(sch->position(st), cache_stage);
  return Tensor(cache, tensor.value_index());
}

Tensor cache_read(const Schedule& sch, const Tensor& tensor, const std::string& scope,
                  const std::vector<Operation>& readers) {
  checked_scope(scope, "cache_read");
  Stage st = sch->stage(tensor.op());
  if (readers.empty()) {
    value_error("cache_read of ", st->describe(), ": give at least one reader stage");
  }
  std::vector<Stage> reader_stages;
  for (const Operation& r : readers) {
    Stage rs = sch->stage(r);
    if (rs->is_placeholder() || !reads(rs->op, tensor)) {
      value_error("cache_read of ", st->describe(), ": ", rs->describe(), " does not read tensor '",
                  tensor.name(), "'");
    }
    if (rs->op->kind != OpKind::kCompute) {
      not_implemented("cache_read of ", st->describe(), " for ", rs->describe(),
                      ": only computes and scans can read a cache");
    }
    if (std::find(reader_stages.begin(), reader_stages.end(), rs) == reader_stages.end()) {
      reader_stages.push_back(rs);
    }
  }
  std::vector<IterVar> axes;
  std::vector<Expr> vars;
  for (int d = 0; d < tensor.ndim(); ++d) {
    Expr extent = tensor.shape()[d];
    axes.push_back(make_iter_var(Range::from_min_extent(make_zero(extent.dtype()), extent),
                                 "ax" + std::to_string(d), IterKind::kDataPar));
    vars.push_back(axes.back()->var);
  }
  Operation cache = make_compute(tensor.name() + "." + scope, tensor.shape(), axes, {tensor(vars)});
  Tensor cached(cache, 0);

  ReplaceReads replace(tensor, cached);
  for (const Stage& rs : reader_stages) {
    const Operation old_op = rs->op;
    const auto* c = static_cast<const ComputeOpNode*>(old_op.get());
    std::vector<Expr> bodies;
    for (const Expr& b : c->body) bodies.push_back(replace.mutate(b));
    // Same axes and reduce axes: the reader's loops and relations stay valid.
    if (const ScanOpNode* scan = as_scan(old_op)) {
      sch->replace_op(rs, scan_with_body(*scan, std::move(bodies)));
    } else {
      sch->replace_op(rs, make_compute(c->name, c->shape, c->axis, bodies, c->tag, c->attrs));
    }
  }
  Stage cache_stage = make_stage(cache);
  cache_stage->scope = scope;
  sch->insert_stage(sch->position(st) + 1, cache_stage);
  return cached;
}

}  // namespace ptb
