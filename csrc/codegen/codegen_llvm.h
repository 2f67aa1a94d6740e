// Translation of lowered functions (lower/lowered_func.h) to LLVM IR.
//
// Each LoweredFunc becomes an external function with the calling convention of lowered_func.h,
//   int32_t name(void* const* data, const int64_t* scalars),
// returning 0, or PTB_ERROR_OUT_OF_MEMORY (runtime/backend_api.h) when an intermediate buffer
// could not be allocated. Its symbol is kernel_symbol(name), never a C name: a kernel called
// "exp" or "memset" must not capture the calls LLVM makes to the C library. Parallel loops
// become internal functions run by ptb_parallel_for_named (named for the loop profile,
// runtime/loop_profile.h).
//
// Memory and aliasing: an argument the function stores to is assumed not to overlap any argument
// it only reads (the runtime checks that outputs do not overlap inputs); arguments it only reads
// may alias each other, and arguments it writes may alias each other. Accesses to arguments are
// aligned to their element size only; intermediates are 64-byte aligned (small constant-size
// ones live on the stack, the others come from ptb_alloc).
#pragma once

#include <string>
#include <vector>

#include "lower/lowered_func.h"

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace ptb {

struct Target;

// The symbol of the kernel `name`: "ptb." + name (a '.' never occurs in C identifiers).
std::string kernel_symbol(const std::string& name);

// Adds the functions to `module`, whose triple and data layout are already those of tm.
// A ValueError for two functions of the same name.
void emit_lowered_funcs(llvm::Module& module, llvm::TargetMachine& tm, const Target& target,
                        const std::vector<LoweredFunc>& funcs);

}  // namespace ptb
