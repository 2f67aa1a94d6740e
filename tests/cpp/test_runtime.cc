// NDArray ownership (every producer deleter runs exactly once), import validation, layout
// queries, copies and DLPack export.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/dlpack.h"
#include "runtime/ndarray.h"
#include "support/error.h"

namespace ptb {
namespace {

// A producer: owns its data, shape and strides, and counts deleter calls in a counter that the
// test owns (so the count outlives the tensor).
struct Producer {
  std::vector<float> data;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int* deleted;
};

template <typename Managed>
Managed* make_managed(std::vector<float> data, std::vector<int64_t> shape,
                      std::vector<int64_t> strides, int* deleted) {
  auto* p = new Producer{std::move(data), std::move(shape), std::move(strides), deleted};
  auto* m = new Managed{};
  m->manager_ctx = p;
  m->deleter = [](Managed* self) {
    auto* owner = static_cast<Producer*>(self->manager_ctx);
    ++*owner->deleted;
    delete owner;
    delete self;
  };
  DLTensor& t = m->dl_tensor;
  t.data = p->data.data();
  t.device = DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int>(p->shape.size());
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.shape = p->shape.data();
  t.strides = p->strides.empty() ? nullptr : p->strides.data();
  t.byte_offset = 0;
  return m;
}

DLManagedTensor* legacy(std::vector<int64_t> shape, int* deleted,
                        std::vector<int64_t> strides = {}) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  std::vector<float> data(static_cast<size_t>(n > 0 ? n : 0));
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i);
  return make_managed<DLManagedTensor>(std::move(data), std::move(shape), std::move(strides),
                                       deleted);
}

DLManagedTensorVersioned* versioned(std::vector<int64_t> shape, int* deleted, uint64_t flags = 0) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  std::vector<float> data(static_cast<size_t>(n), 1.5f);
  auto* m = make_managed<DLManagedTensorVersioned>(std::move(data), std::move(shape), {}, deleted);
  m->version = DLPackVersion{1, 0};
  m->flags = flags;
  return m;
}

// Runs `f`, expecting a UserError of `kind` whose message contains every fragment.
template <typename F>
void expect_user_error(F&& f, ErrorKind kind, std::vector<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const std::string& frag : fragments) {
      EXPECT_NE(std::string(e.what()).find(frag), std::string::npos)
          << "'" << frag << "' not in: " << e.what();
    }
  }
}

TEST(NDArray, EmptyIsAlignedCompactAndOwned) {
  NDArray a = NDArray::empty({2, 3, 4}, DataType::Float(32));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % NDArray::kAlignment, 0u);
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(a.strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(a.size(), 24);
  EXPECT_EQ(a.nbytes(), 96);
  EXPECT_EQ(a.dtype(), DataType::Float(32));
  EXPECT_TRUE(a.is_compact());
  EXPECT_FALSE(a.read_only());
  EXPECT_EQ(a.device().device_type, kDLCPU);
  EXPECT_EQ(a.dl_tensor().byte_offset, 0u);
  // Every byte is writable.
  std::memset(a.data(), 0xab, static_cast<size_t>(a.nbytes()));
}

TEST(NDArray, EmptyZeroSizeAndScalar) {
  NDArray z = NDArray::empty({0, 5}, DataType::Int(64));
  EXPECT_EQ(z.size(), 0);
  EXPECT_NE(z.data(), nullptr);
  EXPECT_TRUE(z.is_compact());
  NDArray s = NDArray::empty({}, DataType::Bool());
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.size(), 1);
  EXPECT_EQ(s.nbytes(), 1);
}

TEST(NDArray, EmptyRejectsNegativeExtentsAndBadDtypes) {
  expect_user_error([] { NDArray::empty({2, -1}, DataType::Float(32)); }, ErrorKind::kValue,
                    {"(2, -1)", "-1", "dimension 1"});
  expect_user_error([] { NDArray::empty({2}, DataType::Handle()); }, ErrorKind::kType, {"handle"});
  expect_user_error([] { NDArray::empty({2}, DataType::Float(32, 4)); }, ErrorKind::kType,
                    {"float32x4"});
  expect_user_error([] { NDArray::empty({INT64_MAX / 2, 4}, DataType::Float(64)); },
                    ErrorKind::kValue, {"too large"});
}

