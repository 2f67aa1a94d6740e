#include "lower/plan_memory.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/visitor.h"
#include "lower/storage_flatten.h"

namespace ptb {

namespace {

using VarKey = const ExprNode*;

// The Allocates at the top of the function (outside every loop, condition and binding) and the
// statements between them, in execution order. Moving such an Allocate to the top changes only
// how long its memory is held: its size refers to nothing the statements before it bind.
void peel(const Stmt& s, std::vector<Buffer>* allocs, std::vector<Stmt>* leaves) {
  if (const auto* a = s.as<Allocate>()) {
    allocs->push_back(a->buffer);
    peel(a->body, allocs, leaves);
  } else if (const auto* b = s.as<Block>()) {
    for (const Stmt& t : b->stmts) peel(t, allocs, leaves);
  } else {
    leaves->push_back(s);
  }
}

// The data variables of the buffers a statement reads or writes.
class DataUses : public IRVisitor {
 public:
  std::unordered_set<VarKey> vars;

 protected:
  using IRVisitor::visit_node;
  void visit_node(const Var* op) override { vars.insert(op); }
  void visit_node(const Load* op) override {
    vars.insert(op->buffer->data.get());
    IRVisitor::visit_node(op);
  }
  void visit_node(const Store* op) override {
    vars.insert(op->buffer->data.get());
    IRVisitor::visit_node(op);
  }
  void visit_node(const Allocate* op) override {
    vars.insert(op->buffer->data.get());
    IRVisitor::visit_node(op);
  }
  void visit_node(const CallPacked* op) override {
    for (const PackedCallArg& a : op->args) {
      if (a.buffer) vars.insert(a.buffer->data.get());
    }
    IRVisitor::visit_node(op);
  }
};

// Accesses of the planned buffers go to their storage's memory.
class Rebind : public IRMutator {
 public:
  explicit Rebind(std::unordered_map<VarKey, Buffer> to) : to_(std::move(to)) {}

 protected:
  using IRMutator::mutate_node;

  Expr mutate_node(const Var* op, const Expr& self) override {
    auto it = to_.find(op);
    return it == to_.end() ? self : it->second->data;
  }
  Expr mutate_node(const Load* op, const Expr& self) override {
    Expr e = IRMutator::mutate_node(op, self);
    auto it = to_.find(op->buffer->data.get());
    if (it == to_.end()) return e;
    const auto* load = e.as<Load>();
    return Load::make(it->second, load->index, load->predicate);
  }
  Stmt mutate_node(const Store* op, const Stmt& self) override {
    Stmt s = IRMutator::mutate_node(op, self);
    auto it = to_.find(op->buffer->data.get());
    if (it == to_.end()) return s;
    const auto* store = s.as<Store>();
    return Store::make(it->second, store->value, store->index, store->predicate);
  }
  Stmt mutate_node(const CallPacked* op, const Stmt& self) override {
    std::vector<PackedCallArg> args = op->args;
    bool changed = false;
    for (PackedCallArg& a : args) {
      if (a.buffer) {
        auto it = to_.find(a.buffer->data.get());
        if (it != to_.end()) {
          a.buffer = it->second;
          changed = true;
        }
      } else if (a.scalar.defined()) {
        Expr m = mutate(a.scalar);
        changed = changed || !m.same_as(a.scalar);
        a.scalar = m;
      }
    }
    return changed ? CallPacked::make(op->name, std::move(args)) : self;
  }

