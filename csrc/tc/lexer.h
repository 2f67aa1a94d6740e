// The tokens of TC source and the lexer that produces them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/type.h"
#include "tc/error.h"

namespace ptb::tc {

enum class Tok : uint8_t {
  kEnd,
  kIdent,
  kInt,    // integer literal
  kFloat,  // float literal
  kType,   // a scalar type name: float, int32, double...
  kDef,
  kWhere,
  kIn,
  kLParen,
  kRParen,
  kLBrace,
  kRBrace,
  kComma,
  kColon,
  kSemi,
  kDot,
  kArrow,  // ->
  kQuestion,
  kPlus,
  kMinus,
  kStar,
  kSlash,
  kBang,
  kAssign,      // =
  kPlusEq,      // +=
  kStarEq,      // *=
  kMinEq,       // min=
  kMaxEq,       // max=
  kPlusEqBang,  // +=!
  kStarEqBang,  // *=!
  kMinEqBang,   // min=!
  kMaxEqBang,   // max=!
  kEq,          // ==
  kNe,          // !=
  kLt,
  kLe,
  kGt,
  kGe,
  kAndAnd,
  kOrOr,
};

// How a token is shown in "expected X, found Y" messages.
const char* token_name(Tok kind);

struct Token {
  Tok kind = Tok::kEnd;
  SourcePos pos;
  std::string text;  // the token's source text
  int64_t int_value = 0;
  double float_value = 0;
  DataType dtype;  // for kType
};

// Splits the whole source into tokens, ending with one kEnd. Throws TCError on a character that
// starts no token, or on a literal out of range. `#` starts a comment up to the end of the line.
std::vector<Token> tokenize(const SourceText& source);

}  // namespace ptb::tc
