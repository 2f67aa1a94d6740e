#include "runtime/ndarray.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "runtime/dlpack.h"
#include "support/error.h"

namespace ptb {

namespace {

std::string shape_str(const int64_t* shape, int ndim) {
  std::string out = "(";
  for (int i = 0; i < ndim; ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + (ndim == 1 ? ",)" : ")");
}

DLDataType to_dl(DataType dtype) {
  return DLDataType{static_cast<uint8_t>(dtype.code()), static_cast<uint8_t>(dtype.bits()),
                    static_cast<uint16_t>(dtype.lanes())};
}

// Compact row-major strides. Only an empty array can have an extent product that overflows, and
// its strides are never used to address anything, so wrapping there is harmless.
void fill_compact_strides(const int64_t* shape, int ndim, int64_t* strides) {
  int64_t stride = 1;
  for (int i = ndim - 1; i >= 0; --i) {
    strides[i] = stride;
    (void)__builtin_mul_overflow(stride, std::max<int64_t>(shape[i], 1), &stride);
  }
}

// Row-major compactness ignoring extent-1 axes, the definition PyTorch uses.
bool compute_compact(const DLTensor& t, int64_t size) {
  if (size == 0) return true;
  int64_t expected = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

// Copies one strided array into another of the same shape, `axis` onwards. Byte strides.
void strided_copy(char* dst, const int64_t* dst_strides, const char* src,
                  const int64_t* src_strides, const int64_t* shape, int ndim, int axis,
                  int64_t itemsize) {
  const int64_t n = shape[axis];
  const int64_t ds = dst_strides[axis], ss = src_strides[axis];
  if (axis + 1 < ndim) {
    for (int64_t i = 0; i < n; ++i) {
      strided_copy(dst + i * ds, dst_strides, src + i * ss, src_strides, shape, ndim, axis + 1,
                   itemsize);
    }
    return;
  }
  if (ds == itemsize && ss == itemsize) {
    std::memcpy(dst, src, static_cast<size_t>(n * itemsize));
    return;
  }
  // Constant-size memcpy compiles to one load and one store per element.
  switch (itemsize) {
    case 1:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds, src + i * ss, 1);
      break;
    case 2:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds, src + i * ss, 2);
      break;
    case 4:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds, src + i * ss, 4);
      break;
    default:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(dst + i * ds, src + i * ss, static_cast<size_t>(itemsize));
      }
  }
}

}  // namespace

// ---- Container ----------------------------------------------------------------------------------

NDArray::Container::Container(int ndim) {
  int64_t* dims = inline_dims;
  if (ndim > kInlineDims) {
    heap_dims.reset(new int64_t[2 * static_cast<size_t>(ndim)]);
    dims = heap_dims.get();
  }
  tensor.ndim = ndim;
  tensor.shape = dims;
  tensor.strides = dims + ndim;
}

NDArray::Container::~Container() {
  switch (owner) {
    case Owner::kSelf:
      std::free(source.buffer);
      break;
    case Owner::kLegacy:
      if (source.legacy && source.legacy->deleter) source.legacy->deleter(source.legacy);
      break;
    case Owner::kVersioned:
      if (source.versioned && source.versioned->deleter) {
        source.versioned->deleter(source.versioned);
      }
      break;
    case Owner::kView:
      NDArray::release(source.base);
      break;
  }
}

void NDArray::release(Container* c) noexcept {
  // acq_rel: every write made through other handles happens-before the deleter runs.
  if (c && c->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete c;
}

void NDArray::throw_undefined() {
  internal_error(__FILE__, __LINE__, "use of an undefined NDArray handle");
}

// ---- Handle -------------------------------------------------------------------------------------

NDArray::NDArray(const NDArray& other) noexcept : c_(other.c_) {
  if (c_) c_->refs.fetch_add(1, std::memory_order_relaxed);
}

NDArray& NDArray::operator=(const NDArray& other) noexcept {
  if (other.c_) other.c_->refs.fetch_add(1, std::memory_order_relaxed);
  release(std::exchange(c_, other.c_));
  return *this;
}

NDArray& NDArray::operator=(NDArray&& other) noexcept {
  if (this != &other) release(std::exchange(c_, std::exchange(other.c_, nullptr)));
  return *this;
}

NDArray::~NDArray() { release(c_); }

NDArray NDArray::empty(const std::vector<int64_t>& shape, DataType dtype) {
  const int ndim = static_cast<int>(shape.size());
  if (!is_supported_dtype(to_dl(dtype))) {
    type_error(
        "empty: unsupported dtype ", dtype.str(),
        "; expected one of bool, int8, int16, "
        "int32, int64, uint8, uint16, uint32, uint64, float16, bfloat16, float32 or float64");
  }
  int64_t size = 1;
  bool overflow = false;
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0) {
      value_error("empty: shape ", shape_str(shape.data(), ndim), " has negative extent ", shape[i],
                  " in dimension ", i, "; extents must be >= 0");
    }
    overflow = overflow || __builtin_mul_overflow(size, shape[i], &size);
  }
  int64_t nbytes = 0;
  const bool is_empty = std::find(shape.begin(), shape.end(), 0) != shape.end();
  if (is_empty) {
    size = 0;
  } else if (overflow || __builtin_mul_overflow(size, int64_t{dtype.bytes()}, &nbytes) ||
             nbytes > INT64_MAX - int64_t{kAlignment}) {
    value_error("empty: shape ", shape_str(shape.data(), ndim), " of ", dtype.str(),
                " is too large to allocate");
  }
  // aligned_alloc wants a multiple of the alignment; an empty array still gets a real, aligned
  // pointer because some consumers treat NULL data as an error.
  const size_t alloc = std::max<size_t>(
      kAlignment, (static_cast<size_t>(nbytes) + kAlignment - 1) / kAlignment * kAlignment);
  void* buffer = std::aligned_alloc(kAlignment, alloc);
  if (buffer == nullptr) throw std::bad_alloc();

  Container* c;
  try {
    c = new Container(ndim);
  } catch (...) {
    std::free(buffer);
    throw;
  }
  c->owner = Container::Owner::kSelf;
  c->source.buffer = buffer;
  DLTensor& t = c->tensor;
  t.data = buffer;
  t.device = DLDevice{kDLCPU, 0};
  t.dtype = to_dl(dtype);
  t.byte_offset = 0;
  std::copy(shape.begin(), shape.end(), t.shape);
  fill_compact_strides(t.shape, ndim, t.strides);
  c->size = size;
  c->compact = true;
  return NDArray(c);
}

