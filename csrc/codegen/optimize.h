// The optimisation pipeline: LLVM's O2 function passes less what does nothing for our IR, with
// library information that lets the vectorizer call glibc's libmvec for exp, log, sin...
#pragma once

#include <memory>

namespace llvm {
class Module;
class TargetMachine;
class TargetLibraryInfoImpl;
}  // namespace llvm

namespace ptb {

// libm's functions plus the libmvec variants (libmvec.h) this TargetMachine can call.
std::unique_ptr<llvm::TargetLibraryInfoImpl> make_library_info(const llvm::TargetMachine& tm);

// Runs the pipeline (optimize.cc) on module (triple and data layout already set from tm). Float
// math is only reassociated when the module's functions carry fast-math flags (target.fast_math).
void optimize_module(llvm::Module& module, llvm::TargetMachine& tm);

}  // namespace ptb
