#include "runtime/special_math.h"

#include <cmath>
#include <limits>

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The standard normal quantile: a rational approximation (relative error about 1e-9, after
// P. J. Acklam) refined by one Halley step on erfc, which brings it to double precision.
double normal_quantile(double p) {
  if (std::isnan(p) || p < 0 || p > 1) return kNaN;
  if (p == 0) return -kInf;
  if (p == 1) return kInf;
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double low = 0.02425;
  double x;
  if (p < low || p > 1 - low) {
    double q = std::sqrt(-2 * std::log(p < low ? p : 1 - p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    if (p > 1 - low) x = -x;
  } else {
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  // Halley: e = Phi(x) - p, computed through erfc so the tails keep their precision.
  double e = 0.5 * std::erfc(-x / kSqrt2) - p;
  double u = e * std::sqrt(2 * kPi) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

// One Newton step for erf(x) = y (or erfc) from a close start.
double erfinv_refine(double x, double y) {
  double slope = kTwoOverSqrtPi * std::exp(-x * x);
  return x - (std::erf(x) - y) / slope;
}

double modified_bessel_i(int order, double x) {
  if (std::isnan(x)) return kNaN;
  double v = std::cyl_bessel_i(static_cast<double>(order), std::fabs(x));
  return (order % 2 == 1 && x < 0) ? -v : v;  // I0 is even, I1 odd
}

// sin(pi * x) and cos(pi * x) through an exact reduction: x mod 2 is exact in floating point,
// and the nearest half-integer splits it into a quadrant and a remainder in [-1/4, 1/4].
double sin_cos_pi(double x, bool cosine) {
  if (!std::isfinite(x)) return kNaN;
  double y = std::fmod(std::fabs(x), 2.0);
  double n = std::nearbyint(2 * y);  // 0..4
  double t = (y - n / 2) * kPi;
  int quadrant = static_cast<int>(n) % 4;
  if (cosine) quadrant = (quadrant + 1) % 4;  // cos(a) = sin(a + pi/2)
  double v;
  switch (quadrant) {
    case 0:
      v = std::sin(t);
      break;
    case 1:
      v = std::cos(t);
      break;
    case 2:
      v = -std::sin(t);
      break;
    default:
      v = -std::cos(t);
      break;
  }
  if (v == 0) v = 0.0;  // no -0.0 from the reduction
  return (!cosine && x < 0) ? -v : v;
}

}  // namespace

extern "C" {

double ptb_normcdfinv(double p) { return normal_quantile(p); }

double ptb_erfinv(double x) {
  if (std::isnan(x) || x < -1 || x > 1) return kNaN;
  if (x == 1) return kInf;
  if (x == -1) return -kInf;
  if (x == 0) return x;
  // Near 0, the quantile's argument (1 + x) / 2 would lose x's low bits: start from the
  // series instead and refine on erf directly.
  // (Two Newton steps take the series' relative error, below 2e-5 there, to rounding.)
  double guess = std::fabs(x) < 0.1 ? x * (std::sqrt(kPi) / 2) * (1 + kPi * x * x / 12)
                                    : normal_quantile((1 + x) / 2) / kSqrt2;
  double r = erfinv_refine(erfinv_refine(guess, x), x);
  return std::isfinite(r) ? r : guess;
}

double ptb_erfcinv(double y) {
  if (std::isnan(y) || y < 0 || y > 2) return kNaN;
  if (y == 0) return kInf;
  if (y == 2) return -kInf;
  if (y > 0.5 && y < 1.5) return ptb_erfinv(1 - y);  // 1 - y is exact here
  // erfc(x) = 2 * Phi(-x * sqrt(2)); the quantile keeps the tail's precision.
  return y <= 0.5 ? -normal_quantile(y / 2) / kSqrt2 : normal_quantile((2 - y) / 2) / kSqrt2;
}

double ptb_erfcx(double x) {
  if (std::isnan(x)) return kNaN;
  if (x < 25) return std::exp(x * x) * std::erfc(x);
  // The asymptotic series 1/(x sqrt(pi)) * sum_k (-1)^k (2k-1)!! / (2x^2)^k, to k = 7: the first
  // omitted term is below 3e-17 (relative) for x >= 25.
  double z = 1 / (2 * x * x);
  double series =
      1 - z * (1 - 3 * z * (1 - 5 * z * (1 - 7 * z * (1 - 9 * z * (1 - 11 * z * (1 - 13 * z))))));
  return series / (x * std::sqrt(kPi));
}

double ptb_cyl_bessel_i0(double x) { return modified_bessel_i(0, x); }
double ptb_cyl_bessel_i1(double x) { return modified_bessel_i(1, x); }
double ptb_sinpi(double x) { return sin_cos_pi(x, false); }
double ptb_cospi(double x) { return sin_cos_pi(x, true); }

float ptb_erfinvf(float x) { return static_cast<float>(ptb_erfinv(x)); }
float ptb_erfcinvf(float y) { return static_cast<float>(ptb_erfcinv(y)); }
float ptb_erfcxf(float x) { return static_cast<float>(ptb_erfcx(x)); }
float ptb_normcdfinvf(float p) { return static_cast<float>(ptb_normcdfinv(p)); }
float ptb_cyl_bessel_i0f(float x) { return static_cast<float>(ptb_cyl_bessel_i0(x)); }
float ptb_cyl_bessel_i1f(float x) { return static_cast<float>(ptb_cyl_bessel_i1(x)); }
float ptb_sinpif(float x) { return static_cast<float>(ptb_sinpi(x)); }
float ptb_cospif(float x) { return static_cast<float>(ptb_cospi(x)); }
}
