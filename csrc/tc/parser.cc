#include "tc/parser.h"

#include <algorithm>
#include <utility>

namespace ptb::tc {

namespace {

class Parser {
 public:
  Parser(const SourceText& source, bool per_def)
      : source_(source), toks_(tokenize(source)), per_def_(per_def) {}

  AstProgram program() {
    AstProgram prog;
    if (peek().kind == Tok::kEnd) fail(peek(), "the source has no 'def'");
    while (peek().kind != Tok::kEnd) prog.defs.push_back(recovering_def());
    return prog;
  }

 private:
  const Token& peek(size_t ahead = 0) const {
    size_t k = pos_ + ahead;
    return k < toks_.size() ? toks_[k] : toks_.back();
  }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool accept(Tok kind) {
    if (peek().kind != kind) return false;
    next();
    return true;
  }

  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::kIdent:
      case Tok::kInt:
      case Tok::kFloat:
      case Tok::kType:
        return "'" + t.text + "'";
      default:
        return token_name(t.kind);
    }
  }
  [[noreturn]] void fail(const Token& t, const std::string& message) const {
    source_.fail(t.pos, message);
  }
  const Token& expect(Tok kind, const char* context) {
    if (peek().kind != kind) {
      fail(peek(),
           str_cat("expected ", token_name(kind), " ", context, ", found ", describe(peek())));
    }
    return next();
  }

  // A def. Per def: when its name parsed but the rest did not, a def holding only the name and
  // the error, the tokens up to the next 'def' skipped (TC has no nested defs, so that is where
  // the next one starts). Errors before the name have no def to blame: they stop the parse.
  AstDef recovering_def() {
    expect(Tok::kDef, "to start a definition");
    const Token& name = expect(Tok::kIdent, "after 'def'");
    if (!per_def_) return def(name);
    try {
      return def(name);
    } catch (const TCError& e) {
      AstDef broken;
      broken.pos = name.pos;
      broken.name = name.text;
      broken.error = std::make_shared<const TCError>(e);
      while (peek().kind != Tok::kEnd && peek().kind != Tok::kDef) next();
      return broken;
    }
  }

  AstDef def(const Token& name) {
    AstDef d;
    d.pos = name.pos;
    d.name = name.text;
    expect(Tok::kLParen, "after the name of the def");
    if (peek().kind != Tok::kRParen) {
      do {
        d.inputs.push_back(param(/*is_output=*/false));
      } while (accept(Tok::kComma));
    }
    expect(Tok::kRParen, "to close the inputs");
    expect(Tok::kArrow, "between the inputs and the outputs");
    expect(Tok::kLParen, "to open the outputs");
    if (peek().kind == Tok::kRParen) fail(peek(), "a def needs at least one output");
    do {
      d.outputs.push_back(param(/*is_output=*/true));
    } while (accept(Tok::kComma));
    expect(Tok::kRParen, "to close the outputs");
    expect(Tok::kLBrace, "to open the body");
    while (peek().kind != Tok::kRBrace) {
      if (peek().kind == Tok::kEnd)
        fail(peek(), "expected '}' to close the body of '" + d.name + "'");
      d.stmts.push_back(stmt());
      while (accept(Tok::kSemi)) {
      }
    }
    next();  // '}'
    if (d.stmts.empty()) fail(toks_[pos_ - 1], "the body of '" + d.name + "' has no statement");
    return d;
  }

  AstParam param(bool is_output) {
    AstParam p;
    if (peek().kind == Tok::kType) {
      const Token& t = next();
      p.typed = true;
      p.type_pos = t.pos;
      p.dtype = t.dtype;
      if (accept(Tok::kLParen)) {
        if (peek().kind != Tok::kRParen) {
          do {
            p.dims.push_back(dim());
          } while (accept(Tok::kComma));
        }
        expect(Tok::kRParen, "to close the sizes");
      }
    } else if (!is_output) {
      if (peek().kind == Tok::kIdent && peek(1).kind != Tok::kLParen) {
        fail(peek(), "input '" + peek().text + "' needs a type, such as float(N) " + peek().text);
      }
      fail(peek(), "expected a type (float, int32...), found " + describe(peek()));
    }
    if (peek().kind != Tok::kIdent) {
      fail(peek(), str_cat("expected the name of the ", is_output ? "output" : "input", ", found ",
                           describe(peek())));
    }
    const Token& name = next();
    p.pos = name.pos;
    p.name = name.text;
    return p;
  }

