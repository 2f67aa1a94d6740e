#include "runtime/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "support/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PTB_CPU_RELAX() _mm_pause()
#else
#define PTB_CPU_RELAX() std::this_thread::yield()
#endif

namespace ptb {

namespace {

// True on pool workers, and on a thread while it runs its own chunk of a parallel_for: a nested
// parallel_for then runs serially instead of waiting for workers that are all busy.
thread_local bool t_in_parallel = false;
// The most threads this thread's parallel loops may use (ThreadLimit); 0: the pool's size.
thread_local int t_thread_limit = 0;

// How long an idle thread spins before it sleeps. Kernels are often called back to back (a
// benchmark loop, a model's layers); a worker that is still spinning starts the next loop in
// tens of nanoseconds instead of the microseconds a futex wake-up costs. 100 us was too short
// for a compiled model called from Python: the MLP at batch 8 (0.2 ms a call, Dynamo's guards
// and the Python between calls near 100 us) slept on most calls in some processes, 0.30 ms a
// call against 0.22 (0.8 futex sleeps a call); 1 ms (libgomp, PyTorch's OpenMP, spins longer)
// ends that: 0.21-0.23 ms in every process, no sleeps.
constexpr auto kSpinTime = std::chrono::microseconds(1000);

int cpus_available() {
#ifdef __linux__
  // The affinity mask, not the machine: containers and taskset restrict it.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
#endif
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

int default_num_threads() {
  if (const char* env = std::getenv("PYTVMBRIDGE_NUM_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n >= 1 && n <= kMaxThreads) return static_cast<int>(n);
    std::fprintf(stderr,
                 "pytvmbridge: ignoring PYTVMBRIDGE_NUM_THREADS='%s' (expected an integer from 1 "
                 "to %d); using %d threads\n",
                 env, kMaxThreads, cpus_available());
  }
  return cpus_available();
}

// The CPU the calling thread runs on, or -1 where that is not known.
int current_cpu() {
#ifdef __linux__
  return sched_getcpu();
#else
  return -1;
#endif
}

// Moves the calling thread off `cpu` to another CPU it may run on, and leaves its affinity mask
// as it was (the scheduler does not move a running thread back by itself). Returns whether it
// moved. Two system calls: for the rare moment a worker finds itself on its caller's CPU.
bool move_off_cpu(int cpu) {
#ifdef __linux__
  cpu_set_t allowed;
  if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof(allowed), &allowed) != 0 ||
      !CPU_ISSET(cpu, &allowed) || CPU_COUNT(&allowed) < 2) {
    return false;
  }
  cpu_set_t others = allowed;
  CPU_CLR(cpu, &others);
  if (sched_setaffinity(0, sizeof(others), &others) != 0) return false;
  sched_setaffinity(0, sizeof(allowed), &allowed);
  return true;
#else
  (void)cpu;
  return false;
#endif
}

// Spins for up to kSpinTime until done() holds; returns whether it does. Gives up early (and
// returns done()) when crowded() holds, checked every 64 spins: a thread spinning on the CPU
// of the thread it waits for only takes that thread's time slices away.
template <typename Pred, typename Crowded>
bool spin_until(Pred done, Crowded crowded) {
  auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      PTB_CPU_RELAX();
    }
    if (crowded() || std::chrono::steady_clock::now() > deadline) return done();
  }
}

// The job state in one atomic word: [generation:40][unused:24]. A new generation tells the
// workers that a job is waiting; the job's chunks are claimed through ranges_ (below).
constexpr int kGenerationShift = 24;
// Chunks per thread: a thread's share of a loop is split in pieces, so that a thread that
// falls behind (preempted mid-chunk, woken late, or reading its data from the other core's
// cache) holds up at most one piece while the others take the rest of its share.
constexpr int kChunksPerThread = 4;

// Loops of at most this many iterations get tapering pieces: a quarter of the share at most,
// then half of what is left, down to single iterations at the share's back, where the other
// threads take from. Such loops are the ones the automatic schedules make coarse (panels of a
// matrix product, planes of a convolution: each iteration tens of microseconds or more). With
// four equal pieces, a worker woken late at the first loop of a compiled model's call (the
// BERT layer at batch 8: its QKV product, 36 panels of 0.6 ms) lost a whole piece of 4-5
// panels to the caller, then found nothing left to take and idled 2.3 ms of the loop's 11.8;
// tapered, the two threads end within a panel of each other (11.0 ms). Longer loops keep four
// equal pieces: their iterations are mostly cheap rows or channels, where the extra claims
// showed in microsecond kernels (a batch-1 max pool's 64 channels, 57 us: +4% tapered).
constexpr int64_t kTaperAtMost = 48;

