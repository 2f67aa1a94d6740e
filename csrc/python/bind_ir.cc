// The tensor-expression classes and functions of _core: Expr (with Var, IntImm, FloatImm and
// IterVar as subclasses), Range, Tensor, Operation, and the thin constructors that
// pytvmbridge/te.py wraps into the user-facing DSL of API.md section 1.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "ir/math.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/simplify.h"
#include "python/bindings.h"
#include "python/ir_casters.h"
#include "support/error.h"
#include "te/extern.h"
#include "te/operation.h"

namespace ptb::python {

namespace {

py::object not_implemented() { return py::reinterpret_borrow<py::object>(Py_NotImplemented); }

using BinaryFn = Expr (*)(Expr, Expr);

// Operators return NotImplemented for operands that are neither expressions nor numbers, so
// Python reports its usual "unsupported operand type(s)" and `expr == None` is simply False.
bool is_const(const Expr& e) { return e.as<IntImm>() || e.as<FloatImm>(); }

// Operators on two constants fold, as TVM's do, so that `A.shape[0] * 2` of a constant shape is
// again a constant (usable as a shape, or with int()).
Expr fold_consts(const Expr& result, const Expr& a, const Expr& b) {
  return is_const(a) && is_const(b) ? simplify(result) : result;
}

py::object binary(py::handle a, py::handle b, BinaryFn f) {
  std::vector<Expr> ops;
  if (!match_operands({a, b}, &ops)) return not_implemented();
  return wrap_expr(fold_consts(f(ops[0], ops[1]), ops[0], ops[1]));
}

// The value of an expression that folds to a constant (`A.shape[0] * 2` of a constant shape),
// for int(), float() and bool(); a symbolic expression has none.
Expr folded(const Expr& e, const char* conversion) {
  Expr s = simplify(e);
  if (s.as<IntImm>() || s.as<FloatImm>()) return s;
  type_error("cannot convert the symbolic expression ", to_string(e), " to ", conversion,
             ": its value is only known when the kernel runs");
}

py::object int_value(const IntImm* imm) {
  if (imm->dtype.is_uint() && imm->dtype.bits() == 64) {
    return py::int_(static_cast<uint64_t>(imm->value));
  }
  return py::int_(imm->value);
}

py::object expr_int(const PyExpr& self) {
  Expr v = folded(self.e, "int");
  if (const auto* imm = v.as<IntImm>()) return int_value(imm);
  type_error("cannot use the float expression ", to_string(self.e),
             " as an integer; use int(float(x)) to truncate it");
}

std::string range_repr(const Expr& min, const Expr& extent) {
  return "Range(min=" + to_string(min) + ", extent=" + to_string(extent) + ")";
}

std::string iter_var_repr(const IterVar& iv) {
  return "iter_var(" + to_string(iv->var) + ", " + range_repr(iv->dom.min, iv->dom.extent) +
         (iv->kind == IterKind::kReduce ? ", reduce)" : ")");
}

std::string shape_repr(const std::vector<Expr>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

template <typename T, typename F>
py::list to_list(const std::vector<T>& items, F wrap) {
  py::list out;
  for (const T& item : items) out.append(wrap(item));
  return out;
}

std::vector<py::handle> as_items(py::handle obj) {
  std::vector<py::handle> items;
  if (py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj)) {
    for (py::handle h : obj) items.push_back(h);
  } else {
    items.push_back(obj);
  }
  return items;
}

Expr tensor_read(const Tensor& t, py::handle key) {
  std::vector<Expr> indices;
  std::vector<py::handle> items = as_items(key);
  for (size_t i = 0; i < items.size(); ++i) {
    if (PySlice_Check(items[i].ptr()) || items[i].is(py::ellipsis())) {
      type_error("tensor '", t.name(),
                 "' cannot be sliced in an expression; index it with one expression per "
                 "dimension (",
                 t.ndim(), " here)");
    }
    std::string what = str_cat("index ", i, " of tensor '", t.name(), "'");
    indices.push_back(to_expr(items[i], what.c_str()));
  }
  // A constant index outside a constant dimension is always a mistake (often a NumPy-style
  // negative index); catch it here rather than reading out of bounds at run time.
  if (indices.size() == static_cast<size_t>(t.ndim())) {
    for (size_t i = 0; i < indices.size(); ++i) {
      auto idx = as_const_int(indices[i]);
      auto dim = as_const_int(t.shape()[i]);
      if (idx && indices[i].dtype().is_int() && (*idx < 0 || (dim && *idx >= *dim))) {
        throw UserError(
            ErrorKind::kIndex,
            str_cat("index ", *idx, " is out of bounds for dimension ", i, " of tensor '", t.name(),
                    "'", dim ? str_cat(" with size ", *dim) : std::string(),
                    *idx < 0 ? " (negative indices do not count from the end)" : ""));
      }
    }
  }
  return t(std::move(indices));
}

const std::vector<Expr> kNoExprs;
const std::vector<IterVar> kNoIterVars;

const ComputeOpNode* as_compute(const Operation& op) {
  return op->kind == OpKind::kCompute ? static_cast<const ComputeOpNode*>(op.get()) : nullptr;
}

std::string operation_repr(const Operation& op) {
  if (const auto* c = as_compute(op)) {
    std::string s = "ComputeOp(name='" + op->name + "', axis=[";
    for (size_t i = 0; i < c->axis.size(); ++i) s += (i ? ", " : "") + to_string(c->axis[i]->var);
    s += "]";
    if (!c->reduce_axis.empty()) {
      s += ", reduce_axis=[";
      for (size_t i = 0; i < c->reduce_axis.size(); ++i) {
        s += (i ? ", " : "") + to_string(c->reduce_axis[i]->var);
      }
      s += "]";
    }
    s += ", body=[";
    for (size_t i = 0; i < c->body.size(); ++i) s += (i ? ", " : "") + to_string(c->body[i]);
    return s + "])";
  }
  if (const auto* e = as_extern(op)) {  // TVM's ExternOp: a packed function's outputs
    std::string s = "ExternOp(name='" + op->name + "', inputs=[";
    for (size_t i = 0; i < e->inputs.size(); ++i) s += (i ? ", " : "") + e->inputs[i].name();
    return s + "], func='" + e->func + "')";
  }
  return "PlaceholderOp(name='" + op->name + "', shape=" + shape_repr(op->output_shape(0)) +
         ", dtype='" + op->output_dtype(0).str() + "')";
}

// attrs={...} of compute: str keys; int/bool, float, str or a list/tuple of ints as values.
OpAttrs to_attrs(py::handle obj, const std::string& name) {
  OpAttrs out;
  if (obj.is_none()) return out;
  if (!py::isinstance<py::dict>(obj)) {
    type_error("attrs of compute '", name, "' must be a dict, found ",
               py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
  }
  for (auto item : obj.cast<py::dict>()) {
    if (!py::isinstance<py::str>(item.first)) {
      type_error("attrs of compute '", name, "' must have str keys, found ",
                 py::repr(item.first).cast<std::string>());
    }
    std::string key = item.first.cast<std::string>();
    py::handle v = item.second;
    auto is_int = [](py::handle x) { return py::isinstance<py::int_>(x); };
    if (is_int(v)) {
      out[key] = v.cast<int64_t>();
    } else if (py::isinstance<py::float_>(v)) {
      out[key] = v.cast<double>();
    } else if (py::isinstance<py::str>(v)) {
      out[key] = v.cast<std::string>();
    } else if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
      std::vector<int64_t> ints;
      for (py::handle x : v) {
        if (!is_int(x)) {
          type_error("attrs['", key, "'] of compute '", name,
                     "' is a sequence; only sequences of ints are supported, found ",
                     py::repr(x).cast<std::string>());
        }
        ints.push_back(x.cast<int64_t>());
      }
      out[key] = std::move(ints);
    } else {
      type_error("attrs['", key, "'] of compute '", name,
                 "' must be an int, float, str or list of ints, found ",
                 py::repr(v).cast<std::string>());
    }
  }
  return out;
}

py::dict attrs_dict(const OpAttrs& attrs) {
  py::dict d;
  for (const auto& [key, value] : attrs) {
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            py::list l;
            for (int64_t x : v) l.append(x);
            d[py::str(key)] = py::tuple(l);
          } else {
            d[py::str(key)] = py::cast(v);
          }
        },
        value);
  }
  return d;
}

