// _core.Caller: the whole call of a kernel from Python, in C++ (API.md section 5). It is what
// `to_pytorch(module)` (and every bridge) returns, the base class of `@kernel`'s Kernel, and what
// tc.define calls. One call:
//
//   1. reads every array through its framework's fastest route (python/call_args.h);
//   2. finds the compiled variant: a bridge has one Module; a kernel looks its variants up by
//      the inputs' layout class (dtype, rank, which sizes are equal) and asks Python
//      (`self._variant(*inputs)`) to compile a new one;
//   3. checks a kernel's read ranges against the inputs' sizes;
//   4. all arrays given: runs in place, returns None. Inputs only: binds the sizes, computes the
//      outputs' shapes, allocates them in the framework (the bridge's, or the first input's for a
//      kernel), runs, and returns them (one array, or a tuple).
//
// The kernel runs with the GIL released. Errors are raised before anything is written, naming
// the argument; nothing is retried (a producer is asked for its array once).
#include "python/bindings.h"  // first: Python.h before structmember.h

#include <pybind11/stl.h>
#include <structmember.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "python/call_args.h"
#include "python/dlpack_import.h"
#include "python/gil.h"
#include "runtime/module.h"
#include "support/error.h"

namespace ptb::python {

namespace {

// Arguments a call keeps on the stack; calls with more use the heap.
constexpr int kMaxArgs = 16;

// Where an output's size in one dimension comes from.
struct OutDim {
  enum Kind : uint8_t { kConst, kInput } kind;
  int64_t value;   // kConst
  int input, dim;  // kInput: this input's size in this dimension
};

// "Input k must be at least this long in dimension d" (see kernel.py, read ranges).
struct ReadCheck {
  int k, d;
  int64_t start;
  bool constant;
  int64_t count;  // constant
  int k2, d2;     // else: the size of input k2 in dimension d2
};

// One compiled kernel and what a call needs to know about its signature, computed once.
struct Variant {
  std::vector<int64_t> key;    // the layout class (kernels only)
  PyObject* module = nullptr;  // the _core.Module, a strong reference
  const Module* mod = nullptr;
  int n_all = 0, n_in = 0, n_out = 0;
  std::vector<int> inputs, outputs;           // argument indices
  std::vector<std::vector<OutDim>> out_dims;  // per output
  bool shapes_by_module = false;  // an output size is an expression: Module::output_shapes
  std::vector<ReadCheck> reads;

