// Packed functions: the registry and ptb_call_packed's decoding of the kernel's argument
// description, and how a failing function's exception is kept for the caller.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/backend_api.h"
#include "runtime/packed_func.h"
#include "support/error.h"
#include "test_fork_util.h"

namespace ptb {
namespace {

TEST(PackedFunc, DecodesTensorsAndScalars) {
  std::vector<PackedArg> seen;
  std::vector<int64_t> shape, strides;
  register_packed_func(
      "test.decode",
      [&](const std::vector<PackedArg>& args) {
        seen = args;
        const DLTensor& t = *args[0].tensor;
        shape.assign(t.shape, t.shape + t.ndim);
        strides.assign(t.strides, t.strides + t.ndim);
        static_cast<float*>(t.data)[5] = 42.0f;
      },
      /*override=*/true);
  float buf[6] = {};
  double half = 0.5;
  int64_t half_bits;
  std::memcpy(&half_bits, &half, sizeof half);
  // A 2x3 float32 tensor, the integer -7 and the float 0.5.
  std::vector<int64_t> meta = {0, kDLFloat, 32, 1, 2, 2, 3, 3, 1, 1, -7, 2, half_bits};
  void* data[3] = {buf, nullptr, nullptr};
  ASSERT_EQ(ptb_call_packed("test.decode", 3, data, meta.data()), 0);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].kind, PackedArg::Kind::kTensor);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(strides, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(buf[5], 42.0f);
  EXPECT_EQ(seen[1].kind, PackedArg::Kind::kInt);
  EXPECT_EQ(seen[1].i, -7);
  EXPECT_EQ(seen[2].kind, PackedArg::Kind::kFloat);
  EXPECT_EQ(seen[2].f, 0.5);
  EXPECT_TRUE(remove_packed_func("test.decode"));
  EXPECT_FALSE(remove_packed_func("test.decode"));
}

TEST(PackedFunc, FailuresAreKeptForTheCaller) {
  register_packed_func(
      "test.throws", [](const std::vector<PackedArg>&) { throw std::runtime_error("boom"); },
      /*override=*/true);
  EXPECT_EQ(ptb_call_packed("test.throws", 0, nullptr, nullptr), PTB_ERROR_PACKED_CALL);
  std::exception_ptr e = take_packed_call_error();
  ASSERT_TRUE(e);
  EXPECT_THROW(std::rethrow_exception(e), std::runtime_error);
  EXPECT_FALSE(take_packed_call_error());  // taken once

  EXPECT_EQ(ptb_call_packed("test.nobody", 0, nullptr, nullptr), PTB_ERROR_PACKED_CALL);
  EXPECT_THROW(std::rethrow_exception(take_packed_call_error()), UserError);
  remove_packed_func("test.throws");
}

TEST(PackedFunc, NamesAreUniqueUnlessOverridden) {
  auto nop = [](const std::vector<PackedArg>&) {};
  register_packed_func("test.unique", nop, false);
  EXPECT_THROW(register_packed_func("test.unique", nop, false), UserError);
  register_packed_func("test.unique", nop, true);
  auto names = packed_func_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "test.unique"), names.end());
  remove_packed_func("test.unique");
}

TEST(PackedFunc, AChildForkedDuringALookupKeepsTheRegistry) {
  // fork() while another thread holds the registry's lock: the child must neither wait on it
  // forever nor lose the registrations.
  auto nop = [](const std::vector<PackedArg>&) {};
  register_packed_func("test.fork", nop, true);
  std::atomic<bool> stop{false};
  std::thread user([&] {
    while (!stop.load()) find_packed_func("test.fork");
  });
  int hung_or_failed =
      forked_children_failing(100, [] { return find_packed_func("test.fork") ? 0 : 1; });
  stop = true;
  user.join();
  EXPECT_EQ(hung_or_failed, 0);
  remove_packed_func("test.fork");
}

}  // namespace
}  // namespace ptb
