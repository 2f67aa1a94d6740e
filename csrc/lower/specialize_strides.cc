#include "lower/specialize_strides.h"

#include <cstdlib>
#include <optional>
#include <vector>

#include "ir/op.h"
#include "ir/simplify.h"
#include "ir/substitute.h"
#include "lower/balance_sums.h"
#include "lower/prefetch_streams.h"
#include "lower/storage_flatten.h"

namespace ptb {

LoweredFunc specialize_compact(const LoweredFunc& f, const std::string& name) {
  LoweredFunc out = f;
  out.name = name;
  VarMap vmap;
  for (const Buffer& b : f.args) {
    std::vector<Expr> compact = compact_strides(b->shape);
    for (size_t d = 0; d < b->strides.size(); ++d) vmap[b->strides[d].get()] = compact[d];
  }
  out.body = balance_sums(simplify(substitute(f.body, vmap)));
  // The schedule's prefetch requests, resolved now that the strides are known (debugging and
  // A/B timing: PYTVMBRIDGE_NO_PREFETCH=1 leaves them unresolved, which emits nothing).
  if (!std::getenv("PYTVMBRIDGE_NO_PREFETCH")) out.body = prefetch_streams(out.body);
  return out;
}

LoweredFunc specialize_unit_stride(const LoweredFunc& f) {
  VarMap unit;
  Expr all_unit;
  for (const Buffer& b : f.args) {
    if (b->strides.empty() || b->strides.back().as<Var>() == nullptr) continue;
    const Expr& stride = b->strides.back();
    unit[stride.get()] = make_const(stride.dtype(), int64_t{1});
    // A last axis of one element reads index 0 only, whatever its stride: no test (PyTorch
    // gives such an axis any stride, e.g. a keepdims result's).
    if (as_const_int(b->shape.back()) == std::optional<int64_t>(1)) continue;
    Expr test = EQ::make(stride, make_const(stride.dtype(), int64_t{1}));
    all_unit = all_unit.defined() ? And::make(all_unit, test) : test;
  }
  if (unit.empty()) return f;
  LoweredFunc out = f;
  Stmt fast = balance_sums(simplify(substitute(f.body, unit)));
  out.body = all_unit.defined() ? IfThenElse::make(all_unit, fast, f.body) : fast;
  out.versioned = all_unit.defined();
  return out;
}

}  // namespace ptb
