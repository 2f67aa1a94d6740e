// Extern operations and packed functions: extern_op(...) builds an ExternOpNode;
// register_packed / remove_packed / packed_names manage the runtime's registry of functions that
// compiled code calls (pytvmbridge/extern.py and packed_func.py wrap them).
//
// A Python function is called from compiled code, which runs with the GIL released: the
// wrapper takes the GIL, passes tensors as NDArray views (valid during the call only) and
// scalars as Python numbers. A Python exception escapes as py::error_already_set, which
// ptb_call_packed keeps and Module::run rethrows, so the kernel call raises it unchanged.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "python/bindings.h"
#include "python/gil.h"
#include "python/ir_casters.h"
#include "runtime/ndarray.h"
#include "runtime/packed_func.h"
#include "support/error.h"
#include "te/extern.h"

namespace ptb::python {

namespace {

// A non-owning DLPack view of a tensor the kernel lends for the duration of a call.
py::object borrowed_array(const DLTensor& t) {
  auto* managed = new DLManagedTensor();
  managed->dl_tensor = t;
  managed->manager_ctx = nullptr;
  managed->deleter = [](DLManagedTensor* self) { delete self; };
  return py::cast(NDArray::adopt(managed, "a packed function argument"));
}

PackedFunc wrap_python(py::function f) {
  // Released with the GIL held, wherever the last copy of the function goes; during the
  // interpreter's finalization it is left to the process's end (no GIL can be taken then).
  std::shared_ptr<py::function> fn(new py::function(std::move(f)), [](py::function* p) {
    if (!Py_IsInitialized() || interpreter_finalizing()) return;
    CallbackGil gil;
    delete p;
  });
  return [fn](const std::vector<PackedArg>& args) {
    CallbackGil gil;
    // Raw references, no RAII Python objects in this frame: at interpreter exit Python ends a
    // daemon thread inside the call (pthread_exit from its eval loop), and destructors run by
    // that unwind would touch Python objects without the GIL. Such a thread is parked.
    PyObject* py_args = nullptr;
    try {
      py_args = PyTuple_New(static_cast<Py_ssize_t>(args.size()));
      if (py_args == nullptr) throw py::error_already_set();
      for (size_t k = 0; k < args.size(); ++k) {
        const PackedArg& a = args[k];
        PyObject* item = nullptr;
        switch (a.kind) {
          case PackedArg::Kind::kTensor:
            item = borrowed_array(*a.tensor).release().ptr();
            break;
          case PackedArg::Kind::kInt:
            item = PyLong_FromLongLong(a.i);
            break;
          case PackedArg::Kind::kFloat:
            item = PyFloat_FromDouble(a.f);
            break;
        }
        if (item == nullptr) {
          Py_DECREF(py_args);
          throw py::error_already_set();
        }
        PyTuple_SET_ITEM(py_args, static_cast<Py_ssize_t>(k), item);
      }
      PyObject* result = PyObject_Call(fn->ptr(), py_args, nullptr);
      Py_DECREF(py_args);
      if (result == nullptr) throw py::error_already_set();
      Py_DECREF(result);
    } catch (abi::__forced_unwind&) {
      park_forever();
    }
  };
}

py::list extern_op(const std::string& name, const py::list& inputs, const py::list& shapes,
                   const py::list& dtypes, const std::string& func, const py::list& args) {
  std::vector<Tensor> in;
  for (py::handle h : inputs) in.push_back(to_tensor(h, "an input of extern"));
  std::vector<std::vector<Expr>> out_shapes;
  for (py::handle h : shapes) out_shapes.push_back(to_shape(h, "an output shape of extern"));
  std::vector<DataType> out_dtypes;
  for (py::handle h : dtypes) out_dtypes.push_back(to_dtype(h, "an output dtype of extern"));
  // Arguments come as ("in", k), ("out", k) or ("scalar", expr).
  std::vector<ExternArg> ex_args;
  for (py::handle h : args) {
    auto item = h.cast<py::tuple>();
    std::string kind = item[0].cast<std::string>();
    ExternArg a;
    if (kind == "in") {
      a.input = item[1].cast<int>();
    } else if (kind == "out") {
      a.output = item[1].cast<int>();
    } else {
      a.scalar = to_expr(item[1], "a scalar argument of call_packed");
    }
    ex_args.push_back(a);
  }
  Operation op = make_extern(name, std::move(in), std::move(out_shapes), std::move(out_dtypes),
                             func, std::move(ex_args));
  py::list out;
  for (int k = 0; k < op->num_outputs(); ++k) out.append(wrap_tensor(Tensor(op, k)));
  return out;
}

}  // namespace

void bind_extern(py::module_& m) {
  m.def("extern_op", &extern_op, py::arg("name"), py::arg("inputs"), py::arg("shapes"),
        py::arg("dtypes"), py::arg("func"), py::arg("args"),
        "An extern operation calling the packed function `func`; its output tensors.");
  m.def(
      "register_packed",
      [](const std::string& name, py::function f, bool override) {
        register_packed_func(name, wrap_python(std::move(f)), override);
      },
      py::arg("name"), py::arg("f"), py::arg("override") = false);
  m.def("remove_packed", &remove_packed_func, py::arg("name"));
  m.def("packed_names", &packed_func_names);
  // Python functions must be released while the interpreter still runs.
  py::module_::import("atexit").attr("register")(py::cpp_function([] { clear_packed_funcs(); }));
}

}  // namespace ptb::python
