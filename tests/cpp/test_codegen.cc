// Codegen and JIT on hand-built lowered functions: loops, vectors, memory, parallel loops,
// intermediates, the JIT's API and targets. Arithmetic and math are in test_codegen_math.cc.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "codegen/jit.h"
#include "codegen/target.h"
#include "ir/expr.h"
#include "ir/op.h"
#include "ir/stmt.h"
#include "runtime/backend_api.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "test_codegen_util.h"

namespace ptb {
namespace {

const DataType f32 = DataType::Float(32);
const DataType i32 = DataType::Int(32);

Expr c32(int64_t v) { return IntImm::make(i32, v); }
Expr c64(int64_t v) { return IntImm::make(kOffsetType, v); }
Expr var(const std::string& name, DataType t = i32) { return Var::make(t, name); }
Expr off(const Expr& e) { return cast(kOffsetType.with_lanes(e.dtype().lanes()), e); }
Stmt loop(const Expr& v, const Expr& extent, const Stmt& body, ForKind k = ForKind::kSerial) {
  return For::make(v, make_zero(v.dtype()), extent, k, body);
}

JITModule::KernelFn compile_one(const LoweredFunc& f, std::shared_ptr<JITModule>* keep,
                                const std::string& target = "llvm") {
  *keep = JITModule::compile({f}, Target::parse(target), "test_" + f.name);
  JITModule::KernelFn fn = (*keep)->lookup(f.name);
  EXPECT_NE(fn, nullptr);
  return fn;
}

// c[i] = a[i] + b[i] for i < n, with n a scalar parameter.
LoweredFunc vector_add() {
  Expr n = var("n");
  Buffer a = make_buffer("A", f32, {n}), b = make_buffer("B", f32, {n}),
         c = make_buffer("C", f32, {n});
  Expr i = var("i");
  Stmt body = Store::make(c, Add::make(Load::make(a, off(i)), Load::make(b, off(i))), off(i));
  return testing::lowered_func("vector_add", {a, b, c}, {n}, loop(i, n, body));
}

TEST(Codegen, ScalarLoopWithSymbolicExtent) {
  std::shared_ptr<JITModule> m;
  auto fn = compile_one(vector_add(), &m);
  for (int64_t n : {0, 1, 7, 1000}) {
    std::vector<float> a(n + 1), b(n + 1), c(n + 1, -1.0f);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = 0.5f * i;
      b[i] = 3.0f - i;
    }
    void* data[] = {a.data(), b.data(), c.data()};
    int64_t scalars[] = {n};
    ASSERT_EQ(fn(data, scalars), 0);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
    EXPECT_EQ(c[n], -1.0f) << "wrote past the end";
  }
}

// The shape a vectorize pass produces: Ramp indices and Broadcast constants.
TEST(Codegen, RampAndBroadcastVectors) {
  Expr n = var("n");
  Buffer a = make_buffer("A", f32, {n}), b = make_buffer("B", f32, {n}),
         c = make_buffer("C", f32, {n});
  Expr io = var("io");
  Expr idx = Ramp::make(off(Mul::make(io, c32(16))), c64(1), 16);
  Expr two = Broadcast::make(FloatImm::make(f32, 2.0), 16);
  Stmt body =
      Store::make(c, Add::make(Mul::make(Load::make(a, idx), two), Load::make(b, idx)), idx);
  std::shared_ptr<JITModule> m;
  auto fn = compile_one(
      testing::lowered_func("ramp", {a, b, c}, {n}, loop(io, FloorDiv::make(n, c32(16)), body)),
      &m);
  const int64_t len = 64;
  std::vector<float> av(len), bv(len), cv(len);
  for (int i = 0; i < len; ++i) {
    av[i] = i;
    bv[i] = 100 - i;
  }
  void* data[] = {av.data(), bv.data(), cv.data()};
  int64_t scalars[] = {len};
  ASSERT_EQ(fn(data, scalars), 0);
  for (int i = 0; i < len; ++i) EXPECT_EQ(cv[i], 2.0f * i + (100 - i));
  EXPECT_NE(m->get_source("ll").find("<16 x float>"), std::string::npos);
}

TEST(Codegen, GatherScatterAndBroadcastIndices) {
  // c[2i + 1 : stride 2, 8 lanes] = a[stride 3] + a[0] (a broadcast index)
  Buffer a = make_buffer("A", f32, {c32(24)}), c = make_buffer("C", f32, {c32(16)});
  Expr src = Ramp::make(c64(0), c64(3), 8);
  Expr dst = Ramp::make(c64(1), c64(2), 8);
  Expr first = Load::make(a, Broadcast::make(c64(0), 8));
  Stmt body = Store::make(c, Add::make(Load::make(a, src), first), dst);
  std::shared_ptr<JITModule> m;
  auto fn = compile_one(testing::lowered_func("gather", {a, c}, {}, body), &m);
  std::vector<float> av(24), cv(16, -1.0f);
  for (int i = 0; i < 24; ++i) av[i] = 10.0f + i;
  void* data[] = {av.data(), cv.data()};
  ASSERT_EQ(fn(data, nullptr), 0);
  for (int i = 0; i < 16; ++i) {
    float expected = i % 2 == 1 ? av[3 * (i / 2)] + av[0] : -1.0f;
    EXPECT_EQ(cv[i], expected) << i;
  }
}

// Memory whose end is followed by an inaccessible page: reading one element past it crashes.
class GuardedArray {
 public:
  explicit GuardedArray(size_t count) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t bytes = count * sizeof(float);
    size_t data_pages = (bytes + page_ - 1) / page_;
    size_ = (data_pages + 1) * page_;
    base_ = static_cast<char*>(
        mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    mprotect(base_ + data_pages * page_, page_, PROT_NONE);
    data_ = reinterpret_cast<float*>(base_ + data_pages * page_ - bytes);
  }
  ~GuardedArray() { munmap(base_, size_); }
  float* data() { return data_; }

