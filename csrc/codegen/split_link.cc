#include "codegen/split_link.h"

#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>

namespace ptb {

void reach_declarations_indirectly(llvm::Module& module) {
  for (llvm::Function& f : module) {
    if (f.isDeclaration() && !f.isIntrinsic()) f.setDSOLocal(false);
  }
}

}  // namespace ptb
