// What code is generated for: "llvm" (this machine's CPU and all its features, AVX-512 where
// present; "-mcpu=native" says the same), "llvm -mcpu=NAME", "llvm -mattr=+avx2,-avx512f", and
// "-fast-math" with any of them. Fast math lets LLVM reassociate float operations, assume there
// are no NaNs or infinities (isnan may then fold to false) and approximate functions.
#pragma once

#include <string>

namespace ptb {

struct Target {
  std::string cpu;       // an LLVM CPU name, e.g. "znver4", "skylake-avx512"
  std::string features;  // LLVM feature list "+avx2,-avx512f"; empty: the CPU's own features
  bool fast_math = false;

  // Parses a target string; a ValueError naming it and what is supported for anything else
  // (another device, an unknown CPU or feature, an unknown option).
  static Target parse(const std::string& s);
  // The host's CPU and features (what "llvm" means).
  static Target host();

  // A canonical target string: Target::parse(t.str()) gives t back.
  std::string str() const;

  bool operator==(const Target& o) const {
    return cpu == o.cpu && features == o.features && fast_math == o.fast_math;
  }
  bool operator!=(const Target& o) const { return !(*this == o); }
};

}  // namespace ptb
