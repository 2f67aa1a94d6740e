// Codegen of arithmetic, casts and math intrinsics, scalar and vector, checked against the C++
// standard library and NumPy's documented semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "codegen/jit.h"
#include "codegen/target.h"
#include "ir/expr.h"
#include "ir/op.h"
#include "ir/stmt.h"

namespace ptb {
namespace {

const DataType f16 = DataType::Float(16);
const DataType bf16 = DataType::BFloat16();
const DataType f32 = DataType::Float(32);
const DataType f64 = DataType::Float(64);
const DataType i8 = DataType::Int(8);
const DataType i32 = DataType::Int(32);
const DataType u8 = DataType::UInt(8);
const DataType u32 = DataType::UInt(32);
const DataType u64 = DataType::UInt(64);
const DataType boolean = DataType::Bool();

Expr off(const Expr& e) { return cast(kOffsetType.with_lanes(e.dtype().lanes()), e); }

// An elementwise kernel out[i] = f(in0[i], in1[i], ...) over n elements (a scalar parameter),
// `lanes` elements per iteration (n must be a multiple of lanes).
class Elementwise {
 public:
  using Body = std::function<Expr(const std::vector<Expr>&)>;

  Elementwise(std::vector<DataType> inputs, DataType output, int lanes, const Body& body,
              const std::string& target = "llvm") {
    Expr n = Var::make(kIndexType, "n");
    std::vector<Buffer> args;
    for (size_t k = 0; k < inputs.size(); ++k) {
      args.push_back(make_buffer("in" + std::to_string(k), inputs[k], {n}));
    }
    Buffer out = make_buffer("out", output, {n});
    args.push_back(out);
    Expr i = Var::make(kIndexType, "i");
    Expr idx = lanes == 1 ? off(i)
                          : Ramp::make(off(Mul::make(i, IntImm::make(kIndexType, lanes))),
                                       IntImm::make(kOffsetType, 1), lanes);
    std::vector<Expr> loads;
    for (size_t k = 0; k < inputs.size(); ++k) loads.push_back(Load::make(args[k], idx));
    Expr extent = FloorDiv::make(n, IntImm::make(kIndexType, lanes));
    LoweredFunc f;
    f.name = "elementwise";
    f.args = args;
    f.scalar_params = {n};
    f.body = For::make(i, make_zero(kIndexType), extent, ForKind::kSerial,
                       Store::make(out, body(loads), idx));
    module_ = JITModule::compile({f}, Target::parse(target), "elementwise");
    fn_ = module_->lookup("elementwise");
  }

  void run(std::vector<void*> data, int64_t n) {
    int64_t scalars[] = {n};
    ASSERT_EQ(fn_(data.data(), scalars), 0);
  }

