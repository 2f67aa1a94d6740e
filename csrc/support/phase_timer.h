// Where a build's time goes. With PYTVMBRIDGE_COMPILE_TIMES=1 in the environment, every build
// prints one line to stderr with the thread CPU time of each phase (lowering, LLVM IR emission,
// the optimisation pipeline, machine code generation, JIT linking), so that a slow compile can
// be taken apart without a profiler. Off, a phase costs one branch.
#pragma once

#include <ctime>
#include <string>
#include <utility>
#include <vector>

namespace ptb {

// Whether PYTVMBRIDGE_COMPILE_TIMES asks for the report (read once per process).
bool phase_times_enabled();

// Collects the phases of one build; prints them when destroyed (when enabled).
class PhaseTimer {
 public:
  explicit PhaseTimer(std::string what);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

  // Ends the phase running since the last mark (or construction) and names it.
  void mark(const char* phase);

 private:
  bool enabled_;
  std::string what_;
  double last_ = 0;
  std::vector<std::pair<const char*, double>> phases_;
};

}  // namespace ptb
