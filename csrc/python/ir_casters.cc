#include "python/ir_casters.h"

#include <pybind11/gil_safe_call_once.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "ir/op.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "support/error.h"

namespace ptb::python {

namespace {

std::string type_name(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
}

// NumPy is a dependency of the package, but it is imported only when a conversion first needs
// it; without NumPy, NumPy scalars are simply not recognised.
struct NumpyTypes {
  py::object module, generic, bool_;
};
const NumpyTypes& numpy_types() {
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<NumpyTypes> storage;
  return storage
      .call_once_and_store_result([] {
        NumpyTypes t;
        try {
          t.module = py::module_::import("numpy");
          t.generic = t.module.attr("generic");
          t.bool_ = t.module.attr("bool_");
        } catch (py::error_already_set&) {
          t = NumpyTypes();
        }
        return t;
      })
      .get_stored();
}

bool is_numpy_scalar(py::handle obj) {
  const NumpyTypes& np = numpy_types();
  return np.generic && py::isinstance(obj, np.generic);
}

// What a Python operand is, for the promotion rules of API.md section 1.
enum class Operand { kNone, kExpr, kBool, kInt, kFloat };

Operand classify(py::handle obj) {
  if (py::isinstance<PyExpr>(obj)) return Operand::kExpr;
  if (PyBool_Check(obj.ptr())) return Operand::kBool;
  if (PyLong_Check(obj.ptr())) return Operand::kInt;
  if (PyFloat_Check(obj.ptr())) return Operand::kFloat;
  const NumpyTypes& np = numpy_types();
  if (np.bool_ && py::isinstance(obj, np.bool_)) return Operand::kBool;
  // NumPy integers implement __index__; NumPy floats only __float__. Strings and containers
  // implement neither, so they stay kNone.
  if (PyIndex_Check(obj.ptr())) return Operand::kInt;
  auto* num = Py_TYPE(obj.ptr())->tp_as_number;
  if (num && num->nb_float && !PyComplex_Check(obj.ptr())) return Operand::kFloat;
  return Operand::kNone;
}

[[noreturn]] void throw_python(PyObject* kind, const std::string& message) {
  PyErr_SetString(kind, message.c_str());
  throw py::error_already_set();
}

py::object steal_or_throw(PyObject* result) {
  if (!result) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
}

// Integer-valued objects (Python and NumPy ints) as a Python int, so their range can be checked
// exactly whatever their size.
py::int_ as_py_int(py::handle obj) {
  return py::reinterpret_borrow<py::int_>(steal_or_throw(PyNumber_Index(obj.ptr())));
}

bool fits(const py::int_& v, DataType t) {
  if (t.is_uint()) {
    uint64_t hi =
        t.bits() == 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << t.bits()) - 1;
    return v >= py::int_(0) && v <= py::int_(hi);
  }
  int64_t hi =
      t.bits() == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (t.bits() - 1)) - 1;
  return v >= py::int_(-hi - 1) && v <= py::int_(hi);
}

// An integer constant of dtype t; like NumPy 2, a value out of t's range is an OverflowError
// rather than a silent wrap-around.
Expr int_const(const py::int_& v, DataType t) {
  if (!fits(v, t)) {
    throw_python(PyExc_OverflowError, "Python integer " + py::str(v).cast<std::string>() +
                                          " out of bounds for " + t.str());
  }
  if (t.is_uint() && t.bits() == 64) {
    // Stored as the same 64 bits in the IntImm's int64.
    return IntImm::make(t, static_cast<int64_t>(PyLong_AsUnsignedLongLong(v.ptr())));
  }
  return IntImm::make(t, PyLong_AsLongLong(v.ptr()));
}

