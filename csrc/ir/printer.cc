#include "ir/printer.h"

#include <sstream>

#include "ir/visitor.h"
#include "te/operation.h"

namespace ptb {

namespace {

// Prints with minimal parentheses: every binary operation is parenthesised unless it is a
// direct operand of a statement, which keeps the output unambiguous without precedence tables.
class Printer : public IRVisitor {
 public:
  explicit Printer(std::ostream& os) : os_(os) {}
  using IRVisitor::visit;

  void print(const Expr& e) { visit(e); }
  void print(const Stmt& s) { visit(s); }

 protected:
  void indent() {
    for (int i = 0; i < indent_; ++i) os_ << "  ";
  }
  void visit_node(const IntImm* op) override {
    if (op->dtype.is_bool()) {
      os_ << (op->value ? "True" : "False");
    } else if (op->dtype.is_uint() && op->dtype.bits() == 64) {
      os_ << static_cast<uint64_t>(op->value) << "u64";
    } else {
      os_ << op->value;
      if (op->dtype != kIndexType) os_ << "i" << op->dtype.bits();
      if (op->dtype.is_uint()) os_ << "u";
    }
  }
  void visit_node(const FloatImm* op) override {
    std::ostringstream s;
    s.precision(op->dtype.bits() == 64 ? 17 : 9);
    s << op->value;
    std::string text = s.str();
    if (text.find_first_of(".einf") == std::string::npos) text += ".0";
    os_ << text;
    if (op->dtype != DataType::Float(32)) os_ << "f" << op->dtype.bits();
  }
  void visit_node(const Var* op) override { os_ << op->name; }
  void visit_node(const Cast* op) override {
    os_ << op->dtype.str() << "(";
    visit(op->value);
    os_ << ")";
  }
  void binary(const char* sym, const Expr& a, const Expr& b) {
    os_ << "(";
    visit(a);
    os_ << " " << sym << " ";
    visit(b);
    os_ << ")";
  }
  void function(const char* name, const std::vector<Expr>& args) {
    os_ << name << "(";
    for (size_t i = 0; i < args.size(); ++i) {
      if (i) os_ << ", ";
      visit(args[i]);
    }
    os_ << ")";
  }
  void visit_node(const Add* op) override { binary("+", op->a, op->b); }
  void visit_node(const Sub* op) override { binary("-", op->a, op->b); }
  void visit_node(const Mul* op) override { binary("*", op->a, op->b); }
  void visit_node(const Div* op) override { binary("/", op->a, op->b); }
  void visit_node(const Mod* op) override { binary("%", op->a, op->b); }
  void visit_node(const FloorDiv* op) override { function("floordiv", {op->a, op->b}); }
  void visit_node(const FloorMod* op) override { function("floormod", {op->a, op->b}); }
  void visit_node(const Min* op) override { function("min", {op->a, op->b}); }
  void visit_node(const Max* op) override { function("max", {op->a, op->b}); }
  void visit_node(const EQ* op) override { binary("==", op->a, op->b); }
  void visit_node(const NE* op) override { binary("!=", op->a, op->b); }
  void visit_node(const LT* op) override { binary("<", op->a, op->b); }
  void visit_node(const LE* op) override { binary("<=", op->a, op->b); }
  void visit_node(const GT* op) override { binary(">", op->a, op->b); }
  void visit_node(const GE* op) override { binary(">=", op->a, op->b); }
  void visit_node(const And* op) override { binary("&&", op->a, op->b); }
  void visit_node(const Or* op) override { binary("||", op->a, op->b); }
  void visit_node(const Not* op) override {
    os_ << "!";
    visit(op->a);
  }
  void visit_node(const Select* op) override {
    function("select", {op->condition, op->true_value, op->false_value});
  }
  void visit_node(const Call* op) override { function(intrinsic_name(op->op), op->args); }
  void visit_node(const Let* op) override {
    os_ << "(let " << op->var.as<Var>()->name << " = ";
    visit(op->value);
    os_ << " in ";
    visit(op->body);
    os_ << ")";
  }
  void visit_node(const Load* op) override {
    os_ << op->buffer->name << "[";
    visit(op->index);
    if (op->predicate.defined()) {
      os_ << " if ";
      visit(op->predicate);
    }
    os_ << "]";
  }
  void visit_node(const Ramp* op) override {
    os_ << "ramp(";
    visit(op->base);
    os_ << ", ";
    visit(op->stride);
    os_ << ", " << op->lanes << ")";
  }
  void visit_node(const Broadcast* op) override {
    os_ << "x" << op->lanes << "(";
    visit(op->value);
    os_ << ")";
  }
  void visit_node(const TensorRead* op) override {
    os_ << op->op->name;
    if (op->value_index) os_ << ".v" << op->value_index;
    os_ << "[";
    for (size_t i = 0; i < op->indices.size(); ++i) {
      if (i) os_ << ", ";
      visit(op->indices[i]);
    }
    os_ << "]";
  }
  void visit_node(const Reduce* op) override {
    os_ << reduce_name(op->combiner) << "(";
    visit(op->source);
    os_ << ", axis=[";
    for (size_t i = 0; i < op->axis.size(); ++i) {
      if (i) os_ << ", ";
      os_ << op->axis[i]->var.as<Var>()->name;
    }
    os_ << "]";
    if (op->condition.defined()) {
      os_ << ", where=";
      visit(op->condition);
    }
    os_ << ")";
  }

