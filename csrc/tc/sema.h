// Semantic checks of a TC def that need no sizes or types: what every name means, which
// statements may read which outputs, how many indices each tensor takes, which indices of a
// statement are reductions, and the where clauses. Range inference and the translation to te
// (to_te.h) then work from the DefInfo built here and can assume a well-formed program.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "tc/ast.h"
#include "tc/error.h"

namespace ptb::tc {

// The functions TC expressions may call.
// kLibrary: any other function of TC's list, built by ir/math.h's math_function(name).
enum class BuiltinKind : uint8_t { kFloatMath, kAbs, kMinMax, kPow, kLibrary };
struct BuiltinInfo {
  const char* name;
  int arity;
  BuiltinKind kind;
  Intrinsic intrinsic;  // for kFloatMath, kAbs, kPow
  bool is_max;          // for kMinMax
};
const BuiltinInfo* lookup_builtin(const std::string& name);

struct SizeInfo {
  std::string name;
  Expr var;  // a Var of kIndexType, shared by every input dimension of that name
};

struct TensorInfo {
  std::string name;
  bool is_input = false;
  const AstParam* param = nullptr;
  int rank = -1;  // from the signature, or from the first statement writing an untyped output
  int first_write = -1;
};

// What one statement's names mean.
struct StmtInfo {
  // The statement's index variables: the left-hand side's first (in order), then the reduction
  // indices in order of first use. Ids are positions in this list.
  std::vector<std::string> index_names;
  std::vector<SourcePos> index_pos;  // first use of each
  size_t num_lhs = 0;
  std::map<std::string, int> index_id;
  std::map<std::string, const AstWhere*> ranges;  // where i in lo:hi
  std::map<std::string, const AstWhere*> lets;    // where x = expr
  std::vector<const AstExpr*> exists;             // where exists T(...): reads for inference
  bool has_reduction() const { return index_names.size() > num_lhs; }
};

enum class NameKind : uint8_t { kIndex, kSize, kTensor, kLet, kBuiltin };

struct DefInfo {
  const AstDef* ast = nullptr;
  std::vector<SizeInfo> sizes;
  std::map<std::string, int> size_id;
  std::vector<TensorInfo> tensors;  // inputs, then outputs, in signature order
  std::map<std::string, int> tensor_id;
  std::vector<StmtInfo> stmts;  // one per statement

  // The meaning of `name` inside statement `stmt` (an unknown name is an index variable).
  NameKind kind_of(const StmtInfo& stmt, const std::string& name) const;
};

// Limits that keep every later walk over expressions bounded, whatever the source: where
// bindings are substituted, so they could otherwise nest or grow without bound.
constexpr int kMaxExpandedHeight = 2 * kMaxExprHeight;
constexpr int64_t kMaxExpandedSize = 100000;

// Checks `def` and describes its names; throws TCError at the first problem.
DefInfo check_def(const SourceText& source, const AstDef& def);

}  // namespace ptb::tc