double as_double(py::handle obj) {
  double v = PyFloat_AsDouble(obj.ptr());
  if (v == -1.0 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

// A number as a constant of dtype t, converted as NumPy's astype would (floats truncate toward
// zero when t is an integer type; NaN and infinity cannot be).
Expr number_to_const(py::handle obj, Operand kind, DataType t) {
  t = t.element_of();
  if (t.is_bool()) {
    int truth = PyObject_IsTrue(obj.ptr());
    if (truth < 0) throw py::error_already_set();
    return IntImm::make(t, truth);
  }
  if (t.is_float()) return FloatImm::make(t, as_double(obj));
  if (t.is_integer()) {
    if (kind == Operand::kBool) return IntImm::make(t, PyObject_IsTrue(obj.ptr()) == 1);
    if (kind == Operand::kFloat) {
      py::object truncated = steal_or_throw(PyNumber_Long(obj.ptr()));
      return int_const(py::reinterpret_borrow<py::int_>(truncated), t);
    }
    return int_const(as_py_int(obj), t);
  }
  type_error("cannot make a constant of dtype ", t.str());
}

// The dtype a NumPy scalar carries (np.float16(1) is a float16 constant, not a float32 one).
DataType numpy_scalar_dtype(py::handle obj) {
  return DataType::parse(py::str(obj.attr("dtype").attr("name")).cast<std::string>());
}

// A number on its own: int -> int32 (int64 when it does not fit), float -> float32, bool -> bool,
// a NumPy scalar -> its own dtype.
Expr default_const(py::handle obj, Operand kind) {
  if (kind == Operand::kBool) return number_to_const(obj, kind, DataType::Bool());
  if (is_numpy_scalar(obj)) return number_to_const(obj, kind, numpy_scalar_dtype(obj));
  if (kind == Operand::kFloat) return number_to_const(obj, kind, DataType::Float(32));
  py::int_ v = as_py_int(obj);
  if (fits(v, DataType::Int(32))) return int_const(v, DataType::Int(32));
  if (fits(v, DataType::Int(64))) return int_const(v, DataType::Int(64));
  throw_python(PyExc_OverflowError, "Python integer " + py::str(v).cast<std::string>() +
                                        " does not fit int64; give the dtype explicitly, e.g. "
                                        "const(value, 'uint64')");
}

}  // namespace

Expr to_expr(py::handle obj, const char* what) {
  switch (classify(obj)) {
    case Operand::kExpr:
      return obj.cast<const PyExpr&>().e;
    case Operand::kNone:
      if (py::isinstance<PyTensor>(obj)) {
        type_error(what, " must be an expression or a number, found the Tensor '",
                   obj.cast<const PyTensor&>().t.name(),
                   "'; index it (A[i, j]) to use one of its elements");
      }
      if (type_name(obj) == "TensorSlice" && py::hasattr(obj, "_incomplete")) {
        obj.attr("_incomplete")();  // raises, saying how many indices the tensor needs
      }
      type_error(what, " must be an expression or a number, found ", type_name(obj));
    default:
      return default_const(obj, classify(obj));
  }
}

Expr to_const(py::handle value, DataType t, const char* what) {
  Operand kind = classify(value);
  if (kind == Operand::kNone || kind == Operand::kExpr) {
    type_error(what, " must be a Python number, found ", type_name(value),
               kind == Operand::kExpr ? "; use astype() to change an expression's dtype" : "");
  }
  return number_to_const(value, kind, t);
}

Tensor to_tensor(py::handle obj, const char* what) {
  if (py::isinstance<PyTensor>(obj)) return obj.cast<const PyTensor&>().t;
  if (py::isinstance<PyOperation>(obj)) {
    type_error(what, " must be a Tensor, found the Operation '",
               obj.cast<const PyOperation&>().op->name, "'; use op.output(0)");
  }
  type_error(what, " must be a Tensor, found ", type_name(obj));
}

Operation to_operation(py::handle obj, const char* what) {
  if (py::isinstance<PyOperation>(obj)) return obj.cast<const PyOperation&>().op;
  if (py::isinstance<PyTensor>(obj)) return obj.cast<const PyTensor&>().t.op();
  type_error(what, " must be a Tensor or an Operation, found ", type_name(obj));
}

IterVar to_iter_var(py::handle obj, const char* what) {
  if (py::isinstance<PyIterVar>(obj)) return obj.cast<const PyIterVar&>().iv;
  type_error(what, " must be an IterVar (an axis such as C.op.axis[0], or a reduce_axis), found ",
             type_name(obj));
}

py::object wrap_expr(const Expr& e) {
  if (!e.defined()) return py::none();
  switch (e->kind) {
    case ExprKind::kVar:
      return py::cast(PyVar{{e}});
    case ExprKind::kIntImm:
      return py::cast(PyIntImm{{e}});
    case ExprKind::kFloatImm:
      return py::cast(PyFloatImm{{e}});
    default:
      return py::cast(PyExpr{e});
  }
}

py::object wrap_tensor(const Tensor& t) {
  if (!t.defined()) return py::none();
  return py::cast(PyTensor{t});
}

py::object wrap_operation(const Operation& op) {
  if (!op) return py::none();
  return py::cast(PyOperation{op});
}

py::object wrap_iter_var(const IterVar& iv) {
  if (!iv) return py::none();
  return py::cast(PyIterVar{{iv->var}, iv});
}

DataType to_dtype(py::handle obj, const char* what) {
  if (py::isinstance<py::str>(obj)) return DataType::parse(obj.cast<std::string>());
  if (obj.is_none()) type_error(what, " must be a dtype such as 'float32', found None");
  // torch dtypes print as "torch.float32".
  std::string text = py::str(obj).cast<std::string>();
  if (text.rfind("torch.", 0) == 0) return DataType::parse(text.substr(6));
  const NumpyTypes& np = numpy_types();
  if (np.module) {
    try {
      py::object dt = np.module.attr("dtype")(obj);
      return DataType::parse(py::str(dt.attr("name")).cast<std::string>());
    } catch (py::error_already_set&) {
    }
  }
  type_error(what, " must be a dtype such as 'float32', found ", type_name(obj), " ", text);
}

// A Python float that is a whole number, as an int: TVM code writes extents as `N / bn`, a float
// when the division is exact. Anything else is returned empty (the caller reports it).
py::object whole_number(py::handle obj) {
  if (!PyFloat_Check(obj.ptr())) return py::object();
  double v = as_double(obj);
  if (!std::isfinite(v) || v != std::floor(v)) return py::object();
  return steal_or_throw(PyNumber_Long(obj.ptr()));
}

std::vector<Expr> to_shape(py::handle obj, const char* what) {
  std::vector<py::handle> dims;
  py::object holder;  // keeps a sequence made from an iterable alive
  if (classify(obj) != Operand::kNone) {
    dims.push_back(obj);
  } else if (py::isinstance<py::str>(obj) || py::isinstance<PyTensor>(obj) ||
             !py::isinstance<py::iterable>(obj)) {
    type_error(what, " must be a shape: an int, an expression, or a tuple/list of them; found ",
               type_name(obj));
  } else {
    holder = py::list(py::reinterpret_borrow<py::iterable>(obj));
    for (py::handle d : holder) dims.push_back(d);
  }
  std::vector<Expr> shape;
  for (size_t i = 0; i < dims.size(); ++i) {
    std::string dim_what = str_cat("dimension ", i, " of ", what);
    py::object whole = whole_number(dims[i]);
    py::handle dim = whole ? whole : dims[i];
    if (PyLong_Check(dim.ptr())) {
      int overflow = 0;
      (void)PyLong_AsLongLongAndOverflow(dim.ptr(), &overflow);
      if (overflow != 0) {
        value_error(dim_what, " (", py::str(dim).cast<std::string>(),
                    ") does not fit a 64-bit size");
      }
    }
    Expr e = to_expr(dim, dim_what.c_str());
    // Sizes are int32 (kIndexType) or int64 (2**31 elements or more), and a loop's bounds must
    // have its var's type: a constant takes the narrowest of the two that holds it.
    if (const auto* imm = e.as<IntImm>(); imm && e.dtype().is_integer()) {
      if (e.dtype().is_uint() && e.dtype().bits() == 64 && imm->value < 0) {
        value_error(dim_what, " (", static_cast<uint64_t>(imm->value), ") does not fit int64");
      }
      bool fits32 = imm->value <= std::numeric_limits<int32_t>::max() &&
                    imm->value >= std::numeric_limits<int32_t>::min();
      e = IntImm::make(fits32 ? kIndexType : DataType::Int(64), imm->value);
    } else if (e.dtype().is_integer() && e.dtype() != kIndexType &&
               e.dtype() != DataType::Int(64)) {
      type_error(dim_what, " is a ", e.dtype().str(),
                 " expression; symbolic sizes must be int32 or int64 (var(name) makes an int32 "
                 "one, var(name, 'int64') an int64 one)");
    }
    shape.push_back(e);
  }
  return shape;
}

namespace {

// Whether `e` is computed from a tensor's values (it reads one, or reduces).
bool reads_tensor(const Expr& e) {
  bool reads = false;
  for_each_expr(e, [&](const Expr& x) { reads = reads || x.as<TensorRead>() || x.as<Reduce>(); });
  return reads;
}

// API.md section 1: tensors of different dtypes do not mix unless cast. Index arithmetic (i * 0.5,
// an integer size meeting a float) is promoted as in TVM; an integer tensor's values meeting a
// float tensor's values are refused, as int32 + int8 values are.
void refuse_mixed_tensor_values(const std::vector<py::handle>& objs,
                                const std::vector<Operand>& kinds) {
  // The integer side is looked at first: it is index arithmetic (small) far more often than a
  // tensor's values, and a long float expression is then never walked.
  const Expr* integer = nullptr;
  const Expr* floating = nullptr;
  for (size_t i = 0; i < objs.size() && !integer; ++i) {
    if (kinds[i] != Operand::kExpr) continue;
    const Expr& e = objs[i].cast<const PyExpr&>().e;
    if (e.dtype().is_integer() && reads_tensor(e)) integer = &e;
  }
  for (size_t i = 0; i < objs.size() && integer && !floating; ++i) {
    if (kinds[i] != Operand::kExpr) continue;
    const Expr& e = objs[i].cast<const PyExpr&>().e;
    if (e.dtype().is_float() && reads_tensor(e)) floating = &e;
  }
  if (integer && floating) {
    type_error("an ", integer->dtype().str(), " tensor value (", to_string(*integer), ") meets a ",
               floating->dtype().str(), " tensor value (", to_string(*floating),
               "): tensors of different dtypes do not mix; cast one with astype()");
  }
}

}  // namespace

bool match_operands(const std::vector<py::handle>& objs, std::vector<Expr>* out) {
  std::vector<Operand> kinds;
  const Expr* ref = nullptr;
  bool any_float = false;
  for (py::handle obj : objs) {
    kinds.push_back(classify(obj));
    if (kinds.back() == Operand::kNone) return false;
    if (kinds.back() == Operand::kFloat) any_float = true;
    if (kinds.back() == Operand::kExpr && !ref) ref = &obj.cast<const PyExpr&>().e;
  }
  out->clear();
  if (!ref) {
    for (size_t i = 0; i < objs.size(); ++i) out->push_back(default_const(objs[i], kinds[i]));
    return true;
  }
  DataType t = ref->dtype();
  // TVM's promotion (BinaryOpMatchTypes): an integer expression meeting a float expression is
  // cast to that float dtype; with a Python float it becomes float32 (the dtype TVM gives Python
  // floats); int32 meeting int64 (index arithmetic over int64 sizes: a loop variable of a
  // constant extent times a size) is widened to int64. Two floats or other integers of
  // different widths still need an explicit astype().
  bool integer_expr = false, float_expr = false;
  bool signed_index = true;  // every expression a scalar int32 or int64
  int widest = 0, narrowest = 64;
  for (size_t i = 0; i < objs.size(); ++i) {
    if (kinds[i] != Operand::kExpr) continue;
    DataType d = objs[i].cast<const PyExpr&>().e.dtype();
    if (d.is_float() && !t.is_float()) t = d;
    integer_expr = integer_expr || d.is_integer();
    float_expr = float_expr || d.is_float();
    signed_index =
        signed_index && d.is_int() && d.is_scalar() && (d.bits() == 32 || d.bits() == 64);
    widest = std::max(widest, d.bits());
    narrowest = std::min(narrowest, d.bits());
  }
  // index arithmetic (no tensor's values in it: those of different dtypes do not mix, API.md)
  bool widen_index = signed_index && widest != narrowest;
  for (size_t i = 0; widen_index && i < objs.size(); ++i) {
    if (kinds[i] == Operand::kExpr && reads_tensor(objs[i].cast<const PyExpr&>().e)) {
      widen_index = false;
    }
  }
  if (widen_index) t = DataType::Int(64);
  if (integer_expr && float_expr) refuse_mixed_tensor_values(objs, kinds);
  if (!t.is_float() && !t.is_bool() && any_float) t = DataType::Float(32, t.lanes());
  for (size_t i = 0; i < objs.size(); ++i) {
    if (kinds[i] == Operand::kExpr) {
      Expr e = objs[i].cast<const PyExpr&>().e;
      if (t.is_float() && e.dtype().is_integer()) e = cast(t.with_lanes(e.dtype().lanes()), e);
      if (widen_index && e.dtype() != t) e = cast(t, e);  // int32 -> int64
      out->push_back(e);
    } else if (t.is_bool() && kinds[i] != Operand::kBool) {
      // No arithmetic on bools: a number keeps its own dtype, and the node's dtype check then
      // explains that the bool must be cast.
      out->push_back(default_const(objs[i], kinds[i]));
    } else {
      out->push_back(number_to_const(objs[i], kinds[i], t));
    }
  }
  return true;
}

std::vector<Expr> to_matched_exprs(const std::vector<py::handle>& objs, const char* what) {
  std::vector<Expr> out;
  if (!match_operands(objs, &out)) {
    for (py::handle obj : objs) to_expr(obj, what);  // throws the TypeError naming the culprit
  }
  return out;
}

}  // namespace ptb::python