  ~Variant() {
    if (Py_IsInitialized()) {
      PyGILState_STATE gil = PyGILState_Ensure();
      Py_XDECREF(module);
      PyGILState_Release(gil);
    }
  }
};

// Bumped (from Python) when the schedule a kernel's new variant would get may have changed: an
// `autotvm.apply_history_best` context entered or left. A kernel whose variants were found
// under another epoch drops them and asks `_variant` again, which keys its own cache by the
// tuned configuration; without this, a kernel called once kept its first schedule for good.
std::atomic<uint64_t> g_dispatch_epoch{0};

struct State {
  std::vector<std::shared_ptr<const Variant>> variants;
  uint64_t epoch = 0;  // g_dispatch_epoch when `variants` were found
  // Variants keyed by exact shapes, not layout classes: while tuned schedules may apply
  // (`_variant` says so), a record holds for its own shapes only, and a variant found for one
  // shape of a class must not serve another shape that has a record of its own.
  bool exact_shapes = false;
  std::vector<std::string> names;  // a kernel's argument names, for errors before a variant
  std::string name;                // a kernel's name
  Py_ssize_t n_inputs = -1;        // a kernel's input count, when its function says
};

struct Caller {
  PyObject ob_base;
  vectorcallfunc vectorcall;
  PyObject* dict;
  PyObject* framework;  // a bridge's: outputs are allocated there; nullptr for a kernel
  AllocRoute alloc;
  bool bridge;
  State* state;
};

DLDataType dl_dtype(const DataType& t) {
  if (t.is_bool()) return DLDataType{kDLBoolCode, 8, 1};
  return DLDataType{static_cast<uint8_t>(t.code()), static_cast<uint8_t>(t.bits()), 1};
}

std::shared_ptr<Variant> make_variant(PyObject* module) {
  const Module* mod = nullptr;
  try {
    mod = &py::cast<const Module&>(py::handle(module));
  } catch (const std::exception&) {
    type_error("expected a built pytvmbridge Module, got an object of type '",
               Py_TYPE(module)->tp_name, "'");
  }
  auto v = std::make_shared<Variant>();
  const auto& args = mod->args();
  Py_INCREF(module);
  v->module = module;
  v->mod = mod;
  v->n_all = static_cast<int>(args.size());
  for (int i = 0; i < v->n_all; ++i) {
    if (args[i].is_output) {
      v->outputs.push_back(i);
      ++v->n_out;
    } else {
      v->inputs.push_back(i);
      ++v->n_in;
    }
  }
  for (int k = 0; k < v->n_out; ++k) {
    std::vector<OutDim> dims;
    for (const DimSpec& dim : args[v->outputs[k]].dims) {
      if (dim.kind == DimSpec::Kind::kConst) {
        dims.push_back({OutDim::kConst, dim.value, 0, 0});
        continue;
      }
      bool found = false;
      for (int j = 0; j < v->n_in && !found && dim.kind == DimSpec::Kind::kVar; ++j) {
        const auto& in = args[v->inputs[j]].dims;
        for (size_t d = 0; d < in.size() && !found; ++d) {
          if (in[d].kind == DimSpec::Kind::kVar && in[d].slot == dim.slot) {
            dims.push_back({OutDim::kInput, 0, j, static_cast<int>(d)});
            found = true;
          }
        }
      }
      // An expression, or a size no input determines: the Module computes (or refuses) it.
      if (!found) v->shapes_by_module = true;
    }
    v->out_dims.push_back(std::move(dims));
  }
  return v;
}

// The read checks of a kernel variant, from kernel.py's list of (k, d, start, extent) where
// extent is ("const", n) or ("size", k2, d2).
void parse_reads(py::handle reads, Variant* v) {
  for (py::handle r : reads) {
    auto t = r.cast<py::tuple>();
    auto extent = t[3].cast<py::tuple>();
    ReadCheck c{t[0].cast<int>(), t[1].cast<int>(), t[2].cast<int64_t>(), false, 0, 0, 0};
    if (extent[0].cast<std::string>() == "const") {
      c.constant = true;
      c.count = extent[1].cast<int64_t>();
    } else {
      c.k2 = extent[1].cast<int>();
      c.d2 = extent[2].cast<int>();
    }
    v->reads.push_back(c);
  }
}

std::string shape_text(const DLTensor& t) {
  std::string s = "(";
  for (int d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.shape[d]);
  return s + (t.ndim == 1 ? ",)" : ")");
}

void check_reads(const Variant& v, CallArgs<kMaxArgs>& in) {
  for (const ReadCheck& c : v.reads) {
    const DLTensor& t = in[c.k].tensor();
    if (c.d >= t.ndim || (!c.constant && c.d2 >= in[c.k2].tensor().ndim)) continue;
    const int64_t count = c.constant ? c.count : in[c.k2].tensor().shape[c.d2];
    if (count > 0 && c.start + count > t.shape[c.d]) {
      value_error("kernel '", v.mod->name(), "' reads ", ArgName(*v.mod, v.inputs[c.k]).str(),
                  " up to index ", c.start + count - 1, " in dimension ", c.d,
                  ", but its shape is ", shape_text(t),
                  ": the inputs' sizes do not fit what the function computes");
    }
  }
}

// Below this many elements in all the arrays together, a call keeps the GIL: releasing and
// taking it back costs more than such a kernel runs, and other threads would hardly get to run.
constexpr int64_t kKeepGilElements = 1 << 14;

// Runs the kernel (`tensors` in the Module's order), with the GIL released unless it is small.
void run(const Module& mod, const DLTensor* const* tensors, const bool* read_only, int n_all) {
  int64_t elements = 0;
  for (int i = 0; i < n_all && elements < kKeepGilElements; ++i) {
    int64_t size = 1;
    for (int d = 0; d < tensors[i]->ndim; ++d) size *= tensors[i]->shape[d];
    elements += size;
  }
  if (elements < kKeepGilElements) {
    mod.run(tensors, read_only, static_cast<size_t>(n_all));
    return;
  }
  without_gil([&] { mod.run(tensors, read_only, static_cast<size_t>(n_all)); });
}

// All arrays given: reads them (each framework's route), runs, writes the outputs in place.
void call_inplace(const Module& mod, PyObject* const* arrays, Py_ssize_t n) {
  const auto& specs = mod.args();
  if (static_cast<size_t>(n) != specs.size()) {
    type_error("kernel '", mod.name(), "' takes ", specs.size(), " array(s), got ", n);
  }
  const int n_all = static_cast<int>(n);
  CallArgs<kMaxArgs> args(n_all);
  PerArg<const DLTensor*, kMaxArgs> tensors(n_all);
  PerArg<bool, kMaxArgs> read_only(n_all);
  for (int i = 0; i < n_all; ++i) {
    args[i].read(arrays[i], ArgName(mod, i), specs[i].is_output);
    tensors[i] = &args[i].tensor();
    read_only[i] = args[i].read_only();
  }
  run(mod, tensors.data(), read_only.data(), n_all);
  for (int i = 0; i < n_all; ++i) args[i].written();
}

// Inputs read into `in`; allocates the outputs in `framework`, runs, returns them.
PyObject* call_allocating(const Variant& v, CallArgs<kMaxArgs>& in, PyObject* framework,
                          AllocRoute route) {
  const auto& specs = v.mod->args();
  PerArg<std::array<int64_t, kMaxViewDims>, kMaxArgs> shapes(v.n_out);
  std::vector<std::vector<int64_t>> computed;
  bool by_module = v.shapes_by_module;
  for (int k = 0; k < v.n_in && !by_module; ++k) {
    // A wrong rank is the Module's error to raise (before any dimension is read).
    by_module = in[k].tensor().ndim != static_cast<int>(specs[v.inputs[k]].dims.size());
  }
  if (by_module) {
    PerArg<const DLTensor*, kMaxArgs> tensors(v.n_in);
    for (int k = 0; k < v.n_in; ++k) tensors[k] = &in[k].tensor();
    computed = v.mod->output_shapes(tensors.data(), static_cast<size_t>(v.n_in));
  }
  // A pointwise kernel's outputs take its inputs' layout when they share one that is dense but
  // not row-major (channels_last, Fortran order), as PyTorch's elementwise operators and NumPy's
  // ufuncs do: the kernel then runs its compact variant on all of them (Module::run), not the
  // strided one.
  const int64_t* like_strides = nullptr;
  if ((route == AllocRoute::kTorch || route == AllocRoute::kNumpy) && v.mod->pointwise() &&
      v.n_in > 0) {
    PerArg<const DLTensor*, kMaxArgs> inputs(v.n_in);
    for (int k = 0; k < v.n_in; ++k) inputs[k] = &in[k].tensor();
    const DLTensor& first = *inputs[0];
    if (!is_compact(first) && share_dense_layout(inputs.data(), static_cast<size_t>(v.n_in))) {
      like_strides = first.strides;
    }
  }
  CallArgs<kMaxArgs> out(v.n_out);
  for (int k = 0; k < v.n_out; ++k) {
    const ArgSpec& spec = specs[v.outputs[k]];
    const int ndim = static_cast<int>(spec.dims.size());
    if (ndim > kMaxViewDims) not_implemented("outputs of more than ", kMaxViewDims, " dimensions");
    const int64_t* shape = shapes[k].data();
    if (by_module) {
      shape = computed[k].data();
    } else {
      for (int d = 0; d < ndim; ++d) {
        const OutDim& dim = v.out_dims[k][d];
        shapes[k][d] =
            dim.kind == OutDim::kConst ? dim.value : in[dim.input].tensor().shape[dim.dim];
      }
    }
    out[k].allocate(framework, route, ndim, shape, dl_dtype(spec.dtype), like_strides);
  }
  PerArg<const DLTensor*, kMaxArgs> tensors(v.n_all);
  PerArg<bool, kMaxArgs> read_only(v.n_all);
  for (int k = 0; k < v.n_in; ++k) {
    tensors[v.inputs[k]] = &in[k].tensor();
    read_only[v.inputs[k]] = in[k].read_only();
  }
  for (int k = 0; k < v.n_out; ++k) {
    tensors[v.outputs[k]] = &out[k].tensor();
    read_only[v.outputs[k]] = false;
  }
  run(*v.mod, tensors.data(), read_only.data(), v.n_all);
  if (v.n_out == 1) return out[0].result();
  PyObject* result = PyTuple_New(v.n_out);
  if (result == nullptr) return nullptr;
  for (int k = 0; k < v.n_out; ++k) {
    PyObject* item = out[k].result();
    if (item == nullptr) {
      Py_DECREF(result);
      return nullptr;
    }
    PyTuple_SET_ITEM(result, k, item);
  }
  return result;
}

[[noreturn]] void count_error(const Variant& v, Py_ssize_t n) {
  type_error("kernel '", v.mod->name(), "' takes all ", v.n_all,
             " arrays (outputs written in place) or its ", v.n_in,
             " input(s) (outputs allocated and returned), got ", n);
}

PyObject* bridge_call(Caller* self, PyObject* const* args, Py_ssize_t n) {
  std::shared_ptr<const Variant> v = self->state->variants.front();
  if (n == v->n_all) {
    call_inplace(*v->mod, args, n);
    Py_RETURN_NONE;
  }
  if (n != v->n_in) count_error(*v, n);
  CallArgs<kMaxArgs> in(v->n_in);
  for (int k = 0; k < v->n_in; ++k) in[k].read(args[k], ArgName(*v->mod, v->inputs[k]), false);
  return call_allocating(*v, in, self->framework, self->alloc);
}

// Whether a tensor has more than 2**31 - 1 elements (without overflowing on huge shapes).
bool past_int32(const DLTensor& t) {
  constexpr int64_t kInt32Max = 2147483647;
  int64_t count = 1;
  bool past = false;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.shape[d] == 0) return false;
    if (past || t.shape[d] > kInt32Max / count) {
      past = true;
    } else {
      count *= t.shape[d];
    }
  }
  return past;
}

