// Loop primitives: the structure of the lowered nest (extents, guards, order, kinds) and the
// values it computes, which must equal the default schedule's.
#include "test_schedule_util.h"

namespace ptb::testing {
namespace {

struct Elementwise {
  Tensor A, B;
  Elementwise(int64_t n, int64_t m) {
    A = placeholder({ci(n), ci(m)}, kF32, "A");
    B = compute({ci(n), ci(m)},
                [&](const std::vector<Expr>& i) { return Add::make(A({i[0], i[1]}), cf(1)); }, "B",
                {"i", "j"});
  }
  Schedule schedule() const { return create_schedule({B.op()}); }
  std::vector<Tensor> args() const { return {A, B}; }
};

void expect_same_as_default(const Schedule& s, const std::vector<Tensor>& args,
                            const std::vector<Operation>& outputs,
                            const std::map<std::string, int64_t>& sizes = {}) {
  auto expected = run_schedule(create_schedule(outputs), args, sizes);
  auto actual = run_schedule(s, args, sizes);
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t a = 0; a < expected.size(); ++a) {
    ASSERT_EQ(expected[a].size(), actual[a].size());
    for (size_t k = 0; k < expected[a].size(); ++k) {
      ASSERT_EQ(expected[a][k], actual[a][k]) << "argument " << a << " element " << k << "\n"
                                              << lowered_text(s, args);
    }
  }
}

TEST(ScheduleSplit, DividingFactorNeedsNoGuard) {
  Elementwise e(16, 12);
  Schedule s = e.schedule();
  auto [io, ii] = split(stage_of(s, e.B), axis(e.B, 0), ci(4), Expr());
  Stmt body = lower(s, e.args(), "f").body;
  auto loops = loops_of(body);
  ASSERT_EQ(loops.size(), 3u);
  EXPECT_EQ(loops[0].name, "i.outer");
  EXPECT_EQ(loops[0].extent, 4);
  EXPECT_EQ(loops[1].name, "i.inner");
  EXPECT_EQ(loops[1].extent, 4);
  EXPECT_EQ(loops[2].extent, 12);
  EXPECT_EQ(count_stmts<IfThenElse>(body), 0);
  expect_same_as_default(s, e.args(), {e.B.op()});
}

TEST(ScheduleSplit, NonDividingFactorIsGuardedInTheLastTileOnly) {
  Elementwise e(13, 5);
  Schedule s = e.schedule();
  split(stage_of(s, e.B), axis(e.B, 0), ci(4), Expr());
  Stmt body = lower(s, e.args(), "f").body;
  // Whole tiles first (3 of them, no guard), then the last tile, guarded.
  const auto* block = body.as<Block>();
  ASSERT_NE(block, nullptr) << to_string(body);
  ASSERT_EQ(block->stmts.size(), 2u);
  const auto* whole = block->stmts[0].as<For>();
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(whole->var.as<Var>()->name, "i.outer");
  EXPECT_TRUE(is_const_int(whole->extent, 3));
  EXPECT_EQ(count_stmts<IfThenElse>(block->stmts[0]), 0);
  EXPECT_EQ(count_stmts<IfThenElse>(block->stmts[1]), 1);
  expect_same_as_default(s, e.args(), {e.B.op()});
}

TEST(ScheduleSplit, GuardsAreTestedInTheLoopTheyDependOn) {
  Elementwise e(10, 13);
  Schedule s = e.schedule();
  tile(stage_of(s, e.B), axis(e.B, 0), axis(e.B, 1), ci(4), ci(8));
  std::string text = lowered_text(s, e.args());
  // In the last row tile the row guard is tested outside the column loop, once per row.
  EXPECT_NE(text.find("if (((i.inner + 8) < 10)) {\n    for (j.inner, 0, 8) {"), std::string::npos)
      << text;
  expect_same_as_default(s, e.args(), {e.B.op()});
}

TEST(ScheduleSplit, GuardsWithSymbolicExtents) {
  Expr n = Var::make(kIndexType, "n");
  Tensor A = placeholder({n, ci(6)}, kF32, "A");
  Tensor B = compute(
      {n, ci(6)}, [&](const std::vector<Expr>& i) { return Add::make(A({i[0], i[1]}), cf(1)); },
      "B");
  Schedule s = create_schedule({B.op()});
  auto t = tile(stage_of(s, B), axis(B, 0), axis(B, 1), ci(4), ci(4));
  vectorize(stage_of(s, B), t[3]);
  parallel(stage_of(s, B), t[0]);
  for (int64_t size : {0, 1, 4, 5, 11}) expect_same_as_default(s, {A, B}, {B.op()}, {{"n", size}});
}

TEST(ScheduleSplit, Nparts) {
  Elementwise e(16, 3);
  Schedule s = e.schedule();
  split(stage_of(s, e.B), axis(e.B, 0), Expr(), ci(3));
  auto loops = loops_of(lower(s, e.args(), "f").body);
  EXPECT_EQ(loops[0].extent, 2);  // 3 parts of ceil(16 / 3) = 6: 2 whole ones, then the last
  EXPECT_EQ(loops[1].extent, 6);
  expect_same_as_default(s, e.args(), {e.B.op()});
}

TEST(ScheduleSplit, SplitOfSplitAndSymbolicExtent) {
  Expr n = Var::make(kIndexType, "n");
  Tensor A = placeholder({n}, kF32, "A");
  Tensor B =
      compute({n}, [&](const std::vector<Expr>& i) { return Mul::make(A({i[0]}), cf(3)); }, "B");
  Schedule s = create_schedule({B.op()});
  auto [o, i] = split(stage_of(s, B), axis(B, 0), ci(8), Expr());
  split(stage_of(s, B), i, ci(3), Expr());
  for (int64_t size : {0, 1, 7, 8, 23, 64}) {
    expect_same_as_default(s, {A, B}, {B.op()}, {{"n", size}});
  }
}

TEST(ScheduleSplit, RejectsBadRequests) {
  Elementwise e(8, 8);
  Schedule s = e.schedule();
  Stage st = stage_of(s, e.B);
  expect_value_error([&] { split(st, axis(e.B, 0), ci(0), Expr()); }, {"'B'", "'i'", "positive"});
  expect_value_error([&] { split(st, axis(e.B, 0), ci(2), ci(2)); }, {"'B'", "exactly one"});
  expect_value_error([&] { split(st, axis(e.B, 0), Expr(), Expr()); }, {"exactly one"});
  Elementwise other(8, 8);
  expect_value_error([&] { split(st, axis(other.B, 0), ci(2), Expr()); },
                     {"stage 'B'", "axis 'i'", "another stage"});
  auto [o, i] = split(st, axis(e.B, 0), ci(2), Expr());
  expect_value_error([&] { split(st, axis(e.B, 0), ci(2), Expr()); }, {"'i'", "already split"});
  expect_value_error([&] { split(stage_of(s, e.A), axis(e.B, 0), ci(2), Expr()); },
                     {"stage 'A'", "placeholder"});
}

TEST(ScheduleTile, OrdersOuterThenInner) {
  Elementwise e(10, 12);
  Schedule s = e.schedule();
  auto t = tile(stage_of(s, e.B), axis(e.B, 0), axis(e.B, 1), ci(4), ci(3));
  auto loops = loops_of(lower(s, e.args(), "f").body);
  ASSERT_GE(loops.size(), 4u);
  EXPECT_EQ(loops[0].name, "i.outer");
  EXPECT_EQ(loops[0].extent, 2);  // the whole row tiles; the last one follows
  EXPECT_EQ(loops[1].name, "j.outer");
  EXPECT_EQ(loops[1].extent, 4);
  EXPECT_EQ(loops[2].name, "i.inner");
  EXPECT_EQ(loops[3].name, "j.inner");
  EXPECT_EQ(t[0]->var.as<Var>()->name, "i.outer");
  expect_same_as_default(s, e.args(), {e.B.op()});
  expect_value_error([&] { tile(stage_of(s, e.B), t[2], t[2], ci(2), ci(2)); }, {"same axis"});
}

TEST(ScheduleFuse, FusesAdjacentAxes) {
  Elementwise e(7, 5);
  Schedule s = e.schedule();
  IterVar f = fuse(stage_of(s, e.B), {axis(e.B, 0), axis(e.B, 1)});
  auto loops = loops_of(lower(s, e.args(), "f").body);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0].extent, 35);
  EXPECT_EQ(loops[0].name, "i.j.fused");
  expect_same_as_default(s, e.args(), {e.B.op()});
  // And split again, non-dividing, then vectorized.
  auto [o, i] = split(stage_of(s, e.B), f, ci(8), Expr());
  vectorize(stage_of(s, e.B), i);
  expect_same_as_default(s, e.args(), {e.B.op()});
}

