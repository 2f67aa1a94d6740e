// What te.gradient (pytvmbridge/autodiff/) needs from the IR: a view of an expression node's kind
// and children, and variable substitution. The differentiation itself is Python over these parts.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "ir/expr.h"
#include "ir/substitute.h"
#include "python/bindings.h"
#include "python/ir_casters.h"
#include "te/operation.h"

namespace ptb::python {

namespace {

const char* kind_name(ExprKind kind) {
  switch (kind) {
#define PTB_KIND_NAME(T) \
  case ExprKind::k##T:   \
    return #T;
    PTB_EXPR_NODES(PTB_KIND_NAME)
#undef PTB_KIND_NAME
  }
  return "?";
}

template <typename T>
py::tuple binary_parts(const Expr& e) {
  const auto* n = e.as<T>();
  return py::make_tuple(kind_name(T::kKind), wrap_expr(n->a), wrap_expr(n->b));
}

// (kind, operands...) of one node. Leaves and nodes that only exist after lowering give
// (kind,) alone; the Python side treats them as non-differentiable.
py::tuple expr_parts(py::handle obj) {
  Expr e = to_expr(obj, "expr_parts()'s expression");
  switch (e->kind) {
    case ExprKind::kAdd:
      return binary_parts<Add>(e);
    case ExprKind::kSub:
      return binary_parts<Sub>(e);
    case ExprKind::kMul:
      return binary_parts<Mul>(e);
    case ExprKind::kDiv:
      return binary_parts<Div>(e);
    case ExprKind::kMod:
      return binary_parts<Mod>(e);
    case ExprKind::kFloorDiv:
      return binary_parts<FloorDiv>(e);
    case ExprKind::kFloorMod:
      return binary_parts<FloorMod>(e);
    case ExprKind::kMin:
      return binary_parts<Min>(e);
    case ExprKind::kMax:
      return binary_parts<Max>(e);
    case ExprKind::kEQ:
      return binary_parts<EQ>(e);
    case ExprKind::kNE:
      return binary_parts<NE>(e);
    case ExprKind::kLT:
      return binary_parts<LT>(e);
    case ExprKind::kLE:
      return binary_parts<LE>(e);
    case ExprKind::kGT:
      return binary_parts<GT>(e);
    case ExprKind::kGE:
      return binary_parts<GE>(e);
    case ExprKind::kAnd:
      return binary_parts<And>(e);
    case ExprKind::kOr:
      return binary_parts<Or>(e);
    case ExprKind::kNot:
      return py::make_tuple("Not", wrap_expr(e.as<Not>()->a));
    case ExprKind::kCast:
      return py::make_tuple("Cast", wrap_expr(e.as<Cast>()->value));
    case ExprKind::kSelect: {
      const auto* s = e.as<Select>();
      return py::make_tuple("Select", wrap_expr(s->condition), wrap_expr(s->true_value),
                            wrap_expr(s->false_value));
    }
    case ExprKind::kCall: {
      const auto* c = e.as<Call>();
      py::list args;
      for (const Expr& a : c->args) args.append(wrap_expr(a));
      return py::make_tuple("Call", intrinsic_name(c->op), args);
    }
    case ExprKind::kLet: {
      const auto* l = e.as<Let>();
      return py::make_tuple("Let", wrap_expr(l->var), wrap_expr(l->value), wrap_expr(l->body));
    }
    case ExprKind::kTensorRead: {
      const auto* r = e.as<TensorRead>();
      py::list idx;
      for (const Expr& a : r->indices) idx.append(wrap_expr(a));
      return py::make_tuple("TensorRead", wrap_tensor(Tensor(r->op, r->value_index)), idx);
    }
    case ExprKind::kReduce: {
      const auto* r = e.as<Reduce>();
      py::list axes;
      for (const IterVar& iv : r->axis) axes.append(wrap_iter_var(iv));
      return py::make_tuple("Reduce", reduce_name(r->combiner), wrap_expr(r->source), axes,
                            wrap_expr(r->condition));
    }
    default:
      return py::make_tuple(kind_name(e->kind));
  }
}

}  // namespace

void bind_autodiff(py::module_& m) {
  m.def("expr_parts", &expr_parts, py::arg("expr"),
        "(kind, operands...) of an expression node, for te.gradient.");
  m.def(
      "substitute",
      [](py::handle e, const py::list& pairs) {
        VarMap map;
        for (py::handle item : pairs) {
          auto pair = item.cast<py::tuple>();
          Expr v = to_expr(pair[0], "substitute()'s variable");
          if (v.as<Var>() == nullptr) {
            throw py::type_error("substitute(): the keys must be variables, got " +
                                 py::repr(pair[0]).cast<std::string>());
          }
          map[v.get()] = to_expr(pair[1], "substitute()'s value");
        }
        return wrap_expr(substitute(to_expr(e, "substitute()'s expression"), map));
      },
      py::arg("expr"), py::arg("pairs"),
      "The expression with variables replaced: pairs is a list of (var, value).");
}

}  // namespace ptb::python