template <typename Managed>
NDArray NDArray::adopt_managed(Managed* managed, bool read_only, const std::string& what) {
  constexpr Container::Owner owner = std::is_same<Managed, DLManagedTensor>::value
                                         ? Container::Owner::kLegacy
                                         : Container::Owner::kVersioned;
  Container* c = nullptr;
  try {
    const DLTensor& src = managed->dl_tensor;
    check_dltensor(src, what);
    c = new Container(src.ndim);
  } catch (...) {
    // Ownership passed to us with the call: the producer's memory must not leak on rejection.
    if (managed->deleter) managed->deleter(managed);
    throw;
  }
  c->owner = owner;
  if constexpr (owner == Container::Owner::kLegacy) {
    c->source.legacy = managed;
  } else {
    c->source.versioned = managed;
  }
  const DLTensor& src = managed->dl_tensor;
  DLTensor& t = c->tensor;
  t.device = src.device;
  t.dtype = src.dtype;
  // Host memory: folding the offset into the pointer is exact and spares every consumer the
  // addition (many forget it).
  t.data = src.byte_offset ? static_cast<char*>(src.data) + src.byte_offset : src.data;
  t.byte_offset = 0;
  std::copy(src.shape, src.shape + src.ndim, t.shape);
  // check_dltensor has verified that the product of a non-empty shape fits.
  int64_t size = 1;
  for (int i = 0; i < src.ndim; ++i) (void)__builtin_mul_overflow(size, src.shape[i], &size);
  if (std::find(src.shape, src.shape + src.ndim, 0) != src.shape + src.ndim) size = 0;
  if (src.strides != nullptr) {
    std::copy(src.strides, src.strides + src.ndim, t.strides);
  } else {
    fill_compact_strides(t.shape, src.ndim, t.strides);
  }
  c->size = size;
  c->compact = compute_compact(t, size);
  c->read_only = read_only;
  return NDArray(c);
}

NDArray NDArray::adopt(DLManagedTensor* managed, const std::string& what) {
  PTB_ICHECK(managed != nullptr, "adopt of a NULL DLManagedTensor");
  return adopt_managed(managed, /*read_only=*/false, what);
}

