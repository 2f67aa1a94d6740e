// The optimisation pipeline: LLVM's O2 function passes less what does nothing for our IR, with
// library information that lets the vectorizer call glibc's libmvec for exp, log, sin...
#pragma once

#include <memory>
#include <string>

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
// PYTVMBRIDGE_LLVM_PIPELINE, when set, replaces the pipeline ("O2": LLVM's standard one).
void optimize_module(llvm::Module& module, llvm::TargetMachine& tm);

// The pipeline optimize_module runs by default, as an `opt -passes=` text (LLVM 19's names).
const char* builtin_pipeline();

// Runs `text` ("O2" or an `opt -passes=` text) and the libmvec replacement on module. A text
// LLVM cannot parse is a ValueError if from_user (the environment variable); the built-in text
// (from_user false) falls back to LLVM's standard O2 pipeline instead, with a warning on stderr
// the first time in the process, and later calls take O2 without parsing again. Returns false
// when it fell back.
bool run_pipeline(llvm::Module& module, llvm::TargetMachine& tm, const std::string& text,
                  bool from_user);

}  // namespace ptb
