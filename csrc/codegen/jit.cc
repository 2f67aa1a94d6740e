#include "codegen/jit.h"

#include <pthread.h>

#include <mutex>
#include <sstream>
#include <unordered_map>
#include <utility>

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/AsmParser/Parser.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/SmallVectorMemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/SubtargetFeature.h>

#include "codegen/codegen_llvm.h"
#include "codegen/libmvec.h"
#include "codegen/llvm_target.h"
#include "codegen/optimize.h"
#include "runtime/backend_api.h"
#include "support/error.h"
#include "support/phase_timer.h"

namespace ptb {

namespace {

// LLVM work is serialised: every build has its own context and TargetMachine, but LLVM's global
// state (command-line options, statistics, dynamic library handles) is not all thread-safe.
//
// fork(): the child has only the forking thread. Had another thread been inside LLVM, the child
// would inherit this mutex locked by a thread that does not exist there (and LLVM's own locks
// and state half-updated), and its first build would wait forever. So fork() waits for the
// build in progress to finish (the prepare handler takes the mutex) and both processes release
// it afterwards. The mutex is never destroyed, so that threads still building while the
// interpreter exits do not lock a destroyed mutex.
std::mutex& llvm_mutex() {
  static std::mutex* mu = [] {
    auto* m = new std::mutex;
    pthread_atfork([] { llvm_mutex().lock(); }, [] { llvm_mutex().unlock(); },
                   [] { llvm_mutex().unlock(); });
    return m;
  }();
  return *mu;
}

template <typename T>
T unwrap(llvm::Expected<T> value, const char* what) {
  if (!value) internal_error(__FILE__, __LINE__, what, ": ", llvm::toString(value.takeError()));
  return std::move(*value);
}

void check(llvm::Error err, const char* what) {
  if (err) internal_error(__FILE__, __LINE__, what, ": ", llvm::toString(std::move(err)));
}

std::string print_module(const llvm::Module& module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  os.flush();
  return text;
}

// The optimised IR is kept as bitcode, written in a fraction of the time the text takes (a
// tenth of a second for a kernel of 400 stages), and printed when get_source asks for it.
std::string write_bitcode(const llvm::Module& module) {
  std::string bits;
  llvm::raw_string_ostream os(bits);
  llvm::WriteBitcodeToFile(module, os);
  os.flush();
  return bits;
}

std::unique_ptr<llvm::Module> read_bitcode(const std::string& bits, llvm::LLVMContext& ctx) {
  llvm::Expected<std::unique_ptr<llvm::Module>> module = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(llvm::StringRef(bits.data(), bits.size()), "ir"), ctx);
  return unwrap(std::move(module), "cannot re-read the module's bitcode");
}

// Machine code (object file or assembly text) for module. Codegen rewrites the IR as it goes,
// so the module is not reusable afterwards.
llvm::SmallVector<char, 0> emit_machine_code(llvm::Module& module, llvm::TargetMachine& tm,
                                             llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> out;
  llvm::raw_svector_ostream os(out);
  llvm::legacy::PassManager pm;
  std::unique_ptr<llvm::TargetLibraryInfoImpl> tlii = make_library_info(tm);
  pm.add(new llvm::TargetLibraryInfoWrapperPass(*tlii));
  PTB_ICHECK(!tm.addPassesToEmitFile(pm, os, nullptr, type), "the target cannot emit ",
             type == llvm::CodeGenFileType::ObjectFile ? "objects" : "assembly");
  pm.run(module);
  return out;
}

std::unique_ptr<llvm::orc::LLJIT> make_jit(const Target& target, const llvm::DataLayout& layout) {
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(host_triple())};
  jtmb.setCPU(target.cpu);
  jtmb.addFeatures(llvm::SubtargetFeatures(target.features).getFeatures());
  jtmb.setRelocationModel(llvm::Reloc::PIC_);
  jtmb.setCodeModel(llvm::CodeModel::Small);
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);

  // Objects are compiled before they reach the JIT, so its IR compiler is never used: the
  // concurrent one creates its TargetMachine on demand, which keeps LLJIT's setup cheap.
  auto jit =
      unwrap(llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(std::move(jtmb))
                 .setDataLayout(layout)
                 .setCompileFunctionCreator(
                     [](llvm::orc::JITTargetMachineBuilder b)
                         -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                       return std::make_unique<llvm::orc::ConcurrentIRCompiler>(std::move(b));
                     })
                 .create(),
             "cannot create the JIT");

  llvm::orc::JITDylib& jd = jit->getMainJITDylib();
  // The backend API by address: the extension's symbols are hidden, so the process symbol
  // table cannot provide them.
  llvm::orc::SymbolMap symbols;
  for (const BackendSymbol& s : backend_symbols()) {
    symbols[jit->mangleAndIntern(s.name)] = {
        llvm::orc::ExecutorAddr::fromPtr(s.address),
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  }
  check(jd.define(llvm::orc::absoluteSymbols(std::move(symbols))), "cannot define the backend API");

  // Math libraries by name: an extension module is loaded RTLD_LOCAL, so the process's global
  // symbols may lack libm, libgcc's half-precision helpers (__truncdfhf2...) and libmvec.
  char prefix = layout.getGlobalPrefix();
  for (const char* lib : {"libm.so.6", "libgcc_s.so.1"}) {
    auto generator = llvm::orc::DynamicLibrarySearchGenerator::Load(lib, prefix);
    if (generator) {
      jd.addGenerator(std::move(*generator));
    } else {
      llvm::consumeError(generator.takeError());  // the process symbols may still have them
    }
  }
  if (!libmvec_path().empty()) {
    jd.addGenerator(
        unwrap(llvm::orc::DynamicLibrarySearchGenerator::Load(libmvec_path().c_str(), prefix),
               "cannot load libmvec"));
  }
  return jit;
}

}  // namespace

