#include "python/dlpack_import.h"

#include <dlfcn.h>

#include <cstring>
#include <initializer_list>
#include <vector>

#include "python/bindings.h"
#include "python/torch_bits.h"
#include "runtime/dlpack.h"
#include "runtime/module.h"
#include "support/error.h"

namespace ptb::python {

namespace py = pybind11;

namespace {

constexpr const char* kLegacyName = "dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kUsedLegacyName = "used_dltensor";
constexpr const char* kUsedVersionedName = "used_dltensor_versioned";
constexpr const char* kExchangeName = "dlpack_exchange_api";

// Objects built once and kept for the life of the process (never freed: destroying Python
// objects from a static destructor after the interpreter has finalised would crash).
struct Interned {
  PyObject* dlpack;          // "__dlpack__"
  PyObject* exchange_api;    // "__dlpack_c_exchange_api__"
  PyObject* version_kwname;  // ("max_version",)
  PyObject* max_version;     // (1, 0)
};

const Interned& interned() {
  static const Interned s = [] {
    Interned i;
    i.dlpack = PyUnicode_InternFromString("__dlpack__");
    i.exchange_api = PyUnicode_InternFromString("__dlpack_c_exchange_api__");
    i.version_kwname = Py_BuildValue("(s)", "max_version");
    i.max_version = Py_BuildValue("(II)", kDLPackMajor, kDLPackMinor);
    PTB_ICHECK(i.dlpack && i.exchange_api && i.version_kwname && i.max_version,
               "cannot create the DLPack attribute names");
    return i;
  }();
  return s;
}

PyTypeObject* g_ndarray_type = nullptr;
bool g_exchange_enabled = true;

using TypeEntry = ProducerInfo;
std::vector<TypeEntry> g_type_cache;
constexpr size_t kMaxCachedTypes = 64;
std::string type_name(PyObject* obj) {
  PyTypeObject* tp = Py_TYPE(obj);
  py::handle type(reinterpret_cast<PyObject*>(tp));
  try {
    std::string module = py::str(type.attr("__module__"));
    std::string qualname = py::str(type.attr("__qualname__"));
    return module == "builtins" ? qualname : module + "." + qualname;
  } catch (const py::error_already_set&) {
    return tp->tp_name;
  }
}

// The exchange table of `tp`, or nullptr. Used only when the type does not override the
// __dlpack__ of the class that published the table: a subclass with its own __dlpack__ means
// its own behaviour, which the table would bypass.
const ExchangeAPI* lookup_exchange_api(PyTypeObject* tp) {
  const Interned& s = interned();
  PyObject* type = reinterpret_cast<PyObject*>(tp);
  PyObject* mro = tp->tp_mro;
  if (mro == nullptr || !PyTuple_Check(mro)) return nullptr;
  PyObject* owner = nullptr;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject* base = PyTuple_GET_ITEM(mro, i);
    PyObject* dict = reinterpret_cast<PyTypeObject*>(base)->tp_dict;
    if (dict && PyDict_GetItemWithError(dict, s.exchange_api)) {
      owner = base;
      break;
    }
    if (PyErr_Occurred()) PyErr_Clear();
  }
  if (owner == nullptr) return nullptr;
  py::object cap = py::reinterpret_steal<py::object>(PyObject_GetAttr(owner, s.exchange_api));
  py::object own = py::reinterpret_steal<py::object>(PyObject_GetAttr(type, s.dlpack));
  py::object base = py::reinterpret_steal<py::object>(PyObject_GetAttr(owner, s.dlpack));
  if (!cap || !own || !base || own.ptr() != base.ptr() ||
      !PyCapsule_IsValid(cap.ptr(), kExchangeName)) {
    PyErr_Clear();
    return nullptr;
  }
  // The specification requires the table to live as long as the process.
  auto* api = static_cast<const ExchangeAPI*>(PyCapsule_GetPointer(cap.ptr(), kExchangeName));
  if (api == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  if (api->header.version.major != kDLPackMajor ||
      api->managed_tensor_from_py_object_no_sync == nullptr) {
    return nullptr;
  }
  return api;
}

// The package a type comes from ("torch" for torch.nn.Parameter...), looked up along its MRO so
// that subclasses defined elsewhere belong to their framework.
bool from_package(PyTypeObject* tp, std::initializer_list<const char*> roots) {
  PyObject* mro = tp->tp_mro;
  if (mro == nullptr || !PyTuple_Check(mro)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject* module = PyObject_GetAttrString(PyTuple_GET_ITEM(mro, i), "__module__");
    if (module == nullptr) {
      PyErr_Clear();
      continue;
    }
    const char* name = PyUnicode_Check(module) ? PyUnicode_AsUTF8(module) : nullptr;
    if (name == nullptr) PyErr_Clear();
    bool match = false;
    for (const char* root : roots) {
      const size_t n = std::strlen(root);
      match = match || (name && std::strncmp(name, root, n) == 0 && (name[n] == '.' || !name[n]));
    }
    Py_DECREF(module);
    if (match) return true;
  }
  return false;
}

// Whether some class along tp's MRO is called `name` (jax.core.Tracer for every JAX tracer).
bool has_base_named(PyTypeObject* tp, const char* name) {
  PyObject* mro = tp->tp_mro;
  if (mro == nullptr || !PyTuple_Check(mro)) return false;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    auto* base = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i));
    const char* dot = std::strrchr(base->tp_name, '.');
    if (std::strcmp(dot ? dot + 1 : base->tp_name, name) == 0) return true;
  }
  return false;
}

