#include "codegen/jit.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <sstream>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>
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
#include <llvm/Linker/Linker.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/SmallVectorMemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/SubtargetFeature.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include "codegen/codegen_llvm.h"
#include "codegen/libmvec.h"
#include "codegen/llvm_target.h"
#include "codegen/optimize.h"
#include "codegen/split_link.h"
#include "codegen/target.h"
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
// Set in the child of a fork() (see compile_threads).
std::atomic<bool> forked_child{false};

std::mutex& llvm_mutex() {
  static std::mutex* mu = [] {
    auto* m = new std::mutex;
    pthread_atfork([] { llvm_mutex().lock(); }, [] { llvm_mutex().unlock(); },
                   [] {
                     forked_child.store(true, std::memory_order_relaxed);
                     llvm_mutex().unlock();
                   });
    return m;
  }();
  return *mu;
}

// The fork handlers are registered when the library is loaded, so that a process forked
// before its first build still knows it is a child.
const bool fork_handlers_registered = (llvm_mutex(), true);

// The TargetMachines builds use, one per target string and build thread, kept for the process:
// LLVM builds a TargetMachine's subtarget (X86's instruction, register and lowering tables) on
// first use, which costs about as much as optimising and compiling a small kernel, and a
// TargetMachine made per build paid it every time. Slot 0 is the building thread's, slot 1 the
// second thread's of a split build; both are used only while a build holds llvm_mutex (the
// second thread is joined before the build releases it), one thread per slot. Never destroyed
// (a build may run while the interpreter exits). Codegen rewrites the options from each
// function's attributes (TargetMachine::resetTargetOptions), so each use starts from the
// options the target was made with: the same code as a TargetMachine made for the build.
struct CachedTargetMachine {
  std::unique_ptr<llvm::TargetMachine> tm;
  llvm::TargetOptions options;
};