struct JITModule::Impl {
  Target target;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<std::string> names;
  std::unordered_map<std::string, KernelFn> functions;
  std::string bitcode;  // the optimised IR of a compiled module (empty for a loaded one)
  std::string object;   // what the JIT linked, for Module saving
  mutable std::mutex source_mu;
  mutable std::string ll;        // the optimised IR as text: given, or printed on first request
  mutable std::string asm_text;  // made on first request
};

JITModule::JITModule(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
// Releasing the JIT's memory and symbol tables touches LLVM's shared state: under the mutex too.
JITModule::~JITModule() {
  std::lock_guard<std::mutex> lock(llvm_mutex());
  impl_.reset();
}

std::shared_ptr<JITModule> JITModule::compile(const std::vector<LoweredFunc>& funcs,
                                              const Target& target,
                                              const std::string& module_name) {
  std::lock_guard<std::mutex> lock(llvm_mutex());
  PhaseTimer timer("llvm " + module_name);
  auto impl = std::make_unique<Impl>();
  impl->target = target;

  llvm::LLVMContext ctx;
  auto module = std::make_unique<llvm::Module>(module_name, ctx);
  std::unique_ptr<llvm::TargetMachine> tm = create_target_machine(target);
  module->setTargetTriple(tm->getTargetTriple().str());
  module->setDataLayout(tm->createDataLayout());
  timer.mark("target");

  emit_lowered_funcs(*module, *tm, target, funcs);
  timer.mark("emit_ir");
  std::string problems;
  llvm::raw_string_ostream problem_stream(problems);
  if (llvm::verifyModule(*module, &problem_stream)) {
    problem_stream.flush();
    internal_error(__FILE__, __LINE__, "codegen produced invalid LLVM IR: ", problems);
  }
  timer.mark("verify");
  optimize_module(*module, *tm);
  timer.mark("optimize");
  impl->bitcode = write_bitcode(*module);
  timer.mark("bitcode");

  llvm::SmallVector<char, 0> object =
      emit_machine_code(*module, *tm, llvm::CodeGenFileType::ObjectFile);
  impl->object.assign(object.begin(), object.end());
  timer.mark("codegen");
  impl->jit = make_jit(target, module->getDataLayout());
  check(impl->jit->addObjectFile(std::make_unique<llvm::SmallVectorMemoryBuffer>(
            std::move(object), module_name, /*RequiresNullTerminator=*/false)),
        "cannot add the compiled object to the JIT");

  for (const LoweredFunc& f : funcs) {
    llvm::orc::ExecutorAddr addr =
        unwrap(impl->jit->lookup(kernel_symbol(f.name)), "cannot link the kernel");
    impl->names.push_back(f.name);
    impl->functions[f.name] = addr.toPtr<KernelFn>();
  }
  timer.mark("link");
  return std::shared_ptr<JITModule>(new JITModule(std::move(impl)));
}

std::shared_ptr<JITModule> JITModule::load(const std::string& object,
                                           const std::vector<std::string>& names,
                                           const Target& target, std::string ll,
                                           const std::string& module_name) {
  std::lock_guard<std::mutex> lock(llvm_mutex());
  auto impl = std::make_unique<Impl>();
  impl->target = target;
  impl->ll = std::move(ll);
  impl->object = object;
  std::unique_ptr<llvm::TargetMachine> tm = create_target_machine(target);
  impl->jit = make_jit(target, tm->createDataLayout());
  // A saved object comes from a file: what LLVM says about it is the user's problem to fix
  // (another file, or a rebuild), not a bug here.
  if (llvm::Error err =
          impl->jit->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object, module_name))) {
    value_error("module '", module_name,
                "': the saved object code is not loadable: ", llvm::toString(std::move(err)));
  }
  for (const std::string& name : names) {
    auto addr = impl->jit->lookup(kernel_symbol(name));
    if (!addr) {
      value_error("module '", module_name, "': cannot link function '", name,
                  "' of the saved object code: ", llvm::toString(addr.takeError()),
                  " (a symbol it needs, e.g. from libm or libmvec, is missing in this process)");
    }
    impl->names.push_back(name);
    impl->functions[name] = addr->toPtr<KernelFn>();
  }
  return std::shared_ptr<JITModule>(new JITModule(std::move(impl)));
}

