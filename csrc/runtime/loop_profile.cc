#include "runtime/loop_profile.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "support/fork_safe.h"

namespace ptb {

namespace {

// Samples kept per loop: the total and the call count go on past it.
constexpr size_t kMaxSamples = 1 << 16;

struct Profile {
  std::atomic<bool> on{false};
  std::mutex mu;
  // Keyed by the name's address, the string copied at first sight: a kernel's names are
  // constants of its code, and two kernels of the same name (every compiled graph's is
  // "fused_0") keep separate records. A different text at a known address (a kernel freed and
  // another compiled at its place) starts a new record.
  std::unordered_map<const char*, size_t> index;
  std::vector<LoopRecord> records;
};

// A forked child (a tuner's worker is forked while kernels may run) starts with no records and
// the profile off (support/fork_safe.h).
Profile& profile() { return ForkSafe<Profile>::get(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// PYTVMBRIDGE_LOOP_PROFILE=1: on from the start, the table printed at exit.
struct FromEnvironment {
  FromEnvironment() {
    const char* env = std::getenv("PYTVMBRIDGE_LOOP_PROFILE");
    if (env == nullptr) return;
    // Off as the other switches are (PYTVMBRIDGE_CACHE, PYTVMBRIDGE_PROGRESS): empty, 0, false,
    // no, off, in any case.
    std::string value(env);
    std::transform(value.begin(), value.end(), value.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (value.empty() || value == "0" || value == "false" || value == "no" || value == "off") {
      return;
    }
    set_loop_profile(true);
  }
  ~FromEnvironment() {
    if (!loop_profile_enabled()) return;
    std::vector<LoopRecord> records = loop_profile_records();
    std::fprintf(
        stderr, "pytvmbridge loop profile (wall time of each kernel call and parallel loop, ms)\n");
    std::fprintf(stderr, "%-40s %10s %8s %10s %10s %10s\n", "loop", "iterations", "calls", "median",
                 "min", "total");
    for (const LoopRecord& r : records) {
      double lo = r.seconds.empty() ? 0 : *std::min_element(r.seconds.begin(), r.seconds.end());
      std::fprintf(stderr, "%-40s %10lld %8lld %10.4f %10.4f %10.3f\n", r.name.c_str(),
                   static_cast<long long>(r.iterations), static_cast<long long>(r.calls),
                   median(r.seconds) * 1e3, lo * 1e3, r.total_seconds * 1e3);
    }
  }
};
FromEnvironment from_environment;

}  // namespace

bool loop_profile_enabled() { return profile().on.load(std::memory_order_relaxed); }

void set_loop_profile(bool on) {
  Profile& p = profile();
  std::lock_guard<std::mutex> lock(p.mu);
  if (on) {
    p.index.clear();
    p.records.clear();
  }
  p.on.store(on, std::memory_order_relaxed);
}

std::vector<LoopRecord> loop_profile_records() {
  Profile& p = profile();
  std::lock_guard<std::mutex> lock(p.mu);
  return p.records;
}

void record_loop(const char* name, int64_t iterations, double seconds) {
  Profile& p = profile();
  std::lock_guard<std::mutex> lock(p.mu);
  if (!p.on.load(std::memory_order_relaxed)) return;  // turned off while the loop ran
  auto [it, fresh] = p.index.emplace(name, p.records.size());
  // A freed kernel's name string may be followed at its address by another kernel's: a record
  // of its own once the text differs (one strcmp, only while profiling).
  if (!fresh && p.records[it->second].name != name) {
    it->second = p.records.size();
    fresh = true;
  }
  if (fresh) {
    p.records.emplace_back();
    p.records.back().name = name;
  }
  LoopRecord& r = p.records[it->second];
  r.iterations = iterations;
  r.calls += 1;
  r.total_seconds += seconds;
  if (r.seconds.size() < kMaxSamples) r.seconds.push_back(seconds);
}

}  // namespace ptb
