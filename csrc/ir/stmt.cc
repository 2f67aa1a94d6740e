#include "ir/stmt.h"

#include "support/error.h"
#include "te/operation.h"

namespace ptb {

const char* for_kind_name(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial:
      return "for";
    case ForKind::kParallel:
      return "parallel";
    case ForKind::kVectorized:
      return "vectorized";
    case ForKind::kUnrolled:
      return "unrolled";
  }
  return "?";
}

Stmt For::make(Expr var, Expr min, Expr extent, ForKind kind, Stmt body) {
  PTB_ICHECK(var.as<Var>() && min.defined() && extent.defined() && body.defined(), "malformed For");
  PTB_ICHECK(min.dtype() == var.dtype() && extent.dtype() == var.dtype(), "For bounds of ",
             min.dtype().str(), "/", extent.dtype().str(), " for a ", var.dtype().str(), " var");
  return Stmt(std::make_shared<For>(std::move(var), std::move(min), std::move(extent), kind,
                                    std::move(body)));
}

Stmt Store::make(Buffer buffer, Expr value, Expr index, Expr predicate) {
  PTB_ICHECK(buffer && value.defined() && index.defined(), "malformed Store");
  PTB_ICHECK(value.dtype() == buffer->dtype.with_lanes(index.dtype().lanes()), "Store of ",
             value.dtype().str(), " into ", buffer->name, " of ", buffer->dtype.str(), " at ",
             index.dtype().str());
  return Stmt(std::make_shared<Store>(std::move(buffer), std::move(value), std::move(index),
                                      std::move(predicate)));
}

Stmt Allocate::make(Buffer buffer, Stmt body) {
  PTB_ICHECK(buffer && body.defined(), "malformed Allocate");
  return Stmt(std::make_shared<Allocate>(std::move(buffer), std::move(body)));
}

Stmt Block::make(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s.defined()) continue;
    if (const auto* b = s.as<Block>()) {
      flat.insert(flat.end(), b->stmts.begin(), b->stmts.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.empty()) return Evaluate::make(IntImm::make(kIndexType, 0));
  if (flat.size() == 1) return flat[0];
  return Stmt(std::make_shared<Block>(std::move(flat)));
}

Stmt IfThenElse::make(Expr condition, Stmt then_case, Stmt else_case) {
  PTB_ICHECK(condition.dtype() == DataType::Bool() && then_case.defined(), "malformed IfThenElse");
  return Stmt(std::make_shared<IfThenElse>(std::move(condition), std::move(then_case),
                                           std::move(else_case)));
}

Stmt LetStmt::make(Expr var, Expr value, Stmt body) {
  PTB_ICHECK(var.as<Var>() && var.dtype() == value.dtype() && body.defined(), "malformed LetStmt");
  return Stmt(std::make_shared<LetStmt>(std::move(var), std::move(value), std::move(body)));
}

Stmt Evaluate::make(Expr value) { return Stmt(std::make_shared<Evaluate>(std::move(value))); }

Stmt Provide::make(Operation op, int value_index, Expr value, std::vector<Expr> indices) {
  PTB_ICHECK(op && value.defined(), "malformed Provide");
  PTB_ICHECK(indices.size() == op->output_shape(value_index).size(), "Provide to ", op->name,
             " with ", indices.size(), " indices");
  return Stmt(
      std::make_shared<Provide>(std::move(op), value_index, std::move(value), std::move(indices)));
}

Stmt Realize::make(Operation op, std::vector<Range> bounds, Stmt body) {
  PTB_ICHECK(op && body.defined(), "malformed Realize");
  return Stmt(std::make_shared<Realize>(std::move(op), std::move(bounds), std::move(body)));
}

Stmt CallPacked::make(std::string name, std::vector<PackedCallArg> args) {
  for (const PackedCallArg& a : args) {
    PTB_ICHECK((a.op != nullptr) + (a.buffer != nullptr) + a.scalar.defined() == 1,
               "a packed call argument is one tensor, buffer or scalar");
  }
  return Stmt(std::make_shared<CallPacked>(std::move(name), std::move(args)));
}

}  // namespace ptb