// torch.Tensor itself or torch.nn.Parameter: the classes whose instances are real tensors.
// Other subclasses (FakeTensor, FunctionalTensor, user subclasses with __torch_function__) may
// be traced, so their calls ask Python.
bool plain_torch_tensor(PyTypeObject* tp) {
  const char* dot = std::strrchr(tp->tp_name, '.');
  const char* name = dot ? dot + 1 : tp->tp_name;
  if (std::strcmp(name, "Tensor") != 0 && std::strcmp(name, "Parameter") != 0) return false;
  PyObject* module = PyObject_GetAttrString(reinterpret_cast<PyObject*>(tp), "__module__");
  if (module == nullptr) {
    PyErr_Clear();
    return false;
  }
  const char* text = PyUnicode_Check(module) ? PyUnicode_AsUTF8(module) : nullptr;
  if (text == nullptr) PyErr_Clear();
  const bool plain =
      text && (std::strcmp(text, "torch") == 0 || std::strcmp(text, "torch.nn.parameter") == 0);
  Py_DECREF(module);
  return plain;
}

// The data descriptor implementing `requires_grad` on tp (a getset of torch's C tensor type),
// or nullptr: then every call asks Python.
PyObject* requires_grad_descriptor(PyTypeObject* tp) {
  PyObject* name = PyUnicode_InternFromString("requires_grad");
  if (name == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  PyObject* descr = _PyType_Lookup(tp, name);  // borrowed
  Py_DECREF(name);
  if (descr == nullptr || Py_TYPE(descr)->tp_descr_get == nullptr) return nullptr;
  Py_INCREF(descr);
  return descr;
}

// Whether PyTorch's grad mode is on (its autograd thread-local state; off under torch.no_grad
// and torch.inference_mode), read through the C function of PyTorch's stable AOTInductor ABI,
// found once in the loaded libtorch_cpu: a few nanoseconds, where a Python-level getter costs
// tens. True when the function cannot be found (then requires_grad decides, as it did).
bool torch_grad_mode() {
  using GradModeFn = bool (*)();
  static const GradModeFn grad_mode = []() -> GradModeFn {
    void* lib = dlopen("libtorch_cpu.so", RTLD_LAZY | RTLD_NOLOAD);
    if (lib == nullptr) return nullptr;
    auto fn = reinterpret_cast<GradModeFn>(dlsym(lib, "aoti_torch_grad_mode_is_enabled"));
    dlclose(lib);  // a RTLD_NOLOAD handle: torch keeps the library loaded
    return fn;
  }();
  return grad_mode == nullptr || grad_mode();
}

}  // namespace

