#include "codegen/target.h"

#include <algorithm>
#include <memory>
#include <sstream>
#include <vector>

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include "codegen/llvm_target.h"
#include "support/error.h"

namespace ptb {

namespace {

constexpr const char* kSupported =
    "supported targets: \"llvm\" (this CPU), \"llvm -mcpu=NAME\", \"llvm "
    "-mattr=+feature,-feature\","
    " each optionally with \"-fast-math\"";

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// The subtarget description LLVM has for this machine's architecture, to validate names.
std::unique_ptr<llvm::MCSubtargetInfo> subtarget_info(const std::string& cpu) {
  initialize_llvm();
  std::string triple = host_triple(), error;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, error);
  PTB_ICHECK(t != nullptr, "no LLVM target for ", triple, ": ", error);
  return std::unique_ptr<llvm::MCSubtargetInfo>(t->createMCSubtargetInfo(triple, cpu, ""));
}

void check_cpu(const std::string& text, const std::string& cpu) {
  // Asked of the generic subtarget: one made for an unknown CPU prints LLVM's own warning.
  if (!subtarget_info("")->isCPUStringValid(cpu)) {
    value_error("unknown CPU '", cpu, "' in target '", text, "' (",
                "an LLVM CPU name for this architecture, e.g. \"",
                llvm::sys::getHostCPUName().str(), "\", is expected)");
  }
}

void check_features(const std::string& text, const std::string& features) {
  auto sti = subtarget_info("");
  auto known = sti->getAllProcessorFeatures();
  for (const std::string& f : split(features, ',')) {
    bool signed_ok = f.size() > 1 && (f[0] == '+' || f[0] == '-');
    std::string name = signed_ok ? f.substr(1) : f;
    bool found = std::any_of(known.begin(), known.end(),
                             [&](const llvm::SubtargetFeatureKV& kv) { return name == kv.Key; });
    if (!signed_ok || !found) {
      value_error("unknown feature '", f, "' in target '", text,
                  "': -mattr takes a comma-separated list of +name or -name, where name is an "
                  "LLVM feature of this architecture such as avx2 or avx512f");
    }
  }
}

// Code generation assumes this process's mode: 64-bit code with hardware floating point. LLVM
// aborts the process on a 32-bit-only CPU (-mcpu=i386) or -mattr=-64bit, and +16bit-mode code
// dies of SIGILL when called; refused here instead.
void check_mode(const std::string& text, const std::string& cpu, const std::string& features) {
  for (const std::string& f : split(features, ',')) {
    std::string name = f.size() > 1 ? f.substr(1) : f;
    bool mode = name == "16bit-mode" || name == "32bit-mode" || name == "soft-float";
    if (mode || f == "-64bit") {
      value_error("feature '", f, "' in target '", text,
                  "' changes the processor mode or the float ABI this process runs in; only "
                  "ISA extensions (such as +avx2 or -avx512f) may be set");
    }
  }
  if (!cpu.empty() && llvm::Triple(host_triple()).isArch64Bit() &&
      llvm::Triple(host_triple()).isX86() && !subtarget_info(cpu)->checkFeatures("+64bit")) {
    value_error("CPU '", cpu, "' in target '", text,
                "' has no 64-bit mode, which this process runs in (e.g. \"",
                llvm::sys::getHostCPUName().str(), "\" or \"x86-64\" is expected)");
  }
}

std::string host_features() {
  std::vector<std::string> features;
  for (const auto& kv : llvm::sys::getHostCPUFeatures()) {
    features.push_back((kv.second ? "+" : "-") + kv.first().str());
  }
  std::sort(features.begin(), features.end());  // StringMap order is not deterministic
  std::string out;
  for (const std::string& f : features) out += (out.empty() ? "" : ",") + f;
  return out;
}

}  // namespace

Target Target::host() {
  // Detected once: the CPU does not change under a running process.
  static const Target host = [] {
    Target t;
    t.cpu = llvm::sys::getHostCPUName().str();
    t.features = host_features();
    return t;
  }();
  return host;
}

Target Target::parse(const std::string& s) {
  std::vector<std::string> words = split(s, ' ');
  if (words.empty() || words[0] != "llvm") {
    value_error("unsupported target '", s, "': pytvmbridge generates code for the CPU only; ",
                kSupported);
  }
  Target t;
  std::string cpu, mattr;
  bool has_cpu = false;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    auto value_of = [&](const char* prefix) -> const char* {
      size_t n = std::char_traits<char>::length(prefix);
      return w.compare(0, n, prefix) == 0 ? w.c_str() + n : nullptr;
    };
    if (const char* v = value_of("-mcpu=")) {
      cpu = v;
      has_cpu = true;
    } else if (const char* v = value_of("-mattr=")) {
      mattr += (mattr.empty() ? "" : ",") + std::string(v);
    } else if (w == "-fast-math" || w == "--fast-math") {
      t.fast_math = true;
    } else {
      value_error("unsupported option '", w, "' in target '", s, "'; ", kSupported);
    }
  }
  if (has_cpu && cpu == "native") has_cpu = false;
  if (has_cpu) {
    check_cpu(s, cpu);
    t.cpu = cpu;
    t.features = mattr;
  } else {
    // "llvm" is this machine; -mattr then adjusts its features (later entries win in LLVM).
    Target host = Target::host();
    t.cpu = host.cpu;
    t.features = host.features + (mattr.empty() ? "" : "," + mattr);
  }
  // (Building LLVM's feature table costs a third of a millisecond: only when there is a list.)
  if (!mattr.empty()) check_features(s, mattr);
  if (has_cpu || !mattr.empty()) check_mode(s, has_cpu ? cpu : "", mattr);
  return t;
}

std::string Target::str() const {
  std::string s = "llvm -mcpu=" + cpu;
  if (!features.empty()) s += " -mattr=" + features;
  if (fast_math) s += " -fast-math";
  return s;
}

}  // namespace ptb
