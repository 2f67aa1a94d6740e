// Scans: scan(name, init, update, state) -> [Tensor per output] (pytvmbridge/scan.py).
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "python/bindings.h"
#include "python/ir_casters.h"
#include "te/scan.h"

namespace ptb::python {

namespace {

std::vector<Tensor> tensors(const py::list& items, const std::string& what) {
  std::vector<Tensor> out;
  for (py::handle h : items) out.push_back(to_tensor(h, what.c_str()));
  return out;
}

}  // namespace

void bind_scan(py::module_& m) {
  m.def(
      "scan",
      [](const std::string& name, const py::list& init, const py::list& update,
         const py::list& state) {
        Operation op = make_scan(name, tensors(init, "init of scan '" + name + "'"),
                                 tensors(update, "update of scan '" + name + "'"),
                                 tensors(state, "state placeholder of scan '" + name + "'"));
        py::list out;
        for (int k = 0; k < op->num_outputs(); ++k) out.append(wrap_tensor(Tensor(op, k)));
        return out;
      },
      py::arg("name"), py::arg("init"), py::arg("update"), py::arg("state"),
      "A scan over the first axis; one output tensor per update.");
  m.def(
      "scan_axis",
      [](py::handle op_obj) -> py::object {
        const ScanOpNode* scan = as_scan(to_operation(op_obj, "a scan operation"));
        return scan ? wrap_iter_var(scan->scan_axis()) : py::none();
      },
      py::arg("op"), "The time axis of a scan operation (None for other operations).");
}

}  // namespace ptb::python
