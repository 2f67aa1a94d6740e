// Conversions between Python objects and IR handles, shared by every binding file (bind_ir.cc
// registers the Python classes; bind_schedule.cc, bind_build.cc and bind_tc.cc only convert).
//
// IR nodes are immutable std::shared_ptr handles, so each Python object is a small struct that
// holds one handle. IterVar derives from Expr (holding its var) so that an axis is usable wherever
// an expression is, as in TVM; its equality and hash, like Tensor's and Operation's, follow node
// identity, so two wraps of the same node are equal and hash alike.
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

#include "ir/expr.h"
#include "te/operation.h"

namespace ptb::python {

namespace py = pybind11;

// Python int -> int32 const (int64 if it does not fit), float -> float32, bool -> bool const,
// a NumPy scalar -> a const of its own dtype, Expr object as is, IterVar -> its var.
// `what` names the argument in the TypeError.
Expr to_expr(py::handle obj, const char* what);
Tensor to_tensor(py::handle obj, const char* what);
Operation to_operation(py::handle obj, const char* what);  // an Operation object, or a Tensor's op
IterVar to_iter_var(py::handle obj, const char* what);
py::object wrap_expr(const Expr& e);  // None for an undefined Expr
py::object wrap_tensor(const Tensor& t);
py::object wrap_operation(const Operation& op);
py::object wrap_iter_var(const IterVar& iv);  // two wraps of the same IterVar compare equal

// A dtype given as a string ("float32"), a NumPy dtype or scalar type, or a torch dtype.
DataType to_dtype(py::handle obj, const char* what);
// A number as a constant of dtype t, converted as NumPy's astype would (a float truncates toward
// zero for an integer dtype); an integer out of t's range is an OverflowError, as in NumPy 2.
Expr to_const(py::handle value, DataType t, const char* what);
// A shape: one int / Expr, or a sequence of them. Constant dimensions become int32 constants.
std::vector<Expr> to_shape(py::handle obj, const char* what);
// Several operands of one operation, with Python scalars promoted as API.md section 1 says: a
// Python number takes the dtype of the first expression among `objs` (a float with an integer
// expression promotes the integer expressions to float64, as NumPy does). Without any expression,
// each number gets its default dtype. Returns false (and leaves `out` unspecified) when an object
// is neither an expression nor a number.
bool match_operands(const std::vector<py::handle>& objs, std::vector<Expr>* out);
std::vector<Expr> to_matched_exprs(const std::vector<py::handle>& objs, const char* what);

// The Python-side objects (registered by bind_ir.cc). Other binding files should go through the
// functions above rather than these structs.
struct PyExpr {
  Expr e;
};
struct PyVar : PyExpr {};
struct PyIntImm : PyExpr {};
struct PyFloatImm : PyExpr {};
struct PyIterVar : PyExpr {
  IterVar iv;
};
struct PyRange {
  Expr min, extent;
};
struct PyTensor {
  Tensor t;
};
struct PyOperation {
  Operation op;
};

}  // namespace ptb::python
