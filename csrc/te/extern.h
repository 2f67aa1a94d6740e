// Extern operations (TVM's te.extern): outputs computed by a packed function registered at run
// time (runtime/packed_func.h) instead of by a loop nest. The stage lowers to one CallPacked
// statement passing the inputs and outputs (as DLTensors) and scalars, in the order given.
#pragma once

#include <string>
#include <vector>

#include "te/operation.h"

namespace ptb {

// One argument of the call: input `input`, output `output`, or the scalar `scalar`.
struct ExternArg {
  int input = -1;
  int output = -1;
  Expr scalar;
};

struct ExternOpNode : OperationNode {
  ExternOpNode(std::string n, std::vector<Tensor> in, std::vector<std::vector<Expr>> s,
               std::vector<DataType> t, std::string f, std::vector<ExternArg> a)
      : OperationNode(OpKind::kExtern, std::move(n)),
        inputs(std::move(in)),
        shapes(std::move(s)),
        dtypes(std::move(t)),
        func(std::move(f)),
        args(std::move(a)) {}
  int num_outputs() const override { return static_cast<int>(shapes.size()); }
  DataType output_dtype(int i) const override { return dtypes.at(static_cast<size_t>(i)); }
  const std::vector<Expr>& output_shape(int i) const override {
    return shapes.at(static_cast<size_t>(i));
  }
  std::vector<Tensor> input_tensors() const override { return inputs; }

  const std::vector<Tensor> inputs;
  const std::vector<std::vector<Expr>> shapes;
  const std::vector<DataType> dtypes;
  const std::string func;  // the packed function's registered name
  const std::vector<ExternArg> args;
};

// The extern `op` is, or nullptr.
const ExternOpNode* as_extern(const Operation& op);

// Builds an extern operation; ValueError/TypeError for bad shapes, dtypes or argument indices.
Operation make_extern(const std::string& name, std::vector<Tensor> inputs,
                      std::vector<std::vector<Expr>> shapes, std::vector<DataType> dtypes,
                      const std::string& func, std::vector<ExternArg> args);

}  // namespace ptb
