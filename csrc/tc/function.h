// A TC def translated to te: its input placeholders and output tensors (for a schedule and a
// build), and what a call needs before the kernel runs: binding the size variables from the
// input shapes, checking them, and computing the output shapes to allocate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tc/sema.h"
#include "te/operation.h"

namespace ptb::tc {

// A read whose indices are not provably in bounds for every size: checked at call time. The
// check applies when every extent is positive (otherwise the loop around the read is empty) and
// requires 0 <= value (is_lower) or value <= size - 1.
struct BoundsCheck {
  std::vector<Expr> extents;
  Expr value;
  Expr size;
  bool is_lower = false;
  bool is_write = false;  // a where clause's range on a left-hand side index, not a read
  std::string tensor;
  int dim = 0;
  std::string location;  // "line L, column C" and the source line with a caret
};

struct TcFunction {
  std::string name;
  std::string signature;  // "matmul(float(M,K) A, float(K,N) B) -> (C)" for messages
  std::vector<std::string> input_names, output_names;
  std::vector<Tensor> inputs;   // placeholders, in signature order
  std::vector<Tensor> outputs;  // the last stage written for each output, in signature order
  std::vector<SizeInfo> sizes;
  // Per input dimension: the index of its size variable in `sizes`, or -1 for a fixed size.
  std::vector<std::vector<int>> input_size_ids;
  // Per output: the declared dimensions (empty when untyped): size index or -1 and fixed value.
  std::vector<std::vector<std::pair<int, int64_t>>> output_declared;
  std::vector<BoundsCheck> checks;
  // The dtype of the size variables and loop indices: int32, or int64 for the variant compiled
  // for inputs with a dimension past int32 (tc/index_type.h).
  DataType index_type = DataType::Int(32);

  // Binds the sizes from the input shapes (and checks dtypes when given), runs every call-time
  // check and returns the output shapes. TypeError for a wrong count or dtype; ValueError naming
  // the argument and the size variable for ranks and sizes that do not match the signature, for
  // an output that would have a negative size, and for a read out of bounds.
  std::vector<std::vector<int64_t>> prepare(const std::vector<std::vector<int64_t>>& shapes,
                                            const std::vector<DataType>* dtypes) const;
};

}  // namespace ptb::tc
