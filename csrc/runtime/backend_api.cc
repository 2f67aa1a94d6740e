#include "runtime/backend_api.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>

#include "runtime/loop_profile.h"
#include "runtime/special_math.h"
#include "runtime/thread_pool.h"
#include "runtime/workspace.h"

namespace {

// A parallel body that reports errors by status, adapted to the thread pool's void chunks: the
// first nonzero status wins, later chunks still run (they cannot be cancelled midway anyway).
struct StatusClosure {
  ptb_parallel_body_t body;
  void* closure;
  std::atomic<int32_t> status{0};
};

void run_status_chunk(int64_t begin, int64_t end, void* p) {
  auto* c = static_cast<StatusClosure*>(p);
  int32_t status = c->body(begin, end, c->closure);
  if (status != 0) {
    int32_t expected = 0;
    c->status.compare_exchange_strong(expected, status, std::memory_order_relaxed);
  }
}

}  // namespace

extern "C" {

int32_t ptb_parallel_for(int64_t n, ptb_parallel_body_t body, void* closure) {
  StatusClosure c{body, closure};
  ptb::parallel_for(n, run_status_chunk, &c);
  return c.status.load(std::memory_order_relaxed);
}

int32_t ptb_parallel_for_named(int64_t n, ptb_parallel_body_t body, void* closure,
                               const char* name) {
  if (!ptb::loop_profile_enabled()) return ptb_parallel_for(n, body, closure);
  auto start = std::chrono::steady_clock::now();
  int32_t status = ptb_parallel_for(n, body, closure);
  ptb::record_loop(name, n,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return status;
}

// Intermediate buffers come from the workspace cache (runtime/workspace.h): reused across
// calls instead of faulted in again each time.
void* ptb_alloc(int64_t bytes) { return ptb::workspace_alloc(bytes); }

void ptb_free(void* ptr) { ptb::workspace_free(ptr); }
}

namespace ptb {

const std::vector<BackendSymbol>& backend_symbols() {
  static const std::vector<BackendSymbol> symbols = {
      {"ptb_parallel_for", reinterpret_cast<void*>(&ptb_parallel_for)},
      {"ptb_parallel_for_named", reinterpret_cast<void*>(&ptb_parallel_for_named)},
      {"ptb_alloc", reinterpret_cast<void*>(&ptb_alloc)},
      {"ptb_free", reinterpret_cast<void*>(&ptb_free)},
      {"ptb_call_packed", reinterpret_cast<void*>(&ptb_call_packed)},
      {"ptb_erfinv", reinterpret_cast<void*>(&ptb_erfinv)},
      {"ptb_erfinvf", reinterpret_cast<void*>(&ptb_erfinvf)},
      {"ptb_erfcinv", reinterpret_cast<void*>(&ptb_erfcinv)},
      {"ptb_erfcinvf", reinterpret_cast<void*>(&ptb_erfcinvf)},
      {"ptb_erfcx", reinterpret_cast<void*>(&ptb_erfcx)},
      {"ptb_erfcxf", reinterpret_cast<void*>(&ptb_erfcxf)},
      {"ptb_normcdfinv", reinterpret_cast<void*>(&ptb_normcdfinv)},
      {"ptb_normcdfinvf", reinterpret_cast<void*>(&ptb_normcdfinvf)},
      {"ptb_cyl_bessel_i0", reinterpret_cast<void*>(&ptb_cyl_bessel_i0)},
      {"ptb_cyl_bessel_i0f", reinterpret_cast<void*>(&ptb_cyl_bessel_i0f)},
      {"ptb_cyl_bessel_i1", reinterpret_cast<void*>(&ptb_cyl_bessel_i1)},
      {"ptb_cyl_bessel_i1f", reinterpret_cast<void*>(&ptb_cyl_bessel_i1f)},
      {"ptb_sinpi", reinterpret_cast<void*>(&ptb_sinpi)},
      {"ptb_sinpif", reinterpret_cast<void*>(&ptb_sinpif)},
      {"ptb_cospi", reinterpret_cast<void*>(&ptb_cospi)},
      {"ptb_cospif", reinterpret_cast<void*>(&ptb_cospif)},
  };
  return symbols;
}

}  // namespace ptb
