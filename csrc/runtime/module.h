// A compiled kernel and its signature: checks the arrays it is called with, binds symbolic sizes
// and strides from them, and runs the generated code. Knows DLPack tensors only, not frameworks.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/expr.h"

namespace ptb {

class JITModule;
using KernelFn = int32_t (*)(void* const* data, const int64_t* scalars);

// One dimension of an argument: a constant, a size variable bound from the arrays (slot), or an
// expression of size variables checked after binding.
struct DimSpec {
  enum class Kind { kConst, kVar, kExpr };
  Kind kind = Kind::kConst;
  int64_t value = 0;
  int slot = -1;
  Expr expr;  // kExpr: the size to check; kVar: the variable itself (for display)
};

struct ArgSpec {
  std::string name;
  DataType dtype;
  std::vector<DimSpec> dims;
  std::vector<int> stride_slots;  // where this argument's strides go in the scalar array
  bool is_output = false;
};

// A size the kernel computes from the size variables that is not an argument's dimension (the
// extent of an intermediate stage's axis or of a reduce axis, such as n * m): checked at call
// time like the arguments' sizes, so that its arithmetic in its own types cannot overflow.
struct InternalSize {
  std::string what;  // "axis 'i' of stage 'T'"
  Expr expr;
  // A stage's own axis (the size of an intermediate tensor), which may not be negative; a
  // reduce axis of negative extent is an empty loop.
  bool is_size = false;
};

// Whether an array is row-major with no gaps (dimensions of size 1 aside): the compact variant's
// layout.
bool is_compact(const DLTensor& t);
// Whether `n` arrays of one shape all have the same strides (dimensions of size 1 aside), positive
// and laying the elements out with no gap in some order of the dimensions (channels_last, a
// transposed array): element k in memory order of each array then meets element k of the others.
bool share_dense_layout(const DLTensor* const* tensors, size_t n);

// A read range checked at call time once the sizes are bound (te/read_bounds.h): indices lo..hi
// of a tensor of `extent` in that dimension, when none of `loops` is empty.
struct ReadCheck {
  std::string what;
  Expr lo, hi, extent;
  std::vector<Expr> loops;
  bool nonempty = false;  // no read: extent must be >= 1 (te/read_bounds.h)
  int64_t divisor = 0;    // no read, where > 0: extent must be a multiple of it
};

// Compiles the strided (generic) variant of a kernel on demand: the JIT holding it and its entry.
using GenericCompiler = std::function<std::pair<std::shared_ptr<JITModule>, KernelFn>()>;

class Module {
 public:
  // `generic` may be null with `compile_generic` set: the variant for strided arrays is then
  // compiled the first time such arrays arrive (most callers pass compact arrays only, and
  // compiling both variants up front doubled the build time).
  Module(std::string name, std::vector<ArgSpec> args, std::vector<Expr> slots,
         std::shared_ptr<JITModule> jit, KernelFn generic, KernelFn compact, std::string lowered,
         GenericCompiler compile_generic = nullptr);

  const std::string& name() const { return name_; }
  const std::vector<ArgSpec>& args() const { return args_; }
  const std::string& lowered_text() const { return lowered_; }
  const JITModule& jit() const { return *jit_; }
  // The size and stride variables, in the order of the kernel's scalar array (for saving).
  const std::vector<Expr>& slots() const { return slots_; }
  const std::vector<InternalSize>& internal_sizes() const { return internal_sizes_; }
  // The JIT holding the strided (generic) variant: compiled now if it was deferred and `compile`
  // is set, else nullptr while it is not compiled (for saving).
  std::shared_ptr<JITModule> generic_jit(bool compile) const;
  // Seconds build_module took (lowering, LLVM optimisation, machine code), shown by displays.
  // The time the module took to make: compiled, or read from a module file (loaded()).
  double compile_seconds() const { return compile_seconds_; }
  void set_compile_seconds(double seconds) { compile_seconds_ = seconds; }
  bool loaded() const { return loaded_; }
  void set_loaded(bool loaded) { loaded_ = loaded; }
  // A pointwise kernel (te/pointwise.h) runs its compact variant on arrays that all share one
  // dense layout in another order of their dimensions (channels_last, transposed), not only on
  // row-major ones: element k of every array in memory order meets element k of the others.
  bool pointwise() const { return pointwise_; }
  void set_pointwise(bool pointwise) { pointwise_ = pointwise; }

  // Checks `n` tensors against the signature (count, ndim, dtype, device, constant and symbolic
  // sizes, writable and non-overlapping outputs), binds sizes and strides and runs the kernel.
  // read_only[i] tells whether tensor i may not be written. Throws UserError naming the argument.
  void run(const DLTensor* const* tensors, const bool* read_only, size_t n) const;

  // The CPU features the code was built for that this host lacks (a build for another machine,
  // to be exported): run() then refuses with a ValueError instead of faulting.
  void set_features_host_lacks(const std::vector<std::string>& missing);

  void set_internal_sizes(std::vector<InternalSize> sizes) { internal_sizes_ = std::move(sizes); }
  const std::vector<ReadCheck>& read_checks() const { return read_checks_; }
  void set_read_checks(std::vector<ReadCheck> checks) { read_checks_ = std::move(checks); }

  // The sizes of every symbolic variable bound from `tensors` (the inputs only may be given: the
  // outputs' shapes then follow), in order of `args()`; used to allocate outputs for the caller.
  std::vector<std::vector<int64_t>> output_shapes(const DLTensor* const* inputs, size_t n) const;

 private:
  std::string describe(size_t i) const;
  // " ('n' = 5 from argument 1 ('D') dimension 0)": where the variables of `e` were bound.
  std::string where_bound(const Expr& e,
                          const std::unordered_map<const ExprNode*, int64_t>& values) const;
  KernelFn generic_kernel() const;
  void bind_sizes(const DLTensor* const* tensors, size_t n, int64_t* slots) const;
  // ValueError naming the argument when size `got` does not fit the type of slot's variable.
  void check_size_fits(size_t arg, size_t dim, int slot, int64_t got) const;
  // The value of a size expression of argument `arg`; ValueError when the kernel's arithmetic in
  // the expression's types would overflow.
  int64_t eval_dim(const Expr& e, const std::unordered_map<const ExprNode*, int64_t>& values,
                   size_t arg, size_t dim) const;

  std::string name_;
  // The names of its calls in the loop profile (runtime/loop_profile.h): the compact and the
  // generic (strided) variant's.
  std::string call_label_, strided_call_label_;
  std::vector<ArgSpec> args_;
  std::vector<Expr> slots_;        // the Var of each scalar slot
  std::vector<int64_t> slot_max_;  // the largest value each slot's type holds
  std::shared_ptr<JITModule> jit_;
  mutable std::mutex generic_mu_;
  mutable std::shared_ptr<JITModule> generic_jit_;  // when the generic variant came later
  mutable KernelFn generic_;
  GenericCompiler compile_generic_;
  KernelFn compact_;
  std::string lowered_;
  bool has_expr_dims_ = false;  // some size is an expression, checked after binding
  bool pointwise_ = false;
  std::vector<InternalSize> internal_sizes_;
  std::vector<ReadCheck> read_checks_;
  double compile_seconds_ = 0;
  bool loaded_ = false;
  std::string cannot_run_here_;  // why run() refuses (empty: it runs)
};

}  // namespace ptb
