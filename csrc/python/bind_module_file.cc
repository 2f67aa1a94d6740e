// Saving and loading compiled Modules (API.md section 9): the bytes of runtime/module_file.h.
// pytvmbridge/runtime.py turns them into files, pytvmbridge/cache.py into cache entries.
#include <pybind11/stl.h>

#include "autoschedule/auto_schedule.h"
#include "codegen/cpu_features.h"
#include "codegen/jit.h"
#include "codegen/target.h"
#include "driver/build.h"
#include "driver/fingerprint.h"
#include "lower/lower.h"
#include "python/bindings.h"
#include "python/gil.h"
#include "python/ir_casters.h"
#include "runtime/module_file.h"
#include "source_hash.h"
#include "support/stack.h"

namespace ptb::python {

namespace {

std::vector<Tensor> to_tensors(const py::list& args) {
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string what = "args[" + std::to_string(i) + "]";
    tensors.push_back(to_tensor(args[i], what.c_str()));
  }
  return tensors;
}

}  // namespace

void bind_module_file(py::module_& m) {
  m.def(
      "save_module_bytes",
      [](const Module& module, const std::string& producer, bool include_ir, bool include_generic) {
        std::string bytes = without_gil(
            [&] { return save_module_bytes(module, producer, include_ir, include_generic); });
        return py::bytes(bytes);
      },
      py::arg("module"), py::arg("producer"), py::arg("include_ir") = true,
      py::arg("include_generic") = true,
      "The saved form of a Module: object code and manifest (runtime/module_file.h).");
  m.def(
      "load_module_bytes",
      [](const py::bytes& data, const std::string& origin) {
        std::string bytes = data;
        return without_gil([&] { return load_module_bytes(bytes, origin); });
      },
      py::arg("data"), py::arg("origin") = "<bytes>",
      "A callable Module from save_module_bytes' bytes, linked without compiling.");
  m.def(
      "load_cached_module_bytes",
      [](const py::bytes& data, const std::string& origin, const Schedule& sch,
         const py::list& args, const std::string& target, const std::string& name) {
        std::string bytes = data;
        std::vector<Tensor> tensors = to_tensors(args);
        Target tgt = Target::parse(target);
        // The strided variant, when the entry lacks it, is lowered and compiled on demand as
        // build() would have.
        GenericCompiler compile_generic = [sch, tensors, tgt, name] {
          return on_deep_stack(
              [&] { return compile_strided_variant(lower(sch, tensors, name), tgt, name); });
        };
        return without_gil([&] { return load_module_bytes(bytes, origin, compile_generic); });
      },
      py::arg("data"), py::arg("origin"), py::arg("schedule"), py::arg("args"), py::arg("target"),
      py::arg("name"),
      "load_module_bytes for a compile-cache entry of build(schedule, args, target, name).");
  m.def(
      "load_cached_auto_module_bytes",
      [](const py::bytes& data, const std::string& origin, const py::list& args,
         const std::string& target, const std::string& name) {
        std::string bytes = data;
        std::vector<Tensor> tensors = to_tensors(args);
        Target tgt = Target::parse(target);
        // An entry of an automatically scheduled build (pytvmbridge/cache.py build_auto): the
        // schedule is made again, here, only if a strided call needs the variant it lacks, so
        // that a hit schedules nothing.
        GenericCompiler compile_generic = [tensors, tgt, name] {
          return on_deep_stack([&] {
            std::vector<Operation> outputs;
            for (const Tensor& t : tensors) {
              if (t.op()->kind != OpKind::kPlaceholder) outputs.push_back(t.op());
            }
            Schedule sch = create_schedule(outputs);
            autoschedule::auto_schedule(sch, tgt, nullptr);
            return compile_strided_variant(lower(sch, tensors, name), tgt, name);
          });
        };
        return without_gil([&] { return load_module_bytes(bytes, origin, compile_generic); });
      },
      py::arg("data"), py::arg("origin"), py::arg("args"), py::arg("target"), py::arg("name"),
      "load_module_bytes for a compile-cache entry of build(auto_schedule(create_schedule("
      "outputs), target), args, target, name).");
  m.def(
      "read_module_manifest",
      [](const py::bytes& data, const std::string& origin) {
        std::string bytes = data;
        return read_module_manifest(bytes, origin);
      },
      py::arg("data"), py::arg("origin") = "<bytes>", "The JSON manifest of a module file.");
  m.def("host_cpu_features", &host_cpu_features,
        "The CPU features LLVM detects on this host, each with whether it is present.");
  m.def(
      "build_fingerprint",
      [](const Schedule& sch, const py::list& args, const std::string& target,
         const std::string& name, const LoweredFunc* lowered) {
        std::vector<Tensor> tensors = to_tensors(args);
        return without_gil([&] {
          return lowered != nullptr ? build_fingerprint(sch, tensors, *lowered, target, name)
                                    : build_fingerprint(sch, tensors, target, name);
        });
      },
      py::arg("schedule"), py::arg("args"), py::arg("target"), py::arg("name"),
      py::arg("lowered") = py::none(),
      "The canonical text of a build, which the compile cache hashes (driver/fingerprint.h); "
      "`lowered`: lower(schedule, args) done already, not done again.");
  m.def(
      "dag_fingerprint",
      [](const py::list& args, const std::string& target, const std::string& name) {
        std::vector<Tensor> tensors = to_tensors(args);
        return without_gil([&] { return dag_fingerprint(tensors, target, name); });
      },
      py::arg("args"), py::arg("target"), py::arg("name"),
      "The canonical text of a computation before scheduling, or '' when it cannot be described "
      "completely (driver/fingerprint.h).");
  m.attr("source_hash") = PTB_SOURCE_HASH;
  m.def("llvm_version", &llvm_version, "The version of LLVM that generates the code.");
  m.attr("module_file_version") = kModuleFileVersion;
  m.def("host_cpu_name", &host_cpu_name, "This host's CPU as LLVM names it.");
}

}  // namespace ptb::python