  AstDim dim() {
    AstDim d;
    d.pos = peek().pos;
    if (peek().kind == Tok::kIdent) {
      d.name = next().text;
    } else if (peek().kind == Tok::kInt) {
      d.value = next().int_value;
      if (d.value > 0x7FFFFFFF) fail(toks_[pos_ - 1], "size too large (at most 2147483647)");
    } else {
      fail(peek(), "expected a size name or an integer, found " + describe(peek()));
    }
    return d;
  }

  static bool is_assign(Tok k) {
    switch (k) {
      case Tok::kAssign:
      case Tok::kPlusEq:
      case Tok::kStarEq:
      case Tok::kMinEq:
      case Tok::kMaxEq:
      case Tok::kPlusEqBang:
      case Tok::kStarEqBang:
      case Tok::kMinEqBang:
      case Tok::kMaxEqBang:
        return true;
      default:
        return false;
    }
  }

  AstStmt stmt() {
    AstStmt s;
    if (peek().kind != Tok::kIdent) {
      fail(peek(), "expected a statement such as O(i) = ..., found " + describe(peek()));
    }
    const Token& name = next();
    s.pos = name.pos;
    s.tensor = name.text;
    if (accept(Tok::kLParen)) {
      if (peek().kind != Tok::kRParen) {
        do {
          if (peek().kind != Tok::kIdent ||
              (peek(1).kind != Tok::kComma && peek(1).kind != Tok::kRParen)) {
            fail(peek(),
                 "the indices on the left-hand side must be plain index names, such as O(i, j)");
          }
          const Token& idx = next();
          s.indices.push_back({idx.pos, idx.text});
        } while (accept(Tok::kComma));
      }
      expect(Tok::kRParen, "to close the left-hand side indices");
    }
    if (!is_assign(peek().kind)) {
      fail(peek(),
           "expected an assignment (=, +=, +=!, *=!, min=!, max=!...), found " + describe(peek()));
    }
    const Token& op = next();
    s.op_pos = op.pos;
    s.op = op.kind;
    s.bang = true;
    switch (op.kind) {
      case Tok::kPlusEqBang:
        s.op = Tok::kPlusEq;
        break;
      case Tok::kStarEqBang:
        s.op = Tok::kStarEq;
        break;
      case Tok::kMinEqBang:
        s.op = Tok::kMinEq;
        break;
      case Tok::kMaxEqBang:
        s.op = Tok::kMaxEq;
        break;
      default:
        s.bang = false;
        break;
    }
    s.rhs = expr();
    if (accept(Tok::kWhere)) {
      do {
        s.wheres.push_back(where_item());
      } while (accept(Tok::kComma));
    }
    return s;
  }

  AstWhere where_item() {
    AstWhere w;
    const Token& name = expect(Tok::kIdent, "in a where clause (i in 0:N or x = expr)");
    w.pos = name.pos;
    w.name = name.text;
    if (name.text == "exists" && peek().kind == Tok::kIdent) {
      w.is_range = false;
      w.is_exists = true;
      w.value = expr();
      return w;
    }
    if (accept(Tok::kIn)) {
      w.is_range = true;
      w.lo = or_expr();
      expect(Tok::kColon, "between the bounds of a range (i in 0:N)");
      w.hi = expr();
    } else if (accept(Tok::kAssign)) {
      w.is_range = false;
      w.value = expr();
    } else {
      fail(peek(), "expected 'in' or '=' after '" + w.name + "' in a where clause, found " +
                       describe(peek()));
    }
    return w;
  }

  // Expressions. `depth_` counts nested parse calls (parentheses, arguments, unary chains) and
  // node heights are checked as binary chains grow, so no input can overflow the stack here or
  // in the passes that walk the tree.
  struct DepthGuard {
    DepthGuard(Parser* p, const Token& at) : p(p) {
      if (++p->depth_ > kMaxExprHeight) p->fail(at, "expression nested too deeply");
    }
    ~DepthGuard() { --p->depth_; }
    Parser* p;
  };

  AstExprPtr node(AstKind kind, const Token& at) {
    auto e = std::make_unique<AstExpr>();
    e->kind = kind;
    e->pos = at.pos;
    e->start = at.pos;
    return e;
  }
  AstExprPtr with_args(AstExprPtr e, std::vector<AstExprPtr> args, const Token& at) {
    int h = 0;
    for (const auto& a : args) h = std::max(h, a->height);
    e->height = h + 1;
    if (e->height > kMaxExprHeight) fail(at, "expression too long or nested too deeply");
    e->args = std::move(args);
    return e;
  }
  AstExprPtr binary(const Token& op, AstExprPtr a, AstExprPtr b) {
    auto e = node(AstKind::kBinary, op);
    e->op = op.kind;
    e->start = a->start;
    std::vector<AstExprPtr> args;
    args.push_back(std::move(a));
    args.push_back(std::move(b));
    return with_args(std::move(e), std::move(args), op);
  }

