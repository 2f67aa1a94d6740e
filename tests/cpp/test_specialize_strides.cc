// The stride specialisations of a lowered function: the compact variant's strides are the
// products of the inner extents; the strided variant tests the last strides once and runs a
// copy of the body with them constant when they are all 1.
#include <string>

#include "lower/specialize_strides.h"
#include "test_schedule_util.h"

namespace ptb::testing {
namespace {

// B[i, j] = A[i, j] + 1 over (4, 16), the inner axis vectorized: with variable strides its
// loads and stores along j are ramps of stride A_stride1 / B_stride1.
LoweredFunc vector_add_one(int64_t last) {
  Tensor A = placeholder({ci(4), ci(last)}, kF32, "A");
  Tensor B = compute({ci(4), ci(last)},
                     [&](const std::vector<Expr>& i) { return Add::make(A({i[0], i[1]}), cf(1)); },
                     "B", {"i", "j"});
  Schedule s = create_schedule({B.op()});
  if (last > 1) vectorize(stage_of(s, B), axis(B, 1));
  return lower(s, {A, B}, "f");
}

bool mentions(const Stmt& s, const std::string& text) {
  return to_string(s).find(text) != std::string::npos;
}

TEST(SpecializeUnitStride, TestsTheLastStridesAndKeepsTheGeneralBody) {
  LoweredFunc generic = vector_add_one(16);
  ASSERT_TRUE(mentions(generic.body, "A_stride1"));
  LoweredFunc strided = specialize_unit_stride(generic);
  EXPECT_EQ(strided.name, generic.name);
  const auto* branch = strided.body.as<IfThenElse>();
  ASSERT_NE(branch, nullptr) << to_string(strided.body);
  std::string condition = to_string(branch->condition);
  EXPECT_NE(condition.find("A_stride1"), std::string::npos) << condition;
  EXPECT_NE(condition.find("B_stride1"), std::string::npos) << condition;
  EXPECT_EQ(condition.find("stride0"), std::string::npos) << condition;
  // The fast body: the last strides are gone, the outer ones stay variables.
  EXPECT_FALSE(mentions(branch->then_case, "A_stride1")) << to_string(branch->then_case);
  EXPECT_FALSE(mentions(branch->then_case, "B_stride1")) << to_string(branch->then_case);
  EXPECT_TRUE(mentions(branch->then_case, "A_stride0"));
  EXPECT_TRUE(mentions(branch->then_case, "ramp("));
  // Any other strides: the body as lowered.
  EXPECT_TRUE(branch->else_case.same_as(generic.body));
}

TEST(SpecializeUnitStride, LastAxisOfOneElementNeedsNoTest) {
  LoweredFunc generic = vector_add_one(1);
  LoweredFunc strided = specialize_unit_stride(generic);
  // A length-1 last axis reads index 0 whatever its stride: no branch, no last stride.
  EXPECT_EQ(strided.body.as<IfThenElse>(), nullptr) << to_string(strided.body);
  EXPECT_FALSE(mentions(strided.body, "A_stride1"));
  EXPECT_FALSE(mentions(strided.body, "B_stride1"));
}

TEST(SpecializeCompact, StridesAreInnerExtentProducts) {
  LoweredFunc compact = specialize_compact(vector_add_one(16), "f_compact");
  EXPECT_EQ(compact.name, "f_compact");
  EXPECT_FALSE(mentions(compact.body, "_stride"));
}

}  // namespace
}  // namespace ptb::testing