 private:
  std::shared_ptr<JITModule> module_;
  JITModule::KernelFn fn_ = nullptr;
};

Expr bcast(const Expr& scalar, int lanes) {
  return lanes == 1 ? scalar : Broadcast::make(scalar, lanes);
}

constexpr int kN = 80;  // a multiple of every lane count tested
const int kLanes[] = {1, 4, 5, 8, 16};

// ------------------------------------------------------------------ math intrinsics

struct MathCase {
  Intrinsic op;
  double (*reference)(double);
  double lo, hi;  // input range
};

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double rsqrt(double x) { return 1.0 / std::sqrt(x); }
double fabs_ref(double x) { return std::fabs(x); }

const MathCase kUnaryCases[] = {
    {Intrinsic::kExp, [](double x) { return std::exp(x); }, -10, 10},
    {Intrinsic::kExp2, [](double x) { return std::exp2(x); }, -10, 10},
    {Intrinsic::kLog, [](double x) { return std::log(x); }, 0.01, 100},
    {Intrinsic::kLog2, [](double x) { return std::log2(x); }, 0.01, 100},
    {Intrinsic::kLog10, [](double x) { return std::log10(x); }, 0.01, 100},
    {Intrinsic::kLog1p, [](double x) { return std::log1p(x); }, -0.9, 10},
    {Intrinsic::kSqrt, [](double x) { return std::sqrt(x); }, 0, 100},
    {Intrinsic::kRsqrt, rsqrt, 0.01, 100},
    {Intrinsic::kSin, [](double x) { return std::sin(x); }, -6, 6},
    {Intrinsic::kCos, [](double x) { return std::cos(x); }, -6, 6},
    {Intrinsic::kTan, [](double x) { return std::tan(x); }, -1.5, 1.5},
    {Intrinsic::kTanh, [](double x) { return std::tanh(x); }, -5, 5},
    {Intrinsic::kSigmoid, sigmoid, -20, 20},
    {Intrinsic::kErf, [](double x) { return std::erf(x); }, -3, 3},
    {Intrinsic::kAbs, fabs_ref, -5, 5},
    {Intrinsic::kFloor, [](double x) { return std::floor(x); }, -5, 5},
    {Intrinsic::kCeil, [](double x) { return std::ceil(x); }, -5, 5},
    {Intrinsic::kTrunc, [](double x) { return std::trunc(x); }, -5, 5},
    {Intrinsic::kRound, [](double x) { return std::nearbyint(x); }, -5, 5},
};

template <typename T>
void check_unary(const MathCase& c, DataType t, int lanes, double tolerance) {
  Elementwise k({t}, t, lanes,
                [&](const std::vector<Expr>& in) { return Call::make(c.op, {in[0]}); });
  std::vector<T> x(kN), y(kN);
  for (int i = 0; i < kN; ++i) x[i] = static_cast<T>(c.lo + (c.hi - c.lo) * i / (kN - 1));
  k.run({x.data(), y.data()}, kN);
  for (int i = 0; i < kN; ++i) {
    double expected = c.reference(static_cast<double>(x[i]));
    ASSERT_NEAR(y[i], expected, tolerance * std::max(1.0, std::fabs(expected)))
        << intrinsic_name(c.op) << "(" << x[i] << ") with " << lanes << " lanes of " << t.str();
  }
}

TEST(CodegenMath, UnaryIntrinsicsFloat32MatchTheStandardLibrary) {
  for (const MathCase& c : kUnaryCases) {
    for (int lanes : kLanes) check_unary<float>(c, f32, lanes, 2e-6);
  }
}

TEST(CodegenMath, UnaryIntrinsicsFloat64MatchTheStandardLibrary) {
  for (const MathCase& c : kUnaryCases) {
    for (int lanes : {1, 4, 8}) check_unary<double>(c, f64, lanes, 1e-13);
  }
}

TEST(CodegenMath, RoundIsHalfToEven) {
  for (int lanes : {1, 8}) {
    Elementwise k({f32}, f32, lanes, [](const std::vector<Expr>& in) {
      return Call::make(Intrinsic::kRound, {in[0]});
    });
    std::vector<float> x = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 3.5f, -3.5f, 2.4f};
    std::vector<float> y(8);
    k.run({x.data(), y.data()}, 8);
    EXPECT_EQ(y, (std::vector<float>{0, 2, 2, -0.0f, -2, 4, -4, 2}));
  }
}

TEST(CodegenMath, BinaryAndTernaryIntrinsics) {
  for (int lanes : kLanes) {
    Elementwise pow_k({f32, f32}, f32, lanes, [](const std::vector<Expr>& in) {
      return Call::make(Intrinsic::kPow, {in[0], in[1]});
    });
    Elementwise fmod_k({f32, f32}, f32, lanes, [](const std::vector<Expr>& in) {
      return Call::make(Intrinsic::kFmod, {in[0], in[1]});
    });
    Elementwise fma_k({f32, f32, f32}, f32, lanes, [](const std::vector<Expr>& in) {
      return Call::make(Intrinsic::kFma, {in[0], in[1], in[2]});
    });
    std::vector<float> a(kN), b(kN), c(kN), p(kN), m(kN), f(kN);
    for (int i = 0; i < kN; ++i) {
      a[i] = 0.1f + 0.05f * i;
      b[i] = -2.0f + 0.07f * i;
      c[i] = 1.0f / (i + 1);
    }
    pow_k.run({a.data(), b.data(), p.data()}, kN);
    fmod_k.run({b.data(), a.data(), m.data()}, kN);
    fma_k.run({a.data(), b.data(), c.data(), f.data()}, kN);
    for (int i = 0; i < kN; ++i) {
      double ep = std::pow(double(a[i]), double(b[i]));
      ASSERT_NEAR(p[i], ep, 2e-6 * std::max(1.0, std::fabs(ep))) << i;
      ASSERT_EQ(m[i], std::fmod(b[i], a[i])) << i;
      ASSERT_EQ(f[i], std::fma(a[i], b[i], c[i])) << i;
    }
  }
}

TEST(CodegenMath, IsNanAndNanSemantics) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {nan, 1.0f, nan, 2.0f, -0.0f, 3.0f, nan, -1.0f};
  std::vector<float> b = {1.0f, nan, nan, 1.0f, 0.0f, 3.0f, 0.0f, -2.0f};
  for (int lanes : {1, 8}) {
    Elementwise isnan_k({f32}, boolean, lanes, [](const std::vector<Expr>& in) {
      return Call::make(Intrinsic::kIsNan, {in[0]});
    });
    Elementwise ne_k({f32, f32}, boolean, lanes,
                     [](const std::vector<Expr>& in) { return NE::make(in[0], in[1]); });
    Elementwise eq_k({f32, f32}, boolean, lanes,
                     [](const std::vector<Expr>& in) { return EQ::make(in[0], in[1]); });
    Elementwise lt_k({f32, f32}, boolean, lanes,
                     [](const std::vector<Expr>& in) { return LT::make(in[0], in[1]); });
    Elementwise max_k({f32, f32}, f32, lanes,
                      [](const std::vector<Expr>& in) { return Max::make(in[0], in[1]); });
    Elementwise min_k({f32, f32}, f32, lanes,
                      [](const std::vector<Expr>& in) { return Min::make(in[0], in[1]); });
    std::vector<uint8_t> isnan_v(8), ne(8), eq(8), lt(8);
    std::vector<float> mx(8), mn(8);
    isnan_k.run({a.data(), isnan_v.data()}, 8);
    ne_k.run({a.data(), b.data(), ne.data()}, 8);
    eq_k.run({a.data(), b.data(), eq.data()}, 8);
    lt_k.run({a.data(), b.data(), lt.data()}, 8);
    max_k.run({a.data(), b.data(), mx.data()}, 8);
    min_k.run({a.data(), b.data(), mn.data()}, 8);
    for (int i = 0; i < 8; ++i) {
      bool any_nan = std::isnan(a[i]) || std::isnan(b[i]);
      EXPECT_EQ(isnan_v[i], std::isnan(a[i]) ? 1 : 0) << i;
      EXPECT_EQ(ne[i], a[i] != b[i] ? 1 : 0) << i;  // NaN != x is true, as in NumPy
      EXPECT_EQ(eq[i], a[i] == b[i] ? 1 : 0) << i;
      EXPECT_EQ(lt[i], a[i] < b[i] ? 1 : 0) << i;
      // numpy.maximum / numpy.minimum propagate NaN.
      if (any_nan) {
        EXPECT_TRUE(std::isnan(mx[i]) && std::isnan(mn[i])) << i;
      } else if (a[i] != b[i]) {
        EXPECT_EQ(mx[i], std::max(a[i], b[i])) << i;
        EXPECT_EQ(mn[i], std::min(a[i], b[i])) << i;
      }
    }
  }
}