py::list compute(py::handle shape_obj, const py::function& fcompute, const std::string& name,
                 py::handle axis_names, const std::string& tag, py::handle attrs_obj) {
  OpAttrs attrs = to_attrs(attrs_obj, name);
  std::string what = "the shape of compute '" + name + "'";
  std::vector<Expr> shape = to_shape(shape_obj, what.c_str());
  std::vector<std::string> names;
  if (!axis_names.is_none()) {
    for (py::handle n : axis_names) names.push_back(py::str(n).cast<std::string>());
  }
  std::vector<IterVar> axis;
  py::tuple args(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string n = d < names.size() ? names[d] : "i" + std::to_string(d);
    axis.push_back(make_iter_var(Range::from_min_extent(make_zero(kIndexType), shape[d]), n,
                                 IterKind::kDataPar));
    args[d] = wrap_expr(axis.back()->var);  // TVM passes the axes' Vars, not the IterVars
  }
  py::object result = fcompute(*args);
  if (result.is_none()) {
    type_error("fcompute of compute '", name,
               "' returned None; it must return an expression (is a 'return' missing?)");
  }
  std::vector<Expr> body;
  std::vector<py::handle> items = as_items(result);
  for (size_t i = 0; i < items.size(); ++i) {
    std::string w = items.size() == 1
                        ? "the value fcompute returned for compute '" + name + "'"
                        : str_cat("output ", i, " fcompute returned for compute '", name, "'");
    body.push_back(to_expr(items[i], w.c_str()));
  }
  Operation op =
      make_compute(name, std::move(shape), std::move(axis), std::move(body), tag, std::move(attrs));
  py::list out;
  for (int i = 0; i < op->num_outputs(); ++i) out.append(wrap_tensor(Tensor(op, i)));
  return out;
}

