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
constexpr uint8_t kDLFloat8_e4m3fnCode = 10;  // first of the fp8 family (10..16)
// Device types added after DLPack 0.6.
constexpr int kDLOneAPIDevice = 14;
constexpr int kDLWebGPUDevice = 15;
constexpr int kDLHexagonDevice = 16;
constexpr int kDLMAIADevice = 17;
}  // namespace ptb
