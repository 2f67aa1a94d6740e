// Interval arithmetic of bound inference: exact cancellation of affine forms, floor division and
// modulo of ranges, and constant bounds that see through min/max.
#include "schedule/interval.h"
#include "test_schedule_util.h"

namespace ptb::testing {
namespace {

Expr var(const char* name) { return Var::make(kIndexType, name); }

TEST(ScheduleInterval, AffineRegionHasAConstantExtent) {
  Expr xo = var("xo"), xi = var("xi");
  VarIntervals vars{{xi.get(), Interval::of(LinearForm(0), LinearForm(31))}};
  Interval i = eval_interval(idx_add(idx_mul(xo, ci(32)), xi), vars);
  ASSERT_TRUE(i.bounded);
  LinearForm extent = i.hi - i.lo + LinearForm(1);
  ASSERT_TRUE(extent.is_constant());
  EXPECT_EQ(extent.constant(), 32);
  EXPECT_EQ(to_string(i.lo.to_expr(kIndexType)), "(xo * 32)");
}

TEST(ScheduleInterval, FloorDivAndModOfARange) {
  Expr xo = var("xo"), xi = var("xi");
  VarIntervals vars{{xi.get(), Interval::of(LinearForm(0), LinearForm(7))}};
  Expr x = idx_add(idx_mul(xo, ci(8)), xi);
  Interval d = eval_interval(floordiv(x, ci(8)), vars);
  EXPECT_TRUE((d.hi - d.lo).is_constant());
  EXPECT_EQ((d.hi - d.lo).constant(), 0);  // the whole range is in one block: xo
  Interval m = eval_interval(floormod(x, ci(8)), vars);
  EXPECT_EQ(m.lo.constant(), 0);
  EXPECT_EQ(m.hi.constant(), 7);
  Interval m4 = eval_interval(floormod(x, ci(16)), vars);  // xo * 8 mod 16 is unknown
  EXPECT_EQ(m4.lo.constant(), 0);
  EXPECT_EQ(m4.hi.constant(), 15);
}

TEST(ScheduleInterval, ConstantBoundsExpandMinAndMax) {
  Expr o = var("o");
  VarIntervals ctx{{o.get(), Interval::of(LinearForm(0), LinearForm(3))}};
  // max(3o + 2, min(3o + 4, 10)) - min(3o, 10) + 1 <= 5 although plain interval arithmetic on
  // the two sides separately gives 12.
  Expr hi = Max::make(idx_add(idx_mul(o, ci(3)), ci(2)),
                      Min::make(idx_add(idx_mul(o, ci(3)), ci(4)), ci(10)));
  Expr lo = Min::make(idx_mul(o, ci(3)), ci(10));
  LinearForm extent = LinearForm::of(hi) - LinearForm::of(lo) + LinearForm(1);
  auto ub = const_upper_bound(extent, ctx);
  ASSERT_TRUE(ub.has_value());
  EXPECT_EQ(*ub, 5);
  EXPECT_EQ(const_lower_bound(LinearForm::of(lo), ctx).value(), 0);
  // A variable without a constant range has no constant bound.
  EXPECT_FALSE(const_upper_bound(LinearForm::of(var("n")), ctx).has_value());
}

TEST(ScheduleInterval, DataDependentIndexIsUnbounded) {
  Tensor idx = placeholder({ci(8)}, DataType::Int(32), "idx");
  Expr i = var("i");
  VarIntervals vars{{i.get(), Interval::of(LinearForm(0), LinearForm(7))}};
  EXPECT_FALSE(eval_interval(idx({i}), vars).bounded);
  // ... unless it does not vary.
  EXPECT_TRUE(eval_interval(idx({ci(3)}), vars).bounded);
}

TEST(ScheduleInterval, StructuralEquality) {
  Expr x = var("x");
  EXPECT_TRUE(
      structurally_equal(floordiv(idx_add(x, ci(1)), ci(4)), floordiv(idx_add(x, ci(1)), ci(4))));
  EXPECT_FALSE(structurally_equal(floordiv(x, ci(4)), floordiv(var("x"), ci(4))));  // another x
  EXPECT_TRUE(
      (LinearForm::of(floordiv(x, ci(4))) - LinearForm::of(floordiv(x, ci(4)))).is_constant());
}

}  // namespace
}  // namespace ptb::testing