py::object reduce_axis(py::handle dom, const std::string& name) {
  Expr min, extent;
  if (py::isinstance<PyRange>(dom)) {
    const auto& r = dom.cast<const PyRange&>();
    min = r.min;
    extent = r.extent;
  } else {
    std::vector<py::handle> bounds;
    if (py::isinstance<py::tuple>(dom) || py::isinstance<py::list>(dom)) bounds = as_items(dom);
    if (bounds.size() != 2) {
      type_error("the domain of reduce_axis '", name,
                 "' must be a (lo, hi) pair or a Range, found ", py::repr(dom).cast<std::string>());
    }
    std::string what = "the domain of reduce_axis '" + name + "'";
    std::vector<Expr> lh = to_matched_exprs(bounds, what.c_str());
    min = lh[0];
    auto index_type = [](const Expr& e) {
      return e.dtype() == kIndexType || e.dtype() == DataType::Int(64);
    };
    if (!index_type(min) || !index_type(lh[1])) {
      type_error(what, " must be int32 or int64 values, found ", min.dtype().str(), " and ",
                 lh[1].dtype().str());
    }
    extent = idx_sub(lh[1], lh[0]);
  }
  if (auto e = as_const_int(extent); e && *e < 0) {
    value_error("reduce_axis '", name, "' has a negative extent (", *e, ")");
  }
  return wrap_iter_var(make_iter_var(Range::from_min_extent(min, extent), name, IterKind::kReduce));
}

ReduceKind reduce_kind(const std::string& kind) {
  for (ReduceKind k : {ReduceKind::kSum, ReduceKind::kProd, ReduceKind::kMin, ReduceKind::kMax}) {
    if (kind == reduce_name(k)) return k;
  }
  value_error("unknown reduction '", kind, "'; expected sum, prod, min or max");
}

py::object reduce(const std::string& kind_name, py::handle expr, py::handle axis_obj,
                  py::handle where) {
  ReduceKind kind = reduce_kind(kind_name);
  std::string what = "the expression of " + kind_name + "()";
  Expr source = to_expr(expr, what.c_str());
  std::vector<IterVar> axis;
  std::string axis_what = "axis of " + kind_name + "()";
  for (py::handle h : as_items(axis_obj)) {
    IterVar iv = to_iter_var(h, axis_what.c_str());
    for (const IterVar& seen : axis) {
      if (seen == iv) {
        value_error("reduce axis '", to_string(iv->var), "' appears twice in ", kind_name, "()");
      }
    }
    axis.push_back(iv);
  }
  Expr cond;
  if (!where.is_none()) {
    std::string w = "where= of " + kind_name + "()";
    cond = to_expr(where, w.c_str());
  }
  return wrap_expr(Reduce::make(kind, source, std::move(axis), cond));
}

Intrinsic intrinsic_by_name(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(Intrinsic::kIfThenElse); ++i) {
    auto op = static_cast<Intrinsic>(i);
    if (name == intrinsic_name(op)) return op;
  }
  value_error("unknown intrinsic '", name, "'");
}

