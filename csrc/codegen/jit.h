// Compiled kernels: lowered functions -> LLVM IR -> O3 -> machine code in this process.
//
// A JITModule owns the code of one build (an LLJIT instance); its function pointers stay valid
// as long as it lives. Compiling is thread-safe (LLVM work is serialised by a global mutex);
// lookup and get_source may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "lower/lowered_func.h"

namespace ptb {

class JITModule {
 public:
  // The calling convention of lower/lowered_func.h.
  using KernelFn = int32_t (*)(void* const* data, const int64_t* scalars);

  // Compiles the functions into one module. ValueError for two functions of the same name;
  // InternalError for IR that LLVM rejects (a bug in lowering or codegen).
  static std::shared_ptr<JITModule> compile(const std::vector<LoweredFunc>& funcs,
                                            const Target& target, const std::string& module_name);

  // Links an object made by compile() (object_code()) without any lowering or code generation:
  // what runtime/module_file.h loads. `ll` may be empty (get_source("ll") then says so).
  // ValueError when the object is not one, or names a symbol this process cannot provide.
  static std::shared_ptr<JITModule> load(const std::string& object,
                                         const std::vector<std::string>& names,
                                         const Target& target, std::string ll,
                                         const std::string& module_name);

  ~JITModule();
  JITModule(const JITModule&) = delete;
  JITModule& operator=(const JITModule&) = delete;

  // The entry point of a function given to compile(), or nullptr if there is none by that name.
  KernelFn lookup(const std::string& name) const;
  // The names of the functions given to compile(), in order.
  const std::vector<std::string>& function_names() const;
  const Target& target() const;
  // The relocatable object file the JIT linked (ELF on Linux), kept for saving.
  const std::string& object_code() const;

  // "ll": the optimised LLVM IR; "asm" (or "s"): the assembly of that IR for the target.
  // ValueError for any other format, listing these.
  std::string get_source(const std::string& fmt) const;

 private:
  struct Impl;
  explicit JITModule(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ptb
