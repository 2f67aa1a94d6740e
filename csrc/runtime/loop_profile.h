// Time spent in each parallel loop of compiled kernels, for finding where a kernel (a compiled
// graph is one) spends its time: pytvmbridge.profile_loops() in Python, or
// PYTVMBRIDGE_LOOP_PROFILE=1 for a table on stderr at exit.
//
// Generated code names each parallel loop ("fused_0 loop 3": the kernel and the loop's place
// among its parallel loops, in the order lower() prints them) and hands the name to
// ptb_parallel_for_named, which times the loop here while profiling is on; Module::run times
// each whole call ("fused_0 call"). Off, that costs one relaxed atomic load per loop and call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ptb {

struct LoopRecord {
  std::string name;             // "<kernel> loop <k>" or "<kernel> call"
  int64_t iterations = 0;       // of the last call
  std::vector<double> seconds;  // each call's wall time, in call order (at most kMaxSamples)
  int64_t calls = 0;
  double total_seconds = 0;
};

// Whether parallel loops are being timed.
bool loop_profile_enabled();
// Turns timing on or off; on also starts a new profile (the records so far are dropped).
void set_loop_profile(bool on);
// The loops timed since profiling was last turned on, in the order each first ran.
std::vector<LoopRecord> loop_profile_records();
// Records one run of the loop (or kernel call) named `name`, a string that lives as long as
// its kernel.
void record_loop(const char* name, int64_t iterations, double seconds);

}  // namespace ptb
