// Special functions that generated code calls where libm has none (TC's builtins erfinv,
// erfcinv, erfcx, normcdfinv, cyl_bessel_i0/i1, sinpi, cospi). Each has a double version and a
// float one ('f' appended, computed in double), the naming codegen uses for libm. The JIT
// registers them by address (backend_api.h).
#pragma once

extern "C" {

double ptb_erfinv(double x);         // the inverse of erf on (-1, 1)
double ptb_erfcinv(double y);        // the inverse of erfc on (0, 2)
double ptb_erfcx(double x);          // exp(x * x) * erfc(x), without overflow for large x
double ptb_normcdfinv(double p);     // the inverse of the standard normal CDF on (0, 1)
double ptb_cyl_bessel_i0(double x);  // modified Bessel function of the first kind, order 0
double ptb_cyl_bessel_i1(double x);  // ... order 1
double ptb_sinpi(double x);          // sin(pi * x), exact at integers and half-integers
double ptb_cospi(double x);          // cos(pi * x), likewise

float ptb_erfinvf(float x);
float ptb_erfcinvf(float y);
float ptb_erfcxf(float x);
float ptb_normcdfinvf(float p);
float ptb_cyl_bessel_i0f(float x);
float ptb_cyl_bessel_i1f(float x);
float ptb_sinpif(float x);
float ptb_cospif(float x);
}
