// User-defined commutative reducers: comm_reduce(name, lhs, rhs, result, identity, sources, axis,
// where) -> [Reduce per value]. pytvmbridge/reducer.py calls the user's combiner and identity
// functions on fresh variables and passes what they return here.
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "python/bindings.h"
#include "python/ir_casters.h"
#include "support/error.h"

namespace ptb::python {

namespace {

std::vector<Expr> exprs(const py::list& items, const std::string& what) {
  std::vector<Expr> out;
  for (py::handle h : items) out.push_back(to_expr(h, what.c_str()));
  return out;
}

// The identity and result values may be Python numbers: they take the reduced value's dtype.
std::vector<Expr> typed(const py::list& items, const std::vector<Expr>& like,
                        const std::string& what) {
  std::vector<Expr> out;
  for (size_t k = 0; k < items.size(); ++k) {
    py::handle h = items[k];
    if (k < like.size() && !py::isinstance<PyExpr>(h)) {
      out.push_back(to_const(h, like[k].dtype(), what.c_str()));
    } else {
      out.push_back(to_expr(h, what.c_str()));
    }
  }
  return out;
}

py::list comm_reduce(const std::string& name, const py::list& lhs, const py::list& rhs,
                     const py::list& result, const py::list& identity, const py::list& sources,
                     py::handle axis_obj, py::handle where) {
  std::vector<Expr> l = exprs(lhs, "a reducer argument");
  CommReducer r = make_comm_reducer(name, l, exprs(rhs, "a reducer argument"),
                                    typed(result, l, "the combiner's result of " + name),
                                    typed(identity, l, "the identity of " + name));
  std::vector<IterVar> axis;
  std::string axis_what = "axis of " + name + "()";
  std::vector<py::handle> items;
  if (py::isinstance<py::list>(axis_obj) || py::isinstance<py::tuple>(axis_obj)) {
    for (py::handle h : axis_obj) items.push_back(h);
  } else {
    items.push_back(axis_obj);
  }
  for (py::handle h : items) {
    IterVar iv = to_iter_var(h, axis_what.c_str());
    for (const IterVar& seen : axis) {
      if (seen == iv) value_error("a reduce axis appears twice in ", name, "()");
    }
    axis.push_back(iv);
  }
  Expr cond;
  if (!where.is_none()) cond = to_expr(where, ("where= of " + name + "()").c_str());
  std::vector<Expr> src = exprs(sources, "the expression of " + name + "()");
  py::list out;
  for (size_t k = 0; k < src.size(); ++k) {
    out.append(
        wrap_expr(Reduce::make(ReduceKind::kCustom, src[k], axis, cond, r, static_cast<int>(k))));
  }
  return out;
}

}  // namespace

void bind_reducer(py::module_& m) {
  m.def("comm_reduce", &comm_reduce, py::arg("name"), py::arg("lhs"), py::arg("rhs"),
        py::arg("result"), py::arg("identity"), py::arg("sources"), py::arg("axis"),
        py::arg("where") = py::none(),
        "Reductions of `sources` with a user-defined reducer; one Reduce per value.");
}

}  // namespace ptb::python