// ------------------------------------------------------------------ integer division

int32_t python_floordiv(int32_t a, int32_t b) {
  if (b == 0) return 0;
  if (b == -1) return static_cast<int32_t>(0u - static_cast<uint32_t>(a));
  int32_t q = a / b;
  if (a % b != 0 && ((a % b) ^ b) < 0) --q;
  return q;
}
int32_t python_floormod(int32_t a, int32_t b) {
  if (b == 0 || b == -1) return 0;
  int32_t r = a % b;
  if (r != 0 && (r ^ b) < 0) r += b;
  return r;
}

TEST(CodegenMath, IntegerDivisionFollowsPythonAndNumpy) {
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  const int32_t kMax = std::numeric_limits<int32_t>::max();
  std::vector<int32_t> as = {-7, -6, -5, -1, 0, 1, 5, 6, 7, kMin, kMax, -100};
  std::vector<int32_t> bs = {-3, -2, -1, 0, 1, 2, 3, 4, -4, kMin, 7};
  std::vector<int32_t> a, b;
  for (int32_t x : as) {
    for (int32_t y : bs) {
      a.push_back(x);
      b.push_back(y);
    }
  }
  while (a.size() % 80 != 0) {
    a.push_back(9);
    b.push_back(2);
  }
  int64_t n = static_cast<int64_t>(a.size());
  for (int lanes : {1, 8, 16}) {
    auto kernel = [&](auto make) {
      return Elementwise({i32, i32}, i32, lanes,
                         [make](const std::vector<Expr>& in) { return make(in[0], in[1]); });
    };
    Elementwise fdiv = kernel([](Expr x, Expr y) { return FloorDiv::make(x, y); });
    Elementwise fmod = kernel([](Expr x, Expr y) { return FloorMod::make(x, y); });
    Elementwise tdiv = kernel([](Expr x, Expr y) { return Div::make(x, y); });
    Elementwise tmod = kernel([](Expr x, Expr y) { return Mod::make(x, y); });
    std::vector<int32_t> q(n), r(n), tq(n), tr(n);
    fdiv.run({a.data(), b.data(), q.data()}, n);
    fmod.run({a.data(), b.data(), r.data()}, n);
    tdiv.run({a.data(), b.data(), tq.data()}, n);
    tmod.run({a.data(), b.data(), tr.data()}, n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(q[i], python_floordiv(a[i], b[i])) << a[i] << " // " << b[i];
      ASSERT_EQ(r[i], python_floormod(a[i], b[i])) << a[i] << " % " << b[i];
      int32_t et = b[i] == 0 ? 0 : b[i] == -1 ? python_floordiv(a[i], -1) : a[i] / b[i];
      int32_t er = (b[i] == 0 || b[i] == -1) ? 0 : a[i] % b[i];
      ASSERT_EQ(tq[i], et) << a[i] << " / " << b[i];
      ASSERT_EQ(tr[i], er) << a[i] << " rem " << b[i];
    }
  }
}

