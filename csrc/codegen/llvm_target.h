// The LLVM side of a Target: one-time LLVM initialisation and TargetMachine creation. Only
// csrc/codegen includes this (its users include LLVM headers themselves).
#pragma once

#include <memory>
#include <string>

namespace llvm {
class TargetMachine;
}  // namespace llvm

namespace ptb {

struct Target;

// Registers the native target, its assembly printer and parser; thread-safe, runs once.
void initialize_llvm();

// The triple of this process (code is JIT-compiled for the machine it runs on).
std::string host_triple();

// A TargetMachine for target at -O3; PIC-free, JIT-friendly (small code model, static).
std::unique_ptr<llvm::TargetMachine> create_target_machine(const Target& target);

}  // namespace ptb
