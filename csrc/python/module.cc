#include "python/bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "pytvmbridge's C++ core: IR, schedules, lowering, LLVM JIT and the DLPack runtime";
  ptb::python::bind_errors(m);
  ptb::python::bind_runtime(m);
  ptb::python::bind_ir(m);
  ptb::python::bind_schedule(m);
  ptb::python::bind_autoschedule(m);
  ptb::python::bind_build(m);
  ptb::python::bind_reducer(m);
  ptb::python::bind_scan(m);
  ptb::python::bind_extern(m);
  ptb::python::bind_tc(m);
  ptb::python::bind_bridges(m);
  ptb::python::bind_module_file(m);
  ptb::python::bind_autodiff(m);
}
