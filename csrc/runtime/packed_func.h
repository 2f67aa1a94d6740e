// Packed functions: functions registered by name at run time (TVM's register_func) that compiled
// code calls through ptb_call_packed (TVM's call_packed; te.extern's stages), with DLPack tensors
// and scalars. The runtime knows nothing of Python: the bindings register std::functions that
// call into the interpreter.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace ptb {

struct PackedArg {
  enum class Kind { kTensor, kInt, kFloat };
  Kind kind = Kind::kTensor;
  const DLTensor* tensor = nullptr;  // kTensor: valid during the call only
  int64_t i = 0;
  double f = 0;
};
// Returns normally, or throws: the exception becomes the exception of the kernel call.
using PackedFunc = std::function<void(const std::vector<PackedArg>&)>;

// Registers `f` as `name`; ValueError when the name is taken and `override` is false.
void register_packed_func(const std::string& name, PackedFunc f, bool override);
// Removes `name`; false when it was not registered.
bool remove_packed_func(const std::string& name);
// The function registered as `name`, or an empty function.
PackedFunc find_packed_func(const std::string& name);
std::vector<std::string> packed_func_names();
// Removes every function (the Python bindings call it when the interpreter exits, before the
// Python objects the functions hold can no longer be released).
void clear_packed_funcs();

// The exception of the last packed call that failed on this thread (null if none); clears it.
std::exception_ptr take_packed_call_error();

}  // namespace ptb
