// Maps the core's errors to Python exceptions: user errors to the class their kind names,
// internal errors to RuntimeError (they are bugs, and say so).
#include <pybind11/pybind11.h>

#include "python/bindings.h"
#include "support/error.h"

namespace ptb::python {

bool set_python_error(const std::exception& e) {
  if (const auto* user = dynamic_cast<const UserError*>(&e)) {
    PyObject* type = PyExc_RuntimeError;
    switch (user->kind()) {
      case ErrorKind::kType:
        type = PyExc_TypeError;
        break;
      case ErrorKind::kValue:
        type = PyExc_ValueError;
        break;
      case ErrorKind::kBuffer:
        type = PyExc_BufferError;
        break;
      case ErrorKind::kIndex:
        type = PyExc_IndexError;
        break;
      case ErrorKind::kMemory:
        type = PyExc_MemoryError;
        break;
      case ErrorKind::kNotImplemented:
        type = PyExc_NotImplementedError;
        break;
      case ErrorKind::kRecursion:
        type = PyExc_RecursionError;
        break;
    }
    PyErr_SetString(type, e.what());
    return true;
  }
  if (dynamic_cast<const InternalError*>(&e) != nullptr) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return true;
  }
  return false;
}

void bind_errors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const std::exception& e) {
      if (!set_python_error(e)) throw;
    }
  });
}

}  // namespace ptb::python
