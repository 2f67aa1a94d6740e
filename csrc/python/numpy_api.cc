#include "python/numpy_api.h"

#ifdef PTB_HAVE_NUMPY
#define NPY_NO_DEPRECATED_API NPY_1_23_API_VERSION
#define NPY_TARGET_VERSION NPY_1_23_API_VERSION
#include <numpy/arrayobject.h>
#endif

#include <cstring>

#include "runtime/dlpack_ext.h"

namespace ptb::python {

#ifdef PTB_HAVE_NUMPY

namespace {

int g_state = 0;  // 0: not tried, 1: ready, -1: unavailable

int load() {
  // import_array() is a macro that returns from the calling function on failure.
  if (_import_array() < 0) {
    PyErr_Clear();
    return -1;
  }
  return 1;
}

// NumPy type numbers and DLPack dtypes, for the dtypes kernels take.
bool to_dl(int type_num, DLDataType* out) {
  auto set = [out](uint8_t code, uint8_t bits) {
    *out = DLDataType{code, bits, 1};
    return true;
  };
  switch (type_num) {
    case NPY_BOOL:
      return set(kDLBoolCode, 8);
    case NPY_INT8:
      return set(kDLInt, 8);
    case NPY_INT16:
      return set(kDLInt, 16);
    case NPY_INT32:
      return set(kDLInt, 32);
    case NPY_INT64:
      return set(kDLInt, 64);
    case NPY_UINT8:
      return set(kDLUInt, 8);
    case NPY_UINT16:
      return set(kDLUInt, 16);
    case NPY_UINT32:
      return set(kDLUInt, 32);
    case NPY_UINT64:
      return set(kDLUInt, 64);
    case NPY_FLOAT16:
      return set(kDLFloat, 16);
    case NPY_FLOAT32:
      return set(kDLFloat, 32);
    case NPY_FLOAT64:
      return set(kDLFloat, 64);
    default:
      return false;  // long long/longlong aliases are covered above on LP64
  }
}

int from_dl(DLDataType t) {
  if (t.lanes != 1) return -1;
  if (t.code == kDLBoolCode && t.bits == 8) return NPY_BOOL;
  if (t.code == kDLInt) {
    return t.bits == 8    ? NPY_INT8
           : t.bits == 16 ? NPY_INT16
           : t.bits == 32 ? NPY_INT32
           : t.bits == 64 ? NPY_INT64
                          : -1;
  }
  if (t.code == kDLUInt) {
    return t.bits == 8    ? NPY_UINT8
           : t.bits == 16 ? NPY_UINT16
           : t.bits == 32 ? NPY_UINT32
           : t.bits == 64 ? NPY_UINT64
                          : -1;
  }
  if (t.code == kDLFloat) {
    return t.bits == 16   ? NPY_FLOAT16
           : t.bits == 32 ? NPY_FLOAT32
           : t.bits == 64 ? NPY_FLOAT64
                          : -1;
  }
  return -1;
}

// bfloat16 is not one of NumPy's own dtypes: ml_dtypes (a dependency of JAX, whose host arrays
// np.asarray views with it) registers it as a user type. Its type number, -1 until an array of
// it was seen or ml_dtypes was imported to make one.
int g_bfloat16 = -1;

bool is_bfloat16(PyArray_Descr* descr) {
  if (g_bfloat16 >= 0) return descr->type_num == g_bfloat16;
  if (descr->type_num < NPY_USERDEF || descr->typeobj == nullptr) return false;
  const char* name = descr->typeobj->tp_name;
  const char* dot = std::strrchr(name, '.');
  if (std::strcmp(dot != nullptr ? dot + 1 : name, "bfloat16") != 0) return false;
  g_bfloat16 = descr->type_num;
  return true;
}

bool descr_to_dl(PyArray_Descr* descr, DLDataType* out) {
  if (to_dl(descr->type_num, out)) return true;
  if (!is_bfloat16(descr)) return false;
  *out = DLDataType{kDLBfloat, 16, 1};
  return true;
}

// ml_dtypes' bfloat16 dtype (a new reference), or nullptr with a TypeError set when ml_dtypes
// is not installed.
PyArray_Descr* bfloat16_descr() {
  if (g_bfloat16 >= 0) return PyArray_DescrFromType(g_bfloat16);
  PyObject* module = PyImport_ImportModule("ml_dtypes");
  if (module == nullptr) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError,
                    "a bfloat16 NumPy array needs the ml_dtypes package (pip install ml_dtypes): "
                    "NumPy has no bfloat16 of its own");
    return nullptr;
  }
  PyObject* type = PyObject_GetAttrString(module, "bfloat16");
  Py_DECREF(module);
  if (type == nullptr) return nullptr;
  PyArray_Descr* descr = PyArray_DescrFromTypeObject(type);
  Py_DECREF(type);
  if (descr != nullptr) g_bfloat16 = descr->type_num;
  return descr;
}

}  // namespace

