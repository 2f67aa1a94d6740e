#include "python/bindings.h"

namespace ptb::python {

void bind_build(py::module_& m) {}

}  // namespace ptb::python
