// The optimisation pipeline's fallback: a built-in pipeline text LLVM cannot parse (another
// LLVM version) runs LLVM's standard O2 instead, with one warning; a user's text is an error.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <llvm/AsmParser/Parser.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/llvm_target.h"
#include "codegen/optimize.h"
#include "codegen/target.h"
#include "support/error.h"

namespace ptb {
namespace {

// sum(a[0..n)) through a stack slot: every pipeline worth the name promotes the slot to a
// register (no alloca left) and keeps one loop.
const char* const kSumIr = R"(
define float @sum(ptr noalias %a, i32 %n) {
entry:
  %acc = alloca float
  store float 0.0, ptr %acc
  br label %head
head:
  %i = phi i32 [ 0, %entry ], [ %next, %body ]
  %done = icmp sge i32 %i, %n
  br i1 %done, label %exit, label %body
body:
  %p = getelementptr float, ptr %a, i32 %i
  %x = load float, ptr %p
  %s = load float, ptr %acc
  %t = fadd float %s, %x
  store float %t, ptr %acc
  %next = add i32 %i, 1
  br label %head
exit:
  %r = load float, ptr %acc
  ret float %r
}
)";

struct Parsed {
  std::unique_ptr<llvm::LLVMContext> ctx = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::TargetMachine> tm = create_target_machine(Target::parse("llvm"));
  std::unique_ptr<llvm::Module> module;
  Parsed() {
    llvm::SMDiagnostic diag;
    module = llvm::parseAssemblyString(kSumIr, diag, *ctx);
    module->setDataLayout(tm->createDataLayout());
    module->setTargetTriple(tm->getTargetTriple().str());
  }
  int allocas() const {
    int n = 0;
    for (const llvm::Instruction& inst : module->getFunction("sum")->getEntryBlock()) {
      n += llvm::isa<llvm::AllocaInst>(inst) ? 1 : 0;
    }
    return n;
  }
};

TEST(Optimize, BuiltinPipelineParsesAndOptimizes) {
  Parsed p;
  ASSERT_NE(p.module, nullptr);
  EXPECT_EQ(p.allocas(), 1);
  EXPECT_TRUE(run_pipeline(*p.module, *p.tm, builtin_pipeline(), /*from_user=*/false));
  EXPECT_EQ(p.allocas(), 0);
}

TEST(Optimize, UnparsableBuiltinFallsBackToO2WithOneWarning) {
  Parsed first, second, o2;
  ASSERT_NE(first.module, nullptr);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(run_pipeline(*first.module, *first.tm, "function(no-such-pass)", false));
  EXPECT_FALSE(run_pipeline(*second.module, *second.tm, "function(no-such-pass)", false));
  std::string err = testing::internal::GetCapturedStderr();
  // one warning for the process, naming what failed
  EXPECT_NE(err.find("using LLVM's standard O2 pipeline"), std::string::npos) << err;
  EXPECT_NE(err.find("no-such-pass"), std::string::npos) << err;
  EXPECT_EQ(err.find("warning"), err.rfind("warning")) << err;
  // optimised as LLVM's own O2 does
  EXPECT_TRUE(run_pipeline(*o2.module, *o2.tm, "O2", false));
  for (Parsed* p : {&first, &second}) {
    EXPECT_EQ(p->allocas(), 0);
    EXPECT_EQ(p->module->getFunction("sum")->getInstructionCount(),
              o2.module->getFunction("sum")->getInstructionCount());
  }
}

TEST(Optimize, UnparsableUserPipelineIsAValueError) {
  Parsed p;
  ASSERT_NE(p.module, nullptr);
  try {
    run_pipeline(*p.module, *p.tm, "function(no-such-pass)", /*from_user=*/true);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kValue);
    EXPECT_NE(std::string(e.what()).find("PYTVMBRIDGE_LLVM_PIPELINE"), std::string::npos);
  }
  EXPECT_EQ(p.allocas(), 1);  // untouched
}

}  // namespace
}  // namespace ptb
