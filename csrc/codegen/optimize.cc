#include "codegen/optimize.h"

#include <vector>

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/CodeGen/ReplaceWithVeclib.h>
#include <llvm/IR/PassManager.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>

#include "codegen/libmvec.h"

namespace ptb {

std::unique_ptr<llvm::TargetLibraryInfoImpl> make_library_info(const llvm::TargetMachine& tm) {
  auto tlii = std::make_unique<llvm::TargetLibraryInfoImpl>(tm.getTargetTriple());
  // LLVM's own LIBMVEC-X86 table lists sin/cos/tan/pow/exp/log at 128 and 256 bits only; this
  // one is built from what the installed libmvec exports (glibc 2.35 added exp2, log1p, tanh,
  // erf... and 512-bit variants) and from the ISA the target may use.
  const llvm::MCSubtargetInfo* sti = tm.getMCSubtargetInfo();
  const auto& variants =
      libmvec_variants(sti->checkFeatures("+avx2"), sti->checkFeatures("+avx512f"));
  std::vector<llvm::VecDesc> descs;
  for (const VectorMathVariant& v : variants) {
    // The strings live as long as the process (libmvec_variants caches them).
    auto vf = llvm::ElementCount::getFixed(v.lanes);
    descs.emplace_back(v.scalar, v.vector, vf, /*Masked=*/false, v.abi_prefix);
    if (!v.intrinsic.empty()) {
      descs.emplace_back(v.intrinsic, v.vector, vf, /*Masked=*/false, v.abi_prefix);
    }
  }
  tlii->addVectorizableFunctions(descs);
  return tlii;
}

void optimize_module(llvm::Module& module, llvm::TargetMachine& tm) {
  std::unique_ptr<llvm::TargetLibraryInfoImpl> tlii = make_library_info(tm);

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;

  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;  // off by default in PipelineTuningOptions; clang's -O3 has it
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  llvm::PassBuilder pb(&tm, tuning);

  // Registered first, so that the default registration below keeps ours.
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(*tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);

  // O2, not O3: for these kernels the two differ only in how far loops are unrolled (O3's
  // threshold is twice O2's). Elementwise, dense, matmul, softmax and 1x1 convolution kernels
  // come out as the same machine code; the 3x3 and 7x7 convolutions, layer_norm and argmax
  // get their small constant loops left rolled instead of copied, which measured no slower and
  // compiles in 20-35% less time (conv2d 3x224x224 k7 b8: 73-82 -> 47-63 ms).
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  // Vector math intrinsics the pipeline created (llvm.exp.v8f32...) become libmvec calls.
  mpm.addPass(llvm::createModuleToFunctionPassAdaptor(llvm::ReplaceWithVeclib()));
  mpm.run(module, mam);
}

}  // namespace ptb