// A kernel's layout class of its inputs: per input dtype and rank, then for each dimension the
// index of its size among the distinct sizes seen so far (-1 for a size of 1: such a dimension is
// the constant 1 in the kernel, so that NumPy broadcasting and squeeze see it), then whether an
// input has 2**31 elements or more (kernel.py builds the same classes; such inputs get int64
// size variables, a variant of their own).
size_t layout_key(CallArgs<kMaxArgs>& in, Py_ssize_t n, int64_t* key, size_t capacity,
                  bool exact_shapes) {
  int64_t seen[64];
  size_t n_seen = 0, len = 0;
  bool wide = false;
  for (Py_ssize_t k = 0; k < n; ++k) {
    const DLTensor& t = in[k].tensor();
    if (len + 2 + t.ndim > capacity) return 0;
    key[len++] = (int64_t{t.dtype.code} << 40) | (int64_t{t.dtype.bits} << 32) | t.ndim;
    for (int d = 0; d < t.ndim; ++d) {
      if (t.shape[d] == 1) {
        key[len++] = -1;
        continue;
      }
      size_t id = 0;
      while (id < n_seen && seen[id] != t.shape[d]) ++id;
      if (id == n_seen) {
        if (n_seen == 64) return 0;
        seen[n_seen++] = t.shape[d];
      }
      key[len++] = static_cast<int64_t>(id);
    }
    wide = wide || past_int32(t);
  }
  key[len++] = wide ? 1 : 0;
  if (exact_shapes) {
    for (Py_ssize_t k = 0; k < n; ++k) {
      const DLTensor& t = in[k].tensor();
      if (len + t.ndim > capacity) return 0;
      for (int d = 0; d < t.ndim; ++d) key[len++] = t.shape[d];
    }
  }
  return len;
}

