#include "ir/printer.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/visitor.h"
#include "support/stack.h"
#include "te/operation.h"

namespace ptb {

namespace {

// An expression that would print as more than this many nodes written out as a tree is printed
// as a DAG instead: its shared subexpressions are named (%0, %1...) and defined once, first.
constexpr uint64_t kMaxPrintedTree = 4096;

// The compound nodes under `roots`, children before parents (an iterative walk).
std::vector<const Expr*> post_order(const std::vector<const Expr*>& roots) {
  std::vector<const Expr*> order;
  std::unordered_set<const ExprNode*> seen;
  std::vector<std::pair<const Expr*, bool>> stack;  // (node, children already pushed)
  for (auto it = roots.rbegin(); it != roots.rend(); ++it) stack.emplace_back(*it, false);
  std::vector<const Expr*> children;
  while (!stack.empty()) {
    auto [e, expanded] = stack.back();
    stack.pop_back();
    if (!e->defined()) continue;
    if (expanded) {
      order.push_back(e);
      continue;
    }
    if (!seen.insert(e->get()).second) continue;
    stack.emplace_back(e, true);
    children.clear();
    detail::push_expr_children(*e, &children);
    for (const Expr* c : children) stack.emplace_back(c, false);
  }
  return order;
}

// Prints with minimal parentheses: every binary operation is parenthesised unless it is a
// direct operand of a statement, which keeps the output unambiguous without precedence tables.
class Printer : public IRVisitor {
 public:
  explicit Printer(std::ostream& os) : os_(os) { visit_shared_once_ = false; }
  using IRVisitor::visit;

  void print(const Expr& e) {
    bool named = name_shared({&e});
    for (const Expr* d : defs_) {
      os_ << "let %" << names_.at(d->get()) << " = ";
      define(*d);
      os_ << "; ";
    }
    visit(e);
    if (named) forget_names();
  }
  void print(const Stmt& s) { visit(s); }

  void visit(const Expr& e) override {
    if (e.defined() && !names_.empty()) {
      auto it = names_.find(e.get());
      if (it != names_.end() && it->second >= 0) {
        os_ << "%" << it->second;
        return;
      }
    }
    IRVisitor::visit(e);
  }

 protected:
  // Names the shared compound subexpressions of roots if writing them out as a tree would be
  // too long; their definitions are in defs_, each after the ones it uses.
  bool name_shared(const std::vector<const Expr*>& roots) {
    std::vector<const Expr*> order = post_order(roots);
    std::unordered_map<const ExprNode*, uint64_t> tree_size;
    std::unordered_map<const ExprNode*, int> parents;
    std::vector<const Expr*> children;
    uint64_t total = 0;
    for (const Expr* e : order) {
      uint64_t size = 1;
      children.clear();
      detail::push_expr_children(*e, &children);
      for (const Expr* c : children) {
        if (!c->defined()) continue;
        auto it = tree_size.find(c->get());
        size = std::min(kMaxPrintedTree + 1, size + (it == tree_size.end() ? 1 : it->second));
        ++parents[c->get()];
      }
      tree_size[e->get()] = size;
    }
    for (const Expr* r : roots) {
      if (r->defined()) total += tree_size[r->get()];
    }
    if (total <= kMaxPrintedTree) return false;
    for (const Expr* e : order) {
      ExprKind k = (*e)->kind;
      bool leaf = k == ExprKind::kIntImm || k == ExprKind::kFloatImm || k == ExprKind::kVar;
      if (!leaf && parents[e->get()] > 1) {
        names_[e->get()] = static_cast<int>(defs_.size());
        defs_.push_back(e);
      }
    }
    return true;
  }

  // Prints a named node's definition (its own name is not used for itself).
  void define(const Expr& e) {
    int& name = names_.at(e.get());
    int saved = name;
    name = -1;
    IRVisitor::visit(e);
    name = saved;
  }

  void forget_names() {
    names_.clear();
    defs_.clear();
  }

