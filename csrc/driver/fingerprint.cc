#include "driver/fingerprint.h"

#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "codegen/target.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "lower/lower.h"
#include "support/error.h"
#include "support/stack.h"
#include "te/scan.h"

namespace ptb {

namespace {

// The printer shows variables by name, not identity (`n` of A and another `n` of B print alike,
// and so do nested loops that reuse a name). So the text is followed by the identity of every
// variable occurrence, numbered by first appearance in a fixed traversal: two builds with the same
// text and the same numbering are the same code up to renaming.
class VarNumbering {
 public:
  template <typename Node>
  void add(const Node& root) {
    for_each_expr(root, [&](const Expr& x) {
      if (!x.as<Var>()) return;
      auto [it, inserted] = ids_.emplace(x.get(), static_cast<int>(ids_.size()));
      (void)inserted;
      sequence_ += std::to_string(it->second) + ",";
    });
    sequence_ += ";";
  }
  const std::string& sequence() const { return sequence_; }

 private:
  std::unordered_map<const ExprNode*, int> ids_;
  std::string sequence_;
};

std::string fingerprint_of(const LoweredFunc& f, const Schedule& sch,
                           const std::vector<Tensor>& args, const std::string& target,
                           const std::string& name) {
  VarNumbering vars;
  std::string text = str_cat("target ", Target::parse(target).str(), "\nname ", name, "\n");
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor& t = args[i];
    text += str_cat("arg ", t.name(), " ", t.dtype().str(),
                    t.op()->kind == OpKind::kPlaceholder ? " input" : " output", " [");
    for (const Expr& d : t.shape()) {
      vars.add(d);
      text += to_string(d) + ",";
    }
    text += "] strides [";
    for (const Expr& s : f.args[i]->strides) text += to_string(s) + ",";
    text += "]\n";
  }
  text += "params";
  for (const Expr& p : f.scalar_params) {
    vars.add(p);
    text += str_cat(" ", to_string(p), ":", p.dtype().str());
  }
  text += "\nextents";
  for (const Stage& st : sch->stages) {
    if (st->is_placeholder()) continue;
    for (const IterVar& iv : st->root_iter_vars) {
      vars.add(iv->dom.extent);
      text += " " + to_string(iv->dom.extent);
    }
  }
  vars.add(f.body);
  return text + "\nbody\n" + to_string(f.body) + "\nvars " + vars.sequence();
}

std::string attr_text(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::string>) {
          return "\"" + v + "\"";
        } else if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
          std::string text = "[";
          for (int64_t x : v) text += std::to_string(x) + ",";
          return text + "]";
        } else if constexpr (std::is_same_v<V, double>) {
          return to_string(Expr(FloatImm::make(DataType::Float(64), v)));
        } else {
          return std::to_string(v);
        }
      },
      value);
}

// A reduce axis or data-parallel axis: its variable and domain.
std::string iter_var_text(const IterVar& iv, VarNumbering& vars) {
  vars.add(iv->var);
  vars.add(iv->dom.min);
  vars.add(iv->dom.extent);
  return str_cat(to_string(iv->var), ":", iv->var.dtype().str(), " in [", to_string(iv->dom.min),
                 ", +", to_string(iv->dom.extent), ") ");
}

// The printer names a custom reducer only: its combiner and identity are spelled out here.
std::string reducers_text(const Expr& body, VarNumbering& vars) {
  std::string text;
  for_each_expr(body, [&](const Expr& x) {
    const Reduce* r = x.as<Reduce>();
    if (r == nullptr || !r->reducer) return;
    text += str_cat("  reducer ", r->reducer->name, " v", r->value_index, " (");
    for (const auto* part :
         {&r->reducer->lhs, &r->reducer->rhs, &r->reducer->result, &r->reducer->identity}) {
      for (const Expr& e : *part) {
        vars.add(e);
        text += to_string(e) + ":" + e.dtype().str() + ",";
      }
      text += ";";
    }
    text += ")\n";
  });
  return text;
}

std::string dag_here(const std::vector<Tensor>& args, const std::string& target,
                     const std::string& name) {
  std::vector<Operation> outputs;
  for (const Tensor& t : args) outputs.push_back(t.op());
  std::vector<Operation> ops = topological_order(outputs);
  std::unordered_set<std::string> names;
  VarNumbering vars;
  std::string text = str_cat("dag\ntarget ", Target::parse(target).str(), "\nname ", name, "\n");
  for (const Operation& op : ops) {
    // Tensor reads print the operation's name: names must identify operations.
    if (!names.insert(op->name).second) return "";
    if (op->kind == OpKind::kPlaceholder) {
      const auto* p = static_cast<const PlaceholderOpNode*>(op.get());
      text += str_cat("placeholder ", p->name, " ", p->dtype.str(), " [");
      for (const Expr& d : p->shape) {
        vars.add(d);
        text += to_string(d) + ",";
      }
      text += "]\n";
      continue;
    }
    if (op->kind != OpKind::kCompute || as_scan(op) != nullptr) return "";
    const auto* c = static_cast<const ComputeOpNode*>(op.get());
    text += str_cat("compute ", c->name, " tag \"", c->tag, "\" shape [");
    for (const Expr& d : c->shape) {
      vars.add(d);
      text += to_string(d) + ",";
    }
    text += "]\n  attrs";
    for (const auto& [key, value] : c->attrs) text += str_cat(" ", key, "=", attr_text(value));
    text += "\n  axis ";
    for (const IterVar& iv : c->axis) text += iter_var_text(iv, vars);
    text += "\n  reduce_axis ";
    for (const IterVar& iv : c->reduce_axis) text += iter_var_text(iv, vars);
    text += "\n";
    for (const Expr& b : c->body) {
      vars.add(b);
      text += str_cat("  body ", b.dtype().str(), " ", to_string(b), "\n", reducers_text(b, vars));
    }
  }
  for (const Tensor& t : args) {
    text += str_cat("arg ", t.name(), ".v", t.value_index(),
                    t.op()->kind == OpKind::kPlaceholder ? " input\n" : " output\n");
  }
  return text + "vars " + vars.sequence();
}

}  // namespace

std::string dag_fingerprint(const std::vector<Tensor>& args, const std::string& target,
                            const std::string& name) {
  return on_deep_stack([&] { return dag_here(args, target, name); });
}

std::string build_fingerprint(const Schedule& sch, const std::vector<Tensor>& args,
                              const std::string& target, const std::string& name) {
  return on_deep_stack(
      [&] { return fingerprint_of(lower(sch, args, name), sch, args, target, name); });
}

std::string build_fingerprint(const Schedule& sch, const std::vector<Tensor>& args,
                              const LoweredFunc& lowered, const std::string& target,
                              const std::string& name) {
  if (lowered.args.size() != args.size()) {
    value_error("build_fingerprint: the lowered function has ", lowered.args.size(),
                " arguments, not ", args.size());
  }
  return on_deep_stack([&] { return fingerprint_of(lowered, sch, args, target, name); });
}

}  // namespace ptb
