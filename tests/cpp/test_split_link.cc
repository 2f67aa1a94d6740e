// The two objects of a split build reach each other's functions through the GOT (see
// csrc/codegen/split_link.h): taking the address of a function declared in this piece must not
// be a 32-bit PC-relative fixup once the declarations are marked.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/llvm_target.h"
#include "codegen/split_link.h"
#include "codegen/target.h"

namespace ptb {
namespace {

// @body stands for a parallel body the other piece defines; @kernel takes its address (what a
// kernel passes to ptb_parallel_for). Left as lowering produced it, the declaration is dso_local.
const char* const kPieceIr = R"(
declare dso_local void @body(i64)

define ptr @kernel() {
  ret ptr @body
}
)";

// The relocation types in the object emitted for `module`, by the symbol they refer to.
std::string relocations_to(llvm::Module& module, const std::string& symbol) {
  std::unique_ptr<llvm::TargetMachine> tm = create_target_machine(Target::host());
  module.setDataLayout(tm->createDataLayout());
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream out(buffer);
  llvm::legacy::PassManager passes;
  EXPECT_FALSE(tm->addPassesToEmitFile(passes, out, nullptr, llvm::CodeGenFileType::ObjectFile));
  passes.run(module);
  auto object = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(buffer.data(), buffer.size()), "piece"));
  EXPECT_TRUE(static_cast<bool>(object));
  if (!object) {
    llvm::consumeError(object.takeError());
    return "";
  }
  std::string types;
  for (const llvm::object::SectionRef& section : (*object)->sections()) {
    for (const llvm::object::RelocationRef& r : section.relocations()) {
      auto sym = r.getSymbol();
      if (sym == (*object)->symbol_end()) continue;
      auto name = sym->getName();
      if (!name) {
        llvm::consumeError(name.takeError());
        continue;
      }
      if (*name != symbol) continue;
      llvm::SmallString<32> type;
      r.getTypeName(type);
      types += std::string(type) + " ";
    }
  }
  return types;
}

std::unique_ptr<llvm::Module> parse_piece(llvm::LLVMContext& ctx) {
  llvm::SMDiagnostic error;
  std::unique_ptr<llvm::Module> module = llvm::parseAssemblyString(kPieceIr, error, ctx);
  EXPECT_NE(module, nullptr) << error.getMessage().str();
  return module;
}

TEST(SplitLink, AnotherPiecesFunctionIsReachedThroughTheGot) {
  initialize_llvm();
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> as_lowered = parse_piece(ctx);
  ASSERT_NE(as_lowered, nullptr);
  // The hazard: a 32-bit PC-relative reference, which fails to link when the two objects lie
  // more than 2 GiB apart.
  EXPECT_EQ(relocations_to(*as_lowered, "body"), "R_X86_64_PC32 ");

  std::unique_ptr<llvm::Module> marked = parse_piece(ctx);
  ASSERT_NE(marked, nullptr);
  reach_declarations_indirectly(*marked);
  std::string types = relocations_to(*marked, "body");
  EXPECT_NE(types.find("GOTPCREL"), std::string::npos) << types;
  EXPECT_EQ(types.find("R_X86_64_PC32"), std::string::npos) << types;
}

}  // namespace
}  // namespace ptb
