// _core.NDArray and the DLPack entry points. The NumPy-facing conveniences (numpy(), __array__,
// __repr__, copyfrom) are written in Python, in pytvmbridge/nd.py, and reached from here.

#include <limits>
#include <string>
#include <vector>

#include "python/bindings.h"
#include "python/dlpack_import.h"
#include "python/torch_bits.h"
#include "runtime/dlpack.h"
#include "runtime/loop_profile.h"
#include "runtime/ndarray.h"
#include "support/error.h"

namespace ptb::python {

namespace {

py::tuple int_tuple(const int64_t* values, int n) {
  py::tuple out(n);
  for (int i = 0; i < n; ++i) {
    PyObject* item = PyLong_FromLongLong(values[i]);
    if (item == nullptr) throw py::error_already_set();
    PyTuple_SET_ITEM(out.ptr(), i, item);
  }
  return out;
}

// Calls the helper `name` of pytvmbridge.nd (imported on first use, then found in sys.modules).
template <typename... Args>
py::object call_nd(const char* name, Args&&... args) {
  return py::module_::import("pytvmbridge.nd").attr(name)(std::forward<Args>(args)...);
}

std::string py_type_name(py::handle obj) { return py::str(py::type::of(obj).attr("__name__")); }

// A shape given as an int or a sequence of ints (anything with __index__).
std::vector<int64_t> parse_shape(py::handle shape, const char* where) {
  std::vector<int64_t> out;
  auto as_int = [&](py::handle item) -> int64_t {
    if (PyBool_Check(item.ptr()) || !PyIndex_Check(item.ptr())) {
      type_error(where, ": shape entries must be integers, got '", py_type_name(item), "'");
    }
    py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(item.ptr()));
    if (!index) throw py::error_already_set();
    const long long v = PyLong_AsLongLong(index.ptr());
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    return v;
  };
  // A sequence first: a 1-d NumPy array of sizes also has __index__ (NumPy's, which refuses it);
  // a 0-d one has no length and is an int.
  bool sequence = PySequence_Check(shape.ptr()) && !PyUnicode_Check(shape.ptr());
  if (sequence && PySequence_Size(shape.ptr()) < 0) {
    PyErr_Clear();
    sequence = false;
  }
  if (!sequence && PyIndex_Check(shape.ptr()) && !PyBool_Check(shape.ptr())) {
    out.push_back(as_int(shape));
    return out;
  }
  if (!PySequence_Check(shape.ptr()) || PyUnicode_Check(shape.ptr())) {
    type_error(where, ": shape must be an int or a sequence of ints, got '", py_type_name(shape),
               "'");
  }
  for (py::handle item : py::reinterpret_borrow<py::sequence>(shape)) out.push_back(as_int(item));
  return out;
}

// An int item of a __dlpack__ argument tuple; TypeError/ValueError naming the argument for
// anything else (pybind11's cast would raise a RuntimeError saying nothing of it).
int tuple_int(py::handle tuple, int k, const char* what) {
  PyObject* item = PyTuple_GET_ITEM(tuple.ptr(), k);
  if (!PyLong_Check(item) || PyBool_Check(item)) {
    type_error("__dlpack__: ", what, " must be a tuple of two ints, got ",
               std::string(py::repr(tuple)));
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
  if (overflow != 0 || v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    value_error("__dlpack__: ", what,
                " holds a number out of range: ", std::string(py::repr(tuple)));
  }
  return static_cast<int>(v);
}

// (major, minor) from __dlpack__'s max_version.
std::pair<long, long> parse_version(py::handle v) {
  if (!PyTuple_Check(v.ptr()) || PyTuple_GET_SIZE(v.ptr()) != 2) {
    type_error("__dlpack__: max_version must be a (major, minor) tuple of ints, got ",
               std::string(py::repr(v)));
  }
  return {tuple_int(v, 0, "max_version"), tuple_int(v, 1, "max_version")};
}

// Whether __dlpack__ was called by JAX's from_dlpack: JAX asks for a legacy capsule, which cannot
// say "read-only", but never writes into memory it imports (its arrays are immutable), so a
// read-only array (one imported from JAX, say) is lent to it rather than refused.
bool jax_asks() {
  // A function implemented in C has no frame: frame 0 is the Python code that called __dlpack__.
  py::object caller = py::module_::import("sys").attr("_getframe")(0);
  py::object module = caller.attr("f_globals").attr("get")("__name__", "");
  return py::isinstance<py::str>(module) && module.cast<std::string>().rfind("jax.", 0) == 0;
}

py::capsule ndarray_dlpack(const NDArray& a, py::handle stream, py::handle max_version,
                           py::handle dl_device, py::handle copy) {
  // CPU memory has no streams; consumers pass None, or an int by habit (-1 means "no sync").
  if (!stream.is_none() && !PyLong_Check(stream.ptr())) {
    type_error("__dlpack__: stream must be None or an int for a CPU array, got '",
               py_type_name(stream), "'");
  }
  bool versioned = false;
  if (!max_version.is_none()) versioned = parse_version(max_version).first >= 1;
  if (!dl_device.is_none()) {
    if (!PyTuple_Check(dl_device.ptr()) || PyTuple_GET_SIZE(dl_device.ptr()) != 2) {
      type_error("__dlpack__: dl_device must be a (device_type, device_id) tuple, got ",
                 std::string(py::repr(dl_device)));
    }
    DLDevice want{static_cast<DLDeviceType>(tuple_int(dl_device, 0, "dl_device")),
                  tuple_int(dl_device, 1, "dl_device")};
    DLDevice have = a.device();
    if (want.device_type != have.device_type || want.device_id != have.device_id) {
      buffer_error("__dlpack__: cannot export to device ", dl_device_name(want),
                   ": the array is on ", dl_device_name(have),
                   " and pytvmbridge does not copy between devices");
    }
  }
  bool make_copy = false;
  if (!copy.is_none()) {
    if (!PyBool_Check(copy.ptr())) {
      type_error("__dlpack__: copy must be None, True or False, got '", py_type_name(copy), "'");
    }
    make_copy = copy.ptr() == Py_True;
  }
  if (!make_copy) return export_capsule(a, versioned, !versioned && a.read_only() && jax_asks());
  // copy=True: the consumer gets memory of its own, flagged as a copy (versioned only).
  NDArray fresh = a.copy();
  py::capsule cap = export_capsule(fresh, versioned);
  if (versioned) {
    auto* managed = static_cast<DLManagedTensorVersioned*>(cap.get_pointer());
    managed->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
  }
  return cap;
}

const char* const kNDArrayDoc = R"doc(
An n-dimensional array on the CPU, shared with any DLPack framework without copying.

Create one with ``nd.array`` (a copy), ``nd.empty`` or ``nd.from_dlpack`` (a view of another
framework's memory). ``torch.from_dlpack``, ``np.from_dlpack`` and ``jax.dlpack.from_dlpack``
view it without copying.

Example:
    >>> import pytvmbridge as tvm
    >>> a = tvm.nd.array([[1, 2, 3], [4, 5, 6]], dtype="float32")
    >>> a.shape, a.dtype, a.strides
    ((2, 3), 'float32', (3, 1))
)doc";

}  // namespace

void bind_runtime(py::module_& m) {
  py::class_<NDArray> cls(m, "NDArray", kNDArrayDoc);
  set_ndarray_type(cls);
  cls.def_property_readonly(
         "shape", [](const NDArray& a) { return int_tuple(a.dl_tensor().shape, a.ndim()); },
         "The extents, a tuple of ints.")
      .def_property_readonly(
          "strides", [](const NDArray& a) { return int_tuple(a.dl_tensor().strides, a.ndim()); },
          "Strides in elements (as in DLPack and PyTorch, not bytes as in NumPy).")
      .def_property_readonly(
          "dtype", [](const NDArray& a) { return a.dtype().str(); },
          "The dtype name, e.g. 'float32'.")
      .def_property_readonly("ndim", &NDArray::ndim, "The number of dimensions.")
      .def_property_readonly(
          "size", [](const NDArray& a) { return a.size(); }, "The number of elements.")
      .def_property_readonly(
          "itemsize", [](const NDArray& a) { return a.dtype().bytes(); }, "Bytes per element.")
      .def_property_readonly(
          "nbytes", [](const NDArray& a) { return a.nbytes(); }, "Bytes of all the elements.")
      .def_property_readonly(
          "data_ptr", [](const NDArray& a) { return reinterpret_cast<uintptr_t>(a.data()); },
          "Address of the first element (any DLPack byte_offset included), as an int.")
      .def_property_readonly("read_only", &NDArray::read_only,
                             "True when the producer marked the memory read-only.")
      .def_property_readonly(
          "device",
          [](const NDArray& a) {
            return py::make_tuple(static_cast<int>(a.device().device_type), a.device().device_id);
          },
          "(DLPack device type, device id): (1, 0) for the CPU.")
      .def("is_compact", &NDArray::is_compact,
           "True when the elements are compact and row-major (C-contiguous).")
      .def("copy", &NDArray::copy, "A compact copy in new, 64-byte aligned memory.")
      .def(
          "view",
          [](const NDArray& a, const std::string& dtype) { return a.view(DataType::parse(dtype)); },
          py::arg("dtype"),
          "The same memory read as another dtype of the same element size, e.g. "
          "a.view('uint16') of a bfloat16 array.")
      .def(
          "_copy_from", [](const NDArray& a, const NDArray& src) { a.copy_from(src); },
          py::arg("src"))
      .def_property_readonly("_use_count", &NDArray::use_count)
      .def(
          "__dlpack__",
          [](const NDArray& a, py::handle stream, py::handle max_version, py::handle dl_device,
             py::handle copy) { return ndarray_dlpack(a, stream, max_version, dl_device, copy); },
          py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
          "A DLPack capsule viewing this array: 'dltensor_versioned' (DLPack 1.0) when max_version "
          ">= (1, 0), legacy 'dltensor' otherwise. copy=True exports a copy; dl_device must be "
          "this array's device.")
      .def(
          "__dlpack_device__",
          [](const NDArray& a) {
            return py::make_tuple(static_cast<int>(a.device().device_type), a.device().device_id);
          },
          "(DLPack device type, device id).")
      .def(
          "numpy", [](py::handle self) { return call_nd("_to_numpy", self); },
          "A NumPy view of the same memory (bfloat16 needs the ml_dtypes package).")
      .def(
          "asnumpy", [](py::handle self) { return call_nd("_to_numpy", self); },
          "Same as numpy() (TVM's older name).")
      .def(
          "copyfrom",
          [](py::handle self, py::handle source) { return call_nd("_copyfrom", self, source); },
          py::arg("source"),
          "Copies an array-like of the same shape into this array (converting the dtype); "
          "returns self.")
      .def(
          "__array__",
          [](py::handle self, py::handle dtype, py::handle copy) {
            return call_nd("_array_protocol", self, dtype, copy);
          },
          py::arg("dtype") = py::none(), py::kw_only(), py::arg("copy") = py::none())
      .def("__repr__",
           [](py::handle self) -> std::string { return py::str(call_nd("_repr", self)); });

  m.def(
      "from_dlpack",
      [](py::handle obj, const std::string& what) { return import_array(obj, what); },
      py::arg("obj"), py::arg("what") = "from_dlpack argument",
      "Views any DLPack producer (an object with __dlpack__ or a capsule) as an NDArray without "
      "copying; `what` names it in errors.");
  m.def(
      "empty",
      [](py::handle shape, const std::string& dtype) {
        return NDArray::empty(parse_shape(shape, "empty"), DataType::parse(dtype));
      },
      py::arg("shape"), py::arg("dtype") = "float32",
      "A new uninitialised array of 64-byte aligned memory.");
  m.def("_set_exchange_api_enabled", &set_exchange_api_enabled, py::arg("enabled"));
  m.def("_exchange_api_enabled", &exchange_api_enabled);
  m.def("_set_torch_bits_enabled", &set_torch_bits_enabled, py::arg("enabled"));
  m.def("_torch_bits_ready", &torch_bits_ready,
        "Whether a PyTorch tensor's negative bit and requires_grad are read directly (checked "
        "against PyTorch on first use; needs torch imported).");
  m.def("_set_loop_profile", &set_loop_profile, py::arg("on"),
        "Times each parallel loop of compiled kernels while on (on also clears the records).");
  m.def("_loop_profile_enabled", &loop_profile_enabled);
  m.def(
      "_loop_profile_records",
      [] {
        py::list out;
        for (const LoopRecord& r : loop_profile_records()) {
          py::dict d;
          d["name"] = r.name;
          d["iterations"] = r.iterations;
          d["calls"] = r.calls;
          d["total_seconds"] = r.total_seconds;
          py::list seconds;
          for (double t : r.seconds) seconds.append(t);
          d["seconds"] = seconds;
          out.append(d);
        }
        return out;
      },
      "The loops timed since the profile was turned on, in the order each first ran.");
}

}  // namespace ptb::python
