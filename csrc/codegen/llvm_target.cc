#include "codegen/llvm_target.h"

#include <mutex>

#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include "codegen/target.h"
#include "support/error.h"

namespace ptb {

void initialize_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

std::string host_triple() { return llvm::sys::getProcessTriple(); }

std::unique_ptr<llvm::TargetMachine> create_target_machine(const Target& target) {
  initialize_llvm();
  std::string triple = host_triple(), error;
  const llvm::Target* llvm_target = llvm::TargetRegistry::lookupTarget(triple, error);
  PTB_ICHECK(llvm_target != nullptr, "no LLVM target for ", triple, ": ", error);

  llvm::TargetOptions options;
  // Float ops carry the `contract` flag (see codegen_arith.h), which lets the backend fuse a
  // multiply and an add into an FMA; nothing else is relaxed unless fast-math was asked for.
  options.AllowFPOpFusion = llvm::FPOpFusion::Standard;
  if (target.fast_math) {
    options.AllowFPOpFusion = llvm::FPOpFusion::Fast;
    options.UnsafeFPMath = true;
    options.NoInfsFPMath = true;
    options.NoNaNsFPMath = true;
    options.NoSignedZerosFPMath = true;
  }
  // PIC: JIT memory may be anywhere in the address space, so addresses are formed RIP-relative
  // and calls into the process go through stubs the JIT linker builds.
  llvm::TargetMachine* tm = llvm_target->createTargetMachine(
      triple, target.cpu, target.features, options, llvm::Reloc::PIC_, llvm::CodeModel::Small,
      llvm::CodeGenOptLevel::Aggressive, /*JIT=*/true);
  PTB_ICHECK(tm != nullptr, "could not create a TargetMachine for ", target.str());
  return std::unique_ptr<llvm::TargetMachine>(tm);
}

}  // namespace ptb