bool may_need_autodiff(PyObject* const* args, Py_ssize_t n) {
  int grad_mode = -1;  // read at the first plain torch tensor
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyTypeObject* tp = Py_TYPE(args[k]);
    const ProducerInfo& info = producer_info(tp);
    if (info.always_ask_autodiff) return true;
    if (!info.torch) continue;
    if (info.requires_grad == nullptr && !info.plain_torch) return true;
    // With grad mode off, requires_grad changes nothing (autograd records no node): skip it.
    if (grad_mode < 0) grad_mode = torch_grad_mode() ? 1 : 0;
    if (grad_mode == 0) continue;
    if (info.plain_torch && torch_bits_ready()) {
      if (torch_requires_grad(args[k])) return true;
      continue;
    }
    if (info.requires_grad == nullptr) return true;
    PyObject* value =
        Py_TYPE(info.requires_grad)
            ->tp_descr_get(info.requires_grad, args[k], reinterpret_cast<PyObject*>(tp));
    if (value == nullptr) {
      PyErr_Clear();
      return true;
    }
    const bool grad = value == Py_True;
    Py_DECREF(value);
    if (grad) return true;
  }
  return false;
}

ProducerInfo& producer_info(PyTypeObject* tp) {
  // Reserved once: references handed out stay valid while later types are added.
  if (g_type_cache.capacity() == 0) g_type_cache.reserve(kMaxCachedTypes);
  for (TypeEntry& e : g_type_cache) {
    if (e.type == tp) return e;
  }
  TypeEntry e{tp, lookup_exchange_api(tp), nullptr, false, false, false};
  e.torch = from_package(tp, {"torch"});
  e.immutable = from_package(tp, {"jax", "jaxlib"});
  if (e.torch) {
    e.is_neg = PyObject_GetAttrString(reinterpret_cast<PyObject*>(tp), "is_neg");
    if (e.is_neg == nullptr) PyErr_Clear();
    if (plain_torch_tensor(tp)) {
      e.plain_torch = true;
      e.requires_grad = requires_grad_descriptor(tp);
    } else {
      e.always_ask_autodiff = true;
    }
  } else if (e.immutable) {
    e.always_ask_autodiff = has_base_named(tp, "Tracer");
  }
  if (g_type_cache.size() >= kMaxCachedTypes) {
    // Rare (a program with many array types): a per-call entry, still correct.
    static thread_local TypeEntry scratch;
    Py_XDECREF(scratch.is_neg);
    Py_XDECREF(scratch.requires_grad);
    scratch = e;
    return scratch;
  }
  Py_INCREF(tp);
  g_type_cache.push_back(e);
  return g_type_cache.back();
}

bool producer_info_is_cached(const ProducerInfo* info) {
  for (const TypeEntry& e : g_type_cache) {
    if (&e == info) return true;
  }
  return false;
}

namespace {

[[noreturn]] void throw_not_an_array(PyObject* obj, const std::string& what) {
  type_error(what,
             ": expected an array (an object with __dlpack__ such as a PyTorch, NumPy or JAX "
             "array, a DLPack capsule, or a pytvmbridge NDArray), got an object of type '",
             type_name(obj), "'");
}

// Whether the pending TypeError says that __dlpack__ does not take max_version (a producer that
// predates DLPack 1.0), as opposed to a TypeError of the producer's own.
bool refused_max_version() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  bool refused = false;
  if (PyObject* text = value ? PyObject_Str(value) : nullptr) {
    const char* message = PyUnicode_AsUTF8(text);
    refused = message && std::strstr(message, "max_version") != nullptr;
    Py_DECREF(text);
  }
  PyErr_Clear();
  PyErr_Restore(type, value, tb);
  return refused;
}

