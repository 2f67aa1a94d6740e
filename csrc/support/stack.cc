#include "support/stack.h"

#include <pthread.h>

#include <algorithm>

namespace ptb {

StackExhausted::StackExhausted()
    : UserError(ErrorKind::kRecursion,
                "expression too deeply nested: it would overflow the stack (split it into "
                "several compute stages, or build it as a balanced tree)") {}

namespace detail {

namespace {

thread_local bool tl_deep = false;

uintptr_t compute_stack_limit() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
  void* addr = nullptr;
  size_t size = 0;
  int rc = pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  if (rc != 0 || addr == nullptr) return 0;
  // pthread reports the lowest address; the stack grows down from low + size. The main
  // thread's stack may grow up to its rlimit, which glibc reports as its size; an unlimited
  // rlimit is taken as 8 MiB, the usual default.
  uintptr_t high = reinterpret_cast<uintptr_t>(addr) + size;
  if (size > kDeepStackBytes) size = size_t{8} << 20;
  // A quarter is kept back for the helpers that recurse below a guarded pass (structural
  // equality, interval bounds), for signal handlers, and for the frames between two checks.
  size_t reserve = std::max<size_t>(size / 4, 256 * 1024);
  if (size <= reserve) return 0;  // a tiny stack made by someone else: never refuse outright
  uintptr_t low = high - size;
  return low + reserve;
}

}  // namespace

uintptr_t stack_limit() {
  thread_local uintptr_t limit = compute_stack_limit();
  return limit;
}

void throw_stack_exhausted() { throw StackExhausted(); }

bool on_deep_stack() { return tl_deep; }

void run_on_deep_stack(const std::function<void()>& f) {
  struct Job {
    const std::function<void()>* f;
    std::exception_ptr error;
  } job{&f, nullptr};
  pthread_attr_t attr;
  PTB_ICHECK(pthread_attr_init(&attr) == 0, "pthread_attr_init");
  PTB_ICHECK(pthread_attr_setstacksize(&attr, kDeepStackBytes) == 0, "pthread_attr_setstacksize");
  pthread_t thread;
  int rc = pthread_create(
      &thread, &attr,
      [](void* arg) -> void* {
        auto* j = static_cast<Job*>(arg);
        tl_deep = true;
        try {
          (*j->f)();
        } catch (...) {
          j->error = std::current_exception();
        }
        return nullptr;
      },
      &job);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    // No thread (address space or thread limits): run here, guarded by check_stack().
    f();
    return;
  }
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace detail

}  // namespace ptb
