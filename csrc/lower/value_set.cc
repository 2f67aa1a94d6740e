#include "lower/value_set.h"

#include <algorithm>
#include <numeric>

#include "ir/op.h"

namespace ptb {

void add_loop_range(LoopRanges& loops, const Expr& var, int64_t min, int64_t extent) {
  auto [it, inserted] = loops.try_emplace(var.get(), LoopRange{var, min, extent});
  if (inserted) return;
  int64_t lo = std::min(it->second.min, min);
  int64_t end = std::max(it->second.min + it->second.extent, min + extent);
  it->second = {var, lo, end - lo};
}

std::optional<ValueSet> value_set(const Expr& e, const LoopRanges& loops) {
  if (auto c = as_const_int(e)) return ValueSet{*c, *c, 0};
  if (e.as<Var>()) {
    auto it = loops.find(e.get());
    if (it == loops.end()) return std::nullopt;
    const LoopRange& r = it->second;
    return ValueSet{r.min, r.min + r.extent - 1, r.extent > 1 ? 1 : 0};
  }
  if (const auto* x = e.as<Cast>()) {
    DataType from = x->value.dtype(), to = x->dtype;
    if (!from.is_integer() || !to.is_integer() || to.bits() < from.bits()) return std::nullopt;
    return value_set(x->value, loops);
  }
  if (const auto* x = e.as<Add>()) {
    auto a = value_set(x->a, loops), b = value_set(x->b, loops);
    if (!a || !b) return std::nullopt;
    return ValueSet{a->lo + b->lo, a->hi + b->hi, std::gcd(a->step, b->step)};
  }
  if (const auto* x = e.as<Sub>()) {
    auto a = value_set(x->a, loops), b = value_set(x->b, loops);
    if (!a || !b) return std::nullopt;
    return ValueSet{a->lo - b->hi, a->hi - b->lo, std::gcd(a->step, b->step)};
  }
  if (const auto* x = e.as<Mul>()) {
    auto a = value_set(x->a, loops);
    auto c = as_const_int(x->b);
    if (!a || !c) return std::nullopt;
    if (*c >= 0) return ValueSet{a->lo * *c, a->hi * *c, a->step * *c};
    return ValueSet{a->hi * *c, a->lo * *c, -a->step * *c};
  }
  if (const auto* x = e.as<FloorMod>()) {
    auto a = value_set(x->a, loops);
    auto m = as_const_int(x->b);
    if (!a || !m || *m <= 0) return std::nullopt;
    if (a->lo >= 0 && a->hi < *m) return a;
    if (a->step == 0) return ValueSet{floor_mod(a->lo, *m), floor_mod(a->lo, *m), 0};
    int64_t g = std::gcd(a->step, *m);
    int64_t lo = floor_mod(a->lo, g);
    return ValueSet{lo, lo + (*m - 1 - lo) / g * g, g};
  }
  if (const auto* x = e.as<FloorDiv>()) {
    auto a = value_set(x->a, loops);
    auto m = as_const_int(x->b);
    if (!a || !m || *m <= 0) return std::nullopt;
    int64_t lo = floor_div(a->lo, *m), hi = floor_div(a->hi, *m);
    return ValueSet{lo, hi, lo == hi ? 0 : 1};
  }
  return std::nullopt;
}

}  // namespace ptb
