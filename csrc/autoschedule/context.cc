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

}  // namespace ptb::autoschedule
