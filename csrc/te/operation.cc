#include "te/operation.h"

#include <algorithm>

#include "ir/visitor.h"
#include "support/error.h"

namespace ptb {

namespace {

void check_shape(const std::vector<Expr>& shape, const std::string& what) {
  for (size_t d = 0; d < shape.size(); ++d) {
    const Expr& e = shape[d];
    if (!e.defined() || !e.dtype().is_integer() || !e.dtype().is_scalar()) {
      type_error("dimension ", d, " of ", what, " must be an integer or an integer var, found ",
                 e.defined() ? e.dtype().str() : "nothing");
    }
    if (const auto* imm = e.as<IntImm>(); imm && imm->value < 0) {
      value_error("dimension ", d, " of ", what, " is negative (", imm->value, ")");
    }
  }
}

std::vector<Tensor> collect_reads(const std::vector<Expr>& exprs) {
  std::vector<Tensor> out;
  for (const Expr& body : exprs) {
    for_each_expr(body, [&](const Expr& e) {
      if (const auto* r = e.as<TensorRead>()) {
        Tensor t(r->op, r->value_index);
        if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
      }
    });
  }
  return out;
}

}  // namespace

std::vector<Tensor> PlaceholderOpNode::input_tensors() const { return {}; }
std::vector<Tensor> ComputeOpNode::input_tensors() const {
  std::call_once(inputs_once_, [this] { inputs_ = collect_reads(body); });
  return inputs_;
}

Expr Tensor::operator()(std::vector<Expr> indices) const {
  return TensorRead::make(op_, value_index_, std::move(indices));
}

Tensor placeholder(std::vector<Expr> shape, DataType dtype, const std::string& name) {
  check_shape(shape, "placeholder '" + name + "'");
  if (dtype.is_void() || dtype.is_handle() || dtype.is_vector()) {
    type_error("placeholder '", name, "' cannot have dtype ", dtype.str());
  }
  return Tensor(std::make_shared<PlaceholderOpNode>(name, std::move(shape), dtype), 0);
}

Operation make_compute(const std::string& name, std::vector<Expr> shape, std::vector<IterVar> axis,
                       std::vector<Expr> body, std::string tag, OpAttrs attrs) {
  check_shape(shape, "compute '" + name + "'");
  PTB_ICHECK(axis.size() == shape.size(), "compute axes do not match its shape");
  if (body.empty()) value_error("compute '", name, "' has no body");
  std::vector<IterVar> reduce_axis;
  for (size_t i = 0; i < body.size(); ++i) {
    if (!body[i].defined()) value_error("the body of compute '", name, "' returned nothing");
    const auto* top = body[i].as<Reduce>();
    if (top) {
      if (i == 0) {
        reduce_axis = top->axis;
      } else if (top->axis != reduce_axis) {
        value_error("the outputs of compute '", name, "' reduce over different axes");
      }
    } else if (!reduce_axis.empty()) {
      value_error("compute '", name, "' mixes reduction and non-reduction outputs");
    }
    // A custom tuple reducer updates all its values together: output k is its value k.
    if (top && top->reducer) {
      if (top->reducer->lhs.size() != body.size() || top->value_index != static_cast<int>(i) ||
          body[0].as<Reduce>()->reducer != top->reducer) {
        value_error("compute '", name, "' must return every value of reducer '", top->reducer->name,
                    "' (", top->reducer->lhs.size(), ") in order, and nothing else");
      }
    } else if (top && body[0].as<Reduce>()->reducer) {
      value_error("compute '", name, "' mixes a custom reducer with ", reduce_name(top->combiner));
    }
    // A reduction may only be the whole body: `sum(x) + 1` has no defined initialisation.
    bool nested = false;
    for_each_expr(body[i], [&](const Expr& e) {
      if (e.as<Reduce>() && !e.same_as(body[i])) nested = true;
    });
    if (nested) {
      value_error("in compute '", name,
                  "' a reduction (sum/max/min/prod) must be the whole body, not part of an "
                  "expression; compute it as its own stage");
    }
  }
  return std::make_shared<ComputeOpNode>(name, std::move(axis), std::move(reduce_axis),
                                         std::move(body), std::move(shape), std::move(tag),
                                         std::move(attrs));
}

}  // namespace ptb
