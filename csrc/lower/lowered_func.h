// The result of lowering: one function over flat buffers, ready for codegen.
//
// Calling convention of the generated code (what codegen emits and the runtime calls):
//
//   int32_t name(void* const* data, const int64_t* scalars)
//
// data[i] is the base pointer of argument i (DLTensor data + byte_offset), scalars[j] is the
// value of scalar_params[j] (symbolic sizes and strides, bound by the runtime from the arrays),
// converted to that Var's dtype on entry. The function returns 0, or a nonzero code when it
// could not allocate memory for an intermediate buffer.
#pragma once

#include <string>
#include <vector>

#include "ir/expr.h"
#include "ir/stmt.h"

namespace ptb {

struct LoweredFunc {
  std::string name;
  // One buffer per argument in call order; data is the Var named by the body's Loads/Stores,
  // shape and strides are constants or Vars listed in scalar_params.
  std::vector<Buffer> args;
  std::vector<Expr> scalar_params;  // Vars
  Stmt body;
  // The body is an IfThenElse whose two branches are versions of one loop nest (the strided
  // variant's unit-stride fast path and its general body): their loops are one loop each in
  // the loop profile, numbered as in lower()'s text.
  bool versioned = false;
};

}  // namespace ptb
