#include "autoschedule/config.h"

#include <algorithm>
#include <sstream>

#include "support/error.h"

namespace ptb::autoschedule {

namespace {

std::string list(const std::vector<int64_t>& values) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << "]";
  return out.str();
}

}  // namespace

void Decisions::set_rule(const std::string& stage, const std::string& rule) {
  chosen_[stage].rule = rule;
  space_[stage];  // a stage with no knobs is still part of the space
}

int64_t Decisions::knob(const std::string& stage, const std::string& knob, int64_t fallback,
                        std::vector<int64_t> candidates) {
  if (std::find(candidates.begin(), candidates.end(), fallback) == candidates.end()) {
    candidates.push_back(fallback);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  int64_t value = fallback;
  if (given_ != nullptr) {
    auto st = given_->find(stage);
    if (st != given_->end()) {
      auto k = st->second.knobs.find(knob);
      if (k != st->second.knobs.end()) {
        if (std::find(candidates.begin(), candidates.end(), k->second) == candidates.end()) {
          value_error("auto_schedule config: stage '", stage, "' knob '", knob, "' is ", k->second,
                      ", which is not one of its candidates ", list(candidates));
        }
        value = k->second;
      }
    }
  }
  space_[stage][knob] = std::move(candidates);
  chosen_[stage].knobs[knob] = value;
  return value;
}

void Decisions::check_all_used() const {
  if (given_ == nullptr) return;
  for (const auto& [stage, choice] : *given_) {
    auto st = space_.find(stage);
    if (st == space_.end()) {
      std::ostringstream known;
      for (const auto& [name, _] : space_)
        known << (known.tellp() ? ", " : "") << "'" << name << "'";
      value_error("auto_schedule config: there is no stage '", stage,
                  "' in this computation (its stages are ", known.str(), ")");
    }
    for (const auto& [knob, _] : choice.knobs) {
      if (!st->second.count(knob)) {
        std::ostringstream known;
        for (const auto& [name, __] : st->second)
          known << (known.tellp() ? ", " : "") << "'" << name << "'";
        value_error("auto_schedule config: stage '", stage, "' has no knob '", knob,
                    "' on this path (its knobs are ", known.str().empty() ? "none" : known.str(),
                    ")");
      }
    }
  }
}

}  // namespace ptb::autoschedule
