#include "runtime/module.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <memory>
#include <numeric>
#include <unordered_map>

#include "codegen/cpu_features.h"
#include "ir/op.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "runtime/backend_api.h"
#include "runtime/dlpack_ext.h"
#include "runtime/loop_profile.h"
#include "runtime/packed_func.h"
#include "support/error.h"

namespace ptb {

namespace {

// The fixed-size scalar buffer of a call; kernels with more slots use the heap.
constexpr size_t kInlineSlots = 64;
constexpr size_t kInlineArgs = 16;

// The largest value of an integer size type (int64 for anything wider).
int64_t type_max(DataType t) {
  if (t.bits() >= 64) return std::numeric_limits<int64_t>::max();
  return t.is_uint() ? (int64_t{1} << t.bits()) - 1 : (int64_t{1} << (t.bits() - 1)) - 1;
}
int64_t type_min(DataType t) {
  if (t.is_uint()) return 0;
  return t.bits() >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (t.bits() - 1));
}

// A bitwise operation on sizes, as the kernel computes it (NumPy's shifts: an amount outside
// [0, bits) shifts every bit out); `checked` records a left shift that leaves the type.
template <typename Checked>
int64_t eval_bitwise_size(const Call* c, int64_t x, int64_t y, Checked checked) {
  const int bits = c->dtype.bits();
  switch (c->op) {
    case Intrinsic::kBitwiseAnd:
      return x & y;
    case Intrinsic::kBitwiseOr:
      return x | y;
    case Intrinsic::kBitwiseXor:
      return x ^ y;
    case Intrinsic::kBitwiseNot:
      return ~x;
    case Intrinsic::kShiftLeft: {
      if (y < 0 || y >= bits) return 0;
      const bool wrapped = y >= 63 || (x != 0 && (x > (std::numeric_limits<int64_t>::max() >> y) ||
                                                  x < (std::numeric_limits<int64_t>::min() >> y)));
      return checked(static_cast<int64_t>(static_cast<uint64_t>(x) << y), wrapped);
    }
    case Intrinsic::kShiftRight:
      if (y < 0 || y >= bits) return x < 0 && c->dtype.is_int() ? -1 : 0;
      return x >> y;
    default:
      internal_error(__FILE__, __LINE__, "not a bitwise intrinsic");
  }
}

// Evaluates an integer expression of size variables (an output shape such as n - 2), in exact
// 64-bit arithmetic. The kernel computes it in the expression's own types: where a value does
// not fit its node's type (n * m in int32), the first such subexpression is recorded in
// *overflow, and the caller refuses the call.
int64_t eval_int(const Expr& e, const std::unordered_map<const ExprNode*, int64_t>& vars,
                 std::string* overflow) {
  if (const auto* i = e.as<IntImm>()) return i->value;
  if (e.as<Var>()) {
    auto it = vars.find(e.get());
    if (it == vars.end()) value_error("size variable '", e.as<Var>()->name, "' is not bound");
    return it->second;
  }
  auto checked = [&](int64_t v, bool wrapped) {
    DataType t = e.dtype();
    if (overflow->empty() && (wrapped || v > type_max(t) || v < type_min(t))) {
      *overflow =
          str_cat(to_string(e), " = ", wrapped ? std::string("more than 2**63") : std::to_string(v),
                  ", which does not fit its type ", t.str());
    }
    return v;
  };
  if (const auto* c = e.as<Cast>()) return checked(eval_int(c->value, vars, overflow), false);
  auto binary = [&](const Expr& a, const Expr& b, auto f) {
    return f(eval_int(a, vars, overflow), eval_int(b, vars, overflow));
  };
  auto wrapping = [&](auto op) {
    return [&, op](int64_t x, int64_t y) {
      int64_t r = 0;
      bool wrapped = op(x, y, &r);
      return checked(r, wrapped);
    };
  };
  if (e.as<Add>()) {
    const auto* o = e.as<Add>();
    return binary(o->a, o->b, wrapping([](int64_t x, int64_t y, int64_t* r) {
                    return __builtin_add_overflow(x, y, r);
                  }));
  }
  if (const auto* o = e.as<Sub>()) {
    return binary(o->a, o->b, wrapping([](int64_t x, int64_t y, int64_t* r) {
                    return __builtin_sub_overflow(x, y, r);
                  }));
  }
  if (const auto* o = e.as<Mul>()) {
    return binary(o->a, o->b, wrapping([](int64_t x, int64_t y, int64_t* r) {
                    return __builtin_mul_overflow(x, y, r);
                  }));
  }
  if (const auto* o = e.as<Min>())
    return binary(o->a, o->b, [](int64_t x, int64_t y) { return std::min(x, y); });
  if (const auto* o = e.as<Max>())
    return binary(o->a, o->b, [](int64_t x, int64_t y) { return std::max(x, y); });
  auto divisor = [&](const Expr& b) {
    int64_t d = eval_int(b, vars, overflow);
    if (d == 0) value_error("division by zero while computing the size ", to_string(e));
    return d;
  };
  // INT64_MIN / -1 is the one quotient that overflows.
  auto quotient = [&](int64_t a, int64_t d, int64_t q) {
    return checked(q, a == std::numeric_limits<int64_t>::min() && d == -1);
  };
  if (const auto* o = e.as<FloorDiv>()) {
    int64_t a = eval_int(o->a, vars, overflow), d = divisor(o->b);
    if (a == std::numeric_limits<int64_t>::min() && d == -1) return quotient(a, d, 0);
    return quotient(a, d, floor_div(a, d));
  }
  if (const auto* o = e.as<FloorMod>()) {
    int64_t a = eval_int(o->a, vars, overflow), d = divisor(o->b);
    return d == -1 ? 0 : floor_mod(a, d);
  }
  if (const auto* o = e.as<Div>()) {
    int64_t a = eval_int(o->a, vars, overflow), d = divisor(o->b);
    if (a == std::numeric_limits<int64_t>::min() && d == -1) return quotient(a, d, 0);
    return quotient(a, d, a / d);
  }
  if (const auto* o = e.as<Mod>()) {
    int64_t a = eval_int(o->a, vars, overflow), d = divisor(o->b);
    return d == -1 ? 0 : a % d;
  }
  if (const auto* c = e.as<Call>(); c != nullptr && is_bitwise_intrinsic(c->op)) {
    return eval_bitwise_size(c, eval_int(c->args[0], vars, overflow),
                             c->args.size() > 1 ? eval_int(c->args[1], vars, overflow) : 0,
                             checked);
  }
  value_error("cannot evaluate the size expression ", to_string(e), " at call time");
}

std::string shape_str(const DLTensor& t) {
  std::string s = "(";
  for (int d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.shape[d]);
  return s + (t.ndim == 1 ? ",)" : ")");
}

std::string dtype_str(const DLDataType& t) {
  if (t.lanes != 1) return "a vector dtype";
  DataType dt(static_cast<DataType::Code>(t.code), t.bits);
  return dt.str();
}

bool dtype_matches(const DataType& want, const DLDataType& got) {
  if (got.lanes != 1) return false;
  if (got.code == want.code() && got.bits == want.bits()) return true;
  // Older producers hand out bool as 8-bit unsigned.
  return want.is_bool() && got.code == kDLUInt && got.bits == 8;
}

// Whether two arrays whose byte ranges overlap still share no byte because their elements
// interleave (buf[:, ::2] and buf[:, 1::2]): every element of each starts at its base plus a
// multiple of g, the gcd of all their byte strides, so it occupies the same bytes modulo g;
// when those bytes of the two arrays do not meet modulo g, no two elements do.
bool interleaved(const DLTensor& a, const DLTensor& b) {
  auto stride_gcd = [](const DLTensor& t, int64_t g) {
    const int64_t item = (t.dtype.bits * t.dtype.lanes + 7) / 8;
    int64_t step = 1;  // row-major strides (no strides given), in elements
    for (int d = t.ndim - 1; d >= 0; --d) {
      int64_t stride = t.strides ? t.strides[d] : step;
      step *= t.shape[d];
      if (t.shape[d] > 1) g = std::gcd(g, std::abs(stride) * item);
    }
    return g;
  };
  const int64_t g = stride_gcd(b, stride_gcd(a, 0));
  if (g <= 0) return false;  // single elements: their byte ranges decide
  const int64_t size_a = (a.dtype.bits * a.dtype.lanes + 7) / 8;
  const int64_t size_b = (b.dtype.bits * b.dtype.lanes + 7) / 8;
  const auto base = [](const DLTensor& t) {
    return static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.data) + t.byte_offset);
  };
  int64_t offset = (base(b) - base(a)) % g;  // where b's elements start within a's period
  if (offset < 0) offset += g;
  return offset >= size_a && offset + size_b <= g;
}

