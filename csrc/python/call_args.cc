#include "python/call_args.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "python/numpy_api.h"
#include "runtime/dlpack.h"
#include "support/error.h"

namespace ptb::python {

namespace {

// The exchange table's functions beyond what dlpack_import reads (typed per the specification).
using ToPyObject = int (*)(DLManagedTensorVersioned* tensor, void** out_py_object);
using DLTensorFromPyObject = int (*)(void* py_object, DLTensor* out);

PyObject* g_resolver = nullptr;
std::vector<TypeRoute> g_routes;
constexpr size_t kMaxRoutes = 64;

PyObject* framework_name(PyObject* framework) { return PyObject_GetAttrString(framework, "name"); }

bool framework_flag(PyObject* framework, const char* name) {
  PyObject* value = PyObject_GetAttrString(framework, name);
  if (value == nullptr) {
    PyErr_Clear();
    return false;
  }
  const bool yes = PyObject_IsTrue(value) == 1;
  Py_DECREF(value);
  return yes;
}

const ExchangeAPI* torch_exchange() {
  static const ExchangeAPI* api = [] {
    const ExchangeAPI* found = nullptr;
    if (PyObject* torch = PyImport_ImportModule("torch")) {
      if (PyObject* tensor = PyObject_GetAttrString(torch, "Tensor")) {
        if (PyType_Check(tensor))
          found = producer_info(reinterpret_cast<PyTypeObject*>(tensor)).api;
        Py_DECREF(tensor);
      }
      Py_DECREF(torch);
    }
    PyErr_Clear();
    return found;
  }();
  return api;
}

// The memory of a new PyTorch output: the managed tensor, its shape and its data in one block
// (data 64-byte aligned), freed by one call of the deleter. Strides are left null (compact).
// The block comes from malloc, with the data placed at the first 64-byte boundary after the
// header, rather than from posix_memalign: glibc's aligned allocation carves an aligned chunk
// out of a larger one on every call, about ten times the instructions of a malloc.
constexpr size_t kDataAlign = 64;

void free_torch_block(DLManagedTensorVersioned* self) { std::free(self); }

// `strides`: null for a row-major tensor, else strides that lay the elements out densely in some
// order of the dimensions (the same number of bytes).
DLManagedTensorVersioned* new_torch_block(int ndim, const int64_t* shape, const int64_t* strides,
                                          DLDataType dtype) {
  const int dim_arrays = strides != nullptr ? 2 : 1;
  const size_t header = sizeof(DLManagedTensorVersioned) + sizeof(int64_t) * ndim * dim_arrays;
  size_t bytes = (static_cast<size_t>(dtype.bits) * dtype.lanes + 7) / 8;
  bool overflow = false;
  for (int d = 0; d < ndim; ++d) {
    overflow = overflow || shape[d] < 0 ||
               __builtin_mul_overflow(bytes, static_cast<size_t>(shape[d]), &bytes);
  }
  overflow = overflow || __builtin_add_overflow(bytes, header + kDataAlign - 1, &bytes);
  void* block = overflow ? nullptr : std::malloc(bytes);
  if (block == nullptr) {
    PyErr_SetString(PyExc_MemoryError, "cannot allocate the output tensor");
    throw py::error_already_set();
  }
  auto* managed = static_cast<DLManagedTensorVersioned*>(block);
  auto* dims = reinterpret_cast<int64_t*>(managed + 1);
  std::memcpy(dims, shape, sizeof(int64_t) * ndim);
  int64_t* steps = nullptr;
  if (strides != nullptr) {
    steps = dims + ndim;
    std::memcpy(steps, strides, sizeof(int64_t) * ndim);
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(block) + header;
  void* data = reinterpret_cast<void*>((start + kDataAlign - 1) & ~uintptr_t{kDataAlign - 1});
  managed->version = DLPackVersion{kDLPackMajor, kDLPackMinor};
  managed->manager_ctx = nullptr;
  managed->deleter = free_torch_block;
  managed->flags = 0;
  managed->dl_tensor = DLTensor{data, DLDevice{kDLCPU, 0}, ndim, dtype, dims, steps, 0};
  return managed;
}

ReadRoute read_route(PyObject* obj, PyTypeObject* tp, PyObject* framework,
                     const ProducerInfo& producer) {
  PyTypeObject* nd = ndarray_type();
  if (nd != nullptr && (tp == nd || PyType_IsSubtype(tp, nd))) return ReadRoute::kNDArray;
  if (PyCapsule_CheckExact(obj)) return ReadRoute::kDLPack;
  if (!framework_flag(framework, "native")) return ReadRoute::kConvert;
  if (producer.torch && producer.api != nullptr && exchange_api_enabled() &&
      producer.api->dltensor_from_py_object_no_sync != nullptr) {
    return ReadRoute::kTorch;
  }
  if (numpy_ready() && numpy_is_array(obj)) return ReadRoute::kNumpy;
  if (producer.immutable && PyObject_CheckBuffer(obj)) return ReadRoute::kBuffer;
  return ReadRoute::kDLPack;
}

// The buffer protocol's struct format of one element, as a DLPack dtype.
bool format_dtype(const char* format, Py_ssize_t itemsize, DLDataType* out) {
  if (format == nullptr) return false;
  if (*format == '=' || *format == '<' || *format == '@') ++format;
  if (format[0] == '\0' || format[1] != '\0') return false;
  uint8_t code;
  switch (format[0]) {
    case '?':
      code = kDLBoolCode;
      break;
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
      code = kDLInt;
      break;
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
      code = kDLUInt;
      break;
    case 'e':
    case 'f':
    case 'd':
      code = kDLFloat;
      break;
    default:
      return false;
  }
  *out = DLDataType{code, static_cast<uint8_t>(itemsize * 8), 1};
  return is_supported_dtype(*out);
}

}  // namespace

AllocRoute alloc_route_of(PyObject* framework) {
  PyObject* name = framework_name(framework);
  if (name == nullptr) {
    PyErr_Clear();
    return AllocRoute::kPython;
  }
  const char* text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : "";
  AllocRoute route = AllocRoute::kPython;
  if (text == nullptr) {
    PyErr_Clear();
  } else if (std::strcmp(text, "torch") == 0 && torch_exchange() != nullptr &&
             torch_exchange()->managed_tensor_to_py_object_no_sync != nullptr) {
    route = AllocRoute::kTorch;
  } else if (std::strcmp(text, "numpy") == 0 && numpy_ready()) {
    route = AllocRoute::kNumpy;
  } else if (std::strcmp(text, "nd") == 0 || std::strcmp(text, "dlpack") == 0) {
    route = AllocRoute::kNDArray;
  } else if (std::strcmp(text, "jax") == 0) {
    route = AllocRoute::kWrap;
  }
  Py_DECREF(name);
  return route;
}

void set_framework_resolver(py::handle resolver) {
  Py_XINCREF(resolver.ptr());
  Py_XSETREF(g_resolver, resolver.ptr());
}

const TypeRoute& route_of(PyObject* obj) {
  PyTypeObject* tp = Py_TYPE(obj);
  for (const TypeRoute& r : g_routes) {
    if (r.type == tp) return r;
  }
  if (g_routes.capacity() == 0) g_routes.reserve(kMaxRoutes);
  PTB_ICHECK(g_resolver != nullptr, "the framework resolver was not set");
  PyObject* framework = PyObject_CallOneArg(g_resolver, obj);
  if (framework == nullptr) throw py::error_already_set();
  ProducerInfo& producer = producer_info(tp);
  TypeRoute route{tp, read_route(obj, tp, framework, producer), alloc_route_of(framework),
                  framework, &producer};
  if (PyCapsule_CheckExact(obj) || g_routes.size() >= kMaxRoutes ||
      !producer_info_is_cached(&producer)) {
    // A capsule's type says nothing about the next one; past the limit (of routes, or of the
    // producer entries the route points to, whose per-call entry the next type overwrites): a
    // per-call answer.
    static thread_local TypeRoute scratch{};
    Py_XDECREF(scratch.framework);
    scratch = route;
    return scratch;
  }
  Py_INCREF(tp);
  g_routes.push_back(route);
  return g_routes.back();
}

CallArg::~CallArg() {
  if (has_buffer_) PyBuffer_Release(&buffer_);
  Py_XDECREF(object_);
}

void CallArg::read_generic(PyObject* obj, const ArgName& what, bool output) {
  owned_ = import_array(py::handle(obj), what);
  t_ = &owned_.dl_tensor();
  read_only_ = owned_.read_only();
}

void CallArg::written() {
  if (written_torch_ == nullptr) return;
  // torch._C._increment_version, looked up once under the GIL (the torch route exists only
  // once torch is imported) and kept for the process.
  static PyObject* increment = nullptr;
  if (increment == nullptr) {
    py::object fn = py::module_::import("torch").attr("_C").attr("_increment_version");
    increment = fn.release().ptr();
  }
  // It takes a sequence of tensors (a tensor itself would be iterated: one bump per row).
  PyObject* one = PyTuple_Pack(1, written_torch_);
  if (one == nullptr) throw py::error_already_set();
  PyObject* done = PyObject_CallOneArg(increment, one);
  Py_DECREF(one);
  if (done == nullptr) throw py::error_already_set();
  Py_DECREF(done);
}

void CallArg::read(PyObject* obj, const ArgName& what, bool output) {
  const TypeRoute* found = nullptr;
  try {
    found = &route_of(obj);
  } catch (py::error_already_set& e) {  // not an array at all: the resolver says why
    e.restore();
    raise_named(what);
  }
  const TypeRoute& route = *found;
  if (route.read == ReadRoute::kNDArray) {
    const NDArray& a = py::handle(obj).cast<const NDArray&>();
    t_ = &a.dl_tensor();
    read_only_ = a.read_only();
    return;
  }
  if (output && route.read != ReadRoute::kConvert) check_writable_object(obj, what);
  switch (route.read) {
    case ReadRoute::kTorch: {
      check_not_negated(obj, *route.producer, what);
      auto from = reinterpret_cast<DLTensorFromPyObject>(
          route.producer->api->dltensor_from_py_object_no_sync);
      if (from(obj, &view_) != 0) {
        explain_torch_export_failure(obj, what.str());
        raise_named(what);
      }
      try {
        check_dltensor(view_, std::string());
      } catch (const UserError& e) {
        throw UserError(e.kind(), what.str() + e.what());
      }
      t_ = &view_;
      read_only_ = false;
      if (output) written_torch_ = obj;
      return;
    }
    case ReadRoute::kNumpy:
      if (numpy_view(obj, &view_, strides_, kMaxViewDims, &read_only_)) {
        t_ = &view_;
        return;
      }
      return read_generic(obj, what, output);
    case ReadRoute::kBuffer: {
      if (PyObject_GetBuffer(obj, &buffer_, PyBUF_RECORDS_RO) != 0) {
        PyErr_Clear();
        return read_generic(obj, what, output);
      }
      has_buffer_ = true;
      DLDataType dtype;
      bool ok =
          buffer_.ndim <= kMaxViewDims && format_dtype(buffer_.format, buffer_.itemsize, &dtype);
      for (int d = 0; ok && d < buffer_.ndim; ++d) {
        ok = buffer_.strides[d] % buffer_.itemsize == 0;
        if (ok) strides_[d] = buffer_.strides[d] / buffer_.itemsize;
      }
      if (!ok) {
        PyBuffer_Release(&buffer_);
        has_buffer_ = false;
        return read_generic(obj, what, output);
      }
      view_.data = buffer_.buf;
      view_.device = DLDevice{kDLCPU, 0};
      view_.ndim = buffer_.ndim;
      view_.dtype = dtype;
      view_.shape = reinterpret_cast<int64_t*>(buffer_.shape);
      view_.strides = strides_;
      view_.byte_offset = 0;
      t_ = &view_;
      read_only_ = buffer_.readonly != 0;
      return;
    }
    case ReadRoute::kConvert: {
      // The framework's own conversion (MXNet's to_dlpack_for_read/write), then DLPack.
      const std::string text = what.str();
      py::object converted = py::reinterpret_steal<py::object>(PyObject_CallMethod(
          route.framework, output ? "as_output" : "as_input", "Os", obj, text.c_str()));
      if (!converted) throw py::error_already_set();
      return read_generic(converted.ptr(), what, output);
    }
    default:
      return read_generic(obj, what, output);
  }
}

void CallArg::allocate(PyObject* framework, AllocRoute route, int ndim, const int64_t* shape,
                       DLDataType dtype, const int64_t* strides) {
  framework_ = framework;
  alloc_ = route;
  read_only_ = false;
  switch (route) {
    case AllocRoute::kTorch: {
      // One block of our own memory (the managed tensor, its shape, then the data) handed to
      // PyTorch, which frees it through the deleter when the tensor goes: half the cost of
      // torch's allocator (at::empty through the dispatcher, then a second tensor around it).
      DLManagedTensorVersioned* managed = new_torch_block(ndim, shape, strides, dtype);
      view_ = managed->dl_tensor;
      std::memcpy(shape_, view_.shape, sizeof(int64_t) * ndim);
      view_.shape = shape_;
      if (strides != nullptr) {
        std::memcpy(strides_, strides, sizeof(int64_t) * ndim);
        view_.strides = strides_;
      }
      void* tensor = nullptr;
      auto to_python =
          reinterpret_cast<ToPyObject>(torch_exchange()->managed_tensor_to_py_object_no_sync);
      if (to_python(managed, &tensor) != 0 || tensor == nullptr) {
        // Whether PyTorch freed a tensor it refused is not specified: the block may leak.
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "torch refused a new tensor");
        throw py::error_already_set();
      }
      object_ = static_cast<PyObject*>(tensor);
      t_ = &view_;
      return;
    }
    case AllocRoute::kNumpy: {
      object_ = numpy_empty(ndim, shape, dtype, strides);
      if (object_ == nullptr) throw py::error_already_set();
      bool read_only = false;
      PTB_ICHECK(numpy_view(object_, &view_, strides_, kMaxViewDims, &read_only),
                 "a new NumPy array that NumPy's C API cannot view");
      t_ = &view_;
      return;
    }
    case AllocRoute::kNDArray:
    case AllocRoute::kWrap:
      owned_ = NDArray::empty(std::vector<int64_t>(shape, shape + ndim),
                              DataType(static_cast<DataType::Code>(dtype.code), dtype.bits));
      t_ = &owned_.dl_tensor();
      return;
    case AllocRoute::kPython: {
      py::tuple dims(ndim);
      for (int d = 0; d < ndim; ++d) dims[d] = py::int_(shape[d]);
      const std::string name = DataType(static_cast<DataType::Code>(dtype.code), dtype.bits).str();
      object_ = PyObject_CallMethod(framework, "empty", "Os", dims.ptr(), name.c_str());
      if (object_ == nullptr) throw py::error_already_set();
      py::object writable = py::reinterpret_steal<py::object>(
          PyObject_CallMethod(framework, "writable", "O", object_));
      if (!writable) throw py::error_already_set();
      owned_ = import_array(writable, "a new output");
      t_ = &owned_.dl_tensor();
      return;
    }
  }
}

PyObject* CallArg::result() {
  switch (alloc_) {
    case AllocRoute::kTorch:
    case AllocRoute::kNumpy:
      Py_INCREF(object_);
      return object_;
    case AllocRoute::kNDArray:
      try {
        return py::cast(owned_).release().ptr();
      } catch (py::error_already_set& e) {
        e.restore();
        return nullptr;
      }
    case AllocRoute::kWrap: {
      PyObject* buffer = nullptr;
      try {
        buffer = py::cast(owned_).release().ptr();
      } catch (py::error_already_set& e) {
        e.restore();
        return nullptr;
      }
      PyObject* wrapped = PyObject_CallMethod(framework_, "wrap", "O", buffer);
      Py_DECREF(buffer);
      return wrapped;
    }
    case AllocRoute::kPython:
      return PyObject_CallMethod(framework_, "wrap", "O", object_);
  }
  return nullptr;
}

}  // namespace ptb::python
