// Tensor operations: placeholders (inputs) and computes (a body expression over axes, possibly a
// reduction). A Tensor is one output of an operation. Every front end (the Python DSL, TC) builds
// these; everything after them (schedule, lowering, codegen) is shared.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "ir/expr.h"

namespace ptb {

class Tensor;

// kExtern: te/extern.h (a scan is a kCompute: te/scan.h).
enum class OpKind : uint8_t { kPlaceholder, kCompute, kExtern };

struct OperationNode {
  OperationNode(OpKind k, std::string n) : kind(k), name(std::move(n)) {}
  virtual ~OperationNode() = default;
  const OpKind kind;
  const std::string name;

  virtual int num_outputs() const = 0;
  virtual DataType output_dtype(int i) const = 0;
  virtual const std::vector<Expr>& output_shape(int i) const = 0;
  // The tensors this operation reads, each once, in order of first use.
  virtual std::vector<Tensor> input_tensors() const = 0;
};

struct PlaceholderOpNode : OperationNode {
  PlaceholderOpNode(std::string n, std::vector<Expr> s, DataType t)
      : OperationNode(OpKind::kPlaceholder, std::move(n)), shape(std::move(s)), dtype(t) {}
  int num_outputs() const override { return 1; }
  DataType output_dtype(int) const override { return dtype; }
  const std::vector<Expr>& output_shape(int) const override { return shape; }
  std::vector<Tensor> input_tensors() const override;
  const std::vector<Expr> shape;  // integer expressions: constants or Vars (symbolic sizes)
  const DataType dtype;
};

// One value of a compute's `attrs` (TVM's compute(..., attrs=)): annotations that schedules read
// (a layout name, strides), never part of the computation.
using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>>;
using OpAttrs = std::map<std::string, AttrValue>;

struct ComputeOpNode : OperationNode {
  ComputeOpNode(std::string n, std::vector<IterVar> a, std::vector<IterVar> r, std::vector<Expr> b,
                std::vector<Expr> s, std::string t = "", OpAttrs at = {})
      : OperationNode(OpKind::kCompute, std::move(n)),
        axis(std::move(a)),
        reduce_axis(std::move(r)),
        body(std::move(b)),
        shape(std::move(s)),
        tag(std::move(t)),
        attrs(std::move(at)) {}
  int num_outputs() const override { return static_cast<int>(body.size()); }
  DataType output_dtype(int i) const override { return body.at(i).dtype(); }
  const std::vector<Expr>& output_shape(int) const override { return shape; }
  std::vector<Tensor> input_tensors() const override;
  bool is_reduction() const { return !reduce_axis.empty(); }

  const std::vector<IterVar> axis;         // one data-parallel axis per output dimension
  const std::vector<IterVar> reduce_axis;  // the reduce axes of the body's Reduce, if any
  const std::vector<Expr> body;            // one per output; a Reduce only at the top
  const std::vector<Expr> shape;
  // What kind of operator this is ("elemwise", "broadcast", "injective", "conv2d_nchw"...), as
  // TVM's TOPI tags its computes, so that automatic schedules can recognise operators.
  const std::string tag;
  const OpAttrs attrs;

 private:
  // input_tensors(), found once: the body is immutable, and the scheduler asks for every stage
  // over and over (each walk of a Winograd transform's body visits 600 reads).
  mutable std::once_flag inputs_once_;
  mutable std::vector<Tensor> inputs_;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(Operation op, int value_index) : op_(std::move(op)), value_index_(value_index) {}

  const Operation& op() const { return op_; }
  int value_index() const { return value_index_; }
  bool defined() const { return op_ != nullptr; }
  const std::string& name() const { return op_->name; }
  DataType dtype() const { return op_->output_dtype(value_index_); }
  const std::vector<Expr>& shape() const { return op_->output_shape(value_index_); }
  int ndim() const { return static_cast<int>(shape().size()); }
  // A read of this tensor: A(i, j). Checks the index count.
  Expr operator()(std::vector<Expr> indices) const;
  bool operator==(const Tensor& o) const { return op_ == o.op_ && value_index_ == o.value_index_; }
  bool operator!=(const Tensor& o) const { return !(*this == o); }

 private:
  Operation op_;
  int value_index_ = 0;
};

// An input of `shape` and `dtype`; shape entries are integer constants or Vars.
Tensor placeholder(std::vector<Expr> shape, DataType dtype, const std::string& name);

// Builds a compute from its axes and body. `axis` must have one IterVar per dimension of `shape`;
// reduce axes are collected from a top-level Reduce. Throws ValueError/TypeError on bad input.
// `tag` and `attrs` annotate the operation (see ComputeOpNode).
Operation make_compute(const std::string& name, std::vector<Expr> shape, std::vector<IterVar> axis,
                       std::vector<Expr> body, std::string tag = "", OpAttrs attrs = {});
// Convenience for front ends: creates the axes (named i0, i1... or `axis_names`), calls `fbody`.
template <typename F>
Tensor compute(std::vector<Expr> shape, F fbody, const std::string& name,
               std::vector<std::string> axis_names = {});

}  // namespace ptb

#include "te/operation_inl.h"