// The byte range [lo, hi) an array's elements span (empty arrays span nothing).
std::pair<uintptr_t, uintptr_t> byte_span(const DLTensor& t) {
  uintptr_t base = reinterpret_cast<uintptr_t>(t.data) + t.byte_offset;
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.shape[d] == 0) return {base, base};
    int64_t stride = t.strides ? t.strides[d] : 1;
    if (!t.strides) {
      stride = 1;
      for (int k = d + 1; k < t.ndim; ++k) stride *= t.shape[k];
    }
    int64_t reach = stride * (t.shape[d] - 1);
    (reach < 0 ? lo : hi) += reach;
  }
  int64_t item = (t.dtype.bits * t.dtype.lanes + 7) / 8;
  return {base + lo * item, base + (hi + 1) * item};
}

// Whether two elements of an array may be the same memory (a zero stride, or strides that
// interleave such as (1, 1)). A cheap sufficient test: with the dimensions sorted by stride, each
// stride must step past everything the smaller ones reach. Arrays that fail it may still be
// free of overlap (exotic interleavings), but none that a framework makes without as_strided.
bool may_self_overlap(const DLTensor& t) {
  if (!t.strides) return false;
  std::pair<int64_t, int64_t> dims[64];  // (|stride|, extent) of the dimensions longer than 1
  int count = 0;
  for (int d = 0; d < t.ndim; ++d) {
    if (t.shape[d] == 0) return false;  // no elements, nothing to share
    if (t.shape[d] == 1) continue;
    if (count == 64) return true;  // beyond any real array: refuse rather than guess
    const int64_t stride = t.strides[d];
    dims[count++] = {stride < 0 ? -stride : stride, t.shape[d]};
  }
  std::sort(dims, dims + count);
  int64_t reach = 0;  // the largest offset the dimensions so far can make
  for (int k = 0; k < count; ++k) {
    if (dims[k].first <= reach) return true;
    int64_t span = 0;
    if (__builtin_mul_overflow(dims[k].first, dims[k].second - 1, &span) ||
        __builtin_add_overflow(reach, span, &reach)) {
      return true;
    }
  }
  return false;
}

