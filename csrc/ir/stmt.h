// Statement nodes of the IR (the loop nest). Same conventions as expr.h.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/expr.h"

namespace ptb {

#define PTB_STMT_NODES(X) \
  X(For)                  \
  X(Store)                \
  X(Allocate)             \
  X(Block)                \
  X(IfThenElse)           \
  X(LetStmt)              \
  X(Evaluate)             \
  X(Provide)              \
  X(Realize)              \
  X(CallPacked)

enum class StmtKind : uint8_t {
#define PTB_DECLARE_KIND(T) k##T,
  PTB_STMT_NODES(PTB_DECLARE_KIND)
#undef PTB_DECLARE_KIND
};

struct StmtNode {
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
  const StmtKind kind;
};

class Stmt {
 public:
  Stmt() = default;
  Stmt(std::shared_ptr<const StmtNode> node) : node_(std::move(node)) {}  // NOLINT
  const StmtNode* get() const { return node_.get(); }
  const StmtNode* operator->() const { return node_.get(); }
  explicit operator bool() const { return node_ != nullptr; }
  bool defined() const { return node_ != nullptr; }
  bool same_as(const Stmt& other) const { return node_ == other.node_; }
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }

 private:
  friend void detail::release_child(const Stmt& child);
  std::shared_ptr<const StmtNode> node_;
};

template <typename T>
struct StmtNodeBase : StmtNode {
  StmtNodeBase() : StmtNode(T::kKind) {}
};
#define PTB_STMT_KIND(T) static constexpr StmtKind kKind = StmtKind::k##T

// How a loop runs. Vectorized and unrolled loops are rewritten by their passes before codegen;
// parallel loops run their iterations on the thread pool.
enum class ForKind : uint8_t { kSerial, kParallel, kVectorized, kUnrolled };
const char* for_kind_name(ForKind kind);

struct For : StmtNodeBase<For> {
  PTB_STMT_KIND(For);
  For(Expr v, Expr m, Expr e, ForKind k, Stmt b)
      : var(std::move(v)),
        min(std::move(m)),
        extent(std::move(e)),
        for_kind(k),
        body(std::move(b)) {}
  ~For() override {
    detail::release_child(min);
    detail::release_child(extent);
    detail::release_child(body);
  }
  static Stmt make(Expr var, Expr min, Expr extent, ForKind kind, Stmt body);
  const Expr var, min, extent;
  const ForKind for_kind;
  const Stmt body;
};

// buffer[index] = value; a vector index writes lanes, masked by an optional predicate.
struct Store : StmtNodeBase<Store> {
  PTB_STMT_KIND(Store);
  Store(Buffer b, Expr v, Expr i, Expr p)
      : buffer(std::move(b)), value(std::move(v)), index(std::move(i)), predicate(std::move(p)) {}
  ~Store() override {
    detail::release_child(value);
    detail::release_child(index);
    detail::release_child(predicate);
  }
  static Stmt make(Buffer buffer, Expr value, Expr index, Expr predicate = Expr());
  const Buffer buffer;
  const Expr value, index, predicate;
};

// Memory for buffer (compact, 64-byte aligned), live for the body and freed after it.
struct Allocate : StmtNodeBase<Allocate> {
  PTB_STMT_KIND(Allocate);
  Allocate(Buffer b, Stmt s) : buffer(std::move(b)), body(std::move(s)) {}
  ~Allocate() override { detail::release_child(body); }
  static Stmt make(Buffer buffer, Stmt body);
  const Buffer buffer;
  const Stmt body;
};

struct Block : StmtNodeBase<Block> {
  PTB_STMT_KIND(Block);
  explicit Block(std::vector<Stmt> s) : stmts(std::move(s)) {}
  ~Block() override { detail::release_children(stmts); }
  // Flattens nested blocks and drops undefined statements; one statement stays itself.
  static Stmt make(std::vector<Stmt> stmts);
  const std::vector<Stmt> stmts;
};

struct IfThenElse : StmtNodeBase<IfThenElse> {
  PTB_STMT_KIND(IfThenElse);
  IfThenElse(Expr c, Stmt t, Stmt e)
      : condition(std::move(c)), then_case(std::move(t)), else_case(std::move(e)) {}
  ~IfThenElse() override {
    detail::release_child(condition);
    detail::release_child(then_case);
    detail::release_child(else_case);
  }
  static Stmt make(Expr condition, Stmt then_case, Stmt else_case = Stmt());
  const Expr condition;
  const Stmt then_case, else_case;  // else_case may be undefined
};

struct LetStmt : StmtNodeBase<LetStmt> {
  PTB_STMT_KIND(LetStmt);
  LetStmt(Expr v, Expr val, Stmt b)
      : var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  ~LetStmt() override {
    detail::release_child(value);
    detail::release_child(body);
  }
  static Stmt make(Expr var, Expr value, Stmt body);
  const Expr var, value;
  const Stmt body;
};

struct Evaluate : StmtNodeBase<Evaluate> {
  PTB_STMT_KIND(Evaluate);
  explicit Evaluate(Expr v) : value(std::move(v)) {}
  ~Evaluate() override { detail::release_child(value); }
  static Stmt make(Expr value);
  const Expr value;
};

// Tensor-level statements, present until storage flattening.
// op.output(value_index)[indices] = value
struct Provide : StmtNodeBase<Provide> {
  PTB_STMT_KIND(Provide);
  Provide(Operation o, int vi, Expr v, std::vector<Expr> idx)
      : op(std::move(o)), value_index(vi), value(std::move(v)), indices(std::move(idx)) {}
  ~Provide() override {
    detail::release_child(value);
    detail::release_children(indices);
  }
  static Stmt make(Operation op, int value_index, Expr value, std::vector<Expr> indices);
  const Operation op;
  const int value_index;
  const Expr value;
  const std::vector<Expr> indices;
};

// Storage for the region `bounds` of op's outputs, live for the body.
struct Realize : StmtNodeBase<Realize> {
  PTB_STMT_KIND(Realize);
  Realize(Operation o, std::vector<Range> b, Stmt s)
      : op(std::move(o)), bounds(std::move(b)), body(std::move(s)) {}
  ~Realize() override { detail::release_child(body); }
  static Stmt make(Operation op, std::vector<Range> bounds, Stmt body);
  const Operation op;
  const std::vector<Range> bounds;
  const Stmt body;
};

// A call of the packed function registered as `name` (TVM's call_packed), made by an extern
// stage (te/extern.h). A tensor argument names an operation's output until storage flattening
// and its buffer after (then passed as a DLTensor); a scalar argument is an expression.
struct PackedCallArg {
  Operation op;  // tensor-level
  int value_index = 0;
  Buffer buffer;  // after storage flattening
  Expr scalar;    // a scalar argument (op and buffer null)
};
struct CallPacked : StmtNodeBase<CallPacked> {
  PTB_STMT_KIND(CallPacked);
  CallPacked(std::string n, std::vector<PackedCallArg> a)
      : name(std::move(n)), args(std::move(a)) {}
  static Stmt make(std::string name, std::vector<PackedCallArg> args);
  const std::string name;
  const std::vector<PackedCallArg> args;
};

#undef PTB_STMT_KIND

}  // namespace ptb
