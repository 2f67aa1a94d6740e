// The dtype of a TC def's size variables and loop indices while the def is translated: int32
// (TC's own convention, and TVM's) unless the def is compiled for inputs with a dimension of
// 2**31 or more, for which a variant with int64 sizes and indices is translated. Index
// arithmetic (flat offsets) is int64 in both.
#pragma once

#include "ir/type.h"

namespace ptb::tc {

// int32 (kIndexType) outside any IndexTypeScope.
DataType tc_index_type();

// Sets tc_index_type() for this thread while alive (translation runs on the caller's thread).
class IndexTypeScope {
 public:
  explicit IndexTypeScope(DataType index_type);
  ~IndexTypeScope();
  IndexTypeScope(const IndexTypeScope&) = delete;
  IndexTypeScope& operator=(const IndexTypeScope&) = delete;

 private:
  DataType previous_;
};

}  // namespace ptb::tc
