// Expression nodes of the IR.
//
// Nodes are small immutable structs, created through a static make(); they are shared through
// std::shared_ptr and compared by identity where identity matters (Var, IterVar, Buffer). The list
// of node kinds is written once, in PTB_EXPR_NODES, and generates the kind enum and the visitor
// methods (as Halide's IR does).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/type.h"

namespace ptb {

#define PTB_EXPR_NODES(X) \
  X(IntImm)               \
  X(FloatImm)             \
  X(Var)                  \
  X(Cast)                 \
  X(Add)                  \
  X(Sub)                  \
  X(Mul)                  \
  X(Div)                  \
  X(Mod)                  \
  X(FloorDiv)             \
  X(FloorMod)             \
  X(Min)                  \
  X(Max)                  \
  X(EQ)                   \
  X(NE)                   \
  X(LT)                   \
  X(LE)                   \
  X(GT)                   \
  X(GE)                   \
  X(And)                  \
  X(Or)                   \
  X(Not)                  \
  X(Select)               \
  X(Call)                 \
  X(Let)                  \
  X(Load)                 \
  X(Ramp)                 \
  X(Broadcast)            \
  X(TensorRead)           \
  X(Reduce)

enum class ExprKind : uint8_t {
#define PTB_DECLARE_KIND(T) k##T,
  PTB_EXPR_NODES(PTB_DECLARE_KIND)
#undef PTB_DECLARE_KIND
};

class Expr;
class Stmt;
namespace detail {
// Node destructors hand their children to release_child(): a child that would be freed with its
// parent is freed afterwards, by a loop in the outermost destructor, so destroying a chain of a
// million nodes does not recurse a million times.
void release_child(const Expr& child);
void release_child(const Stmt& child);
void release_children(const std::vector<Expr>& children);
void release_children(const std::vector<Stmt>& children);
}  // namespace detail

struct ExprNode {
  ExprNode(ExprKind kind, DataType dtype) : kind(kind), dtype(dtype) {}
  virtual ~ExprNode() = default;
  const ExprKind kind;
  const DataType dtype;
};

// A handle to an immutable expression; null when default-constructed.
class Expr {
 public:
  Expr() = default;
  Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}  // NOLINT

  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  explicit operator bool() const { return node_ != nullptr; }
  bool defined() const { return node_ != nullptr; }
  bool same_as(const Expr& other) const { return node_ == other.node_; }
  DataType dtype() const { return node_->dtype; }

  // The node as T if it is one, else nullptr: `if (auto* add = e.as<Add>()) ...`.
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }
  const std::shared_ptr<const ExprNode>& node() const { return node_; }

 private:
  friend void detail::release_child(const Expr& child);
  std::shared_ptr<const ExprNode> node_;
};

template <typename T>
struct ExprNodeBase : ExprNode {
  explicit ExprNodeBase(DataType dtype) : ExprNode(T::kKind, dtype) {}
};

#define PTB_NODE_KIND(T) static constexpr ExprKind kKind = ExprKind::k##T

struct IntImm : ExprNodeBase<IntImm> {
  PTB_NODE_KIND(IntImm);
  IntImm(DataType t, int64_t v) : ExprNodeBase(t), value(v) {}
  // Integer, unsigned or bool constant; the value is wrapped to the dtype's width.
  static Expr make(DataType t, int64_t value);
  const int64_t value;
};

struct FloatImm : ExprNodeBase<FloatImm> {
  PTB_NODE_KIND(FloatImm);
  FloatImm(DataType t, double v) : ExprNodeBase(t), value(v) {}
  static Expr make(DataType t, double value);
  const double value;
};

// A scalar variable, compared by identity. Handles (pointers) are Vars of DataType::Handle().
struct Var : ExprNodeBase<Var> {
  PTB_NODE_KIND(Var);
  Var(DataType t, std::string n) : ExprNodeBase(t), name(std::move(n)) {}
  static Expr make(DataType t, const std::string& name);
  const std::string name;
};

struct Cast : ExprNodeBase<Cast> {
  PTB_NODE_KIND(Cast);
  Cast(DataType t, Expr v) : ExprNodeBase(t), value(std::move(v)) {}
  ~Cast() override { detail::release_child(value); }
  static Expr make(DataType t, Expr value);
  const Expr value;
};

// Binary operators share one layout. Arithmetic nodes have their operands' dtype, comparisons
// are bool (with the operands' lanes). make() checks that both operands have the same dtype.
template <typename T>
struct BinaryNode : ExprNodeBase<T> {
  BinaryNode(DataType t, Expr a_, Expr b_)
      : ExprNodeBase<T>(t), a(std::move(a_)), b(std::move(b_)) {}
  ~BinaryNode() override {
    detail::release_child(a);
    detail::release_child(b);
  }
  static Expr make(Expr a, Expr b);
  const Expr a, b;
};

