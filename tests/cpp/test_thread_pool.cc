#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/backend_api.h"
#include "runtime/loop_profile.h"
#include "runtime/thread_pool.h"
#include "runtime/workspace.h"
#include "support/error.h"
#include "test_fork_util.h"

namespace ptb {
namespace {

// Restores the pool size a test changed.
class ThreadPoolTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = get_num_threads(); }
  void TearDown() override { set_num_threads(saved_); }
  int saved_ = 1;
};

struct Counts {
  std::vector<std::atomic<int>> hits;
  explicit Counts(int64_t n) : hits(n) {}
};

void count_chunk(int64_t begin, int64_t end, void* p) {
  auto* c = static_cast<Counts*>(p);
  for (int64_t i = begin; i < end; ++i) c->hits[i].fetch_add(1);
}

void expect_each_once(const Counts& c) {
  for (size_t i = 0; i < c.hits.size(); ++i) ASSERT_EQ(c.hits[i].load(), 1) << "index " << i;
}

TEST_F(ThreadPoolTest, CoversEveryIndexExactlyOnce) {
  set_num_threads(4);  // more threads than this machine may have cores: still correct
  for (int64_t n : {0, 1, 2, 3, 5, 1000, 100003}) {
    Counts c(n);
    parallel_for(n, count_chunk, &c);
    expect_each_once(c);
  }
}

TEST_F(ThreadPoolTest, ChunksAreContiguousAndTaperToSingleIterations) {
  set_num_threads(3);
  struct Seen {
    std::mutex mu;
    std::vector<std::pair<int64_t, int64_t>> chunks;
  } seen;
  parallel_for(
      30,
      [](int64_t b, int64_t e, void* p) {
        auto* s = static_cast<Seen*>(p);
        std::lock_guard<std::mutex> lock(s->mu);
        s->chunks.emplace_back(b, e);
      },
      &seen);
  // A share of 10 per thread, in tapering pieces: a quarter (rounded up) at most, then half of
  // what is left, down to single iterations: 3, 3, 2, 1, 1.
  std::set<std::pair<int64_t, int64_t>> chunks(seen.chunks.begin(), seen.chunks.end());
  std::set<std::pair<int64_t, int64_t>> expected;
  for (int64_t share : {0, 10, 20}) {
    for (auto [b, e] : {std::pair<int64_t, int64_t>{0, 3}, {3, 6}, {6, 8}, {8, 9}, {9, 10}}) {
      expected.insert({share + b, share + e});
    }
  }
  EXPECT_EQ(seen.chunks.size(), 15u);
  EXPECT_EQ(chunks, expected);
}

void nested_outer(int64_t begin, int64_t end, void* p) {
  auto* c = static_cast<Counts*>(p);
  for (int64_t i = begin; i < end; ++i) {
    // Runs serially on this thread; must neither deadlock nor lose iterations.
    Counts inner(7);
    parallel_for(7, count_chunk, &inner);
    for (auto& h : inner.hits) ASSERT_EQ(h.load(), 1);
    c->hits[i].fetch_add(1);
  }
}

TEST_F(ThreadPoolTest, NestedParallelForRunsSerially) {
  set_num_threads(2);
  Counts c(50);
  parallel_for(50, nested_outer, &c);
  expect_each_once(c);
}

