// Maps the core's errors to Python exceptions: user errors to the class their kind names,
// internal errors to RuntimeError (they are bugs, and say so).
#include <pybind11/pybind11.h>

#include "python/bindings.h"
#include "support/error.h"

namespace ptb::python {

void bind_errors(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const UserError& e) {
      switch (e.kind()) {
        case ErrorKind::kType:
          PyErr_SetString(PyExc_TypeError, e.what());
          return;
        case ErrorKind::kValue:
          PyErr_SetString(PyExc_ValueError, e.what());
          return;
        case ErrorKind::kBuffer:
          PyErr_SetString(PyExc_BufferError, e.what());
          return;
        case ErrorKind::kIndex:
          PyErr_SetString(PyExc_IndexError, e.what());
          return;
        case ErrorKind::kMemory:
          PyErr_SetString(PyExc_MemoryError, e.what());
          return;
        case ErrorKind::kNotImplemented:
          PyErr_SetString(PyExc_NotImplementedError, e.what());
          return;
      }
    } catch (const InternalError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
}

}  // namespace ptb::python
