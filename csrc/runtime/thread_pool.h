// The project's persistent thread pool, used by parallel loops of generated code.
//
// One pool per process, created on first use with PYTVMBRIDGE_NUM_THREADS threads (or one per
// CPU this process may run on). A parallel_for splits [0, n) into a few contiguous chunks per
// thread (equal sizes: the loops it runs are regular); each thread runs its own share in order,
// then takes what is left of the others'. Idle workers spin briefly, then sleep. After fork() the
// child starts a fresh pool; at exit the pool is left to the OS rather than joined.
#pragma once

#include <cstdint>

namespace ptb {

// The number of threads a parallel loop uses, the calling thread included (>= 1).
int get_num_threads();

// Sets that number; a ValueError for n < 1 or when called from inside a parallel loop. Waits for
// a parallel loop running on another thread to finish before it resizes the pool.
// The most threads a pool may have (set_num_threads, PYTVMBRIDGE_NUM_THREADS).
constexpr int kMaxThreads = 4096;
void set_num_threads(int n);

using ParallelBody = void (*)(int64_t begin, int64_t end, void* closure);

// Calls fn(begin, end, closure) over contiguous chunks that cover [0, n) exactly once, and
// returns when all chunks are done. Runs serially (one call fn(0, n)) when called from inside
// another parallel_for. Concurrent callers on different threads are served one after the other.
// An exception thrown by fn is rethrown here once every chunk has finished.
void parallel_for(int64_t n, ParallelBody fn, void* closure);

// Within its scope, parallel loops started on this thread use at most n threads of the pool (a
// model compiled with its own thread count); n = 0 leaves the limit as it was.
class ThreadLimit {
 public:
  explicit ThreadLimit(int n);
  ~ThreadLimit();
  ThreadLimit(const ThreadLimit&) = delete;
  ThreadLimit& operator=(const ThreadLimit&) = delete;

 private:
  int previous_;
};

}  // namespace ptb
