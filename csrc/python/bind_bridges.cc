// The framework bridges' fast path (API.md section 5): _core.FastBridge, a vectorcall object
// that runs the all-arrays form of a bridge (to_pytorch(module)(x, y, z)) without any Python
// frame in between.
//
// A call checks each output by the rule of its type, found in a dict shared with
// pytvmbridge/bridges.py (type -> None: nothing to check; a callable (array, what) that raises
// when the framework forbids the write, e.g. PyTorch's requires_grad; anything else: the array
// needs its framework's conversion), imports every array without building any error text, and
// runs the kernel with the GIL released. Whatever is not that common case (another number of
// arrays, a type not yet in the dict, an array that needs its framework's conversion) is handed
// to the Python bridge, `fallback`. Errors while importing or running are raised from here,
// naming the argument; nothing is retried, and nothing is written before the kernel runs.
#include "python/bindings.h"  // first: Python.h before structmember.h

#include <structmember.h>

#include <cstddef>
#include <exception>
#include <string>

#include "python/dlpack_import.h"
#include "runtime/module.h"

namespace ptb::python {

namespace {

constexpr Py_ssize_t kMaxArgs = 16;

struct FastBridge {
  PyObject ob_base;
  vectorcallfunc vectorcall;
  PyObject* dict;      // instance attributes (__name__, __doc__, framework...)
  PyObject* module;    // the _core.Module, kept alive while `mod` is used
  PyObject* checks;    // dict: type -> None | callable(array, what) | other (convert first);
                       // or None: outputs go as they are (they were allocated by the caller)
  PyObject* fallback;  // the Python bridge: callable(*arrays)
  PyObject* whats;     // tuple of str: how each argument is named in errors
  const Module* mod;
  Py_ssize_t n_all;
  Py_ssize_t n_outputs;
  Py_ssize_t outputs[kMaxArgs];
};

PyObject* call_fallback(FastBridge* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

// Imports and runs; false with the Python error set (naming the argument) on failure. Nothing
// is retried: a producer is asked for its array once, and a capsule can be consumed once.
bool try_run(FastBridge* self, PyObject* const* args, Py_ssize_t n) {
  NDArray arrays[kMaxArgs];
  const DLTensor* tensors[kMaxArgs];
  bool read_only[kMaxArgs];
  try {
    for (Py_ssize_t i = 0; i < n; ++i) {
      arrays[i] = import_array(pybind11::handle(args[i]), ArgName(*self->mod, i));
      tensors[i] = &arrays[i].dl_tensor();
      read_only[i] = arrays[i].read_only();
    }
    pybind11::gil_scoped_release release;
    self->mod->run(tensors, read_only, static_cast<size_t>(n));
  } catch (pybind11::error_already_set& e) {
    e.restore();
    return false;
  } catch (const std::exception& e) {
    if (!set_python_error(e)) PyErr_SetString(PyExc_RuntimeError, e.what());
    return false;
  }
  return true;  // the imported arrays are released here, with the GIL held
}

PyObject* fast_bridge_call(PyObject* obj, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<FastBridge*>(obj);
  if (self->mod == nullptr) {
    PyErr_SetString(PyExc_ReferenceError, "this FastBridge was cleared by the garbage collector");
    return nullptr;
  }
  const Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  if (kwnames != nullptr || n != self->n_all) return call_fallback(self, args, nargsf, kwnames);
  const Py_ssize_t n_checked = self->checks == Py_None ? 0 : self->n_outputs;
  for (Py_ssize_t k = 0; k < n_checked; ++k) {
    const Py_ssize_t i = self->outputs[k];
    PyObject* check =
        PyDict_GetItemWithError(self->checks, reinterpret_cast<PyObject*>(Py_TYPE(args[i])));
    if (check == nullptr) {
      if (PyErr_Occurred()) return nullptr;
      return call_fallback(self, args, nargsf, kwnames);  // a new type: Python resolves it
    }
    if (check == Py_None) continue;
    if (!PyCallable_Check(check)) return call_fallback(self, args, nargsf, kwnames);
    Py_INCREF(check);  // the dict may change while it runs
    PyObject* check_args[2] = {args[i], PyTuple_GET_ITEM(self->whats, i)};
    PyObject* result = PyObject_Vectorcall(check, check_args, 2, nullptr);
    Py_DECREF(check);
    if (result == nullptr) return nullptr;  // the framework's own error: nothing written
    Py_DECREF(result);
  }
  if (!try_run(self, args, n)) return nullptr;
  Py_RETURN_NONE;
}

int fast_bridge_traverse(PyObject* obj, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<FastBridge*>(obj);
  Py_VISIT(Py_TYPE(obj));
  Py_VISIT(self->dict);
  Py_VISIT(self->module);
  Py_VISIT(self->checks);
  Py_VISIT(self->fallback);
  Py_VISIT(self->whats);
  return 0;
}

int fast_bridge_clear(PyObject* obj) {
  auto* self = reinterpret_cast<FastBridge*>(obj);
  Py_CLEAR(self->dict);
  Py_CLEAR(self->module);
  Py_CLEAR(self->checks);
  Py_CLEAR(self->fallback);
  Py_CLEAR(self->whats);
  self->mod = nullptr;  // a cleared bridge refuses calls
  return 0;
}

void fast_bridge_dealloc(PyObject* obj) {
  PyTypeObject* type = Py_TYPE(obj);
  PyObject_GC_UnTrack(obj);
  fast_bridge_clear(obj);
  type->tp_free(obj);
  Py_DECREF(type);
}

PyObject* fast_bridge_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* kKeywords[] = {"module", "checks", "fallback", "whats", nullptr};
  PyObject *module, *checks, *fallback, *whats;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOO!:FastBridge", const_cast<char**>(kKeywords),
                                   &module, &checks, &fallback, &PyTuple_Type, &whats)) {
    return nullptr;
  }
  if (checks != Py_None && !PyDict_Check(checks)) {
    PyErr_SetString(PyExc_TypeError, "FastBridge: checks must be a dict or None");
    return nullptr;
  }
  const Module* mod = nullptr;
  try {
    mod = &pybind11::cast<const Module&>(pybind11::handle(module));
  } catch (const std::exception&) {
    PyErr_SetString(PyExc_TypeError, "FastBridge: module must be a built pytvmbridge Module");
    return nullptr;
  }
  const Py_ssize_t n_all = static_cast<Py_ssize_t>(mod->args().size());
  if (n_all > kMaxArgs) {
    PyErr_Format(PyExc_ValueError, "FastBridge: at most %zd arguments, the module has %zd",
                 kMaxArgs, n_all);
    return nullptr;
  }
  if (PyTuple_GET_SIZE(whats) != n_all) {
    PyErr_Format(PyExc_ValueError, "FastBridge: whats must name the %zd arguments, got %zd", n_all,
                 PyTuple_GET_SIZE(whats));
    return nullptr;
  }
  if (!PyCallable_Check(fallback)) {
    PyErr_SetString(PyExc_TypeError, "FastBridge: fallback must be callable");
    return nullptr;
  }
  auto* self = reinterpret_cast<FastBridge*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  self->vectorcall = fast_bridge_call;
  self->dict = nullptr;
  Py_INCREF(module);
  self->module = module;
  Py_INCREF(checks);
  self->checks = checks;
  Py_INCREF(fallback);
  self->fallback = fallback;
  Py_INCREF(whats);
  self->whats = whats;
  self->mod = mod;
  self->n_all = n_all;
  self->n_outputs = 0;
  for (Py_ssize_t i = 0; i < n_all; ++i) {
    if (mod->args()[i].is_output) self->outputs[self->n_outputs++] = i;
  }
  return reinterpret_cast<PyObject*>(self);
}