TEST(NDArray, AdoptedLegacyDeleterRunsOnceWhenLastHandleDies) {
  int deleted = 0;
  {
    NDArray a = NDArray::adopt(legacy({2, 3}, &deleted));
    NDArray b = a;             // copy
    NDArray c = std::move(b);  // move: no extra reference
    EXPECT_EQ(a.use_count(), 2);
    EXPECT_TRUE(a.same_as(c));
    a = NDArray();
    EXPECT_EQ(deleted, 0);
    EXPECT_EQ(c.use_count(), 1);
    EXPECT_EQ(static_cast<float*>(c.data())[5], 5.0f);
  }
  EXPECT_EQ(deleted, 1);
}

TEST(NDArray, NullStridesAreMaterialisedAsCompact) {
  int deleted = 0;
  NDArray a = NDArray::adopt(legacy({2, 3, 4}, &deleted));
  EXPECT_NE(a.dl_tensor().strides, nullptr);
  EXPECT_EQ(a.strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_TRUE(a.is_compact());
}

TEST(NDArray, ByteOffsetIsFoldedIntoData) {
  int deleted = 0;
  DLManagedTensor* m = legacy({4}, &deleted);
  // Producer describes elements 1..2 of its buffer through byte_offset.
  m->dl_tensor.shape[0] = 2;
  m->dl_tensor.byte_offset = sizeof(float);
  float* base = static_cast<float*>(m->dl_tensor.data);
  NDArray a = NDArray::adopt(m);
  EXPECT_EQ(a.data(), base + 1);
  EXPECT_EQ(a.dl_tensor().byte_offset, 0u);
  EXPECT_EQ(static_cast<float*>(a.data())[0], 1.0f);
}

TEST(NDArray, VersionedReadOnlyFlagAndDeleter) {
  int deleted = 0;
  {
    NDArray a = NDArray::adopt(versioned({3}, &deleted, DLPACK_FLAG_BITMASK_READ_ONLY));
    EXPECT_TRUE(a.read_only());
    NDArray b = NDArray::adopt(versioned({3}, &deleted));
    EXPECT_FALSE(b.read_only());
  }
  EXPECT_EQ(deleted, 2);
}

TEST(NDArray, RejectedImportsStillCallTheDeleterOnce) {
  int deleted = 0;
  auto with = [&](auto mutate, ErrorKind kind, std::vector<std::string> fragments) {
    DLManagedTensor* m = legacy({2, 2}, &deleted);
    mutate(m->dl_tensor);
    expect_user_error([&] { NDArray::adopt(m, "argument 2 ('Y')"); }, kind, fragments);
  };
  with([](DLTensor& t) { t.dtype = DLDataType{kDLComplex, 64, 1}; }, ErrorKind::kType,
       {"argument 2 ('Y')", "complex64", "float32"});
  with([](DLTensor& t) { t.dtype = DLDataType{10, 8, 1}; }, ErrorKind::kType, {"float8_e4m3fn"});
  with([](DLTensor& t) { t.dtype = DLDataType{kDLOpaqueHandle, 64, 1}; }, ErrorKind::kType,
       {"opaque_handle64"});
  with([](DLTensor& t) { t.dtype = DLDataType{kDLFloat, 32, 4}; }, ErrorKind::kType, {"float32x4"});
  with([](DLTensor& t) { t.dtype = DLDataType{kDLBoolCode, 1, 1}; }, ErrorKind::kType, {"bool1"});
  with([](DLTensor& t) { t.device = DLDevice{kDLCUDA, 0}; }, ErrorKind::kValue,
       {"argument 2 ('Y')", "cuda:0"});
  with([](DLTensor& t) { t.device = DLDevice{kDLROCM, 3}; }, ErrorKind::kValue, {"rocm:3"});
  with([](DLTensor& t) { t.shape[1] = -2; }, ErrorKind::kValue, {"negative", "-2"});
  with([](DLTensor& t) { t.data = nullptr; }, ErrorKind::kValue, {"NULL data"});
  with([](DLTensor& t) { t.ndim = -1; }, ErrorKind::kValue, {"ndim -1"});
  EXPECT_EQ(deleted, 10);

  DLManagedTensorVersioned* v = versioned({2}, &deleted);
  v->version = DLPackVersion{2, 0};
  expect_user_error([&] { NDArray::adopt(v, "argument 1 ('A')"); }, ErrorKind::kBuffer,
                    {"argument 1 ('A')", "version 2.0"});
  EXPECT_EQ(deleted, 11);
}

TEST(NDArray, AcceptsEverySupportedDtypeAndHostDevice) {
  const DLDataType ok[] = {{kDLBoolCode, 8, 1}, {kDLInt, 8, 1},    {kDLInt, 64, 1},
                           {kDLUInt, 16, 1},    {kDLFloat, 16, 1}, {kDLBfloat, 16, 1},
                           {kDLFloat, 64, 1}};
  int deleted = 0;
  for (DLDataType dt : ok) {
    DLManagedTensor* m = legacy({2}, &deleted);
    m->dl_tensor.dtype = dt;
    m->dl_tensor.device = DLDevice{kDLCUDAHost, 0};
    NDArray a = NDArray::adopt(m);
    EXPECT_EQ(a.dtype().code(), dt.code);
    EXPECT_EQ(a.dtype().bits(), dt.bits);
  }
  EXPECT_EQ(deleted, 7);
  EXPECT_EQ(dl_dtype_name(DLDataType{kDLBoolCode, 8, 1}), "bool");
  EXPECT_EQ(dl_device_name(DLDevice{kDLCPU, 0}), "cpu");
  EXPECT_EQ(dl_device_name(DLDevice{kDLCUDAHost, 1}), "cuda_host:1");
}

TEST(NDArray, EmptyImportsMayHaveNullDataAndHugeExtents) {
  int deleted = 0;
  DLManagedTensor* m = legacy({0, 3}, &deleted);
  m->dl_tensor.data = nullptr;
  NDArray a = NDArray::adopt(m);
  EXPECT_EQ(a.size(), 0);
  EXPECT_TRUE(a.is_compact());
  a = NDArray();
  EXPECT_EQ(deleted, 1);

  DLManagedTensor* big = legacy({0, 2}, &deleted);
  int64_t shape[3] = {INT64_MAX / 2, 4, 3};
  big->dl_tensor.shape = shape;  // overflow-sized but not empty: rejected
  big->dl_tensor.ndim = 3;
  expect_user_error([&] { NDArray::adopt(big); }, ErrorKind::kValue, {"overflows"});
  EXPECT_EQ(deleted, 2);
}

TEST(NDArray, CompactnessFollowsStrides) {
  int deleted = 0;
  NDArray t = NDArray::adopt(legacy({3, 2}, &deleted, {1, 3}));  // a transpose
  EXPECT_FALSE(t.is_compact());
  NDArray ones = NDArray::adopt(legacy({1, 4, 1}, &deleted, {99, 1, 7}));  // extent-1 axes
  EXPECT_TRUE(ones.is_compact());
  NDArray gap = NDArray::adopt(legacy({2, 2}, &deleted, {4, 1}));
  EXPECT_FALSE(gap.is_compact());
}

TEST(NDArray, CopyOfAStridedViewIsCompactWithTheSameValues) {
  int deleted = 0;
  // Transpose of a 2x3 buffer holding 0..5: element (i, j) is data[j * 3 + i].
  NDArray t = NDArray::adopt(legacy({3, 2}, &deleted, {1, 3}));
  NDArray c = t.copy();
  EXPECT_TRUE(c.is_compact());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c.data()) % 64, 0u);
  const float* v = static_cast<const float*>(c.data());
  const float expected[] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(v[i], expected[i]) << i;
  // And back into a strided destination.
  NDArray dst = NDArray::adopt(legacy({3, 2}, &deleted, {1, 3}));
  NDArray src = NDArray::empty({3, 2}, DataType::Float(32));
  for (int i = 0; i < 6; ++i) static_cast<float*>(src.data())[i] = 10.0f + i;
  dst.copy_from(src);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(static_cast<float*>(dst.data())[j * 3 + i], 10.0f + i * 2 + j);
    }
  }
}

