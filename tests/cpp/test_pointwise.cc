// te/pointwise.h: which argument lists make a kernel pointwise (the runtime then runs its compact
// variant on arrays that share any dense layout).
#include "te/pointwise.h"

#include "test_schedule_util.h"

namespace ptb::testing {
namespace {

using Index = std::vector<Expr>;

TEST(Pointwise, ElementwiseChainWithAnIntermediateStage) {
  Tensor a = placeholder({ci(4), ci(6)}, kF32, "a");
  Tensor b = placeholder({ci(4), ci(6)}, kF32, "b");
  Tensor mid =
      compute({ci(4), ci(6)}, [&](const Index& i) { return Mul::make(a(i), b(i)); }, "mid");
  Tensor out = compute(
      {ci(4), ci(6)},
      [&](const Index& i) { return Cast::make(DataType::Float(64), Add::make(mid(i), cf(1))); },
      "out");
  EXPECT_TRUE(is_pointwise({a, b, out}));
  EXPECT_TRUE(is_pointwise({a, b, mid, out}));
}

TEST(Pointwise, SymbolicShapesOfTheSameVariable) {
  Expr n = Var::make(kIndexType, "n");
  Tensor a = placeholder({n, ci(3)}, kF32, "a");
  Tensor out = compute({n, ci(3)}, [&](const Index& i) { return Sub::make(cf(0), a(i)); }, "out");
  EXPECT_TRUE(is_pointwise({a, out}));
  Expr m = Var::make(kIndexType, "m");
  Tensor c = placeholder({m, ci(3)}, kF32, "c");
  Tensor out2 = compute({m, ci(3)}, [&](const Index& i) { return c(i); }, "out2");
  EXPECT_FALSE(is_pointwise({a, c, out2}));  // n and m may differ
}

TEST(Pointwise, OtherIndicesShapesAndValuesAreNot) {
  Tensor a = placeholder({ci(5), ci(5)}, kF32, "a");
  Tensor transposed = compute({ci(5), ci(5)}, [&](const Index& i) { return a({i[1], i[0]}); }, "t");
  EXPECT_FALSE(is_pointwise({a, transposed}));
  Tensor iota = compute(
      {ci(5), ci(5)}, [&](const Index& i) { return Add::make(a(i), Cast::make(kF32, i[1])); },
      "iota");
  EXPECT_FALSE(is_pointwise({a, iota}));
  Tensor row = placeholder({ci(5)}, kF32, "row");
  Tensor broadcast =
      compute({ci(5), ci(5)}, [&](const Index& i) { return Add::make(a(i), row({i[1]})); }, "bc");
  EXPECT_FALSE(is_pointwise({a, row, broadcast}));
  Tensor shifted = compute(
      {ci(5), ci(5)},
      [&](const Index& i) { return a({i[0], Min::make(Add::make(i[1], ci(1)), ci(4))}); }, "s");
  EXPECT_FALSE(is_pointwise({a, shifted}));
}

}  // namespace
}  // namespace ptb::testing
