// lower(), build() and the compiled Module (API.md section 3).
#include <pybind11/stl.h>

#include <memory>

#include "autoschedule/loop_features.h"
#include "codegen/jit.h"
#include "driver/build.h"
#include "ir/printer.h"
#include "lower/lower.h"
#include "python/bindings.h"
#include "python/dlpack_import.h"
#include "python/gil.h"
#include "python/ir_casters.h"
#include "runtime/thread_pool.h"
#include "support/error.h"

namespace ptb::python {

namespace {

std::vector<Tensor> to_args(py::handle obj) {
  if (!py::isinstance<py::list>(obj) && !py::isinstance<py::tuple>(obj)) {
    type_error("args must be a list of tensors, got ",
               py::str(py::type::of(obj)).cast<std::string>());
  }
  std::vector<Tensor> out;
  size_t i = 0;
  for (py::handle item : obj) {
    std::string what = "args[" + std::to_string(i++) + "]";
    out.push_back(to_tensor(item, what.c_str()));
  }
  return out;
}

std::string describe_lowered(const LoweredFunc& f) {
  std::string text = "def " + f.name + "(";
  for (size_t i = 0; i < f.args.size(); ++i) {
    const Buffer& b = f.args[i];
    text += (i ? ", " : "") + b->name + ": " + b->dtype.str() + "[";
    for (size_t d = 0; d < b->shape.size(); ++d) text += (d ? ", " : "") + to_string(b->shape[d]);
    text += "]";
  }
  return text + "):\n" + to_string(f.body);
}

// The kernel's name becomes a symbol of the generated code: a NUL would cut it short, and the
// linker would look for a symbol that does not exist.
void check_function_name(const std::string& name) {
  if (name.find('\0') != std::string::npos) {
    value_error("name must not contain a NUL character ('\\0'), got ",
                py::repr(py::str(name)).cast<std::string>());
  }
}

}  // namespace

void bind_build(py::module_& m) {
  py::class_<LoweredFunc>(m, "LoweredFunc")
      .def_readonly("name", &LoweredFunc::name)
      .def("__str__", &describe_lowered)
      .def("__repr__", &describe_lowered);

  // dynamic_attr: tvm.build keeps the tensor expressions on the module (pytvmbridge/autodiff
  // derives the gradients of its to_pytorch/to_jax functions from them).
  py::class_<Module, std::shared_ptr<Module>> module(m, "Module", R"doc(
A compiled kernel, made by build(): call it with one array per argument (inputs, then the
outputs it writes), from any framework (NumPy, PyTorch, JAX, anything with __dlpack__).

Example:
    >>> import numpy as np, pytvmbridge as tvm
    >>> A = tvm.placeholder((4,), name="A")
    >>> B = tvm.compute((4,), lambda i: A[i] * 2.0, name="B")
    >>> f = tvm.build(tvm.create_schedule(B.op), [A, B], name="double")
    >>> f
    <pytvmbridge.Module 'double' (A: float32[4], B: float32[4] output)>
    >>> b = np.zeros(4, "float32"); f(np.arange(4, dtype="float32"), b); b
    array([0., 2., 4., 6.], dtype=float32)
)doc",
                                                     py::dynamic_attr());
  module.def("__call__", &call_module)
      .def_property_readonly("entry_name", &Module::name)
      .def_property_readonly("name", &Module::name)
      .def_property_readonly("lowered", &Module::lowered_text)
      .def_property_readonly("arg_names",
                             [](const Module& mod) {
                               std::vector<std::string> names;
                               for (const ArgSpec& a : mod.args()) names.push_back(a.name);
                               return names;
                             })
      .def_property_readonly("arg_dtypes",
                             [](const Module& mod) {
                               std::vector<std::string> out;
                               for (const ArgSpec& a : mod.args()) out.push_back(a.dtype.str());
                               return out;
                             })
      .def_property_readonly("arg_shapes",
                             [](const Module& mod) {
                               py::list out;
                               for (const ArgSpec& a : mod.args()) {
                                 py::list dims;
                                 for (const DimSpec& d : a.dims) {
                                   if (d.kind == DimSpec::Kind::kConst) {
                                     dims.append(d.value);
                                   } else {
                                     dims.append(to_string(d.expr));
                                   }
                                 }
                                 out.append(py::tuple(dims));
                               }
                               return out;
                             })
      .def_property_readonly("target", [](const Module& mod) { return mod.jit().target().str(); })
      .def_property_readonly("compile_seconds", &Module::compile_seconds)
      .def_property_readonly("loaded", &Module::loaded,
                             "Whether the module was read from a module file (the compile "
                             "cache's, export_library's): compile_seconds is then the load's.")
      .def_property_readonly("is_output",
                             [](const Module& mod) {
                               std::vector<bool> out;
                               for (const ArgSpec& a : mod.args()) out.push_back(a.is_output);
                               return out;
                             })
      .def(
          "output_shapes",
          [](const Module& mod, py::args inputs) {
            std::vector<NDArray> arrays;
            std::vector<const DLTensor*> tensors;
            std::vector<size_t> input_args;  // the argument index of each input
            for (size_t i = 0; i < mod.args().size(); ++i) {
              if (!mod.args()[i].is_output) input_args.push_back(i);
            }
            for (size_t k = 0; k < inputs.size(); ++k) {
              size_t i = k < input_args.size() ? input_args[k] : mod.args().size() + k;
              arrays.push_back(import_array(inputs[k], ArgName(mod, i)));
            }
            for (const NDArray& a : arrays) tensors.push_back(&a.dl_tensor());
            return mod.output_shapes(tensors.data(), tensors.size());
          },
          "The shapes of the outputs, bound from the inputs alone.")
      .def(
          "get_source",
          [](const Module& mod, py::handle format) {
            if (!py::isinstance<py::str>(format)) {
              type_error("get_source(): fmt must be a string such as 'll' or 'asm', got ",
                         std::string(py::str(py::type::of(format).attr("__name__"))));
            }
            auto fmt = format.cast<std::string>();
            if (fmt == "lowered" || fmt == "tir") return mod.lowered_text();
            return mod.jit().get_source(fmt);
          },
          py::arg("fmt") = "ll",
          "The module's code as text: 'll' (LLVM IR), 'asm' (assembly), 'lowered' (loop nest).");
  // After every def: setting __call__ resets the type's tp_call.
  set_module_call(module);  // module(*arrays) runs through the Caller (bind_bridges.cc)