#define PTB_BINARY_NODE(T)           \
  struct T : BinaryNode<T> {         \
    PTB_NODE_KIND(T);                \
    using BinaryNode<T>::BinaryNode; \
  };

// Div: true division for floats, truncating division for integers (C semantics).
// Mod: truncating remainder for integers (C's %), fmod for floats.
// FloorDiv/FloorMod: Python's // and % on integers.
PTB_BINARY_NODE(Add)
PTB_BINARY_NODE(Sub)
PTB_BINARY_NODE(Mul)
PTB_BINARY_NODE(Div)
PTB_BINARY_NODE(Mod)
PTB_BINARY_NODE(FloorDiv)
PTB_BINARY_NODE(FloorMod)
PTB_BINARY_NODE(Min)
PTB_BINARY_NODE(Max)
PTB_BINARY_NODE(EQ)
PTB_BINARY_NODE(NE)
PTB_BINARY_NODE(LT)
PTB_BINARY_NODE(LE)
PTB_BINARY_NODE(GT)
PTB_BINARY_NODE(GE)
PTB_BINARY_NODE(And)
PTB_BINARY_NODE(Or)
#undef PTB_BINARY_NODE

struct Not : ExprNodeBase<Not> {
  PTB_NODE_KIND(Not);
  Not(DataType t, Expr a_) : ExprNodeBase(t), a(std::move(a_)) {}
  ~Not() override { detail::release_child(a); }
  static Expr make(Expr a);
  const Expr a;
};

// Evaluates both sides, picks one per lane (no control flow).
struct Select : ExprNodeBase<Select> {
  PTB_NODE_KIND(Select);
  Select(DataType t, Expr c, Expr tv, Expr fv)
      : ExprNodeBase(t),
        condition(std::move(c)),
        true_value(std::move(tv)),
        false_value(std::move(fv)) {}
  ~Select() override {
    detail::release_child(condition);
    detail::release_child(true_value);
    detail::release_child(false_value);
  }
  static Expr make(Expr condition, Expr true_value, Expr false_value);
  const Expr condition, true_value, false_value;
};

// Built-in functions. kIfThenElse evaluates only the branch it takes, so it may guard a read
// that would be out of bounds (TVM's if_then_else).
enum class Intrinsic : uint8_t {
  kExp,
  kExp2,
  kLog,
  kLog2,
  kLog10,
  kLog1p,
  kSqrt,
  kRsqrt,
  kSin,
  kCos,
  kTan,
  kTanh,
  kSigmoid,
  kErf,
  kAbs,
  kFloor,
  kCeil,
  kRound,
  kTrunc,
  kPow,
  kFmod,
  kIsNan,
  kFma,
  // libm functions (vector variants from libmvec where glibc has them)
  kAcos,
  kAcosh,
  kAsin,
  kAsinh,
  kAtan,
  kAtanh,
  kCbrt,
  kCosh,
  kSinh,
  kErfc,
  kExp10,
  kExpm1,
  kLgamma,
  kTgamma,
  kJ0,
  kJ1,
  kY0,
  kY1,
  kLogb,
  kRoundHalfAway,  // C's round(): halves away from zero (TC's round)
  kAtan2,
  kCopysign,
  kFdim,
  kHypot,
  kNextafter,
  kRemainder,
  // Floor division and remainder of floats, NumPy's (npy_divmod, Python's // and %): from fmod,
  // exact where floor(a / b) rounds across an integer (1 // 0.1 is 9, 1 % 0.1 is 0.0999...),
  // right at infinities (5 % inf is 5, -7.5 // inf is -1). Made by floordiv()/floormod() of
  // floats (ir/op.h); integers keep the FloorDiv/FloorMod nodes.
  kFloorDivide,
  kFloorMod,
  // special functions libm lacks, computed by the runtime (runtime/special_math.h)
  kErfinv,
  kErfcinv,
  kErfcx,
  kNormcdfinv,
  kBesselI0,
  kBesselI1,
  kSinpi,
  kCospi,
  kIfThenElse,  // keep last of the functions: loops over the intrinsics stop here
  // A hint, not a function: prefetch(x[i]) fetches the cache line holding x[i] into L2 ahead of
  // its use and evaluates to 0; x[i] itself is not read (it may lie past the buffer's end).
  // With a second argument, prefetch(x[0], d) is a request placed by the schedule primitive
  // prefetch() at the top of a loop's body (the tensor's region that iteration + d reads), which
  // lower/prefetch_streams.h turns into prefetches of single lines; codegen emits nothing for an
  // unresolved request.
  kPrefetch,
  // Bitwise operations on integers (TVM's bitwise_and... and shift_left/shift_right; Python's
  // & | ^ ~ << >> on integer expressions). Operands share one integer dtype; bool operands are
  // And / Or / NE / Not nodes instead (ir/op.h's bitwise_* pick). They are not math functions,
  // which is why they come after kIfThenElse: the loops over the math intrinsics never see them.
  // Shifts are defined for every amount, as NumPy's are (npy_lshift / npy_rshift): an amount
  // outside [0, bits) -- negative ones included -- shifts every bit out, giving 0, or -1 for a
  // right shift of a negative signed value (the right shift is arithmetic for signed dtypes).
  kBitwiseAnd,
  kBitwiseOr,
  kBitwiseXor,
  kBitwiseNot,
  kShiftLeft,
  kShiftRight,
};
const char* intrinsic_name(Intrinsic op);
// One of the integer bitwise intrinsics above (cheap integer operations, not math calls).
inline bool is_bitwise_intrinsic(Intrinsic op) {
  return op >= Intrinsic::kBitwiseAnd && op <= Intrinsic::kShiftRight;
}
// Its operator as Python writes it ("&", "~", "<<"...), for printing and error messages.
const char* bitwise_operator(Intrinsic op);

