// te/read_bounds.h: which reads are checked per call, which are proved in range at build, and
// which constant ones fail the build.
#include "te/read_bounds.h"

#include "support/error.h"
#include "test_schedule_util.h"

namespace ptb::testing {
namespace {

using Index = std::vector<Expr>;

TEST(ReadBounds, ReadsOverTheSameSizesNeedNoCheck) {
  Expr n = Var::make(kIndexType, "n");
  Tensor a = placeholder({n, ci(4)}, kF32, "a");
  Tensor b = placeholder({n, ci(4)}, kF32, "b");
  Tensor c = compute({n, ci(4)}, [&](const Index& i) { return Add::make(a(i), b(i)); }, "c");
  EXPECT_TRUE(read_bounds({a, b, c}).empty());
  // Shifted by one over one row fewer: in range for every n, too.
  Tensor d = compute(
      {Sub::make(n, ci(1)), ci(4)},
      [&](const Index& i) { return a({Add::make(i[0], ci(1)), i[1]}); }, "d");
  EXPECT_TRUE(read_bounds({a, d}).empty());
}

TEST(ReadBounds, ReadsOverOtherSizesAreCheckedPerCall) {
  Expr n = Var::make(kIndexType, "n"), m = Var::make(kIndexType, "m");
  Tensor a = placeholder({n}, kF32, "a");
  Tensor c = compute({m}, [&](const Index& i) { return a(i); }, "c");
  std::vector<ReadBound> bounds = read_bounds({a, c});
  ASSERT_EQ(bounds.size(), 1u);
  EXPECT_EQ(bounds[0].what, "compute 'c' reads 'a' in dimension 0");
  EXPECT_TRUE(bounds[0].extent.same_as(n));
  EXPECT_TRUE(is_const_int(bounds[0].lo, 0));
  ASSERT_EQ(bounds[0].loops.size(), 1u);
  EXPECT_TRUE(bounds[0].loops[0].same_as(m));
}

TEST(ReadBounds, ConstantReadsOutOfRangeFailTheBuild) {
  Tensor a = placeholder({ci(8)}, kF32, "a");
  Tensor ok = compute({ci(7)}, [&](const Index& i) { return a({Add::make(i[0], ci(1))}); }, "ok");
  EXPECT_TRUE(read_bounds({a, ok}).empty());
  Tensor past =
      compute({ci(8)}, [&](const Index& i) { return a({Add::make(i[0], ci(1))}); }, "past");
  EXPECT_THROW(read_bounds({a, past}), UserError);
}

TEST(ReadBounds, GuardedReadsAreNotChecked) {
  Tensor a = placeholder({ci(8)}, kF32, "a");
  Tensor padded = compute(
      {ci(10)},
      [&](const Index& i) {
        Expr inside = And::make(GE::make(i[0], ci(1)), LE::make(i[0], ci(8)));
        return Select::make(inside, a({Sub::make(i[0], ci(1))}), cf(0));
      },
      "padded");
  EXPECT_TRUE(read_bounds({a, padded}).empty());
}

}  // namespace
}  // namespace ptb::testing
