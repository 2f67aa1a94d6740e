#include "tc/index_type.h"

namespace ptb::tc {

namespace {

thread_local DataType current_index_type = kIndexType;

}  // namespace

DataType tc_index_type() { return current_index_type; }

IndexTypeScope::IndexTypeScope(DataType index_type) : previous_(current_index_type) {
  current_index_type = index_type;
}

IndexTypeScope::~IndexTypeScope() { current_index_type = previous_; }

}  // namespace ptb::tc
