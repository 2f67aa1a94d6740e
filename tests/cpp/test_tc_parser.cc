// TC front end, syntax: the lexer's tokens and the parser's tree and its error positions.
#include <gtest/gtest.h>

#include <string>

#include "tc/error.h"
#include "tc/lexer.h"
#include "tc/parser.h"

namespace ptb::tc {
namespace {

std::vector<Tok> kinds(const std::string& text) {
  SourceText src(text);
  std::vector<Tok> out;
  for (const Token& t : tokenize(src)) out.push_back(t.kind);
  return out;
}

// The TCError of parsing `text`; fails the test when there is none.
TCError parse_error(const std::string& text) {
  try {
    SourceText src(text);
    parse_program(src);
  } catch (const TCError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a TCError for: " << text;
  return SourceText("").make_error({0, 0}, "none");
}

TEST(TcLexer, ReductionOperatorsAreSingleTokens) {
  EXPECT_EQ(kinds("+=! *=! min=! max=! += *= min= max= ="),
            (std::vector<Tok>{Tok::kPlusEqBang, Tok::kStarEqBang, Tok::kMinEqBang, Tok::kMaxEqBang,
                              Tok::kPlusEq, Tok::kStarEq, Tok::kMinEq, Tok::kMaxEq, Tok::kAssign,
                              Tok::kEnd}));
  // `min` followed by `==` is a name and a comparison; `min(` is a call.
  EXPECT_EQ(kinds("min == max("),
            (std::vector<Tok>{Tok::kIdent, Tok::kEq, Tok::kIdent, Tok::kLParen, Tok::kEnd}));
}

TEST(TcLexer, SizesOfTensorsAreNotFloats) {
  EXPECT_EQ(kinds("A.1 1.5 2e3 7"),
            (std::vector<Tok>{Tok::kIdent, Tok::kDot, Tok::kInt, Tok::kFloat, Tok::kFloat,
                              Tok::kInt, Tok::kEnd}));
}

TEST(TcLexer, TypesKeywordsAndComments) {
  EXPECT_EQ(kinds("def where in float double uint8 bool # float ignored\n x"),
            (std::vector<Tok>{Tok::kDef, Tok::kWhere, Tok::kIn, Tok::kType, Tok::kType, Tok::kType,
                              Tok::kType, Tok::kIdent, Tok::kEnd}));
  SourceText src("float double int64");
  auto toks = tokenize(src);
  EXPECT_EQ(toks[0].dtype, DataType::Float(32));
  EXPECT_EQ(toks[1].dtype, DataType::Float(64));
  EXPECT_EQ(toks[2].dtype, DataType::Int(64));
}

TEST(TcLexer, PositionsAreLineAndColumn) {
  SourceText src("def f\n  (x");
  auto toks = tokenize(src);
  EXPECT_EQ(toks[2].pos.line, 2);
  EXPECT_EQ(toks[2].pos.col, 3);
  EXPECT_EQ(toks[3].pos.col, 4);
}

TEST(TcLexer, RejectsStrayCharactersWithTheirPosition) {
  TCError e = parse_error("def f(float(N) A) -> (B) {\n  B(i) = A(i) $ 2\n}");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.col(), 15);
  EXPECT_NE(std::string(e.what()).find("unexpected character '$'"), std::string::npos);
  // The message quotes the line and puts a caret under the column.
  EXPECT_NE(std::string(e.what()).find("\n      B(i) = A(i) $ 2\n                  ^"),
            std::string::npos)
      << e.what();
}

TEST(TcLexer, LiteralsOutOfRange) {
  EXPECT_NE(parse_error("def f() -> (B) { B(i) = 99999999999999999999 }")
                .message()
                .find("integer literal too large"),
            std::string::npos);
  EXPECT_NE(parse_error("def f() -> (B) { B(i) = 1e999 }").message().find("out of range"),
            std::string::npos);
}

TEST(TcLexer, ControlAndInvalidUtf8BytesAreSanitisedInMessages) {
  std::string text = "def f() -> (B) { B(i) = \x01 \xff }";
  TCError e = parse_error(text);
  EXPECT_EQ(e.col(), 25);
  EXPECT_NE(e.message().find("\\x01"), std::string::npos);
  EXPECT_EQ(e.source_line().find('\x01'), std::string::npos);
  EXPECT_EQ(e.source_line().find('\xff'), std::string::npos);
  EXPECT_EQ(sanitize_for_message("caf\xc3\xa9 \xc3"), "caf\xc3\xa9 ?");
}

TEST(TcParser, ParsesTheSignatureAndStatements) {
  SourceText src(R"(
    def conv(float(N, C, H, W) I, float(M, C, KH, KW) W1) -> (O) {
      O(n, m, h, w) +=! I(n, c, h + kh, w + kw) * W1(m, c, kh, kw)
    }
    def two(double(3) A) -> (B, float(4) C) {
      B(i) = A(i) where i in 0:3; C(i) = 1.0 where i in 0:4
    })");
  AstProgram p = parse_program(src);
  ASSERT_EQ(p.defs.size(), 2u);
  const AstDef& conv = p.defs[0];
  EXPECT_EQ(conv.name, "conv");
  ASSERT_EQ(conv.inputs.size(), 2u);
  EXPECT_EQ(conv.inputs[1].name, "W1");
  EXPECT_EQ(conv.inputs[1].dims[2].name, "KH");
  ASSERT_EQ(conv.stmts.size(), 1u);
  const AstStmt& s = conv.stmts[0];
  EXPECT_EQ(s.tensor, "O");
  EXPECT_EQ(s.indices.size(), 4u);
  EXPECT_EQ(s.op, Tok::kPlusEq);
  EXPECT_TRUE(s.bang);
  EXPECT_EQ(s.rhs->kind, AstKind::kBinary);
  EXPECT_EQ(s.rhs->op, Tok::kStar);

  const AstDef& two = p.defs[1];
  EXPECT_EQ(two.inputs[0].dtype, DataType::Float(64));
  EXPECT_EQ(two.inputs[0].dims[0].value, 3);
  EXPECT_FALSE(two.outputs[0].typed);
  EXPECT_TRUE(two.outputs[1].typed);
  ASSERT_EQ(two.stmts.size(), 2u);
  EXPECT_TRUE(two.stmts[0].wheres[0].is_range);
}

TEST(TcParser, PrecedenceAndAssociativity) {
  SourceText src("def f(float(N) A) -> (B) { B(i) = 1 - 2 - 3 * A(i) < 4 && !(5 > 6) ? 7 : 8 }");
  AstProgram p = parse_program(src);
  const AstExpr& e = *p.defs[0].stmts[0].rhs;
  ASSERT_EQ(e.kind, AstKind::kTernary);
  const AstExpr& cond = *e.args[0];
  EXPECT_EQ(cond.op, Tok::kAndAnd);
  const AstExpr& lt = *cond.args[0];
  EXPECT_EQ(lt.op, Tok::kLt);
  const AstExpr& sub = *lt.args[0];  // (1 - 2) - (3 * A(i))
  EXPECT_EQ(sub.op, Tok::kMinus);
  EXPECT_EQ(sub.args[0]->op, Tok::kMinus);
  EXPECT_EQ(sub.args[1]->op, Tok::kStar);
  EXPECT_EQ(cond.args[1]->kind, AstKind::kUnary);
}

TEST(TcParser, WhereClausesRangesAndBindings) {
  SourceText src(
      "def f(float(N) A) -> (B) { B(i) +=! A(k) where k = i + j, j in 0:N - i0, i in 0:2 }");
  AstProgram p = parse_program(src);
  const auto& w = p.defs[0].stmts[0].wheres;
  ASSERT_EQ(w.size(), 3u);
  EXPECT_FALSE(w[0].is_range);
  EXPECT_EQ(w[0].name, "k");
  EXPECT_TRUE(w[1].is_range);
  EXPECT_EQ(w[1].hi->op, Tok::kMinus);
}

struct SyntaxCase {
  const char* text;
  int line, col;
  const char* message;
};

TEST(TcParser, SyntaxErrorsPointAtTheOffendingToken) {
  const SyntaxCase cases[] = {
      {"", 1, 1, "no 'def'"},
      {"def f(float(N) A) -> (B) {\n  B(i) = A(i) +\n}", 3, 1, "expected an expression"},
      {"def f(float(N) A) -> (B) {\n  B(i) = A(i\n}", 3, 1, "expected ')'"},
      {"def f(float(N) A) -> B { B(i) = A(i) }", 1, 22, "expected '(' to open the outputs"},
      {"def f(N A) -> (B) { B(i) = A(i) }", 1, 7, "needs a type"},
      {"def f(float(N) A) -> (B) { B(i + 1) = A(i) }", 1, 30, "plain index names"},
      {"def f(float(N) A) -> (B) { B(i) - A(i) }", 1, 33, "expected an assignment"},
      {"def f(float(N) A) -> () { }", 1, 23, "at least one output"},
      {"def f(float(N) A) -> (B) { }", 1, 28, "has no statement"},
      {"def f(float(N) A) -> (B) { B(i) = A.x }", 1, 37, "dimension number"},
      {"def f(float(N) A) -> (B) { B(i) = A(i) where i 0:N }", 1, 48, "'in' or '='"},
      {"def f(float(N) A) -> (B) { B(i) = A(i) where i in 0 N }", 1, 53, "expected ':'"},
      {"def f(float(N) A) -> (B) { B(i) = 2x }", 1, 36, "after a number"},
      {"def f(float(N) A) -> (B) { B(i) = A(i) & 1 }", 1, 40, "'&&'"},
  };
  for (const SyntaxCase& c : cases) {
    TCError e = parse_error(c.text);
    EXPECT_EQ(e.line(), c.line) << c.text << "\n" << e.what();
    EXPECT_EQ(e.col(), c.col) << c.text << "\n" << e.what();
    EXPECT_NE(e.message().find(c.message), std::string::npos) << c.text << "\n" << e.what();
  }
}

TEST(TcParser, DeepNestingIsAnErrorNotACrash) {
  std::string deep = "def f(float(N) A) -> (B) { B(i) = " + std::string(100000, '(') + "A(i)" +
                     std::string(100000, ')') + " }";
  EXPECT_NE(parse_error(deep).message().find("nested too deeply"), std::string::npos);
  std::string unary = "def f(float(N) A) -> (B) { B(i) = " + std::string(100000, '-') + "A(i) }";
  EXPECT_NE(parse_error(unary).message().find("nested too deeply"), std::string::npos);
  std::string sum = "def f(float(N) A) -> (B) { B(i) = A(i)";
  for (int k = 0; k < 5000; ++k) sum += " + A(i)";
  sum += " }";
  EXPECT_NE(parse_error(sum).message().find("too long"), std::string::npos);
}

}  // namespace
TEST(TcParser, PerDefParsingKeepsASyntaxErrorInItsDef) {
  SourceText src(
      "def ok(float(N) A) -> (B) { B(i) = A(i) }\n"
      "def bad(float(N) A) -> (B) { B(i) = A(i) <=> 1 }\n"
      "def also_ok(float(N) A) -> (B) { B(i) = 2 * A(i) }");
  EXPECT_THROW(parse_program(src), TCError);
  AstProgram p = parse_program(src, /*per_def=*/true);
  ASSERT_EQ(p.defs.size(), 3u);
  EXPECT_EQ(p.defs[0].error, nullptr);
  ASSERT_NE(p.defs[1].error, nullptr);
  EXPECT_EQ(p.defs[1].name, "bad");
  EXPECT_EQ(p.defs[1].error->line(), 2);
  EXPECT_EQ(p.defs[2].error, nullptr);
  EXPECT_EQ(p.defs[2].stmts.size(), 1u);
}

}  // namespace ptb::tc
