// Scalar and vector data types of the IR. Codes match DLPack so a DataType converts to and from a
// DLDataType without a table.
#pragma once

#include <cstdint>
#include <string>

namespace ptb {

class DataType {
 public:
  enum Code : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kHandle = 3, kBFloat = 4, kBool = 6 };

  constexpr DataType() = default;
  constexpr DataType(Code code, int bits, int lanes = 1)
      : code_(code), bits_(static_cast<uint8_t>(bits)), lanes_(static_cast<uint16_t>(lanes)) {}

  static constexpr DataType Int(int bits, int lanes = 1) { return {kInt, bits, lanes}; }
  static constexpr DataType UInt(int bits, int lanes = 1) { return {kUInt, bits, lanes}; }
  static constexpr DataType Float(int bits, int lanes = 1) { return {kFloat, bits, lanes}; }
  static constexpr DataType BFloat16(int lanes = 1) { return {kBFloat, 16, lanes}; }
  // Booleans occupy one byte in memory (as in NumPy, PyTorch and DLPack's kDLBool).
  static constexpr DataType Bool(int lanes = 1) { return {kBool, 8, lanes}; }
  static constexpr DataType Handle() { return {kHandle, 64, 1}; }
  static constexpr DataType Void() { return {kHandle, 0, 1}; }

  // Parses "float32", "int8", "bool", "bfloat16", "float" (float32), "double" (float64)...
  // Throws a TypeError naming the string for anything else.
  static DataType parse(const std::string& name);

  Code code() const { return static_cast<Code>(code_); }
  int bits() const { return bits_; }
  int lanes() const { return lanes_; }
  int bytes() const { return (bits_ + 7) / 8; }

  bool is_int() const { return code_ == kInt; }
  bool is_uint() const { return code_ == kUInt; }
  bool is_integer() const { return code_ == kInt || code_ == kUInt; }
  bool is_float() const { return code_ == kFloat || code_ == kBFloat; }
  bool is_bfloat() const { return code_ == kBFloat; }
  bool is_bool() const { return code_ == kBool; }
  bool is_handle() const { return code_ == kHandle && bits_ != 0; }
  bool is_void() const { return code_ == kHandle && bits_ == 0; }
  bool is_scalar() const { return lanes_ == 1; }
  bool is_vector() const { return lanes_ > 1; }

  DataType element_of() const { return with_lanes(1); }
  DataType with_lanes(int lanes) const { return DataType(code(), bits_, lanes); }

  bool operator==(const DataType& o) const {
    return code_ == o.code_ && bits_ == o.bits_ && lanes_ == o.lanes_;
  }
  bool operator!=(const DataType& o) const { return !(*this == o); }

  // "float32", "int64x8" for a vector of 8 lanes.
  std::string str() const;

 private:
  uint8_t code_ = kInt;
  uint8_t bits_ = 32;
  uint16_t lanes_ = 1;
};

// The type of loop variables, shapes and indices written by users (TVM's convention).
constexpr DataType kIndexType = DataType::Int(32);
// The type of flattened element offsets: large tensors need 64 bits.
constexpr DataType kOffsetType = DataType::Int(64);

}  // namespace ptb