TEST(CodegenMath, FloorDivisionByConstants) {
  for (int32_t d : {4, -4, 3, -3, 1}) {
    for (int lanes : {1, 16}) {
      Expr dc = bcast(IntImm::make(i32, d), lanes);
      Elementwise fdiv({i32}, i32, lanes,
                       [&](const std::vector<Expr>& in) { return FloorDiv::make(in[0], dc); });
      Elementwise fmod({i32}, i32, lanes,
                       [&](const std::vector<Expr>& in) { return FloorMod::make(in[0], dc); });
      std::vector<int32_t> a(kN), q(kN), r(kN);
      for (int i = 0; i < kN; ++i) a[i] = i - 40;
      fdiv.run({a.data(), q.data()}, kN);
      fmod.run({a.data(), r.data()}, kN);
      for (int i = 0; i < kN; ++i) {
        ASSERT_EQ(q[i], python_floordiv(a[i], d)) << a[i] << " // " << d;
        ASSERT_EQ(r[i], python_floormod(a[i], d)) << a[i] << " % " << d;
      }
    }
  }
}

TEST(CodegenMath, UnsignedDivisionAndMinMax) {
  Elementwise div({u32, u32}, u32, 1,
                  [](const std::vector<Expr>& in) { return FloorDiv::make(in[0], in[1]); });
  Elementwise mod({u32, u32}, u32, 8,
                  [](const std::vector<Expr>& in) { return FloorMod::make(in[0], in[1]); });
  Elementwise mx({u32, u32}, u32, 8,
                 [](const std::vector<Expr>& in) { return Max::make(in[0], in[1]); });
  std::vector<uint32_t> a(8), b(8), q(8), r(8), m(8);
  for (int i = 0; i < 8; ++i) {
    a[i] = 4000000000u - i;
    b[i] = i == 3 ? 0 : 7 + i;
  }
  div.run({a.data(), b.data(), q.data()}, 8);
  mod.run({a.data(), b.data(), r.data()}, 8);
  mx.run({a.data(), b.data(), m.data()}, 8);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(q[i], b[i] ? a[i] / b[i] : 0);
    EXPECT_EQ(r[i], b[i] ? a[i] % b[i] : 0);
    EXPECT_EQ(m[i], std::max(a[i], b[i]));  // unsigned compare: 4e9 is not negative
  }
}