const std::string& JITModule::object_code() const { return impl_->object; }

JITModule::KernelFn JITModule::lookup(const std::string& name) const {
  auto it = impl_->functions.find(name);
  return it == impl_->functions.end() ? nullptr : it->second;
}

const std::vector<std::string>& JITModule::function_names() const { return impl_->names; }

const Target& JITModule::target() const { return impl_->target; }

std::string JITModule::get_source(const std::string& fmt) const {
  if (fmt != "ll" && fmt != "asm" && fmt != "s") {
    value_error("unknown source format '", fmt, "'; expected one of: \"ll\" (LLVM IR), \"asm\" ",
                "or \"s\" (assembly)");
  }
  std::lock_guard<std::mutex> source_lock(impl_->source_mu);
  if (impl_->ll.empty() && impl_->bitcode.empty()) {
    value_error("this module was loaded from a file saved without its LLVM IR, so it has no '", fmt,
                "' source; save it with include_ir=True to keep it");
  }
  if (fmt == "ll") {
    if (impl_->ll.empty()) {
      std::lock_guard<std::mutex> lock(llvm_mutex());
      llvm::LLVMContext ctx;
      impl_->ll = print_module(*read_bitcode(impl_->bitcode, ctx));
    }
    return impl_->ll;
  }
  if (!impl_->asm_text.empty()) return impl_->asm_text;
  // Assembly is rarely asked for, so it is made on demand from the optimised IR, which gives the
  // same code as the object the JIT loaded.
  std::lock_guard<std::mutex> lock(llvm_mutex());
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> module;
  if (!impl_->bitcode.empty()) {
    module = read_bitcode(impl_->bitcode, ctx);
  } else {
    llvm::SMDiagnostic diag;
    module = llvm::parseAssemblyString(impl_->ll, diag, ctx);
    if (!module) {
      std::string message;
      llvm::raw_string_ostream os(message);
      diag.print("pytvmbridge", os);
      os.flush();
      internal_error(__FILE__, __LINE__, "cannot re-read the module's IR: ", message);
    }
  }
  std::unique_ptr<llvm::TargetMachine> tm = create_target_machine(impl_->target);
  llvm::SmallVector<char, 0> text =
      emit_machine_code(*module, *tm, llvm::CodeGenFileType::AssemblyFile);
  impl_->asm_text.assign(text.begin(), text.end());
  return impl_->asm_text;
}

}  // namespace ptb
