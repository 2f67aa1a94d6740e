// The syntax tree of TC source, as the parser builds it: positions and names only, no meaning.
// Sema, range inference and the translation to te read it; nothing modifies it after parsing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/type.h"
#include "tc/error.h"
#include "tc/lexer.h"

namespace ptb::tc {

enum class AstKind : uint8_t {
  kIntLit,    // int_value
  kFloatLit,  // float_value
  kIdent,     // name: an index, a size, a where binding or a 0-d tensor
  kCall,      // name(args): a tensor read or a builtin call
  kSize,      // name.int_value: dimension int_value of tensor `name`
  kUnary,     // op args[0]: op is kMinus, kPlus or kBang
  kBinary,    // args[0] op args[1]
  kTernary,   // args[0] ? args[1] : args[2]
  kCast,      // dtype(args[0])
};

struct AstExpr {
  AstKind kind;
  SourcePos pos;    // the token that names the node: the operator of a binary, the name of a call
  SourcePos start;  // the node's first token: where a caret under the whole expression goes
  std::string name;
  Tok op = Tok::kEnd;
  int64_t int_value = 0;
  double float_value = 0;
  DataType dtype;
  int height = 1;  // 1 for a leaf; bounded by the parser so tree walks cannot overflow the stack
  std::vector<std::unique_ptr<AstExpr>> args;
};

// The parser rejects deeper trees; walkers that substitute where-bindings allow twice this.
constexpr int kMaxExprHeight = 400;
using AstExprPtr = std::unique_ptr<AstExpr>;

// One dimension of a tensor type: a size name (M) or a fixed size (3).
struct AstDim {
  SourcePos pos;
  std::string name;  // empty for a fixed size
  int64_t value = 0;
};

// A parameter `float(M, K) A`; outputs may omit the type (`-> (C)`), then `typed` is false.
struct AstParam {
  SourcePos pos;  // of the name
  std::string name;
  bool typed = false;
  SourcePos type_pos;
  DataType dtype;
  std::vector<AstDim> dims;
};

// `where i in lo:hi` (a range), `where x = expr` (a binding substituted where x is used) or
// `where exists T(i, k)` (a read that constrains range inference as if it were made, without
// reading anything; TC's form for giving a variable the range of a tensor's dimension).
struct AstWhere {
  bool is_range = true;
  bool is_exists = false;
  SourcePos pos;  // of the name (of 'exists')
  std::string name;
  AstExprPtr lo, hi;  // ranges
  AstExprPtr value;   // bindings; the read of an exists clause
};

struct AstIndex {
  SourcePos pos;
  std::string name;
};

// `O(i, j) op rhs where ...`. `op` is kAssign or one of the reduction operators; `bang` is set
// for the `!` forms, stored folded: op is then kPlusEq, kStarEq, kMinEq or kMaxEq.
struct AstStmt {
  SourcePos pos;  // of the tensor name
  std::string tensor;
  std::vector<AstIndex> indices;
  Tok op = Tok::kAssign;
  bool bang = false;
  SourcePos op_pos;
  AstExprPtr rhs;
  std::vector<AstWhere> wheres;
};

struct AstDef {
  SourcePos pos;  // of the name
  std::string name;
  // Set when the def did not parse: the parser skips to the next def, so one def that uses
  // syntax this front end lacks leaves the others usable. Only `pos` and `name` are valid then.
  std::shared_ptr<const TCError> error;
  std::vector<AstParam> inputs;
  std::vector<AstParam> outputs;
  std::vector<AstStmt> stmts;
};

struct AstProgram {
  std::vector<AstDef> defs;
};

}  // namespace ptb::tc
