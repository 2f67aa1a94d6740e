// The simplifier: every expected value below was worked out by hand (or is C's own arithmetic
// on the same types), not taken from the simplifier's output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>

#include "ir/expr.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/simplify.h"
#include "ir/stmt.h"

namespace ptb {
namespace {

const DataType kI32 = DataType::Int(32);
const DataType kF32 = DataType::Float(32);

Expr i32(int64_t v) { return IntImm::make(kI32, v); }
Expr f32(double v) { return FloatImm::make(kF32, v); }
std::string simple(const Expr& e) { return to_string(simplify(e)); }
std::string simple(const Stmt& s) { return to_string(simplify(s)); }

class Simplify : public ::testing::Test {
 protected:
  Expr x = Var::make(kI32, "x");
  Expr y = Var::make(kI32, "y");
  Expr n = Var::make(kI32, "n");
  Expr f = Var::make(kF32, "f");
};

TEST_F(Simplify, FoldsIntegerArithmeticWithWrapAround) {
  EXPECT_EQ(simple(Add::make(i32(2), Mul::make(i32(3), i32(4)))), "14");
  EXPECT_EQ(as_const_int(simplify(Add::make(i32(2147483647), i32(1)))), -2147483648LL);
  DataType i8 = DataType::Int(8), u8 = DataType::UInt(8), u64 = DataType::UInt(64);
  EXPECT_EQ(as_const_int(simplify(Add::make(IntImm::make(i8, 100), IntImm::make(i8, 100)))), -56);
  EXPECT_EQ(as_const_int(simplify(Sub::make(IntImm::make(u8, 0), IntImm::make(u8, 1)))), 255);
  EXPECT_EQ(as_const_int(simplify(Mul::make(IntImm::make(u8, 16), IntImm::make(u8, 17)))), 16);
  // uint64: max + 1 wraps to 0; max > 1 compares unsigned.
  Expr umax = IntImm::make(u64, -1);
  EXPECT_EQ(as_const_int(simplify(Add::make(umax, IntImm::make(u64, 1)))), 0);
  EXPECT_EQ(simple(GT::make(umax, IntImm::make(u64, 1))), "True");
  EXPECT_EQ(as_const_int(simplify(Div::make(umax, IntImm::make(u64, 2)))),
            static_cast<int64_t>(std::numeric_limits<uint64_t>::max() / 2));
}

TEST_F(Simplify, IntegerDivisionSemantics) {
  // Floor (Python) semantics for FloorDiv/FloorMod, truncation (C) for Div/Mod.
  EXPECT_EQ(simple(FloorDiv::make(i32(-7), i32(2))), "-4");
  EXPECT_EQ(simple(FloorMod::make(i32(-7), i32(2))), "1");
  EXPECT_EQ(simple(FloorDiv::make(i32(7), i32(-2))), "-4");
  EXPECT_EQ(simple(FloorMod::make(i32(7), i32(-2))), "-1");
  EXPECT_EQ(simple(Div::make(i32(-7), i32(2))), "-3");
  EXPECT_EQ(simple(Mod::make(i32(-7), i32(2))), "-1");
  // Left for run time: division by zero, and INT_MIN / -1.
  EXPECT_EQ(simple(Div::make(i32(1), i32(0))), "(1 / 0)");
  EXPECT_EQ(simple(FloorDiv::make(i32(-2147483648LL), i32(-1))), "floordiv(-2147483648, -1)");
}

TEST_F(Simplify, FoldsBitwiseOperationsAsNumPyDoes) {
  DataType i8 = DataType::Int(8), u8 = DataType::UInt(8), u64 = DataType::UInt(64);
  auto fold = [](const Expr& e) { return as_const_int(simplify(e)); };
  EXPECT_EQ(fold(bitwise_and(i32(12), i32(10))), 8);
  EXPECT_EQ(fold(bitwise_or(i32(12), i32(10))), 14);
  EXPECT_EQ(fold(bitwise_xor(i32(12), i32(10))), 6);
  EXPECT_EQ(fold(bitwise_not(i32(5))), -6);
  EXPECT_EQ(fold(bitwise_not(IntImm::make(u8, 5))), 250);
  // 0b01000000 << 1 wraps to -128 in int8; by 8 or more, or a negative amount, all bits go.
  EXPECT_EQ(fold(shift_left(IntImm::make(i8, 64), IntImm::make(i8, 1))), -128);
  EXPECT_EQ(fold(shift_left(IntImm::make(i8, 1), IntImm::make(i8, 8))), 0);
  EXPECT_EQ(fold(shift_left(IntImm::make(i8, 1), IntImm::make(i8, -1))), 0);
  // Right shifts: arithmetic for signed (-7 >> 1 is -4), logical for unsigned.
  EXPECT_EQ(fold(shift_right(IntImm::make(i8, -7), IntImm::make(i8, 1))), -4);
  EXPECT_EQ(fold(shift_right(IntImm::make(i8, -7), IntImm::make(i8, 9))), -1);
  EXPECT_EQ(fold(shift_right(IntImm::make(i8, 7), IntImm::make(i8, -3))), 0);
  EXPECT_EQ(fold(shift_right(IntImm::make(u8, 200), IntImm::make(u8, 3))), 25);
  EXPECT_EQ(fold(shift_right(IntImm::make(u64, -1), IntImm::make(u64, 60))), 15);
  EXPECT_EQ(fold(shift_right(IntImm::make(u64, -1), IntImm::make(u64, 64))), 0);
  EXPECT_EQ(simple(shift_left(x, i32(0))), "x");
}

TEST_F(Simplify, FoldsFloatsInTheirOwnPrecision) {
  Expr sum32 = simplify(Add::make(f32(0.1), f32(0.2)));
  ASSERT_TRUE(as_const_float(sum32));
  EXPECT_EQ(*as_const_float(sum32), static_cast<double>(0.1f + 0.2f));
  DataType f64 = DataType::Float(64);
  Expr sum64 = simplify(Add::make(FloatImm::make(f64, 0.1), FloatImm::make(f64, 0.2)));
  EXPECT_EQ(*as_const_float(sum64), 0.1 + 0.2);
  EXPECT_TRUE(std::isinf(*as_const_float(simplify(Div::make(f32(1), f32(0))))));
  EXPECT_EQ(simple(LT::make(f32(1), f32(2))), "True");
  // float16 constants are not folded (no float16 arithmetic to do it exactly).
  DataType f16 = DataType::Float(16);
  EXPECT_EQ(simple(Add::make(FloatImm::make(f16, 1), FloatImm::make(f16, 2))), "(1.0f16 + 2.0f16)");
}

TEST_F(Simplify, FloatIdentitiesThatHoldForEveryValue) {
  EXPECT_EQ(simple(Mul::make(f, f32(1))), "f");
  EXPECT_EQ(simple(Div::make(f, f32(1))), "f");
  EXPECT_EQ(simple(Sub::make(f, f32(0))), "f");
  // Not identities for -0.0, NaN or infinity.
  EXPECT_EQ(simple(Add::make(f, f32(0))), "(f + 0.0)");
  EXPECT_EQ(simple(Mul::make(f, f32(0))), "(f * 0.0)");
  EXPECT_EQ(simple(Sub::make(f, f)), "(f - f)");
  EXPECT_EQ(simple(EQ::make(f, f)), "(f == f)");
  EXPECT_EQ(simple(Not::make(LT::make(f, f32(1)))), "!(f < 1.0)");
}

TEST_F(Simplify, IntegerIdentities) {
  EXPECT_EQ(simple(Add::make(x, i32(0))), "x");
  EXPECT_EQ(simple(Mul::make(x, i32(1))), "x");
  EXPECT_EQ(simple(Mul::make(i32(0), x)), "0");
  EXPECT_EQ(simple(Sub::make(x, x)), "0");
  EXPECT_EQ(simple(FloorDiv::make(x, i32(1))), "x");
  EXPECT_EQ(simple(FloorMod::make(x, i32(1))), "0");
  EXPECT_EQ(simple(Min::make(x, x)), "x");
  EXPECT_EQ(simple(Max::make(Add::make(x, i32(1)), x)), "(x + 1)");
  EXPECT_EQ(simple(Min::make(Add::make(x, i32(1)), x)), "x");
  EXPECT_EQ(simple(LT::make(x, x)), "False");
  EXPECT_EQ(simple(LE::make(x, x)), "True");
  EXPECT_EQ(simple(EQ::make(Add::make(x, i32(2)), Add::make(i32(1), Add::make(x, i32(1))))),
            "True");
  EXPECT_EQ(simple(Not::make(LT::make(x, y))), "(x >= y)");
  EXPECT_EQ(simple(Not::make(Not::make(LT::make(x, y)))), "(x < y)");
}

TEST_F(Simplify, LogicAndSelect) {
  Expr c = LT::make(x, y);
  Expr t = IntImm::make(DataType::Bool(), 1), fl = IntImm::make(DataType::Bool(), 0);
  EXPECT_EQ(simple(And::make(c, t)), "(x < y)");
  EXPECT_EQ(simple(And::make(fl, c)), "False");
  EXPECT_EQ(simple(Or::make(c, t)), "True");
  EXPECT_EQ(simple(Or::make(fl, c)), "(x < y)");
  EXPECT_EQ(simple(And::make(c, c)), "(x < y)");
  EXPECT_EQ(simple(Select::make(t, x, y)), "x");
  EXPECT_EQ(simple(Select::make(fl, x, y)), "y");
  EXPECT_EQ(simple(Select::make(c, x, x)), "x");
  EXPECT_EQ(simple(Call::make(Intrinsic::kIfThenElse, {LT::make(i32(1), i32(2)), f, f32(0)})), "f");
}

TEST_F(Simplify, Casts) {
  EXPECT_EQ(simple(Cast::make(kI32, f32(3.7))), "3");
  EXPECT_EQ(simple(Cast::make(kI32, f32(-3.7))), "-3");
  EXPECT_EQ(simple(Cast::make(kF32, i32(3))), "3.0");
  EXPECT_EQ(as_const_int(simplify(Cast::make(DataType::UInt(8), i32(300)))), 44);
  EXPECT_EQ(simple(Cast::make(DataType::Bool(), i32(2))), "True");
  // float64 -> float32 rounds to float32.
  Expr narrowed = simplify(Cast::make(kF32, FloatImm::make(DataType::Float(64), 0.1)));
  EXPECT_EQ(*as_const_float(narrowed), static_cast<double>(0.1f));
  // Out of range: undefined at run time, so not folded.
  EXPECT_EQ(simplify(Cast::make(kI32, f32(1e20))).as<Cast>() != nullptr, true);
}

TEST_F(Simplify, CollectsAffineTerms) {
  EXPECT_EQ(simple(Add::make(Add::make(x, i32(3)), i32(4))), "(x + 7)");
  EXPECT_EQ(simple(Add::make(Mul::make(x, i32(2)), Mul::make(x, i32(3)))), "(x * 5)");
  EXPECT_EQ(simple(Sub::make(Add::make(x, y), x)), "y");
  EXPECT_EQ(simple(Sub::make(Add::make(n, i32(1)), x)), "((n - x) + 1)");
  EXPECT_EQ(simple(Sub::make(i32(3), x)), "(3 - x)");
  // Not expanded when that would make it bigger.
  EXPECT_EQ(simple(Mul::make(Add::make(x, y), i32(2))), "((x + y) * 2)");
  EXPECT_EQ(simple(Sub::make(Mul::make(Add::make(x, y), i32(2)), Mul::make(y, i32(2)))), "(x * 2)");
  // Wrap-around arithmetic is a ring: (x + 2^31) + 2^31 is x in int32.
  EXPECT_EQ(simple(Add::make(Add::make(x, i32(-2147483648LL)), i32(-2147483648LL))), "x");
}

TEST_F(Simplify, RoundedUpSplitExtent) {
  // floordiv(n + 3, 4) * 4 - n, the padding of a split by 4, is 3 - floormod(n + 3, 4).
  Expr padded = Sub::make(Mul::make(FloorDiv::make(Add::make(n, i32(3)), i32(4)), i32(4)), n);
  EXPECT_EQ(simple(padded), "(3 - floormod((n + 3), 4))");
}

TEST_F(Simplify, FloorDivisionOfAffineSums) {
  // Without any range: (4x + 8) // 4 = x + 2, (4x + y) % 4 = y % 4, (x + 5) // 4 = (x + 1) // 4
  // + 1.
  EXPECT_EQ(simple(FloorDiv::make(Add::make(Mul::make(x, i32(4)), i32(8)), i32(4))), "(x + 2)");
  EXPECT_EQ(simple(FloorMod::make(Add::make(Mul::make(x, i32(4)), y), i32(4))), "floormod(y, 4)");
  EXPECT_EQ(simple(FloorDiv::make(Add::make(x, i32(5)), i32(4))), "(floordiv((x + 1), 4) + 1)");
  // A negative constant stays: (x - 1) // c + 1 as (x + c - 1) // c would wrap for x near 2**31.
  EXPECT_EQ(simple(Add::make(FloorDiv::make(Sub::make(x, i32(1)), i32(2147483647)), i32(1))),
            "(floordiv((x - 1), 2147483647) + 1)");
  EXPECT_EQ(simple(FloorDiv::make(FloorDiv::make(x, i32(4)), i32(8))), "floordiv(x, 32)");
  EXPECT_EQ(simple(FloorMod::make(FloorMod::make(x, i32(32)), i32(8))), "floormod(x, 8)");
  // floormod(x, 8) is in [0, 8), so taking it modulo 32 changes nothing.
  EXPECT_EQ(simple(FloorMod::make(FloorMod::make(x, i32(8)), i32(32))), "floormod(x, 8)");
  EXPECT_EQ(simple(FloorMod::make(FloorMod::make(x, i32(32)), i32(12))),
            "floormod(floormod(x, 32), 12)");
}

TEST_F(Simplify, UsesLoopRangesForDivisionAndGuards) {
  Expr xo = Var::make(kI32, "xo"), xi = Var::make(kI32, "xi");
  Buffer b = make_buffer("B", kI32, {i32(16)});
  Expr fused = Add::make(Mul::make(xo, i32(4)), xi);
  // B[xo*4 + xi] = (xo*4 + xi) // 4 * 10 + (xo*4 + xi) % 4, guarded by xo*4 + xi < 16 (always
  // true for xo, xi in [0, 4)), and by < 15 (not always).
  Expr value =
      Add::make(Mul::make(FloorDiv::make(fused, i32(4)), i32(10)), FloorMod::make(fused, i32(4)));
  Stmt store = Store::make(b, value, Cast::make(kOffsetType, fused));
  Stmt always = IfThenElse::make(LT::make(fused, i32(16)), store);
  Stmt sometimes = IfThenElse::make(LT::make(fused, i32(15)), store);
  auto nest = [&](Stmt body) {
    return For::make(xo, i32(0), i32(4), ForKind::kSerial,
                     For::make(xi, i32(0), i32(4), ForKind::kSerial, body));
  };
  EXPECT_EQ(simple(nest(always)),
            "for (xo, 0, 4) {\n"
            "  for (xi, 0, 4) {\n"
            "    B[int64(((xo * 4) + xi))] = ((xo * 10) + xi)\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(simple(nest(sometimes)),
            "for (xo, 0, 4) {\n"
            "  for (xi, 0, 4) {\n"
            "    if ((((xo * 4) + xi) < 15)) {\n"
            "      B[int64(((xo * 4) + xi))] = ((xo * 10) + xi)\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST_F(Simplify, SymbolicLoopRangeGivesALowerBound) {
  Expr i = Var::make(kI32, "i");
  Buffer b = make_buffer("B", kI32, {n});
  Stmt s = For::make(
      i, i32(0), n, ForKind::kSerial,
      IfThenElse::make(GE::make(i, i32(0)),
                       Store::make(b, FloorMod::make(i, i32(1)), Cast::make(kOffsetType, i))));
  EXPECT_EQ(simple(s), "for (i, 0, n) {\n  B[int64(i)] = 0\n}\n");
}

TEST_F(Simplify, LoopsOfExtentZeroAndOne) {
  Expr i = Var::make(kI32, "i"), j = Var::make(kI32, "j");
  Buffer b = make_buffer("B", kI32, {i32(8)});
  Stmt body = Store::make(b, Add::make(i, j), Cast::make(kOffsetType, Add::make(i, j)));
  Stmt empty = For::make(i, i32(0), i32(0), ForKind::kSerial, body);
  EXPECT_EQ(simple(empty), "");
  // extent 1: the loop disappears and i becomes its minimum.
  Stmt single = For::make(j, i32(0), i32(4), ForKind::kSerial,
                          For::make(i, i32(3), i32(1), ForKind::kVectorized, body));
  EXPECT_EQ(simple(single), "for (j, 0, 4) {\n  B[int64((j + 3))] = (j + 3)\n}\n");
  // Extent n - n is 0 too.
  Stmt symbolic_empty = For::make(i, i32(0), Sub::make(n, n), ForKind::kSerial, body);
  EXPECT_EQ(simple(Block::make({symbolic_empty, single})),
            "for (j, 0, 4) {\n  B[int64((j + 3))] = (j + 3)\n}\n");
}

TEST_F(Simplify, ConditionalsAndLets) {
  Buffer b = make_buffer("B", kI32, {i32(8)});
  Expr zero = IntImm::make(kOffsetType, 0);
  Stmt s1 = Store::make(b, i32(1), zero), s2 = Store::make(b, i32(2), zero);
  EXPECT_EQ(simple(IfThenElse::make(LT::make(i32(1), i32(2)), s1, s2)), "B[0i64] = 1\n");
  EXPECT_EQ(simple(IfThenElse::make(GT::make(i32(1), i32(2)), s1, s2)), "B[0i64] = 2\n");
  EXPECT_EQ(simple(IfThenElse::make(GT::make(i32(1), i32(2)), s1)), "");
  // A constant let is substituted; a computed one stays (and gives its variable a range).
  Expr v = Var::make(kI32, "v");
  EXPECT_EQ(simple(LetStmt::make(v, i32(5), Store::make(b, Add::make(v, i32(1)), zero))),
            "B[0i64] = 6\n");
  Expr w = Var::make(kI32, "w");
  Stmt let =
      LetStmt::make(w, FloorMod::make(x, i32(4)), Store::make(b, FloorDiv::make(w, i32(4)), zero));
  EXPECT_EQ(simple(let), "let w = floormod(x, 4)\nB[0i64] = 0\n");
}

TEST_F(Simplify, VectorRampsAndBroadcasts) {
  Expr base = Var::make(kI32, "b");
  Expr ramp = Ramp::make(base, i32(1), 8);
  Expr bc = Broadcast::make(Mul::make(x, i32(16)), 8);
  EXPECT_EQ(simple(Add::make(bc, ramp)), "ramp(((x * 16) + b), 1, 8)");
  EXPECT_EQ(simple(Mul::make(ramp, Broadcast::make(i32(4), 8))), "ramp((b * 4), 4, 8)");
  EXPECT_EQ(simple(Add::make(Broadcast::make(i32(2), 8), Broadcast::make(i32(3), 8))), "x8(5)");
}

TEST_F(Simplify, WidenedConstantRampStaysARamp) {
  // A vectorised int32 index widened to an int64 offset, times a stride that became the
  // constant 1 (the compact version of a kernel), plus a base: one contiguous ramp.
  const DataType i64 = DataType::Int(64);
  Expr base = Var::make(i64, "o");
  Expr wide = Cast::make(i64.with_lanes(16), Ramp::make(i32(16), i32(1), 16));
  Expr index = Add::make(Broadcast::make(base, 16),
                         Mul::make(wide, Broadcast::make(IntImm::make(i64, 1), 16)));
  EXPECT_EQ(simple(index), "ramp((o + 16i64), 1i64, 16)");
  // Lanes past int32's range wrapped before the cast: not a ramp of the wide type.
  Expr wraps = Cast::make(i64.with_lanes(4), Ramp::make(i32(2147483646), i32(1), 4));
  EXPECT_NE(simplify(wraps).as<Cast>(), nullptr);
  // Narrowing is left alone.
  Expr narrow =
      Cast::make(kI32.with_lanes(4), Ramp::make(IntImm::make(i64, 0), IntImm::make(i64, 1), 4));
  EXPECT_NE(simplify(narrow).as<Cast>(), nullptr);
}

TEST_F(Simplify, TileStartsAreMultiplesOfTheTile) {
  // x - x % 32 is 32 * (x // 32): divided by 32 (or 16, a divisor) it is x // 32 (x // 32 * 2)
  // with no remainder; by 64 (not a divisor of 32) nothing is known.
  Expr start = Sub::make(x, FloorMod::make(x, i32(32)));
  EXPECT_EQ(simple(FloorDiv::make(start, i32(32))), "floordiv(x, 32)");
  EXPECT_EQ(simple(FloorMod::make(start, i32(32))), "0");
  EXPECT_EQ(simple(FloorMod::make(Add::make(start, i32(5)), i32(16))), "5");
  EXPECT_EQ(simple(FloorDiv::make(start, i32(64))), "floordiv((x - floormod(x, 32)), 64)");
  // The lanes of a ramp from a multiple of 32 stay in one block of 32 when 16 lanes of stride 1
  // start at 0 or 16 past it: the quotient is a broadcast and the remainder a ramp.
  Expr c32 = Broadcast::make(i32(32), 16);
  EXPECT_EQ(simple(FloorDiv::make(Ramp::make(start, i32(1), 16), c32)), "x16(floordiv(x, 32))");
  EXPECT_EQ(simple(FloorMod::make(Ramp::make(Add::make(start, i32(16)), i32(1), 16), c32)),
            "ramp(16, 1, 16)");
  // 17 lanes from 16 would cross into the next block: left alone
  Expr c32b = Broadcast::make(i32(32), 17);
  Expr crossing = FloorDiv::make(Ramp::make(Add::make(start, i32(16)), i32(1), 17), c32b);
  EXPECT_EQ(to_string(simplify(crossing)).rfind("floordiv(ramp(", 0), 0u);
}

TEST_F(Simplify, RampFromAMultipleStaysInOneRowOfAMultipleWidth) {
  // A fused (h, w) loop of rows of 56, vectorized by 8: the ramp 8 * x + [0, 8) lies in one
  // multiple of 8, and 8 divides 56, so every lane has the same row and the columns are a ramp.
  Expr c56 = Broadcast::make(i32(56), 8);
  Expr base = Mul::make(x, i32(8));
  EXPECT_EQ(simple(FloorDiv::make(Ramp::make(base, i32(1), 8), c56)), "x8(floordiv((x * 8), 56))");
  EXPECT_EQ(simple(FloorMod::make(Ramp::make(base, i32(1), 8), c56)),
            "ramp(floormod((x * 8), 56), 1, 8)");
  // Offset by 4 with 4 lanes: still inside the multiple of 8 (lanes 4..7).
  Expr c56q = Broadcast::make(i32(56), 4);
  EXPECT_EQ(simple(FloorDiv::make(Ramp::make(Add::make(base, i32(4)), i32(1), 4), c56q)),
            "x4(floordiv(((x * 8) + 4), 56))");
  // Rows of 60 (8 does not divide 60), or 8 lanes from an offset of 4: a lane may cross a row.
  Expr c60 = Broadcast::make(i32(60), 8);
  EXPECT_EQ(to_string(simplify(FloorDiv::make(Ramp::make(base, i32(1), 8), c60)))
                .rfind("floordiv(ramp(", 0),
            0u);
  Expr shifted = FloorDiv::make(Ramp::make(Add::make(base, i32(4)), i32(1), 8), c56);
  EXPECT_EQ(to_string(simplify(shifted)).rfind("floordiv(ramp(", 0), 0u);
}

TEST_F(Simplify, VectorQuotientTimesDivisorPlusRemainderIsTheDividend) {
  // An (h, w) tile read along one axis k as [k // 7, k % 7] with the compact strides 7 and 1:
  // o + (k // 7) * 7 + (k % 7) * 1 is the contiguous ramp o + k, whatever k's lanes cross.
  const DataType i64 = DataType::Int(64);
  Expr o = Var::make(i64, "o");
  Expr k = Ramp::make(Var::make(i64, "k"), IntImm::make(i64, 1), 16);
  auto bc = [&](int64_t v) { return Broadcast::make(IntImm::make(i64, v), 16); };
  Expr q = Mul::make(FloorDiv::make(k, bc(7)), bc(7));
  Expr r = Mul::make(FloorMod::make(k, bc(7)), bc(1));
  EXPECT_EQ(simple(Add::make(Add::make(Broadcast::make(o, 16), q), r)), "ramp((o + k), 1i64, 16)");
  // Either order, and a common factor: 14 * (k // 7) + 2 * (k % 7) is 2 * k.
  Expr q2 = Mul::make(FloorDiv::make(k, bc(7)), bc(14));
  Expr r2 = Mul::make(FloorMod::make(k, bc(7)), bc(2));
  EXPECT_EQ(simple(Add::make(r2, q2)), "ramp((k * 2i64), 2i64, 16)");
  // An int32 quotient and remainder widened to int64 give the widened dividend (exact: both
  // fit int32); the cast of a ramp with an unknown base stays a cast.
  Expr k32 = Ramp::make(x, i32(1), 8);
  Expr c7 = Broadcast::make(i32(7), 8);
  Expr wq = Mul::make(Cast::make(i64.with_lanes(8), FloorDiv::make(k32, c7)),
                      Broadcast::make(IntImm::make(i64, 7), 8));
  Expr wr = Cast::make(i64.with_lanes(8), FloorMod::make(k32, c7));
  EXPECT_EQ(simple(Add::make(wq, wr)), "int64x8(ramp(x, 1, 8))");
  // Different divisors, dividends or factors: left alone.
  Expr wrong_c = Add::make(Mul::make(FloorDiv::make(k, bc(7)), bc(7)), FloorMod::make(k, bc(5)));
  EXPECT_NE(simple(wrong_c).find("floordiv"), std::string::npos);
  Expr other = Ramp::make(o, IntImm::make(i64, 1), 16);
  Expr wrong_x = Add::make(q, FloorMod::make(other, bc(7)));
  EXPECT_NE(simple(wrong_x).find("floordiv"), std::string::npos);
  Expr wrong_k = Add::make(Mul::make(FloorDiv::make(k, bc(7)), bc(6)), FloorMod::make(k, bc(7)));
  EXPECT_NE(simple(wrong_k).find("floordiv"), std::string::npos);
}

TEST_F(Simplify, WidenedScalarQuotientAndRemainderAreTheWidenedDividend) {
  // A fused (batch, channel) loop's index into a compact (8, 512, 7, 7) tensor:
  // int64(f // 512) * 25088 + int64(f % 512) * 49 is int64(f) * 49 (25088 = 512 * 49).
  const DataType i64 = DataType::Int(64);
  auto c64 = [&](int64_t v) { return IntImm::make(i64, v); };
  Expr wq = Mul::make(Cast::make(i64, FloorDiv::make(x, i32(512))), c64(25088));
  Expr wr = Mul::make(Cast::make(i64, FloorMod::make(x, i32(512))), c64(49));
  Expr o = Var::make(i64, "o");
  EXPECT_EQ(simple(Add::make(Add::make(wq, wr), o)), "((int64(x) * 49i64) + o)");
  EXPECT_EQ(simple(Add::make(wr, wq)), "(int64(x) * 49i64)");
  // A factor of one on the remainder, and a quotient's factor that is not the divisor times
  // the remainder's (a padded row stride): the second is left alone.
  Expr r1 = Cast::make(i64, FloorMod::make(x, i32(7)));
  Expr q7 = Mul::make(Cast::make(i64, FloorDiv::make(x, i32(7))), c64(7));
  EXPECT_EQ(simple(Add::make(q7, r1)), "int64(x)");
  Expr q8 = Mul::make(Cast::make(i64, FloorDiv::make(x, i32(7))), c64(8));
  EXPECT_NE(simple(Add::make(q8, r1)).find("floordiv"), std::string::npos);
}

TEST_F(Simplify, LeavesSimpleExpressionsShared) {
  Expr e = Add::make(Mul::make(x, i32(4)), y);
  EXPECT_TRUE(simplify(e).same_as(e));
}

// An independent interpreter for int32 expressions (Python semantics for floordiv/floormod, C
// for / and %), used to check that simplification never changes a value. nullopt: division by
// zero somewhere.
std::optional<int64_t> eval(const Expr& e,
                            const std::unordered_map<const ExprNode*, int64_t>& env) {
  auto wrap32 = [](int64_t v) { return static_cast<int64_t>(static_cast<int32_t>(v)); };
  auto both = [&](const Expr& a, const Expr& b, auto f) -> std::optional<int64_t> {
    auto x = eval(a, env), y = eval(b, env);
    if (!x || !y) return std::nullopt;
    return f(*x, *y);
  };
  if (auto c = as_const_int(e)) return *c;
  if (e.as<Var>()) return env.at(e.get());
  if (const auto* n = e.as<Add>())
    return both(n->a, n->b, [&](auto a, auto b) { return wrap32(a + b); });
  if (const auto* n = e.as<Sub>())
    return both(n->a, n->b, [&](auto a, auto b) { return wrap32(a - b); });
  if (const auto* n = e.as<Mul>())
    return both(n->a, n->b, [&](auto a, auto b) { return wrap32(a * b); });
  if (const auto* n = e.as<Min>())
    return both(n->a, n->b, [](auto a, auto b) { return std::min(a, b); });
  if (const auto* n = e.as<Max>())
    return both(n->a, n->b, [](auto a, auto b) { return std::max(a, b); });
  auto divide = [&](const Expr& a, const Expr& b, bool floor,
                    bool quotient) -> std::optional<int64_t> {
    auto x = eval(a, env), y = eval(b, env);
    if (!x || !y || *y == 0) return std::nullopt;
    int64_t q = *x / *y;
    if (floor && (*x % *y != 0) && ((*x < 0) != (*y < 0))) --q;
    return quotient ? q : *x - q * *y;
  };
  if (const auto* n = e.as<FloorDiv>()) return divide(n->a, n->b, true, true);
  if (const auto* n = e.as<FloorMod>()) return divide(n->a, n->b, true, false);
  if (const auto* n = e.as<Div>()) return divide(n->a, n->b, false, true);
  if (const auto* n = e.as<Mod>()) return divide(n->a, n->b, false, false);
  if (const auto* n = e.as<LT>())
    return both(n->a, n->b, [](auto a, auto b) { return int64_t{a < b}; });
  if (const auto* n = e.as<LE>())
    return both(n->a, n->b, [](auto a, auto b) { return int64_t{a <= b}; });
  if (const auto* n = e.as<GT>())
    return both(n->a, n->b, [](auto a, auto b) { return int64_t{a > b}; });
  if (const auto* n = e.as<GE>())
    return both(n->a, n->b, [](auto a, auto b) { return int64_t{a >= b}; });
  if (const auto* n = e.as<EQ>())
    return both(n->a, n->b, [](auto a, auto b) { return int64_t{a == b}; });
  if (const auto* n = e.as<NE>())
    return both(n->a, n->b, [](auto a, auto b) { return int64_t{a != b}; });
  if (const auto* n = e.as<And>())
    return both(n->a, n->b, [](auto a, auto b) { return int64_t{a && b}; });
  if (const auto* n = e.as<Or>())
    return both(n->a, n->b, [](auto a, auto b) { return int64_t{a || b}; });
  if (const auto* n = e.as<Not>()) {
    auto v = eval(n->a, env);
    return v ? std::optional<int64_t>(!*v) : std::nullopt;
  }
  if (const auto* n = e.as<Select>()) {
    auto c = eval(n->condition, env), t = eval(n->true_value, env), f = eval(n->false_value, env);
    if (!c || !t || !f) return std::nullopt;
    return *c ? *t : *f;
  }
  ADD_FAILURE() << "eval: unexpected node " << to_string(e);
  return std::nullopt;
}

class RandomExprs {
 public:
  RandomExprs(std::vector<Expr> vars, unsigned seed) : vars_(std::move(vars)), rng_(seed) {}
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  Expr integer(int depth) {
    if (depth == 0 || pick(4) == 0) {
      return pick(2) ? vars_[pick(static_cast<int>(vars_.size()))] : i32(pick(17) - 8);
    }
    Expr a = integer(depth - 1), b = integer(depth - 1);
    switch (pick(11)) {
      case 0:
        return Add::make(a, b);
      case 1:
        return Sub::make(a, b);
      case 2:
        return Mul::make(a, i32(pick(9) - 4));
      case 3:
        return Mul::make(a, b);
      case 4:
        return FloorDiv::make(a, pick(2) ? i32(pick(8) + 1) : b);
      case 5:
        return FloorMod::make(a, pick(2) ? i32(pick(8) + 1) : b);
      case 6:
        return Div::make(a, b);
      case 7:
        return Mod::make(a, b);
      case 8:
        return Min::make(a, b);
      case 9:
        return Max::make(a, b);
      default:
        return Select::make(condition(depth - 1), a, b);
    }
  }

  Expr condition(int depth) {
    // Comparisons with small constants are where ranges decide things (floormod(x, 4) < 3).
    Expr a = integer(depth), b = pick(2) ? integer(depth) : i32(pick(17) - 8);
    switch (pick(8)) {
      case 0:
        return LT::make(a, b);
      case 1:
        return LE::make(a, b);
      case 2:
        return GT::make(a, b);
      case 3:
        return GE::make(a, b);
      case 4:
        return EQ::make(a, b);
      case 5:
        return NE::make(a, b);
      case 6:
        return And::make(LT::make(a, b), Not::make(EQ::make(a, i32(0))));
      default:
        return Or::make(GE::make(a, b), EQ::make(b, i32(1)));
    }
  }

 private:
  std::vector<Expr> vars_;
  std::mt19937 rng_;
};

TEST(SimplifyProperty, RandomIntegerExpressionsKeepTheirValues) {
  Expr x = Var::make(kI32, "x"), y = Var::make(kI32, "y"), z = Var::make(kI32, "z");
  RandomExprs gen({x, y, z}, 1234);
  std::mt19937 values(99);
  int checked = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    Expr e = trial % 3 == 0 ? gen.condition(3) : gen.integer(4);
    Expr s = simplify(e);
    for (int k = 0; k < 8; ++k) {
      std::unordered_map<const ExprNode*, int64_t> env = {
          {x.get(), static_cast<int>(values() % 41) - 20},
          {y.get(), static_cast<int>(values() % 41) - 20},
          {z.get(), static_cast<int>(values() % 41) - 20}};
      auto want = eval(e, env);
      if (!want) continue;
      auto got = eval(s, env);
      ASSERT_TRUE(got.has_value()) << to_string(e) << " -> " << to_string(s);
      ASSERT_EQ(*got, *want) << to_string(e) << " -> " << to_string(s) << " at x=" << env[x.get()]
                             << " y=" << env[y.get()] << " z=" << env[z.get()];
      ++checked;
    }
  }
  EXPECT_GT(checked, 10000);
}

// The same inside loops, where the simplifier knows x in [lo, lo + extent) and y in [0, 4).
TEST(SimplifyProperty, RandomExpressionsInsideLoopsKeepTheirValues) {
  Expr x = Var::make(kI32, "x"), y = Var::make(kI32, "y"), z = Var::make(kI32, "z");
  RandomExprs gen({x, y, z}, 777);
  std::mt19937 values(5);
  Buffer b = make_buffer("B", kI32, {i32(1)});
  int checked = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    int lo = gen.pick(13) - 6, extent = gen.pick(9) + 2;
    Expr e = gen.integer(4);
    if (trial % 2) e = Select::make(gen.condition(2), e, i32(-100));
    Stmt loop = For::make(x, i32(lo), i32(extent), ForKind::kSerial,
                          For::make(y, i32(0), i32(4), ForKind::kSerial,
                                    Store::make(b, e, IntImm::make(kOffsetType, 0))));
    Stmt s = simplify(loop);
    // Dig out the stored value (the loops themselves stay: both extents are above 1).
    const Store* store = nullptr;
    for (Stmt cur = s; !store;) {
      if (const auto* f = cur.as<For>()) {
        cur = f->body;
      } else {
        store = cur.as<Store>();
        ASSERT_NE(store, nullptr) << to_string(s);
      }
    }
    for (int k = 0; k < 8; ++k) {
      std::unordered_map<const ExprNode*, int64_t> env = {
          {x.get(), lo + static_cast<int>(values() % extent)},
          {y.get(), static_cast<int>(values() % 4)},
          {z.get(), static_cast<int>(values() % 41) - 20}};
      auto want = eval(e, env);
      if (!want) continue;
      auto got = eval(store->value, env);
      ASSERT_TRUE(got.has_value()) << to_string(e) << " -> " << to_string(store->value);
      ASSERT_EQ(*got, *want) << to_string(e) << " -> " << to_string(store->value)
                             << " at x=" << env[x.get()] << " y=" << env[y.get()]
                             << " z=" << env[z.get()];
      ++checked;
    }
  }
  EXPECT_GT(checked, 10000);
}

// Index-like expressions (sums, products by constants, floordiv/floormod/min/max with constants,
// compared with constants) over loop variables with small ranges, checked at every point of the
// ranges: this is where the simplifier's range reasoning decides things.
TEST(SimplifyProperty, IndexExpressionsOverWholeLoopRanges) {
  Expr x = Var::make(kI32, "x"), y = Var::make(kI32, "y");
  std::mt19937 rng(2024);
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  std::function<Expr(int)> index = [&](int depth) -> Expr {
    if (depth == 0 || pick(3) == 0) return pick(3) ? (pick(2) ? x : y) : i32(pick(11) - 5);
    Expr a = index(depth - 1);
    Expr c = i32(pick(7) + 1);
    switch (pick(9)) {
      case 0:
        return Add::make(a, index(depth - 1));
      case 1:
        return Sub::make(a, index(depth - 1));
      case 2:
        return Mul::make(a, i32(pick(7) - 3));
      case 3:
        return FloorDiv::make(a, c);
      case 4:
        return FloorMod::make(a, c);
      case 5:
        return Div::make(a, c);
      case 6:
        return Mod::make(a, c);
      case 7:
        return Min::make(a, pick(2) ? index(depth - 1) : i32(pick(11) - 5));
      default:
        return Max::make(a, pick(2) ? index(depth - 1) : i32(pick(11) - 5));
    }
  };
  Buffer b = make_buffer("B", kI32, {i32(1)});
  int checked = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    int lo = pick(13) - 6, extent = pick(8) + 2;
    Expr e = index(3);
    Expr k = i32(pick(13) - 6);
    switch (pick(4)) {
      case 0:
        e = Select::make(LT::make(e, k), i32(1), i32(0));
        break;
      case 1:
        e = Select::make(LE::make(e, k), i32(1), i32(0));
        break;
      case 2:
        e = Select::make(EQ::make(e, k), i32(1), i32(0));
        break;
      default:
        break;
    }
    Stmt loop = For::make(x, i32(lo), i32(extent), ForKind::kSerial,
                          For::make(y, i32(0), i32(4), ForKind::kSerial,
                                    Store::make(b, e, IntImm::make(kOffsetType, 0))));
    Stmt s = simplify(loop);
    const Store* store = nullptr;
    for (Stmt cur = s; !store;) {
      if (const auto* f = cur.as<For>()) {
        cur = f->body;
      } else {
        store = cur.as<Store>();
        ASSERT_NE(store, nullptr) << to_string(s);
      }
    }
    for (int xv = lo; xv < lo + extent; ++xv) {
      for (int yv = 0; yv < 4; ++yv) {
        std::unordered_map<const ExprNode*, int64_t> env = {{x.get(), xv}, {y.get(), yv}};
        auto want = eval(e, env);
        auto got = eval(store->value, env);
        ASSERT_TRUE(want && got) << to_string(e) << " -> " << to_string(store->value);
        ASSERT_EQ(*got, *want) << to_string(e) << " -> " << to_string(store->value) << " for x in ["
                               << lo << ", " << lo + extent << ") at x=" << xv << " y=" << yv;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 50000);
}

}  // namespace
}  // namespace ptb
