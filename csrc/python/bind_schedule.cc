#include "python/bindings.h"

namespace ptb::python {

void bind_schedule(py::module_& m) {}

}  // namespace ptb::python
