// The runtime's special functions (runtime/special_math.h) against values computed with mpmath
// at 50 digits, and their edges.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "runtime/special_math.h"

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(SpecialMath, InverseErrorFunctions) {
  EXPECT_NEAR(ptb_erfinv(0.5), 0.47693627620446987338, 1e-15);
  EXPECT_NEAR(ptb_erfinv(-0.999), -2.3267537655135246, 1e-13);
  EXPECT_NEAR(ptb_erfinv(1e-10), 8.8622692545275801e-11, 1e-24);
  EXPECT_EQ(ptb_erfinv(1.0), kInf);
  EXPECT_EQ(ptb_erfinv(-1.0), -kInf);
  EXPECT_TRUE(std::isnan(ptb_erfinv(1.5)));
  EXPECT_NEAR(ptb_erfcinv(1e-20), 6.6015806223551426, 1e-13);
  EXPECT_NEAR(ptb_erfcinv(1.9), -1.1630871536766743, 1e-14);
  EXPECT_EQ(ptb_erfcinv(0.0), kInf);
  EXPECT_EQ(ptb_erfcinv(2.0), -kInf);
  EXPECT_NEAR(ptb_normcdfinv(0.975), 1.9599639845400542, 1e-14);
  EXPECT_NEAR(ptb_normcdfinv(1e-300), -37.047096299361199, 1e-11);
  EXPECT_NEAR(ptb_erfinvf(0.5f), 0.47693628f, 1e-7f);
}

TEST(SpecialMath, ScaledComplementaryErrorFunction) {
  EXPECT_NEAR(ptb_erfcx(1.0), 0.42758357615580700, 1e-15);
  EXPECT_NEAR(ptb_erfcx(30.0), 0.018795888861416751, 1e-17);
  EXPECT_NEAR(ptb_erfcx(1e10), 5.6418958354775628e-11, 1e-24);
  EXPECT_EQ(ptb_erfcx(-30.0), kInf);
}

TEST(SpecialMath, BesselAndPiTrigonometry) {
  EXPECT_NEAR(ptb_cyl_bessel_i0(2.5), 3.2898391440501231, 1e-14);
  EXPECT_NEAR(ptb_cyl_bessel_i1(-2.5), -2.5167162452886984, 1e-14);
  EXPECT_EQ(ptb_sinpi(1.0), 0.0);
  EXPECT_EQ(ptb_sinpi(-0.5), -1.0);
  EXPECT_EQ(ptb_cospi(0.5), 0.0);
  EXPECT_EQ(ptb_cospi(1e15 + 1), -1.0);
  EXPECT_NEAR(ptb_sinpi(0.25), std::sqrt(0.5), 2e-16);
  EXPECT_TRUE(std::isnan(ptb_cospi(kInf)));
}

}  // namespace
