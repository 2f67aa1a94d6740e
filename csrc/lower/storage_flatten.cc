#include "lower/storage_flatten.h"

#include <optional>
#include <set>

#include "ir/mutator.h"
#include "ir/op.h"
#include "ir/simplify.h"
#include "support/error.h"

namespace ptb {

std::vector<Expr> compact_strides(const std::vector<Expr>& shape) {
  std::vector<Expr> strides(shape.size());
  Expr running = make_one(kOffsetType);
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = running;
    running = idx_mul(running, cast(kOffsetType, shape[d]));
  }
  return strides;
}

Expr flat_index(const Buffer& buffer, const std::vector<Expr>& indices) {
  PTB_ICHECK(indices.size() == buffer->strides.size(), "index count of ", buffer->name);
  Expr offset = make_zero(kOffsetType);
  for (size_t d = 0; d < indices.size(); ++d) {
    offset = idx_add(offset, idx_mul(cast(kOffsetType, indices[d]), buffer->strides[d]));
  }
  return offset;
}

namespace {

// A constant-pad stage P of a tensor T (topi.nn.pad: P[i] = T[i - before] inside, a constant
// outside), both realized whole at the root: T is stored in P's interior, so that the pad stage
// only writes P's border instead of copying all of T (a stored pad before each 3x3 convolution
// was about 4% of ResNet-18's time). T's other readers read the interior in place.
struct Embedding {
  Operation pad;
  std::vector<int64_t> before;
};

// The realizes at the root of the function (outside every loop, condition and binding).
void root_realizes(const Stmt& s, std::map<const OperationNode*, const Realize*>* out) {
  if (const auto* r = s.as<Realize>()) {
    (*out)[r->op.get()] = r;
    root_realizes(r->body, out);
  } else if (const auto* b = s.as<Block>()) {
    for (const Stmt& t : b->stmts) root_realizes(t, out);
  }
}

bool covers_whole(const Realize* r) {
  const std::vector<Expr>& shape = r->op->output_shape(0);
  if (r->bounds.size() != shape.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!is_const_int(r->bounds[d].min, 0)) return false;
    auto extent = as_const_int(r->bounds[d].extent), size = as_const_int(shape[d]);
    if (!extent || !size || *extent != *size) return false;
  }
  return true;
}

// `e` is the constant c (after simplification).
bool is_constant(const Expr& e, int64_t c) {
  auto v = as_const_int(simplify(e));
  return v && *v == c;
}

// The pad amounts of P over T when P's body is exactly a constant pad of T: if_then_else(inside,
// T[axis - before], value), `inside` being exactly the interior's bounds.
std::optional<std::vector<int64_t>> pad_of(const ComputeOpNode* p, const OperationNode* t) {
  if (p->tag != "injective,pad" || p->body.size() != 1 || !p->reduce_axis.empty()) {
    return std::nullopt;
  }
  const auto* call = p->body[0].as<Call>();
  if (!call || call->op != Intrinsic::kIfThenElse || !as_const_float(call->args[2])) {
    return std::nullopt;
  }
  const auto* read = call->args[1].as<TensorRead>();
  const std::vector<Expr>& inner = t->output_shape(0);
  if (!read || read->op.get() != t || read->indices.size() != p->axis.size() ||
      inner.size() != p->shape.size()) {
    return std::nullopt;
  }
  const size_t n = p->axis.size();
  std::vector<int64_t> before(n), after(n);
  for (size_t d = 0; d < n; ++d) {
    auto shift = as_const_int(simplify(idx_sub(p->axis[d]->var, read->indices[d])));
    auto outer = as_const_int(p->shape[d]), size = as_const_int(inner[d]);
    if (!shift || !outer || !size || *shift < 0 || *outer - *size - *shift < 0) return std::nullopt;
    before[d] = *shift;
    after[d] = *outer - *size - *shift;
  }
  std::vector<Expr> conds;
  split_conjuncts(call->args[0], &conds);
  std::vector<bool> low(n), high(n);
  for (const Expr& c : conds) {
    bool matched = false;
    for (size_t d = 0; d < n && !matched; ++d) {
      const Expr& v = p->axis[d]->var;
      if (const auto* ge = c.as<GE>();
          ge && ge->a.same_as(v) && before[d] > 0 && is_constant(ge->b, before[d]) && !low[d]) {
        low[d] = matched = true;
      } else if (const auto* lt = c.as<LT>();
                 lt && lt->a.same_as(v) && after[d] > 0 &&
                 is_constant(lt->b, before[d] + *as_const_int(inner[d])) && !high[d]) {
        high[d] = matched = true;
      }
    }
    if (!matched) return std::nullopt;
  }
  for (size_t d = 0; d < n; ++d) {
    if (low[d] != (before[d] > 0) || high[d] != (after[d] > 0)) return std::nullopt;
  }
  return before;
}