// Math functions: numbers among the arguments take the expressions' dtype, as with operators.
py::object call_intrinsic(const std::string& name, const py::args& args) {
  Intrinsic op = intrinsic_by_name(name);
  std::vector<py::handle> handles(args.begin(), args.end());
  std::string what = "argument of " + name + "()";
  return wrap_expr(Call::make(op, to_matched_exprs(handles, what.c_str())));
}

template <typename F>
py::object conditional(const char* name, py::handle cond, py::handle a, py::handle b, F make) {
  std::string what = std::string("the condition of ") + name + "()";
  Expr c = to_expr(cond, what.c_str());
  std::string values = std::string("a value of ") + name + "()";
  std::vector<Expr> v = to_matched_exprs({a, b}, values.c_str());
  return wrap_expr(make(c, v[0], v[1]));
}

std::vector<Expr> conditions(const py::args& args, const char* fn) {
  std::vector<Expr> out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string what = str_cat("argument ", i, " of ", fn, "()");
    out.push_back(to_expr(args[i], what.c_str()));
    if (!out.back().dtype().is_bool()) {
      type_error(what, " must be a bool condition, found ", out.back().dtype().str(),
                 "; compare it first (e.g. x != 0)");
    }
  }
  return out;
}

template <BinaryFn F>
py::object binary_function(py::handle a, py::handle b, const char* name) {
  std::string what = std::string("an operand of ") + name + "()";
  std::vector<Expr> v = to_matched_exprs({a, b}, what.c_str());
  return wrap_expr(fold_consts(F(v[0], v[1]), v[0], v[1]));
}

// m.name(a, b): F of two operands (expressions or Python numbers), folded when both are
// constants.
template <BinaryFn F>
void def_binary_function(py::module_& m, const char* name) {
  m.def(
      name, [name](py::handle a, py::handle b) { return binary_function<F>(a, b, name); },
      py::arg("a"), py::arg("b"));
}

