// Gathers that read the columns of a matrix block (codegen/transposed_groups.h): the group is
// found only where its loads form whole columns of a block and nothing in the run writes the
// source, and the transposed loads give the gathers' values.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "codegen/jit.h"
#include "codegen/target.h"
#include "codegen/transposed_groups.h"
#include "ir/expr.h"
#include "ir/op.h"
#include "ir/stmt.h"
#include "test_codegen_util.h"

namespace ptb {
namespace {

const DataType f32 = DataType::Float(32);

Expr c64(int64_t v) { return IntImm::make(kOffsetType, v); }

// dst[ramp(lanes * k, 1, lanes)] = src[ramp(start + k, stride, lanes)] for each k of `columns`,
// in that order: column k of the block whose row r starts at start + r * stride.
std::vector<Stmt> column_stores(const Buffer& src, const Buffer& dst, const Expr& start,
                                const Expr& stride, int lanes, const std::vector<int>& columns) {
  std::vector<Stmt> stores;
  for (int k : columns) {
    Expr from = Ramp::make(idx_add(start, c64(k)), stride, lanes);
    stores.push_back(
        Store::make(dst, Load::make(src, from), Ramp::make(c64(lanes * k), c64(1), lanes)));
  }
  return stores;
}

std::vector<const Store*> as_stores(const std::vector<Stmt>& stmts) {
  std::vector<const Store*> out;
  for (const Stmt& s : stmts) out.push_back(s.as<Store>());
  return out;
}

std::vector<int> range(int n) {
  std::vector<int> out(n);
  for (int i = 0; i < n; ++i) out[i] = i;
  return out;
}

TEST(TransposedGroups, WholeColumnsFormGroupsAndLeftoversStayGathers) {
  Buffer a = make_buffer("A", f32, {c64(4096)}), c = make_buffer("C", f32, {c64(4096)});
  Expr s = Var::make(kOffsetType, "s");
  // Columns 0..19 of 16-lane rows: one group of 16 (the lowest), four left over.
  auto stores = column_stores(a, c, c64(5), s, 16, range(20));
  auto groups = find_transposed_groups(as_stores(stores));
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].lanes, 16);
  ASSERT_EQ(groups[0].taps.size(), 16u);
  EXPECT_EQ(as_const_int(groups[0].base), 5);
  for (const auto& [load, column] : groups[0].taps) {
    EXPECT_EQ(load, stores[column].as<Store>()->value.as<Load>());
  }
  // A column missing: no group.
  std::vector<int> gap = range(16);
  gap.erase(gap.begin() + 7);
  EXPECT_TRUE(find_transposed_groups(as_stores(column_stores(a, c, c64(0), s, 16, gap))).empty());
  // A small constant stride has its own shuffled loads.
  EXPECT_TRUE(
      find_transposed_groups(as_stores(column_stores(a, c, c64(0), c64(2), 8, range(8)))).empty());
  // A store of the run writes the source: its rows would be read before that store.
  auto in_place = column_stores(a, a, c64(0), c64(64), 8, range(8));
  EXPECT_TRUE(find_transposed_groups(as_stores(in_place)).empty());
}

class TransposedBlock : public ::testing::TestWithParam<int> {};

TEST_P(TransposedBlock, MatchesTheGathers) {
  const int lanes = GetParam();
  const int64_t stride = 37, start = 3;
  Buffer a = make_buffer("A", f32, {c64(start + stride * lanes)});
  Buffer c = make_buffer("C", f32, {c64(lanes * lanes)});
  Expr s = Var::make(kOffsetType, "s");
  std::vector<int> columns = range(lanes);
  std::reverse(columns.begin(), columns.end());  // the last column first
  Stmt body = Block::make(column_stores(a, c, c64(start), s, lanes, columns));
  auto m = JITModule::compile({testing::lowered_func("block", {a, c}, {s}, body)},
                              Target::parse("llvm"), "test_transposed_block");
  EXPECT_EQ(m->get_source("ll").find("gather"), std::string::npos);
  std::vector<float> av(start + stride * lanes), cv(lanes * lanes, -1.0f);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i);
  void* data[] = {av.data(), cv.data()};
  int64_t scalars[] = {stride};
  ASSERT_EQ(m->lookup("block")(data, scalars), 0);
  for (int k = 0; k < lanes; ++k) {
    for (int r = 0; r < lanes; ++r) {
      EXPECT_EQ(cv[k * lanes + r], av[start + k + stride * r]) << k << " " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Lanes, TransposedBlock, ::testing::Values(4, 8, 16));

TEST(TransposedGroups, InPlaceStoresKeepTheirOrder) {
  // A[ramp(64 k, 1, 8)] = A[ramp(k, 64, 8)], k = 0..7: the 8 x 8 block at A[0] transposed one
  // column at a time, each store seeing the ones before it (row 0 is overwritten first).
  Buffer a = make_buffer("A", f32, {c64(512)});
  std::vector<Stmt> stores;
  for (int k = 0; k < 8; ++k) {
    stores.push_back(Store::make(a, Load::make(a, Ramp::make(c64(k), c64(64), 8)),
                                 Ramp::make(c64(64 * k), c64(1), 8)));
  }
  auto m = JITModule::compile({testing::lowered_func("in_place", {a}, {}, Block::make(stores))},
                              Target::parse("llvm"), "test_transposed_in_place");
  std::vector<float> av(512), expected(512);
  for (int i = 0; i < 512; ++i) av[i] = expected[i] = static_cast<float>(i);
  for (int k = 0; k < 8; ++k) {
    float column[8];
    for (int r = 0; r < 8; ++r) column[r] = expected[k + 64 * r];
    for (int r = 0; r < 8; ++r) expected[64 * k + r] = column[r];
  }
  void* data[] = {av.data()};
  ASSERT_EQ(m->lookup("in_place")(data, nullptr), 0);
  EXPECT_EQ(av, expected);
}

TEST(TransposedGroups, ASharedLoadOutsideItsRunIsLoadedAgain) {
  // The run transposes column 0 of A's 8 x 8 block into C; then a loop writes A, and a store
  // after it reuses the run's first load node (a shared subexpression): that store must read
  // A as the loop left it, not the run's transposed column.
  Buffer a = make_buffer("A", f32, {c64(512)}), c = make_buffer("C", f32, {c64(64)});
  Buffer d = make_buffer("D", f32, {c64(8)});
  std::vector<Stmt> stmts = column_stores(a, c, c64(0), c64(64), 8, range(8));
  Expr first = stmts[0].as<Store>()->value;
  Expr i = Var::make(kOffsetType, "i");
  stmts.push_back(For::make(i, c64(0), c64(512), ForKind::kSerial,
                            Store::make(a, FloatImm::make(f32, -1.0), i)));
  stmts.push_back(Store::make(d, first, Ramp::make(c64(0), c64(1), 8)));
  auto m = JITModule::compile({testing::lowered_func("shared", {a, c, d}, {}, Block::make(stmts))},
                              Target::parse("llvm"), "test_transposed_shared");
  std::vector<float> av(512), cv(64), dv(8);
  for (int i2 = 0; i2 < 512; ++i2) av[i2] = static_cast<float>(i2);
  void* data[] = {av.data(), cv.data(), dv.data()};
  ASSERT_EQ(m->lookup("shared")(data, nullptr), 0);
  for (int r = 0; r < 8; ++r) EXPECT_EQ(cv[r], static_cast<float>(64 * r)) << r;
  for (int r = 0; r < 8; ++r) EXPECT_EQ(dv[r], -1.0f) << r;
}

}  // namespace
}  // namespace ptb
