#include "driver/fingerprint.h"

#include <unordered_map>

#include "codegen/target.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "lower/lower.h"
#include "support/stack.h"

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

std::string fingerprint_here(const Schedule& sch, const std::vector<Tensor>& args,
                             const std::string& target, const std::string& name) {
  LoweredFunc f = lower(sch, args, name);
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

}  // namespace

std::string build_fingerprint(const Schedule& sch, const std::vector<Tensor>& args,
                              const std::string& target, const std::string& name) {
  return on_deep_stack([&] { return fingerprint_here(sch, args, target, name); });
}

}  // namespace ptb
