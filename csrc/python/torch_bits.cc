#include "python/torch_bits.h"

#include <dlfcn.h>

#include <cstring>

namespace ptb::python {

namespace {

// `bool at::native::is_neg(const at::Tensor&)` (libtorch_cpu) and
// `bool c10::TensorImpl::requires_grad() const` (libc10), by their Itanium-mangled names. An
// at::Tensor is one pointer to its TensorImpl, so both take a pointer.
constexpr const char* kIsNegSymbol = "_ZN2at6native6is_negERKNS_6TensorE";
constexpr const char* kRequiresGradSymbol = "_ZNK3c1010TensorImpl13requires_gradEv";
using IsNegFn = bool (*)(const void* tensor);
using RequiresGradFn = bool (*)(const void* impl);

// Where a torch.Tensor object keeps its at::Tensor: right after the object header (PyTorch's
// THPVariable holds `at::Tensor cdata` first). Checked against `Tensor._cdata` before use.
constexpr size_t kTensorOffset = sizeof(PyObject);

IsNegFn g_is_neg = nullptr;
RequiresGradFn g_requires_grad = nullptr;

void* symbol(const char* library, const char* name) {
  // RTLD_NOLOAD: only a library torch has loaded already (which stays loaded: closing this
  // handle only drops the reference dlopen added).
  void* lib = dlopen(library, RTLD_LAZY | RTLD_NOLOAD);
  if (lib == nullptr) return nullptr;
  void* fn = dlsym(lib, name);
  dlclose(lib);
  return fn;
}

const void* tensor_of(PyObject* obj) { return reinterpret_cast<const char*>(obj) + kTensorOffset; }

const void* impl_of(PyObject* obj) { return *static_cast<const void* const*>(tensor_of(obj)); }

// A new reference to torch.<name>(*args) or nullptr (error set).
PyObject* call_torch(PyObject* torch, const char* name, PyObject* arg) {
  PyObject* fn = PyObject_GetAttrString(torch, name);
  if (fn == nullptr) return nullptr;
  PyObject* result = PyObject_CallOneArg(fn, arg);
  Py_DECREF(fn);
  return result;
}

// A new reference to `t` after t.requires_grad_() (the same object), or nullptr.
PyObject* with_grad(PyObject* t) {
  if (t == nullptr) return nullptr;
  PyObject* same = PyObject_CallMethod(t, "requires_grad_", nullptr);
  Py_DECREF(t);
  return same;
}

// Whether the direct reads of probe `t` give what PyTorch's Python API says, and that is the
// expected pair (so that every probe tests what it was built for).
bool agrees(PyObject* t, PyTypeObject* tensor_type, bool neg, bool grad) {
  if (t == nullptr || Py_TYPE(t) != tensor_type) return false;
  if (static_cast<size_t>(tensor_type->tp_basicsize) < kTensorOffset + sizeof(void*)) return false;
  // The object layout: the word after the header is the TensorImpl that _cdata names.
  PyObject* cdata = PyObject_GetAttrString(t, "_cdata");
  if (cdata == nullptr) return false;
  void* impl = PyLong_AsVoidPtr(cdata);
  Py_DECREF(cdata);
  if (impl == nullptr || impl != impl_of(t)) return false;
  PyObject* is_neg = PyObject_CallMethod(t, "is_neg", nullptr);
  PyObject* requires_grad = PyObject_GetAttrString(t, "requires_grad");
  const bool ok = is_neg != nullptr && requires_grad != nullptr && (is_neg == Py_True) == neg &&
                  (requires_grad == Py_True) == grad && g_is_neg(tensor_of(t)) == neg &&
                  g_requires_grad(impl_of(t)) == grad;
  Py_XDECREF(is_neg);
  Py_XDECREF(requires_grad);
  return ok;
}

enum class State { kUnknown, kResolving, kReady, kUnavailable };

// Whether every probe is a plain torch.Tensor: under a dispatch mode (FakeTensorMode...) the
// factories make subclasses, which say nothing about the layout; then the check waits.
bool all_plain(PyObject* const* probes, int n, PyTypeObject* tensor_type) {
  for (int i = 0; i < n; ++i) {
    if (probes[i] == nullptr || Py_TYPE(probes[i]) != tensor_type) return false;
  }
  return true;
}

// Resolves the two functions and checks them on four probes: plain, negated, requiring grad,
// both. Probes are built so that grad mode, inference mode and a torch.device context do not
// change their bits (requires_grad_ on a leaf, the negative view before it). kUnknown when the
// probes could not be made as plain tensors (to be tried again on a later call).
State resolve() {
  g_is_neg = reinterpret_cast<IsNegFn>(symbol("libtorch_cpu.so", kIsNegSymbol));
  g_requires_grad = reinterpret_cast<RequiresGradFn>(symbol("libc10.so", kRequiresGradSymbol));
  if (g_is_neg == nullptr || g_requires_grad == nullptr) return State::kUnavailable;
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == nullptr) return State::kUnavailable;
  PyObject* tensor_type = PyObject_GetAttrString(torch, "Tensor");
  PyObject* two = PyLong_FromLong(2);
  State state = State::kUnavailable;
  PyObject* probes[4] = {nullptr, nullptr, nullptr, nullptr};
  if (tensor_type != nullptr && two != nullptr && PyType_Check(tensor_type)) {
    probes[0] = call_torch(torch, "zeros", two);
    probes[1] = probes[0] ? call_torch(torch, "_neg_view", probes[0]) : nullptr;
    probes[2] = with_grad(call_torch(torch, "zeros", two));
    PyObject* negated = call_torch(torch, "zeros", two);
    probes[3] = negated ? with_grad(call_torch(torch, "_neg_view", negated)) : nullptr;
    Py_XDECREF(negated);
    auto* type = reinterpret_cast<PyTypeObject*>(tensor_type);
    if (!all_plain(probes, 4, type)) {
      state = State::kUnknown;
    } else if (agrees(probes[0], type, false, false) && agrees(probes[1], type, true, false) &&
               agrees(probes[2], type, false, true) && agrees(probes[3], type, true, true)) {
      state = State::kReady;
    }
  }
  for (PyObject* p : probes) Py_XDECREF(p);
  Py_XDECREF(two);
  Py_XDECREF(tensor_type);
  Py_DECREF(torch);
  return state;
}

// Guarded by the GIL, not a function-local static: resolving calls PyTorch, whose functions
// release the GIL, and another thread waiting on a static's initialisation while holding the
// GIL would deadlock. A call that comes while resolving is under way takes the Python route.
State g_state = State::kUnknown;
bool g_enabled = true;
int g_tries = 0;
constexpr int kMaxTries = 16;

}  // namespace

bool torch_bits_ready() {
  if (g_state == State::kReady) return g_enabled;
  if (g_state != State::kUnknown || !g_enabled) return false;
  g_state = State::kResolving;
  // Whatever error is pending stays pending: resolving leaves none of its own.
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  State found = resolve();
  PyErr_Clear();
  PyErr_Restore(type, value, tb);
  if (found == State::kUnknown && ++g_tries >= kMaxTries) found = State::kUnavailable;
  g_state = found;
  return g_state == State::kReady;
}

bool torch_is_neg(PyObject* obj) { return g_is_neg(tensor_of(obj)); }

bool torch_requires_grad(PyObject* obj) { return g_requires_grad(impl_of(obj)); }

void set_torch_bits_enabled(bool enabled) { g_enabled = enabled; }

}  // namespace ptb::python
