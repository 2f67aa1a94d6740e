#include "runtime/dlpack.h"

#include <cstdint>

#include "support/error.h"

namespace ptb {

namespace {

const char* const kSupportedDtypes =
    "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32 "
    "or float64";

bool is_power_of_two_byte_size(int bits) {
  return bits == 8 || bits == 16 || bits == 32 || bits == 64;
}

// The 1.x low-precision float family, indexed by code - kDLFloat8_e3m4Code.
const char* const kSmallFloatNames[] = {
    "float8_e3m4",     "float8_e4m3",   "float8_e4m3b11fnuz", "float8_e4m3fn",
    "float8_e4m3fnuz", "float8_e5m2",   "float8_e5m2fnuz",    "float8_e8m0fnu",
    "float6_e2m3fn",   "float6_e3m2fn", "float4_e2m1fn",
};
static_assert(sizeof(kSmallFloatNames) / sizeof(kSmallFloatNames[0]) ==
                  kDLFloat4_e2m1fnCode - kDLFloat8_e3m4Code + 1,
              "one name per small float code");

}  // namespace

std::string dl_dtype_name(DLDataType dtype) {
  const std::string bits = std::to_string(dtype.bits);
  std::string name;
  switch (dtype.code) {
    case kDLInt:
      name = "int" + bits;
      break;
    case kDLUInt:
      name = "uint" + bits;
      break;
    case kDLFloat:
      name = "float" + bits;
      break;
    case kDLBfloat:
      name = "bfloat" + bits;
      break;
    case kDLComplex:
      name = "complex" + bits;
      break;
    case kDLOpaqueHandle:
      name = "opaque_handle" + bits;
      break;
    default:
      if (dtype.code == kDLBoolCode) {
        name = dtype.bits == 8 ? "bool" : "bool" + bits;
      } else if (dtype.code >= kDLFloat8_e3m4Code && dtype.code <= kDLFloat4_e2m1fnCode) {
        name = kSmallFloatNames[dtype.code - kDLFloat8_e3m4Code];
      } else {
        name = "dtype code " + std::to_string(dtype.code) + " with " + bits + " bits";
      }
  }
  if (dtype.lanes != 1) name += "x" + std::to_string(dtype.lanes);
  return name;
}

std::string dl_device_name(DLDevice device) {
  const char* name = nullptr;
  switch (static_cast<int>(device.device_type)) {
    case kDLCPU:
      return device.device_id == 0 ? "cpu" : "cpu:" + std::to_string(device.device_id);
    case kDLCUDA:
      name = "cuda";
      break;
    case kDLCUDAHost:
      name = "cuda_host";
      break;
    case kDLOpenCL:
      name = "opencl";
      break;
    case kDLVulkan:
      name = "vulkan";
      break;
    case kDLMetal:
      name = "metal";
      break;
    case kDLVPI:
      name = "vpi";
      break;
    case kDLROCM:
      name = "rocm";
      break;
    case kDLROCMHost:
      name = "rocm_host";
      break;
    case kDLExtDev:
      name = "ext_dev";
      break;
    case kDLCUDAManaged:
      name = "cuda_managed";
      break;
    case kDLOneAPIDevice:
      name = "oneapi";
      break;
    case kDLWebGPUDevice:
      name = "webgpu";
      break;
    case kDLHexagonDevice:
      name = "hexagon";
      break;
    case kDLMAIADevice:
      name = "maia";
      break;
    default:
      break;
  }
  std::string base = name ? std::string(name)
                          : "device_type_" + std::to_string(static_cast<int>(device.device_type));
  return base + ":" + std::to_string(device.device_id);
}

bool is_supported_dtype(DLDataType dtype) {
  if (dtype.lanes != 1) return false;
  switch (dtype.code) {
    case kDLInt:
    case kDLUInt:
      return is_power_of_two_byte_size(dtype.bits);
    case kDLFloat:
      return dtype.bits == 16 || dtype.bits == 32 || dtype.bits == 64;
    case kDLBfloat:
      return dtype.bits == 16;
    default:
      return dtype.code == kDLBoolCode && dtype.bits == 8;
  }
}

bool is_host_device(DLDevice device) {
  return device.device_type == kDLCPU || device.device_type == kDLCUDAHost;
}

void check_dltensor(const DLTensor& tensor, const std::string& what) {
  if (!is_supported_dtype(tensor.dtype)) {
    type_error(what, ": unsupported dtype ", dl_dtype_name(tensor.dtype), "; expected one of ",
               kSupportedDtypes);
  }
  if (!is_host_device(tensor.device)) {
    value_error(what, ": the array is on device ", dl_device_name(tensor.device),
                "; pytvmbridge kernels run on the CPU and accept only cpu or cuda_host (pinned) "
                "memory");
  }
  if (tensor.ndim < 0) value_error(what, ": the DLPack tensor has ndim ", tensor.ndim, " < 0");
  if (tensor.ndim > 0 && tensor.shape == nullptr) {
    value_error(what, ": the DLPack tensor has ndim ", tensor.ndim, " but no shape array");
  }
  bool empty = false;
  for (int i = 0; i < tensor.ndim; ++i) {
    const int64_t extent = tensor.shape[i];
    if (extent < 0) {
      value_error(what, ": dimension ", i, " of the DLPack tensor has negative extent ", extent);
    }
    empty = empty || extent == 0;
  }
  // An empty tensor is fine whatever its other extents are; otherwise the byte count must fit in
  // int64 so that offsets computed by kernels cannot wrap.
  int64_t size = 1;
  if (empty) {
    size = 0;
  } else {
    bool overflow = false;
    for (int i = 0; i < tensor.ndim; ++i) {
      overflow = overflow || __builtin_mul_overflow(size, tensor.shape[i], &size);
    }
    int64_t bytes = 0;
    if (overflow || __builtin_mul_overflow(size, int64_t{tensor.dtype.bits / 8}, &bytes)) {
      value_error(what, ": the DLPack tensor's byte size overflows 64 bits");
    }
  }
  if (tensor.data == nullptr && size != 0) {
    value_error(what, ": the DLPack tensor has ", size, " elements but a NULL data pointer");
  }
}

void check_dlpack_version(DLPackVersion version, const std::string& what) {
  if (version.major != kDLPackMajor) {
    buffer_error(what, ": DLPack version ", version.major, ".", version.minor,
                 " is not supported; pytvmbridge reads DLPack ", kDLPackMajor,
                 ".x (and legacy unversioned capsules)");
  }
}

}  // namespace ptb