TEST(ScheduleFuse, ThreeAxesAndSingleAxis) {
  Tensor A = placeholder({ci(3), ci(4), ci(5)}, kF32, "A");
  Tensor B = compute(
      {ci(3), ci(4), ci(5)},
      [&](const std::vector<Expr>& i) { return Sub::make(A({i[0], i[1], i[2]}), cf(2)); }, "B");
  Schedule s = create_schedule({B.op()});
  Stage st = stage_of(s, B);
  EXPECT_EQ(fuse(st, {axis(B, 1)}), axis(B, 1));
  IterVar f = fuse(st, {axis(B, 0), axis(B, 1), axis(B, 2)});
  EXPECT_EQ(st->leaf_iter_vars.size(), 1u);
  EXPECT_EQ(loops_of(lower(s, {A, B}, "f").body)[0].extent, 60);
  parallel(st, f);
  expect_same_as_default(s, {A, B}, {B.op()});
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
  Schedule schedule() const { return create_schedule({C.op()}); }
  std::vector<Tensor> args() const { return {A, B, C}; }
};

TEST(ScheduleFuse, RejectsNonAdjacentAndMixedAxes) {
  MatMul mm(4, 4, 4);
  Schedule s = mm.schedule();
  Stage st = stage_of(s, mm.C);
  expect_value_error([&] { fuse(st, {axis(mm.C, 0), raxis(mm.C, 0)}); },
                     {"stage 'C'", "'i'", "not adjacent"});
  expect_value_error([&] { fuse(st, {axis(mm.C, 1), axis(mm.C, 0)}); }, {"'j'", "'i'"});
  expect_value_error([&] { fuse(st, {axis(mm.C, 1), raxis(mm.C, 0)}); },
                     {"stage 'C'", "'j'", "'k'", "reduce"});
}

