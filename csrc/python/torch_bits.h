// Two bits of a PyTorch tensor read on every call, without going through Python: the lazy
// negative bit (checked on every input, issue 9) and requires_grad (the autograd routing of a
// differentiable call). Through Python they cost about 120 ns (Tensor.is_neg's binding releases
// and retakes the GIL) and 45 ns (the requires_grad getter) per input: together more than the
// rest of a small allocating call.
//
// Read directly, each is one call of a function libtorch exports (`at::native::is_neg`,
// `c10::TensorImpl::requires_grad`) on the tensor a torch.Tensor object holds. Neither header
// nor library of PyTorch is needed to build this: the functions are found with dlsym in the
// libraries torch has loaded, and the whole route is checked once against PyTorch's own Python
// answers on probe tensors (every combination of the two bits) before it is trusted. Where
// anything differs (another PyTorch whose object layout or symbols changed, no torch at all),
// torch_bits_ready() is false and callers keep the Python route.
//
// The direct reads see the tensor's own bits: a `__torch_function__` mode that answers
// `is_neg()` or `requires_grad` differently is not asked (the DLPack view that follows reads the
// tensor's own memory anyway, and autograd records from its own requires_grad).
#pragma once

#include <Python.h>

namespace ptb::python {

// Whether the direct reads are usable (resolved and checked on the first call; needs the GIL
// and an importable torch then). Never leaves a Python error set.
bool torch_bits_ready();

// The bits of `obj`, an instance of torch.Tensor or torch.nn.Parameter exactly (not another
// subclass: those may be wrappers whose answers come from Python). Need torch_bits_ready().
bool torch_is_neg(PyObject* obj);
bool torch_requires_grad(PyObject* obj);

// Whether torch_bits_ready() may say yes (default true). Tests turn it off to exercise the
// Python route; benchmarks to time it.
void set_torch_bits_enabled(bool enabled);

}  // namespace ptb::python
