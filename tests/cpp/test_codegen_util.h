// Helpers shared by the codegen tests, which compile hand-built lowered functions.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/expr.h"
#include "ir/stmt.h"
#include "lower/lowered_func.h"

namespace ptb::testing {

// A lowered function of `args` (buffers) and `scalars` (scalar parameters) with body `body`.
inline LoweredFunc lowered_func(const std::string& name, std::vector<Buffer> args,
                                std::vector<Expr> scalars, Stmt body) {
  LoweredFunc f;
  f.name = name;
  f.args = std::move(args);
  f.scalar_params = std::move(scalars);
  f.body = std::move(body);
  return f;
}

}  // namespace ptb::testing