TEST(ScheduleFuse, NoAxisIsASingletonOuterLoop) {
  MatMul mm(4, 4, 4);
  Schedule s = mm.schedule();
  Stage st = stage_of(s, mm.C);
  IterVar single = fuse(st, {});
  ASSERT_EQ(st->leaf_iter_vars.size(), 4u);
  EXPECT_EQ(st->leaf_iter_vars[0], single);
  EXPECT_TRUE(is_const_int(single->dom.extent, 1));
  ASSERT_EQ(st->relations.size(), 1u);
  EXPECT_EQ(st->relations[0].kind, IterVarRelation::Kind::kSingleton);
}

TEST(ScheduleReorder, PermutesLoops) {
  MatMul mm(5, 6, 7);
  Schedule s = mm.schedule();
  Stage st = stage_of(s, mm.C);
  reorder(st, {raxis(mm.C, 0), axis(mm.C, 1), axis(mm.C, 0)});
  Stmt body = lower(s, mm.args(), "f").body;
  auto loops = loops_of(body);
  // Init nest (j, i) before the reduction's outermost loop, then k, j, i.
  ASSERT_EQ(loops.size(), 5u);
  EXPECT_EQ(loops[0].name, "j");
  EXPECT_EQ(loops[1].name, "i");
  EXPECT_EQ(loops[2].name, "k");
  EXPECT_EQ(loops[3].name, "j");
  EXPECT_EQ(loops[4].name, "i");
  expect_same_as_default(s, mm.args(), {mm.C.op()});
  expect_value_error([&] { reorder(st, {axis(mm.C, 0), axis(mm.C, 0)}); },
                     {"stage 'C'", "'i'", "twice"});
  MatMul other(2, 2, 2);
  expect_value_error([&] { reorder(st, {axis(other.C, 0)}); }, {"stage 'C'", "'i'"});
}

TEST(ScheduleAnnotate, ParallelVectorizeUnrollKinds) {
  Elementwise e(6, 16);
  Schedule s = e.schedule();
  Stage st = stage_of(s, e.B);
  parallel(st, axis(e.B, 0));
  auto [jo, ji] = split(st, axis(e.B, 1), ci(4), Expr());
  unroll(st, jo);
  vectorize(st, ji);
  Stmt body = lower(s, e.args(), "f").body;
  auto loops = loops_of(body);
  ASSERT_EQ(loops.size(), 1u);  // the unrolled and vectorized loops are gone
  EXPECT_EQ(loops[0].kind, ForKind::kParallel);
  EXPECT_EQ(count_stmts<Store>(body), 4);  // four unrolled vector stores
  EXPECT_GT(count_exprs<Ramp>(body), 0);
  std::string text = to_string(body);
  EXPECT_NE(text.find("parallel (i, 0, 6)"), std::string::npos) << text;
  expect_same_as_default(s, e.args(), {e.B.op()});
}

int count_predicated_stores(const Stmt& s, bool predicated) {
  class Count : public IRVisitor {
   public:
    explicit Count(bool p) : want(p) {}
    bool want;
    int n = 0;
    using IRVisitor::visit;

   protected:
    void visit_node(const Store* op) override {
      if (op->predicate.defined() == want) ++n;
      IRVisitor::visit_node(op);
    }
  } c(predicated);
  c.visit(s);
  return c.n;
}