 private:
  std::unordered_map<VarKey, Buffer> to_;
};

// Elements of a buffer with a constant shape.
std::optional<int64_t> constant_elements(const Buffer& b) {
  int64_t n = 1;
  for (const Expr& e : b->shape) {
    std::optional<int64_t> c = as_const_int(e);
    if (!c || *c < 0) return std::nullopt;
    n *= *c;
  }
  return n;
}

struct Storage {
  DataType dtype;
  int64_t elements = 0;
  std::vector<size_t> members;  // indices into the planned buffers
  size_t freed_at = 0;          // the statement after which it is free again
  bool free = false;
};

}  // namespace

Stmt plan_memory(const Stmt& body, MemoryPlanStats* stats) {
  std::vector<Buffer> allocs;
  std::vector<Stmt> leaves;
  peel(body, &allocs, &leaves);
  if (allocs.size() < 2) return body;

  // Live range of each buffer: the first and last top-level statement that uses it.
  std::unordered_map<VarKey, size_t> index_of;
  for (size_t k = 0; k < allocs.size(); ++k) index_of[allocs[k]->data.get()] = k;
  const size_t none = leaves.size();
  std::vector<size_t> first(allocs.size(), none), last(allocs.size(), 0);
  for (size_t i = 0; i < leaves.size(); ++i) {
    DataUses uses;
    uses.visit(leaves[i]);
    for (VarKey v : uses.vars) {
      auto it = index_of.find(v);
      if (it == index_of.end()) continue;
      first[it->second] = std::min(first[it->second], i);
      last[it->second] = std::max(last[it->second], i);
    }
  }
  // A buffer allocated more than once at the top (the copies of an unrolled loop's body) keeps
  // its Allocates: each copy is used by the statements inside it only.
  std::unordered_map<VarKey, int> count;
  for (const Buffer& b : allocs) ++count[b->data.get()];
  std::vector<int64_t> elements(allocs.size(), -1);
  for (size_t k = 0; k < allocs.size(); ++k) {
    std::optional<int64_t> n = constant_elements(allocs[k]);
    if (n && first[k] != none && count[allocs[k]->data.get()] == 1) elements[k] = *n;
  }

  // Statement by statement: the buffers first used here take storages, larger buffers first
  // (they choose among the free storages before the small ones split them up); then the buffers
  // last used here free theirs for the statements after it.
  std::vector<Storage> storages;
  std::vector<size_t> storage_of(allocs.size(), none);
  for (size_t i = 0; i < leaves.size(); ++i) {
    std::vector<size_t> starting;
    for (size_t k = 0; k < allocs.size(); ++k) {
      if (elements[k] >= 0 && first[k] == i) starting.push_back(k);
    }
    std::stable_sort(starting.begin(), starting.end(),
                     [&](size_t a, size_t b) { return elements[a] > elements[b]; });
    for (size_t k : starting) {
      const DataType dtype = allocs[k]->dtype;
      const int64_t need = elements[k];
      // The smallest free storage that holds the buffer (the most recently freed among equals:
      // its memory is the likeliest still in cache), else the largest one, grown to fit.
      std::optional<size_t> fits, largest;
      for (size_t s = 0; s < storages.size(); ++s) {
        const Storage& st = storages[s];
        if (!st.free || !(st.dtype == dtype)) continue;
        if (st.elements >= need) {
          if (!fits || st.elements < storages[*fits].elements ||
              (st.elements == storages[*fits].elements && st.freed_at > storages[*fits].freed_at)) {
            fits = s;
          }
        } else if (!largest || st.elements > storages[*largest].elements) {
          largest = s;
        }
      }
      std::optional<size_t> pick = fits ? fits : largest;
      if (!pick) {
        storages.push_back(Storage{dtype, 0, {}, 0, false});
        pick = storages.size() - 1;
      }
      Storage& st = storages[*pick];
      st.elements = std::max(st.elements, need);
      st.members.push_back(k);
      st.free = false;
      storage_of[k] = *pick;
    }
    for (size_t k = 0; k < allocs.size(); ++k) {
      if (elements[k] >= 0 && last[k] == i) {
        storages[storage_of[k]].free = true;
        storages[storage_of[k]].freed_at = i;
      }
    }
  }

  // Storages of one buffer stay that buffer's own Allocate.
  std::unordered_map<VarKey, Buffer> rebind;
  std::vector<Buffer> storage_buffers(storages.size());
  MemoryPlanStats counted;
  for (size_t s = 0; s < storages.size(); ++s) {
    const Storage& st = storages[s];
    const int64_t bytes = st.elements * st.dtype.bytes() * st.dtype.lanes();
    counted.bytes_after += bytes;
    counted.storages += 1;
    for (size_t k : st.members) {
      counted.bytes_before += elements[k] * st.dtype.bytes() * st.dtype.lanes();
      counted.buffers += 1;
    }
    if (st.members.size() == 1) {
      storage_buffers[s] = allocs[st.members[0]];
      continue;
    }
    // Named after its first buffer and how many more share it ("pad_temp+3").
    std::string name = allocs[st.members[0]]->name + "+" + std::to_string(st.members.size() - 1);
    std::vector<Expr> shape{make_const(kOffsetType, st.elements)};
    Buffer storage = make_buffer(name, st.dtype, shape, compact_strides(shape));
    storage_buffers[s] = storage;
    for (size_t k : st.members) {
      auto member = std::make_shared<BufferNode>(*allocs[k]);
      member->data = storage->data;
      rebind[allocs[k]->data.get()] = member;
    }
  }
  if (stats) *stats = counted;
  if (rebind.empty()) return body;

  Rebind rewrite(std::move(rebind));
  std::vector<Stmt> stmts;
  stmts.reserve(leaves.size());
  for (const Stmt& leaf : leaves) stmts.push_back(rewrite.mutate(leaf));
  Stmt out = Block::make(std::move(stmts));
  // The unplanned buffers keep their Allocates (innermost, as they came), the storages wrap them.
  for (size_t k = allocs.size(); k-- > 0;) {
    if (storage_of[k] == none) out = Allocate::make(allocs[k], out);
  }
  for (size_t s = storage_buffers.size(); s-- > 0;) out = Allocate::make(storage_buffers[s], out);
  return out;
}

}  // namespace ptb
