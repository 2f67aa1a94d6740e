#include "tc/lexer.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace ptb::tc {

const char* token_name(Tok kind) {
  switch (kind) {
    case Tok::kEnd:
      return "end of input";
    case Tok::kIdent:
      return "a name";
    case Tok::kInt:
      return "an integer";
    case Tok::kFloat:
      return "a number";
    case Tok::kType:
      return "a type";
    case Tok::kDef:
      return "'def'";
    case Tok::kWhere:
      return "'where'";
    case Tok::kIn:
      return "'in'";
    case Tok::kLParen:
      return "'('";
    case Tok::kRParen:
      return "')'";
    case Tok::kLBrace:
      return "'{'";
    case Tok::kRBrace:
      return "'}'";
    case Tok::kComma:
      return "','";
    case Tok::kColon:
      return "':'";
    case Tok::kSemi:
      return "';'";
    case Tok::kDot:
      return "'.'";
    case Tok::kArrow:
      return "'->'";
    case Tok::kQuestion:
      return "'?'";
    case Tok::kPlus:
      return "'+'";
    case Tok::kMinus:
      return "'-'";
    case Tok::kStar:
      return "'*'";
    case Tok::kSlash:
      return "'/'";
    case Tok::kBang:
      return "'!'";
    case Tok::kAssign:
      return "'='";
    case Tok::kPlusEq:
      return "'+='";
    case Tok::kStarEq:
      return "'*='";
    case Tok::kMinEq:
      return "'min='";
    case Tok::kMaxEq:
      return "'max='";
    case Tok::kPlusEqBang:
      return "'+=!'";
    case Tok::kStarEqBang:
      return "'*=!'";
    case Tok::kMinEqBang:
      return "'min=!'";
    case Tok::kMaxEqBang:
      return "'max=!'";
    case Tok::kEq:
      return "'=='";
    case Tok::kNe:
      return "'!='";
    case Tok::kLt:
      return "'<'";
    case Tok::kLe:
      return "'<='";
    case Tok::kGt:
      return "'>'";
    case Tok::kGe:
      return "'>='";
    case Tok::kAndAnd:
      return "'&&'";
    case Tok::kOrOr:
      return "'||'";
  }
  return "?";
}

namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

// The scalar types of TC signatures. `float` and `double` are C's names for float32 / float64.
bool lookup_type(const std::string& name, DataType* out) {
  static const struct {
    const char* name;
    DataType dtype;
  } kTypes[] = {
      {"bool", DataType::Bool()},         {"int8", DataType::Int(8)},
      {"int16", DataType::Int(16)},       {"int32", DataType::Int(32)},
      {"int64", DataType::Int(64)},       {"uint8", DataType::UInt(8)},
      {"uint16", DataType::UInt(16)},     {"uint32", DataType::UInt(32)},
      {"uint64", DataType::UInt(64)},     {"float16", DataType::Float(16)},
      {"float32", DataType::Float(32)},   {"float64", DataType::Float(64)},
      {"float", DataType::Float(32)},     {"double", DataType::Float(64)},
      {"bfloat16", DataType::BFloat16()},
  };
  for (const auto& t : kTypes) {
    if (name == t.name) {
      *out = t.dtype;
      return true;
    }
  }
  return false;
}