TEST_F(ThreadPoolTest, ConcurrentCallersFromApplicationThreads) {
  set_num_threads(2);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&failures, t] {
      for (int rep = 0; rep < 200; ++rep) {
        int64_t n = 17 + 13 * t + rep % 5;
        Counts c(n);
        parallel_for(n, count_chunk, &c);
        for (auto& h : c.hits) {
          if (h.load() != 1) failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// The calls of fn and the distinct threads that made them.
struct Calls {
  int calls = 0;
  std::set<std::thread::id> threads;
};

Calls record_calls(int64_t n) {
  struct Recorder {
    std::mutex mu;
    Calls calls;
  } r;
  parallel_for(
      n,
      [](int64_t, int64_t, void* p) {
        auto* s = static_cast<Recorder*>(p);
        std::lock_guard<std::mutex> lock(s->mu);
        ++s->calls.calls;
        s->calls.threads.insert(std::this_thread::get_id());
      },
      &r);
  return r.calls;
}

TEST_F(ThreadPoolTest, SetNumThreadsChangesTheChunking) {
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  Calls three = record_calls(48);
  EXPECT_EQ(three.calls, 18);  // shares of 16: 4, 4, 4, 2, 1, 1
  EXPECT_LE(three.threads.size(), 3u);
  EXPECT_EQ(record_calls(5).calls, 5);  // fewer iterations than that: one chunk each
  set_num_threads(1);
  EXPECT_EQ(get_num_threads(), 1);
  Calls one = record_calls(64);
  EXPECT_EQ(one.calls, 1);
  EXPECT_EQ(one.threads, std::set<std::thread::id>{std::this_thread::get_id()});
  set_num_threads(2);
  EXPECT_EQ(record_calls(48).calls, 12);  // shares of 24: 6, 6, 6, 3, 2, 1
  EXPECT_EQ(record_calls(49).calls, 8);   // longer loops: four equal pieces per thread
}

TEST_F(ThreadPoolTest, AThreadLimitSharesTheLoopAmongFewerThreads) {
  set_num_threads(4);
  const int unlimited = record_calls(48).calls;
  {
    ThreadLimit limit(2);
    Calls two = record_calls(48);
    EXPECT_EQ(two.calls, 12);  // chunked as for a pool of 2: shares of 24
    EXPECT_LE(two.threads.size(), 2u);
    for (int64_t n : {1, 7, 1000, 100003}) {
      Counts c(n);
      parallel_for(n, count_chunk, &c);
      expect_each_once(c);
    }
    {
      ThreadLimit serial(1);
      Calls one = record_calls(64);
      EXPECT_EQ(one.calls, 1);
      EXPECT_EQ(one.threads, std::set<std::thread::id>{std::this_thread::get_id()});
    }
    EXPECT_EQ(record_calls(48).calls, 12);  // the outer limit again
    ThreadLimit none(0);                    // 0 keeps the limit in force
    EXPECT_EQ(record_calls(48).calls, 12);
  }
  EXPECT_EQ(get_num_threads(), 4);  // the pool was not resized
  EXPECT_GT(unlimited, 12);
  EXPECT_EQ(record_calls(48).calls, unlimited);
  // Another application thread is not limited by this one's ThreadLimit.
  ThreadLimit mine(1);
  Calls other;
  std::thread([&] { other = record_calls(48); }).join();
  EXPECT_EQ(other.calls, unlimited);
}

TEST_F(ThreadPoolTest, ChunksRunConcurrently) {
  // Each chunk waits until both have started: only a second thread can run the other chunk.
  set_num_threads(2);
  std::atomic<int> started{0};
  std::atomic<int> met{0};
  struct Ctx {
    std::atomic<int>* started;
    std::atomic<int>* met;
  } ctx{&started, &met};
  parallel_for(
      2,
      [](int64_t, int64_t, void* p) {
        auto* c = static_cast<Ctx*>(p);
        c->started->fetch_add(1);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (c->started->load() < 2 && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::yield();
        }
        if (c->started->load() == 2) c->met->fetch_add(1);
      },
      &ctx);
  EXPECT_EQ(met.load(), 2);
}

TEST_F(ThreadPoolTest, AThreadThatFallsBehindHasTheRestOfItsShareTaken) {
  // Eight chunks, the worker's share 4..7. While the worker is held in its first chunk, the
  // caller must run the worker's last one (or the worker never started and the caller runs all).
  set_num_threads(2);
  std::atomic<bool> last_ran{false};
  std::atomic<int> waited_in_vain{0};
  struct Ctx {
    std::atomic<bool>* last_ran;
    std::atomic<int>* waited_in_vain;
    std::thread::id caller;
  } ctx{&last_ran, &waited_in_vain, std::this_thread::get_id()};
  Counts c(8);
  struct Both {
    Ctx* ctx;
    Counts* counts;
  } both{&ctx, &c};
  parallel_for(
      8,
      [](int64_t b, int64_t e, void* p) {
        auto* both = static_cast<Both*>(p);
        Ctx* x = both->ctx;
        if (b == 4 && std::this_thread::get_id() != x->caller) {
          auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (!x->last_ran->load() && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::yield();
          }
          if (!x->last_ran->load()) x->waited_in_vain->fetch_add(1);
        }
        count_chunk(b, e, both->counts);
        if (b == 7) x->last_ran->store(true);
      },
      &both);
  expect_each_once(c);
  EXPECT_EQ(waited_in_vain.load(), 0);
}

TEST_F(ThreadPoolTest, RejectsFewerThanOneThread) {
  for (int n : {0, -3}) {
    try {
      set_num_threads(n);
      FAIL() << "expected a ValueError";
    } catch (const UserError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kValue);
    }
  }
}

TEST_F(ThreadPoolTest, RethrowsAnExceptionAfterAllChunksFinish) {
  set_num_threads(2);
  Counts c(100);
  auto throwing = [](int64_t b, int64_t e, void* p) {
    count_chunk(b, e, p);
    if (b == 0) throw std::runtime_error("chunk failed");
  };
  EXPECT_THROW(parallel_for(100, throwing, &c), std::runtime_error);
  expect_each_once(c);  // the other chunks still ran to completion
  Counts after(10);     // and the pool still works
  parallel_for(10, count_chunk, &after);
  expect_each_once(after);
}

TEST(BackendApi, AllocIsAlignedAndHandlesEdgeSizes) {
  for (int64_t bytes : {0, 1, 63, 64, 65, 1 << 20}) {
    void* p = ptb_alloc(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    ptb_free(p);
  }
  EXPECT_EQ(ptb_alloc(-1), nullptr);
  EXPECT_EQ(ptb_alloc(INT64_MAX), nullptr);
  ptb_free(nullptr);
}

TEST(BackendApi, LargeBlocksAreReusedAcrossCalls) {
  workspace_release();
  // Two "calls" of a kernel with the same intermediate buffers: the second gets the first's
  // blocks back (no new memory to fault in), written data survives a reuse.
  const int64_t big = int64_t{1} << 20;
  auto* a = static_cast<float*>(ptb_alloc(big));
  void* b = ptb_alloc(3 * big);
  ASSERT_NE(a, nullptr);
  a[0] = 1.5f;
  a[big / 4 - 1] = 2.5f;
  ptb_free(b);
  ptb_free(a);
  EXPECT_EQ(workspace_cached_bytes(), 4 * big);
  auto* a2 = static_cast<float*>(ptb_alloc(big));
  void* b2 = ptb_alloc(3 * big);
  EXPECT_EQ(a2, a);
  EXPECT_EQ(b2, b);
  EXPECT_EQ(a2[0], 1.5f);
  EXPECT_EQ(a2[big / 4 - 1], 2.5f);
  EXPECT_EQ(workspace_cached_bytes(), 0);
  // A block much larger than asked for is not handed out (it would waste most of itself).
  ptb_free(b2);
  void* c = ptb_alloc(big);
  EXPECT_NE(c, b2);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 64, 0u);
  ptb_free(c);
  ptb_free(a2);
  // Small blocks are not cached.
  const int64_t before = workspace_cached_bytes();
  ptb_free(ptb_alloc(100));
  EXPECT_EQ(workspace_cached_bytes(), before);
  workspace_release();
  EXPECT_EQ(workspace_cached_bytes(), 0);
}

TEST(BackendApi, HugePageSizedBlocksStartOnAHugePageAndAreReused) {
  workspace_release();
  // A block of 2 MiB or more lies in whole, aligned huge pages (its header first), and a request
  // of the same size gets it back although the pages behind it are larger than asked for.
  const int64_t huge = int64_t{2} << 20;
  const int64_t size = huge + huge / 16;
  auto* a = static_cast<float*>(ptb_alloc(size));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % huge, 64u);
  a[size / 4 - 1] = 3.5f;
  ptb_free(a);
  EXPECT_EQ(workspace_cached_bytes(), size);
  auto* a2 = static_cast<float*>(ptb_alloc(size));
  EXPECT_EQ(a2, a);
  EXPECT_EQ(a2[size / 4 - 1], 3.5f);
  ptb_free(a2);
  workspace_release();
}

TEST(BackendApi, CacheStaysUnderItsLimit) {
  workspace_release();
  const int64_t block = kMaxCachedBytes / 4;
  std::vector<void*> blocks;
  for (int i = 0; i < 6; ++i) blocks.push_back(ptb_alloc(block));
  for (void* p : blocks) ptb_free(p);
  EXPECT_LE(workspace_cached_bytes(), kMaxCachedBytes);
  EXPECT_GE(workspace_cached_bytes(), 3 * block);
  workspace_release();
}

TEST(BackendApi, ForkWhileAnotherThreadUsesTheCacheLeavesTheChildAWorkingCache) {
  // A child forked while another thread holds the cache's lock must not wait on it forever
  // (autotvm's worker processes are forked from a process that may be running a graph).
  workspace_release();
  std::atomic<bool> stop{false};
  std::thread user([&] {
    const int64_t big = int64_t{1} << 20;
    while (!stop.load()) ptb_free(ptb_alloc(big));
  });
  int hung_or_failed = forked_children_failing(200, [] {
    void* p = ptb_alloc(int64_t{1} << 20);
    ptb_free(p);
    return p != nullptr && workspace_cached_bytes() == (int64_t{1} << 20) ? 0 : 1;
  });
  stop = true;
  user.join();
  EXPECT_EQ(hung_or_failed, 0);
  workspace_release();
}

TEST(BackendApi, ParallelForReturnsTheFirstErrorStatus) {
  int64_t hits = 0;
  auto ok = [](int64_t b, int64_t e, void* p) -> int32_t {
    __atomic_add_fetch(static_cast<int64_t*>(p), e - b, __ATOMIC_RELAXED);
    return 0;
  };
  EXPECT_EQ(ptb_parallel_for(1000, ok, &hits), 0);
  EXPECT_EQ(hits, 1000);
  auto fails = [](int64_t b, int64_t, void*) -> int32_t { return b == 0 ? 7 : 0; };
  EXPECT_EQ(ptb_parallel_for(1000, fails, nullptr), 7);
}

TEST(BackendApi, NamedParallelForIsTimedOnlyWhileTheProfileIsOn) {
  int64_t hits = 0;
  auto ok = [](int64_t b, int64_t e, void* p) -> int32_t {
    __atomic_add_fetch(static_cast<int64_t*>(p), e - b, __ATOMIC_RELAXED);
    return 0;
  };
  auto fails = [](int64_t b, int64_t, void*) -> int32_t { return b == 0 ? 5 : 0; };
  static const char kName[] = "test loop 0";
  static const char kOther[] = "test loop 1";
  EXPECT_EQ(ptb_parallel_for_named(100, ok, &hits, kName), 0);  // off: not recorded
  set_loop_profile(true);
  EXPECT_EQ(ptb_parallel_for_named(100, ok, &hits, kName), 0);
  EXPECT_EQ(ptb_parallel_for_named(300, ok, &hits, kName), 0);
  EXPECT_EQ(ptb_parallel_for_named(10, fails, nullptr, kOther), 5);  // the status still comes back
  std::vector<LoopRecord> records = loop_profile_records();
  set_loop_profile(false);
  EXPECT_EQ(ptb_parallel_for_named(100, ok, &hits, kName), 0);  // off again
  EXPECT_EQ(hits, 600);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].name, "test loop 0");
  EXPECT_EQ(records[0].calls, 2);
  EXPECT_EQ(records[0].iterations, 300);  // the last call's
  ASSERT_EQ(records[0].seconds.size(), 2u);
  EXPECT_NEAR(records[0].total_seconds, records[0].seconds[0] + records[0].seconds[1], 1e-12);
  EXPECT_EQ(records[1].name, "test loop 1");
  EXPECT_EQ(records[1].calls, 1);
  EXPECT_EQ(loop_profile_records().size(), 2u);  // kept after turning off, until the next on
  set_loop_profile(true);
  EXPECT_TRUE(loop_profile_records().empty());
  set_loop_profile(false);
}

TEST(BackendApi, ListsEverySymbol) {
  std::set<std::string> names;
  for (const BackendSymbol& s : backend_symbols()) {
    EXPECT_NE(s.address, nullptr);
    names.insert(s.name);
  }
  std::set<std::string> expected = {"ptb_parallel_for", "ptb_parallel_for_named", "ptb_alloc",
                                    "ptb_free", "ptb_call_packed"};
  for (const char* f : {"erfinv", "erfcinv", "erfcx", "normcdfinv", "cyl_bessel_i0",
                        "cyl_bessel_i1", "sinpi", "cospi"}) {
    expected.insert(std::string("ptb_") + f);        // double
    expected.insert(std::string("ptb_") + f + "f");  // float
  }
  EXPECT_EQ(names, expected);
}

}  // namespace
}  // namespace ptb