// Appends to starts the first iteration of each piece of the share [begin, end).
void split_share(int64_t begin, int64_t end, bool taper, std::vector<int64_t>& starts) {
  int64_t size = end - begin;
  if (!taper) {
    int64_t pieces = std::min<int64_t>(size, kChunksPerThread);
    // size * j / pieces without the product, which could overflow.
    for (int64_t j = 0; j < pieces; ++j) {
      starts.push_back(begin + size / pieces * j + size % pieces * j / pieces);
    }
    return;
  }
  int64_t most = (size + kChunksPerThread - 1) / kChunksPerThread;
  for (int64_t at = begin; at < end;) {
    starts.push_back(at);
    int64_t left = end - at;
    at += std::max<int64_t>(1, std::min(most, (left + 1) / 2));
  }
}

uint64_t pack(uint64_t generation) { return generation << kGenerationShift; }
uint64_t generation_of(uint64_t s) { return s >> kGenerationShift; }

// A thread's unclaimed chunks [begin, end) in one word: [begin:32][end:32].
uint64_t pack_range(uint64_t begin, uint64_t end) { return begin << 32 | end; }

// Each thread owns a contiguous share of the chunks (the caller the first, worker i the i-th),
// as OpenMP's static schedule assigns them, and runs it front to back: a kernel called again (a
// benchmark loop, the next layer over the same tensor) then finds its part of the data in the
// cache of the core that touched it last. A thread that has finished its share takes chunks
// from the back of the others' shares, so the caller never waits for a worker to wake up (on a
// busy machine it may run every chunk itself), only for the chunks a worker has started.
class ThreadPool {
 public:
  explicit ThreadPool(int num_threads) : num_threads_(num_threads) {}
  // Never destroyed (see pool_slot()), so no destructor joins anything.

  int num_threads() const { return num_threads_.load(std::memory_order_relaxed); }

  void resize(int n) {
    std::lock_guard<std::mutex> submit(submit_mu_);
    if (n == num_threads()) return;
    stop_workers();
    num_threads_.store(n, std::memory_order_relaxed);
    // Workers start lazily, on the next parallel_for.
  }

  void run(int64_t n, ParallelBody fn, void* closure) {
    if (n <= 0) return;
    if (t_in_parallel || n == 1 || num_threads() == 1 || t_thread_limit == 1) {
      fn(0, n, closure);
      return;
    }
    std::lock_guard<std::mutex> submit(submit_mu_);
    int threads = num_threads();
    if (threads == 1) {  // resized while we waited for the lock
      fn(0, n, closure);
      return;
    }
    if (static_cast<int>(workers_.size()) != threads - 1) {
      threads = start_workers(threads - 1) + 1;
      if (threads == 1) {  // the system gave no thread at all
        fn(0, n, closure);
        return;
      }
    }

    // A caller limited to fewer threads (a model compiled with its own num_threads) shares the
    // loop among the first `threads`; the other workers wake, find no share and take nothing.
    const int pool_threads = threads;
    if (t_thread_limit > 0 && t_thread_limit < threads) threads = t_thread_limit;
    job_threads_.store(threads, std::memory_order_relaxed);
    // Publish the job, then the shares that name its chunks, then the generation that wakes
    // the workers: a thread that claims a chunk (acquire) sees the job (release). The job stays
    // unchanged until every chunk is done, so a claimed chunk always reads its own job.
    job_fn_ = fn;
    job_closure_ = closure;
    job_error_ = nullptr;
    // Thread t's share is the iterations [n * t / threads, n * (t + 1) / threads), in pieces.
    job_starts_.clear();
    // Thread t owns the chunks [first_chunk[t], first_chunk[t + 1]).
    std::vector<uint64_t>& first_chunk = job_first_chunk_;
    first_chunk.assign(threads + 1, 0);
    for (int t = 0; t < threads; ++t) {
      first_chunk[t] = job_starts_.size();
      split_share(share_bound(n, t, threads), share_bound(n, t + 1, threads), n <= kTaperAtMost,
                  job_starts_);
    }
    first_chunk[threads] = job_starts_.size();
    job_starts_.push_back(n);
    int chunks = static_cast<int>(first_chunk[threads]);
    job_chunks_ = chunks;
    done_.store(0, std::memory_order_relaxed);
    for (int t = 0; t < threads; ++t) {
      shares_[t].range.store(pack_range(first_chunk[t], first_chunk[t + 1]),
                             std::memory_order_release);
    }
    for (int t = threads; t < pool_threads; ++t) {
      shares_[t].range.store(pack_range(0, 0), std::memory_order_release);
    }
    int cpu = current_cpu();
    shares_[0].cpu.store(cpu, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(mu_);
      state_.store(pack(++generation_), std::memory_order_release);
    }
    wake_cv_.notify_all();

    t_in_parallel = true;
    run_chunks(0);
    t_in_parallel = false;

    // Wait for chunks that workers are still running, even after an exception: the closure
    // lives in our caller's frame. A worker on this thread's CPU can only finish its chunk when
    // this thread stops spinning, so then it sleeps at once.
    auto all_done = [&] { return done_.load(std::memory_order_acquire) == chunks; };
    auto worker_here = [&] {
      for (size_t t = 1; t < shares_.size(); ++t) {
        if (cpu >= 0 && shares_[t].cpu.load(std::memory_order_relaxed) == cpu) return true;
      }
      return false;
    };
    if (!spin_until(all_done, worker_here)) {
      std::unique_lock<std::mutex> lock(mu_);
      done_cv_.wait(lock, all_done);
    }
    if (job_error_) std::rethrow_exception(job_error_);
  }