llvm::TargetMachine& build_target_machine(const Target& target, int slot) {
  static auto* cache = new std::unordered_map<std::string, CachedTargetMachine>[2];
  CachedTargetMachine& entry = cache[slot][target.str()];
  if (!entry.tm) {
    entry.tm = create_target_machine(target);
    entry.options = entry.tm->Options;
  }
  entry.tm->Options = entry.options;
  return *entry.tm;
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

// Whether a core is free at this moment: the number of runnable threads in the system
// (/proc/loadavg's fourth field, this one included) is below the number of hardware threads.
// True when it cannot be read.
bool core_free_now() {
  static const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return true;
  double l1 = 0, l5 = 0, l15 = 0;
  unsigned running = 0, total = 0;
  int read = std::fscanf(f, "%lf %lf %lf %u/%u", &l1, &l5, &l15, &running, &total);
  std::fclose(f);
  return read != 5 || running < cores;
}

// How many threads one build may optimise and compile on. Never 2 in a process forked from one
// that had loaded this library: forked workers (autotvm's LocalRunner) build their candidates
// side by side already. Otherwise PYTVMBRIDGE_COMPILE_THREADS=1 or 2 says; by default 2 where
// the machine has two hardware threads or more and one of them is idle when the build starts.
// A split build costs CPU time: 7-10% more when its threads take turns on a busy machine (a
// second TargetMachine and pipeline set-up, a copy of the functions), 20-30% more when they run
// at once on this project's 2-core VM (each runs slower beside the other), for 10-15% less
// wall time of a convolution's build on an idle machine. So it runs only on a free core, where
// that CPU would go unused. Either way the machine code is the same.
// What PYTVMBRIDGE_COMPILE_THREADS asks for (read once; 0: decided per build). Every build reads
// it, so a bad value is an error at the first build, not only at the first long one.
int requested_compile_threads() {
  static const int threads = [] {
    const char* env = std::getenv("PYTVMBRIDGE_COMPILE_THREADS");
    if (env != nullptr && *env != '\0') {
      if (std::strcmp(env, "1") == 0) return 1;
      if (std::strcmp(env, "2") == 0) return 2;
      value_error("PYTVMBRIDGE_COMPILE_THREADS: expected 1 or 2 (or unset), found '", env, "'");
    }
    return std::thread::hardware_concurrency() >= 2 ? 0 : 1;  // 0: decided per build
  }();
  return threads;
}

int compile_threads() {
  const int threads = requested_compile_threads();
  if (threads == 1 || forked_child.load(std::memory_order_relaxed)) return 1;
  if (threads == 2) return 2;
  return core_free_now() ? 2 : 1;
}

// Two-thread builds. A module is a kernel and its outlined loop bodies (and packing or padding
// nests), which reach each other only through function pointers handed to the runtime; LLVM's
// optimisation and code generation of one function do not look at another. So the defined
// functions are dealt into two groups of about equal cost, and the second group is optimised
// and compiled on a second thread in a context of its own (LLVM's contexts are not shared
// between threads), from a bitcode copy of its functions. The cost of a function, fitted to opt +
// llc -time-passes of each function alone of ten ops.py kernels (conv2d, dense, softmax,
// layer_norm, relu; 3.5-26 ms each): about 2 ms, plus 6 us per instruction of the IR as
// emitted, plus 0.5 ms per basic block (its loops, which the loop passes, the vectorizer and
// instruction selection work on); in units of one instruction:
constexpr size_t kFunctionCost = 300;
constexpr size_t kBlockCost = 80;
constexpr size_t kMinSplitCost = 3000;

// Returns the names of the functions the second thread compiles; empty when the module is not
// worth splitting (see below) or holds a mutable global, which two objects would each get a
// copy of.
std::unordered_set<std::string> second_thread_functions(const llvm::Module& module) {
  std::unordered_set<std::string> second;
  for (const llvm::GlobalVariable& g : module.globals()) {
    if (!g.isDeclaration() && !g.isConstant()) return second;
  }
  std::vector<std::pair<size_t, const llvm::Function*>> costs;
  for (const llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    costs.emplace_back(kFunctionCost + f.getInstructionCount() + kBlockCost * f.size(), &f);
  }
  if (costs.size() < 2) return second;
  // Largest first, each to the lighter group; the sort is stable, so ties keep module order and
  // the split is deterministic.
  std::stable_sort(costs.begin(), costs.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  size_t first_cost = 0, second_cost = 0;
  for (const auto& [cost, f] : costs) {
    if (first_cost <= second_cost) {
      first_cost += cost;
    } else {
      second_cost += cost;
      second.insert(f->getName().str());
    }
  }
  // The second thread costs about 2-4 ms of CPU (a copy of the functions, a TargetMachine, the
  // pipeline's set-up): worth it only where the build is long (3000 units, about 18 ms of LLVM)
  // and the second group takes a quarter of it or more (not a kernel whose outlined body is
  // nearly all of it, as a dense layer's or softmax's).
  if (first_cost + second_cost < kMinSplitCost || 4 * second_cost < first_cost + second_cost) {
    second.clear();
  }
  return second;
}

// Makes the functions of the other group declarations. Every defined function was made external
// before the module was copied, so that both objects can name the other's functions.
void keep_functions(llvm::Module& module, const std::unordered_set<std::string>& names,
                    bool keep_named) {
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    if ((names.count(f.getName().str()) != 0) != keep_named) f.deleteBody();
  }
}

// The optimised module, one piece per thread linked back into one, for get_source and saving.
std::unique_ptr<llvm::Module> read_parts(const std::vector<std::string>& parts,
                                         llvm::LLVMContext& ctx) {
  std::unique_ptr<llvm::Module> module = read_bitcode(parts.at(0), ctx);
  for (size_t i = 1; i < parts.size(); ++i) {
    PTB_ICHECK(!llvm::Linker::linkModules(*module, read_bitcode(parts[i], ctx)),
               "cannot link the pieces of a two-thread build");
  }
  return module;
}

// What the second thread of a build does: its own context, TargetMachine and pipeline.
struct SecondThread {
  std::string input;  // bitcode of a copy of the module as emitted, with only its functions
  std::unordered_set<std::string> functions;
  std::string name;
  std::string bitcode;  // the optimised piece
  llvm::SmallVector<char, 0> object;
  std::exception_ptr error;

  void run(const Target& target) {
    try {
      PhaseTimer timer("llvm " + name + " (second thread)");
      llvm::LLVMContext ctx;
      std::unique_ptr<llvm::Module> module = read_bitcode(input, ctx);
      llvm::TargetMachine& tm = build_target_machine(target, /*slot=*/1);
      timer.mark("read");
      optimize_module(*module, tm);
      timer.mark("optimize");
      bitcode = write_bitcode(*module);
      timer.mark("bitcode");
      reach_declarations_indirectly(*module);
      object = emit_machine_code(*module, tm, llvm::CodeGenFileType::ObjectFile);
      timer.mark("codegen");
    } catch (...) {
      error = std::current_exception();
    }
  }
};

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
  // The optimised IR of a compiled module, one piece per build thread (none for a loaded one).
  std::vector<std::string> bitcode;
  // What the JIT linked, for Module saving; made from the bitcode on first request when the
  // build was split over two threads (two objects).
  mutable std::string object;
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
  llvm::TargetMachine& tm = build_target_machine(target, /*slot=*/0);
  module->setTargetTriple(tm.getTargetTriple().str());
  module->setDataLayout(tm.createDataLayout());
  timer.mark("target");

  emit_lowered_funcs(*module, tm, target, funcs);
  timer.mark("emit_ir");
  std::string problems;
  llvm::raw_string_ostream problem_stream(problems);
  if (llvm::verifyModule(*module, &problem_stream)) {
    problem_stream.flush();
    internal_error(__FILE__, __LINE__, "codegen produced invalid LLVM IR: ", problems);
  }
  timer.mark("verify");

  std::unique_ptr<SecondThread> second;
  std::thread worker;
  requested_compile_threads();
  std::unordered_set<std::string> names = second_thread_functions(*module);
  if (!names.empty() && compile_threads() > 1) {
    for (llvm::Function& f : *module) {
      if (!f.isDeclaration()) f.setLinkage(llvm::GlobalValue::ExternalLinkage);
    }
    second = std::make_unique<SecondThread>();
    // Only the second thread's functions travel (as bitcode: a context is one thread's).
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> copy =
        llvm::CloneModule(*module, map, [&names](const llvm::GlobalValue* g) {
          return !llvm::isa<llvm::Function>(g) || names.count(g->getName().str()) != 0;
        });
    second->input = write_bitcode(*copy);
    copy.reset();
    second->functions = std::move(names);
    second->name = module_name;
    keep_functions(*module, second->functions, /*keep_named=*/false);
    try {
      worker = std::thread([&second, &target] { second->run(target); });
    } catch (const std::system_error&) {
      second->run(target);  // no thread to be had: the same work, on this one
    }
    timer.mark("split");
  }
  // The second thread is joined before anything below may throw past it.
  std::exception_ptr error;
  llvm::SmallVector<char, 0> object;
  try {
    optimize_module(*module, tm);
    timer.mark("optimize");
    impl->bitcode.push_back(write_bitcode(*module));
    timer.mark("bitcode");
    if (second) reach_declarations_indirectly(*module);
    object = emit_machine_code(*module, tm, llvm::CodeGenFileType::ObjectFile);
    timer.mark("codegen");
  } catch (...) {
    error = std::current_exception();
  }
  if (worker.joinable()) {
    worker.join();
    timer.mark("join");
    if (!error) error = second->error;
  }
  if (error) std::rethrow_exception(error);

  impl->jit = make_jit(target, module->getDataLayout());
  if (second) {
    impl->bitcode.push_back(std::move(second->bitcode));
    check(impl->jit->addObjectFile(std::make_unique<llvm::SmallVectorMemoryBuffer>(
              std::move(second->object), module_name + ".1", /*RequiresNullTerminator=*/false)),
          "cannot add the compiled object to the JIT");
  } else {
    impl->object.assign(object.begin(), object.end());
  }
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

const std::string& JITModule::object_code() const {
  std::lock_guard<std::mutex> source_lock(impl_->source_mu);
  if (impl_->object.empty() && !impl_->bitcode.empty()) {
    // A two-thread build linked two objects: one object of the same code, for saving.
    std::lock_guard<std::mutex> lock(llvm_mutex());
    llvm::LLVMContext ctx;
    std::unique_ptr<llvm::Module> module = read_parts(impl_->bitcode, ctx);
    std::unique_ptr<llvm::TargetMachine> tm = create_target_machine(impl_->target);
    llvm::SmallVector<char, 0> object =
        emit_machine_code(*module, *tm, llvm::CodeGenFileType::ObjectFile);
    impl_->object.assign(object.begin(), object.end());
  }
  return impl_->object;
}

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
      impl_->ll = print_module(*read_parts(impl_->bitcode, ctx));
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
    module = read_parts(impl_->bitcode, ctx);
  } else {
    llvm::SMDiagnostic diag;
    module = llvm::parseAssemblyString(impl_->ll, diag, ctx);
    if (!module) {
      std::string message;
      llvm::raw_string_ostream os(message);
      diag.print("pytvmbridge", os);
      os.flush();
      value_error("the module's IR does not parse (a damaged or edited module file?): ", message);
    }
  }
  // IR read back from a file is checked before code generation, which assumes valid IR.
  std::string problem;
  llvm::raw_string_ostream problem_stream(problem);
  if (llvm::verifyModule(*module, &problem_stream)) {
    problem_stream.flush();
    value_error("the module's IR is not valid (a damaged or edited module file?): ", problem);
  }
  std::unique_ptr<llvm::TargetMachine> tm = create_target_machine(impl_->target);
  llvm::SmallVector<char, 0> text =
      emit_machine_code(*module, *tm, llvm::CodeGenFileType::AssemblyFile);
  impl_->asm_text.assign(text.begin(), text.end());
  return impl_->asm_text;
}

}  // namespace ptb