std::string strides_str(const DLTensor& t) {
  std::string s = "(";
  for (int d = 0; d < t.ndim; ++d) s += (d ? ", " : "") + std::to_string(t.strides[d]);
  return s + (t.ndim == 1 ? ",)" : ")");
}

}  // namespace

bool is_compact(const DLTensor& t) {
  if (!t.strides) return true;
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

// Whether the arrays (of one shape) all have the same strides, dimensions of size 1 aside, and
// those strides are positive and lay the elements out with no gap in some order of the
// dimensions: then every array's elements lie at data + k * itemsize, k = 0 .. size - 1, in the
// same order, and a pointwise kernel's compact variant, which walks k, computes the right thing.
bool share_dense_layout(const DLTensor* const* tensors, size_t n) {
  const DLTensor& first = *tensors[0];
  auto stride_of = [](const DLTensor& t, int d) {
    if (t.strides) return t.strides[d];
    int64_t s = 1;
    for (int k = d + 1; k < t.ndim; ++k) s *= t.shape[k];
    return s;
  };
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, extent) of the dimensions over 1
  for (int d = 0; d < first.ndim; ++d) {
    if (first.shape[d] == 0) return true;  // no elements: any variant does nothing
    if (first.shape[d] == 1) continue;
    int64_t stride = stride_of(first, d);
    for (size_t i = 1; i < n; ++i) {
      if (tensors[i]->ndim != first.ndim || tensors[i]->shape[d] != first.shape[d] ||
          stride_of(*tensors[i], d) != stride) {
        return false;
      }
    }
    dims.emplace_back(stride, first.shape[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, extent] : dims) {
    if (stride != expected) return false;
    expected *= extent;
  }
  return true;
}

Module::Module(std::string name, std::vector<ArgSpec> args, std::vector<Expr> slots,
               std::shared_ptr<JITModule> jit, KernelFn generic, KernelFn compact,
               std::string lowered, GenericCompiler compile_generic)
    : name_(std::move(name)),
      call_label_(name_ + " call"),
      strided_call_label_(name_ + " (strided) call"),
      args_(std::move(args)),
      slots_(std::move(slots)),
      jit_(std::move(jit)),
      generic_(generic),
      compile_generic_(std::move(compile_generic)),
      compact_(compact),
      lowered_(std::move(lowered)) {
  for (const ArgSpec& a : args_) {
    for (const DimSpec& d : a.dims) has_expr_dims_ |= d.kind == DimSpec::Kind::kExpr;
  }
  for (const Expr& v : slots_) slot_max_.push_back(type_max(v.dtype()));
}

KernelFn Module::generic_kernel() const {
  std::lock_guard<std::mutex> lock(generic_mu_);
  if (!generic_) {
    PTB_ICHECK(compile_generic_, "kernel '", name_, "' has no variant for strided arrays");
    auto [jit, fn] = compile_generic_();
    generic_jit_ = std::move(jit);
    generic_ = fn;
  }
  return generic_;
}

std::shared_ptr<JITModule> Module::generic_jit(bool compile) const {
  {
    std::lock_guard<std::mutex> lock(generic_mu_);
    if (generic_) return generic_jit_ ? generic_jit_ : jit_;
    if (!compile || !compile_generic_) return nullptr;
  }
  generic_kernel();
  std::lock_guard<std::mutex> lock(generic_mu_);
  return generic_jit_;
}

void Module::check_size_fits(size_t arg, size_t dim, int slot, int64_t got) const {
  if (got <= slot_max_[static_cast<size_t>(slot)]) return;
  const Expr& v = slots_[static_cast<size_t>(slot)];
  value_error(describe(arg), ": size ", got, " in dimension ", dim, " does not fit the ",
              v.dtype().str(), " size variable '", v.as<Var>()->name,
              "' it binds; declare it var('", v.as<Var>()->name,
              "', 'int64') for arrays this large");
}

int64_t Module::eval_dim(const Expr& e, const std::unordered_map<const ExprNode*, int64_t>& values,
                         size_t arg, size_t dim) const {
  std::string overflow;
  int64_t v = eval_int(e, values, &overflow);
  if (!overflow.empty()) {
    value_error(describe(arg), ": the size of dimension ", dim, " is ", to_string(e),
                ", and at these sizes ", overflow,
                "; declare the size variables with var(name, 'int64') for arrays this large");
  }
  return v;
}

std::string Module::describe(size_t i) const {
  return str_cat("argument ", i, " ('", args_[i].name, "')");
}

std::string Module::where_bound(const Expr& e,
                                const std::unordered_map<const ExprNode*, int64_t>& values) const {
  // The variables of a size expression, each with the argument its value came from: the size
  // that does not fit may be that argument's (an output one row too long makes its input's
  // n + 1 look wrong).
  std::string note;
  for_each_expr(e, [&](const Expr& x) {
    if (!x.as<Var>() || note.find("'" + x.as<Var>()->name + "' = ") != std::string::npos) return;
    auto value = values.find(x.get());
    if (value == values.end()) return;
    for (size_t j = 0; j < args_.size(); ++j) {
      for (size_t d = 0; d < args_[j].dims.size(); ++d) {
        const DimSpec& dim = args_[j].dims[d];
        if (dim.kind != DimSpec::Kind::kVar || slots_[dim.slot].get() != x.get()) continue;
        note += str_cat(note.empty() ? " (" : ", ", "'", x.as<Var>()->name, "' = ", value->second,
                        " from ", describe(j), " dimension ", d);
        return;
      }
    }
  });
  return note.empty() ? note : note + ")";
}

void Module::bind_sizes(const DLTensor* const* tensors, size_t n, int64_t* slots) const {
  // Which slots hold a size already (on the stack for the usual few, as on every call).
  bool inline_bound[kInlineSlots] = {};
  std::unique_ptr<bool[]> heap_bound;
  bool* bound = inline_bound;
  if (slots_.size() > kInlineSlots) {
    heap_bound.reset(new bool[slots_.size()]());
    bound = heap_bound.get();
  }
  for (size_t i = 0; i < n; ++i) {
    const DLTensor& t = *tensors[i];
    const ArgSpec& spec = args_[i];
    if (t.ndim != static_cast<int>(spec.dims.size())) {
      value_error(describe(i), ": expected ", spec.dims.size(), " dimension(s), got ", t.ndim,
                  " (shape ", shape_str(t), ")");
    }
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      const DimSpec& dim = spec.dims[d];
      int64_t got = t.shape[d];
      if (dim.kind == DimSpec::Kind::kConst) {
        if (got != dim.value) {
          value_error(describe(i), ": expected size ", dim.value, " in dimension ", d, ", got ",
                      got, " (shape ", shape_str(t), ")");
        }
      } else if (dim.kind == DimSpec::Kind::kVar) {
        if (!bound[dim.slot]) {
          check_size_fits(i, d, dim.slot, got);
          slots[dim.slot] = got;
          bound[dim.slot] = true;
        } else if (slots[dim.slot] != got) {
          value_error(describe(i), ": size variable '", slots_[dim.slot].as<Var>()->name, "' is ",
                      slots[dim.slot], " from an earlier argument but ", got, " in dimension ", d,
                      " (shape ", shape_str(t), ")");
        }
      }
    }
  }
  // Sizes given as expressions (an output of n - 2 rows) are checked once every var is bound.
  if (!has_expr_dims_ && internal_sizes_.empty() && read_checks_.empty()) return;
  std::unordered_map<const ExprNode*, int64_t> values;
  for (size_t s = 0; s < slots_.size(); ++s) {
    if (bound[s]) values[slots_[s].get()] = slots[s];
  }
  for (size_t i = 0; i < n; ++i) {
    for (size_t d = 0; d < args_[i].dims.size(); ++d) {
      const DimSpec& dim = args_[i].dims[d];
      if (dim.kind != DimSpec::Kind::kExpr) continue;
      int64_t want = eval_dim(dim.expr, values, i, d);
      if (tensors[i]->shape[d] != want) {
        value_error(describe(i), ": expected size ", want, " (", to_string(dim.expr),
                    ") in dimension ", d, ", got ", tensors[i]->shape[d],
                    where_bound(dim.expr, values));
      }
    }
  }
  for (const InternalSize& size : internal_sizes_) {
    std::string overflow;
    int64_t extent = eval_int(size.expr, values, &overflow);
    if (!overflow.empty()) {
      value_error("kernel '", name_, "': the extent of ", size.what, " is ", to_string(size.expr),
                  ", and for these arrays ", overflow,
                  "; declare the size variables with var(name, 'int64') for arrays this large");
    }
    if (size.is_size && extent < 0) {
      value_error("kernel '", name_, "': the extent of ", size.what, " is ", to_string(size.expr),
                  ", which is ", extent, " for these arrays", where_bound(size.expr, values),
                  ": a size cannot be negative");
    }
  }
  // Reads past a tensor's end (a compute over m elements reading B of n < m), refused before
  // the kernel runs.
  for (const ReadCheck& check : read_checks_) {
    std::string overflow;
    bool empty = false;
    for (const Expr& e : check.loops) empty = empty || eval_int(e, values, &overflow) <= 0;
    if (empty) continue;
    int64_t lo = eval_int(check.lo, values, &overflow);
    int64_t hi = eval_int(check.hi, values, &overflow);
    int64_t extent = eval_int(check.extent, values, &overflow);
    if (!overflow.empty()) continue;  // the sizes' own checks speak for those
    if (check.nonempty && extent < 1) {
      value_error("kernel '", name_, "': ", check.what,
                  ", which needs at least one element and has ", extent, " for these arrays",
                  where_bound(check.extent, values),
                  "; an empty axis has no index of a maximum and no element to take (NumPy and "
                  "PyTorch refuse it too)");
    }
    if (check.nonempty) continue;
    if (check.divisor > 0) {
      if (extent % check.divisor != 0) {
        value_error("kernel '", name_, "': ", check.what, ", which must divide into ",
                    check.divisor, " equal parts and has ", extent, " elements for these arrays",
                    where_bound(check.extent, values), " (np.split refuses it too)");
      }
      continue;
    }
    if (lo < 0 || hi >= extent) {
      value_error("kernel '", name_, "': ", check.what, " at indices ", lo, "..", hi, " (",
                  to_string(check.lo), "..", to_string(check.hi), "), but it has ", extent,
                  " there (", to_string(check.extent),
                  "): the arrays' sizes make the kernel read outside it");
    }
  }
}