class Lexer {
 public:
  explicit Lexer(const SourceText& source) : source_(source), s_(source.text()) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space_and_comments();
      Token t;
      t.pos = {line_, col()};
      if (i_ >= s_.size()) {
        t.kind = Tok::kEnd;
        out.push_back(t);
        return out;
      }
      size_t begin = i_;
      lex_one(&t);
      t.text = s_.substr(begin, i_ - begin);
      out.push_back(std::move(t));
    }
  }

 private:
  int col() const { return static_cast<int>(i_ - line_start_) + 1; }
  char peek(size_t ahead = 0) const { return i_ + ahead < s_.size() ? s_[i_ + ahead] : '\0'; }
  bool at_end(size_t ahead = 0) const { return i_ + ahead >= s_.size(); }

  void skip_space_and_comments() {
    while (!at_end()) {
      char c = s_[i_];
      if (c == '\n') {
        ++i_;
        ++line_;
        line_start_ = i_;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++i_;
      } else if (c == '#') {
        while (!at_end() && s_[i_] != '\n') ++i_;
      } else {
        return;
      }
    }
  }

  void lex_one(Token* t) {
    char c = s_[i_];
    if (is_ident_start(c)) return lex_word(t);
    if (is_digit(c)) return lex_number(t);
    // Operators: the longest match wins (`+=!` before `+=` before `+`).
    auto take = [&](Tok kind, size_t n) {
      t->kind = kind;
      i_ += n;
    };
    switch (c) {
      case '(':
        return take(Tok::kLParen, 1);
      case ')':
        return take(Tok::kRParen, 1);
      case '{':
        return take(Tok::kLBrace, 1);
      case '}':
        return take(Tok::kRBrace, 1);
      case ',':
        return take(Tok::kComma, 1);
      case ':':
        return take(Tok::kColon, 1);
      case ';':
        return take(Tok::kSemi, 1);
      case '.':
        return take(Tok::kDot, 1);
      case '?':
        return take(Tok::kQuestion, 1);
      case '/':
        return take(Tok::kSlash, 1);
      case '-':
        return peek(1) == '>' ? take(Tok::kArrow, 2) : take(Tok::kMinus, 1);
      case '+':
        if (peek(1) == '=')
          return peek(2) == '!' ? take(Tok::kPlusEqBang, 3) : take(Tok::kPlusEq, 2);
        return take(Tok::kPlus, 1);
      case '*':
        if (peek(1) == '=')
          return peek(2) == '!' ? take(Tok::kStarEqBang, 3) : take(Tok::kStarEq, 2);
        return take(Tok::kStar, 1);
      case '=':
        return peek(1) == '=' ? take(Tok::kEq, 2) : take(Tok::kAssign, 1);
      case '!':
        return peek(1) == '=' ? take(Tok::kNe, 2) : take(Tok::kBang, 1);
      case '<':
        return peek(1) == '=' ? take(Tok::kLe, 2) : take(Tok::kLt, 1);
      case '>':
        return peek(1) == '=' ? take(Tok::kGe, 2) : take(Tok::kGt, 1);
      case '&':
        if (peek(1) == '&') return take(Tok::kAndAnd, 2);
        source_.fail({line_, col()}, "unexpected character '&' (logical and is '&&')");
      case '|':
        if (peek(1) == '|') return take(Tok::kOrOr, 2);
        source_.fail({line_, col()}, "unexpected character '|' (logical or is '||')");
      default:
        break;
    }
    source_.fail({line_, col()}, str_cat("unexpected character ", shown_character()));
  }

  // The character at i_ as an error shows it: printable ASCII quoted; a whole UTF-8 sequence
  // quoted with its code point ('α' (U+03B1)); anything else (a control or stray byte) as \xNN.
  // Messages must stay valid UTF-8: Python decodes them.
  std::string shown_character() const {
    static const char kHex[] = "0123456789ABCDEF";
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(s_[i_ + k]); };
    const unsigned char u = byte(0);
    if (u >= 0x20 && u < 0x7F) return str_cat("'", static_cast<char>(u), "'");
    const int len = u >= 0xC2 && u <= 0xDF   ? 2
                    : u >= 0xE0 && u <= 0xEF ? 3
                    : u >= 0xF0 && u <= 0xF4 ? 4
                                             : 0;
    uint32_t code = len == 2 ? u & 0x1F : len == 3 ? u & 0x0F : u & 0x07;
    bool valid = len > 0 && i_ + len <= s_.size();
    for (int k = 1; valid && k < len; ++k) {
      valid = (byte(k) & 0xC0) == 0x80;
      code = (code << 6) | (byte(k) & 0x3F);
    }
    const uint32_t smallest = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    valid = valid && code >= smallest && code <= 0x10FFFF && !(code >= 0xD800 && code <= 0xDFFF);
    if (!valid) return str_cat("'\\x", kHex[u >> 4], kHex[u & 15], "'");
    std::string hex;
    for (int shift = code > 0xFFFFF ? 20 : code > 0xFFFF ? 16 : 12; shift >= 0; shift -= 4)
      hex += kHex[(code >> shift) & 15];
    return str_cat("'", s_.substr(i_, len), "' (U+", hex, ")");
  }

  void lex_word(Token* t) {
    size_t begin = i_;
    while (!at_end() && is_ident_char(s_[i_])) ++i_;
    std::string word = s_.substr(begin, i_ - begin);
    // `min=` and `max=` are operators, not the name min followed by `=`: TC writes
    // `O(i) max=! A(i, j)`. `min == x` stays a comparison.
    if ((word == "min" || word == "max") && peek() == '=' && peek(1) != '=') {
      bool bang = peek(1) == '!';
      i_ += bang ? 2 : 1;
      t->kind = word == "min" ? (bang ? Tok::kMinEqBang : Tok::kMinEq)
                              : (bang ? Tok::kMaxEqBang : Tok::kMaxEq);
      return;
    }
    if (word == "def") {
      t->kind = Tok::kDef;
    } else if (word == "where") {
      t->kind = Tok::kWhere;
    } else if (word == "in") {
      t->kind = Tok::kIn;
    } else if (lookup_type(word, &t->dtype)) {
      t->kind = Tok::kType;
    } else {
      t->kind = Tok::kIdent;
    }
  }

  void lex_number(Token* t) {
    SourcePos pos{line_, col()};
    size_t begin = i_;
    while (!at_end() && is_digit(s_[i_])) ++i_;
    bool is_float = false;
    // A fraction needs a digit after the point, so `A.1` (a size) never starts a number here
    // and `2.` followed by a name stays an error rather than a silent float.
    if (peek() == '.' && is_digit(peek(1))) {
      is_float = true;
      ++i_;
      while (!at_end() && is_digit(s_[i_])) ++i_;
    }
    if (peek() == 'e' || peek() == 'E') {
      size_t k = 1;
      if (peek(k) == '+' || peek(k) == '-') ++k;
      if (is_digit(peek(k))) {
        is_float = true;
        i_ += k;
        while (!at_end() && is_digit(s_[i_])) ++i_;
      }
    }
    if (!at_end() && is_ident_char(s_[i_])) {
      source_.fail({line_, col()}, "unexpected character after a number");
    }
    std::string text = s_.substr(begin, i_ - begin);
    if (is_float) {
      errno = 0;
      double v = std::strtod(text.c_str(), nullptr);
      if (errno == ERANGE && std::isinf(v)) source_.fail(pos, "float literal out of range");
      t->kind = Tok::kFloat;
      t->float_value = v;
      return;
    }
    int64_t v = 0;
    for (char d : text) {
      if (__builtin_mul_overflow(v, int64_t{10}, &v) ||
          __builtin_add_overflow(v, int64_t{d - '0'}, &v)) {
        source_.fail(pos, "integer literal too large");
      }
    }
    t->kind = Tok::kInt;
    t->int_value = v;
  }

  const SourceText& source_;
  const std::string& s_;
  size_t i_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
};

}  // namespace

std::vector<Token> tokenize(const SourceText& source) { return Lexer(source).run(); }

}  // namespace ptb::tc
