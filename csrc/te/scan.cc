#include "te/scan.h"

#include <algorithm>

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/simplify.h"
#include "ir/substitute.h"
#include "support/error.h"

namespace ptb {

namespace {

// Whether two sizes are known to differ (symbolic sizes that might be equal are accepted).
bool surely_differ(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return false;
  auto ca = as_const_int(a), cb = as_const_int(b);
  if (ca && cb) return *ca != *cb;
  auto d = as_const_int(simplify(idx_sub(a, b)));
  return d && *d != 0;
}

class StateReads : public IRMutator {
 public:
  StateReads(const ScanOpNode& scan, const Operation& self) : scan_(scan), self_(self) {}

 protected:
  using IRMutator::mutate_node;
  Expr mutate_node(const TensorRead* op, const Expr& self) override {
    Expr read = IRMutator::mutate_node(op, self);
    const auto* r = read.as<TensorRead>();
    for (size_t k = 0; k < scan_.state_placeholder.size(); ++k) {
      if (r->op == scan_.state_placeholder[k].op()) {
        return TensorRead::make(self_, static_cast<int>(k), r->indices);
      }
    }
    return read;
  }

 private:
  const ScanOpNode& scan_;
  const Operation& self_;
};

}  // namespace

std::vector<Tensor> ScanOpNode::input_tensors() const {
  std::vector<Tensor> out = ComputeOpNode::input_tensors();
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const Tensor& t) {
                             for (const Tensor& s : state_placeholder) {
                               if (t.op() == s.op()) return true;
                             }
                             return false;
                           }),
            out.end());
  return out;
}

const ScanOpNode* as_scan(const Operation& op) { return dynamic_cast<const ScanOpNode*>(op.get()); }

Expr resolve_scan_state(const ScanOpNode& scan, const Operation& self, const Expr& body) {
  return StateReads(scan, self).mutate(body);
}

Operation make_scan(const std::string& name, const std::vector<Tensor>& init,
                    const std::vector<Tensor>& update, const std::vector<Tensor>& state) {
  const size_t n = update.size();
  if (n == 0) value_error("scan '", name, "' has no update");
  if (init.size() != n || state.size() != n) {
    value_error("scan '", name, "' has ", init.size(), " init(s), ", n, " update(s) and ",
                state.size(), " state placeholder(s); it needs one of each per output");
  }
  const auto* first = dynamic_cast<const ComputeOpNode*>(update[0].op().get());
  // The scan's axes are the first update's, so s[update] schedules the scan's loops. A
  // reduction update stays a stage of its own (a reduction is a whole body): the scan reads it,
  // on axes of its own, and it runs in the scan's time loop (schedule/scan_group.h).
  std::vector<IterVar> scan_axes;
  if (first) {
    for (const IterVar& iv : first->axis) {
      scan_axes.push_back(first->is_reduction()
                              ? make_iter_var(iv->dom, iv->var.as<Var>()->name, IterKind::kDataPar)
                              : iv);
    }
  }
  std::vector<Expr> bodies;
  Expr init_extent;
  for (size_t k = 0; k < n; ++k) {
    const Tensor& u = update[k];
    const Tensor& s = state[k];
    const Tensor& i = init[k];
    std::string which = n > 1 ? str_cat(" ", k) : std::string();
    if (s.op()->kind != OpKind::kPlaceholder) {
      type_error("state placeholder", which, " of scan '", name, "' must be a placeholder, found '",
                 s.name(), "'");
    }
    const auto* c = dynamic_cast<const ComputeOpNode*>(u.op().get());
    if (!c || as_scan(u.op())) {
      type_error("update", which, " of scan '", name, "' must be a compute, found '", u.name(),
                 "'");
    }
    if (u.ndim() < 1 || u.ndim() != s.ndim() || u.ndim() != i.ndim()) {
      value_error("scan '", name, "': update", which, " has ", u.ndim(), " dimension(s), state ",
                  s.ndim(), " and init ", i.ndim(), "; they must be equal and at least 1");
    }
    if (u.dtype() != s.dtype() || u.dtype() != i.dtype()) {
      type_error("scan '", name, "': update", which, " is ", u.dtype().str(), ", state ",
                 s.dtype().str(), " and init ", i.dtype().str(), "; they must be equal");
    }
    for (int d = 0; d < u.ndim(); ++d) {
      if (surely_differ(u.shape()[d], s.shape()[d]) ||
          (d > 0 && surely_differ(u.shape()[d], i.shape()[d])) ||
          surely_differ(u.shape()[d], update[0].shape()[d])) {
        value_error("scan '", name, "': dimension ", d, " of update", which,
                    " differs from its state's, its init's or the first update's");
      }
    }
    if (k == 0) {
      init_extent = i.shape()[0];
    } else if (surely_differ(i.shape()[0], init_extent)) {
      value_error("scan '", name, "': the inits cover different numbers of time steps");
    }
    // The updates are rewritten onto the scan's axes.
    std::vector<Expr> idx;
    for (const IterVar& iv : scan_axes) idx.push_back(iv->var);
    VarMap vmap;
    for (size_t d = 0; d < c->axis.size(); ++d) vmap[c->axis[d]->var.get()] = idx[d];
    Expr ubody = c->is_reduction()
                     ? TensorRead::make(u.op(), u.value_index(), idx)
                     : substitute(c->body[static_cast<size_t>(u.value_index())], vmap);
    Expr t = idx[0];
    Expr in_init = LT::make(t, cast(t.dtype(), init_extent));
    bodies.push_back(Call::make(Intrinsic::kIfThenElse, {in_init, i(idx), ubody}));
  }
  std::vector<Operation> ops;
  for (const Tensor& u : update) ops.push_back(u.op());
  return std::make_shared<ScanOpNode>(name, std::move(scan_axes), std::move(bodies), first->shape,
                                      init_extent, state, std::move(ops));
}

Operation scan_with_body(const ScanOpNode& scan, std::vector<Expr> body) {
  PTB_ICHECK(body.size() == scan.body.size(), "one body per scan output");
  return std::make_shared<ScanOpNode>(scan.name, scan.axis, std::move(body), scan.shape,
                                      scan.init_extent, scan.state_placeholder, scan.update_ops);
}

}  // namespace ptb