void Module::set_features_host_lacks(const std::vector<std::string>& missing) {
  cannot_run_here_.clear();
  if (missing.empty()) return;
  std::string list;
  for (const std::string& f : missing) list += (list.empty() ? "" : ", ") + f;
  cannot_run_here_ = str_cat(
      "kernel '", name_, "' was built for a target with instruction-set features this host (CPU '",
      host_cpu_name(), "') lacks: ", list, "; running it here would fault. Export it ",
      "(export_library) and run it on such a machine, or build it with a target this host ",
      "supports (\"llvm\" is this host)");
}

void Module::run(const DLTensor* const* tensors, const bool* read_only, size_t n) const {
  if (!cannot_run_here_.empty()) value_error(cannot_run_here_);
  if (n != args_.size()) {
    type_error("kernel '", name_, "' takes ", args_.size(), " array(s), got ", n);
  }
  int64_t inline_slots[kInlineSlots];
  std::vector<int64_t> heap_slots;
  int64_t* slots = inline_slots;
  if (slots_.size() > kInlineSlots) {
    heap_slots.resize(slots_.size());
    slots = heap_slots.data();
  }
  void* inline_data[kInlineArgs];
  std::vector<void*> heap_data;
  void** data = inline_data;
  if (n > kInlineArgs) {
    heap_data.resize(n);
    data = heap_data.data();
  }

  bool all_compact = true;
  for (size_t i = 0; i < n; ++i) {
    const DLTensor& t = *tensors[i];
    const ArgSpec& spec = args_[i];
    if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost) {
      value_error(describe(i), ": expected an array in CPU memory, got one on device type ",
                  static_cast<int>(t.device.device_type));
    }
    if (!dtype_matches(spec.dtype, t.dtype)) {
      type_error(describe(i), ": expected dtype ", spec.dtype.str(), ", got ", dtype_str(t.dtype));
    }
    if (spec.is_output) {
      if (read_only[i]) {
        value_error(describe(i), " is an output but the array is read-only");
      }
      if (may_self_overlap(t)) {
        value_error(describe(i), " is an output but several of its elements share memory (shape ",
                    shape_str(t), ", strides ", strides_str(t),
                    "): the result would depend on the loop order; pass an array whose elements "
                    "are distinct (e.g. a contiguous one)");
      }
    }
    data[i] = static_cast<char*>(t.data) + t.byte_offset;
    all_compact = all_compact && is_compact(t);
  }
  bind_sizes(tensors, n, slots);
  for (size_t i = 0; i < n; ++i) {
    const DLTensor& t = *tensors[i];
    const ArgSpec& spec = args_[i];
    for (int d = 0; d < t.ndim; ++d) {
      int64_t stride = 1;
      if (t.strides) {
        stride = t.strides[d];
      } else {
        for (int k = d + 1; k < t.ndim; ++k) stride *= t.shape[k];
      }
      slots[spec.stride_slots[d]] = stride;
    }
  }
  // An output must not share memory with any other argument: the kernel reads inputs while it
  // writes outputs, and the result would depend on the loop order (API.md: an error).
  for (size_t i = 0; i < n; ++i) {
    if (!args_[i].is_output) continue;
    auto [lo, hi] = byte_span(*tensors[i]);
    if (lo == hi) continue;
    for (size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      auto [lo2, hi2] = byte_span(*tensors[j]);
      if (lo2 < hi && lo < hi2 && !interleaved(*tensors[i], *tensors[j])) {
        value_error(describe(i), " is an output and overlaps ", describe(j),
                    " in memory; pass a separate array for the output");
      }
    }
  }
  // Arrays laid out alike but not row-major (channels_last): a pointwise kernel's compact
  // variant walks their memory in order, at the speed of a compact call.
  bool run_compact = all_compact || (pointwise_ && n > 0 && share_dense_layout(tensors, n));
  KernelFn fn = run_compact ? compact_ : generic_kernel();
  int32_t rc;
  if (loop_profile_enabled()) {
    auto start = std::chrono::steady_clock::now();
    rc = fn(data, slots);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    record_loop(run_compact ? call_label_.c_str() : strided_call_label_.c_str(), 1, seconds);
  } else {
    rc = fn(data, slots);
  }
  if (rc == PTB_ERROR_PACKED_CALL) {
    // The packed function's own exception (a Python one stays itself).
    if (std::exception_ptr e = take_packed_call_error()) std::rethrow_exception(e);
    value_error("kernel '", name_, "': a packed function call failed");
  }
  if (rc != 0) {
    throw UserError(ErrorKind::kMemory,
                    str_cat("kernel '", name_, "' could not allocate memory for an intermediate"));
  }
}

