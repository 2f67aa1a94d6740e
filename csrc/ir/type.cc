#include "ir/type.h"

#include <cctype>
#include <unordered_map>

#include "support/error.h"

namespace ptb {

DataType DataType::parse(const std::string& name) {
  static const std::unordered_map<std::string, DataType> kNamed = {
      {"bool", Bool()},         {"int8", Int(8)},       {"int16", Int(16)},
      {"int32", Int(32)},       {"int64", Int(64)},     {"uint8", UInt(8)},
      {"uint16", UInt(16)},     {"uint32", UInt(32)},   {"uint64", UInt(64)},
      {"float16", Float(16)},   {"float32", Float(32)}, {"float64", Float(64)},
      {"bfloat16", BFloat16()}, {"float", Float(32)},   {"double", Float(64)},
      {"half", Float(16)},      {"handle", Handle()},
  };
  auto it = kNamed.find(name);
  if (it != kNamed.end()) return it->second;
  type_error("unsupported dtype '", name,
             "'; expected one of bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
             "float16, bfloat16, float32, float64");
}

std::string DataType::str() const {
  std::string base;
  switch (code()) {
    case kInt:
      base = "int" + std::to_string(bits_);
      break;
    case kUInt:
      base = "uint" + std::to_string(bits_);
      break;
    case kFloat:
      base = "float" + std::to_string(bits_);
      break;
    case kBFloat:
      base = "bfloat16";
      break;
    case kBool:
      base = "bool";
      break;
    case kHandle:
      base = bits_ == 0 ? "void" : "handle";
      break;
  }
  if (lanes_ > 1) base += "x" + std::to_string(lanes_);
  return base;
}

}  // namespace ptb
