#include "codegen/minmax_avx512.h"

#include <utility>
#include <vector>

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsX86.h>

#include "codegen/zmm_pieces.h"

namespace ptb {

bool minmax_avx512_applies(llvm::Value* v) {
  auto* vty = llvm::dyn_cast<llvm::FixedVectorType>(v->getType());
  return vty != nullptr && vty->getElementType()->isFloatTy() && splits_into_zmm(vty);
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
    llvm::Value* pa = zmm_piece(b, a, offset);
    llvm::Value* pc = zmm_piece(b, c, offset);
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
  return join_pieces(b, std::move(pieces));
}

}  // namespace ptb
