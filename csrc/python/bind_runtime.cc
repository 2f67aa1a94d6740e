#include "python/bindings.h"

namespace ptb::python {

void bind_runtime(py::module_& m) {}

}  // namespace ptb::python
