#include "codegen/libmvec.h"

#include <mutex>

#include <llvm/Support/DynamicLibrary.h>

namespace ptb {

namespace {

struct MathFunction {
  const char* name;       // the double version; the float one appends 'f'
  const char* intrinsic;  // the LLVM intrinsic's base name, or nullptr
  int arity;
};

// The functions codegen calls as libm functions or math intrinsics that libmvec vectorizes.
constexpr MathFunction kFunctions[] = {
    {"exp", "llvm.exp", 1},   {"exp2", "llvm.exp2", 1},   {"log", "llvm.log", 1},
    {"log2", "llvm.log2", 1}, {"log10", "llvm.log10", 1}, {"log1p", nullptr, 1},
    {"sin", "llvm.sin", 1},   {"cos", "llvm.cos", 1},     {"tan", "llvm.tan", 1},
    {"tanh", nullptr, 1},     {"erf", nullptr, 1},        {"pow", "llvm.pow", 2},
    {"acos", nullptr, 1},     {"acosh", nullptr, 1},      {"asin", nullptr, 1},
    {"asinh", nullptr, 1},    {"atan", nullptr, 1},       {"atanh", nullptr, 1},
    {"cbrt", nullptr, 1},     {"cosh", nullptr, 1},       {"sinh", nullptr, 1},
    {"erfc", nullptr, 1},     {"exp10", nullptr, 1},      {"expm1", nullptr, 1},
    {"atan2", nullptr, 2},    {"hypot", nullptr, 2},
};

llvm::sys::DynamicLibrary& library() {
  static llvm::sys::DynamicLibrary lib = [] {
    std::string error;
    return llvm::sys::DynamicLibrary::getPermanentLibrary(libmvec_path().c_str(), &error);
  }();
  return lib;
}

std::vector<VectorMathVariant> find_variants(bool avx2, bool avx512f) {
  std::vector<VectorMathVariant> out;
  if (libmvec_path().empty() || !library().isValid()) return out;
  // x86 vector function ABI: _ZGV <isa> N <lanes> <v per argument> _ <name>; isa b = SSE (128
  // bits), d = AVX2 (256), e = AVX-512 (512).
  struct Isa {
    char letter;
    int bits;
    bool usable;
  };
  const Isa isas[] = {{'b', 128, true}, {'d', 256, avx2}, {'e', 512, avx512f}};
  for (const MathFunction& f : kFunctions) {
    for (int elem_bits : {32, 64}) {
      std::string scalar = std::string(f.name) + (elem_bits == 32 ? "f" : "");
      std::string intrinsic =
          f.intrinsic ? std::string(f.intrinsic) + (elem_bits == 32 ? ".f32" : ".f64") : "";
      for (const Isa& isa : isas) {
        if (!isa.usable) continue;
        int lanes = isa.bits / elem_bits;
        std::string vector = std::string("_ZGV") + isa.letter + "N" + std::to_string(lanes) +
                             std::string(f.arity, 'v') + "_" + scalar;
        if (library().getAddressOfSymbol(vector.c_str()) == nullptr) continue;
        std::string prefix = "_ZGV_LLVM_N" + std::to_string(lanes) + std::string(f.arity, 'v');
        out.push_back({scalar, intrinsic, vector, prefix, lanes, f.arity});
      }
    }
  }
  return out;
}

}  // namespace

const std::string& libmvec_path() {
  static const std::string path = [] {
    std::string error;
    // The soname, resolved by the dynamic loader like any dependency.
    auto lib = llvm::sys::DynamicLibrary::getPermanentLibrary("libmvec.so.1", &error);
    return lib.isValid() ? std::string("libmvec.so.1") : std::string();
  }();
  return path;
}

const std::vector<VectorMathVariant>& libmvec_variants(bool avx2, bool avx512f) {
  // Four ISA combinations at most; each is probed once (the probe is a few dozen dlsym calls).
  static std::mutex mu;
  static std::vector<VectorMathVariant> cache[2][2];
  static bool done[2][2] = {};
  std::lock_guard<std::mutex> lock(mu);
  if (!done[avx2][avx512f]) {
    cache[avx2][avx512f] = find_variants(avx2, avx512f);
    done[avx2][avx512f] = true;
  }
  return cache[avx2][avx512f];
}

}  // namespace ptb
