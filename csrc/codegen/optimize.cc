#include "codegen/optimize.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/CodeGen/ReplaceWithVeclib.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/IR/PassManager.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/Error.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>

#include "codegen/libmvec.h"
#include "support/error.h"

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

namespace {

// Shorthands for the parameter lists LLVM's O2 gives these passes (printed by
// `opt -passes='default<O2>' -print-pipeline-passes`).
#define PTB_SIMPLIFYCFG(flags) "simplifycfg<bonus-inst-threshold=1;" flags ">"
#define PTB_CFG_KEEP_LOOPS                                                                \
  "no-forward-switch-cond;switch-range-to-icmp;no-switch-to-lookup;keep-loops;no-hoist-"  \
  "common-insts;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-" \
  "unpredictables"
#define PTB_INSTCOMBINE "instcombine<max-iterations=1;no-use-loop-info;no-verify-fixpoint>"

// LLVM's O2 pipeline for a module without calls to inline, its function passes in O2's order,
// less what does nothing for the IR codegen_llvm emits:
// - the inter-procedural passes around the inliner (inliner, function-attrs, globalopt,
//   deadargelim, globaldce...): a module here is one kernel and its outlined loop bodies,
//   called through pointers or marked noinline; only ipsccp (constant arguments of the bodies)
//   and globaldce are kept;
// - three of O2's eight instcombine runs and two of its four LICM runs, which follow passes
//   that leave nothing new for them here, and passes for other languages and targets
//   (coroutines, auto-init, divergent targets, libcall shrink-wrapping).
// Checked on the 105 kernels of benchmarks/ops.py (batch 1 and 8): the same instructions as
// O2 in every function. Taking out more changed some of them: the instcombine after the
// loop-rotate/LICM group (dense), the one after unrolling (group_norm, batch_matmul), GVN's
// PRE (argmax, batch_matmul) and the last LICM (dense, argmax).
const char* const kPipeline =
    "function<eager-inv>(" PTB_SIMPLIFYCFG(
        "no-forward-switch-cond;no-switch-range-to-icmp;no-switch-to-lookup;keep-loops;no-"
        "hoist-common-insts;no-sink-common-insts;speculate-blocks;simplify-cond-branch;no-"
        "speculate-unpredictables") ",sroa<modify-cfg>,early-cse<>),"
    "ipsccp,"
    "function<eager-inv>("
    "mem2reg," PTB_INSTCOMBINE "," PTB_SIMPLIFYCFG(PTB_CFG_KEEP_LOOPS) ","
    "sroa<modify-cfg>,early-cse<memssa>,jump-threading,correlated-propagation," PTB_SIMPLIFYCFG(
        PTB_CFG_KEEP_LOOPS) "," PTB_INSTCOMBINE ",aggressive-instcombine,tailcallelim," PTB_SIMPLIFYCFG(PTB_CFG_KEEP_LOOPS) ","
    "reassociate,constraint-elimination,"
    "loop-mssa(loop-instsimplify,loop-simplifycfg,loop-rotate<header-duplication;no-prepare-for-"
    "lto>,licm<allowspeculation>,simple-loop-unswitch<no-nontrivial;trivial>)," PTB_SIMPLIFYCFG(
        PTB_CFG_KEEP_LOOPS) "," PTB_INSTCOMBINE ","
    "loop(loop-idiom,indvars,simple-loop-unswitch<no-nontrivial;trivial>,loop-deletion,loop-"
    "unroll-full),"
    "sroa<modify-cfg>,vector-combine,mldst-motion<no-split-footer-bb>,gvn<>,sccp,bdce," PTB_INSTCOMBINE
    ",jump-threading,correlated-propagation,adce,memcpyopt,dse,loop-mssa(licm<allowspeculation>)," PTB_SIMPLIFYCFG(
        "no-forward-switch-cond;switch-range-to-icmp;no-switch-to-lookup;keep-loops;hoist-"
        "common-insts;sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-"
        "unpredictables") "),"
    "function<eager-inv>("
    "float2int,lower-constant-intrinsics,loop(loop-rotate<header-duplication;no-prepare-for-lto>,"
    "loop-deletion),loop-distribute,inject-tli-mappings,"
    "loop-vectorize<no-interleave-forced-only;no-vectorize-forced-only;>,infer-alignment,"
    "loop-load-elim," PTB_SIMPLIFYCFG(
        "forward-switch-cond;switch-range-to-icmp;switch-to-lookup;no-keep-loops;hoist-common-"
        "insts;sink-common-insts;speculate-blocks;simplify-cond-branch;no-speculate-"
        "unpredictables") ",slp-vectorizer,vector-combine,loop-unroll<O2>,transform-warning,"
    "sroa<preserve-cfg>,infer-alignment," PTB_INSTCOMBINE ",alignment-from-assumptions,loop-sink,instsimplify,div-"
    "rem-pairs,tailcallelim," PTB_SIMPLIFYCFG(
        "no-forward-switch-cond;switch-range-to-icmp;no-switch-to-lookup;keep-loops;no-hoist-"
        "common-insts;no-sink-common-insts;speculate-blocks;simplify-cond-branch;speculate-"
        "unpredictables") "),"
    "globaldce";  // the runtime functions a kernel does not call, out of its printed IR

#undef PTB_SIMPLIFYCFG
#undef PTB_CFG_KEEP_LOOPS
#undef PTB_INSTCOMBINE

// PYTVMBRIDGE_LLVM_PIPELINE replaces the pipeline (for comparisons): "O2" is LLVM's own,
// anything else an `opt -passes=` text. Read once per process; null when it is not set.
const std::string* user_pipeline() {
  static const std::optional<std::string> text = []() -> std::optional<std::string> {
    const char* env = std::getenv("PYTVMBRIDGE_LLVM_PIPELINE");
    if (env == nullptr || *env == '\0') return std::nullopt;
    return std::string(env);
  }();
  return text ? &*text : nullptr;
}

// Set once the built-in text has failed to parse: later builds go straight to O2.
std::atomic<bool> builtin_failed{false};
// The fallback's warning is printed once per process.
std::atomic<bool> warned{false};

}  // namespace

