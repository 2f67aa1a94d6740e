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

#include <string>
#include <vector>

#include "tc/error.h"
#include "tc/function.h"

namespace ptb::tc {

// Translates every def of `source`, in order. Throws TCError for any error in the source.
std::vector<TcFunction> compile_tc(const std::string& source);

}  // namespace ptb::tc
