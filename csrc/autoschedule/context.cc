#include "autoschedule/context.h"

#include <algorithm>

namespace ptb::autoschedule {

void Context::name_new(const Stage& created, const Stage& from, const std::string& suffix) {
  keys[created.get()] = key(from) + suffix;
}

int Context::lanes(DataType t) const {
  int bits = std::max(8, t.bits());
  return std::max(1, unit.vector_bits / bits);
}

std::shared_ptr<const StageBodies> Context::bodies() {
  std::vector<StageState> state;
  state.reserve(sch->stages.size());
  for (const Stage& st : sch->stages) state.push_back({st.get(), st->op.get(), st->attach_type});
  if (!bodies_ || state != bodies_state_) {
    bodies_ = std::make_shared<const StageBodies>(inline_bodies(sch));
    bodies_state_ = std::move(state);
  }
  return bodies_;
}

}  // namespace ptb::autoschedule
