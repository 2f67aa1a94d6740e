// TC front end: symbolic integers, range inference and call-time evaluation of sizes.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "ir/expr.h"
#include "support/error.h"
#include "tc/eval.h"
#include "tc/range_inference.h"
#include "tc/sym.h"

namespace ptb::tc {
namespace {

Expr size_var(const char* name) { return Var::make(kIndexType, name); }

TEST(TcSymInt, CancelsAndPrints) {
  Expr h = size_var("H"), kh = size_var("KH");
  SymInt H = SymInt::atom(h), KH = SymInt::atom(kh);
  SymInt e = H - 1 - (KH - 1) + 1;
  EXPECT_EQ(e.str(), "H - KH + 1");
  EXPECT_EQ(e.coefficient(h), 1);
  EXPECT_EQ(e.coefficient(kh), -1);
  EXPECT_TRUE((H - H).is_const());
  EXPECT_EQ((H * 2).floordiv(2).str(), "H");
  EXPECT_EQ((H - KH).floordiv(2).str(), "floordiv(H - KH, 2)");
  EXPECT_EQ(SymInt(7).floordiv(2).constant(), 3);
  EXPECT_EQ(SymInt(-7).floordiv(2).constant(), -4);
  EXPECT_EQ(SymInt(-7).ceildiv(2).constant(), -3);
  EXPECT_EQ(SymInt(7).ceildiv(2).constant(), 4);
}

TEST(TcSymInt, MinMaxPickASideWhenTheDifferenceIsConstant) {
  SymInt N = SymInt::atom(size_var("N")), M = SymInt::atom(size_var("M"));
  EXPECT_EQ(SymInt::min(N, N - 1).str(), "N - 1");
  EXPECT_EQ(SymInt::max(N, N - 1).str(), "N");
  EXPECT_EQ(SymInt::min(N, M).str(), "min(N, M)");
  EXPECT_TRUE(SymInt(0).provably_le(SymInt(0)));
  EXPECT_TRUE((N - 2).provably_le(N));
  EXPECT_FALSE(N.provably_le(M));
}

TEST(TcSymInt, OverflowIsAUserErrorNotUndefinedBehaviour) {
  SymInt big(int64_t{1} << 62);
  EXPECT_THROW(big * 4, UserError);
  EXPECT_THROW((big + big + big).to_expr(), UserError);
  EXPECT_THROW(SymInt(int64_t{1} << 40).to_expr(), UserError);  // beyond the 32-bit index type
}

TEST(TcEval, EvaluatesSizeExpressions) {
  Expr h = size_var("H"), kh = size_var("KH");
  SymInt out = (SymInt::atom(h) - SymInt::atom(kh)).floordiv(2) + 1;
  SizeEnv env{{h.get(), 9}, {kh.get(), 3}};
  EXPECT_EQ(eval_int(out.to_expr(), env), 4);
  env[h.get()] = 2;
  EXPECT_EQ(eval_int(out.to_expr(), env), 0);  // floor(-1 / 2) + 1
  EXPECT_EQ(eval_int(SymInt::min(SymInt::atom(h), SymInt::atom(kh)).to_expr(), env), 2);
  EXPECT_THROW(eval_int(FloorDiv::make(h, kh), {{h.get(), 1}, {kh.get(), 0}}), UserError);
}

IndexForm form(SymInt offset, std::vector<std::pair<int, int64_t>> terms) {
  IndexForm f;
  f.offset = offset;
  for (auto [v, c] : terms) f.add_term(v, c);
  return f;
}

TEST(TcRangeInference, MatmulIndicesComeFromTheShapes) {
  SymInt M = SymInt::atom(size_var("M")), K = SymInt::atom(size_var("K")),
         N = SymInt::atom(size_var("N"));
  // C(i, j) +=! A(i, k) * B(k, j): variables i=0, j=1, k=2.
  std::vector<Access> acc = {{{M, K}, {form(0, {{0, 1}}), form(0, {{2, 1}})}},
                             {{K, N}, {form(0, {{2, 1}}), form(0, {{1, 1}})}}};
  std::vector<std::optional<VarRange>> r(3);
  infer_ranges(acc, &r);
  ASSERT_TRUE(r[0] && r[1] && r[2]);
  EXPECT_EQ(r[0]->lo.str(), "0");
  EXPECT_EQ(r[0]->hi.str(), "M");
  EXPECT_EQ(r[1]->hi.str(), "N");
  EXPECT_EQ(r[2]->hi.str(), "K");
}

TEST(TcRangeInference, StridedConvolutionNeedsTwoRounds) {
  SymInt H = SymInt::atom(size_var("H")), KH = SymInt::atom(size_var("KH"));
  // O(h) +=! I(2*h + kh) * W(kh): h = 0, kh = 1. kh comes from W, then h from I.
  std::vector<Access> acc = {{{H}, {form(0, {{0, 2}, {1, 1}})}}, {{KH}, {form(0, {{1, 1}})}}};
  std::vector<std::optional<VarRange>> r(2);
  infer_ranges(acc, &r);
  ASSERT_TRUE(r[0] && r[1]);
  EXPECT_EQ(r[1]->hi.str(), "KH");
  EXPECT_EQ(r[0]->lo.str(), "0");
  EXPECT_EQ(r[0]->hi.str(), "floordiv(H - KH, 2) + 1");
}

TEST(TcRangeInference, OffsetsNegativeCoefficientsAndIntersections) {
  SymInt N = SymInt::atom(size_var("N")), M = SymInt::atom(size_var("M"));
  // B(i) = A(i + 1) + C(i): i in [-1, N - 1) from A, [0, M) from C: [0, min(N - 1, M)).
  std::vector<Access> acc = {{{N}, {form(1, {{0, 1}})}}, {{M}, {form(0, {{0, 1}})}}};
  std::vector<std::optional<VarRange>> r(1);
  infer_ranges(acc, &r);
  EXPECT_EQ(r[0]->lo.str(), "0");
  EXPECT_EQ(r[0]->hi.str(), "min(N - 1, M)");
  // B(i) = A(N - 1 - i): i in [0, N).
  std::vector<Access> rev = {{{N}, {form(N - 1, {{0, -1}})}}};
  std::vector<std::optional<VarRange>> r2(1);
  infer_ranges(rev, &r2);
  EXPECT_EQ(r2[0]->lo.str(), "0");
  EXPECT_EQ(r2[0]->hi.str(), "N");
}

TEST(TcRangeInference, GivenRangesWinAndUnconstrainedVariablesStayUnknown) {
  SymInt N = SymInt::atom(size_var("N"));
  // A(i + j) with j given in [0, 3): i in [0, N - 2). k appears nowhere alone.
  std::vector<Access> acc = {{{N}, {form(0, {{0, 1}, {1, 1}})}},
                             {{N}, {form(0, {{2, 1}, {3, 1}})}}};
  std::vector<std::optional<VarRange>> r(4);
  r[1] = VarRange{0, 3};
  infer_ranges(acc, &r);
  ASSERT_TRUE(r[0]);
  EXPECT_EQ(r[0]->hi.str(), "N - 2");
  EXPECT_EQ(r[1]->hi.str(), "3");
  EXPECT_FALSE(r[2]);
  EXPECT_FALSE(r[3]);
}

TEST(TcRangeInference, IndexBounds) {
  SymInt N = SymInt::atom(size_var("N"));
  std::vector<std::optional<VarRange>> r = {VarRange{0, N}, VarRange{1, 4}};
  auto [lo, hi] = index_bounds(form(5, {{0, 2}, {1, -1}}), r);
  EXPECT_EQ(lo.str(), "2");        // 5 + 0 - 3
  EXPECT_EQ(hi.str(), "2*N + 2");  // 5 + 2*(N - 1) - 1
}

}  // namespace
}  // namespace ptb::tc