void bind_expr_classes(py::module_& m) {
  py::class_<PyExpr> expr(m, "Expr", R"doc(A symbolic scalar expression.

Built from vars, constants, tensor reads and operators; ``str()`` prints it. Python numbers
combine with an expression by taking its dtype (NumPy's rule for Python scalars).)doc");
  // NumPy defers to our reflected operators instead of building object arrays.
  expr.attr("__array_ufunc__") = py::none();
  expr.def_property_readonly("dtype", [](const PyExpr& self) { return self.e.dtype().str(); })
      .def("astype",
           [](const PyExpr& self, py::handle dtype) {
             return wrap_expr(cast(to_dtype(dtype, "astype()'s dtype"), self.e));
           })
      .def("__repr__", [](const PyExpr& self) { return to_string(self.e); })
      .def("__str__", [](const PyExpr& self) { return to_string(self.e); });

  auto def_binary = [&](const char* name, const char* rname, BinaryFn f) {
    expr.def(name, [f](py::object self, py::object other) { return binary(self, other, f); });
    if (rname) {
      expr.def(rname, [f](py::object self, py::object other) { return binary(other, self, f); });
    }
  };
  def_binary("__add__", "__radd__", &Add::make);
  def_binary("__sub__", "__rsub__", &Sub::make);
  def_binary("__mul__", "__rmul__", &Mul::make);
  def_binary("__truediv__", "__rtruediv__", &true_div);
  def_binary("__floordiv__", "__rfloordiv__", &floordiv);
  def_binary("__mod__", "__rmod__", &floormod);
  def_binary("__pow__", "__rpow__", &power);
  // Logical on bool expressions, bitwise on integers (ir/op.h).
  def_binary("__and__", "__rand__", &bitwise_and);
  def_binary("__or__", "__ror__", &bitwise_or);
  def_binary("__xor__", "__rxor__", &bitwise_xor);
  def_binary("__lshift__", "__rlshift__", &shift_left);
  def_binary("__rshift__", "__rrshift__", &shift_right);
  // Python reflects comparisons itself (1 < x calls x.__gt__(1)).
  def_binary("__lt__", nullptr, &LT::make);
  def_binary("__le__", nullptr, &LE::make);
  def_binary("__gt__", nullptr, &GT::make);
  def_binary("__ge__", nullptr, &GE::make);
  def_binary("__eq__", nullptr, &EQ::make);
  def_binary("__ne__", nullptr, &NE::make);
  expr.def("__neg__",
           [](const PyExpr& self) {
             if (self.e.dtype().is_bool()) {
               type_error("cannot negate the bool expression ", to_string(self.e),
                          "; use ~ for logical not");
             }
             // x * -1 rather than 0 - x: it gives -0.0 for 0.0, as NumPy's negative does.
             Expr minus_one = make_const(self.e.dtype(), int64_t{-1});
             return wrap_expr(fold_consts(Mul::make(self.e, minus_one), self.e, minus_one));
           })
      .def("__pos__", [](const PyExpr& self) { return wrap_expr(self.e); })
      .def("__invert__",
           [](const PyExpr& self) {
             Expr r = bitwise_not(self.e);
             return wrap_expr(is_const(self.e) ? simplify(r) : r);
           })
      .def("__abs__",
           [](const PyExpr& self) { return wrap_expr(Call::make(Intrinsic::kAbs, {self.e})); })
      .def("__hash__", [](const PyExpr& self) { return std::hash<const void*>()(self.e.get()); })
      .def("__bool__",
           [](const PyExpr& self) {
             Expr s = simplify(self.e);
             if (const auto* i = s.as<IntImm>()) return i->value != 0;
             if (const auto* f = s.as<FloatImm>()) return f->value != 0;
             // TVM's EqualOp/NotEqualOp: `a == b` of two variables is true when they are the
             // same variable, so `iv.var == ko.var` and `v in list_of_vars` work as in TVM.
             if (const auto* eq = self.e.as<EQ>(); eq && eq->a.as<Var>() && eq->b.as<Var>()) {
               return eq->a.get() == eq->b.get();
             }
             if (const auto* ne = self.e.as<NE>(); ne && ne->a.as<Var>() && ne->b.as<Var>()) {
               return ne->a.get() != ne->b.get();
             }
             type_error("the symbolic expression ", to_string(self.e),
                        " has no truth value: it is only known when the kernel runs. Use "
                        "if_then_else()/select() for a conditional value, & | ~ or all()/any() "
                        "to combine conditions");
           })
      .def("__int__", &expr_int)
      .def("__index__", &expr_int)
      .def("__float__", [](const PyExpr& self) {
        Expr v = folded(self.e, "float");
        if (const auto* f = v.as<FloatImm>()) return f->value;
        return static_cast<double>(v.as<IntImm>()->value);
      });

  // A reduction's reduce axes and predicate, as TVM's Reduce node has them
  // (B.op.body[0].axis); other expressions have neither.
  auto reduce_of = [](const PyExpr& self, const char* attr) {
    const auto* r = self.e.as<Reduce>();
    if (r == nullptr) {
      throw py::attribute_error(
          str_cat("'", to_string(self.e), "' is not a reduction and has no '", attr, "'"));
    }
    return r;
  };
  expr.def_property_readonly("axis",
                             [reduce_of](const PyExpr& self) {
                               py::list out;
                               for (const IterVar& iv : reduce_of(self, "axis")->axis) {
                                 out.append(wrap_iter_var(iv));
                               }
                               return out;
                             })
      .def_property_readonly("condition", [reduce_of](const PyExpr& self) {
        return wrap_expr(reduce_of(self, "condition")->condition);
      });

  py::class_<PyVar, PyExpr>(m, "Var", "A symbolic scalar variable (compared by identity).")
      .def(py::init([](const std::string& name, py::handle dtype) {
             return PyVar{{Var::make(to_dtype(dtype, "the dtype of a var"), name)}};
           }),
           py::arg("name") = "v", py::arg("dtype") = "int32")
      .def_property_readonly("name", [](const PyVar& self) { return self.e.as<Var>()->name; });

  py::class_<PyIntImm, PyExpr>(m, "IntImm", "An integer or bool constant.")
      .def_property_readonly("value",
                             [](const PyIntImm& self) { return int_value(self.e.as<IntImm>()); });
  py::class_<PyFloatImm, PyExpr>(m, "FloatImm", "A floating-point constant.")
      .def_property_readonly("value",
                             [](const PyFloatImm& self) { return self.e.as<FloatImm>()->value; });

  py::class_<PyRange>(m, "Range", "The half-open range [min, min + extent).")
      .def(py::init([](py::handle begin, py::handle end) {
             if (end.is_none()) return PyRange{make_zero(kIndexType), to_expr(begin, "extent")};
             std::vector<Expr> be = to_matched_exprs({begin, end}, "a bound of Range");
             return PyRange{be[0], idx_sub(be[1], be[0])};
           }),
           py::arg("begin"), py::arg("end") = py::none())
      .def_static(
          "from_min_extent",
          [](py::handle min, py::handle extent) {
            std::vector<Expr> me = to_matched_exprs({min, extent}, "a bound of Range");
            return PyRange{me[0], me[1]};
          },
          py::arg("min"), py::arg("extent"))
      .def_property_readonly("min", [](const PyRange& r) { return wrap_expr(r.min); })
      .def_property_readonly("extent", [](const PyRange& r) { return wrap_expr(r.extent); })
      .def("__repr__", [](const PyRange& r) { return range_repr(r.min, r.extent); });

  py::class_<PyIterVar, PyExpr>(m, "IterVar", R"doc(A loop axis: a compute's axis or a reduce axis.

Usable wherever an expression is (it stands for its var). Two IterVars are equal only when they
are the same axis.)doc")
      .def_property_readonly("var", [](const PyIterVar& self) { return wrap_expr(self.iv->var); })
      .def_property_readonly(
          "dom",
          [](const PyIterVar& self) { return PyRange{self.iv->dom.min, self.iv->dom.extent}; })
      .def_property_readonly("name",
                             [](const PyIterVar& self) { return self.iv->var.as<Var>()->name; })
      .def_property_readonly("kind",
                             [](const PyIterVar& self) {
                               return self.iv->kind == IterKind::kReduce ? "reduce" : "data_par";
                             })
      // TVM's numbering: 0 data parallel, 2 commutative reduction.
      .def_property_readonly(
          "iter_type",
          [](const PyIterVar& self) { return self.iv->kind == IterKind::kReduce ? 2 : 0; })
      .def("__eq__",
           [](py::object self, py::object other) -> py::object {
             if (py::isinstance<PyIterVar>(other)) {
               return py::bool_(self.cast<const PyIterVar&>().iv ==
                                other.cast<const PyIterVar&>().iv);
             }
             return binary(self, other, &EQ::make);
           })
      .def("__ne__",
           [](py::object self, py::object other) -> py::object {
             if (py::isinstance<PyIterVar>(other)) {
               return py::bool_(self.cast<const PyIterVar&>().iv !=
                                other.cast<const PyIterVar&>().iv);
             }
             return binary(self, other, &NE::make);
           })
      .def("__hash__",
           [](const PyIterVar& self) { return std::hash<const void*>()(self.iv.get()); })
      .def("__repr__", [](const PyIterVar& self) { return iter_var_repr(self.iv); })
      .def("__str__", [](const PyIterVar& self) { return iter_var_repr(self.iv); });
}

void bind_tensor_classes(py::module_& m) {
  py::class_<PyTensor>(m, "Tensor", R"doc(An output of an operation: A[i, j] reads an element.)doc")
      .def_property_readonly("shape",
                             [](const PyTensor& self) {
                               py::tuple out(self.t.ndim());
                               for (int i = 0; i < self.t.ndim(); ++i) {
                                 out[i] = wrap_expr(self.t.shape()[i]);
                               }
                               return out;
                             })
      .def_property_readonly("dtype", [](const PyTensor& self) { return self.t.dtype().str(); })
      .def_property_readonly("name", [](const PyTensor& self) { return self.t.name(); })
      .def_property_readonly("ndim", [](const PyTensor& self) { return self.t.ndim(); })
      .def_property_readonly("op", [](const PyTensor& self) { return wrap_operation(self.t.op()); })
      .def_property_readonly("value_index",
                             [](const PyTensor& self) { return self.t.value_index(); })
      .def("__getitem__",
           [](const PyTensor& self, py::handle key) { return wrap_expr(tensor_read(self.t, key)); })
      .def("__call__",
           [](const PyTensor& self, const py::args& indices) {
             return wrap_expr(tensor_read(self.t, indices));
           })
      .def("__iter__",
           [](const PyTensor& self) -> py::object {
             type_error("tensor '", self.t.name(),
                        "' is not iterable; read elements with expressions, A[i, j]");
           })
      .def("__eq__",
           [](const PyTensor& self, py::object other) -> py::object {
             if (!py::isinstance<PyTensor>(other)) return not_implemented();
             return py::bool_(self.t == other.cast<const PyTensor&>().t);
           })
      .def("__ne__",
           [](const PyTensor& self, py::object other) -> py::object {
             if (!py::isinstance<PyTensor>(other)) return not_implemented();
             return py::bool_(self.t != other.cast<const PyTensor&>().t);
           })
      .def("__hash__",
           [](const PyTensor& self) {
             return std::hash<const void*>()(self.t.op().get()) * 31 +
                    static_cast<size_t>(self.t.value_index());
           })
      .def("__repr__", [](const PyTensor& self) {
        std::string out = "Tensor(shape=" + shape_repr(self.t.shape()) +
                          ", op.name=" + self.t.name() + ", dtype=" + self.t.dtype().str();
        if (self.t.value_index()) out += ", value_index=" + std::to_string(self.t.value_index());
        return out + ")";
      });

  auto wrap_iv = [](const IterVar& iv) { return wrap_iter_var(iv); };
  py::class_<PyOperation>(m, "Operation", "A placeholder or a compute; tensors are its outputs.")
      .def_property_readonly("name", [](const PyOperation& self) { return self.op->name; })
      .def_property_readonly("axis",
                             [wrap_iv](const PyOperation& self) {
                               const auto* c = as_compute(self.op);
                               return to_list(c ? c->axis : kNoIterVars, wrap_iv);
                             })
      .def_property_readonly("reduce_axis",
                             [wrap_iv](const PyOperation& self) {
                               const auto* c = as_compute(self.op);
                               return to_list(c ? c->reduce_axis : kNoIterVars, wrap_iv);
                             })
      .def_property_readonly("body",
                             [](const PyOperation& self) {
                               const auto* c = as_compute(self.op);
                               return to_list(c ? c->body : kNoExprs, &wrap_expr);
                             })
      .def_property_readonly("tag",
                             [](const PyOperation& self) {
                               const auto* c = as_compute(self.op);
                               return c ? c->tag : std::string();
                             })
      .def_property_readonly("attrs",
                             [](const PyOperation& self) {
                               const auto* c = as_compute(self.op);
                               return c ? attrs_dict(c->attrs) : py::dict();
                             })
      .def_property_readonly(
          "input_tensors",
          [](const PyOperation& self) { return to_list(self.op->input_tensors(), &wrap_tensor); })
      .def_property_readonly("num_outputs",
                             [](const PyOperation& self) { return self.op->num_outputs(); })
      .def(
          "output",
          [](const PyOperation& self, int i) {
            if (i < 0 || i >= self.op->num_outputs()) {
              throw UserError(
                  ErrorKind::kIndex,
                  str_cat("operation '", self.op->name, "' has ", self.op->num_outputs(),
                          " output(s); output(", i, ") does not exist"));
            }
            return wrap_tensor(Tensor(self.op, i));
          },
          py::arg("index"))
      .def("__eq__",
           [](const PyOperation& self, py::object other) -> py::object {
             if (!py::isinstance<PyOperation>(other)) return not_implemented();
             return py::bool_(self.op == other.cast<const PyOperation&>().op);
           })
      .def("__ne__",
           [](const PyOperation& self, py::object other) -> py::object {
             if (!py::isinstance<PyOperation>(other)) return not_implemented();
             return py::bool_(self.op != other.cast<const PyOperation&>().op);
           })
      .def("__hash__",
           [](const PyOperation& self) { return std::hash<const void*>()(self.op.get()); })
      .def("__repr__", [](const PyOperation& self) { return operation_repr(self.op); });
}

void bind_functions(py::module_& m) {
  m.def(
      "var",
      [](const std::string& name, py::handle dtype) {
        DataType t = to_dtype(dtype, "the dtype of a var");
        if (t.is_handle() || t.is_void())
          type_error("var '", name, "' cannot have dtype ", t.str());
        return wrap_expr(Var::make(t, name));
      },
      py::arg("name") = "v", py::arg("dtype") = "int32");
  m.def(
      "const",
      [](py::handle value, py::handle dtype) {
        if (dtype.is_none()) {
          if (py::isinstance<PyExpr>(value)) {
            type_error("const() takes a Python number, found an expression; use astype()");
          }
          return wrap_expr(to_expr(value, "the value of const()"));
        }
        return wrap_expr(
            to_const(value, to_dtype(dtype, "the dtype of const()"), "the value of const()"));
      },
      py::arg("value"), py::arg("dtype") = py::none());
  m.def(
      "convert", [](py::handle value) { return wrap_expr(to_expr(value, "convert()'s value")); },
      py::arg("value"));
  m.def(
      "placeholder",
      [](py::handle shape, py::handle dtype, const std::string& name) {
        std::string what = "the shape of placeholder '" + name + "'";
        return wrap_tensor(placeholder(to_shape(shape, what.c_str()),
                                       to_dtype(dtype, "the dtype of a placeholder"), name));
      },
      py::arg("shape"), py::arg("dtype") = "float32", py::arg("name") = "placeholder");
  m.def("compute", &compute, py::arg("shape"), py::arg("fcompute"), py::arg("name") = "compute",
        py::arg("axis_names") = py::none(), py::arg("tag") = "", py::arg("attrs") = py::none(),
        "Builds a compute; returns the list of its output tensors.");
  m.def("reduce_axis", &reduce_axis, py::arg("dom"), py::arg("name") = "rv");
  m.def("reduce", &reduce, py::arg("kind"), py::arg("expr"), py::arg("axis"),
        py::arg("where") = py::none());
  m.def("call_intrinsic", &call_intrinsic, py::arg("name"));
  m.def(
      "math_function",
      [](const std::string& name, const py::args& args) {
        std::vector<py::handle> handles(args.begin(), args.end());
        std::string what = "argument of " + name + "()";
        return wrap_expr(math_function(name, to_matched_exprs(handles, what.c_str())));
      },
      py::arg("name"));
  m.def("math_function_names", [] {
    py::list out;
    for (const std::string& n : math_function_names()) out.append(n);
    return out;
  });
  m.def(
      "if_then_else",
      [](py::handle c, py::handle a, py::handle b) {
        return conditional("if_then_else", c, a, b, [](Expr c, Expr a, Expr b) {
          return Call::make(Intrinsic::kIfThenElse, {c, a, b});
        });
      },
      py::arg("cond"), py::arg("t"), py::arg("f"));
  m.def(
      "select",
      [](py::handle c, py::handle a, py::handle b) {
        return conditional("select", c, a, b, &Select::make);
      },
      py::arg("cond"), py::arg("t"), py::arg("f"));
  m.def("all", [](const py::args& args) { return wrap_expr(all_of(conditions(args, "all"))); });
  m.def("any", [](const py::args& args) { return wrap_expr(any_of(conditions(args, "any"))); });
  auto limit = [](Expr (*f)(DataType), const char* name) {
    return [f, name](py::handle dtype) {
      DataType t = to_dtype(dtype, name);
      if (t.is_handle() || t.is_void()) type_error(name, " of ", t.str());
      return wrap_expr(f(t));
    };
  };
  m.def("max_value", limit(&max_value, "max_value()"), py::arg("dtype"));
  m.def("min_value", limit(&min_value, "min_value()"), py::arg("dtype"));
  m.def("floordiv",
        [](py::handle a, py::handle b) { return binary_function<&floordiv>(a, b, "floordiv"); });
  m.def("floormod",
        [](py::handle a, py::handle b) { return binary_function<&floormod>(a, b, "floormod"); });
  m.def("truncdiv",
        [](py::handle a, py::handle b) { return binary_function<&truncdiv>(a, b, "truncdiv"); });
  m.def("truncmod",
        [](py::handle a, py::handle b) { return binary_function<&truncmod>(a, b, "truncmod"); });
  // TVM's tir.bitwise_* and shift_* (the operators' function forms), by one pattern.
  def_binary_function<&bitwise_and>(m, "bitwise_and");
  def_binary_function<&bitwise_or>(m, "bitwise_or");
  def_binary_function<&bitwise_xor>(m, "bitwise_xor");
  def_binary_function<&shift_left>(m, "shift_left");
  def_binary_function<&shift_right>(m, "shift_right");
  m.def(
      "bitwise_not",
      [](py::handle a) {
        Expr e = to_expr(a, "the operand of bitwise_not()");
        Expr r = bitwise_not(e);
        return wrap_expr(is_const(e) ? simplify(r) : r);
      },
      py::arg("a"));
  m.def("max", [](py::handle a, py::handle b) { return binary_function<&Max::make>(a, b, "max"); });
  m.def("min", [](py::handle a, py::handle b) { return binary_function<&Min::make>(a, b, "min"); });
  m.def(
      "cast",
      [](py::handle dtype, py::handle value) {
        return wrap_expr(cast(to_dtype(dtype, "cast()'s dtype"), to_expr(value, "cast()'s value")));
      },
      py::arg("dtype"), py::arg("value"));
  m.def(
      "simplify",
      [](py::handle e) { return wrap_expr(simplify(to_expr(e, "simplify()'s value"))); },
      py::arg("expr"));
}

}  // namespace

void bind_ir(py::module_& m) {
  bind_expr_classes(m);
  bind_tensor_classes(m);
  bind_functions(m);
}

}  // namespace ptb::python
