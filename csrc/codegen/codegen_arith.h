// Dtype-aware arithmetic on LLVM values, scalar or vector: the building blocks codegen_llvm.cc
// translates expression nodes with. Only csrc/codegen includes this.
//
// Conventions:
// - bool is i1 in registers and i8 in memory (to_memory / from_memory convert).
// - float16 and bfloat16 are half / bfloat in registers and memory; arithmetic widens them to
//   float32 and rounds each result back (NumPy computes on float16 the same way).
// - Signed 32/64-bit add, sub and mul are `nsw` (overflow is undefined, as in C and TVM): index
//   arithmetic then widens to 64 bits for free and the vectorizer can prove accesses contiguous.
// - Integer division and remainder by zero give 0 and INT_MIN / -1 wraps (NumPy's results);
//   both would trap or be undefined as plain LLVM divisions.
// - Float min / max propagate NaN (llvm.minimum / llvm.maximum), like numpy.minimum and
//   torch.minimum. Comparisons are ordered except !=, which is true for NaN (as in NumPy).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/expr.h"
#include "ir/type.h"

namespace llvm {
class IRBuilderBase;
class LLVMContext;
class Type;
class Value;
}  // namespace llvm

namespace ptb {

llvm::Type* register_type(llvm::LLVMContext& ctx, DataType t);
llvm::Type* memory_type(llvm::LLVMContext& ctx, DataType t);
llvm::Value* to_memory(llvm::IRBuilderBase& b, llvm::Value* v, DataType t);
llvm::Value* from_memory(llvm::IRBuilderBase& b, llvm::Value* v, DataType t);

// The dtype arithmetic on t is done in: float32 (same lanes) for 16-bit floats, t otherwise.
DataType compute_type(DataType t);
// Converts a value of dtype t to compute_type(t), and a compute_type(t) value back to t.
llvm::Value* widen(llvm::IRBuilderBase& b, llvm::Value* v, DataType t);
llvm::Value* narrow(llvm::IRBuilderBase& b, llvm::Value* v, DataType t);

// Numpy's astype: integers wrap, floats round to nearest even, float to integer truncates
// toward zero (out of range, and NaN, as C casts compiled for x86 give: INT_MIN of the signed
// type converted through, wrapped to narrower ones; the same folded or computed), and
// anything to bool is a != 0 test (NaN is true).
llvm::Value* emit_cast(llvm::IRBuilderBase& b, llvm::Value* v, DataType from, DataType to);

enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kFloorDiv,
  kFloorMod,
  kMin,
  kMax,
  kEQ,
  kNE,
  kLT,
  kLE,
  kGT,
  kGE,
  kAnd,
  kOr,
};

// a op b for operands of dtype t (the result is t, or bool for comparisons). Div is true
// division for floats and truncating for integers; Mod is fmod / C's %; FloorDiv / FloorMod are
// Python's // and % (integers only).
llvm::Value* emit_binary(llvm::IRBuilderBase& b, BinaryOp op, llvm::Value* x, llvm::Value* y,
                         DataType t);

// A bitwise intrinsic (expr.h: and, or, xor, not, shift_left, shift_right) of integer operands
// of dtype t (one operand for not). Shifts give NumPy's result for every amount, never poison:
// an amount outside [0, bits) gives 0 (-1 for a right shift of a negative signed value). A
// constant amount in range is a plain shift.
llvm::Value* emit_bitwise(llvm::IRBuilderBase& b, Intrinsic op,
                          const std::vector<llvm::Value*>& args, DataType t);

// A constant of dtype t (splat for vectors).
llvm::Value* make_int_constant(llvm::LLVMContext& ctx, DataType t, int64_t value);
llvm::Value* make_float_constant(llvm::LLVMContext& ctx, DataType t, double value);

}  // namespace ptb
