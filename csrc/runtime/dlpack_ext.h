// What Debian's DLPack 0.6 header lacks from the DLPack 1.x specification: the versioned managed
// tensor, its flags, kDLBool and the newer device types. Declared here, from the specification,
// with the same layout and values so capsules interoperate with DLPack 1.x producers.
#pragma once

#include <dlpack/dlpack.h>
#include <cstdint>

#if DLPACK_VERSION < 80

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0

extern "C" {

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

// Flags of DLManagedTensorVersioned.
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

}  // extern "C"

#endif

namespace ptb {
// Data type codes added after DLPack 0.6.
constexpr uint8_t kDLBoolCode = 6;
constexpr uint8_t kDLFloat8_e4m3fnCode = 10;  // one of the low-precision floats, codes 7..17
// Device types added after DLPack 0.6.
constexpr int kDLOneAPIDevice = 14;
constexpr int kDLWebGPUDevice = 15;
constexpr int kDLHexagonDevice = 16;
constexpr int kDLMAIADevice = 17;
}  // namespace ptb

namespace ptb {

// DLPack 1.x dtype codes after kDLBool: the fp8/fp6/fp4 family. Named here only so errors can
// say which one a producer sent; none of them is supported by kernels.
constexpr uint8_t kDLFloat8_e3m4Code = 7;
constexpr uint8_t kDLFloat4_e2m1fnCode = 17;  // last of the family

// The `__dlpack_c_exchange_api__` table of DLPack 1.2+ (a capsule named "dlpack_exchange_api" on
// the tensor type, published by PyTorch 2.9+). It converts a tensor object to a managed tensor in
// C, without the Python-level `__dlpack__` call and capsule. Declared in namespace ptb (not as the
// global C names) so a future system dlpack.h that declares them too cannot collide.
extern "C" {
typedef int (*ExchangeManagedTensorFromPyObject)(void* py_object, DLManagedTensorVersioned** out);
}

struct ExchangeAPIHeader {
  DLPackVersion version;
  ExchangeAPIHeader* prev_api;
};

// Only the members up to the one used are relied on; the rest are kept as opaque pointers so the
// layout stays that of the specification.
struct ExchangeAPI {
  ExchangeAPIHeader header;
  void* managed_tensor_allocator;
  ExchangeManagedTensorFromPyObject managed_tensor_from_py_object_no_sync;
  void* managed_tensor_to_py_object_no_sync;
  void* dltensor_from_py_object_no_sync;
  void* current_work_stream;
};

}  // namespace ptb
