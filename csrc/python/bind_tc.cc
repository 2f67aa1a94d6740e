#include "python/bindings.h"

namespace ptb::python {

void bind_tc(py::module_& m) {}

}  // namespace ptb::python
