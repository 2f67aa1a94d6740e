#include "te/extern.h"

#include "support/error.h"

namespace ptb {

const ExternOpNode* as_extern(const Operation& op) {
  return op && op->kind == OpKind::kExtern ? static_cast<const ExternOpNode*>(op.get()) : nullptr;
}

Operation make_extern(const std::string& name, std::vector<Tensor> inputs,
                      std::vector<std::vector<Expr>> shapes, std::vector<DataType> dtypes,
                      const std::string& func, std::vector<ExternArg> args) {
  if (shapes.empty()) value_error("extern '", name, "' has no output");
  if (dtypes.size() != shapes.size()) {
    value_error("extern '", name, "' has ", shapes.size(), " output shape(s) but ", dtypes.size(),
                " dtype(s)");
  }
  for (size_t k = 0; k < shapes.size(); ++k) {
    // Checks the shape and dtype as a placeholder's.
    placeholder(shapes[k], dtypes[k], name);
  }
  if (func.empty()) value_error("extern '", name, "' calls a packed function without a name");
  for (const ExternArg& a : args) {
    if (a.input >= static_cast<int>(inputs.size()) || a.output >= static_cast<int>(shapes.size()) ||
        (a.input >= 0) + (a.output >= 0) + a.scalar.defined() != 1) {
      value_error("an argument of extern '", name, "' is not one of its inputs or outputs");
    }
    if (a.scalar.defined() && (!a.scalar.dtype().is_scalar() || a.scalar.dtype().is_handle())) {
      type_error("a scalar argument of extern '", name, "' must be a number, found ",
                 a.scalar.dtype().str());
    }
  }
  return std::make_shared<ExternOpNode>(name, std::move(inputs), std::move(shapes),
                                        std::move(dtypes), func, std::move(args));
}

}  // namespace ptb