TEST(CodegenMath, SmallIntegersWrapAndAbs) {
  Elementwise add({i8, i8}, i8, 16,
                  [](const std::vector<Expr>& in) { return Add::make(in[0], in[1]); });
  std::vector<int8_t> a(16, 127), b(16, 1), c(16);
  add.run({a.data(), b.data(), c.data()}, 16);
  EXPECT_EQ(c[0], -128);
  Elementwise abs_k({i32}, i32, 1, [](const std::vector<Expr>& in) {
    return Call::make(Intrinsic::kAbs, {in[0]});
  });
  std::vector<int32_t> x = {-5, 5, 0, std::numeric_limits<int32_t>::min()}, y(4);
  abs_k.run({x.data(), y.data()}, 4);
  EXPECT_EQ(y, (std::vector<int32_t>{5, 5, 0, std::numeric_limits<int32_t>::min()}));
}

TEST(CodegenMath, SelectAndLogicOnBoolVectors) {
  for (int lanes : {1, 8}) {
    Elementwise k({f32, f32}, f32, lanes, [](const std::vector<Expr>& in) {
      Expr pos = GT::make(in[0], in[1]);
      Expr both = And::make(pos, Not::make(EQ::make(in[0], in[0])));  // always false
      Expr either = Or::make(pos, both);
      return Select::make(either, in[0], Sub::make(in[1], in[0]));
    });
    std::vector<float> a(8), b(8), c(8);
    for (int i = 0; i < 8; ++i) {
      a[i] = i;
      b[i] = 7 - i;
    }
    k.run({a.data(), b.data(), c.data()}, 8);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(c[i], a[i] > b[i] ? a[i] : b[i] - a[i]);
  }
}

// ------------------------------------------------------------------ casts

TEST(CodegenMath, IntegerCastsWrapAndExtendBySignedness) {
  Elementwise narrow({i32}, i8, 8, [](const std::vector<Expr>& in) {
    return Cast::make(i8.with_lanes(8), in[0]);
  });
  Elementwise sext({i8}, i32, 1,
                   [](const std::vector<Expr>& in) { return Cast::make(i32, in[0]); });
  Elementwise zext({u8}, i32, 1,
                   [](const std::vector<Expr>& in) { return Cast::make(i32, in[0]); });
  std::vector<int32_t> wide = {300, -129, 127, -1, 255, 256, 0, -128}, back(8);
  std::vector<int8_t> small(8);
  narrow.run({wide.data(), small.data()}, 8);
  EXPECT_EQ(small, (std::vector<int8_t>{44, 127, 127, -1, -1, 0, 0, -128}));
  sext.run({small.data(), back.data()}, 8);
  EXPECT_EQ(back, (std::vector<int32_t>{44, 127, 127, -1, -1, 0, 0, -128}));
  std::vector<uint8_t> bytes = {250, 0, 1, 128, 255, 7, 8, 9};
  zext.run({bytes.data(), back.data()}, 8);
  EXPECT_EQ(back, (std::vector<int32_t>{250, 0, 1, 128, 255, 7, 8, 9}));
}