std::shared_ptr<const Variant> find_variant(const State& state, const int64_t* key, size_t len) {
  for (const auto& v : state.variants) {
    if (v->key.size() == len && std::equal(key, key + len, v->key.begin())) return v;
  }
  return nullptr;
}

PyObject* kernel_call(Caller* self, PyObject* const* args, Py_ssize_t n, PyObject* out) {
  State& state = *self->state;
  if (state.n_inputs >= 0 && n != state.n_inputs) {
    type_error("kernel '", state.name, "' takes ", state.n_inputs, " input array(s), got ", n);
  }
  if (n == 0) type_error("kernel '", state.name, "' needs at least one input array");
  CallArgs<kMaxArgs> in(static_cast<int>(n));
  static const std::string kUnnamed = "x";
  for (Py_ssize_t k = 0; k < n; ++k) {
    const std::string* name =
        static_cast<size_t>(k) < state.names.size() ? &state.names[k] : &kUnnamed;
    in[k].read(args[k], ArgName(name, k), false);
  }
  const uint64_t epoch = g_dispatch_epoch.load(std::memory_order_relaxed);
  if (state.epoch != epoch) {
    state.variants.clear();
    state.epoch = epoch;
    state.exact_shapes = false;
  }
  int64_t key[256];
  size_t len = layout_key(in, n, key, 256, state.exact_shapes);
  std::shared_ptr<const Variant> v = len ? find_variant(state, key, len) : nullptr;
  if (v == nullptr) {
    // Python compiles (or finds) the variant from each input's (dtype, shape):
    // `_variant(*specs) -> (module, reads)`. The arrays themselves are not passed: a capsule
    // has been consumed already.
    py::tuple specs(n);
    for (Py_ssize_t k = 0; k < n; ++k) {
      const DLTensor& t = in[k].tensor();
      py::tuple shape(t.ndim);
      for (int d = 0; d < t.ndim; ++d) shape[d] = py::int_(t.shape[d]);
      specs[k] = py::make_tuple(
          DataType(static_cast<DataType::Code>(t.dtype.code), t.dtype.bits).str(), shape);
    }
    py::object found = py::handle(reinterpret_cast<PyObject*>(self)).attr("_variant")(*specs);
    auto pair = found.cast<py::tuple>();
    const bool exact = pair.size() > 2 && PyObject_IsTrue(pair[2].ptr()) == 1;
    if (exact != state.exact_shapes) {  // the other kind of key: those variants are dropped
      state.variants.clear();
      state.exact_shapes = exact;
      len = layout_key(in, n, key, 256, exact);
    }
    auto fresh = make_variant(pair[0].ptr());
    parse_reads(pair[1], fresh.get());
    fresh->key.assign(key, key + len);
    if (fresh->n_in != n) count_error(*fresh, n);
    if (len != 0 && find_variant(state, key, len) == nullptr) state.variants.push_back(fresh);
    v = fresh;
  }
  check_reads(*v, in);
  if (out == nullptr || out == Py_None) {
    const TypeRoute& first = route_of(args[0]);
    return call_allocating(*v, in, first.framework, first.alloc);
  }
  // out=: one array, or a tuple/list for several outputs; written in place and returned.
  const bool sequence = PyTuple_Check(out) || PyList_Check(out);
  const Py_ssize_t n_out = sequence ? PySequence_Fast_GET_SIZE(out) : 1;
  if (n_out != v->n_out) {
    type_error("kernel '", v->mod->name(), "' has ", v->n_out, " output(s), got ", n_out,
               " in out=");
  }
  const auto& specs = v->mod->args();
  CallArgs<kMaxArgs> outputs(v->n_out);
  PerArg<const DLTensor*, kMaxArgs> tensors(v->n_all);
  PerArg<bool, kMaxArgs> read_only(v->n_all);
  for (int k = 0; k < v->n_in; ++k) {
    tensors[v->inputs[k]] = &in[k].tensor();
    read_only[v->inputs[k]] = in[k].read_only();
  }
  for (int k = 0; k < v->n_out; ++k) {
    const int i = v->outputs[k];
    PyObject* array = sequence ? PySequence_Fast_GET_ITEM(out, k) : out;
    outputs[k].read(array, ArgName(*v->mod, i), specs[i].is_output);
    tensors[i] = &outputs[k].tensor();
    read_only[i] = outputs[k].read_only();
  }
  run(*v->mod, tensors.data(), read_only.data(), v->n_all);
  for (int k = 0; k < v->n_out; ++k) outputs[k].written();
  Py_INCREF(out);
  return out;
}

