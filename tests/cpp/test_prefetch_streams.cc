// The prefetch_streams lowering pass: which lines of the next iteration's region it fetches, and
// in which loop. Expected addresses are worked out by hand from the loop nests below.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/expr.h"
#include "ir/op.h"
#include "ir/simplify.h"
#include "ir/stmt.h"
#include "ir/substitute.h"
#include "ir/visitor.h"
#include "lower/prefetch_streams.h"

namespace ptb {
namespace {

const DataType kI32 = DataType::Int(32);
const DataType kI64 = DataType::Int(64);
const DataType kF32 = DataType::Float(32);

Expr i64(int64_t v) { return IntImm::make(kI64, v); }
Stmt loop(const Expr& v, int64_t extent, Stmt body) {
  return For::make(v, make_zero(kI32), IntImm::make(kI32, extent), ForKind::kSerial,
                   std::move(body));
}
Stmt request(const Buffer& b, int64_t offset, int64_t level = 2) {
  return Evaluate::make(
      Call::make(Intrinsic::kPrefetch,
                 {Load::make(b, i64(0)), IntImm::make(kI32, offset), IntImm::make(kI32, level)}));
}

// The resolved prefetches at the top of the body of the loop over `v` (none: nullopt), each as
// its element index.
std::optional<std::vector<Expr>> prefetches_in(const Stmt& s, const Expr& v) {
  if (const auto* f = s.as<For>()) {
    if (f->var.same_as(v)) {
      std::vector<Expr> out;
      const auto* b = f->body.as<Block>();
      for (const Stmt& x : b ? b->stmts : std::vector<Stmt>{f->body}) {
        const auto* ev = x.as<Evaluate>();
        const auto* call = ev ? ev->value.as<Call>() : nullptr;
        if (!call || call->op != Intrinsic::kPrefetch) break;
        EXPECT_EQ(call->args.size(), 2u);
        out.push_back(call->args[0].as<Load>()->index);
      }
      return out;
    }
    return prefetches_in(f->body, v);
  }
  if (const auto* b = s.as<Block>()) {
    for (const Stmt& x : b->stmts) {
      if (auto r = prefetches_in(x, v)) return r;
    }
  }
  return std::nullopt;
}

int64_t at(const Expr& index, const VarMap& values) {
  auto c = as_const_int(simplify(substitute(index, values)));
  EXPECT_TRUE(c.has_value());
  return c.value_or(-1);
}

bool has_request(const Stmt& s) {
  bool found = false;
  for_each_expr(s, [&](const Expr& e) {
    const auto* c = e.as<Call>();
    found = found || (c && c->op == Intrinsic::kPrefetch && c->args.size() == 3);
  });
  return found;
}

// for o < outer: request(src, 1); for i < inner: for j < 16: out[j] += src[index(o, i, j)],
// resolved by the pass.
Stmt accumulate_nest(const Expr& o, int64_t outer, const Expr& i, int64_t inner, const Expr& j,
                     const Buffer& src, const Expr& index) {
  Buffer out = make_buffer("out", kF32, {i64(16)});
  Stmt body = Store::make(out, Add::make(Load::make(out, cast(kI64, j)), Load::make(src, index)),
                          cast(kI64, j));
  Stmt nest = loop(o, outer, Block::make({request(src, 1), loop(i, inner, loop(j, 16, body))}));
  return prefetch_streams(nest);
}

Expr affine(const Expr& a, int64_t ka, const Expr& b, int64_t kb, const Expr& c) {
  return cast(kI64, Add::make(Add::make(Mul::make(a, IntImm::make(kI32, ka)),
                                        Mul::make(b, IntImm::make(kI32, kb))),
                              c));
}

TEST(PrefetchStreams, OneStretchSpreadOverTheOuterInnerLoop) {
  // for o < 8: request(W, 1); for i < 64: for j < 16: out[j] += W[o*1024 + i*16 + j].
  // Iteration o + 1 reads W[(o+1)*1024 .. +1023]: 4096 bytes, 65 lines counted (one extra for
  // a stretch that does not start at a line). i's 64 iterations do not outnumber them, i*j's
  // 1024 do: two lines per iteration of i, lines 2i and 2i + 1 at 16 floats each.
  Expr o = Var::make(kI32, "o"), i = Var::make(kI32, "i"), j = Var::make(kI32, "j");
  Buffer w = make_buffer("W", kF32, {i64(8 * 1024)});
  Stmt s = accumulate_nest(o, 8, i, 64, j, w, affine(o, 1024, i, 16, j));
  EXPECT_FALSE(has_request(s));
  auto p = prefetches_in(s, i);
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->size(), 2u);
  VarMap values{{o.get(), IntImm::make(kI32, 3)}, {i.get(), IntImm::make(kI32, 5)}};
  EXPECT_EQ(at((*p)[0], values), 4 * 1024 + (2 * 5) * 16);
  EXPECT_EQ(at((*p)[1], values), 4 * 1024 + (2 * 5 + 1) * 16);
}

TEST(PrefetchStreams, StridedRowsAreFetchedRowByRow) {
  // for o < 4: request(B, 1); for r < 128: for j < 16: out[j] += B[r*1024 + o*64 + j]: a
  // panel's 16 columns of 128 rows, 4 KB apart. One stretch would span 127 * 1024 + 16
  // elements (7938 lines); as rows, 128 x 2 lines (64 bytes each, one extra). r's 128
  // iterations do not outnumber the 256 lines: 2 per row, row r's lines at r*1024 and +16.
  Expr o = Var::make(kI32, "o"), r = Var::make(kI32, "r"), j = Var::make(kI32, "j");
  Buffer b = make_buffer("B", kF32, {i64(128 * 1024)});
  Stmt s = accumulate_nest(o, 4, r, 128, j, b, affine(r, 1024, o, 64, j));
  auto p = prefetches_in(s, r);
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(p->size(), 2u);
  for (int64_t row : {0, 7, 127}) {
    VarMap values{{o.get(), IntImm::make(kI32, 2)}, {r.get(), IntImm::make(kI32, row)}};
    EXPECT_EQ(at((*p)[0], values), 3 * 64 + row * 1024);
    EXPECT_EQ(at((*p)[1], values), 3 * 64 + row * 1024 + 16);
  }
}

TEST(PrefetchStreams, CacheLevelIsKeptByEachLine) {
  // A GEMM's reduction loop: for k < 96: request(B, 8, level 1); out[0..15] += B[k*64 + 0..15]
  // ... four vectors, unrolled (no inner loop). Step k + 8's row of the packed panel, 64
  // floats: 5 lines at the top of the body (one extra for a stretch that need not start at a
  // line), each a prefetch into L1.
  Expr k = Var::make(kI32, "k");
  Buffer b = make_buffer("B", kF32, {i64(104 * 64)});
  Buffer out = make_buffer("out", kF32, {i64(64)});
  std::vector<Stmt> body{request(b, 8, 1)};
  for (int64_t v = 0; v < 4; ++v) {
    Expr at_k = Add::make(cast(kI64, Mul::make(k, IntImm::make(kI32, 64))), i64(16 * v));
    Expr lanes = Ramp::make(at_k, i64(1), 16);
    Expr acc = Ramp::make(i64(16 * v), i64(1), 16);
    body.push_back(Store::make(out, Add::make(Load::make(out, acc), Load::make(b, lanes)), acc));
  }
  Stmt s = prefetch_streams(loop(k, 96, Block::make(std::move(body))));
  EXPECT_FALSE(has_request(s));
  const auto* f = s.as<For>();
  ASSERT_NE(f, nullptr);
  const auto* block = f->body.as<Block>();
  ASSERT_NE(block, nullptr);
  std::vector<int64_t> lines;
  for (const Stmt& x : block->stmts) {
    const auto* ev = x.as<Evaluate>();
    const auto* call = ev ? ev->value.as<Call>() : nullptr;
    if (!call || call->op != Intrinsic::kPrefetch) break;
    ASSERT_EQ(call->args.size(), 2u);
    EXPECT_EQ(as_const_int(call->args[1]), 1);
    lines.push_back(at(call->args[0].as<Load>()->index, {{k.get(), IntImm::make(kI32, 10)}}));
  }
  EXPECT_EQ(lines, (std::vector<int64_t>{18 * 64, 18 * 64 + 16, 18 * 64 + 32, 18 * 64 + 48,
                                         18 * 64 + 64}));
}

TEST(PrefetchStreams, UnresolvableRequestsAreDropped) {
  // The region depends on a value loaded at run time (a gather): nothing to prefetch, and the
  // request goes away.
  Expr o = Var::make(kI32, "o"), i = Var::make(kI32, "i");
  Buffer w = make_buffer("W", kF32, {i64(1024)});
  Buffer ids = make_buffer("ids", kI32, {i64(64)});
  Buffer out = make_buffer("out", kF32, {i64(64)});
  Expr gathered = cast(kI64, Load::make(ids, cast(kI64, i)));
  Stmt body = Store::make(out, Load::make(w, gathered), cast(kI64, i));
  Stmt nest = loop(o, 4, Block::make({request(w, 1), loop(i, 64, body)}));
  Stmt s = prefetch_streams(nest);
  EXPECT_FALSE(has_request(s));
  auto p = prefetches_in(s, i);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->empty());
}

}  // namespace
}  // namespace ptb
