// The saved form of a built Module: compiled object code plus a manifest, loadable by a process
// that never lowers or compiles anything (Module.save / runtime.load_module, the compile cache,
// pickling).
//
// Layout (integers little-endian):
//
//   magic        8 bytes  "PTBMOD\r\n"
//   version      u32      kModuleFileVersion; any other is refused
//   reserved     u32      0
//   manifest     u64 n + n bytes of JSON: format version, pytvmbridge and LLVM versions, triple,
//                target, CPU name and features, the functions, the argument signature with
//                symbolic sizes (expressions as JSON trees), the undefined symbols the object
//                imports (libm, libmvec, the backend API) and the lowered IR text
//   objects      u32 count, then per object u64 n + n bytes: the relocatable objects the JIT
//                links (ELF); the manifest's "functions" say which object holds which function
//   llvm_ir      u64 n + n bytes: the optimised LLVM IR (may be empty)
//   crc32        u32      zlib's CRC-32 of every byte before it
//
// Every defect of a file (another format, truncation, a flipped byte, a manifest that does not
// describe a module) is a ValueError saying what is wrong; code for CPU features this host lacks
// is refused before anything runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/module.h"

namespace ptb {

constexpr uint32_t kModuleFileVersion = 1;

// The file's bytes. `producer` is the version of pytvmbridge that saves it (the manifest records
// it); `include_ir` keeps the LLVM IR for get_source("ll"/"asm") after loading. A module compiles
// its strided (generic) variant on demand: `include_generic` compiles it now if needed and saves
// it too; without it, the file holds what is compiled already (the compile cache's choice).
std::string save_module_bytes(const Module& module, const std::string& producer, bool include_ir,
                              bool include_generic = true);

// A callable Module from bytes made by save_module_bytes; `origin` names the file in errors.
// When the file lacks the strided variant, `compile_generic` makes it on the first strided call
// (the cache passes one that lowers the schedule again); without one such a call is a ValueError.
std::shared_ptr<Module> load_module_bytes(const std::string& bytes, const std::string& origin,
                                          GenericCompiler compile_generic = nullptr);

// The LLVM version the code is generated with ("19.1.7"); part of the compile cache's key.
std::string llvm_version();

// The manifest (JSON text) of a module file, after the same checks as loading except linking.
std::string read_module_manifest(const std::string& bytes, const std::string& origin);

}  // namespace ptb
