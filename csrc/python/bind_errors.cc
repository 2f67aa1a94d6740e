// Maps the core's errors to Python exceptions. Every error the core raises is an instance of
// TVMError (a RuntimeError, as in TVM, so `pytest.raises(tvm.error.TVMError)` works) and of the
// standard class its kind names: a ValueError from a schedule primitive is a TVMValueError,
// a subclass of both. Internal errors are plain TVMErrors (they are bugs, and say so).
#include <pybind11/pybind11.h>

#include <string>

#include "python/bindings.h"
#include "support/error.h"

namespace ptb::python {

namespace {

// Created once at import, kept alive by the module's attributes.
PyObject* tvm_error = nullptr;
PyObject* kind_classes[7] = {};

PyObject* make_class(py::module_& m, const char* name, const char* doc, py::handle bases) {
  std::string qualified = std::string("pytvmbridge.error.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (cls == nullptr) throw py::error_already_set();
  m.attr(name) = py::handle(cls);
  return cls;
}

int index_of(ErrorKind kind) { return static_cast<int>(kind); }

}  // namespace

PyObject* user_error_class(ErrorKind kind) { return kind_classes[index_of(kind)]; }

bool set_python_error(const std::exception& e) {
  if (const auto* user = dynamic_cast<const UserError*>(&e)) {
    PyErr_SetString(user_error_class(user->kind()), e.what());
    return true;
  }
  if (dynamic_cast<const InternalError*>(&e) != nullptr) {
    PyErr_SetString(tvm_error, e.what());
    return true;
  }
  return false;
}

void bind_errors(py::module_& m) {
  tvm_error = make_class(
      m, "TVMError",
      "The base class of pytvmbridge's errors (TVM's name; a RuntimeError). Each error is also "
      "an instance of the standard class that describes it (ValueError, TypeError...).",
      py::handle(PyExc_RuntimeError));
  py::handle base(tvm_error);
  struct Kind {
    ErrorKind kind;
    const char* name;
    PyObject* std_class;
  };
  const Kind kinds[] = {
      {ErrorKind::kType, "TVMTypeError", PyExc_TypeError},
      {ErrorKind::kValue, "TVMValueError", PyExc_ValueError},
      {ErrorKind::kBuffer, "TVMBufferError", PyExc_BufferError},
      {ErrorKind::kIndex, "TVMIndexError", PyExc_IndexError},
      {ErrorKind::kNotImplemented, "TVMNotImplementedError", PyExc_NotImplementedError},
      {ErrorKind::kMemory, "TVMMemoryError", PyExc_MemoryError},
      {ErrorKind::kRecursion, "TVMRecursionError", PyExc_RecursionError},
  };
  for (const Kind& k : kinds) {
    std::string doc = std::string("A TVMError that is also a ") +
                      py::str(py::handle(k.std_class).attr("__name__")).cast<std::string>() + ".";
    kind_classes[index_of(k.kind)] =
        make_class(m, k.name, doc.c_str(), py::make_tuple(base, py::handle(k.std_class)));
  }

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const std::exception& e) {
      if (!set_python_error(e)) throw;
    }
  });
}

}  // namespace ptb::python
