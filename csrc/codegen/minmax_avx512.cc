#include "codegen/minmax_avx512.h"

#include <vector>

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsX86.h>

namespace ptb {

bool minmax_avx512_applies(llvm::Value* v) {
  auto* vty = llvm::dyn_cast<llvm::FixedVectorType>(v->getType());
  if (vty == nullptr || !vty->getElementType()->isFloatTy() || vty->getNumElements() % 16 != 0)
    return false;
  // A power-of-two number of 16-lane pieces, so that they join back pairwise.
  unsigned pieces = vty->getNumElements() / 16;
  return (pieces & (pieces - 1)) == 0;
}

llvm::Value* emit_minmax_avx512(llvm::IRBuilderBase& b, BinaryOp op, llvm::Value* a, llvm::Value* c,
                                bool fix_up) {
  llvm::Module* module = b.GetInsertBlock()->getModule();
  // vmaxps/vminps (c, a) is c > a ? c : a (c < a for min): a when either is NaN, a on ties;
  // then c is put back where c is a NaN. Written as selects alone (emit_binary), LLVM merges
  // the two into one blend under an or of two compares: two compares into mask registers,
  // which only one port executes, per 16 lanes. Here the compare of c with itself is the only
  // one, off the chain through a (a running maximum), or none with vfixupimmps, which is one
  // instruction but 4 cycles on that chain (a max pool's 9 maxima per output: slower; a row
  // reduction's four independent chains: faster). x86's vrangeps would be one instruction
  // but returns the other operand for a quiet NaN.
  llvm::Function* minmax = llvm::Intrinsic::getDeclaration(
      module, op == BinaryOp::kMax ? llvm::Intrinsic::x86_avx512_max_ps_512
                                   : llvm::Intrinsic::x86_avx512_min_ps_512);
  int lanes = static_cast<int>(llvm::cast<llvm::FixedVectorType>(a->getType())->getNumElements());
  std::vector<llvm::Value*> pieces;
  for (int offset = 0; offset < lanes; offset += 16) {
    std::vector<int> take(16);
    for (int i = 0; i < 16; ++i) take[i] = offset + i;
    llvm::Value* pa = lanes == 16 ? a : b.CreateShuffleVector(a, take);
    llvm::Value* pc = lanes == 16 ? c : b.CreateShuffleVector(c, take);
    // Rounding argument 4: the current mode (min/max do not round).
    llvm::Value* m = b.CreateCall(minmax, {pc, pa, b.getInt32(4)});
    if (fix_up) {
      // vfixupimmps's table has a 4-bit token per class of c: class 0 (quiet NaN) takes
      // token 1 (c itself), class 1 (signalling NaN) token 2 (c made quiet), every other
      // class token 0 (keep m). Imm 0: no exception flags; all lanes; current mode.
      llvm::Function* fixup =
          llvm::Intrinsic::getDeclaration(module, llvm::Intrinsic::x86_avx512_mask_fixupimm_ps_512);
      llvm::Value* table =
          llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(16), b.getInt32(0x21));
      pieces.push_back(b.CreateCall(
          fixup,
          {m, pc, table, b.getInt32(0), b.getInt16(static_cast<int16_t>(0xffff)), b.getInt32(4)}));
    } else {
      pieces.push_back(b.CreateSelect(b.CreateFCmpUNO(pc, pc), pc, m));
    }
  }
  while (pieces.size() > 1) {
    std::vector<llvm::Value*> joined;
    int width =
        static_cast<int>(llvm::cast<llvm::FixedVectorType>(pieces[0]->getType())->getNumElements());
    std::vector<int> both(2 * width);
    for (int k = 0; k < 2 * width; ++k) both[k] = k;
    for (size_t i = 0; i + 1 < pieces.size(); i += 2) {
      joined.push_back(b.CreateShuffleVector(pieces[i], pieces[i + 1], both));
    }
    pieces = joined;
  }
  return pieces[0];
}

}  // namespace ptb
