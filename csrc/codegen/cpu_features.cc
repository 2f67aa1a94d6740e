#include "codegen/cpu_features.h"

#include <algorithm>

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include "codegen/llvm_target.h"
#include "codegen/target.h"

namespace ptb {

const std::map<std::string, bool>& host_cpu_features() {
  static const std::map<std::string, bool> features = [] {
    std::map<std::string, bool> out;
    for (const auto& entry : llvm::sys::getHostCPUFeatures()) {
      out[entry.getKey().str()] = entry.getValue();
    }
    return out;
  }();
  return features;
}

namespace {

// Instructions for the operating system, security enclaves, transactions, cache management or
// random numbers: LLVM emits them only for their own intrinsics, which generated kernels never
// call, so a host without them runs the code all the same.
bool is_system_feature(const std::string& name) {
  static const char* const kSystem[] = {
      "clflushopt", "cldemote", "clwb",  "clzero",    "enqcmd",   "fsgsbase", "hreset",
      "invpcid",    "kl",       "lwp",   "movdir64b", "movdiri",  "mwaitx",   "pconfig",
      "pku",        "ptwrite",  "rdpid", "rdpru",     "rdrnd",    "rdseed",   "rtm",
      "serialize",  "sgx",      "shstk", "tsxldtrk",  "uintr",    "usermsr",  "waitpkg",
      "wbnoinvd",   "widekl",   "xsave", "xsavec",    "xsaveopt", "xsaves"};
  return std::find(std::begin(kSystem), std::end(kSystem), name) != std::end(kSystem);
}

}  // namespace

std::vector<std::string> target_cpu_features(const Target& target) {
  std::unique_ptr<llvm::TargetMachine> tm = create_target_machine(target);
  const llvm::MCSubtargetInfo* info = tm->getMCSubtargetInfo();
  std::vector<std::string> out;
  // Only features the CPU reports are checkable; the rest of LLVM's list are tuning hints
  // ("fast-gather") that any CPU runs correctly.
  const std::map<std::string, bool>& host = host_cpu_features();
  for (const llvm::SubtargetFeatureKV& kv : info->getAllProcessorFeatures()) {
    if (host.count(kv.Key) != 0 && info->getFeatureBits().test(kv.Value) &&
        !is_system_feature(kv.Key)) {
      out.push_back(kv.Key);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> features_host_lacks(const Target& target) {
  std::vector<std::string> missing;
  if (target.cpu.empty() && target.features.empty()) return missing;  // the host's own
  const std::map<std::string, bool>& host = host_cpu_features();
  for (const std::string& f : target_cpu_features(target)) {
    auto it = host.find(f);
    if (it == host.end() || !it->second) missing.push_back(f);
  }
  return missing;
}

std::string host_cpu_name() { return llvm::sys::getHostCPUName().str(); }

}  // namespace ptb
