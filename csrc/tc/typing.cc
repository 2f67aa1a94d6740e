#include "tc/typing.h"

#include "support/error.h"

namespace ptb::tc {

std::string TypeClass::str() const {
  switch (weak) {
    case Weak::kInt:
      return "an integer constant or index";
    case Weak::kFloat:
      return "a float constant";
    case Weak::kNone:
      break;
  }
  return dtype.str();
}

bool can_adopt(const TypeClass& c, DataType target, std::string* why) {
  if (!c.is_weak() || c.dtype == target) return true;
  if (target.is_bool()) {
    *why = str_cat("cannot use ", c.str(), " as a bool value; compare it instead (x != 0)");
    return false;
  }
  if (c.weak == Weak::kFloat && !target.is_float()) {
    *why = str_cat("cannot use ", c.str(), " in ", target.str(),
                   " arithmetic; convert with float32(...) or use an integer");
    return false;
  }
  return true;
}

std::optional<TypeClass> join_types(const TypeClass& a, const TypeClass& b, std::string* why) {
  if (!a.is_weak() && !b.is_weak()) {
    if (a.dtype == b.dtype) return a;
    *why = str_cat("type mismatch: ", a.dtype.str(), " and ", b.dtype.str(),
                   " values do not mix; convert one of them, e.g. ", b.dtype.str(), "(x)");
    return std::nullopt;
  }
  if (!a.is_weak()) {
    if (!can_adopt(b, a.dtype, why)) return std::nullopt;
    return a;
  }
  if (!b.is_weak()) {
    if (!can_adopt(a, b.dtype, why)) return std::nullopt;
    return b;
  }
  // Two weak values: a float constant makes the result a float constant, whatever the order.
  // A weak value may carry a concrete dtype (a temporary filled with constants): keep the wider.
  if (a.weak == Weak::kFloat || b.weak == Weak::kFloat) {
    DataType t = DataType::Float(32);
    if (a.weak == Weak::kFloat && a.dtype.bits() > t.bits()) t = a.dtype;
    if (b.weak == Weak::kFloat && b.dtype.bits() > t.bits()) t = b.dtype;
    return TypeClass{t, Weak::kFloat};
  }
  return a.dtype.bits() >= b.dtype.bits() ? a : b;
}

}  // namespace ptb::tc
