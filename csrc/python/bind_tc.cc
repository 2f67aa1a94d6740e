// The Tensor Comprehensions front end in _core: tc_compile(source) -> [TcFunction], and the
// exception class TCError (a ValueError and a TVMError) raised for errors in TC source, with the
// position as attributes. pytvmbridge/tc.py builds the user-facing define() on top.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "python/bindings.h"
#include "python/ir_casters.h"
#include "tc/tc.h"

namespace ptb::python {

namespace {

// The Python class of TCError; created once, kept alive by the module attribute.
PyObject* tc_error_type = nullptr;

// A Python str from text that should be UTF-8; bytes that are not become U+FFFD rather than an
// exception raised while another exception is being translated.
py::object to_str(const std::string& s) {
  return py::reinterpret_steal<py::object>(
      PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace"));
}

py::list tensors(const std::vector<Tensor>& ts) {
  py::list out;
  for (const Tensor& t : ts) out.append(wrap_tensor(t));
  return out;
}

py::list dtype_names(const std::vector<Tensor>& ts) {
  py::list out;
  for (const Tensor& t : ts) out.append(t.dtype().str());
  return out;
}

// The Python TCError for `e`, with its position attributes (not raised).
py::object tc_error_object(const tc::TCError& e) {
  py::object exc =
      py::reinterpret_steal<py::object>(PyObject_CallOneArg(tc_error_type, to_str(e.what()).ptr()));
  if (!exc) throw py::error_already_set();
  exc.attr("line") = e.line();
  exc.attr("column") = e.col();
  exc.attr("message") = to_str(e.message());
  exc.attr("source_line") = to_str(e.source_line());
  return exc;
}

}  // namespace

void bind_tc(py::module_& m) {
  tc_error_type = PyErr_NewExceptionWithDoc(
      "pytvmbridge.tc.TCError",
      "An error in Tensor Comprehensions source. str() shows the position, the message, the "
      "source line and a caret; the attributes line, column (both 1-based), message and "
      "source_line hold them separately.",
      user_error_class(ErrorKind::kValue), nullptr);
  if (tc_error_type == nullptr) throw py::error_already_set();
  m.attr("TCError") = py::handle(tc_error_type);

  // Registered after bind_errors' translator, so this one is tried first; anything but a
  // TCError propagates to the general translator.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tc::TCError& e) {
      try {
        PyErr_SetObject(tc_error_type, tc_error_object(e).ptr());
      } catch (py::error_already_set& failed) {
        failed.restore();  // building the exception failed: raise that error instead
      }
    }
  });

  py::class_<tc::TcFunction, std::shared_ptr<tc::TcFunction>>(
      m, "TcFunction", "One TC def translated to tensor expressions (see pytvmbridge.tc).")
      .def_readonly("name", &tc::TcFunction::name)
      .def_readonly("signature", &tc::TcFunction::signature)
      .def_readonly("input_names", &tc::TcFunction::input_names)
      .def_readonly("output_names", &tc::TcFunction::output_names)
      .def_property_readonly("inputs", [](const tc::TcFunction& f) { return tensors(f.inputs); })
      .def_property_readonly("outputs", [](const tc::TcFunction& f) { return tensors(f.outputs); })
      .def_property_readonly("input_dtypes",
                             [](const tc::TcFunction& f) { return dtype_names(f.inputs); })
      .def_property_readonly("output_dtypes",
                             [](const tc::TcFunction& f) { return dtype_names(f.outputs); })
      .def_property_readonly("has_checks",
                             [](const tc::TcFunction& f) { return !f.checks.empty(); })
      .def(
          "prepare",
          [](const tc::TcFunction& f, const std::vector<std::vector<int64_t>>& shapes,
             const std::optional<std::vector<std::string>>& dtypes) {
            std::vector<DataType> parsed;
            if (dtypes) {
              for (const std::string& d : *dtypes) parsed.push_back(DataType::parse(d));
            }
            return f.prepare(shapes, dtypes ? &parsed : nullptr);
          },
          py::arg("shapes"), py::arg("dtypes") = py::none(),
          "Binds the sizes from the input shapes (checking the dtypes when given) and returns "
          "the output shapes; raises TypeError / ValueError naming the argument and size.")
      .def("__repr__", [](const tc::TcFunction& f) { return "<TcFunction " + f.signature + ">"; });

  m.def(
      "tc_compile",
      [](const std::string& source) {
        std::vector<std::shared_ptr<tc::TcFunction>> out;
        for (tc::TcFunction& f : tc::compile_tc(source)) {
          out.push_back(std::make_shared<tc::TcFunction>(std::move(f)));
        }
        return out;
      },
      py::arg("source"),
      "Parses and checks TC source; one TcFunction per def, in order. Raises TCError.");

  m.def(
      "tc_compile_defs",
      [](const std::string& source, int index_bits) {
        if (index_bits != 32 && index_bits != 64) {
          value_error("tc_compile_defs: index_bits must be 32 or 64, got ", index_bits);
        }
        py::list out;
        for (tc::TcDef& d : tc::compile_tc_defs(source, DataType::Int(index_bits))) {
          py::object value = d.fn ? py::cast(d.fn) : tc_error_object(*d.error);
          out.append(py::make_tuple(to_str(d.name), value));
        }
        return out;
      },
      py::arg("source"), py::arg("index_bits") = 32,
      "Like tc_compile, but each def on its own: a list of (name, TcFunction or TCError), so "
      "one def's error leaves the others usable. Raises TCError for errors of no single def.");
}

}  // namespace ptb::python
