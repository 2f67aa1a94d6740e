#include "codegen/zmm_pieces.h"

#include <utility>

#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>

namespace ptb {

namespace {

int lanes_of(llvm::Value* v) {
  return static_cast<int>(llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements());
}

}  // namespace

bool splits_into_zmm(llvm::Type* ty) {
  auto* vty = llvm::dyn_cast<llvm::FixedVectorType>(ty);
  if (vty == nullptr || vty->getNumElements() % 16 != 0) return false;
  unsigned pieces = vty->getNumElements() / 16;
  return (pieces & (pieces - 1)) == 0;
}

llvm::Value* zmm_piece(llvm::IRBuilderBase& b, llvm::Value* v, int offset) {
  if (lanes_of(v) == 16) return v;
  std::vector<int> take(16);
  for (int i = 0; i < 16; ++i) take[i] = offset + i;
  return b.CreateShuffleVector(v, take);
}

llvm::Value* join_pieces(llvm::IRBuilderBase& b, std::vector<llvm::Value*> pieces) {
  while (pieces.size() > 1) {
    std::vector<llvm::Value*> joined;
    const int width = lanes_of(pieces[0]);
    std::vector<int> both(2 * width);
    for (int k = 0; k < 2 * width; ++k) both[k] = k;
    for (size_t i = 0; i + 1 < pieces.size(); i += 2) {
      joined.push_back(b.CreateShuffleVector(pieces[i], pieces[i + 1], both));
    }
    pieces = std::move(joined);
  }
  return pieces[0];
}

}  // namespace ptb
