// What every rule of the automatic scheduler works with: the schedule being rewritten, the
// target's vector unit, the decisions (knobs) made so far, and which stages are settled.
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "autoschedule/config.h"
#include "codegen/target_info.h"
#include "schedule/schedule.h"

namespace ptb::autoschedule {

// Below this many scalar operations a loop nest runs on one thread: waking the pool costs more.
constexpr int64_t kMinParallelWork = 1 << 16;

struct Context {
  Schedule sch;
  VectorUnit unit;
  Decisions* decisions = nullptr;
  std::unordered_map<const StageNode*, std::string> keys;
  std::unordered_set<const StageNode*> settled;  // scheduled by a rule (or left on purpose)

  const std::string& key(const Stage& st) const { return keys.at(st.get()); }
  // Names a stage created by a rule after the stage it came from.
  void name_new(const Stage& created, const Stage& from, const std::string& suffix);
  int64_t knob(const Stage& st, const std::string& name, int64_t fallback,
               std::vector<int64_t> candidates) {
    return decisions->knob(key(st), name, fallback, std::move(candidates));
  }
  void rule(const Stage& st, const std::string& name) {
    decisions->set_rule(key(st), name);
    settled.insert(st.get());
  }
  // Vector lanes for elements of `t` (at least 1).
  int lanes(DataType t) const;
};

}  // namespace ptb::autoschedule
