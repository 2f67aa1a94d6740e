// Schedules and stages (API.md section 2).
#include <pybind11/stl.h>

#include "python/bindings.h"
#include "python/ir_casters.h"
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

}  // namespace

void bind_schedule(py::module_& m) {
  py::class_<StageNode, Stage>(m, "Stage")
      .def_property_readonly("op", [](const StageNode& s) { return wrap_operation(s.op); })
      .def_property_readonly("leaf_iter_vars",
                             [](const StageNode& s) {
                               py::list out;
                               for (const IterVar& iv : s.leaf_iter_vars) {
                                 out.append(wrap_iter_var(iv));
                               }
                               return out;
                             })
      .def("__repr__", [](const StageNode& s) { return "<Stage " + s.op->name + ">"; });

  py::class_<ScheduleNode, Schedule>(m, "Schedule")
      .def("__getitem__",
           [](const ScheduleNode& s, py::handle key) {
             return s.stage(to_operation(key, "schedule key"));
           })
      .def_property_readonly("stages", [](const ScheduleNode& s) { return s.stages; })
      .def_property_readonly("outputs",
                             [](const ScheduleNode& s) {
                               py::list out;
                               for (const Operation& op : s.outputs) out.append(wrap_operation(op));
                               return out;
                             })
      .def("__repr__", [](const ScheduleNode& s) {
        return "<Schedule of " + std::to_string(s.stages.size()) + " stage(s)>";
      });

  m.def(
      "create_schedule",
      [](py::handle ops) { return create_schedule(to_operations(ops, "create_schedule() ops")); },
      py::arg("ops"));
}

}  // namespace ptb::python
