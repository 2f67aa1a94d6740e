// What every rule of the automatic scheduler works with: the schedule being rewritten, the
// target's vector unit, the decisions (knobs) made so far, and which stages are settled.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "autoschedule/config.h"
#include "codegen/target_info.h"
#include "schedule/schedule.h"
#include "schedule/stage_bodies.h"

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
  // inline_bodies(sch), computed again only when the schedule's stages, their operations or
  // their inlining changed since the last call. Several rules ask for every root stage, and
  // the bodies can be large (Winograd's transforms): ResNet-50's schedule took 10 s with a
  // fresh computation each time, most of it rebuilding the same bodies.
  std::shared_ptr<const StageBodies> bodies();

 private:
  struct StageState {
    const StageNode* stage;
    const OperationNode* op;
    AttachType attach;
    bool operator==(const StageState& o) const {
      return stage == o.stage && op == o.op && attach == o.attach;
    }
  };
  std::vector<StageState> bodies_state_;
  std::shared_ptr<const StageBodies> bodies_;
};

}  // namespace ptb::autoschedule