std::vector<std::vector<int64_t>> Module::output_shapes(const DLTensor* const* inputs,
                                                        size_t n) const {
  std::vector<size_t> input_index;
  for (size_t i = 0; i < args_.size(); ++i) {
    if (!args_[i].is_output) input_index.push_back(i);
  }
  if (n != input_index.size()) {
    type_error("kernel '", name_, "' takes ", input_index.size(), " input(s) (or all ",
               args_.size(), " arrays), got ", n);
  }
  // Bind the size variables from the inputs alone.
  std::vector<bool> bound(slots_.size(), false);
  std::unordered_map<const ExprNode*, int64_t> values;
  for (size_t k = 0; k < n; ++k) {
    const ArgSpec& spec = args_[input_index[k]];
    const DLTensor& t = *inputs[k];
    if (t.ndim != static_cast<int>(spec.dims.size())) {
      value_error(describe(input_index[k]), ": expected ", spec.dims.size(), " dimension(s), got ",
                  t.ndim, " (shape ", shape_str(t), ")");
    }
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      if (spec.dims[d].kind == DimSpec::Kind::kVar && !bound[spec.dims[d].slot]) {
        check_size_fits(input_index[k], d, spec.dims[d].slot, t.shape[d]);
        bound[spec.dims[d].slot] = true;
        values[slots_[spec.dims[d].slot].get()] = t.shape[d];
      }
    }
  }
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < args_.size(); ++i) {
    const ArgSpec& spec = args_[i];
    if (!spec.is_output) continue;
    std::vector<int64_t> shape;
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      const DimSpec& dim = spec.dims[d];
      if (dim.kind == DimSpec::Kind::kConst) {
        shape.push_back(dim.value);
      } else if (dim.kind == DimSpec::Kind::kVar) {
        auto it = values.find(slots_[dim.slot].get());
        if (it == values.end()) {
          value_error("output '", spec.name, "' has size variable '",
                      slots_[dim.slot].as<Var>()->name,
                      "' that no input determines; pass the output array explicitly");
        }
        shape.push_back(it->second);
      } else {
        const int64_t size = eval_dim(dim.expr, values, i, d);
        if (size < 0) {
          value_error(describe(i), ", an output, would have size ", to_string(dim.expr), " = ",
                      size, " in dimension ", shape.size(),
                      " for these inputs: they are too small for what the kernel computes");
        }
        shape.push_back(size);
      }
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

}  // namespace ptb