// type(self)._autodiff_call(self, args, out): a new reference (NotImplemented for the plain
// path); raises when the subclass does not define it (a bare Caller kernel never needs it).
PyObject* autodiff_call(PyObject* self, PyObject* const* args, Py_ssize_t n, PyObject* out) {
  static PyObject* name = PyUnicode_InternFromString("_autodiff_call");
  PyObject* method = PyObject_GetAttr(reinterpret_cast<PyObject*>(Py_TYPE(self)), name);
  if (method == nullptr) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
    Py_INCREF(Py_NotImplemented);
    return Py_NotImplemented;
  }
  py::object hook = py::reinterpret_steal<py::object>(method);
  py::tuple inputs(n);
  for (Py_ssize_t k = 0; k < n; ++k) inputs[k] = py::reinterpret_borrow<py::object>(args[k]);
  py::object result = hook(py::handle(self), inputs, py::handle(out ? out : Py_None));
  return result.release().ptr();
}

// The vectorcall of a Caller (`autodiff`) and Caller._plain_call (not `autodiff`: what the
// autodiff routes run on detached inputs, so that they never route again).
PyObject* call(PyObject* obj, PyObject* const* args, size_t nargsf, PyObject* kwnames,
               bool autodiff) {
  auto* self = reinterpret_cast<Caller*>(obj);
  const Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  try {
    if (self->state == nullptr) {
      PyErr_SetString(PyExc_ReferenceError, "this Caller was cleared by the garbage collector");
      return nullptr;
    }
    PyObject* out = nullptr;
    if (kwnames != nullptr) {
      const Py_ssize_t n_kw = PyTuple_GET_SIZE(kwnames);
      for (Py_ssize_t k = 0; k < n_kw; ++k) {
        PyObject* key = PyTuple_GET_ITEM(kwnames, k);
        if (self->bridge || PyUnicode_CompareWithASCIIString(key, "out") != 0) {
          PyErr_Format(PyExc_TypeError, "%s got an unexpected keyword argument '%U'",
                       self->bridge ? "a bridged kernel" : "a kernel", key);
          return nullptr;
        }
        out = args[n + k];
      }
    }
    if (self->bridge) {
      if (self->state->variants.empty()) {
        PyErr_SetString(PyExc_TypeError, "this Caller has no module");
        return nullptr;
      }
      if (autodiff && may_need_autodiff(args, n)) {
        PyObject* routed = autodiff_call(obj, args, n, out);  // a differentiable bridge
        if (routed != Py_NotImplemented) return routed;
        Py_DECREF(routed);
      }
      return bridge_call(self, args, n);
    }
    if (autodiff && may_need_autodiff(args, n)) {
      // Python decides (pytvmbridge/autodiff): autograd's custom op, a JAX trace, or, when
      // neither applies after all (grad mode off), NotImplemented and the plain call below.
      PyObject* routed = autodiff_call(obj, args, n, out);
      if (routed != Py_NotImplemented) return routed;
      Py_DECREF(routed);
    }
    return kernel_call(self, args, n, out);
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    if (!set_python_error(e)) PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyObject* caller_call(PyObject* obj, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  return call(obj, args, nargsf, kwnames, true);
}

PyObject* caller_plain_call(PyObject* obj, PyObject* const* args, size_t nargsf,
                            PyObject* kwnames) {
  return call(obj, args, nargsf, kwnames, false);
}

int caller_traverse(PyObject* obj, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<Caller*>(obj);
  Py_VISIT(Py_TYPE(obj));
  Py_VISIT(self->dict);
  Py_VISIT(self->framework);
  if (self->state != nullptr) {
    for (const auto& v : self->state->variants) Py_VISIT(v->module);
  }
  return 0;
}

int caller_clear(PyObject* obj) {
  auto* self = reinterpret_cast<Caller*>(obj);
  Py_CLEAR(self->dict);
  Py_CLEAR(self->framework);
  delete self->state;  // drops the variants (and their modules)
  self->state = nullptr;
  return 0;
}

void caller_dealloc(PyObject* obj) {
  PyTypeObject* type = Py_TYPE(obj);
  PyObject_GC_UnTrack(obj);
  caller_clear(obj);
  type->tp_free(obj);
  Py_DECREF(type);
}

PyObject* caller_new(PyTypeObject* type, PyObject*, PyObject*) {
  // Takes (and ignores) any arguments: Kernel, a Python subclass, has an __init__ of its own.
  auto* self = reinterpret_cast<Caller*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  self->vectorcall = caller_call;
  self->dict = nullptr;
  self->framework = nullptr;
  self->alloc = AllocRoute::kNDArray;
  self->bridge = false;
  self->state = new State();
  return reinterpret_cast<PyObject*>(self);
}

Caller* checked(PyObject* obj) {
  auto* self = reinterpret_cast<Caller*>(obj);
  if (self->state == nullptr) value_error("this Caller was cleared by the garbage collector");
  return self;
}

// Caller._bridge(module, framework): this caller becomes module's bridge to framework.
// Whether a subclass of Caller may be called through the vectorcall: it keeps Caller's tp_call,
// or its __call__ is marked `_same_as_vectorcall = True` (a Python method doing the same call).
bool calls_like_caller(PyTypeObject* type) {
  if (type->tp_vectorcall_offset != offsetof(Caller, vectorcall)) return false;
  if (type->tp_call == PyVectorcall_Call) return true;
  static PyObject* call_name = PyUnicode_InternFromString("__call__");
  PyObject* call = _PyType_Lookup(type, call_name);  // borrowed
  if (call == nullptr) return false;
  PyObject* mark = PyObject_GetAttrString(call, "_same_as_vectorcall");
  if (mark == nullptr) {
    PyErr_Clear();
    return false;
  }
  const bool same = mark == Py_True;
  Py_DECREF(mark);
  return same;
}

PyObject* caller_bridge(PyObject* obj, PyObject* const* args, Py_ssize_t n) {
  try {
    if (n != 2) type_error("_bridge(module, framework)");
    Caller* self = checked(obj);
    auto v = make_variant(args[0]);
    self->state->variants.assign(1, v);
    Py_INCREF(args[1]);
    Py_XSETREF(self->framework, args[1]);
    self->alloc = alloc_route_of(args[1]);
    self->bridge = true;
    // As for kernels (caller_kernel): a differentiable bridge's __call__ is read only by
    // torch.compile's tracer; every other call takes the vectorcall.
    PyTypeObject* type = Py_TYPE(obj);
    if (calls_like_caller(type)) type->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
    Py_RETURN_NONE;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    if (!set_python_error(e)) PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

// Caller._kernel(name, arg_names, n_inputs): a kernel's dispatch (n_inputs -1: any count).
PyObject* caller_kernel(PyObject* obj, PyObject* const* args, Py_ssize_t n) {
  try {
    if (n != 3) type_error("_kernel(name, arg_names, n_inputs)");
    Caller* self = checked(obj);
    self->state->name = py::cast<std::string>(args[0]);
    self->state->names = py::handle(args[1]).is_none()
                             ? std::vector<std::string>()
                             : py::cast<std::vector<std::string>>(args[1]);
    self->state->n_inputs = py::cast<Py_ssize_t>(args[2]);
    self->bridge = false;
    // Python 3.11 does not pass Py_TPFLAGS_HAVE_VECTORCALL on to a Python subclass (Kernel), so
    // its calls would build an argument tuple and go through tp_call. A subclass that keeps the
    // inherited tp_call, or whose __call__ says it does what the vectorcall does (Kernel's, read
    // only by torch.compile's tracer), is called exactly like a Caller: say so.
    PyTypeObject* type = Py_TYPE(obj);
    if (calls_like_caller(type)) type->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
    Py_RETURN_NONE;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    if (!set_python_error(e)) PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyObject* caller_forget(PyObject* obj, PyObject*) {
  auto* self = reinterpret_cast<Caller*>(obj);
  if (self->state != nullptr && !self->bridge) self->state->variants.clear();
  Py_RETURN_NONE;
}

PyObject* caller_module(PyObject* obj, void*) {
  auto* self = reinterpret_cast<Caller*>(obj);
  if (self->state == nullptr || !self->bridge || self->state->variants.empty()) Py_RETURN_NONE;
  PyObject* module = self->state->variants.front()->module;
  Py_INCREF(module);
  return module;
}

PyMethodDef kMethods[] = {
    {"_bridge", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(caller_bridge)),
     METH_FASTCALL, "_bridge(module, framework): run `module`, allocating in `framework`."},
    {"_kernel", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(caller_kernel)),
     METH_FASTCALL, "_kernel(name, arg_names, n_inputs): dispatch over compiled variants."},
    {"_forget_variants", caller_forget, METH_NOARGS, "Drops every compiled variant."},
    {"_plain_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void*>(caller_plain_call)),
     METH_FASTCALL | METH_KEYWORDS, "_plain_call(*arrays, out=None): no autodiff routing."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef kGetSet[] = {
    {"module", caller_module, nullptr, "The Module a bridge runs (None for a kernel).", nullptr},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMemberDef kMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(Caller, vectorcall), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(Caller, dict), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyType_Slot kSlots[] = {
    {Py_tp_new, reinterpret_cast<void*>(caller_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(caller_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(caller_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(caller_clear)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_methods, kMethods},
    {Py_tp_getset, kGetSet},
    {Py_tp_members, kMembers},
    {Py_tp_doc,
     const_cast<char*>("The call of a kernel from Python, in C++: a bridge (to_pytorch...) or "
                       "the base of @kernel's Kernel; see pytvmbridge/bridges.py.")},
    {0, nullptr}};

PyType_Spec kSpec = {
    "pytvmbridge._core.Caller", sizeof(Caller), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    kSlots};

// Module.__call__ as the type's tp_call: pybind11's dispatch (overload resolution, a py::args
// tuple) costs several times what the call itself does.
PyObject* module_tp_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  try {
    if (kwargs != nullptr && PyDict_GET_SIZE(kwargs) != 0) {
      type_error("a Module takes its arrays as positional arguments only");
    }
    const Module& mod = py::cast<const Module&>(py::handle(self));
    call_inplace(mod, reinterpret_cast<PyTupleObject*>(args)->ob_item, PyTuple_GET_SIZE(args));
    Py_RETURN_NONE;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    if (!set_python_error(e)) PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

}  // namespace

void call_module(const Module& mod, const py::args& arrays) {
  call_inplace(mod, reinterpret_cast<PyTupleObject*>(arrays.ptr())->ob_item,
               PyTuple_GET_SIZE(arrays.ptr()));
}

void set_module_call(py::handle module_type) {
  reinterpret_cast<PyTypeObject*>(module_type.ptr())->tp_call = module_tp_call;
}

void bind_bridges(py::module_& m) {
  PyObject* type = PyType_FromSpec(&kSpec);
  if (type == nullptr) throw py::error_already_set();
  m.add_object("Caller", py::reinterpret_steal<py::object>(type));
  m.def("_set_framework_resolver", &set_framework_resolver, py::arg("resolver"),
        "frameworks.framework_of, asked once per new array type.");
  m.def(
      "_bump_dispatch_epoch", [] { g_dispatch_epoch.fetch_add(1, std::memory_order_relaxed); },
      "Kernels look their compiled variants up in Python again on their next call (an "
      "apply_history_best context was entered or left).");
}

}  // namespace ptb::python