  AstExprPtr expr() {
    DepthGuard guard(this, peek());
    AstExprPtr cond = or_expr();
    if (peek().kind != Tok::kQuestion) return cond;
    const Token& q = next();
    AstExprPtr a = expr();
    expect(Tok::kColon, "in a conditional expression (c ? a : b)");
    AstExprPtr b = expr();
    auto e = node(AstKind::kTernary, q);
    e->start = cond->start;
    std::vector<AstExprPtr> args;
    args.push_back(std::move(cond));
    args.push_back(std::move(a));
    args.push_back(std::move(b));
    return with_args(std::move(e), std::move(args), q);
  }

  // One level of left-associative binary operators.
  template <typename Sub>
  AstExprPtr left_assoc(std::initializer_list<Tok> ops, Sub sub) {
    AstExprPtr a = (this->*sub)();
    for (;;) {
      bool match = false;
      for (Tok k : ops) match = match || peek().kind == k;
      if (!match) return a;
      const Token& op = next();
      AstExprPtr b = (this->*sub)();
      a = binary(op, std::move(a), std::move(b));
    }
  }
  AstExprPtr or_expr() { return left_assoc({Tok::kOrOr}, &Parser::and_expr); }
  AstExprPtr and_expr() { return left_assoc({Tok::kAndAnd}, &Parser::eq_expr); }
  AstExprPtr eq_expr() { return left_assoc({Tok::kEq, Tok::kNe}, &Parser::rel_expr); }
  AstExprPtr rel_expr() {
    return left_assoc({Tok::kLt, Tok::kLe, Tok::kGt, Tok::kGe}, &Parser::add_expr);
  }
  AstExprPtr add_expr() { return left_assoc({Tok::kPlus, Tok::kMinus}, &Parser::mul_expr); }
  AstExprPtr mul_expr() { return left_assoc({Tok::kStar, Tok::kSlash}, &Parser::unary); }

  AstExprPtr unary() {
    Tok k = peek().kind;
    if (k != Tok::kMinus && k != Tok::kPlus && k != Tok::kBang) return primary();
    DepthGuard guard(this, peek());
    const Token& op = next();
    auto e = node(AstKind::kUnary, op);
    e->op = op.kind;
    std::vector<AstExprPtr> args;
    args.push_back(unary());
    return with_args(std::move(e), std::move(args), op);
  }

  AstExprPtr primary() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::kInt: {
        next();
        auto e = node(AstKind::kIntLit, t);
        e->int_value = t.int_value;
        return e;
      }
      case Tok::kFloat: {
        next();
        auto e = node(AstKind::kFloatLit, t);
        e->float_value = t.float_value;
        return e;
      }
      case Tok::kLParen: {
        next();
        AstExprPtr e = expr();
        expect(Tok::kRParen, "to close the parenthesis");
        return e;
      }
      case Tok::kType: {
        next();
        expect(Tok::kLParen,
               str_cat("after the type '", t.text, "' (a conversion is written ", t.text, "(x))")
                   .c_str());
        auto e = node(AstKind::kCast, t);
        e->dtype = t.dtype;
        std::vector<AstExprPtr> args;
        args.push_back(expr());
        expect(Tok::kRParen, "to close the conversion");
        return with_args(std::move(e), std::move(args), t);
      }
      case Tok::kIdent: {
        next();
        if (peek().kind == Tok::kLParen) return call(t);
        if (peek().kind == Tok::kDot) {
          next();
          if (peek().kind != Tok::kInt) {
            fail(peek(), "expected a dimension number after '" + t.text + ".' (" + t.text +
                             ".0 is the size of its first dimension)");
          }
          auto e = node(AstKind::kSize, t);
          e->name = t.text;
          e->int_value = next().int_value;
          return e;
        }
        auto e = node(AstKind::kIdent, t);
        e->name = t.text;
        return e;
      }
      default:
        fail(t, "expected an expression, found " + describe(t));
    }
  }

  AstExprPtr call(const Token& name) {
    DepthGuard guard(this, name);
    next();  // '('
    auto e = node(AstKind::kCall, name);
    e->name = name.text;
    std::vector<AstExprPtr> args;
    if (peek().kind != Tok::kRParen) {
      do {
        args.push_back(expr());
      } while (accept(Tok::kComma));
    }
    expect(Tok::kRParen, str_cat("to close the arguments of '", name.text, "'").c_str());
    return with_args(std::move(e), std::move(args), name);
  }

  const SourceText& source_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  const bool per_def_;
};

}  // namespace

AstProgram parse_program(const SourceText& source, bool per_def) {
  return Parser(source, per_def).program();
}

}  // namespace ptb::tc
