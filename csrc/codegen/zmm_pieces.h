// Vectors of 16k floats taken apart into 16-lane pieces (one zmm register each) for AVX-512
// intrinsics, which exist only at that width, and put back together. Only csrc/codegen
// includes this.
#pragma once

#include <vector>

namespace llvm {
class IRBuilderBase;
class Type;
class Value;
}  // namespace llvm

namespace ptb {

// Whether ty is a vector of 16 times a power-of-two lanes: its pieces join back pairwise.
bool splits_into_zmm(llvm::Type* ty);

// Lanes [offset, offset + 16) of v (v itself when it has 16 lanes).
llvm::Value* zmm_piece(llvm::IRBuilderBase& b, llvm::Value* v, int offset);

// The pieces, in order, joined pairwise into one vector of all their lanes.
llvm::Value* join_pieces(llvm::IRBuilderBase& b, std::vector<llvm::Value*> pieces);

}  // namespace ptb
