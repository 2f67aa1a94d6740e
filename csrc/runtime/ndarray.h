// NDArray: the runtime's one array type. A cheap, shared handle (copying it bumps an atomic
// count) to a strided view of host memory that is either pytvmbridge's own (64-byte aligned, from
// NDArray::empty) or a DLPack producer's (adopted from a managed tensor, whose deleter runs
// exactly once, when the last handle or exported tensor lets go).
//
// Invariants that kernels and the Module call path rely on, whatever the producer sent:
//  - dl_tensor().data is the address of element (0, ..., 0): a producer's byte_offset is folded
//    into it on import (legal for host memory), so dl_tensor().byte_offset is always 0;
//  - dl_tensor().strides is never NULL and counts elements (a producer's NULL strides, meaning
//    compact row-major, are materialised);
//  - the dtype is one of DataType's scalar types and the device is cpu or cuda_host.
//
// No Python here: the bindings (csrc/python) turn capsules and __dlpack__ objects into the
// managed tensors this file adopts.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/type.h"
#include "runtime/dlpack_ext.h"

namespace ptb {

class NDArray {
 public:
  // Alignment of memory from empty(): one cache line, enough for every AVX-512 load.
  static constexpr size_t kAlignment = 64;

  NDArray() noexcept = default;  // an undefined handle; only defined() may be asked of it
  NDArray(const NDArray& other) noexcept;
  NDArray(NDArray&& other) noexcept : c_(std::exchange(other.c_, nullptr)) {}
  NDArray& operator=(const NDArray& other) noexcept;
  NDArray& operator=(NDArray&& other) noexcept;
  ~NDArray();

  // A new compact row-major array of pytvmbridge's own memory, 64-byte aligned, uninitialised.
  // A negative extent is a ValueError, a dtype that is not a supported scalar type a TypeError.
  static NDArray empty(const std::vector<int64_t>& shape, DataType dtype);

  // Take ownership of a producer's managed tensor. Checks it with check_dltensor (and the version,
  // for a versioned one); on any failure the deleter is called before the UserError propagates,
  // so ownership always passes. `what` starts every error message ("argument 2 ('Y')").
  // A versioned tensor's READ_ONLY flag makes the array read-only.
  static NDArray adopt(DLManagedTensor* managed, const std::string& what = "array");
  static NDArray adopt(DLManagedTensorVersioned* managed, const std::string& what = "array");

  bool defined() const noexcept { return c_ != nullptr; }

  // The DLTensor kernels see (invariants above). Valid while this array lives.
  const DLTensor& dl_tensor() const;
  void* data() const;
  int ndim() const;
  int64_t shape(int axis) const;
  int64_t stride(int axis) const;  // in elements
  std::vector<int64_t> shape() const;
  std::vector<int64_t> strides() const;
  DataType dtype() const;
  DLDevice device() const;
  int64_t size() const;  // number of elements
  int64_t nbytes() const;
  bool read_only() const;
  // Compact row-major (C-contiguous). The strides of extent-1 axes do not matter, and an empty
  // array is compact, as in PyTorch's is_contiguous().
  bool is_compact() const;

  // [first, last) bytes the elements occupy; first == last for an empty array. Negative strides
  // are accounted for. For overlap checks between arguments.
  std::pair<const char*, const char*> byte_span() const;
  // True when some byte belongs to both arrays (a conservative test on byte spans).
  bool overlaps(const NDArray& other) const;

  // A compact copy in new memory from empty() (writable even when this array is not).
  NDArray copy() const;
  // Copies src's elements into this array (strided either side; overlapping memory is handled).
  // Errors: read-only destination (ValueError), different shape (ValueError) or dtype (TypeError).
  void copy_from(const NDArray& src) const;
  // The same memory read as another dtype of the same element size ("bfloat16" as "uint16").
  // `read_only`: the view refuses writes even where this array allows them (a JAX array's
  // memory, which JAX treats as immutable but exports without DLPack's read-only flag).
  NDArray view(DataType dtype, bool read_only = false) const;

  // Exports: new managed tensors that keep this array's memory alive until the consumer calls
  // their deleter. Shape and strides point into this array's storage. The versioned one is
  // version 1.0 and carries DLPACK_FLAG_BITMASK_READ_ONLY for a read-only array; the legacy one
  // cannot say read-only (callers decide whether to refuse).
  DLManagedTensorVersioned* to_dlpack_versioned() const;
  DLManagedTensor* to_dlpack() const;

  // Handles and exported tensors sharing this array's storage record, for tests.
  int use_count() const;
  bool same_as(const NDArray& other) const { return c_ == other.c_; }

 private:
  struct Container;
  explicit NDArray(Container* c) : c_(c) {}
  const Container& container() const;
  [[noreturn]] static void throw_undefined();
  static void release(Container* c) noexcept;
  template <typename Managed>
  static NDArray adopt_managed(Managed* managed, bool read_only, const std::string& what);

  Container* c_ = nullptr;
};

// The storage record behind a handle. Defined here so that the accessors above inline: they are
// on the path of every kernel call.
struct NDArray::Container {
  enum class Owner : uint8_t { kSelf, kLegacy, kVersioned, kView };
  static constexpr int kInlineDims = 6;

  explicit Container(int ndim);
  ~Container();
  Container(const Container&) = delete;
  Container& operator=(const Container&) = delete;

  std::atomic<int32_t> refs{1};
  Owner owner = Owner::kSelf;
  bool read_only = false;
  bool compact = true;
  int64_t size = 0;
  DLTensor tensor{};
  // Who frees the memory: our aligned buffer, the producer's managed tensor, or (for view())
  // another container.
  union {
    void* buffer;
    DLManagedTensor* legacy;
    DLManagedTensorVersioned* versioned;
    Container* base;
  } source{nullptr};
  // shape then strides: inline for the usual ranks, so a whole import is one allocation.
  int64_t inline_dims[2 * kInlineDims];
  std::unique_ptr<int64_t[]> heap_dims;
};

inline const NDArray::Container& NDArray::container() const {
  if (c_ == nullptr) throw_undefined();
  return *c_;
}
inline const DLTensor& NDArray::dl_tensor() const { return container().tensor; }
inline void* NDArray::data() const { return container().tensor.data; }
inline int NDArray::ndim() const { return container().tensor.ndim; }
inline int64_t NDArray::shape(int axis) const { return container().tensor.shape[axis]; }
inline int64_t NDArray::stride(int axis) const { return container().tensor.strides[axis]; }
inline DLDevice NDArray::device() const { return container().tensor.device; }
inline int64_t NDArray::size() const { return container().size; }
inline int64_t NDArray::nbytes() const { return container().size * dtype().bytes(); }
inline bool NDArray::read_only() const { return container().read_only; }
inline bool NDArray::is_compact() const { return container().compact; }
inline int NDArray::use_count() const { return container().refs.load(std::memory_order_relaxed); }

}  // namespace ptb