TEST(NDArray, CopyFromHandlesOverlapAndRejectsMismatches) {
  int deleted = 0;
  NDArray whole = NDArray::adopt(legacy({6}, &deleted));  // 0..5
  // Two overlapping windows of the same buffer: [0..4) and [1..5).
  // adopt() copies the shape, so it may live on the stack.
  int64_t four[1] = {4};
  DLManagedTensor* lo_m = whole.to_dlpack();
  lo_m->dl_tensor.shape = four;
  NDArray lo = NDArray::adopt(lo_m);
  DLManagedTensor* hi_m = whole.to_dlpack();
  hi_m->dl_tensor.shape = four;
  hi_m->dl_tensor.byte_offset = sizeof(float);
  NDArray hi = NDArray::adopt(hi_m);
  EXPECT_TRUE(lo.overlaps(hi));
  hi.copy_from(lo);  // a naive forward copy would smear element 0 everywhere
  const float* v = static_cast<const float*>(whole.data());
  const float expected[] = {0, 0, 1, 2, 3, 5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(v[i], expected[i]) << i;
  lo = NDArray();
  hi = NDArray();
  EXPECT_EQ(whole.use_count(), 1);

  NDArray f = NDArray::empty({2}, DataType::Float(32));
  expect_user_error([&] { f.copy_from(NDArray::empty({3}, DataType::Float(32))); },
                    ErrorKind::kValue, {"shape mismatch", "(2,)", "(3,)"});
  expect_user_error([&] { f.copy_from(NDArray::empty({2}, DataType::Int(32))); }, ErrorKind::kType,
                    {"float32", "int32"});
  NDArray ro = NDArray::adopt(versioned({2}, &deleted, DLPACK_FLAG_BITMASK_READ_ONLY));
  expect_user_error([&] { ro.copy_from(f); }, ErrorKind::kValue, {"read-only"});
  NDArray c = ro.copy();
  EXPECT_FALSE(c.read_only());
  EXPECT_EQ(static_cast<float*>(c.data())[1], 1.5f);
}

TEST(NDArray, ByteSpanAccountsForNegativeStrides) {
  NDArray a = NDArray::empty({4}, DataType::Int(32));
  auto span = a.byte_span();
  EXPECT_EQ(span.second - span.first, 16);
  int deleted = 0;
  DLManagedTensor* m = legacy({4}, &deleted, {-1});
  m->dl_tensor.byte_offset = 3 * sizeof(float);  // a reversed view starting at the last element
  const char* base = static_cast<const char*>(m->dl_tensor.data);
  NDArray r = NDArray::adopt(m);
  EXPECT_EQ(static_cast<float*>(r.data())[0], 3.0f);
  auto rs = r.byte_span();
  EXPECT_EQ(rs.first, base);
  EXPECT_EQ(rs.second, base + 16);
  EXPECT_FALSE(a.overlaps(r));
  EXPECT_TRUE(r.overlaps(r));
  EXPECT_FALSE(NDArray::empty({0}, DataType::Int(8)).overlaps(a));
  NDArray rc = r.copy();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(static_cast<float*>(rc.data())[i], 3.0f - i);
}

TEST(NDArray, ViewReinterpretsAndKeepsTheBaseAlive) {
  int deleted = 0;
  NDArray v;
  {
    NDArray a = NDArray::adopt(legacy({2}, &deleted));
    v = a.view(DataType::Int(32));
  }
  EXPECT_EQ(deleted, 0);
  EXPECT_EQ(v.dtype(), DataType::Int(32));
  float one = 1.0f;
  int32_t bits;
  std::memcpy(&bits, &one, 4);
  EXPECT_EQ(static_cast<int32_t*>(v.data())[1], bits);
  expect_user_error([&] { v.view(DataType::Float(64)); }, ErrorKind::kType, {"element sizes"});
  v = NDArray();
  EXPECT_EQ(deleted, 1);
}

TEST(NDArray, ExportsKeepTheArrayAliveUntilTheirDeleter) {
  int deleted = 0;
  DLManagedTensorVersioned* out;
  DLManagedTensor* out_legacy;
  {
    NDArray a = NDArray::adopt(versioned({2, 2}, &deleted, DLPACK_FLAG_BITMASK_READ_ONLY));
    out = a.to_dlpack_versioned();
    out_legacy = a.to_dlpack();
    EXPECT_EQ(a.use_count(), 3);
  }
  EXPECT_EQ(deleted, 0);
  EXPECT_EQ(out->version.major, 1u);
  EXPECT_EQ(out->version.minor, 0u);
  EXPECT_TRUE(out->flags & DLPACK_FLAG_BITMASK_READ_ONLY);
  EXPECT_EQ(out->dl_tensor.shape[1], 2);
  EXPECT_EQ(out->dl_tensor.strides[0], 2);
  EXPECT_EQ(static_cast<float*>(out->dl_tensor.data)[3], 1.5f);
  // Re-importing our own export works and holds its own reference.
  NDArray again = NDArray::adopt(out);
  EXPECT_TRUE(again.read_only());
  out_legacy->deleter(out_legacy);
  EXPECT_EQ(deleted, 0);
  again = NDArray();
  EXPECT_EQ(deleted, 1);
}

TEST(NDArray, UndefinedHandleIsAnInternalErrorNotACrash) {
  NDArray a;
  EXPECT_FALSE(a.defined());
  EXPECT_THROW(a.shape(), InternalError);
  EXPECT_THROW(a.to_dlpack(), InternalError);
}

}  // namespace
}  // namespace ptb