// obj.__dlpack__(max_version=(1, 0)), or obj.__dlpack__() for producers that predate the
// keyword (remembered per type, so that the producer is called once per import). Returns a new
// reference.
py::object call_dlpack(PyObject* obj, TypeEntry& entry, const std::string& what) {
  const Interned& s = interned();
  PyObject* result = nullptr;
  if (!entry.legacy_dlpack) {
    PyObject* args[2] = {obj, s.max_version};
    result = PyObject_VectorcallMethod(s.dlpack, args, 1, s.version_kwname);
  } else {
    result = PyObject_CallMethodNoArgs(obj, s.dlpack);
  }
  if (result == nullptr) {
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
      // Tell "no __dlpack__ at all" from an AttributeError raised inside the producer.
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      const int has = PyObject_HasAttr(obj, s.dlpack);
      if (!has) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        throw_not_an_array(obj, what);
      }
      PyErr_Restore(type, value, tb);
      throw py::error_already_set();
    }
    if (entry.legacy_dlpack || !PyErr_ExceptionMatches(PyExc_TypeError) || !refused_max_version()) {
      throw py::error_already_set();
    }
    PyErr_Clear();
    entry.legacy_dlpack = true;
    result = PyObject_CallMethodNoArgs(obj, s.dlpack);
    if (result == nullptr) throw py::error_already_set();
  }
  py::object capsule = py::reinterpret_steal<py::object>(result);
  if (!PyCapsule_CheckExact(result)) {
    type_error(what, ": __dlpack__() of '", type_name(obj), "' returned an object of type '",
               type_name(result), "', expected a DLPack capsule");
  }
  return capsule;
}

// A str attribute of obj (str(obj.name)), or "?" when there is none.
std::string attr_text(PyObject* obj, const char* name) {
  py::object value = py::reinterpret_steal<py::object>(PyObject_GetAttrString(obj, name));
  PyObject* text = value ? PyObject_Str(value.ptr()) : nullptr;
  const char* utf8 = text ? PyUnicode_AsUTF8(text) : nullptr;
  std::string out = utf8 ? utf8 : "?";
  Py_XDECREF(text);
  PyErr_Clear();
  return out;
}

}  // namespace

namespace {

// The first line of a pending exception's message (PyTorch's C++ errors append a stack trace).
std::string first_line(PyObject* value) {
  PyObject* str = value != nullptr ? PyObject_Str(value) : nullptr;
  const char* utf8 = str != nullptr ? PyUnicode_AsUTF8(str) : nullptr;
  std::string text = utf8 != nullptr ? utf8 : "?";
  Py_XDECREF(str);
  PyErr_Clear();
  return text.substr(0, text.find('\n'));
}

// For a dense CPU tensor PyTorch still could not export (its error fetched into type/value/tb):
// the reason in a TypeError/ValueError of our own, or PyTorch's error kept when it is not a
// RuntimeError; a RuntimeError becomes a BufferError without PyTorch's C++ stack trace.
void explain_dense_cpu_failure(PyObject* obj, const std::string& what, PyObject* type,
                               PyObject* value, PyObject* tb) {
  if (type == nullptr || !PyErr_GivenExceptionMatches(type, PyExc_RuntimeError)) {
    PyErr_Restore(type, value, tb);
    return;
  }
  PyErr_NormalizeException(&type, &value, &tb);
  const std::string reason = first_line(value);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  const std::string dtype = attr_text(obj, "dtype");
  if (attr_text(obj, "is_nested") == "True") {
    value_error(what,
                ": a nested PyTorch tensor; pytvmbridge kernels take dense tensors: "
                "pass x.to_padded_tensor(0) or its components (x.unbind())");
  }
  if (attr_text(obj, "is_quantized") == "True") {
    type_error(what, ": a quantized PyTorch tensor (dtype ", dtype,
               "), which DLPack cannot describe; pass x.dequantize(), or x.int_repr() for "
               "its integers");
  }
  if (dtype.rfind("torch.bits", 0) == 0) {
    type_error(what, ": a PyTorch tensor of dtype ", dtype,
               ", which DLPack cannot describe; view its bytes as an integer dtype of the same "
               "size (x.view(torch.uint8) for bits8)");
  }
  buffer_error(what, ": PyTorch could not export the tensor through DLPack: ", reason);
}

}  // namespace

// After PyTorch failed to export a tensor (its error is pending): when the tensor is not a dense
// CPU one, a ValueError saying so replaces PyTorch's error (whose text is a C++ stack trace);
// for a dense CPU tensor, see explain_dense_cpu_failure.
void explain_torch_export_failure(PyObject* obj, const std::string& what) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  const std::string device = attr_text(obj, "device");
  const std::string layout = attr_text(obj, "layout");
  if (device == "cpu" && layout == "torch.strided") {
    explain_dense_cpu_failure(obj, what, type, value, tb);
    return;
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  std::string advice;
  if (device == "meta") {
    advice = "a meta tensor has no data at all";
  } else {
    if (layout != "torch.strided") advice = ".to_dense()";
    if (device != "cpu") advice += advice.empty() ? ".cpu()" : " and .cpu()";
    advice = "use " + advice;
  }
  value_error(what, ": a PyTorch tensor on device '", device, "' with layout ", layout,
              "; pytvmbridge kernels take dense (torch.strided) tensors in CPU memory: ", advice);
}