 private:
  // One thread's share, on its own cache line: its owner claims from it without sharing the
  // line with the other owners.
  struct alignas(64) Share {
    std::atomic<uint64_t> range{0};
    // The CPU its owner ran on when it last took work (-1: not known). The scheduler sometimes
    // puts a worker on the caller's CPU while the other one idles, and wakes it there again
    // job after job; the two then share one CPU until the load balancer moves one of them,
    // which on this project's 2-core VM took up to seconds (a batch-1 group norm at 2 threads
    // ran 30-50 us a call instead of 15-16 for whole timing runs). So a worker that finds
    // itself on the caller's CPU moves off it, and the caller does not spin while it waits
    // for a worker on its own CPU.
    std::atomic<int> cpu{-1};
  };

  // Claims the first chunk of the share (its owner); -1 when none is left. begin may pass end
  // by one here, which leaves the share empty.
  static int take_front(Share& s) {
    uint64_t v = s.range.fetch_add(uint64_t{1} << 32, std::memory_order_acq_rel);
    uint64_t begin = v >> 32, end = v & 0xffffffffu;
    return begin < end ? static_cast<int>(begin) : -1;
  }

  // Claims the last chunk of the share (another thread); -1 when none is left.
  static int take_back(Share& s) {
    uint64_t v = s.range.load(std::memory_order_relaxed);
    for (;;) {
      uint64_t begin = v >> 32, end = v & 0xffffffffu;
      if (begin >= end) return -1;
      if (s.range.compare_exchange_weak(v, pack_range(begin, end - 1), std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) {
        return static_cast<int>(end - 1);
      }
    }
  }

  // Runs the thread's own chunks, then any other thread's, until none is left, and then counts
  // them done. Every claimed chunk belongs to the job published before the share was last
  // reset (claiming acquires that job), even if this thread was slow and saw an older
  // generation: the next job is published only after this thread has counted its chunks.
  void run_chunks(int own) {
    const int others = job_threads_.load(std::memory_order_relaxed);
    if (own >= others) return;  // not among the threads this job may use
    if (own > 0) {
      int cpu = current_cpu();
      int callers = shares_[0].cpu.load(std::memory_order_relaxed);
      if (cpu >= 0 && cpu == callers && move_off_cpu(cpu)) cpu = current_cpu();
      shares_[own].cpu.store(cpu, std::memory_order_relaxed);
    }
    int ran = 0;
    for (;;) {
      int chunk = own < others ? take_front(shares_[own]) : -1;
      for (int k = 1; chunk < 0 && k < others; ++k) {
        chunk = take_back(shares_[(own + k) % others]);
      }
      if (chunk < 0) break;
      run_chunk(chunk);
      ++ran;
    }
    if (ran == 0) return;
    // Read before the count is added: once every chunk is counted, the caller may return and
    // publish the next job over it.
    const int chunks = job_chunks_;
    if (done_.fetch_add(ran, std::memory_order_acq_rel) + ran == chunks) {
      // Taking the lock orders this notify after a waiting caller's check of done_ under it.
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
  }

  // n * t / threads without the product, which could overflow.
  static int64_t share_bound(int64_t n, int t, int threads) {
    return n / threads * t + n % threads * t / threads;
  }

  void run_chunk(int chunk) {
    int64_t begin = job_starts_[chunk], end = job_starts_[chunk + 1];
    try {
      job_fn_(begin, end, job_closure_);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu_);
      if (!job_error_) job_error_ = std::current_exception();
    }
  }

  void worker_loop(uint64_t seen, int own) {
    t_in_parallel = true;
    for (;;) {
      auto has_work = [&] {
        return stop_.load(std::memory_order_acquire) ||
               generation_of(state_.load(std::memory_order_acquire)) != seen;
      };
      // Spinning on the caller's CPU (as of its last job) would take the caller's time: move
      // off it, or sleep where there is nowhere to go.
      auto on_callers_cpu = [&] {
        int cpu = shares_[0].cpu.load(std::memory_order_relaxed);
        return cpu >= 0 && cpu == current_cpu() && !move_off_cpu(cpu);
      };
      if (!spin_until(has_work, on_callers_cpu)) {
        std::unique_lock<std::mutex> lock(mu_);
        wake_cv_.wait(lock, has_work);
      }
      if (stop_.load(std::memory_order_acquire)) return;
      seen = generation_of(state_.load(std::memory_order_acquire));
      run_chunks(own);
    }
  }

  // Called with submit_mu_ held, so no job is running. Returns how many workers run: fewer
  // than `count` when the system refuses a thread (a limit on processes or memory), and the
  // pool then keeps that many, as if set_num_threads had asked for them.
  int start_workers(int count) {
    stop_workers();
    for (;;) {
      shares_ = std::vector<Share>(count + 1);  // before any worker reads it
      workers_.reserve(count);
      try {
        for (int i = 0; i < count; ++i) {
          workers_.emplace_back([this, g = generation_, own = i + 1] { worker_loop(g, own); });
        }
        return count;
      } catch (const std::system_error&) {
        // Start again with as many as the system gave (the shares are sized per worker).
        count = static_cast<int>(workers_.size());
        stop_workers();
        num_threads_.store(count + 1, std::memory_order_relaxed);
        std::fprintf(stderr, "pytvmbridge: the system refused a thread; using %d threads\n",
                     count + 1);
      }
    }
  }

  void stop_workers() {
    if (workers_.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_.store(true, std::memory_order_release);
    }
    wake_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    stop_.store(false, std::memory_order_release);
  }

  std::mutex submit_mu_;  // one parallel_for (or resize) at a time
  std::atomic<int> num_threads_;
  std::vector<std::thread> workers_;
  uint64_t generation_ = 0;  // the last job's; written under submit_mu_

  // The current job: written by the submitter before the shares name its chunks.
  int job_chunks_ = 0;
  std::atomic<int> job_threads_{
      1};  // the threads the job is shared among (ThreadLimit), caller included
  // job_starts_[c]: the first iteration of chunk c (and n at the end); job_first_chunk_[t]:
  // thread t's first chunk. Kept between jobs, so their memory is allocated once.
  std::vector<int64_t> job_starts_;
  std::vector<uint64_t> job_first_chunk_;
  ParallelBody job_fn_ = nullptr;
  void* job_closure_ = nullptr;
  std::exception_ptr job_error_;
  std::mutex error_mu_;

  std::atomic<uint64_t> state_{0};
  // shares_[t]: thread t's unclaimed chunks of the current job (one per thread, the caller's
  // first; resized only while no worker runs).
  std::vector<Share> shares_;
  std::atomic<int> done_{0};
  std::mutex mu_;  // guards sleeping: wake_cv_ and done_cv_
  std::condition_variable wake_cv_, done_cv_;
  std::atomic<bool> stop_{false};
};

ThreadPool*& pool_slot();

void reset_pool_in_child() {
  // After fork() only the forking thread exists: the workers (and any lock they held) are gone.
  // Leak the old pool and start over with the same size.
  ThreadPool*& slot = pool_slot();
  slot = new ThreadPool(slot->num_threads());
  t_in_parallel = false;
}

ThreadPool*& pool_slot() {
  // Deliberately leaked: destroying it at exit would join workers during static destruction,
  // which can hang when the interpreter exits while a worker is still parked; process exit
  // ends the threads instead.
  static ThreadPool* pool = [] {
    pthread_atfork(nullptr, nullptr, reset_pool_in_child);
    return new ThreadPool(default_num_threads());
  }();
  return pool;
}

}  // namespace

int get_num_threads() { return pool_slot()->num_threads(); }

void set_num_threads(int n) {
  if (n < 1) value_error("set_num_threads(", n, "): the number of threads must be at least 1");
  // As for PYTVMBRIDGE_NUM_THREADS: past this, thread creation and wake-ups cost more than any
  // loop gains (4097 threads made a 4000-element add take 2.5 s), or the system refuses them.
  if (n > kMaxThreads) {
    value_error("set_num_threads(", n, "): at most ", kMaxThreads, " threads (this machine has ",
                cpus_available(), " CPUs)");
  }
  if (t_in_parallel) value_error("set_num_threads() cannot be called inside a parallel loop");
  pool_slot()->resize(n);
}

void parallel_for(int64_t n, ParallelBody fn, void* closure) { pool_slot()->run(n, fn, closure); }

ThreadLimit::ThreadLimit(int n) : previous_(t_thread_limit) {
  if (n > 0) t_thread_limit = n;
}
ThreadLimit::~ThreadLimit() { t_thread_limit = previous_; }

}  // namespace ptb