// T -> its embedding, for every pad stage whose input can live in its interior: both computes of
// one output, of constant shapes, realized whole at the root, T padded once.
std::map<const OperationNode*, Embedding> embeddings(const Stmt& s, const BufferMap& args) {
  std::map<const OperationNode*, const Realize*> roots;
  root_realizes(s, &roots);
  std::map<const OperationNode*, Embedding> out;
  std::set<const OperationNode*> hosts;
  for (const auto& [op, realize] : roots) {
    if (op->kind != OpKind::kCompute || op->num_outputs() != 1 || !covers_whole(realize)) continue;
    const auto* p = static_cast<const ComputeOpNode*>(op);
    std::vector<Tensor> inputs = p->input_tensors();
    if (inputs.size() != 1) continue;
    const OperationNode* t = inputs[0].op().get();
    auto tr = roots.find(t);
    if (tr == roots.end() || t->num_outputs() != 1 || t->kind != OpKind::kCompute ||
        !covers_whole(tr->second) || out.count(t) || hosts.count(t) || out.count(op) ||
        args.count({t, 0}) || args.count({op, 0}) || !(t->output_dtype(0) == p->output_dtype(0))) {
      continue;
    }
    if (auto before = pad_of(p, t)) {
      out[t] = Embedding{realize->op, *before};
      hosts.insert(op);
    }
  }
  return out;
}

class StorageFlattener : public IRMutator {
 public:
  StorageFlattener(const BufferMap& args, std::map<const OperationNode*, Embedding> embedded)
      : buffers_(args), embedded_(std::move(embedded)) {
    for (const auto& [t, e] : embedded_) host_of_[e.pad.get()] = t;
  }

 protected:
  using IRMutator::mutate_node;

  struct Region {
    Buffer buffer;
    std::vector<Expr> mins;
  };

  const Region& region_of(const Operation& op, int value_index) {
    auto it = regions_.find({op.get(), value_index});
    if (it != regions_.end()) return it->second;
    auto arg = buffers_.find({op.get(), value_index});
    if (arg == buffers_.end()) {
      if (op->num_outputs() > 1) {
        value_error("output ", value_index, " of the ", op->num_outputs(), "-output compute '",
                    op->name, "' is not an argument while another of its outputs is; pass all ",
                    "of its outputs to build()/lower()");
      }
      value_error("tensor '", op->name, "' is used but is neither an argument nor computed here; ",
                  "add it to the argument list of build()/lower()");
    }
    std::vector<Expr> zeros(arg->second->shape.size(), make_zero(kIndexType));
    return regions_[{op.get(), value_index}] = Region{arg->second, zeros};
  }

  std::vector<Expr> relative(const Region& r, const std::vector<Expr>& indices) {
    std::vector<Expr> out;
    for (size_t d = 0; d < indices.size(); ++d) out.push_back(idx_sub(indices[d], r.mins[d]));
    return out;
  }

  Expr mutate_node(const TensorRead* op, const Expr& self) override {
    bool changed = false;
    std::vector<Expr> indices = mutate_all(op->indices, &changed);
    const Region& r = region_of(op->op, op->value_index);
    return Load::make(r.buffer, flat_index(r.buffer, relative(r, indices)));
  }

