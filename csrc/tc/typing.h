// TC's loose typing. Tensors have a declared (or inferred) dtype; literals and index arithmetic
// do not: they are "weak" and adopt the dtype of the tensor value they meet, so `A(i) * 2` is
// float32 for a float32 A and float64 for a float64 A, and `x / (KH * KW)` divides by a float.
// Two tensor values of different dtypes never mix silently: that is a type mismatch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ir/type.h"

namespace ptb::tc {

enum class Weak : uint8_t {
  kNone,   // a tensor value (or a conversion): its dtype is fixed
  kInt,    // integer literals, indices and sizes: int32 unless they meet another dtype
  kFloat,  // float literals (and math on weak values): float32 unless they meet a float dtype
};

struct TypeClass {
  DataType dtype;  // the dtype it has (strong) or defaults to (weak)
  Weak weak = Weak::kNone;

  static TypeClass strong(DataType t) { return {t, Weak::kNone}; }
  static TypeClass weak_int() { return {DataType::Int(32), Weak::kInt}; }
  static TypeClass weak_float() { return {DataType::Float(32), Weak::kFloat}; }
  bool is_weak() const { return weak != Weak::kNone; }
  bool is_bool() const { return !is_weak() && dtype.is_bool(); }
  std::string str() const;
};

// The class of an operation on a and b, or nullopt with *why set when they do not mix.
std::optional<TypeClass> join_types(const TypeClass& a, const TypeClass& b, std::string* why);

// Whether a value of class `c` may take the dtype `target` (a strong value only its own); false
// with *why set when it cannot (a float literal in an integer context, a number as a bool).
bool can_adopt(const TypeClass& c, DataType target, std::string* why);

}  // namespace ptb::tc
