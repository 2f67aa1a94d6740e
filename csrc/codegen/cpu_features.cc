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

std::vector<std::string> target_cpu_features(const Target& target) {
  std::unique_ptr<llvm::TargetMachine> tm = create_target_machine(target);
  const llvm::MCSubtargetInfo* info = tm->getMCSubtargetInfo();
  std::vector<std::string> out;
  // Only features the CPU reports are checkable; the rest of LLVM's list are tuning hints
  // ("fast-gather") that any CPU runs correctly.
  const std::map<std::string, bool>& host = host_cpu_features();
  for (const llvm::SubtargetFeatureKV& kv : info->getAllProcessorFeatures()) {
    if (host.count(kv.Key) != 0 && info->getFeatureBits().test(kv.Value)) out.push_back(kv.Key);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string host_cpu_name() { return llvm::sys::getHostCPUName().str(); }

}  // namespace ptb