TEST(CodegenMath, FloatIntegerAndBoolCasts) {
  for (int lanes : {1, 8}) {
    auto to = [lanes](DataType t) { return t.with_lanes(lanes); };
    Elementwise to_int({f32}, i32, lanes,
                       [&](const std::vector<Expr>& in) { return Cast::make(to(i32), in[0]); });
    Elementwise to_u8({f32}, u8, lanes,
                      [&](const std::vector<Expr>& in) { return Cast::make(to(u8), in[0]); });
    Elementwise to_bool({f32}, boolean, lanes, [&](const std::vector<Expr>& in) {
      return Cast::make(to(boolean), in[0]);
    });
    Elementwise from_bool({boolean}, f32, lanes,
                          [&](const std::vector<Expr>& in) { return Cast::make(to(f32), in[0]); });
    Elementwise u32_to_f64({u32}, f64, lanes,
                           [&](const std::vector<Expr>& in) { return Cast::make(to(f64), in[0]); });
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> x = {-2.7f, 2.7f, 0.0f, -0.0f, nan, 0.1f, 200.9f, 255.0f};
    std::vector<int32_t> ints(8);
    std::vector<uint8_t> bytes(8), bools(8);
    to_int.run({x.data(), ints.data()}, 8);
    EXPECT_EQ(std::vector<int32_t>(ints.begin(), ints.begin() + 4),
              (std::vector<int32_t>{-2, 2, 0, 0}));
    to_u8.run({x.data(), bytes.data()}, 8);
    EXPECT_EQ(bytes[6], 200);
    EXPECT_EQ(bytes[7], 255);
    to_bool.run({x.data(), bools.data()}, 8);
    EXPECT_EQ(bools, (std::vector<uint8_t>{1, 1, 0, 0, 1, 1, 1, 1}));
    // Any nonzero byte reads as true.
    std::vector<uint8_t> raw = {0, 1, 2, 255, 0, 0, 9, 1};
    std::vector<float> f(8);
    from_bool.run({raw.data(), f.data()}, 8);
    EXPECT_EQ(f, (std::vector<float>{0, 1, 1, 1, 0, 0, 1, 1}));
    std::vector<uint32_t> big = {4000000000u, 0, 1, 4294967295u, 5, 6, 7, 8};
    std::vector<double> d(8);
    u32_to_f64.run({big.data(), d.data()}, 8);
    EXPECT_EQ(d[0], 4000000000.0);
    EXPECT_EQ(d[3], 4294967295.0);
  }
}

TEST(CodegenMath, Uint64ConstantsKeepAllBits) {
  Elementwise k({u64}, u64, 1, [](const std::vector<Expr>& in) {
    return Add::make(in[0], IntImm::make(u64, static_cast<int64_t>(0xfffffffffffffff0ull)));
  });
  std::vector<uint64_t> x = {0, 15, 16, 1}, y(4);
  k.run({x.data(), y.data()}, 4);
  EXPECT_EQ(y, (std::vector<uint64_t>{0xfffffffffffffff0ull, 0xffffffffffffffffull, 0,
                                      0xfffffffffffffff1ull}));
}

// ------------------------------------------------------------------ 16-bit floats

