// One function per area binds that area into the _core module; module.cc calls them in order.
// This folder is the only place that includes pybind11.
#pragma once

#include <pybind11/pybind11.h>

#include <exception>

#include "support/error.h"

namespace ptb {
class Module;
}  // namespace ptb

namespace ptb::python {

namespace py = pybind11;

void bind_errors(py::module_& m);
// Sets the Python exception a C++ exception maps to (as the pybind11 translator does), for code
// that calls the C API directly; returns false for exceptions it does not know (none set).
bool set_python_error(const std::exception& e);
// The Python class of a user error of this kind: a subclass of TVMError and of the standard class
// (TVMValueError for ErrorKind::kValue...); valid once bind_errors ran.
PyObject* user_error_class(ErrorKind kind);
void bind_runtime(py::module_& m);       // NDArray, DLPack import/export (bind_runtime.cc)
void bind_ir(py::module_& m);            // expressions, tensors, operations (bind_ir.cc)
void bind_schedule(py::module_& m);      // schedules and stages (bind_schedule.cc)
void bind_autoschedule(py::module_& m);  // auto_schedule (bind_autoschedule.cc)
void bind_build(py::module_& m);         // lower, build, Module (bind_build.cc)
void bind_reducer(py::module_& m);       // user-defined reducers (bind_reducer.cc)
void bind_scan(py::module_& m);          // scans (bind_scan.cc)
void bind_extern(py::module_& m);        // extern operations, packed functions (bind_extern.cc)
void bind_tc(py::module_& m);            // Tensor Comprehensions front end (bind_tc.cc)
void bind_bridges(py::module_& m);       // the C++ fast path of the bridges (bind_bridges.cc)
void bind_module_file(py::module_& m);   // saving and loading Modules (bind_module_file.cc)
void bind_autodiff(py::module_& m);      // expression parts for te.gradient (bind_autodiff.cc)
// `module(*arrays)`: the Caller's in-place call (bind_bridges.cc); set_module_call makes it the
// Module type's tp_call, without pybind11's dispatch.
void call_module(const Module& mod, const py::args& arrays);
void set_module_call(py::handle module_type);

}  // namespace ptb::python