  // Statements print the definitions of their expressions' shared parts on lines of their own.
  bool begin_exprs(const std::vector<const Expr*>& roots) {
    if (!name_shared(roots)) return false;
    for (const Expr* d : defs_) {
      indent();
      os_ << "let %" << names_.at(d->get()) << " = ";
      define(*d);
      os_ << "\n";
    }
    return true;
  }
  void end_exprs(bool named) {
    if (named) forget_names();
  }

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
    // The shortest text that reads back as the same value of the constant's type (0.1, where
    // nine significant digits printed 0.100000001): distinct values still print distinctly,
    // which the compile cache's fingerprint relies on.
    char buf[64];
    std::to_chars_result r =
        op->dtype.bits() == 64
            ? std::to_chars(buf, buf + sizeof(buf), op->value)
            : std::to_chars(buf, buf + sizeof(buf), static_cast<float>(op->value));
    std::string text(buf, r.ptr);
    if (text.find_first_of(".einf") == std::string::npos) text += ".0";
    os_ << text;
    if (op->dtype != DataType::Float(32)) {
      os_ << (op->dtype.code() == DataType::kBFloat ? "bf" : "f") << op->dtype.bits();
    }
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
  void visit_node(const Call* op) override {
    // Bitwise operations print as the operators they are written with.
    if (is_bitwise_intrinsic(op->op)) {
      if (op->args.size() == 1) {
        os_ << bitwise_operator(op->op);
        visit(op->args[0]);
      } else {
        binary(bitwise_operator(op->op), op->args[0], op->args[1]);
      }
      return;
    }
    function(intrinsic_name(op->op), op->args);
  }
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
    os_ << (op->reducer ? op->reducer->name : reduce_name(op->combiner)) << "(";
    if (op->reducer && op->reducer->lhs.size() > 1) os_ << "v" << op->value_index << ": ";
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
    bool named = begin_exprs({&op->index, &op->value, &op->predicate});
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
    end_exprs(named);
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
    bool named = begin_exprs({&op->condition});
    indent();
    os_ << "if (";
    visit(op->condition);
    os_ << ") {\n";
    end_exprs(named);
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
    bool named = begin_exprs({&op->value});
    indent();
    os_ << "let " << op->var.as<Var>()->name << " = ";
    visit(op->value);
    os_ << "\n";
    end_exprs(named);
    visit(op->body);
  }
  void visit_node(const Evaluate* op) override {
    if (is_noop(op)) return;
    bool named = begin_exprs({&op->value});
    indent();
    visit(op->value);
    os_ << "\n";
    end_exprs(named);
  }
  void visit_node(const Provide* op) override {
    std::vector<const Expr*> roots{&op->value};
    for (const Expr& i : op->indices) roots.push_back(&i);
    bool named = begin_exprs(roots);
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
    end_exprs(named);
  }
  void visit_node(const CallPacked* op) override {
    indent();
    os_ << "call_packed(\"" << op->name << "\"";
    for (const PackedCallArg& a : op->args) {
      os_ << ", ";
      if (a.scalar.defined()) {
        visit(a.scalar);
      } else if (a.buffer) {
        os_ << a.buffer->name;
      } else {
        os_ << a.op->name;
        if (a.value_index) os_ << ".v" << a.value_index;
      }
    }
    os_ << ")\n";
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
  std::unordered_map<const ExprNode*, int> names_;  // -1 while the node's definition prints
  std::vector<const Expr*> defs_;
};

}  // namespace

// Printing recurses as deep as the expression: deep ones print on a deep stack.
std::string to_string(const Expr& e) {
  return with_deep_stack([&] {
    std::ostringstream os;
    Printer(os).print(e);
    return os.str();
  });
}

std::string to_string(const Stmt& s) {
  return with_deep_stack([&] {
    std::ostringstream os;
    Printer(os).print(s);
    return os.str();
  });
}

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << to_string(e); }

std::ostream& operator<<(std::ostream& os, const Stmt& s) { return os << to_string(s); }

}  // namespace ptb