 private:
  size_t page_, size_;
  char* base_;
  float* data_;
};

TEST(Codegen, IfThenElseGuardsOutOfBoundsReads) {
  // c[i] = if_then_else(i + 1 < n, a[i + 1], -1) reads a[n] only if the guard fails to guard.
  Expr n = var("n");
  Buffer a = make_buffer("A", f32, {n}), c = make_buffer("C", f32, {n});
  Expr i = var("i");
  Expr next = Add::make(i, c32(1));
  Expr v = Call::make(Intrinsic::kIfThenElse,
                      {LT::make(next, n), Load::make(a, off(next)), FloatImm::make(f32, -1.0)});
  std::shared_ptr<JITModule> m;
  auto fn = compile_one(
      testing::lowered_func("shift", {a, c}, {n}, loop(i, n, Store::make(c, v, off(i)))), &m);
  const int64_t len = 1000;
  GuardedArray a_mem(len);
  std::vector<float> cv(len);
  for (int64_t k = 0; k < len; ++k) a_mem.data()[k] = k;
  void* data[] = {a_mem.data(), cv.data()};
  int64_t scalars[] = {len};
  ASSERT_EQ(fn(data, scalars), 0);
  for (int64_t k = 0; k < len; ++k) EXPECT_EQ(cv[k], k + 1 < len ? k + 1 : -1) << k;
}

TEST(Codegen, LaneWiseIfThenElseMasksTheLoads) {
  // 16 lanes at a time over n = 20: the second vector's lanes 4..15 are past the end of a.
  Expr n = var("n");
  Buffer a = make_buffer("A", f32, {n}), c = make_buffer("C", f32, {c32(32)});
  Expr io = var("io");
  Expr idx32 = Ramp::make(Mul::make(io, c32(16)), c32(1), 16);
  Expr in_bounds = LT::make(idx32, Broadcast::make(n, 16));
  Expr v = Call::make(Intrinsic::kIfThenElse, {in_bounds, Load::make(a, off(idx32)),
                                               Broadcast::make(FloatImm::make(f32, 7), 16)});
  Expr out_idx = Ramp::make(off(Mul::make(io, c32(16))), c64(1), 16);
  std::shared_ptr<JITModule> m;
  auto fn = compile_one(
      testing::lowered_func("masked", {a, c}, {n}, loop(io, c32(2), Store::make(c, v, out_idx))),
      &m);
  const int64_t len = 20;
  GuardedArray a_mem(len);
  for (int k = 0; k < len; ++k) a_mem.data()[k] = 100 + k;
  std::vector<float> cv(32);
  void* data[] = {a_mem.data(), cv.data()};
  int64_t scalars[] = {len};
  ASSERT_EQ(fn(data, scalars), 0);
  for (int k = 0; k < 32; ++k) EXPECT_EQ(cv[k], k < len ? 100 + k : 7) << k;
}

TEST(Codegen, PredicatedLoadsAndStores) {
  // The tail of a vectorized loop: lanes at or past n are neither read nor written.
  Expr n = var("n");
  Buffer a = make_buffer("A", f32, {n}), c = make_buffer("C", f32, {n});
  Expr lanes = Ramp::make(c32(0), c32(1), 16);
  Expr pred = LT::make(lanes, Broadcast::make(n, 16));
  Expr idx = Ramp::make(c64(0), c64(1), 16);
  Expr value = Add::make(Load::make(a, idx, pred), Broadcast::make(FloatImm::make(f32, 1), 16));
  std::shared_ptr<JITModule> m;
  auto fn =
      compile_one(testing::lowered_func("tail", {a, c}, {n}, Store::make(c, value, idx, pred)), &m);
  const int64_t len = 5;
  GuardedArray a_mem(len), c_mem(len);
  for (int k = 0; k < len; ++k) a_mem.data()[k] = k;
  void* data[] = {a_mem.data(), c_mem.data()};
  int64_t scalars[] = {len};
  ASSERT_EQ(fn(data, scalars), 0);
  for (int k = 0; k < len; ++k) EXPECT_EQ(c_mem.data()[k], k + 1.0f);
}

TEST(Codegen, ParallelLoopCapturesOuterValues) {
  // let s = n * 2 in parallel for i: c[i] = a[i] * k + s, with k a float scalar from a Let.
  Expr n = var("n");
  Buffer a = make_buffer("A", f32, {n}), c = make_buffer("C", f32, {n});
  Expr i = var("i"), s = var("s"), k = var("k", f32);
  Expr value = Add::make(Mul::make(Load::make(a, off(i)), k), Cast::make(f32, s));
  Stmt par = loop(i, n, Store::make(c, value, off(i)), ForKind::kParallel);
  Stmt body =
      LetStmt::make(s, Mul::make(n, c32(2)), LetStmt::make(k, FloatImm::make(f32, 3.0), par));
  std::shared_ptr<JITModule> m;
  auto fn = compile_one(testing::lowered_func("par", {a, c}, {n}, body), &m);
  int saved = get_num_threads();
  for (int threads : {1, 2, 4}) {
    set_num_threads(threads);
    const int64_t len = 1001;
    std::vector<float> av(len), cv(len);
    for (int64_t q = 0; q < len; ++q) av[q] = q;
    void* data[] = {av.data(), cv.data()};
    int64_t scalars[] = {len};
    ASSERT_EQ(fn(data, scalars), 0);
    for (int64_t q = 0; q < len; ++q) ASSERT_EQ(cv[q], 3.0f * q + 2 * len) << q;
  }
  set_num_threads(saved);
}

TEST(Codegen, NestedParallelLoopsAndAllocationsInside) {
  // parallel i: allocate t[m]; parallel j: t[j] = a[i*m + j] * 2; serial j: c[...] = t[j] + 1
  Expr n = var("n"), mm = var("m");
  Buffer a = make_buffer("A", f32, {n, mm}), c = make_buffer("C", f32, {n, mm});
  Buffer t = make_buffer("T", f32, {mm});
  Expr i = var("i"), j = var("j"), j2 = var("j2");
  Expr row = Mul::make(off(i), off(mm));
  Stmt fill =
      loop(j, mm,
           Store::make(t, Mul::make(Load::make(a, Add::make(row, off(j))), FloatImm::make(f32, 2)),
                       off(j)),
           ForKind::kParallel);
  Stmt out = loop(j2, mm,
                  Store::make(c, Add::make(Load::make(t, off(j2)), FloatImm::make(f32, 1)),
                              Add::make(row, off(j2))));
  Stmt body = loop(i, n, Allocate::make(t, Block::make({fill, out})), ForKind::kParallel);
  std::shared_ptr<JITModule> m;
  auto fn = compile_one(testing::lowered_func("nested", {a, c}, {n, mm}, body), &m);
  const int64_t rows = 37, cols = 53;
  std::vector<float> av(rows * cols), cv(rows * cols);
  for (size_t q = 0; q < av.size(); ++q) av[q] = q;
  void* data[] = {av.data(), cv.data()};
  int64_t scalars[] = {rows, cols};
  ASSERT_EQ(fn(data, scalars), 0);
  for (size_t q = 0; q < av.size(); ++q) ASSERT_EQ(cv[q], 2.0f * q + 1) << q;
}

TEST(Codegen, AllocateOnStackAndHeap) {
  // Three intermediates: a small constant one (stack), a large constant one and a symbolic one
  // (heap). c[i] = ((a[i] + 1) * 2) - 3 through all three.
  Expr n = var("n");
  Buffer a = make_buffer("A", f32, {n}), c = make_buffer("C", f32, {n});
  Buffer small = make_buffer("small", f32, {c32(16)});
  Buffer large = make_buffer("large", f32, {c32(100000)});
  Buffer sym = make_buffer("sym", f32, {n});
  Expr i = var("i"), j = var("j"), k = var("k");
  auto f = [](double v) { return FloatImm::make(f32, v); };
  Stmt s1 = loop(j, c32(16), Store::make(small, Cast::make(f32, j), off(j)));
  Stmt s2 = loop(i, n, Store::make(large, Add::make(Load::make(a, off(i)), f(1)), off(i)));
  Stmt s3 = loop(i, n, Store::make(sym, Mul::make(Load::make(large, off(i)), f(2)), off(i)));
  Stmt s4 = loop(
      k, n,
      Store::make(c, Sub::make(Load::make(sym, off(k)), Add::make(Load::make(small, c64(3)), f(0))),
                  off(k)));
  Stmt body = Allocate::make(
      small, Allocate::make(large, Allocate::make(sym, Block::make({s1, s2, s3, s4}))));
  std::shared_ptr<JITModule> m;
  auto fn = compile_one(testing::lowered_func("alloc", {a, c}, {n}, body), &m);
  const int64_t len = 777;
  std::vector<float> av(len), cv(len);
  for (int64_t q = 0; q < len; ++q) av[q] = q;
  void* data[] = {av.data(), cv.data()};
  int64_t scalars[] = {len};
  ASSERT_EQ(fn(data, scalars), 0);
  for (int64_t q = 0; q < len; ++q) ASSERT_EQ(cv[q], (q + 1.0f) * 2 - 3) << q;
  std::string ll = m->get_source("ll");
  EXPECT_NE(ll.find("ptb_alloc"), std::string::npos);
  EXPECT_NE(ll.find("ptb_free"), std::string::npos);
}

TEST(Codegen, FailedAllocationReturnsAnErrorCode) {
  // 2^60 elements of float32 (4 EiB): no allocator can provide that.
  Expr n = var("n", DataType::Int(64));
  Buffer c = make_buffer("C", f32, {c32(1)});
  Buffer huge = make_buffer("huge", f32, {n});
  Stmt body = Allocate::make(huge, Block::make({Store::make(huge, FloatImm::make(f32, 1), c64(0)),
                                                Store::make(c, Load::make(huge, c64(0)), c64(0))}));
  std::shared_ptr<JITModule> m;
  auto fn = compile_one(testing::lowered_func("huge", {c}, {n}, body), &m);
  float out = 0;
  void* data[] = {&out};
  int64_t too_big[] = {int64_t{1} << 60};
  EXPECT_EQ(fn(data, too_big), PTB_ERROR_OUT_OF_MEMORY);
  int64_t fine[] = {4};
  EXPECT_EQ(fn(data, fine), 0);
  EXPECT_EQ(out, 1.0f);
}

TEST(Codegen, UnrolledLoopAndIfThenElseStatement) {
  // for i (unrolled, 8): if i % 2 == 0 then c[i] = 1 else c[i] = 2
  Buffer c = make_buffer("C", DataType::Int(64), {c32(8)});
  Expr i = var("i");
  Stmt body = IfThenElse::make(EQ::make(FloorMod::make(i, c32(2)), c32(0)),
                               Store::make(c, c64(1), off(i)), Store::make(c, c64(2), off(i)));
  std::shared_ptr<JITModule> m;
  auto fn = compile_one(
      testing::lowered_func("unrolled", {c}, {}, loop(i, c32(8), body, ForKind::kUnrolled)), &m);
  std::vector<int64_t> cv(8);
  void* data[] = {cv.data()};
  ASSERT_EQ(fn(data, nullptr), 0);
  for (int q = 0; q < 8; ++q) EXPECT_EQ(cv[q], q % 2 == 0 ? 1 : 2);
}

TEST(Codegen, VectorizedLoopIsAnInternalError) {
  Buffer c = make_buffer("C", f32, {c32(4)});
  Expr i = var("i");
  auto f = testing::lowered_func(
      "v", {c}, {},
      loop(i, c32(4), Store::make(c, FloatImm::make(f32, 0), off(i)), ForKind::kVectorized));
  EXPECT_THROW(JITModule::compile({f}, Target::parse("llvm"), "v"), InternalError);
}

TEST(Jit, SeveralFunctionsAndLookup) {
  auto add = vector_add();
  LoweredFunc sub = vector_add();
  sub.name = "vector_sub";
  auto m = JITModule::compile({add, sub}, Target::parse("llvm"), "two");
  EXPECT_NE(m->lookup("vector_add"), nullptr);
  EXPECT_NE(m->lookup("vector_sub"), nullptr);
  EXPECT_EQ(m->lookup("missing"), nullptr);
  EXPECT_EQ(m->function_names(), (std::vector<std::string>{"vector_add", "vector_sub"}));
  try {
    JITModule::compile({add, add}, Target::parse("llvm"), "dup");
    FAIL() << "expected a ValueError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
  }
}

TEST(Jit, KernelNamesDoNotCaptureLibraryCalls) {
  // Kernels named like the libm functions their own code calls.
  std::vector<LoweredFunc> funcs;
  for (const char* name : {"expf", "exp", "memset"}) {
    DataType t = std::string(name) == "exp" ? DataType::Float(64) : f32;
    Buffer x = make_buffer("X", t, {c32(64)}), y = make_buffer("Y", t, {c32(64)});
    Expr i = var("i");
    Stmt s = Store::make(y, Call::make(Intrinsic::kExp, {Load::make(x, off(i))}), off(i));
    if (std::string(name) == "memset") s = Store::make(y, FloatImm::make(f32, 0), off(i));
    funcs.push_back(testing::lowered_func(name, {x, y}, {}, loop(i, c32(64), s)));
  }
  auto m = JITModule::compile(funcs, Target::parse("llvm"), "names");
  std::vector<float> xf(64, 1.0f), yf(64, -1.0f);
  std::vector<double> xd(64, 2.0), yd(64);
  void* fdata[] = {xf.data(), yf.data()};
  void* ddata[] = {xd.data(), yd.data()};
  ASSERT_EQ(m->lookup("expf")(fdata, nullptr), 0);
  EXPECT_NEAR(yf[63], std::exp(1.0f), 1e-6f);
  ASSERT_EQ(m->lookup("exp")(ddata, nullptr), 0);
  EXPECT_NEAR(yd[0], std::exp(2.0), 1e-12);
  ASSERT_EQ(m->lookup("memset")(fdata, nullptr), 0);
  EXPECT_EQ(yf[5], 0.0f);
}

TEST(Jit, SourceFormats) {
  auto m = JITModule::compile({vector_add()}, Target::parse("llvm"), "src");
  std::string ll = m->get_source("ll");
  EXPECT_NE(ll.find("@ptb.vector_add(ptr"), std::string::npos);
  std::string s = m->get_source("asm");
  EXPECT_NE(s.find("vector_add:"), std::string::npos);
  EXPECT_EQ(m->get_source("s"), s);
  try {
    m->get_source("ptx");
    FAIL() << "expected a ValueError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find("asm"), std::string::npos);
  }
}

TEST(Jit, ConcurrentCompilation) {
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &ok] {
      auto m = JITModule::compile({vector_add()}, Target::parse("llvm"), "c" + std::to_string(t));
      std::vector<float> a(10, 1.0f), b(10, float(t)), c(10);
      void* data[] = {a.data(), b.data(), c.data()};
      int64_t scalars[] = {10};
      ok[t] = m->lookup("vector_add")(data, scalars) == 0 && c[9] == 1.0f + t;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, (std::vector<int>{1, 1, 1, 1}));
}