struct Call : ExprNodeBase<Call> {
  PTB_NODE_KIND(Call);
  Call(DataType t, Intrinsic o, std::vector<Expr> a) : ExprNodeBase(t), op(o), args(std::move(a)) {}
  ~Call() override { detail::release_children(args); }
  // Checks arity and dtypes (math on floats, abs also on integers, isnan gives bool, bitwise
  // operations on integers only).
  static Expr make(Intrinsic op, std::vector<Expr> args);
  const Intrinsic op;
  const std::vector<Expr> args;
};

struct Let : ExprNodeBase<Let> {
  PTB_NODE_KIND(Let);
  Let(DataType t, Expr v, Expr val, Expr b)
      : ExprNodeBase(t), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  ~Let() override {
    detail::release_child(value);
    detail::release_child(body);
  }
  static Expr make(Expr var, Expr value, Expr body);
  const Expr var;  // a Var
  const Expr value, body;
};

// A memory buffer after storage flattening: a data pointer, an element type, and a shape and
// strides in elements (strides may be symbolic: compiled code reads them at run time).
struct BufferNode {
  std::string name;
  DataType dtype;  // element type
  Expr data;       // Var of DataType::Handle()
  std::vector<Expr> shape;
  std::vector<Expr> strides;  // empty: compact row-major
};
using Buffer = std::shared_ptr<const BufferNode>;
Buffer make_buffer(const std::string& name, DataType dtype, std::vector<Expr> shape,
                   std::vector<Expr> strides = {});

// A read of buffer[index]; index is a flat element offset (kOffsetType, or a vector of it).
// A vector index reads lanes; a stride-1 Ramp index is a contiguous vector load.
struct Load : ExprNodeBase<Load> {
  PTB_NODE_KIND(Load);
  Load(DataType t, Buffer b, Expr i, Expr p)
      : ExprNodeBase(t), buffer(std::move(b)), index(std::move(i)), predicate(std::move(p)) {}
  ~Load() override {
    detail::release_child(index);
    detail::release_child(predicate);
  }
  // predicate: optional bool vector masking the lanes that are read.
  static Expr make(Buffer buffer, Expr index, Expr predicate = Expr());
  const Buffer buffer;
  const Expr index, predicate;
};

// The vector base, base + stride, ..., base + (lanes - 1) * stride.
struct Ramp : ExprNodeBase<Ramp> {
  PTB_NODE_KIND(Ramp);
  Ramp(DataType t, Expr b, Expr s, int l)
      : ExprNodeBase(t), base(std::move(b)), stride(std::move(s)), lanes(l) {}
  ~Ramp() override {
    detail::release_child(base);
    detail::release_child(stride);
  }
  static Expr make(Expr base, Expr stride, int lanes);
  const Expr base, stride;
  const int lanes;
};

struct Broadcast : ExprNodeBase<Broadcast> {
  PTB_NODE_KIND(Broadcast);
  Broadcast(DataType t, Expr v, int l) : ExprNodeBase(t), value(std::move(v)), lanes(l) {}
  ~Broadcast() override { detail::release_child(value); }
  static Expr make(Expr value, int lanes);
  const Expr value;
  const int lanes;
};

