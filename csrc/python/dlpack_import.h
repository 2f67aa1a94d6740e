// Python objects to NDArrays: the consumer side of DLPack, on the path of every kernel call.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <string>

#include "runtime/ndarray.h"

namespace ptb {
class Module;
struct ExchangeAPI;
}  // namespace ptb

namespace ptb::python {

// How an argument is named in errors: a fixed text, or argument `index` of a Module ("argument 1
// ('B')"). Holds pointers only; the text is built when an error is raised, never on success.
class ArgName {
 public:
  ArgName(const char* text) : text_(text) {}  // NOLINT: implicit, as a string literal
  ArgName(const std::string& text) : text_(text.c_str()) {}  // NOLINT
  ArgName(const Module& module, size_t index) : module_(&module), index_(index) {}
  // Argument `index`, called `*name` ("argument 0 ('A')"), before a Module is known.
  ArgName(const std::string* name, size_t index) : name_(name), index_(index) {}
  std::string str() const;

 private:
  const char* text_ = nullptr;
  const Module* module_ = nullptr;
  const std::string* name_ = nullptr;
  size_t index_ = 0;
};

// Imports one argument without copying: an nd.NDArray (_core.NDArray, taken directly), a raw
// "dltensor"/"dltensor_versioned" capsule, or any object with __dlpack__. `what` names the
// argument in errors (e.g. "argument 2 ('Y')").
//
// For __dlpack__ objects, a type publishing the C exchange table `__dlpack_c_exchange_api__`
// (PyTorch) is converted through it; otherwise obj.__dlpack__(max_version=(1, 0)) is called,
// then obj.__dlpack__() if the producer rejects the keyword with a TypeError. A capsule is
// renamed "used_dltensor[_versioned]" once consumed; a rejected capsule (bad dtype, device...)
// is left unconsumed so that its own destructor frees it.
//
// Errors: TypeError for an object that is no array, a capsule of another kind or an unsupported
// dtype; BufferError for a consumed capsule or an unreadable DLPack version; ValueError for a
// device other than cpu/cuda_host, a malformed tensor, a PyTorch tensor with the lazy negative
// bit (its memory holds the negated values) or one that is not a dense CPU tensor (meta, sparse).
// An exception raised by the producer itself goes through once, as it is, with the argument
// named: the message is prefixed for the built-in exception classes, a note (PEP 678) is added
// for others; exceptions that are not Exceptions (KeyboardInterrupt, SystemExit) are untouched.
// Needs the GIL. The producer's deleter runs when the last handle goes; Python producers take
// the GIL in their deleters as the specification requires, but dropping imported arrays while
// holding the GIL is cheaper.
NDArray import_array(pybind11::handle obj, const ArgName& what);

// Imports a "dltensor" or "dltensor_versioned" capsule (the capsule part of import_array).
NDArray import_capsule(pybind11::handle capsule, const std::string& what);

// Raises unless `obj` may be written by a kernel as far as its framework is concerned: a PyTorch
// tensor that requires grad (autograd would not see the write) is a ValueError, a JAX array
// (immutable) a TypeError. Arrays of other types pass; their DLPack read-only flag is checked
// when the kernel runs.
void check_writable_object(pybind11::handle obj, const ArgName& what);

// Wraps a new managed tensor of `array` in a capsule whose destructor calls the deleter unless a
// consumer took it: versioned (1.0) or legacy. Export of a read-only array as legacy is a
// BufferError (a legacy capsule cannot say read-only) unless `lend_read_only` (a consumer known
// never to write, JAX).
pybind11::capsule export_capsule(const NDArray& array, bool versioned, bool lend_read_only = false);

// What import knows about a producer's type, found once per type and kept for the process.
struct ProducerInfo {
  PyTypeObject* type;
  const ExchangeAPI* api;  // a usable `__dlpack_c_exchange_api__` table, or nullptr
  PyObject* is_neg;        // PyTorch: the Tensor.is_neg method (lazy negation), else nullptr
  bool torch;              // a torch.Tensor (requires_grad, device and layout rules)
  bool immutable;          // a JAX array: never an output
  bool legacy_dlpack;      // __dlpack__ refused max_version: call it without
  // Autodiff routing (see may_need_autodiff): torch.Tensor / Parameter keep their
  // `requires_grad` descriptor here (read without a name lookup); a tensor subclass (FakeTensor,
  // FunctionalTensor: a torch.compile / export trace) or a JAX tracer always asks.
  PyObject* requires_grad = nullptr;
  bool always_ask_autodiff = false;
  // torch.Tensor / Parameter exactly: both bits may be read directly (python/torch_bits.h).
  bool plain_torch = false;
};
ProducerInfo& producer_info(PyTypeObject* type);
// Whether `info` is one of the process's cached entries (producer_info hands out a per-call entry
// once 64 types are known: a pointer to it is valid only until the next producer_info call).
bool producer_info_is_cached(const ProducerInfo* info);

// Whether a kernel call with these arguments may need autograd or a JAX trace (a torch tensor
// that requires grad, a traced tensor, a JAX tracer): then Python decides
// (Kernel._autodiff_call). A few nanoseconds per argument otherwise.
bool may_need_autodiff(PyObject* const* args, Py_ssize_t n);

// Raises a ValueError naming `what` when `obj` is a PyTorch tensor with the lazy negative bit.
void check_not_negated(PyObject* obj, const ProducerInfo& info, const ArgName& what);

// After PyTorch failed to export `obj` (its error pending): replaces the error by a ValueError
// naming `what` when the tensor is not a dense CPU tensor (meta, sparse), else leaves it.
void explain_torch_export_failure(PyObject* obj, const std::string& what);

// Sets the pending Python error again, with the argument named (see import_array), and throws.
[[noreturn]] void raise_named(const ArgName& what);

// The NDArray Python type (nullptr before bind_runtime registered it).
PyTypeObject* ndarray_type();

// Records NDArray's Python type so import_array recognises it with a pointer comparison.
void set_ndarray_type(pybind11::handle type);

// Whether import_array may use `__dlpack_c_exchange_api__` (default true). Tests turn it off to
// exercise the `__dlpack__` path with PyTorch.
void set_exchange_api_enabled(bool enabled);
bool exchange_api_enabled();

}  // namespace ptb::python