// A 56x56 matmul written by hand: C[i, j] = 0; C[i, j] += A[i, k] * B[k, j].
LoweredFunc matmul(int64_t size) {
  Buffer a = make_buffer("A", f32, {c32(size), c32(size)}),
         b = make_buffer("B", f32, {c32(size), c32(size)}),
         c = make_buffer("C", f32, {c32(size), c32(size)});
  Expr i = var("i"), j = var("j"), k = var("k");
  auto at = [&](const Expr& r, const Expr& col) {
    return Add::make(Mul::make(off(r), c64(size)), off(col));
  };
  Stmt init = Store::make(c, FloatImm::make(f32, 0), at(i, j));
  Stmt update = Store::make(c,
                            Add::make(Load::make(c, at(i, j)),
                                      Mul::make(Load::make(a, at(i, k)), Load::make(b, at(k, j)))),
                            at(i, j));
  Stmt body =
      loop(i, c32(size),
           Block::make({loop(j, c32(size), init), loop(k, c32(size), loop(j, c32(size), update))}));
  return testing::lowered_func("matmul", {a, b, c}, {}, body);
}

TEST(Jit, MatmulCompilesQuicklyAndIsCorrect) {
  const int64_t size = 56;
  JITModule::compile({vector_add()}, Target::parse("llvm"), "warm");  // one-time LLVM setup
  auto target = Target::parse("llvm");
  double best_ms = 1e9;
  std::shared_ptr<JITModule> m;
  for (int rep = 0; rep < 5; ++rep) {
    auto start = std::chrono::steady_clock::now();
    m = JITModule::compile({matmul(size)}, target, "matmul");
    auto stop = std::chrono::steady_clock::now();
    best_ms = std::min(best_ms, std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::printf("[ compile ] 56x56 matmul: definition to callable in %.1f ms (best of 5)\n", best_ms);
  EXPECT_LT(best_ms, 500.0);  // the goal is < 50 ms; this only catches pathologies
  std::vector<float> a(size * size), b(size * size), c(size * size);
  for (int64_t q = 0; q < size * size; ++q) {
    a[q] = (q % 7) - 3.0f;
    b[q] = (q % 5) * 0.5f;
  }
  void* data[] = {a.data(), b.data(), c.data()};
  ASSERT_EQ(m->lookup("matmul")(data, nullptr), 0);
  for (int64_t r = 0; r < size; ++r) {
    for (int64_t col = 0; col < size; ++col) {
      float expected = 0;
      for (int64_t k = 0; k < size; ++k) expected += a[r * size + k] * b[k * size + col];
      ASSERT_NEAR(c[r * size + col], expected, 1e-3f) << r << "," << col;
    }
  }
}

TEST(Target, ParsesLlvmTargets) {
  Target host = Target::parse("llvm");
  EXPECT_FALSE(host.cpu.empty());
  EXPECT_FALSE(host.fast_math);
  EXPECT_EQ(Target::parse(host.str()), host);

  Target skx = Target::parse("llvm -mcpu=skylake-avx512");
  EXPECT_EQ(skx.cpu, "skylake-avx512");
  EXPECT_EQ(skx.features, "");
  EXPECT_EQ(Target::parse(skx.str()), skx);

  Target fm = Target::parse("llvm -mcpu=x86-64 -mattr=+avx2,+fma --fast-math");
  EXPECT_TRUE(fm.fast_math);
  EXPECT_EQ(fm.features, "+avx2,+fma");
  EXPECT_TRUE(Target::parse("llvm -fast-math").fast_math);
  EXPECT_EQ(Target::parse(fm.str()), fm);

  EXPECT_EQ(Target::parse("llvm -mcpu=native"), host);

  Target no512 = Target::parse("llvm -mattr=-avx512f");
  EXPECT_EQ(no512.cpu, host.cpu);
  EXPECT_NE(no512.features.find("-avx512f"), std::string::npos);
}

void expect_value_error(const std::string& target, const std::string& mention) {
  try {
    Target::parse(target);
    ADD_FAILURE() << "expected a ValueError for '" << target << "'";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
  }
}

TEST(Target, RejectsOtherTargetsWithAHelpfulMessage) {
  expect_value_error("cuda", "cuda");
  expect_value_error("cuda", "llvm -mcpu=NAME");
  expect_value_error("", "supported targets");
  expect_value_error("llvm -mcpu=no-such-cpu", "no-such-cpu");
  expect_value_error("llvm -mattr=+no-such-feature", "no-such-feature");
  expect_value_error("llvm -mattr=avx2", "avx2");  // needs + or -
  expect_value_error("llvm -device=gpu", "-device=gpu");
}

TEST(Target, OtherCpusAndFastMathCompileAndRun) {
  for (const char* t :
       {"llvm -mcpu=x86-64", "llvm -mcpu=haswell", "llvm -fast-math", "llvm -mattr=-avx512f"}) {
    std::shared_ptr<JITModule> m;
    auto fn = compile_one(vector_add(), &m, t);
    std::vector<float> a(33, 2.0f), b(33, 0.25f), c(33);
    void* data[] = {a.data(), b.data(), c.data()};
    int64_t scalars[] = {33};
    ASSERT_EQ(fn(data, scalars), 0) << t;
    for (float v : c) EXPECT_EQ(v, 2.25f) << t;
  }
}

}  // namespace
}  // namespace ptb