TEST(ScheduleVectorize, NonDividingSplitGetsAnUnmaskedFastPath) {
  Elementwise e(3, 29);
  Schedule s = e.schedule();
  auto [jo, ji] = split(stage_of(s, e.B), axis(e.B, 1), ci(8), Expr());
  vectorize(stage_of(s, e.B), ji);
  Stmt body = lower(s, e.args(), "f").body;
  // if (every lane in bounds) unmasked store else masked store.
  EXPECT_EQ(count_predicated_stores(body, false), 1) << to_string(body);
  EXPECT_EQ(count_predicated_stores(body, true), 1) << to_string(body);
  expect_same_as_default(s, e.args(), {e.B.op()});
}

TEST(ScheduleVectorize, LongLoopRunsInChunksWithAVectorRemainder) {
  Elementwise e(2, 100);
  Schedule s = e.schedule();
  vectorize(stage_of(s, e.B), axis(e.B, 1));
  Stmt body = lower(s, e.args(), "f").body;
  // 100 = 6 chunks of 16 lanes (a loop) + a 4-lane vector.
  std::string text = to_string(body);
  EXPECT_NE(text.find(", 16)"), std::string::npos) << text;
  EXPECT_NE(text.find(", 4)"), std::string::npos) << text;
  EXPECT_EQ(count_predicated_stores(body, true), 0);
  expect_same_as_default(s, e.args(), {e.B.op()});
}

TEST(ScheduleAnnotate, ParallelReduceAxisSuggestsRfactor) {
  MatMul mm(4, 4, 4);
  Schedule s = mm.schedule();
  expect_value_error([&] { parallel(stage_of(s, mm.C), raxis(mm.C, 0)); },
                     {"stage 'C'", "'k'", "reduce", "rfactor"});
}

TEST(ScheduleAnnotate, NestedParallelRunsInnerSerially) {
  Elementwise e(4, 8);
  Schedule s = e.schedule();
  Stage st = stage_of(s, e.B);
  parallel(st, axis(e.B, 0));
  parallel(st, axis(e.B, 1));
  auto loops = loops_of(lower(s, e.args(), "f").body);
  EXPECT_EQ(loops[0].kind, ForKind::kParallel);
  EXPECT_EQ(loops[1].kind, ForKind::kSerial);
}

TEST(ScheduleAnnotate, UnrollLongOrSymbolicLoopStaysALoop) {
  Expr n = Var::make(kIndexType, "n");
  Tensor A = placeholder({n}, kF32, "A");
  Tensor B =
      compute({n}, [&](const std::vector<Expr>& i) { return Add::make(A({i[0]}), cf(1)); }, "B");
  Schedule s = create_schedule({B.op()});
  unroll(stage_of(s, B), axis(B, 0));
  auto loops = loops_of(lower(s, {A, B}, "f").body);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(loops[0].kind, ForKind::kSerial);
  expect_same_as_default(s, {A, B}, {B.op()}, {{"n", 9}});
}

TEST(ScheduleReduction, SplitReduceAxisNonDividing) {
  MatMul mm(3, 5, 13);
  Schedule s = mm.schedule();
  Stage st = stage_of(s, mm.C);
  auto [ko, ki] = split(st, raxis(mm.C, 0), ci(4), Expr());
  reorder(st, {ko, axis(mm.C, 0), ki, axis(mm.C, 1)});
  Stmt body = lower(s, mm.args(), "f").body;
  // Init is not guarded by the reduce split's condition.
  EXPECT_EQ(count_stmts<IfThenElse>(body), 1);
  expect_same_as_default(s, mm.args(), {mm.C.op()});
}

TEST(ScheduleReduction, VectorizedReduceAxisFallsBackToSerial) {
  MatMul mm(3, 4, 16);
  Schedule s = mm.schedule();
  vectorize(stage_of(s, mm.C), raxis(mm.C, 0));
  Stmt body = lower(s, mm.args(), "f").body;
  EXPECT_EQ(count_exprs<Ramp>(body), 0);
  auto loops = loops_of(body);
  EXPECT_EQ(loops.back().name, "k");
  EXPECT_EQ(loops.back().kind, ForKind::kSerial);
  expect_same_as_default(s, mm.args(), {mm.C.op()});
}

TEST(ScheduleReduction, ConditionalReduction) {
  Tensor A = placeholder({ci(6), ci(9)}, kF32, "A");
  IterVar r = reduce_axis(9, "k");
  Tensor C = compute(
      {ci(6)},
      [&](const std::vector<Expr>& i) {
        return sum(A({i[0], r->var}), {r}, LT::make(r->var, i[0]));
      },
      "C");
  Schedule s = create_schedule({C.op()});
  auto [ko, ki] = split(stage_of(s, C), raxis(C, 0), ci(4), Expr());
  reorder(stage_of(s, C), {ko, axis(C, 0), ki});
  vectorize(stage_of(s, C), axis(C, 0));
  expect_same_as_default(s, {A, C}, {C.op()});
}

}  // namespace
}  // namespace ptb::testing