NDArray NDArray::adopt(DLManagedTensorVersioned* managed, const std::string& what) {
  PTB_ICHECK(managed != nullptr, "adopt of a NULL DLManagedTensorVersioned");
  try {
    check_dlpack_version(managed->version, what);
  } catch (...) {
    // The specification keeps the deleter's place stable across major versions for this case.
    if (managed->deleter) managed->deleter(managed);
    throw;
  }
  return adopt_managed(managed, (managed->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0, what);
}

// ---- Queries ------------------------------------------------------------------------------------

std::vector<int64_t> NDArray::shape() const {
  const DLTensor& t = container().tensor;
  return std::vector<int64_t>(t.shape, t.shape + t.ndim);
}

std::vector<int64_t> NDArray::strides() const {
  const DLTensor& t = container().tensor;
  return std::vector<int64_t>(t.strides, t.strides + t.ndim);
}

DataType NDArray::dtype() const {
  const DLDataType& d = container().tensor.dtype;
  return DataType(static_cast<DataType::Code>(d.code), d.bits, d.lanes);
}

std::pair<const char*, const char*> NDArray::byte_span() const {
  const Container& c = container();
  const char* base = static_cast<const char*>(c.tensor.data);
  if (c.size == 0) return {base, base};
  const int64_t itemsize = dtype().bytes();
  int64_t lo = 0, hi = 0;  // element offsets of the extreme elements
  for (int i = 0; i < c.tensor.ndim; ++i) {
    const int64_t reach = (c.tensor.shape[i] - 1) * c.tensor.strides[i];
    (reach < 0 ? lo : hi) += reach;
  }
  return {base + lo * itemsize, base + (hi + 1) * itemsize};
}

bool NDArray::overlaps(const NDArray& other) const {
  auto a = byte_span(), b = other.byte_span();
  return a.first < a.second && b.first < b.second && a.first < b.second && b.first < a.second;
}

// ---- Copies and views ---------------------------------------------------------------------------

NDArray NDArray::copy() const {
  NDArray out = empty(shape(), dtype());
  out.copy_from(*this);
  return out;
}

void NDArray::copy_from(const NDArray& src) const {
  const Container& d = container();
  const Container& s = src.container();
  if (d.read_only) value_error("copy_from: the destination array is read-only");
  if (dtype() != src.dtype()) {
    type_error("copy_from: dtype mismatch: the destination is ", dtype().str(), ", the source is ",
               src.dtype().str());
  }
  const DLTensor &dt = d.tensor, &st = s.tensor;
  if (dt.ndim != st.ndim || !std::equal(dt.shape, dt.shape + dt.ndim, st.shape)) {
    value_error("copy_from: shape mismatch: the destination has shape ",
                shape_str(dt.shape, dt.ndim), ", the source ", shape_str(st.shape, st.ndim));
  }
  if (d.size == 0) return;
  if (dt.data == st.data && std::equal(dt.strides, dt.strides + dt.ndim, st.strides)) return;
  if (overlaps(src)) {
    // An element-wise copy could read what it has just written; go through fresh memory.
    copy_from(src.copy());
    return;
  }
  const int64_t itemsize = dtype().bytes();
  if (d.compact && s.compact) {  // includes every 0-d array
    std::memcpy(dt.data, st.data, static_cast<size_t>(d.size * itemsize));
    return;
  }
  std::vector<int64_t> byte_strides(2 * static_cast<size_t>(dt.ndim));
  for (int i = 0; i < dt.ndim; ++i) {
    byte_strides[i] = dt.strides[i] * itemsize;
    byte_strides[dt.ndim + i] = st.strides[i] * itemsize;
  }
  strided_copy(static_cast<char*>(dt.data), byte_strides.data(), static_cast<const char*>(st.data),
               byte_strides.data() + dt.ndim, dt.shape, dt.ndim, 0, itemsize);
}

NDArray NDArray::view(DataType dtype, bool read_only) const {
  const Container& src = container();
  if (!is_supported_dtype(to_dl(dtype))) {
    type_error("view: unsupported dtype ", dtype.str());
  }
  if (dtype.bytes() != this->dtype().bytes()) {
    type_error("view: cannot view ", this->dtype().str(), " elements as ", dtype.str(),
               ": the element sizes differ (", this->dtype().bytes(), " vs ", dtype.bytes(),
               " bytes)");
  }
  Container* c = new Container(src.tensor.ndim);
  const int ndim = src.tensor.ndim;
  std::copy(src.tensor.shape, src.tensor.shape + ndim, c->tensor.shape);
  std::copy(src.tensor.strides, src.tensor.strides + ndim, c->tensor.strides);
  c->tensor.data = src.tensor.data;
  c->tensor.device = src.tensor.device;
  c->tensor.dtype = to_dl(dtype);
  c->size = src.size;
  c->compact = src.compact;
  c->read_only = src.read_only || read_only;
  c->owner = Container::Owner::kView;
  c->source.base = c_;
  c_->refs.fetch_add(1, std::memory_order_relaxed);
  return NDArray(c);
}

// ---- Export -------------------------------------------------------------------------------------

DLManagedTensorVersioned* NDArray::to_dlpack_versioned() const {
  const Container& c = container();
  auto* m = new DLManagedTensorVersioned{};
  m->version = DLPackVersion{kDLPackMajor, kDLPackMinor};
  m->manager_ctx = c_;
  m->deleter = [](DLManagedTensorVersioned* self) {
    Container* owner = static_cast<Container*>(self->manager_ctx);
    delete self;
    release(owner);
  };
  m->flags = c.read_only ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
  m->dl_tensor = c.tensor;
  c_->refs.fetch_add(1, std::memory_order_relaxed);
  return m;
}

DLManagedTensor* NDArray::to_dlpack() const {
  const Container& c = container();
  auto* m = new DLManagedTensor{};
  m->manager_ctx = c_;
  m->deleter = [](DLManagedTensor* self) {
    Container* owner = static_cast<Container*>(self->manager_ctx);
    delete self;
    release(owner);
  };
  m->dl_tensor = c.tensor;
  c_->refs.fetch_add(1, std::memory_order_relaxed);
  return m;
}

}  // namespace ptb