  // Without the GIL: resizing waits for a parallel loop another thread runs, and every other
  // Python thread would stall for that long.
  m.def(
      "set_num_threads", [](int n) { without_gil([&] { set_num_threads(n); }); }, py::arg("n"),
      "Sets the number of threads parallel loops use (at least 1).");
  m.def("get_num_threads", &get_num_threads, "The number of threads parallel loops use.");
  // `with _core.ThreadLimit(n):` kernels called on this thread in the block use at most n of the
  // pool's threads (a torch.compile model's options={"num_threads": n}); the pool is unchanged.
  // Held in a unique_ptr: a ThreadLimit restores the previous limit when it is destroyed, so
  // it exists only between __enter__ and __exit__.
  struct PyThreadLimit {
    int n;
    std::unique_ptr<ThreadLimit> active;
  };
  py::class_<PyThreadLimit>(m, "ThreadLimit")
      .def(py::init([](int n) {
             if (n < 1) value_error("ThreadLimit(", n, "): the number of threads must be >= 1");
             return PyThreadLimit{n, nullptr};
           }),
           py::arg("n"))
      .def("__enter__",
           [](PyThreadLimit& self) {
             if (self.active) value_error("a ThreadLimit is not reentrant");
             self.active = std::make_unique<ThreadLimit>(self.n);
           })
      .def("__exit__", [](PyThreadLimit& self, py::args) { self.active.reset(); });

  m.def(
      "lower",
      [](const Schedule& sch, py::handle args, const std::string& name) {
        check_function_name(name);
        return lower(sch, to_args(args), name);
      },
      py::arg("schedule"), py::arg("args"), py::arg("name") = "main");
  // The tuner's cost-model features of a candidate (autoschedule/loop_features.h): of the loop
  // nest lowered up to unrolling, or of a lowered function.
  m.def(
      "loop_features",
      [](const Schedule& sch, py::handle args) {
        return loop_features(lower_structure(sch, to_args(args), "main").body);
      },
      py::arg("schedule"), py::arg("args"));
  m.def(
      "lowered_loop_features", [](const LoweredFunc& f) { return loop_features(f.body); },
      py::arg("lowered"));
  m.def("loop_feature_names", &loop_feature_names);
  m.def(
      "build",
      [](const Schedule& sch, py::handle args, const std::string& target, const std::string& name) {
        check_function_name(name);
        std::vector<Tensor> tensors = to_args(args);
        // Compiling takes milliseconds: let other threads run.
        return without_gil([&] { return build_module(sch, tensors, target, name); });
      },
      py::arg("schedule"), py::arg("args"), py::arg("target") = "llvm",
      py::arg("name") = "default_function");
}

}  // namespace ptb::python