namespace {

// Whether `obj` has the lazy negative bit: read directly for plain tensors (Tensor.is_neg's
// binding costs more than the rest of a small call), else through the method.
bool negated(PyObject* obj, const ProducerInfo& entry) {
  if (entry.plain_torch && torch_bits_ready()) return torch_is_neg(obj);
  if (entry.is_neg == nullptr) return false;
  PyObject* answer = PyObject_Vectorcall(entry.is_neg, &obj, 1, nullptr);
  if (answer == nullptr) throw py::error_already_set();
  const bool yes = answer == Py_True;
  Py_DECREF(answer);
  return yes;
}

}  // namespace

void check_not_negated(PyObject* obj, const ProducerInfo& entry, const ArgName& what) {
  if (negated(obj, entry)) {
    value_error(what.str(),
                ": the tensor has PyTorch's lazy negative bit (a view such as z.conj().imag or "
                "torch._neg_view(x)): its memory holds the negated values; pass "
                "x.resolve_neg() instead");
  }
}

namespace {

NDArray import_with_exchange_api(PyObject* obj, const ExchangeAPI* api, const std::string& what) {
  DLManagedTensorVersioned* managed = nullptr;
  if (api->managed_tensor_from_py_object_no_sync(obj, &managed) != 0 || managed == nullptr) {
    if (PyErr_Occurred()) throw py::error_already_set();
    buffer_error(what, ": '", type_name(obj),
                 "' could not export the array through __dlpack_c_exchange_api__");
  }
  return NDArray::adopt(managed, what);
}

NDArray import_unnamed_writable(PyObject* o, const std::string& what);

// The import itself; errors start with `what` (empty: import_array prefixes the name). A JAX
// array's memory is immutable to JAX, which exports it without DLPack's read-only flag: its
// NDArray refuses writes (an output, an out=), as a read-only NumPy array's does.
NDArray import_unnamed(PyObject* o, const std::string& what) {
  NDArray a = import_unnamed_writable(o, what);
  if (a.read_only() || !producer_info(Py_TYPE(o)).immutable) return a;
  return a.view(a.dtype(), /*read_only=*/true);
}

NDArray import_unnamed_writable(PyObject* o, const std::string& what) {
  PyTypeObject* tp = Py_TYPE(o);
  TypeEntry& entry = producer_info(tp);
  check_not_negated(o, entry, what);
  if (g_exchange_enabled && entry.api != nullptr) {
    try {
      return import_with_exchange_api(o, entry.api, what);
    } catch (py::error_already_set& e) {
      e.restore();
      explain_torch_export_failure(o, what);
      throw py::error_already_set();
    }
  }
  py::object source = py::reinterpret_borrow<py::object>(o);
  if (entry.torch) {
    // PyTorch's __dlpack__ refuses tensors that require grad; reading one is fine.
    py::object grad = py::reinterpret_steal<py::object>(PyObject_GetAttrString(o, "requires_grad"));
    if (!grad) throw py::error_already_set();
    if (grad.ptr() == Py_True) {
      source = py::reinterpret_steal<py::object>(PyObject_CallMethod(o, "detach", nullptr));
      if (!source) throw py::error_already_set();
    }
  }
  py::object capsule;
  try {
    capsule = call_dlpack(source.ptr(), entry, what);
  } catch (py::error_already_set& e) {
    if (!entry.torch) throw;
    e.restore();
    explain_torch_export_failure(o, what);
    throw py::error_already_set();
  }
  return import_capsule(capsule, what);
}

}  // namespace

