#include "python/dlpack_import.h"

#include <cstring>
#include <vector>

#include "runtime/dlpack.h"
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

// Per-type answer to "does this type publish a usable exchange table?". Few types ever reach
// here (torch.Tensor, numpy.ndarray, jax's ArrayImpl...), so a short vector beats a hash map.
// Each type is kept alive so that its address cannot be reused by another type.
struct TypeEntry {
  PyTypeObject* type;
  const ExchangeAPI* api;
};
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

const ExchangeAPI* exchange_api_for(PyTypeObject* tp) {
  for (const TypeEntry& e : g_type_cache) {
    if (e.type == tp) return e.api;
  }
  const ExchangeAPI* api = lookup_exchange_api(tp);
  if (g_type_cache.size() < kMaxCachedTypes) {
    Py_INCREF(tp);
    g_type_cache.push_back({tp, api});
  }
  return api;
}

[[noreturn]] void throw_not_an_array(PyObject* obj, const std::string& what) {
  type_error(what,
             ": expected an array (an object with __dlpack__ such as a PyTorch, NumPy or JAX "
             "array, a DLPack capsule, or a pytvmbridge NDArray), got an object of type '",
             type_name(obj), "'");
}

// obj.__dlpack__(max_version=(1, 0)), falling back to obj.__dlpack__() for producers that
// predate the keyword. Returns a new reference.
py::object call_dlpack(PyObject* obj, const std::string& what) {
  const Interned& s = interned();
  PyObject* args[2] = {obj, s.max_version};
  PyObject* result = PyObject_VectorcallMethod(s.dlpack, args, 1, s.version_kwname);
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
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
    PyErr_Clear();
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

NDArray import_with_exchange_api(PyObject* obj, const ExchangeAPI* api, const std::string& what) {
  DLManagedTensorVersioned* managed = nullptr;
  if (api->managed_tensor_from_py_object_no_sync(obj, &managed) != 0 || managed == nullptr) {
    if (PyErr_Occurred()) throw py::error_already_set();
    buffer_error(what, ": '", type_name(obj),
                 "' could not export the array through __dlpack_c_exchange_api__");
  }
  return NDArray::adopt(managed, what);
}

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

NDArray import_array(py::handle obj, const std::string& what) {
  PyObject* o = obj.ptr();
  PyTypeObject* tp = Py_TYPE(o);
  if (g_ndarray_type != nullptr && (tp == g_ndarray_type || PyType_IsSubtype(tp, g_ndarray_type))) {
    return py::cast<const NDArray&>(obj);
  }
  if (PyCapsule_CheckExact(o)) return import_capsule(obj, what);
  if (g_exchange_enabled) {
    if (const ExchangeAPI* api = exchange_api_for(tp))
      return import_with_exchange_api(o, api, what);
  }
  py::object capsule = call_dlpack(o, what);
  return import_capsule(capsule, what);
}

py::capsule export_capsule(const NDArray& array, bool versioned) {
  PyObject* cap = nullptr;
  if (versioned) {
    DLManagedTensorVersioned* managed = array.to_dlpack_versioned();
    cap = PyCapsule_New(managed, kVersionedName, versioned_capsule_destructor);
    if (cap == nullptr) managed->deleter(managed);
  } else {
    if (array.read_only()) {
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

void set_ndarray_type(py::handle type) {
  g_ndarray_type = reinterpret_cast<PyTypeObject*>(type.ptr());
}

void set_exchange_api_enabled(bool enabled) { g_exchange_enabled = enabled; }
bool exchange_api_enabled() { return g_exchange_enabled; }

}  // namespace ptb::python
