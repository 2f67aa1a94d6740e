// The Tensor Comprehensions front end: TC source in, te tensors out (see function.h).
//
//   auto fns = ptb::tc::compile_tc(R"(
//     def matmul(float(M, K) A, float(K, N) B) -> (C) {
//       C(m, n) +=! A(m, k) * B(k, n)
//     })");
//   // fns[0].inputs: placeholders A, B; fns[0].outputs: C, shape (M, N).
//
// Pipeline: lexer.h -> parser.h (ast.h) -> sema.h -> to_te.h (range_inference.h, typing.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tc/error.h"
#include "tc/function.h"

namespace ptb::tc {

// Translates every def of `source`, in order. Throws TCError for any error in the source.
std::vector<TcFunction> compile_tc(const std::string& source);

// One def of a source translated on its own: `fn`, or the `error` that stopped it.
struct TcDef {
  std::string name;
  std::shared_ptr<TcFunction> fn;
  std::shared_ptr<const TCError> error;
};

// Every def of `source`, in order, each translated independently, so an error in one def (one
// using a feature this front end lacks) leaves the others usable. Throws TCError only for errors
// that belong to no def: a source without defs, a def defined twice, a lexical error, or a
// parse error before a def's name. `index_type` is the dtype of the sizes and loop indices:
// int32, or int64 for inputs with a dimension past int32 (tc/index_type.h).
std::vector<TcDef> compile_tc_defs(const std::string& source,
                                   DataType index_type = DataType::Int(32));

}  // namespace ptb::tc
