#include "codegen/target_info.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>

#include "codegen/llvm_target.h"
#include "codegen/target.h"
#include "support/error.h"

namespace ptb {

namespace {

VectorUnit query(const Target& target) {
  initialize_llvm();
  Target resolved = target.cpu.empty() ? Target::host() : target;
  std::string triple = host_triple(), error;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, error);
  PTB_ICHECK(t != nullptr, "no LLVM target for ", triple, ": ", error);
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      t->createMCSubtargetInfo(triple, resolved.cpu, resolved.features));
  VectorUnit unit;
  if (sti->checkFeatures("+avx512f")) {
    unit.vector_bits = 512;
    unit.vector_registers = 32;
  } else if (sti->checkFeatures("+avx")) {
    unit.vector_bits = 256;
  }
  unit.fma = sti->checkFeatures("+fma");
  return unit;
}

}  // namespace

VectorUnit vector_unit(const Target& target) {
  static std::mutex mutex;
  static std::map<std::string, VectorUnit> cache;
  std::lock_guard<std::mutex> lock(mutex);
  std::string key = target.str();
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, query(target)).first;
  return it->second;
}

}  // namespace ptb
