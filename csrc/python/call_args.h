// The arrays of one kernel call: Python objects viewed as DLTensors for the duration of the call
// (each framework through its fastest route), and outputs allocated in a framework.
//
// Reading an argument never copies. The routes, chosen once per Python type:
//   nd.NDArray     its own DLTensor;
//   torch.Tensor   the C exchange table's DLTensor view (no managed tensor, no capsule);
//   numpy.ndarray  NumPy's C API (the array's own fields);
//   JAX arrays     the buffer protocol (a CPU array's own memory, read-only);
//   MXNet          the framework's Python conversion (as_input/as_output), then DLPack;
//   anything else  DLPack (import_array: __dlpack__ or a capsule).
// Allocating an output: torch through the C exchange table's allocator, NumPy through its C
// API, nd.NDArray (and the generic DLPack framework) as an NDArray, JAX as an NDArray handed to
// JAX after the kernel ran (Framework.wrap), MXNet through Framework.empty/writable/wrap.
#pragma once

#include <memory>
#include <new>

#include "python/bindings.h"
#include "python/dlpack_import.h"
#include "runtime/ndarray.h"

namespace ptb::python {

constexpr int kMaxViewDims = 16;

enum class ReadRoute : uint8_t { kNDArray, kTorch, kNumpy, kBuffer, kDLPack, kConvert };
enum class AllocRoute : uint8_t { kTorch, kNumpy, kNDArray, kWrap, kPython };

// What a call needs to know about one Python type (found once per type, kept for the process).
struct TypeRoute {
  PyTypeObject* type;
  ReadRoute read;
  AllocRoute alloc;     // how its framework allocates outputs
  PyObject* framework;  // its pytvmbridge Framework object
  ProducerInfo* producer;
};

// The route of `obj`'s type; asks the Python resolver (set_framework_resolver) on a new type.
const TypeRoute& route_of(PyObject* obj);

// The allocation route of a Framework object (by its name).
AllocRoute alloc_route_of(PyObject* framework);

// frameworks.framework_of, called once per new type.
void set_framework_resolver(py::handle resolver);

// One argument of a call: a DLTensor valid until the CallArg is destroyed.
class CallArg {
 public:
  CallArg() = default;
  ~CallArg();
  CallArg(const CallArg&) = delete;
  CallArg& operator=(const CallArg&) = delete;

  // Views `obj`; `output` applies the framework's rules for written arrays (requires_grad,
  // immutability). Throws (a UserError or error_already_set) naming `what`.
  void read(PyObject* obj, const ArgName& what, bool output);

  // A new output of `framework` (alloc `route`) with this shape and dtype; result() gives the
  // framework's array once the kernel has run. `strides`, if not null, lay the elements out
  // densely in another order of the dimensions (a pointwise kernel's output in its inputs'
  // channels_last layout); PyTorch's and NumPy's routes take them, the others allocate
  // row-major.
  void allocate(PyObject* framework, AllocRoute route, int ndim, const int64_t* shape,
                DLDataType dtype, const int64_t* strides = nullptr);

  // The framework's array for an allocated output (a new reference), or nullptr with an error.
  PyObject* result();

  const DLTensor& tensor() const { return *t_; }
  bool read_only() const { return read_only_; }

  // After the kernel wrote a PyTorch tensor given as an output: bumps its version counter, as
  // PyTorch's own in-place operators do (autograd then refuses a backward that saved the old
  // values, and the graph backend's packed weights see the change).
  void written();

 private:
  void read_generic(PyObject* obj, const ArgName& what, bool output);

  DLTensor view_{};
  const DLTensor* t_ = &view_;
  int64_t shape_[kMaxViewDims];
  int64_t strides_[kMaxViewDims];
  bool read_only_ = false;
  NDArray owned_;     // an imported or allocated NDArray, when the route makes one
  Py_buffer buffer_;  // the buffer-protocol route (valid when has_buffer_)
  bool has_buffer_ = false;
  PyObject* written_torch_ = nullptr;  // a torch tensor read as an output (borrowed)
  PyObject* object_ = nullptr;         // an allocated output's array (a strong reference)
  PyObject* framework_ = nullptr;      // for result(): the allocating framework (borrowed)
  AllocRoute alloc_ = AllocRoute::kNDArray;
};

// The CallArgs of one call: up to `Capacity` on the stack, constructed only as many as the call
// has (each is a few hundred bytes: constructing a full array costs as much as a small kernel
// call); a call with more arrays keeps them on the heap.
template <int Capacity>
class CallArgs {
 public:
  explicit CallArgs(int n)
      : n_(n),
        args_(n <= Capacity ? reinterpret_cast<CallArg*>(storage_)
                            : static_cast<CallArg*>(::operator new(sizeof(CallArg) * n))) {
    for (int i = 0; i < n_; ++i) new (&args_[i]) CallArg();
  }
  ~CallArgs() {
    for (int i = 0; i < n_; ++i) args_[i].~CallArg();
    if (n_ > Capacity) ::operator delete(args_);
  }
  CallArgs(const CallArgs&) = delete;
  CallArgs& operator=(const CallArgs&) = delete;
  CallArg& operator[](int i) { return args_[i]; }
  CallArg* data() { return args_; }

 private:
  alignas(CallArg) unsigned char storage_[Capacity * sizeof(CallArg)];
  int n_;
  CallArg* args_;
};

// A few values per argument of a call: on the stack for up to `Capacity` arguments.
template <typename T, int Capacity>
class PerArg {
 public:
  explicit PerArg(size_t n) : data_(inline_) {
    if (n > static_cast<size_t>(Capacity)) {
      heap_.reset(new T[n]);
      data_ = heap_.get();
    }
  }
  PerArg(const PerArg&) = delete;
  PerArg& operator=(const PerArg&) = delete;
  T& operator[](size_t i) { return data_[i]; }
  T* data() { return data_; }

 private:
  T inline_[Capacity];
  std::unique_ptr<T[]> heap_;
  T* data_;
};

}  // namespace ptb::python