// Re-raises the pending Python exception with the argument named (see import_array).
[[noreturn]] void raise_named(const ArgName& what) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb != nullptr && value != nullptr) PyException_SetTraceback(value, tb);
  if (value == nullptr || !PyErr_GivenExceptionMatches(type, PyExc_Exception)) {
    PyErr_Restore(type, value, tb);
    throw py::error_already_set();
  }
  const std::string name = what.str();
  PyObject* plain[] = {PyExc_TypeError,    PyExc_ValueError,    PyExc_BufferError,
                       PyExc_RuntimeError, PyExc_OverflowError, PyExc_NotImplementedError};
  bool is_plain = false;
  for (PyObject* cls : plain) is_plain = is_plain || type == cls;
  // pytvmbridge's own classes (TVMTypeError...), raised by the Python side of a call.
  for (ErrorKind kind :
       {ErrorKind::kType, ErrorKind::kValue, ErrorKind::kBuffer, ErrorKind::kNotImplemented}) {
    is_plain = is_plain || type == user_error_class(kind);
  }
  PyObject* args = PyObject_GetAttrString(value, "args");
  if (is_plain && args && PyTuple_Check(args) && PyTuple_GET_SIZE(args) == 1 &&
      PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
    PyObject* message = PyUnicode_FromFormat("%s: %U", name.c_str(), PyTuple_GET_ITEM(args, 0));
    PyObject* fresh = message ? PyObject_CallOneArg(type, message) : nullptr;
    Py_XDECREF(message);
    Py_DECREF(args);
    if (fresh != nullptr) {
      PyException_SetCause(fresh, value);  // steals value
      PyException_SetContext(fresh, nullptr);
      Py_XDECREF(tb);
      PyErr_SetObject(type, fresh);
      Py_DECREF(fresh);
      Py_DECREF(type);
      throw py::error_already_set();
    }
    PyErr_Clear();
  } else {
    Py_XDECREF(args);
    PyErr_Clear();
    PyObject* note = PyUnicode_FromFormat("while reading %s", name.c_str());
    PyObject* added = note ? PyObject_CallMethod(value, "add_note", "O", note) : nullptr;
    Py_XDECREF(note);
    Py_XDECREF(added);
    PyErr_Clear();
  }
  PyErr_Restore(type, value, tb);
  throw py::error_already_set();
}

namespace {

template <typename Managed>
void capsule_destructor(PyObject* capsule, const char* name) {
  // Only an unconsumed capsule still owns its tensor: consumers rename what they take. The
  // destructor can run while an exception is being raised; leave it untouched.
  if (!PyCapsule_IsValid(capsule, name)) return;
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  void* pointer = PyCapsule_GetPointer(capsule, name);
  if (pointer == nullptr) {
    PyErr_Clear();
  } else {
    auto* managed = static_cast<Managed*>(pointer);
    if (managed->deleter) managed->deleter(managed);
  }
  PyErr_Restore(type, value, tb);
}

void versioned_capsule_destructor(PyObject* capsule) {
  capsule_destructor<DLManagedTensorVersioned>(capsule, kVersionedName);
}
void legacy_capsule_destructor(PyObject* capsule) {
  capsule_destructor<DLManagedTensor>(capsule, kLegacyName);
}

}  // namespace

NDArray import_capsule(py::handle capsule, const std::string& what) {
  PyObject* cap = capsule.ptr();
  const char* name = PyCapsule_GetName(cap);
  if (name == nullptr && PyErr_Occurred()) throw py::error_already_set();
  // strcmp, not std::string: this runs on every call and the names exceed the small-string size.
  auto is = [name](const char* expected) { return name && std::strcmp(name, expected) == 0; };
  if (is(kVersionedName)) {
    auto* managed = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap, name));
    if (managed == nullptr) throw py::error_already_set();
    // Checked before the capsule is consumed: a rejected capsule still frees itself.
    check_dlpack_version(managed->version, what);
    check_dltensor(managed->dl_tensor, what);
    if (PyCapsule_SetName(cap, kUsedVersionedName) != 0) throw py::error_already_set();
    return NDArray::adopt(managed, what);
  }
  if (is(kLegacyName)) {
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, name));
    if (managed == nullptr) throw py::error_already_set();
    check_dltensor(managed->dl_tensor, what);
    if (PyCapsule_SetName(cap, kUsedLegacyName) != 0) throw py::error_already_set();
    return NDArray::adopt(managed, what);
  }
  if (is(kUsedLegacyName) || is(kUsedVersionedName)) {
    buffer_error(what, ": the DLPack capsule was already consumed (it is named '", name,
                 "'); a capsule can be imported only once, ask the producer for a new one");
  }
  type_error(what,
             ": expected a DLPack capsule named 'dltensor' or 'dltensor_versioned', got a "
             "capsule named '",
             name ? name : "<NULL>", "'");
}

