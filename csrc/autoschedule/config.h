// The search space of the automatic scheduler, made explicit: each rule asks for its decisions
// (tile sizes, loop orders, unroll and vectorize choices, what runs in parallel) as named integer
// knobs of a stage, with the candidate values it accepts and the analytical default. A point of
// the space (a Config) can be logged and replayed; a tuner searches over the candidates.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ptb::autoschedule {

// One stage's decisions: the rule that scheduled it and the value of each knob it asked for.
struct StageChoice {
  std::string rule;
  std::map<std::string, int64_t> knobs;
};

// Stage key -> decisions. Keys are the stages' operation names (made unique with "#2", "#3"...
// in producer-first order); stages a rule creates are named after their origin ("C.packed").
using Config = std::map<std::string, StageChoice>;

// Stage key -> knob -> its candidate values (the default is one of them).
using Space = std::map<std::string, std::map<std::string, std::vector<int64_t>>>;

// Records the knobs asked for while rules run, and answers them from a given point (a knob the
// point leaves out takes its default).
class Decisions {
 public:
  explicit Decisions(const Config* given) : given_(given) {}

  void set_rule(const std::string& stage, const std::string& rule);
  // The value to use for `knob` of `stage`: the given point's, else `fallback`. A given value
  // outside `candidates` is a ValueError naming the stage, the knob and the candidates.
  int64_t knob(const std::string& stage, const std::string& knob, int64_t fallback,
               std::vector<int64_t> candidates);
  // ValueError when the given point names a stage or knob that no rule asked for.
  void check_all_used() const;

  const Config& chosen() const { return chosen_; }
  const Space& space() const { return space_; }

 private:
  const Config* given_;
  Config chosen_;
  Space space_;
};

}  // namespace ptb::autoschedule
