#include "lower/storage_flatten.h"

#include "ir/mutator.h"
#include "ir/op.h"
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

class StorageFlattener : public IRMutator {
 public:
  explicit StorageFlattener(const BufferMap& args) : buffers_(args) {}

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
    Expr value = mutate(op->value);
    const Region& r = region_of(op->op, op->value_index);
    return Store::make(r.buffer, value, flat_index(r.buffer, relative(r, indices)));
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
      shape.push_back(b.extent);
      mins.push_back(b.min);
    }
    std::vector<Buffer> made;
    for (int i = 0; i < op->op->num_outputs(); ++i) {
      std::string name = op->op->name + (op->op->num_outputs() > 1 ? ".v" + std::to_string(i) : "");
      Buffer buf = make_buffer(name, op->op->output_dtype(i), shape, compact_strides(shape));
      regions_[{op->op.get(), i}] = Region{buf, mins};
      made.push_back(buf);
    }
    Stmt body = mutate(op->body);
    for (auto it = made.rbegin(); it != made.rend(); ++it) body = Allocate::make(*it, body);
    return body;
  }

 private:
  const BufferMap& buffers_;
  std::map<TensorKey, Region> regions_;
};

}  // namespace

Stmt storage_flatten(const Stmt& s, const BufferMap& arg_buffers) {
  return StorageFlattener(arg_buffers).mutate(s);
}

}  // namespace ptb