NDArray import_array(py::handle obj, const ArgName& what) {
  PyObject* o = obj.ptr();
  PyTypeObject* tp = Py_TYPE(o);
  if (g_ndarray_type != nullptr && (tp == g_ndarray_type || PyType_IsSubtype(tp, g_ndarray_type))) {
    return py::cast<const NDArray&>(obj);
  }
  static const std::string* const kUnnamed = new std::string();  // never destroyed: see above
  try {
    if (PyCapsule_CheckExact(o)) return import_capsule(obj, *kUnnamed);
    return import_unnamed(o, *kUnnamed);
  } catch (const UserError& e) {
    throw UserError(e.kind(), what.str() + e.what());
  } catch (py::error_already_set& e) {
    e.restore();
    raise_named(what);
  }
}

void check_writable_object(py::handle obj, const ArgName& what) {
  PyTypeObject* tp = Py_TYPE(obj.ptr());
  if (tp == g_ndarray_type || PyCapsule_CheckExact(obj.ptr())) return;
  const TypeEntry& entry = producer_info(tp);
  if (entry.immutable) {
    type_error(what.str(),
               ": JAX arrays are immutable and cannot be outputs; call the kernel with its "
               "inputs only (through to_jax or @kernel) and the outputs are allocated and "
               "returned");
  }
  if (!entry.torch) return;
  bool requires_grad;
  if (entry.plain_torch && torch_bits_ready()) {
    requires_grad = torch_requires_grad(obj.ptr());
  } else {
    PyObject* grad = PyObject_GetAttrString(obj.ptr(), "requires_grad");
    if (grad == nullptr) throw py::error_already_set();
    requires_grad = grad == Py_True;
    Py_DECREF(grad);
  }
  // Under torch.no_grad() an in-place write to a tensor that requires grad is what an optimizer
  // step does, as PyTorch allows (the write bumps its version: CallArg::written).
  if (requires_grad && torch_grad_mode()) {
    value_error(what.str(),
                " is an output but the tensor requires grad: autograd would not see the "
                "kernel's write; pass a tensor with requires_grad=False (e.g. "
                "torch.empty_like(x)), or write under torch.no_grad() (an optimizer step)");
  }
}

std::string ArgName::str() const {
  if (name_ != nullptr) return str_cat("argument ", index_, " ('", *name_, "')");
  if (module_ == nullptr) return text_ ? text_ : "argument";
  const auto& args = module_->args();
  if (index_ < args.size()) return str_cat("argument ", index_, " ('", args[index_].name, "')");
  return str_cat("argument ", index_);
}

py::capsule export_capsule(const NDArray& array, bool versioned, bool lend_read_only) {
  PyObject* cap = nullptr;
  if (versioned) {
    DLManagedTensorVersioned* managed = array.to_dlpack_versioned();
    cap = PyCapsule_New(managed, kVersionedName, versioned_capsule_destructor);
    if (cap == nullptr) managed->deleter(managed);
  } else {
    if (array.read_only() && !lend_read_only) {
      buffer_error(
          "__dlpack__: the array is read-only, which a legacy 'dltensor' capsule cannot "
          "express; ask for a versioned capsule with __dlpack__(max_version=(1, 0))");
    }
    DLManagedTensor* managed = array.to_dlpack();
    cap = PyCapsule_New(managed, kLegacyName, legacy_capsule_destructor);
    if (cap == nullptr) managed->deleter(managed);
  }
  if (cap == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::capsule>(cap);
}

PyTypeObject* ndarray_type() { return g_ndarray_type; }

void set_ndarray_type(py::handle type) {
  g_ndarray_type = reinterpret_cast<PyTypeObject*>(type.ptr());
}

void set_exchange_api_enabled(bool enabled) { g_exchange_enabled = enabled; }
bool exchange_api_enabled() { return g_exchange_enabled; }

}  // namespace ptb::python
