// NumPy arrays through NumPy's C API: read an array's memory and make new arrays without the
// Python-level __dlpack__ call or numpy.empty (each costs as much as a small kernel call).
// Everything here falls back cleanly: where the C API is missing (a build without NumPy's
// headers, a NumPy too old for them), numpy_ready() is false and callers take the generic route.
#pragma once

#include <Python.h>
#include <dlpack/dlpack.h>

#include <cstdint>

namespace ptb::python {

// Loads NumPy's C API on first use (NumPy must be importable; it is, when one of its arrays is
// at hand). False when this build or this NumPy cannot use it; no Python error is left set.
bool numpy_ready();

// Whether `obj` is a numpy.ndarray (or a subclass). Needs numpy_ready().
bool numpy_is_array(PyObject* obj);

// Fills `out` to view the array `obj` (data, ndim, shape, dtype; strides in elements written to
// `strides`, which holds at least `max_dims`). False, touching nothing, when the array is one the
// generic DLPack route must judge (non-native byte order, unaligned, a dtype pytvmbridge does not
// know, strides that are not whole elements, more than `max_dims` dimensions). Needs numpy_ready().
bool numpy_view(PyObject* obj, DLTensor* out, int64_t* strides, int max_dims, bool* read_only);

// A new array, C-contiguous or with `strides` (in elements, a dense layout in another order of
// the dimensions), or nullptr with a Python error set. Needs numpy_ready().
PyObject* numpy_empty(int ndim, const int64_t* shape, DLDataType dtype,
                      const int64_t* strides = nullptr);

}  // namespace ptb::python