  void visit_node(const For* op) override {
    indent();
    os_ << for_kind_name(op->for_kind) << " (" << op->var.as<Var>()->name << ", ";
    visit(op->min);
    os_ << ", ";
    visit(op->extent);
    os_ << ") {\n";
    ++indent_;
    visit(op->body);
    --indent_;
    indent();
    os_ << "}\n";
  }
  void visit_node(const Store* op) override {
    indent();
    os_ << op->buffer->name << "[";
    visit(op->index);
    os_ << "] = ";
    visit(op->value);
    if (op->predicate.defined()) {
      os_ << " if ";
      visit(op->predicate);
    }
    os_ << "\n";
  }
  void visit_node(const Allocate* op) override {
    indent();
    os_ << "allocate " << op->buffer->name << "[" << op->buffer->dtype.str();
    for (const Expr& e : op->buffer->shape) {
      os_ << " * ";
      visit(e);
    }
    os_ << "]\n";
    visit(op->body);
  }
  void visit_node(const IfThenElse* op) override {
    indent();
    os_ << "if (";
    visit(op->condition);
    os_ << ") {\n";
    ++indent_;
    visit(op->then_case);
    --indent_;
    if (op->else_case.defined()) {
      indent();
      os_ << "} else {\n";
      ++indent_;
      visit(op->else_case);
      --indent_;
    }
    indent();
    os_ << "}\n";
  }
  void visit_node(const LetStmt* op) override {
    indent();
    os_ << "let " << op->var.as<Var>()->name << " = ";
    visit(op->value);
    os_ << "\n";
    visit(op->body);
  }
  void visit_node(const Evaluate* op) override {
    if (is_noop(op)) return;
    indent();
    visit(op->value);
    os_ << "\n";
  }
  void visit_node(const Provide* op) override {
    indent();
    os_ << op->op->name;
    if (op->value_index) os_ << ".v" << op->value_index;
    os_ << "[";
    for (size_t i = 0; i < op->indices.size(); ++i) {
      if (i) os_ << ", ";
      visit(op->indices[i]);
    }
    os_ << "] = ";
    visit(op->value);
    os_ << "\n";
  }
  void visit_node(const Realize* op) override {
    indent();
    os_ << "realize " << op->op->name << "(";
    for (size_t i = 0; i < op->bounds.size(); ++i) {
      if (i) os_ << ", ";
      os_ << "[";
      visit(op->bounds[i].min);
      os_ << ", ";
      visit(op->bounds[i].extent);
      os_ << "]";
    }
    os_ << ") {\n";
    ++indent_;
    visit(op->body);
    --indent_;
    indent();
    os_ << "}\n";
  }

 private:
  static bool is_noop(const Evaluate* op) { return op->value.as<IntImm>() != nullptr; }
  std::ostream& os_;
  int indent_ = 0;
};

}  // namespace

std::string to_string(const Expr& e) {
  std::ostringstream os;
  Printer(os).print(e);
  return os.str();
}

std::string to_string(const Stmt& s) {
  std::ostringstream os;
  Printer(os).print(s);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Expr& e) {
  Printer(os).print(e);
  return os;
}

std::ostream& operator<<(std::ostream& os, const Stmt& s) {
  Printer(os).print(s);
  return os;
}

}  // namespace ptb
