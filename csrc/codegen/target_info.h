// What a target's vector unit offers, for the layers that size loops by it (the automatic
// scheduler sizes register tiles from these numbers). No LLVM types leave this header.
#pragma once

namespace ptb {

struct Target;

struct VectorUnit {
  int vector_bits = 128;      // widest native vector register
  int vector_registers = 16;  // how many of them the instruction set names
  bool fma = false;           // fused multiply-add instructions
};

// Derived from the target's CPU and feature list (the host's for "llvm"); cached per target.
VectorUnit vector_unit(const Target& target);

}  // namespace ptb