  Stmt mutate_node(const Provide* op, const Stmt& self) override {
    bool changed = false;
    std::vector<Expr> indices = mutate_all(op->indices, &changed);
    const Region& r = region_of(op->op, op->value_index);
    Expr index = flat_index(r.buffer, relative(r, indices));
    if (host_of_.count(op->op.get())) {
      // The interior of a pad whose input is stored there already: only the border is written.
      const auto* call = op->value.as<Call>();
      const auto* read =
          call && call->op == Intrinsic::kIfThenElse ? call->args[1].as<TensorRead>() : nullptr;
      if (read && read->op.get() == host_of_[op->op.get()]) {
        std::vector<Expr> from = mutate_all(read->indices, &changed);
        const Region& src = region_of(read->op, read->value_index);
        Expr same = simplify(idx_sub(flat_index(src.buffer, relative(src, from)), index));
        if (src.buffer == r.buffer && is_const_int(same, 0)) {
          Expr outside = Not::make(mutate(call->args[0]));
          return IfThenElse::make(outside, Store::make(r.buffer, mutate(call->args[2]), index));
        }
      }
    }
    return Store::make(r.buffer, mutate(op->value), index);
  }

  Stmt mutate_node(const CallPacked* op, const Stmt& self) override {
    std::vector<PackedCallArg> args;
    for (const PackedCallArg& a : op->args) {
      PackedCallArg b;
      if (a.op) {
        const Region& r = region_of(a.op, a.value_index);
        for (const Expr& m : r.mins) {
          PTB_ICHECK(is_const_int(m, 0), "an extern stage's tensors are realized whole");
        }
        b.buffer = r.buffer;
      } else if (a.buffer) {
        b.buffer = a.buffer;
      } else {
        b.scalar = mutate(a.scalar);
      }
      args.push_back(b);
    }
    return CallPacked::make(op->name, std::move(args));
  }

  Stmt mutate_node(const Realize* op, const Stmt& self) override {
    std::vector<Expr> shape, mins;
    for (const Range& b : op->bounds) {
      // A region computed at a consumer that gathers (B[I[i]] with B at i) starts at a read of
      // the index tensor: a load, like every other read.
      shape.push_back(mutate(b.extent));
      mins.push_back(mutate(b.min));
    }
    std::vector<Buffer> made;
    if (auto shared = embedding_of(op->op.get())) {
      // A pad and its input share the pad's buffer: made (and allocated) by whichever of the
      // two realizes comes first, around the other.
      if (!regions_.count({shared->pad.get(), 0})) {
        const std::vector<Expr>& outer = shared->pad->output_shape(0);
        Buffer buf = make_buffer(shared->pad->name, shared->pad->output_dtype(0), outer,
                                 compact_strides(outer));
        std::vector<Expr> zeros(outer.size(), make_zero(kIndexType)), shift;
        for (int64_t b : shared->before) shift.push_back(make_const(kIndexType, -b));
        regions_[{shared->pad.get(), 0}] = Region{buf, zeros};
        regions_[{host_of_[shared->pad.get()], 0}] = Region{buf, shift};
        made.push_back(buf);
      }
    } else {
      for (int i = 0; i < op->op->num_outputs(); ++i) {
        std::string name =
            op->op->name + (op->op->num_outputs() > 1 ? ".v" + std::to_string(i) : "");
        Buffer buf = make_buffer(name, op->op->output_dtype(i), shape, compact_strides(shape));
        regions_[{op->op.get(), i}] = Region{buf, mins};
        made.push_back(buf);
      }
    }
    Stmt body = mutate(op->body);
    for (auto it = made.rbegin(); it != made.rend(); ++it) body = Allocate::make(*it, body);
    return body;
  }

 private:
  // The embedding a pad or its embedded input takes part in.
  const Embedding* embedding_of(const OperationNode* op) const {
    auto t = embedded_.find(op);
    if (t != embedded_.end()) return &t->second;
    auto host = host_of_.find(op);
    return host == host_of_.end() ? nullptr : &embedded_.at(host->second);
  }

  const BufferMap& buffers_;
  std::map<TensorKey, Region> regions_;
  std::map<const OperationNode*, Embedding> embedded_;
  std::map<const OperationNode*, const OperationNode*> host_of_;  // pad -> its embedded input
};

}  // namespace

Stmt storage_flatten(const Stmt& s, const BufferMap& arg_buffers) {
  return StorageFlattener(arg_buffers, embeddings(s, arg_buffers)).mutate(s);
}

}  // namespace ptb