bool numpy_ready() {
  if (g_state == 0) g_state = load();
  return g_state == 1;
}

bool numpy_is_array(PyObject* obj) { return PyArray_Check(obj); }

bool numpy_view(PyObject* obj, DLTensor* out, int64_t* strides, int max_dims, bool* read_only) {
  auto* array = reinterpret_cast<PyArrayObject*>(obj);
  const int flags = PyArray_FLAGS(array);
  PyArray_Descr* descr = PyArray_DESCR(array);
  const int ndim = PyArray_NDIM(array);
  if (ndim > max_dims || !(flags & NPY_ARRAY_ALIGNED) || PyArray_ISBYTESWAPPED(array)) {
    return false;
  }
  DLDataType dtype;
  if (!descr_to_dl(descr, &dtype)) return false;
  const npy_intp item = PyArray_ITEMSIZE(array);
  const npy_intp* byte_strides = PyArray_STRIDES(array);
  for (int d = 0; d < ndim; ++d) {
    if (byte_strides[d] % item != 0) return false;
    strides[d] = byte_strides[d] / item;
  }
  static_assert(sizeof(npy_intp) == sizeof(int64_t), "NumPy sizes are int64 on this platform");
  out->data = PyArray_DATA(array);
  out->device = DLDevice{kDLCPU, 0};
  out->ndim = ndim;
  out->dtype = dtype;
  out->shape = reinterpret_cast<int64_t*>(PyArray_DIMS(array));
  out->strides = strides;
  out->byte_offset = 0;
  *read_only = !(flags & NPY_ARRAY_WRITEABLE);
  return true;
}

PyObject* numpy_empty(int ndim, const int64_t* shape, DLDataType dtype, const int64_t* strides) {
  const int type_num = from_dl(dtype);
  PyArray_Descr* descr = nullptr;
  if (type_num >= 0) {
    descr = PyArray_DescrFromType(type_num);
  } else if (dtype.code == kDLBfloat && dtype.bits == 16 && dtype.lanes == 1) {
    descr = bfloat16_descr();
    if (descr == nullptr) return nullptr;
  } else {
    PyErr_SetString(PyExc_TypeError, "numpy_empty: a dtype NumPy does not have");
    return nullptr;
  }
  auto* dims = const_cast<npy_intp*>(reinterpret_cast<const npy_intp*>(shape));
  // NumPy allocates size * itemsize bytes and keeps the strides given (in bytes): a dense
  // layout in another order of the dimensions fits that block exactly.
  npy_intp steps[NPY_MAXDIMS];
  if (strides != nullptr) {
    const npy_intp item = (dtype.bits * dtype.lanes + 7) / 8;
    for (int d = 0; d < ndim; ++d) steps[d] = static_cast<npy_intp>(strides[d]) * item;
  }
  // (PyArray_NewFromDescr takes the reference to descr)
  return PyArray_NewFromDescr(&PyArray_Type, descr, ndim, dims,
                              strides != nullptr ? steps : nullptr, nullptr, 0, nullptr);
}

#else  // a build without NumPy's headers: the generic routes do everything

bool numpy_ready() { return false; }
bool numpy_is_array(PyObject*) { return false; }
bool numpy_view(PyObject*, DLTensor*, int64_t*, int, bool*) { return false; }
PyObject* numpy_empty(int, const int64_t*, DLDataType, const int64_t*) {
  PyErr_SetString(PyExc_RuntimeError, "this build of pytvmbridge has no NumPy C API");
  return nullptr;
}

#endif

}  // namespace ptb::python
