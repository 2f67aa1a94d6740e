#include "python/bindings.h"

namespace ptb::python {

void bind_ir(py::module_& m) {}

}  // namespace ptb::python
