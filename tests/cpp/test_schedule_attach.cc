// compute_at / compute_inline / compute_root, cache_read / cache_write and rfactor: where the
// nests go, the regions bound inference gives, and the values (equal to the default schedule's).
#include "test_schedule_util.h"

namespace ptb::testing {
namespace {

void expect_same_as_default(const Schedule& s, const std::vector<Tensor>& args,
                            const std::vector<Operation>& outputs,
                            const std::map<std::string, int64_t>& sizes = {}) {
  auto expected = run_schedule(create_schedule(outputs), args, sizes);
  auto actual = run_schedule(s, args, sizes);
  for (size_t a = 0; a < expected.size(); ++a) {
    for (size_t k = 0; k < expected[a].size(); ++k) {
      ASSERT_EQ(expected[a][k], actual[a][k]) << "argument " << a << " element " << k << "\n"
                                              << lowered_text(s, args);
    }
  }
}

// B = A + 1, C = B[i] + B[i + 1] (a stencil: the region of B is one wider than C's loop).
struct Stencil {
  Tensor A, B, C;
  explicit Stencil(Expr n) {
    A = placeholder({n}, kF32, "A");
    B = compute({n}, [&](const std::vector<Expr>& i) { return Add::make(A({i[0]}), cf(1)); }, "B");
    C = compute(
        {idx_sub(n, ci(1))},
        [&](const std::vector<Expr>& i) { return Add::make(B({i[0]}), B({idx_add(i[0], ci(1))})); },
        "C");
  }
};

TEST(ScheduleComputeAt, RegionIsWhatTheInnerLoopsRead) {
  Stencil st(ci(33));
  Schedule s = create_schedule({st.C.op()});
  auto [o, i] = split(stage_of(s, st.C), axis(st.C, 0), ci(8), Expr());
  compute_at(stage_of(s, st.B), stage_of(s, st.C), o);
  Stmt body = lower(s, {st.A, st.C}, "f").body;
  auto loops = loops_of(body);
  ASSERT_EQ(loops.size(), 3u);
  EXPECT_EQ(loops[0].name, "i0.outer");
  EXPECT_EQ(loops[1].name, "i0");  // B's loop, inside C's outer loop
  EXPECT_EQ(loops[1].extent, 9);   // 8 + 1 for the stencil
  EXPECT_EQ(loops[2].name, "i0.inner");
  // B's buffer is allocated inside the loop with the region's size.
  const auto* outer = body.as<For>();
  ASSERT_NE(outer, nullptr);
  EXPECT_NE(to_string(body).find("allocate B[float32 * 9]"), std::string::npos) << to_string(body);
  expect_same_as_default(s, {st.A, st.C}, {st.C.op()});
}

TEST(ScheduleComputeAt, InnermostAxisAndSymbolicSizes) {
  Stencil st(Var::make(kIndexType, "n"));
  Schedule s = create_schedule({st.C.op()});
  auto [o, i] = split(stage_of(s, st.C), axis(st.C, 0), ci(4), Expr());
  compute_at(stage_of(s, st.B), stage_of(s, st.C), i);
  for (int64_t n : {2, 3, 5, 17}) expect_same_as_default(s, {st.A, st.C}, {st.C.op()}, {{"n", n}});
  compute_at(stage_of(s, st.B), stage_of(s, st.C), o);
  vectorize(stage_of(s, st.B), axis(st.B, 0));
  for (int64_t n : {2, 9, 16}) expect_same_as_default(s, {st.A, st.C}, {st.C.op()}, {{"n", n}});
}

TEST(ScheduleComputeAt, NonDividingConsumerGuardsTheProducer) {
  Stencil st(ci(14));
  Schedule s = create_schedule({st.C.op()});
  auto [o, i] = split(stage_of(s, st.C), axis(st.C, 0), ci(4), Expr());
  compute_at(stage_of(s, st.B), stage_of(s, st.C), o);
  // The interpreter fails on any out-of-bounds read of A: the guard keeps B inside its domain.
  expect_same_as_default(s, {st.A, st.C}, {st.C.op()});
}

TEST(ScheduleComputeAt, ClampedReadsGetALoopIndependentAllocation) {
  // C reads B[min(i + 2, 10)]: the region's extent depends on the loop (3 inside, fewer at the
  // end), so the allocation takes its constant upper bound and the loops cover it.
  Tensor A = placeholder({ci(11)}, kF32, "A");
  Tensor B = compute(
      {ci(11)}, [&](const std::vector<Expr>& i) { return Mul::make(A({i[0]}), cf(2)); }, "B");
  Tensor C = compute(
      {ci(11)},
      [&](const std::vector<Expr>& i) {
        return Add::make(B({i[0]}), B({Min::make(idx_add(i[0], ci(2)), ci(10))}));
      },
      "C");
  Schedule s = create_schedule({C.op()});
  auto [o, i] = split(stage_of(s, C), axis(C, 0), ci(3), Expr());
  unroll(stage_of(s, C), o);
  compute_at(stage_of(s, B), stage_of(s, C), o);
  Stmt body = lower(s, {A, C}, "f").body;
  EXPECT_NE(to_string(body).find("allocate B[float32 * 5]"), std::string::npos) << to_string(body);
  expect_same_as_default(s, {A, C}, {C.op()});
  compute_at(stage_of(s, B), stage_of(s, C), i);
  expect_same_as_default(s, {A, C}, {C.op()});
}

TEST(ScheduleComputeAt, ChainOfAttachedStages) {
  Tensor A = placeholder({ci(10), ci(12)}, kF32, "A");
  Tensor B = compute(
      {ci(10), ci(12)},
      [&](const std::vector<Expr>& i) { return Mul::make(A({i[0], i[1]}), cf(2)); }, "B");
  Tensor C = compute(
      {ci(10), ci(12)},
      [&](const std::vector<Expr>& i) { return Add::make(B({i[0], i[1]}), cf(1)); }, "C");
  Tensor D = compute(
      {ci(10), ci(12)},
      [&](const std::vector<Expr>& i) { return Sub::make(C({i[0], i[1]}), cf(3)); }, "D");
  Schedule s = create_schedule({D.op()});
  auto t = tile(stage_of(s, D), axis(D, 0), axis(D, 1), ci(4), ci(5));
  compute_at(stage_of(s, C), stage_of(s, D), t[1]);
  compute_at(stage_of(s, B), stage_of(s, C), axis(C, 0));
  auto loops = loops_of(lower(s, {A, D}, "f").body);
  EXPECT_EQ(loops[2].name, "i0");  // C's rows
  EXPECT_EQ(loops[2].extent, 4);
  EXPECT_EQ(loops[3].extent, 5);  // B's columns, one row of C's region
  expect_same_as_default(s, {A, D}, {D.op()});
}

TEST(ScheduleComputeAt, ThroughAnInlinedStage) {
  Tensor A = placeholder({ci(9)}, kF32, "A");
  Tensor B = compute(
      {ci(9)}, [&](const std::vector<Expr>& i) { return Mul::make(A({i[0]}), cf(2)); }, "B");
  Tensor C = compute(
      {ci(9)}, [&](const std::vector<Expr>& i) { return Add::make(B({i[0]}), cf(1)); }, "C");
  Tensor D = compute(
      {ci(9)}, [&](const std::vector<Expr>& i) { return Sub::make(C({i[0]}), cf(3)); }, "D");
  Schedule s = create_schedule({D.op()});
  compute_inline(stage_of(s, C));
  auto [o, i] = split(stage_of(s, D), axis(D, 0), ci(2), Expr());
  compute_at(stage_of(s, B), stage_of(s, D), o);
  expect_same_as_default(s, {A, D}, {D.op()});
}

TEST(ScheduleComputeAt, RejectsIllegalRequests) {
  Stencil st(ci(8));
  Schedule s = create_schedule({st.C.op()});
  Stage b = stage_of(s, st.B), c = stage_of(s, st.C), a = stage_of(s, st.A);
  expect_value_error([&] { compute_at(c, b, axis(st.B, 0)); },
                     {"stage 'C'", "axis 'i0'", "stage 'B'"});
  expect_value_error([&] { compute_at(b, c, axis(st.B, 0)); }, {"stage 'C'", "'i0'"});
  expect_value_error([&] { compute_at(a, c, axis(st.C, 0)); }, {"stage 'A'", "placeholder"});
  // Not a consumer.
  Tensor D = compute(
      {ci(8)}, [&](const std::vector<Expr>& i) { return Add::make(st.A({i[0]}), cf(1)); }, "D");
  Tensor E = compute(
      {ci(7)}, [&](const std::vector<Expr>& i) { return Add::make(st.C({i[0]}), D({i[0]})); }, "E");
  Schedule s2 = create_schedule({E.op()});
  expect_value_error([&] { compute_at(stage_of(s2, D), stage_of(s2, st.C), axis(st.C, 0)); },
                     {"stage 'D'", "axis 'i0'", "stage 'C'", "does not read"});
  // A stage with two consumers attached to one of them fails at lowering, naming both.
  Tensor F = compute(
      {ci(7)}, [&](const std::vector<Expr>& i) { return Mul::make(st.B({i[0]}), cf(2)); }, "F");
  Schedule s3 = create_schedule({st.C.op(), F.op()});
  compute_at(stage_of(s3, st.B), stage_of(s3, st.C), axis(st.C, 0));
  expect_value_error([&] { lower(s3, {st.A, st.C, F}, "f"); }, {"stage 'B'", "stage 'F'"});
  // Splitting the attach axis afterwards moves the attachment to the inner part (TVM's
  // legalization); fusing it as a fuse's outer operand leaves no loop for it.
  Schedule s4 = create_schedule({st.C.op()});
  compute_at(stage_of(s4, st.B), stage_of(s4, st.C), axis(st.C, 0));
  auto parts = split(stage_of(s4, st.C), axis(st.C, 0), ci(2), Expr());
  EXPECT_EQ(stage_of(s4, st.B)->attach_ivar, parts.second);
  expect_same_as_default(s4, {st.A, st.C}, {st.C.op()});
  Schedule s6 = create_schedule({st.C.op()});
  auto halves = split(stage_of(s6, st.C), axis(st.C, 0), ci(2), Expr());
  compute_at(stage_of(s6, st.B), stage_of(s6, st.C), halves.first);
  fuse(stage_of(s6, st.C), {halves.first, halves.second});
  expect_value_error([&] { lower(s6, {st.A, st.C}, "f"); },
                     {"stage 'B'", "'i0.outer'", "outer operand of a fuse"});
  // An output cannot be computed inside another stage.
  Schedule s5 = create_schedule({st.C.op(), st.B.op()});
  expect_value_error([&] { compute_at(stage_of(s5, st.B), stage_of(s5, st.C), axis(st.C, 0)); },
                     {"stage 'B'", "output"});
}

TEST(ScheduleInline, SubstitutesTheBody) {
  Stencil st(ci(12));
  Schedule s = create_schedule({st.C.op()});
  compute_inline(stage_of(s, st.B));
  Stmt body = lower(s, {st.A, st.C}, "f").body;
  EXPECT_EQ(count_stmts<Allocate>(body), 0);
  EXPECT_EQ(loops_of(body).size(), 1u);
  expect_same_as_default(s, {st.A, st.C}, {st.C.op()});
  compute_root(stage_of(s, st.B));
  EXPECT_EQ(count_stmts<Allocate>(lower(s, {st.A, st.C}, "f").body), 1);
}

TEST(ScheduleInline, RejectsOutputsAndReductions) {
  Tensor A = placeholder({ci(4), ci(4)}, kF32, "A");
  IterVar r = reduce_axis(4, "k");
  Tensor B = compute(
      {ci(4)}, [&](const std::vector<Expr>& i) { return sum(A({i[0], r->var}), {r}); }, "B");
  Tensor C = compute(
      {ci(4)}, [&](const std::vector<Expr>& i) { return Add::make(B({i[0]}), cf(1)); }, "C");
  Schedule s = create_schedule({C.op()});
  expect_value_error([&] { compute_inline(stage_of(s, B)); }, {"stage 'B'", "reduction"});
  expect_value_error([&] { compute_inline(stage_of(s, C)); }, {"stage 'C'", "output"});
  expect_value_error([&] { compute_inline(stage_of(s, A)); }, {"stage 'A'", "placeholder"});
}

struct MatMul {
  Tensor A, B, C;
  MatMul(int64_t n, int64_t m, int64_t k) {
    A = placeholder({ci(n), ci(k)}, kF32, "A");
    B = placeholder({ci(k), ci(m)}, kF32, "B");
    IterVar r = reduce_axis(k, "k");
    C = compute({ci(n), ci(m)},
                [&](const std::vector<Expr>& i) {
                  return sum(Mul::make(A({i[0], r->var}), B({r->var, i[1]})), {r});
                },
                "C", {"i", "j"});
  }
  std::vector<Tensor> args() const { return {A, B, C}; }
};

// The "write cache" step of the GEMM ladder: C's tile accumulates in a small local buffer.
Schedule write_cache_schedule(const MatMul& mm, Tensor* cache_out) {
  Schedule s = create_schedule({mm.C.op()});
  Tensor CC = cache_write(s, mm.C, "local");
  Stage c = stage_of(s, mm.C), cc = stage_of(s, CC);
  auto t = tile(c, axis(mm.C, 0), axis(mm.C, 1), ci(8), ci(16));
  compute_at(cc, c, t[1]);
  auto [ko, ki] = split(cc, raxis(CC, 0), ci(4), Expr());
  reorder(cc, {ko, axis(CC, 0), ki, axis(CC, 1)});
  unroll(cc, ki);
  vectorize(cc, axis(CC, 1));
  vectorize(c, t[3]);
  if (cache_out) *cache_out = CC;
  return s;
}

TEST(ScheduleCacheWrite, TileAccumulatesInALocalBuffer) {
  MatMul mm(16, 32, 8);
  Tensor CC;
  Schedule s = write_cache_schedule(mm, &CC);
  EXPECT_EQ(CC.op()->name, "C.local");
  EXPECT_EQ(stage_of(s, CC)->scope, "local");
  Stmt body = lower(s, mm.args(), "f").body;
  std::string text = to_string(body);
  EXPECT_NE(text.find("allocate C.local[float32 * 8 * 16]"), std::string::npos) << text;
  EXPECT_EQ(count_stmts<IfThenElse>(body), 0) << text;  // everything divides
  EXPECT_GT(count_exprs<Ramp>(body), 0);
  expect_same_as_default(s, mm.args(), {mm.C.op()});
}

TEST(ScheduleCacheWrite, NonMultipleSizes) {
  for (auto [n, m, k] : std::vector<std::array<int64_t, 3>>{{13, 37, 9}, {8, 17, 3}, {1, 1, 1}}) {
    MatMul mm(n, m, k);
    Schedule s = write_cache_schedule(mm, nullptr);
    expect_same_as_default(s, mm.args(), {mm.C.op()});
  }
}

TEST(ScheduleCacheWrite, RejectsScheduledStagesAndPlaceholders) {
  MatMul mm(4, 4, 4);
  Schedule s = create_schedule({mm.C.op()});
  expect_value_error([&] { cache_write(s, mm.A, "local"); }, {"stage 'A'", "placeholder"});
  split(stage_of(s, mm.C), axis(mm.C, 0), ci(2), Expr());
  expect_value_error([&] { cache_write(s, mm.C, "local"); }, {"stage 'C'", "before"});
}

TEST(ScheduleCacheRead, ReadersReadTheCopy) {
  MatMul mm(6, 10, 5);
  Schedule s = create_schedule({mm.C.op()});
  Tensor AA = cache_read(s, mm.A, "shared", {mm.C.op()});
  EXPECT_EQ(AA.op()->name, "A.shared");
  auto [io, ii] = split(stage_of(s, mm.C), axis(mm.C, 0), ci(4), Expr());
  compute_at(stage_of(s, AA), stage_of(s, mm.C), io);
  Stmt body = lower(s, mm.args(), "f").body;
  // The copy is the region's 4 x 5; the two copies of the unrolled outer loop share it
  // (lower/plan_memory.cc).
  EXPECT_NE(to_string(body).find("allocate A.shared+1[float32 * 20i64]"), std::string::npos)
      << to_string(body);
  expect_same_as_default(s, mm.args(), {mm.C.op()});
  Tensor D = placeholder({ci(3)}, kF32, "D");
  expect_value_error([&] { cache_read(s, D, "shared", {mm.C.op()}); }, {"is not part"});
  expect_value_error([&] { cache_read(s, mm.B, "shared", {AA.op()}); },
                     {"stage 'A.shared'", "does not read"});
}

TEST(ScheduleRfactor, FactoredReductionThenParallel) {
  Tensor A = placeholder({ci(3), ci(37)}, kF32, "A");
  IterVar r = reduce_axis(37, "k");
  Tensor B = compute(
      {ci(3)}, [&](const std::vector<Expr>& i) { return sum(A({i[0], r->var}), {r}); }, "B");
  Schedule s = create_schedule({B.op()});
  auto [ko, ki] = split(stage_of(s, B), r, ci(8), Expr());
  Tensor BF = rfactor(s, B, ki);
  EXPECT_EQ(BF.ndim(), 2);
  EXPECT_TRUE(is_const_int(BF.shape()[0], 8));
  Stage bf = stage_of(s, BF);
  parallel(bf, axis(BF, 0));
  // B's stage now reduces over a new axis: s[B].op, not B.op.
  const auto* reduced = static_cast<const ComputeOpNode*>(stage_of(s, B)->op.get());
  ASSERT_EQ(reduced->reduce_axis.size(), 1u);
  auto [bo, bi] = split(stage_of(s, B), reduced->reduce_axis[0], ci(4), Expr());
  vectorize(stage_of(s, B), axis(B, 0));
  expect_same_as_default(s, {A, B}, {B.op()});
  // The unsplit axis itself: the factored stage is no longer a reduction.
  Schedule s2 = create_schedule({B.op()});
  Tensor BF2 = rfactor(s2, B, r, 1);
  EXPECT_TRUE(is_const_int(BF2.shape()[1], 37));
  expect_same_as_default(s2, {A, B}, {B.op()});
  expect_value_error([&] { rfactor(s2, B, axis(B, 0)); }, {"stage 'B'", "'i0'", "data axis"});
  expect_value_error([&] { rfactor(s2, BF2, axis(BF2, 0)); }, {"not a reduction"});
}

TEST(ScheduleRfactor, ComputeAtIntoTheFinalReduction) {
  Tensor A = placeholder({ci(5), ci(20)}, kF32, "A");
  IterVar r = reduce_axis(20, "k");
  Tensor B = compute(
      {ci(5)}, [&](const std::vector<Expr>& i) { return sum(A({i[0], r->var}), {r}); }, "B");
  Schedule s = create_schedule({B.op()});
  auto [ko, ki] = split(stage_of(s, B), r, ci(6), Expr());
  Tensor BF = rfactor(s, B, ko);
  compute_at(stage_of(s, BF), stage_of(s, B), axis(B, 0));
  expect_same_as_default(s, {A, B}, {B.op()});
}

}  // namespace
}  // namespace ptb::testing