const char* builtin_pipeline() { return kPipeline; }

bool run_pipeline(llvm::Module& module, llvm::TargetMachine& tm, const std::string& text,
                  bool from_user) {
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

  llvm::ModulePassManager mpm;
  bool parsed = true;
  if (text == "O2") {
    mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  } else if (!from_user && text == kPipeline && builtin_failed.load(std::memory_order_relaxed)) {
    parsed = false;  // failed before: no second parse
    mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  } else if (llvm::Error err = pb.parsePassPipeline(mpm, text)) {
    std::string why = llvm::toString(std::move(err));
    if (from_user) value_error("PYTVMBRIDGE_LLVM_PIPELINE: LLVM cannot parse '", text, "': ", why);
    // The built-in text names LLVM 19's passes and parameters; another LLVM may have renamed
    // one. Its standard O2 pipeline (a superset: slower to compile, the same kernels) is
    // always there.
    parsed = false;
    if (text == kPipeline) builtin_failed = true;
    if (!warned.exchange(true)) {
      std::fprintf(stderr,
                   "pytvmbridge: warning: LLVM %s cannot parse the built-in optimisation "
                   "pipeline (%s); using LLVM's standard O2 pipeline instead (slower builds)\n",
                   LLVM_VERSION_STRING, why.c_str());
    }
    mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  }
  // Vector math intrinsics the pipeline created (llvm.exp.v8f32...) become libmvec calls.
  mpm.addPass(llvm::createModuleToFunctionPassAdaptor(llvm::ReplaceWithVeclib()));
  mpm.run(module, mam);
  return parsed;
}

void optimize_module(llvm::Module& module, llvm::TargetMachine& tm) {
  const std::string* user = user_pipeline();
  static const std::string builtin = kPipeline;
  run_pipeline(module, tm, user != nullptr ? *user : builtin, user != nullptr);
}

}  // namespace ptb
