// IR construction: the dtype rules of the node makers, the user-level helpers of op.h, tensor
// operations, and the printer's text for typical expressions and loop nests.
#include <gtest/gtest.h>

#include <string>

#include "ir/expr.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/stmt.h"
#include "ir/substitute.h"
#include "support/error.h"
#include "te/operation.h"

namespace ptb {
namespace {

Expr i32(int64_t v) { return IntImm::make(DataType::Int(32), v); }
Expr f32(double v) { return FloatImm::make(DataType::Float(32), v); }

// Runs f, expects a UserError of `kind` whose message contains `needle`.
template <typename F>
void expect_user_error(F f, ErrorKind kind, const std::string& needle) {
  try {
    f();
    FAIL() << "expected a UserError mentioning '" << needle << "'";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(IRConstruction, IntImmWrapsToItsDtype) {
  EXPECT_EQ(IntImm::make(DataType::Int(8), 300).as<IntImm>()->value, 44);
  EXPECT_EQ(IntImm::make(DataType::Int(8), 200).as<IntImm>()->value, -56);
  EXPECT_EQ(IntImm::make(DataType::UInt(8), -1).as<IntImm>()->value, 255);
  EXPECT_EQ(IntImm::make(DataType::Bool(), 5).as<IntImm>()->value, 1);
}

TEST(IRConstruction, ComparisonsAreBoolArithmeticKeepsItsDtype) {
  Expr x = Var::make(DataType::Float(16), "x");
  EXPECT_EQ(Add::make(x, x).dtype(), DataType::Float(16));
  EXPECT_EQ(LT::make(x, x).dtype(), DataType::Bool());
  EXPECT_EQ(Call::make(Intrinsic::kIsNan, {x}).dtype(), DataType::Bool());
  EXPECT_EQ(Call::make(Intrinsic::kExp, {x}).dtype(), DataType::Float(16));
}

TEST(IRConstruction, MixedDtypesAreATypeErrorSayingToCast) {
  Expr i = Var::make(DataType::Int(32), "i");
  Expr x = Var::make(DataType::Float(32), "x");
  expect_user_error([&] { Add::make(i, x); }, ErrorKind::kType, "astype");
  expect_user_error([&] { Add::make(i, x); }, ErrorKind::kType, "int32 and float32");
}

TEST(IRConstruction, LogicalOperatorsNeedBools) {
  Expr i = Var::make(DataType::Int(32), "i");
  expect_user_error([&] { And::make(i, i); }, ErrorKind::kType, "must be bool");
  expect_user_error([&] { Not::make(i); }, ErrorKind::kType, "must be bool");
  Expr b = LT::make(i, i32(3));
  expect_user_error([&] { Add::make(b, b); }, ErrorKind::kType, "bool");
}

TEST(IRConstruction, BitwiseOperatorsOnIntegersLogicalOnBools) {
  Expr i = Var::make(DataType::Int(32), "i");
  Expr u = Var::make(DataType::UInt(8), "u");
  Expr x = Var::make(DataType::Float(32), "x");
  EXPECT_EQ(to_string(bitwise_and(i, i32(3))), "(i & 3)");
  EXPECT_EQ(to_string(bitwise_or(i, i32(3))), "(i | 3)");
  EXPECT_EQ(to_string(bitwise_xor(i, i32(3))), "(i ^ 3)");
  EXPECT_EQ(to_string(bitwise_not(i)), "~i");
  EXPECT_EQ(to_string(shift_left(i, i32(2))), "(i << 2)");
  EXPECT_EQ(to_string(shift_right(i, i32(2))), "(i >> 2)");
  EXPECT_EQ(shift_right(u, u).dtype(), DataType::UInt(8));
  // Bool operands keep their logical nodes.
  Expr b = LT::make(i, i32(3));
  EXPECT_TRUE(bitwise_and(b, b).as<And>());
  EXPECT_TRUE(bitwise_or(b, b).as<Or>());
  EXPECT_TRUE(bitwise_xor(b, b).as<NE>());
  EXPECT_TRUE(bitwise_not(b).as<Not>());
  expect_user_error([&] { shift_left(b, b); }, ErrorKind::kType, "integer operands, found bool");
  expect_user_error([&] { bitwise_and(x, x); }, ErrorKind::kType, "(&) needs integer");
  expect_user_error([&] { shift_right(x, x); }, ErrorKind::kType, "found float32");
  expect_user_error([&] { bitwise_or(i, u); }, ErrorKind::kType, "int32 and uint8");
}

TEST(IRConstruction, DivisionRules) {
  Expr i = Var::make(DataType::Int(32), "i");
  Expr x = Var::make(DataType::Float(32), "x");
  expect_user_error([&] { true_div(i, i32(2)); }, ErrorKind::kType, "'//'");
  EXPECT_TRUE(floordiv(i, i32(2)).as<FloorDiv>());
  EXPECT_TRUE(floormod(i, i32(2)).as<FloorMod>());
  // Floats: NumPy's divmod, one intrinsic each (codegen computes it from fmod).
  EXPECT_EQ(to_string(floordiv(x, f32(2))), "floor_divide(x, 2.0)");
  EXPECT_EQ(to_string(floormod(x, f32(2))), "floor_mod(x, 2.0)");
  expect_user_error([&] { FloorDiv::make(x, x); }, ErrorKind::kType, "integer");
  expect_user_error([&] { truncdiv(x, x); }, ErrorKind::kType, "integers");
}

TEST(IRConstruction, MathNeedsFloats) {
  Expr i = Var::make(DataType::Int(32), "i");
  expect_user_error([&] { Call::make(Intrinsic::kExp, {i}); }, ErrorKind::kType, "astype");
  expect_user_error([&] { power(i, i); }, ErrorKind::kType, "float");
  EXPECT_EQ(Call::make(Intrinsic::kAbs, {i}).dtype(), DataType::Int(32));
}

TEST(IRConstruction, LimitsOfDtypes) {
  EXPECT_EQ(as_const_int(max_value(DataType::Int(8))), 127);
  EXPECT_EQ(as_const_int(min_value(DataType::Int(16))), -32768);
  EXPECT_EQ(as_const_int(max_value(DataType::UInt(16))), 65535);
  EXPECT_EQ(as_const_float(max_value(DataType::Float(16))), 65504.0);
  EXPECT_EQ(as_const_float(min_value(DataType::Float(16))), -65504.0);
}

TEST(IRConstruction, AllAndAnyOfConditions) {
  Expr i = Var::make(DataType::Int(32), "i");
  EXPECT_EQ(to_string(all_of({})), "True");
  EXPECT_EQ(to_string(any_of({})), "False");
  EXPECT_EQ(to_string(all_of({LT::make(i, i32(4)), GE::make(i, i32(0))})), "((i < 4) && (i >= 0))");
}

TEST(TensorOperations, ReadsCheckRankAndIndexType) {
  Expr n = Var::make(DataType::Int(32), "n");
  Tensor a = placeholder({n, i32(4)}, DataType::Float(32), "A");
  EXPECT_EQ(to_string(a({n, i32(2)})), "A[n, 2]");
  expect_user_error([&] { a({n}); }, ErrorKind::kValue, "'A' has 2 dimension(s)");
  expect_user_error([&] { a({n, f32(1)}); }, ErrorKind::kType, "index 1 of tensor 'A'");
}

TEST(TensorOperations, ComputeCollectsReduceAxesAndInputs) {
  Tensor a = placeholder({i32(8), i32(8)}, DataType::Float(32), "A");
  IterVar k = make_iter_var(Range::from_min_extent(i32(0), i32(8)), "k", IterKind::kReduce);
  Tensor c = compute({i32(8)},
                     [&](const std::vector<Expr>& i) {
                       return Reduce::make(ReduceKind::kSum, a({i[0], k->var}), {k}, Expr());
                     },
                     "C", {"i"});
  const auto* op = static_cast<const ComputeOpNode*>(c.op().get());
  ASSERT_EQ(op->reduce_axis.size(), 1u);
  EXPECT_EQ(op->reduce_axis[0], k);
  ASSERT_EQ(op->input_tensors().size(), 1u);
  EXPECT_EQ(op->input_tensors()[0], a);
  EXPECT_EQ(to_string(op->body[0]), "sum(A[i, k], axis=[k])");
}

TEST(TensorOperations, ReductionInsideAnExpressionIsRejected) {
  Tensor a = placeholder({i32(8)}, DataType::Float(32), "A");
  IterVar k = make_iter_var(Range::from_min_extent(i32(0), i32(8)), "k", IterKind::kReduce);
  expect_user_error(
      [&] {
        compute(
            {i32(1)},
            [&](const std::vector<Expr>&) {
              return Add::make(Reduce::make(ReduceKind::kSum, a({k->var}), {k}, Expr()), f32(1));
            },
            "C");
      },
      ErrorKind::kValue, "must be the whole body");
}

TEST(TensorOperations, ReduceNeedsReduceAxes) {
  IterVar i = make_iter_var(Range::from_min_extent(i32(0), i32(8)), "i", IterKind::kDataPar);
  expect_user_error([&] { Reduce::make(ReduceKind::kSum, f32(1), {i}, Expr()); }, ErrorKind::kValue,
                    "not a reduce axis");
  expect_user_error([&] { Reduce::make(ReduceKind::kMax, f32(1), {}, Expr()); }, ErrorKind::kValue,
                    "at least one reduce axis");
}

TEST(TensorOperations, PlaceholderShapeChecks) {
  expect_user_error([&] { placeholder({f32(2)}, DataType::Float(32), "A"); }, ErrorKind::kType,
                    "dimension 0 of placeholder 'A'");
  expect_user_error([&] { placeholder({i32(-1)}, DataType::Float(32), "A"); }, ErrorKind::kValue,
                    "negative");
}

TEST(Printer, Constants) {
  EXPECT_EQ(to_string(i32(-3)), "-3");
  EXPECT_EQ(to_string(IntImm::make(DataType::Int(64), 5)), "5i64");
  EXPECT_EQ(to_string(IntImm::make(DataType::Bool(), 1)), "True");
  EXPECT_EQ(to_string(f32(1.5)), "1.5");
  EXPECT_EQ(to_string(f32(2)), "2.0");
  EXPECT_EQ(to_string(FloatImm::make(DataType::Float(64), 0.25)), "0.25f64");
  EXPECT_EQ(to_string(FloatImm::make(DataType::Float(16), 3)), "3.0f16");
}

TEST(Printer, Expressions) {
  Expr i = Var::make(DataType::Int(32), "i");
  Expr x = Var::make(DataType::Float(32), "x");
  EXPECT_EQ(to_string(Add::make(Mul::make(i, i32(4)), i32(1))), "((i * 4) + 1)");
  EXPECT_EQ(to_string(Cast::make(DataType::Float(32), i)), "float32(i)");
  EXPECT_EQ(to_string(Select::make(GT::make(x, f32(0)), x, f32(0))), "select((x > 0.0), x, 0.0)");
  EXPECT_EQ(to_string(Call::make(Intrinsic::kSigmoid, {x})), "sigmoid(x)");
  EXPECT_EQ(to_string(Max::make(i, i32(0))), "max(i, 0)");
  EXPECT_EQ(to_string(Not::make(EQ::make(i, i32(0)))), "!(i == 0)");
}

TEST(Printer, LoopNest) {
  Expr i = Var::make(DataType::Int(32), "i");
  Expr n = Var::make(DataType::Int(32), "n");
  Buffer a = make_buffer("A", DataType::Float(32), {n});
  Buffer b = make_buffer("B", DataType::Float(32), {n});
  Expr idx = Cast::make(kOffsetType, i);
  Stmt store = Store::make(b, Mul::make(Load::make(a, idx), f32(2)), idx);
  Stmt guarded = IfThenElse::make(LT::make(i, i32(10)), store, Store::make(b, f32(0), idx));
  Stmt loop = For::make(i, i32(0), n, ForKind::kParallel, guarded);
  EXPECT_EQ(to_string(loop),
            "parallel (i, 0, n) {\n"
            "  if ((i < 10)) {\n"
            "    B[int64(i)] = (A[int64(i)] * 2.0)\n"
            "  } else {\n"
            "    B[int64(i)] = 0.0\n"
            "  }\n"
            "}\n");
}

TEST(Substitute, ReplacesVariablesByIdentityNotByName) {
  Expr i = Var::make(DataType::Int(32), "i");
  Expr other_i = Var::make(DataType::Int(32), "i");  // same name, another variable
  Expr j = Var::make(DataType::Int(32), "j");
  Expr e = Add::make(Mul::make(i, i32(4)), other_i);
  EXPECT_EQ(to_string(substitute(e, {{i.get(), Add::make(j, i32(1))}})), "(((j + 1) * 4) + i)");
  // Nothing to replace: the very same node comes back, shared.
  EXPECT_TRUE(substitute(e, {{j.get(), i32(0)}}).same_as(e));
  EXPECT_TRUE(substitute(e, {}).same_as(e));
}

TEST(Substitute, ReachesIntoStatements) {
  Expr i = Var::make(DataType::Int(32), "i");
  Expr n = Var::make(DataType::Int(32), "n");
  Buffer b = make_buffer("B", DataType::Int(32), {n});
  Stmt loop = For::make(i, i32(0), n, ForKind::kSerial,
                        Store::make(b, Mul::make(i, n), Cast::make(kOffsetType, i)));
  EXPECT_EQ(to_string(substitute(loop, {{n.get(), i32(8)}})),
            "for (i, 0, 8) {\n  B[int64(i)] = (i * 8)\n}\n");
}

}  // namespace
}  // namespace ptb
