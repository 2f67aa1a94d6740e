// The clamp_guarded_loops and version_invariant_guards lowering passes: where a loop's guard
// moves into its bounds or out of its inner loops, and what is left alone. Checked on the
// statements they return (split points worked out by hand), and partition_ranges on a loop
// variable that runs a loop of symbolic bounds.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "ir/expr.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/stmt.h"
#include "lower/clamp_guarded_loops.h"
#include "lower/partition_ranges.h"
#include "lower/version_guards.h"

namespace ptb {
namespace {

const DataType kI32 = DataType::Int(32);
const DataType kI64 = DataType::Int(64);
const DataType kF32 = DataType::Float(32);

Expr i32(int64_t v) { return IntImm::make(kI32, v); }

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// acc[lane] += x[k * 16 + lane] for k in [0, (n + 15) // 16), lane in [0, 16) `lane_kind`,
// guarded by k * 16 + lane < n (a symbolic row split into vectors, as a factored reduction's
// condition leaves it).
Stmt row_sum(const Expr& n, ForKind lane_kind = ForKind::kVectorized) {
  Expr k = Var::make(kI32, "k"), lane = Var::make(kI32, "lane");
  Buffer acc = make_buffer("acc", kF32, {IntImm::make(kI64, 16)});
  Buffer x = make_buffer("x", kF32, {cast(kI64, n)});
  Expr at = Add::make(Mul::make(k, i32(16)), lane);
  Stmt add =
      Store::make(acc, Add::make(Load::make(acc, cast(kI64, lane)), Load::make(x, cast(kI64, at))),
                  cast(kI64, lane));
  Stmt guarded = IfThenElse::make(LT::make(at, n), add);
  Stmt lanes = For::make(lane, i32(0), i32(16), lane_kind, guarded);
  return For::make(k, i32(0), floordiv(Add::make(n, i32(15)), i32(16)), ForKind::kSerial, lanes);
}

TEST(ClampGuardedLoops, RowSplitIntoWholeVectorsAndATail) {
  Expr n = Var::make(kI32, "n");
  Stmt s = clamp_guarded_loops(row_sum(n));
  const auto* parts = s.as<Block>();
  ASSERT_NE(parts, nullptr) << to_string(s);
  ASSERT_EQ(parts->stmts.size(), 2u);
  const auto* whole = parts->stmts[0].as<For>();
  const auto* tail = parts->stmts[1].as<For>();
  ASSERT_TRUE(whole && tail) << to_string(s);
  // Whole vectors: k < n // 16 (k * 16 + 15 < n), no guard left.
  EXPECT_TRUE(has(to_string(whole->extent), "floordiv(n, 16)")) << to_string(whole->extent);
  EXPECT_FALSE(has(to_string(whole->body), "if (")) << to_string(whole->body);
  // The tail starts where they end and keeps the guard.
  EXPECT_TRUE(has(to_string(tail->min), "floordiv(n, 16)")) << to_string(tail->min);
  EXPECT_TRUE(has(to_string(tail->body), "< n)")) << to_string(tail->body);
  // Each part runs a variable of its own.
  EXPECT_FALSE(whole->var.same_as(tail->var));
}

TEST(ClampGuardedLoops, GuardWithoutNestedVariablesBecomesTheLoopsEnd) {
  // for (i, 0, 256) { for (lane, 0, 16) { if (b * 256 + i < m) ... } }: cascade_sum's block.
  Expr i = Var::make(kI32, "i"), lane = Var::make(kI32, "lane");
  Expr b = Var::make(kI32, "b"), m = Var::make(kI32, "m");
  Buffer out = make_buffer("out", kF32, {IntImm::make(kI64, 16)});
  Stmt store = Store::make(out, make_zero(kF32), cast(kI64, lane));
  Stmt guarded = IfThenElse::make(LT::make(Add::make(Mul::make(b, i32(256)), i), m), store);
  Stmt nest = For::make(i, i32(0), i32(256), ForKind::kSerial,
                        For::make(lane, i32(0), i32(16), ForKind::kVectorized, guarded));
  Stmt s = clamp_guarded_loops(nest);
  const auto* loop = s.as<For>();
  ASSERT_NE(loop, nullptr) << to_string(s);
  std::string extent = to_string(loop->extent);
  EXPECT_TRUE(has(extent, "min(256") && has(extent, "(b * 256)")) << extent;
  EXPECT_FALSE(has(to_string(loop->body), "if (")) << to_string(loop->body);
}

TEST(ClampGuardedLoops, LeavesOtherLoopsAlone) {
  Expr n = Var::make(kI32, "n");
  // A guard with an else, one whose bound reads the loop's variable, a parallel loop.
  Expr k = Var::make(kI32, "k");
  Buffer out = make_buffer("out", kF32, {IntImm::make(kI64, 64)});
  Stmt store = Store::make(out, make_zero(kF32), cast(kI64, k));
  Stmt with_else = For::make(k, i32(0), i32(64), ForKind::kSerial,
                             IfThenElse::make(LT::make(k, n), store, store));
  EXPECT_TRUE(clamp_guarded_loops(with_else).same_as(with_else));
  Stmt own_bound = For::make(k, i32(0), i32(64), ForKind::kSerial,
                             IfThenElse::make(LT::make(k, Mul::make(k, n)), store));
  EXPECT_TRUE(clamp_guarded_loops(own_bound).same_as(own_bound));
  Stmt parallel =
      For::make(k, i32(0), i32(64), ForKind::kParallel, IfThenElse::make(LT::make(k, n), store));
  EXPECT_TRUE(clamp_guarded_loops(parallel).same_as(parallel));
}

TEST(VersionInvariantGuards, TileGuardTestedOncePerIteration) {
  // for (j, 0, nj) { for (k, 0, 64) { if (j * 32 + 31 < s) full else masked } }: the guard
  // does not change along k; the body is versioned on it.
  Expr j = Var::make(kI32, "j"), k = Var::make(kI32, "k"), s = Var::make(kI32, "s");
  Buffer acc = make_buffer("acc", kF32, {IntImm::make(kI64, 32)});
  Stmt full = Store::make(acc, make_const(kF32, 1.0), cast(kI64, k));
  Stmt masked = Store::make(acc, make_const(kF32, 2.0), cast(kI64, k));
  Expr cond = LT::make(Add::make(Mul::make(j, i32(32)), i32(31)), s);
  Stmt inner =
      For::make(k, i32(0), i32(64), ForKind::kSerial, IfThenElse::make(cond, full, masked));
  Stmt nest = For::make(j, i32(0), Var::make(kI32, "nj"), ForKind::kParallel, inner);
  Stmt out = version_invariant_guards(nest);
  const auto* loop = out.as<For>();
  ASSERT_NE(loop, nullptr);
  const auto* version = loop->body.as<IfThenElse>();
  ASSERT_NE(version, nullptr) << to_string(out);
  EXPECT_EQ(to_string(version->condition), to_string(cond));
  std::string fast = to_string(version->then_case), slow = to_string(version->else_case);
  EXPECT_FALSE(has(fast, "if (") || has(fast, "2.0")) << fast;  // the guard taken as true
  EXPECT_TRUE(has(slow, "if (") && has(slow, "2.0")) << slow;   // the original body
  // A guard that reads the inner loop's variable, or memory, stays where it is.
  Stmt varying = For::make(
      j, i32(0), i32(4), ForKind::kSerial,
      For::make(k, i32(0), i32(64), ForKind::kSerial, IfThenElse::make(LT::make(k, s), full)));
  EXPECT_EQ(count(to_string(version_invariant_guards(varying)), "if ("), 1u);
  Stmt reads = For::make(
      j, i32(0), i32(4), ForKind::kSerial,
      For::make(k, i32(0), i32(64), ForKind::kSerial,
                IfThenElse::make(LT::make(make_zero(kF32), Load::make(acc, cast(kI64, j))), full)));
  EXPECT_EQ(count(to_string(version_invariant_guards(reads)), "if ("), 1u);
}

TEST(PartitionRanges, VariableOfASymbolicLoopHasNoRange) {
  // k runs a loop of symbolic bounds and one of constant bounds [2, 3): the comparison on k in
  // the symbolic loop must not be decided from the constant loop's range (it dropped a masked
  // reduction's tail for every i < 30).
  Expr i = Var::make(kI32, "i"), k = Var::make(kI32, "k"), lane = Var::make(kI32, "lane");
  Buffer acc = make_buffer("acc", kF32, {IntImm::make(kI64, 16)});
  Stmt store = Store::make(acc, make_const(kF32, 1.0), cast(kI64, lane));
  Expr at = Add::make(Mul::make(k, i32(16)), lane);
  Stmt masked = IfThenElse::make(LT::make(at, Add::make(i, i32(3))), store);
  auto lanes = [&](Stmt body) {
    return For::make(lane, i32(0), i32(16), ForKind::kVectorized, body);
  };
  Stmt symbolic = For::make(k, floordiv(Add::make(i, i32(3)), i32(16)), i32(1), ForKind::kSerial,
                            lanes(masked));
  Stmt constant = For::make(k, i32(2), i32(1), ForKind::kSerial, lanes(masked));
  Stmt nest = For::make(i, i32(0), i32(33), ForKind::kSerial, Block::make({symbolic, constant}));
  std::string text = to_string(partition_ranges(nest));
  // Every part keeps the symbolic loop's masked store.
  size_t parts = count(text, "for (i,");
  EXPECT_EQ(count(text, "for (k, floordiv("), parts) << text;
}

}  // namespace
}  // namespace ptb
