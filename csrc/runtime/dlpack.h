// DLPack vocabulary shared by import and export: readable names for dtypes and devices, and the
// checks a producer's tensor must pass before any kernel may touch its memory.
#pragma once

#include <string>

#include "runtime/dlpack_ext.h"

namespace ptb {

// The DLPack version this runtime produces and understands (1.0; the legacy unversioned struct
// is understood too).
constexpr uint32_t kDLPackMajor = 1;
constexpr uint32_t kDLPackMinor = 0;

// "float32", "bool", "bfloat16", "complex64", "float8_e4m3fn", "opaque_handle64", with "x4"
// appended for 4 lanes. Never throws: used to describe what a producer sent.
std::string dl_dtype_name(DLDataType dtype);

// "cpu", "cuda:0", "cuda_host:1", "device_type_99:0"... Never throws.
std::string dl_device_name(DLDevice device);

// One of bool, int8..int64, uint8..uint64, float16, bfloat16, float32, float64 with one lane.
bool is_supported_dtype(DLDataType dtype);

// Memory the CPU can address directly: kDLCPU and kDLCUDAHost (pinned host memory).
bool is_host_device(DLDevice device);

// Throws a UserError whose message starts with `what` unless `tensor` is one the runtime can use:
// a supported dtype (TypeError otherwise), a host device (ValueError), ndim >= 0 with a shape
// array, non-negative extents whose product fits in int64 (ValueError) and a data pointer unless
// the tensor is empty (ValueError). Strides may be NULL (compact row-major).
void check_dltensor(const DLTensor& tensor, const std::string& what);

// Throws a BufferError naming `what` unless a versioned tensor's major version is one this
// runtime can read (1). Nothing but the version may be read from a tensor that fails this.
void check_dlpack_version(DLPackVersion version, const std::string& what);

}  // namespace ptb
