#include "tc/function.h"

#include <limits>

#include "ir/op.h"
#include "support/error.h"
#include "tc/eval.h"

namespace ptb::tc {

namespace {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

std::vector<std::vector<int64_t>> TcFunction::prepare(
    const std::vector<std::vector<int64_t>>& shapes, const std::vector<DataType>* dtypes) const {
  if (shapes.size() != inputs.size() || (dtypes && dtypes->size() != inputs.size())) {
    std::string names;
    for (size_t i = 0; i < input_names.size(); ++i) names += (i ? ", " : "") + input_names[i];
    type_error(name, "() takes ", inputs.size(), " input(s) (", names, "), got ", shapes.size());
  }
  SizeEnv env;
  // Which argument bound each size first, for messages naming both sides of a disagreement.
  std::vector<std::pair<int, int>> bound_at(sizes.size(), {-1, -1});
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string arg = str_cat("argument '", input_names[i], "' of ", name, "()");
    if (dtypes && (*dtypes)[i] != inputs[i].dtype()) {
      type_error(arg, " must be ", inputs[i].dtype().str(), ", got ", (*dtypes)[i].str(),
                 " (signature: ", signature, ")");
    }
    const std::vector<int64_t>& shape = shapes[i];
    const std::vector<int>& ids = input_size_ids[i];
    if (shape.size() != ids.size()) {
      value_error(arg, " must have ", ids.size(), " dimension(s), got ", shape.size(), " (shape ",
                  shape_str(shape), "; signature: ", signature, ")");
    }
    for (size_t d = 0; d < ids.size(); ++d) {
      int64_t got = shape[d];
      // TC's size variables and loop indices are int32 (as in TC itself) and index arithmetic
      // is int64, so an input may hold 2**31 elements or more as long as each dimension fits;
      // a dimension past int32 needs the variant translated with int64 sizes (tc.py picks it).
      if (got < 0 || (index_type.bits() == 32 && got > std::numeric_limits<int32_t>::max())) {
        value_error(arg, " has size ", got, " in dimension ", d, "; this variant's sizes are ",
                    index_type.str(), ", so each dimension must be at most ",
                    std::numeric_limits<int32_t>::max());
      }
      if (ids[d] < 0) {
        int64_t want = as_const_int(inputs[i].shape()[d]).value_or(-1);
        if (got != want) {
          value_error(arg, " must have size ", want, " in dimension ", d, ", got ", got, " (shape ",
                      shape_str(shape), ")");
        }
        continue;
      }
      const SizeInfo& size = sizes[ids[d]];
      auto [first_arg, first_dim] = bound_at[ids[d]];
      if (first_arg < 0) {
        env[size.var.get()] = got;
        bound_at[ids[d]] = {static_cast<int>(i), static_cast<int>(d)};
      } else if (env[size.var.get()] != got) {
        value_error("inconsistent size '", size.name, "' in ", name, "(): argument '",
                    input_names[first_arg], "' has ", size.name, " = ", env[size.var.get()],
                    " (dimension ", first_dim, ") but argument '", input_names[i], "' has ",
                    size.name, " = ", got, " (dimension ", d, ")");
      }
    }
  }
  auto bound_sizes = [&] {
    std::string s;
    for (const SizeInfo& size : sizes) {
      s += (s.empty() ? "" : ", ") + size.name + " = " + std::to_string(env[size.var.get()]);
    }
    return s.empty() ? std::string() : " (with " + s + ")";
  };

  std::vector<std::vector<int64_t>> out_shapes;
  for (size_t o = 0; o < outputs.size(); ++o) {
    std::vector<int64_t> shape;
    const auto& dims = outputs[o].shape();
    for (size_t d = 0; d < dims.size(); ++d) {
      int64_t v = eval_int(dims[d], env);
      if (v < 0) {
        value_error("output '", output_names[o], "' of ", name, "() would have size ", v,
                    " in dimension ", d, bound_sizes(), ": the inputs are too small");
      }
      if (!output_declared[o].empty()) {
        auto [size_id, fixed] = output_declared[o][d];
        int64_t want = size_id >= 0 ? env[sizes[size_id].var.get()] : fixed;
        if (v != want) {
          value_error("output '", output_names[o], "' of ", name, "() is declared with size ",
                      size_id >= 0 ? sizes[size_id].name + " = " : std::string(), want,
                      " in dimension ", d, " but its statements give it size ", v, bound_sizes());
        }
      }
      shape.push_back(v);
    }
    out_shapes.push_back(std::move(shape));
  }

  for (const BoundsCheck& c : checks) {
    bool runs = true;
    for (const Expr& e : c.extents) runs = runs && eval_int(e, env) > 0;
    if (!runs) continue;
    int64_t v = eval_int(c.value, env);
    int64_t size = eval_int(c.size, env);
    if (c.is_lower ? v < 0 : v > size - 1) {
      value_error("in ", name, "(): a ", c.is_write ? "write" : "read", " of '", c.tensor,
                  "' goes out of bounds in dimension ", c.dim, ": its index ",
                  c.is_lower ? "goes down to " : "reaches ", v, " but the size is ", size,
                  bound_sizes(), "; check the where clauses of this statement\n", c.location);
    }
  }
  return out_shapes;
}

}  // namespace ptb::tc
