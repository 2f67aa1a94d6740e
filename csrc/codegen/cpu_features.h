// Which instruction-set features code for a target may use, and which of them this host has:
// a saved module records the first, and loading it checks them against the second, so that code
// for a CPU the host is not (AVX-512 code on an AVX2 machine) is refused instead of dying of an
// illegal instruction on its first call.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ptb {

struct Target;

// The features the CPU reports at run time (LLVM's names, "avx2", "avx512f"...), each with
// whether this host has it.
const std::map<std::string, bool>& host_cpu_features();

// The run-time-detectable features that code generated for `target` may use, sorted. System
// features that generated code never uses (protection keys, MWAITX, SGX...) are left out: a
// virtual machine often hides them from a CPU that has them, and code for "-mcpu=znver4" runs
// there all the same.
std::vector<std::string> target_cpu_features(const Target& target);

// Those of target_cpu_features(target) this host lacks: code built for `target` would die of an
// illegal instruction here. Empty for the host's own target.
std::vector<std::string> features_host_lacks(const Target& target);

// The host's CPU name as LLVM knows it ("znver4", "sapphirerapids").
std::string host_cpu_name();

}  // namespace ptb