// A half-open range [min, min + extent).
struct Range {
  Expr min, extent;
  static Range from_min_extent(Expr min, Expr extent) {
    return {std::move(min), std::move(extent)};
  }
};

// An iteration variable: a loop axis of a compute (data-parallel) or a reduction axis.
enum class IterKind : uint8_t { kDataPar, kReduce };
struct IterVarNode {
  Expr var;  // a Var of kIndexType, or int64 over an int64 domain
  Range dom;
  IterKind kind;
};
using IterVar = std::shared_ptr<const IterVarNode>;
// The variable is int64 when the domain's min or extent is (a dimension bound from an int64 size
// variable), kIndexType otherwise; the domain is given the variable's type.
IterVar make_iter_var(Range dom, const std::string& name, IterKind kind);
// The same with the variable's type chosen by the caller (an integer type at least as wide as
// the domain's).
IterVar make_iter_var(Range dom, const std::string& name, IterKind kind, DataType dtype);

// Tensor-level nodes, present until storage flattening: a read of a tensor produced by an
// operation (te/operation.h), and a reduction (only at the top of a compute's body).
struct OperationNode;
using Operation = std::shared_ptr<const OperationNode>;

struct TensorRead : ExprNodeBase<TensorRead> {
  PTB_NODE_KIND(TensorRead);
  TensorRead(DataType t, Operation o, int vi, std::vector<Expr> idx)
      : ExprNodeBase(t), op(std::move(o)), value_index(vi), indices(std::move(idx)) {}
  ~TensorRead() override { detail::release_children(indices); }
  // Checks the number of indices against the tensor's rank and that they are integers.
  static Expr make(Operation op, int value_index, std::vector<Expr> indices);
  const Operation op;
  const int value_index;
  const std::vector<Expr> indices;
};

// kCustom: a user-defined reducer (CommReducerNode below).
enum class ReduceKind : uint8_t { kSum, kProd, kMin, kMax, kCustom };
const char* reduce_name(ReduceKind kind);

// A commutative reducer defined by the user (TVM's comm_reducer), over a tuple of n values:
// result[k] combines the accumulators lhs with the new values rhs (Vars bound only here) into
// the k-th new accumulator; identity[k] is the k-th start value. A compute reducing with it has
// n outputs, output k being Reduce{reducer, value_index k}; they are updated together.
struct CommReducerNode {
  std::string name;
  std::vector<Expr> lhs, rhs, result, identity;
};
using CommReducer = std::shared_ptr<const CommReducerNode>;
// Checks arity, that lhs/rhs are distinct Vars of matching dtypes, that result and identity
// have those dtypes and that identity uses no variables. ValueError/TypeError otherwise.
CommReducer make_comm_reducer(const std::string& name, std::vector<Expr> lhs, std::vector<Expr> rhs,
                              std::vector<Expr> result, std::vector<Expr> identity);
// The identity of a built-in reduction: 0, 1, and for min / max +inf / -inf on floats, the
// dtype's largest / smallest value on integers.
Expr reduce_identity(ReduceKind kind, DataType dtype);
// The combiner applied to an accumulator and a new value (built-in kinds).
Expr reduce_combine(ReduceKind kind, Expr acc, Expr value);
struct Reduce;
// The start value of `r`'s accumulator, for built-in and custom reducers alike.
Expr reduce_identity_of(const Reduce& r);

struct Reduce : ExprNodeBase<Reduce> {
  PTB_NODE_KIND(Reduce);
  Reduce(DataType t, ReduceKind k, Expr s, std::vector<IterVar> a, Expr c, CommReducer r, int vi)
      : ExprNodeBase(t),
        combiner(k),
        source(std::move(s)),
        axis(std::move(a)),
        condition(std::move(c)),
        reducer(std::move(r)),
        value_index(vi) {}
  ~Reduce() override {
    detail::release_child(source);
    detail::release_child(condition);
  }
  // axis: reduce IterVars (at least one); condition: a bool predicate or undefined.
  // kind kCustom needs `reducer`; source is then the reducer's value `value_index`.
  static Expr make(ReduceKind kind, Expr source, std::vector<IterVar> axis, Expr condition,
                   CommReducer reducer = nullptr, int value_index = 0);
  const ReduceKind combiner;
  const Expr source;
  const std::vector<IterVar> axis;
  const Expr condition;
  const CommReducer reducer;  // kCustom only
  const int value_index;      // kCustom: which value of the reducer's tuple this is
};

#undef PTB_NODE_KIND

}  // namespace ptb
