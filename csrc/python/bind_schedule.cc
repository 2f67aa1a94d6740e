// Schedules and stages (API.md section 2).
#include <pybind11/stl.h>

#include "python/bindings.h"
#include "python/ir_casters.h"
#include "schedule/primitives.h"
#include "schedule/schedule.h"
#include "support/error.h"

namespace ptb::python {

namespace {

std::vector<Operation> to_operations(py::handle obj, const char* what) {
  std::vector<Operation> ops;
  if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
    for (py::handle item : obj) ops.push_back(to_operation(item, what));
  } else {
    ops.push_back(to_operation(obj, what));
  }
  return ops;
}

// Axes given as separate arguments or as one list/tuple: s[C].reorder(i, j) or reorder([i, j]).
std::vector<IterVar> to_axes(const py::args& args, const char* what) {
  std::vector<IterVar> out;
  py::handle items = args;
  if (args.size() == 1 &&
      (py::isinstance<py::list>(args[0]) || py::isinstance<py::tuple>(args[0]))) {
    items = args[0];
  }
  for (py::handle item : items) out.push_back(to_iter_var(item, what));
  return out;
}

Expr optional_expr(py::handle obj, const char* what) {
  return obj.is_none() ? Expr() : to_expr(obj, what);
}

py::list wrap_iter_vars(const std::vector<IterVar>& ivs) {
  py::list out;
  for (const IterVar& iv : ivs) out.append(wrap_iter_var(iv));
  return out;
}

Stage to_stage(py::handle obj, const char* what) {
  if (!py::isinstance<StageNode>(obj)) {
    type_error(what, " must be a Stage (such as s[C]), found ",
               py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
  }
  return obj.cast<Stage>();
}

const char* attach_name(AttachType t) {
  switch (t) {
    case AttachType::kRoot:
      return "root";
    case AttachType::kInline:
      return "inline";
    case AttachType::kScope:
      return "scope";
  }
  return "?";
}

// ("split", parent, outer, inner, factor, nparts) with one of factor/nparts None, or
// ("fuse", outer, inner, fused), or ("singleton", iv).
py::tuple relation(const IterVarRelation& r) {
  if (r.kind == IterVarRelation::Kind::kSingleton) {
    return py::make_tuple("singleton", wrap_iter_var(r.fused));
  }
  if (r.kind == IterVarRelation::Kind::kSplit) {
    return py::make_tuple("split", wrap_iter_var(r.parent), wrap_iter_var(r.outer),
                          wrap_iter_var(r.inner), wrap_expr(r.factor), wrap_expr(r.nparts));
  }
  return py::make_tuple("fuse", wrap_iter_var(r.outer), wrap_iter_var(r.inner),
                        wrap_iter_var(r.fused));
}

// A memory scope ("local", "shared", "global"): a string (every scope is ordinary memory on a
// CPU), else a TypeError naming the primitive.
std::string scope_name(py::handle scope, const char* what) {
  if (!py::isinstance<py::str>(scope)) {
    type_error(what, ": scope must be a string such as 'local', found ",
               py::str(py::type::handle_of(scope).attr("__name__")).cast<std::string>());
  }
  return scope.cast<std::string>();
}

}  // namespace

void bind_schedule(py::module_& m) {
  py::class_<StageNode, Stage>(m, "Stage")
      .def_property_readonly("op", [](const StageNode& s) { return wrap_operation(s.op); })
      .def_property_readonly("origin_op",
                             [](const StageNode& s) { return wrap_operation(s.origin_op); })
      .def_property_readonly("scope", [](const StageNode& s) { return s.scope; })
      .def_property_readonly("attach_type",
                             [](const StageNode& s) { return attach_name(s.attach_type); })
      .def_property_readonly("leaf_iter_vars",
                             [](const StageNode& s) { return wrap_iter_vars(s.leaf_iter_vars); })
      .def_property_readonly("all_iter_vars",
                             [](const StageNode& s) { return wrap_iter_vars(s.all_iter_vars); })
      // What pytvmbridge.display draws: how the loops were derived, annotated and attached.
      .def_property_readonly("relations",
                             [](const StageNode& s) {
                               py::list out;
                               for (const IterVarRelation& r : s.relations) out.append(relation(r));
                               return out;
                             })
      .def(
          "iter_var_kind",
          [](const StageNode& s, py::handle iv) {
            return for_kind_name(s.kind_of(to_iter_var(iv, "iter_var_kind() axis")));
          },
          py::arg("iv"), "'for', 'parallel', 'vectorized' or 'unrolled'.")
      .def_property_readonly("attach_stage",
                             [](const StageNode& s) -> py::object {
                               if (!s.attach_stage) return py::none();
                               return py::cast(s.attach_stage);
                             })
      .def_property_readonly("attach_ivar",
                             [](const StageNode& s) -> py::object {
                               if (!s.attach_ivar) return py::none();
                               return wrap_iter_var(s.attach_ivar);
                             })
      .def(
          "split",
          [](const Stage& s, py::handle parent, py::handle factor, py::handle nparts) {
            auto [outer, inner] = split(s, to_iter_var(parent, "split() axis"),
                                        optional_expr(factor, "split() factor"),
                                        optional_expr(nparts, "split() nparts"));
            return py::make_tuple(wrap_iter_var(outer), wrap_iter_var(inner));
          },
          py::arg("parent"), py::arg("factor") = py::none(), py::arg("nparts") = py::none())
      .def(
          "tile",
          [](const Stage& s, py::handle x, py::handle y, py::handle xf, py::handle yf) {
            auto r = tile(s, to_iter_var(x, "tile() x axis"), to_iter_var(y, "tile() y axis"),
                          to_expr(xf, "tile() x_factor"), to_expr(yf, "tile() y_factor"));
            return py::make_tuple(wrap_iter_var(r[0]), wrap_iter_var(r[1]), wrap_iter_var(r[2]),
                                  wrap_iter_var(r[3]));
          },
          py::arg("x_parent"), py::arg("y_parent"), py::arg("x_factor"), py::arg("y_factor"))
      .def("fuse",
           [](const Stage& s, const py::args& args) {
             return wrap_iter_var(fuse(s, to_axes(args, "fuse() axis")));
           })
      .def("reorder", [](const Stage& s,
                         const py::args& args) { reorder(s, to_axes(args, "reorder() axis")); })
      .def(
          "vectorize",
          [](const Stage& s, py::handle var) {
            vectorize(s, to_iter_var(var, "vectorize() axis"));
          },
          py::arg("var"))
      .def(
          "parallel",
          [](const Stage& s, py::handle var) { parallel(s, to_iter_var(var, "parallel() axis")); },
          py::arg("var"))
      .def(
          "unroll",
          [](const Stage& s, py::handle var) { unroll(s, to_iter_var(var, "unroll() axis")); },
          py::arg("var"))
      .def(
          "prefetch",
          [](const Stage& s, py::handle tensor, py::handle var, int64_t offset, int cache_level) {
            prefetch(s, to_tensor(tensor, "prefetch() tensor"), to_iter_var(var, "prefetch() axis"),
                     offset, cache_level);
          },
          py::arg("tensor"), py::arg("var"), py::arg("offset") = 1, py::arg("cache_level") = 2,
          "TVM's prefetch: on each iteration of `var`, the region of `tensor` that iteration + "
          "`offset` reads is fetched into cache ahead of its use (a hint: values never change). "
          "`cache_level` 2 (default) fetches into L2, for a stream from memory; 1 into L1, for "
          "the next steps of an inner loop reading from L2.")
      .def(
          "compute_at",
          [](const Stage& s, py::handle parent, py::handle scope) {
            compute_at(s, to_stage(parent, "compute_at() stage"),
                       to_iter_var(scope, "compute_at() axis"));
          },
          py::arg("parent"), py::arg("scope"))
      .def("compute_inline", [](const Stage& s) { compute_inline(s); })
      .def("compute_root", [](const Stage& s) { compute_root(s); })
      .def("__eq__",
           [](const Stage& a, py::handle b) {
             return py::isinstance<StageNode>(b) && b.cast<Stage>() == a;
           })
      .def("__hash__", [](const Stage& s) { return std::hash<const StageNode*>()(s.get()); })
      .def("__repr__", [](const StageNode& s) { return "<Stage " + s.op->name + ">"; });

  py::class_<ScheduleNode, Schedule>(m, "Schedule")
      .def("__getitem__", [](const ScheduleNode& s,
                             py::handle key) { return s.stage(to_operation(key, "schedule key")); })
      .def_property_readonly("stages", [](const ScheduleNode& s) { return s.stages; })
      .def_property_readonly("outputs",
                             [](const ScheduleNode& s) {
                               py::list out;
                               for (const Operation& op : s.outputs) out.append(wrap_operation(op));
                               return out;
                             })
      .def(
          "cache_write",
          [](const Schedule& s, py::handle tensor, py::handle scope) {
            return wrap_tensor(cache_write(s, to_tensor(tensor, "cache_write() tensor"),
                                           scope_name(scope, "cache_write()")));
          },
          py::arg("tensor"), py::arg("scope"))
      .def(
          "cache_read",
          [](const Schedule& s, py::handle tensor, py::handle scope, py::handle readers) {
            return wrap_tensor(cache_read(s, to_tensor(tensor, "cache_read() tensor"),
                                          scope_name(scope, "cache_read()"),
                                          to_operations(readers, "cache_read() reader")));
          },
          py::arg("tensor"), py::arg("scope"), py::arg("readers"))
      .def(
          "rfactor",
          [](const Schedule& s, py::handle tensor, py::handle axis, py::handle factor_axis) {
            if (!py::isinstance<py::int_>(factor_axis) || py::isinstance<py::bool_>(factor_axis)) {
              type_error("rfactor(): factor_axis must be an int, got ",
                         std::string(py::str(py::type::of(factor_axis).attr("__name__"))));
            }
            auto position = factor_axis.cast<int64_t>();
            if (position < -(1 << 20) || position > (1 << 20)) {
              value_error("rfactor(): factor_axis ", position, " is out of range");
            }
            return wrap_tensor(rfactor(s, to_tensor(tensor, "rfactor() tensor"),
                                       to_iter_var(axis, "rfactor() axis"),
                                       static_cast<int>(position)));
          },
          py::arg("tensor"), py::arg("axis"), py::arg("factor_axis") = 0)
      .def("__repr__", [](const ScheduleNode& s) {
        return "<Schedule of " + std::to_string(s.stages.size()) + " stage(s)>";
      });

  m.def(
      "create_schedule",
      [](py::handle ops) { return create_schedule(to_operations(ops, "create_schedule() ops")); },
      py::arg("ops"));
}

}  // namespace ptb::python
