// Vector variants of libm functions in glibc's libmvec, for the vectorizer (as library info) and
// for math on vector values. Only variants the installed libmvec exports and the target's ISA can
// call are listed, so a kernel never references a missing function or an unsupported ISA.
#pragma once

#include <string>
#include <vector>

namespace ptb {

struct VectorMathVariant {
  std::string scalar;      // the libm name: "expf", "pow"
  std::string intrinsic;   // the matching LLVM intrinsic ("llvm.exp.f32"), or empty
  std::string vector;      // the vector function: "_ZGVeN16v_expf"
  std::string abi_prefix;  // LLVM's vector-function ABI prefix: "_ZGV_LLVM_N16v"
  int lanes;
  int arity;  // 1 or 2 (pow)
};

// The variants callable with the given vector ISA: SSE2 always (128-bit), AVX2 (256-bit),
// AVX-512F (512-bit). Empty when libmvec cannot be loaded.
const std::vector<VectorMathVariant>& libmvec_variants(bool avx2, bool avx512f);

// The path to load libmvec from, for the JIT's symbol resolution; empty when unavailable.
const std::string& libmvec_path();

}  // namespace ptb