PyMemberDef kMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FastBridge, vectorcall), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(FastBridge, dict), READONLY, nullptr},
    {"module", T_OBJECT, offsetof(FastBridge, module), READONLY, "The Module this bridge runs."},
    {"fallback", T_OBJECT, offsetof(FastBridge, fallback), READONLY,
     "The Python bridge that takes every call this fast path does not."},
    {nullptr, 0, 0, 0, nullptr}};

PyType_Slot kSlots[] = {
    {Py_tp_new, reinterpret_cast<void*>(fast_bridge_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(fast_bridge_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(fast_bridge_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(fast_bridge_clear)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_members, kMembers},
    {Py_tp_doc,
     const_cast<char*>("FastBridge(module, checks, fallback, whats): the all-arrays call of a "
                       "framework bridge, in C++; see pytvmbridge/bridges.py.")},
    {0, nullptr}};

PyType_Spec kSpec = {"pytvmbridge._core.FastBridge", sizeof(FastBridge), 0,
                     Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, kSlots};

}  // namespace

void bind_bridges(py::module_& m) {
  PyObject* type = PyType_FromSpec(&kSpec);
  if (type == nullptr) throw py::error_already_set();
  m.add_object("FastBridge", py::reinterpret_steal<py::object>(type));
}

}  // namespace ptb::python
