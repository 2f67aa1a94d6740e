// Template definitions of operation.h.
#pragma once

namespace ptb {

template <typename F>
Tensor compute(std::vector<Expr> shape, F fbody, const std::string& name,
               std::vector<std::string> axis_names) {
  std::vector<IterVar> axis;
  std::vector<Expr> vars;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::string n = d < axis_names.size() ? axis_names[d] : "i" + std::to_string(d);
    axis.push_back(make_iter_var(Range::from_min_extent(IntImm::make(kIndexType, 0), shape[d]), n,
                                 IterKind::kDataPar));
    vars.push_back(axis.back()->var);
  }
  Expr body = fbody(vars);
  return Tensor(make_compute(name, std::move(shape), std::move(axis), {body}), 0);
}

}  // namespace ptb
