#include "support/phase_timer.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ptb {

namespace {

// Thread CPU time: the build runs on one thread, and wall time on a shared machine measures
// the machine.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

}  // namespace

bool phase_times_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("PYTVMBRIDGE_COMPILE_TIMES");
    return env != nullptr && *env != '\0' && std::strcmp(env, "0") != 0;
  }();
  return enabled;
}

PhaseTimer::PhaseTimer(std::string what) : enabled_(phase_times_enabled()), what_(std::move(what)) {
  if (enabled_) last_ = thread_cpu_ms();
}

void PhaseTimer::mark(const char* phase) {
  if (!enabled_) return;
  double now = thread_cpu_ms();
  phases_.emplace_back(phase, now - last_);
  last_ = now;
}

PhaseTimer::~PhaseTimer() {
  if (!enabled_ || phases_.empty()) return;
  std::string line = "pytvmbridge compile " + what_ + " (thread CPU ms):";
  double total = 0;
  char buf[64];
  for (const auto& [name, ms] : phases_) {
    std::snprintf(buf, sizeof(buf), " %s %.2f", name, ms);
    line += buf;
    total += ms;
  }
  std::snprintf(buf, sizeof(buf), " total %.2f\n", total);
  line += buf;
  std::fputs(line.c_str(), stderr);
}

}  // namespace ptb
