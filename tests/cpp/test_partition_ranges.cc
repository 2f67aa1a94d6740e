// The partition_ranges lowering pass: where it splits a loop, what each part keeps of the
// comparisons, and what it leaves alone. Split points are worked out by hand below.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/stmt.h"
#include "ir/visitor.h"
#include "lower/partition_ranges.h"

namespace ptb {
namespace {

const DataType kI32 = DataType::Int(32);
const DataType kI64 = DataType::Int(64);
const DataType kF32 = DataType::Float(32);

Expr i32(int64_t v) { return IntImm::make(kI32, v); }

// for i in [0, outer): for j in [0, 16) vectorized (or `inner_kind`):
//   out[i*16 + j] = select(i*16 + j < limit, a[i*16 + j], b[i*16 + j - limit])
Stmt concat_nest(int64_t outer, int64_t limit, ForKind inner_kind = ForKind::kVectorized,
                 ForKind outer_kind = ForKind::kSerial) {
  Expr i = Var::make(kI32, "i"), j = Var::make(kI32, "j");
  Expr at = Add::make(Mul::make(i, i32(16)), j);
  Buffer out = make_buffer("out", kF32, {IntImm::make(kI64, outer * 16)});
  Buffer a = make_buffer("a", kF32, {IntImm::make(kI64, limit)});
  Buffer b = make_buffer("b", kF32, {IntImm::make(kI64, outer * 16 - limit)});
  Expr value = Select::make(LT::make(at, i32(limit)), Load::make(a, cast(kI64, at)),
                            Load::make(b, cast(kI64, Sub::make(at, i32(limit)))));
  Stmt body = Store::make(out, value, cast(kI64, at));
  Stmt inner = For::make(j, i32(0), i32(16), inner_kind, body);
  return For::make(i, i32(0), i32(outer), outer_kind, inner);
}

struct Part {
  int64_t min, extent;
  std::string body;
};

std::vector<Part> parts(const Stmt& s) {
  std::vector<Stmt> loops;
  if (const auto* b = s.as<Block>()) {
    loops = b->stmts;
  } else {
    loops = {s};
  }
  std::vector<Part> out;
  for (const Stmt& l : loops) {
    const auto* f = l.as<For>();
    EXPECT_NE(f, nullptr) << to_string(s);
    if (f == nullptr) continue;
    out.push_back({*as_const_int(f->min), *as_const_int(f->extent), to_string(f->body)});
  }
  return out;
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST(PartitionRanges, ConcatenationSplitsIntoEachInputsPart) {
  // 200 = 12.5 vectors: i < 12 reads a only, i = 12 both (lanes 0-7 from a), i > 12 b only.
  std::vector<Part> p = parts(partition_ranges(concat_nest(24, 200)));
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].min, 0);
  EXPECT_EQ(p[0].extent, 12);
  EXPECT_EQ(p[1].min, 12);
  EXPECT_EQ(p[1].extent, 1);
  EXPECT_EQ(p[2].min, 13);
  EXPECT_EQ(p[2].extent, 11);
  EXPECT_FALSE(has(p[0].body, "select")) << p[0].body;
  EXPECT_TRUE(has(p[0].body, "a[")) << p[0].body;
  EXPECT_FALSE(has(p[0].body, "b[")) << p[0].body;
  EXPECT_TRUE(has(p[1].body, "select")) << p[1].body;  // the vector across the boundary
  EXPECT_FALSE(has(p[2].body, "select")) << p[2].body;
  EXPECT_FALSE(has(p[2].body, "a[")) << p[2].body;
}

TEST(PartitionRanges, BoundaryOnAVectorMakesTwoParts) {
  std::vector<Part> p = parts(partition_ranges(concat_nest(24, 192)));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].extent, 12);
  EXPECT_EQ(p[1].min, 12);
  EXPECT_EQ(p[1].extent, 12);
}

TEST(PartitionRanges, LeavesWhatItShouldNotSplit) {
  // Decided everywhere already (the whole loop reads a): nothing to split.
  Stmt all_a = concat_nest(4, 64);
  EXPECT_TRUE(partition_ranges(all_a).same_as(all_a)) << to_string(partition_ranges(all_a));
  // No vector loop inside: the masks it would save do not exist.
  Stmt scalar = concat_nest(24, 200, ForKind::kSerial);
  EXPECT_EQ(parts(partition_ranges(scalar)).size(), 1u);
  // A parallel loop keeps its one parallel region.
  Stmt parallel = concat_nest(24, 200, ForKind::kVectorized, ForKind::kParallel);
  EXPECT_EQ(parts(partition_ranges(parallel)).size(), 1u);
}

TEST(PartitionRanges, DecreasingComparisonAndBothBordersOfAPad) {
  // for y in [0, 10): for x in [0, 16) vectorized: out[y*16 + x] = select(y >= 1 && 8 > y, ...)
  // (a pad's rows, written with a decreasing comparison): rows 0, 1-7, 8-9.
  Expr y = Var::make(kI32, "y"), x = Var::make(kI32, "x");
  Expr at = Add::make(Mul::make(y, i32(16)), x);
  Buffer out = make_buffer("out", kF32, {IntImm::make(kI64, 160)});
  Buffer in = make_buffer("in", kF32, {IntImm::make(kI64, 160)});
  Expr inside = And::make(GE::make(y, i32(1)), GT::make(i32(8), y));
  Stmt body = Store::make(
      out, Select::make(inside, Load::make(in, cast(kI64, at)), make_zero(kF32)), cast(kI64, at));
  Stmt nest = For::make(y, i32(0), i32(10), ForKind::kSerial,
                        For::make(x, i32(0), i32(16), ForKind::kVectorized, body));
  std::vector<Part> p = parts(partition_ranges(nest));
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].min, 0);
  EXPECT_EQ(p[0].extent, 1);
  EXPECT_EQ(p[1].min, 1);
  EXPECT_EQ(p[1].extent, 7);
  EXPECT_EQ(p[2].min, 8);
  EXPECT_EQ(p[2].extent, 2);
  EXPECT_FALSE(has(p[0].body, "in[")) << p[0].body;
  EXPECT_FALSE(has(p[1].body, "select")) << p[1].body;
  EXPECT_FALSE(has(p[2].body, "in[")) << p[2].body;
}

}  // namespace
}  // namespace ptb