uint16_t bits_of(_Float16 h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

TEST(CodegenMath, Float16ArithmeticRoundsInFloat16) {
  for (const char* target : {"llvm", "llvm -mcpu=x86-64"}) {  // F16C, and libgcc's helpers
    for (int lanes : {1, 16}) {
      Elementwise k(
          {f16, f16}, f16, lanes,
          [](const std::vector<Expr>& in) { return Add::make(Mul::make(in[0], in[1]), in[0]); },
          target);
      std::vector<_Float16> a(kN), b(kN), c(kN);
      for (int i = 0; i < kN; ++i) {
        a[i] = static_cast<_Float16>(0.1f * i - 3.3f);
        b[i] = static_cast<_Float16>(1.7f + 0.013f * i);
      }
      k.run({a.data(), b.data(), c.data()}, kN);
      for (int i = 0; i < kN; ++i) {
        _Float16 product =
            static_cast<_Float16>(static_cast<float>(a[i]) * static_cast<float>(b[i]));
        _Float16 expected =
            static_cast<_Float16>(static_cast<float>(product) + static_cast<float>(a[i]));
        // Float operations may contract (docs/architecture.md): where the CPU has native
        // float16 FMAs (AVX512-FP16), a*b+a is rounded once, from the exact value (which a
        // double holds). Otherwise each operation rounds to float16.
        _Float16 fused = static_cast<_Float16>(static_cast<double>(a[i]) * b[i] + a[i]);
        ASSERT_TRUE(bits_of(c[i]) == bits_of(expected) || bits_of(c[i]) == bits_of(fused))
            << target << " lanes " << lanes << " i " << i << ": got " << bits_of(c[i])
            << ", rounded per operation " << bits_of(expected) << ", fused " << bits_of(fused);
      }
    }
  }
}

TEST(CodegenMath, Float16MathAndCasts) {
  Elementwise exp_k({f16}, f16, 8, [](const std::vector<Expr>& in) {
    return Call::make(Intrinsic::kExp, {in[0]});
  });
  Elementwise from_f64({f64}, f16, 1,
                       [](const std::vector<Expr>& in) { return Cast::make(f16, in[0]); });
  Elementwise to_i32({f16}, i32, 1,
                     [](const std::vector<Expr>& in) { return Cast::make(i32, in[0]); });
  std::vector<_Float16> x(8), y(8);
  for (int i = 0; i < 8; ++i) x[i] = static_cast<_Float16>(-2.0f + 0.5f * i);
  exp_k.run({x.data(), y.data()}, 8);
  for (int i = 0; i < 8; ++i) {
    float e = std::exp(static_cast<float>(x[i]));
    EXPECT_NEAR(static_cast<float>(y[i]), e, e * 1e-3f) << i;
  }
  // double -> half rounds once (not through float).
  std::vector<double> d = {65504.0, 0.1, 1e-8, -2.5, 1.00048828125000001, 70000.0, 3.0, 4.0};
  std::vector<_Float16> h(8);
  from_f64.run({d.data(), h.data()}, 8);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(bits_of(h[i]), bits_of(static_cast<_Float16>(d[i]))) << i;
  std::vector<int32_t> ints(8);
  to_i32.run({h.data(), ints.data()}, 8);
  EXPECT_EQ(ints[0], 65504);
  EXPECT_EQ(ints[3], -2);
}

uint16_t bf16_reference(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

float bf16_value(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(CodegenMath, BFloat16RoundsToNearestEven) {
  for (int lanes : {1, 8}) {
    Elementwise to_bf16({f32}, bf16, lanes, [&](const std::vector<Expr>& in) {
      return Cast::make(bf16.with_lanes(lanes), in[0]);
    });
    Elementwise add({bf16, bf16}, bf16, lanes,
                    [](const std::vector<Expr>& in) { return Add::make(in[0], in[1]); });
    // 1 + 2^-8 is a tie (rounds down to 1, even); 1 + 3 * 2^-8 rounds up.
    std::vector<float> x = {1.0f + 1.0f / 256,
                            1.0f + 3.0f / 256,
                            -3.14159f,
                            1e30f,
                            std::numeric_limits<float>::quiet_NaN(),
                            0.0f,
                            -0.0f,
                            65504.0f};
    std::vector<uint16_t> b(8), sum(8);
    to_bf16.run({x.data(), b.data()}, 8);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(b[i], bf16_reference(x[i])) << i;
    add.run({b.data(), b.data(), sum.data()}, 8);
    for (int i = 0; i < 8; ++i) {
      uint16_t expected = bf16_reference(bf16_value(b[i]) + bf16_value(b[i]));
      EXPECT_EQ(sum[i], expected) << i;
    }
  }
}

TEST(CodegenMath, FastMathStillComputesTheSameValues) {
  Elementwise k(
      {f32, f32}, f32, 1,
      [](const std::vector<Expr>& in) {
        return Add::make(Mul::make(in[0], in[1]), Call::make(Intrinsic::kExp, {in[1]}));
      },
      "llvm -fast-math");
  std::vector<float> a(kN), b(kN), c(kN);
  for (int i = 0; i < kN; ++i) {
    a[i] = 0.25f * i;
    b[i] = -1.0f + 0.02f * i;
  }
  k.run({a.data(), b.data(), c.data()}, kN);
  for (int i = 0; i < kN; ++i) {
    double e = double(a[i]) * b[i] + std::exp(double(b[i]));
    ASSERT_NEAR(c[i], e, 1e-5 * std::max(1.0, std::fabs(e))) << i;
  }
}

}  // namespace
}  // namespace ptb
