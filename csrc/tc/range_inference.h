// Range inference: the range of every index variable of a statement that no where clause gives,
// as the largest range that keeps every read in bounds.
//
// Each read index is an affine form `offset + sum(c_v * v)` with constant coefficients c_v and a
// symbolic offset (sizes and constants). Inference runs in rounds: in a round, every index form
// with exactly one variable of unknown range yields bounds for that variable from the ranges of
// the others (`0 <= c*v + rest <= size - 1` for every value of rest); a variable constrained by
// several reads gets the intersection. Variables found in a round are fixed for the next, so
// `I(n, 2*h + kh)` with `W(kh)` first gives kh from W, then h from I. As in TC, nothing cleverer
// is attempted: a variable that never appears alone in an index needs a where clause.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "tc/sym.h"

namespace ptb::tc {

// An index `offset + sum(coefficient * variable)`, variables numbered by the statement.
struct IndexForm {
  SymInt offset;
  std::vector<std::pair<int, int64_t>> terms;  // (variable id, non-zero coefficient)
  // A gathered index (`T(I(i))`): a value read from a tensor, unknown until run time. It has no
  // terms, so it constrains no variable; the read clamps it into the dimension.
  bool gathered = false;

  void add_term(int var, int64_t coef);
  int64_t coefficient(int var) const;
};

// One read of a tensor: its shape and one index form per dimension.
struct Access {
  std::vector<SymInt> shape;
  std::vector<IndexForm> indices;
};

// The half-open range [lo, hi) of an index variable.
struct VarRange {
  SymInt lo, hi;
  SymInt extent() const { return hi - lo; }
};

// Fills the unknown entries of `ranges` (one per variable; given ones are kept as they are) from
// `accesses`. Entries that stay empty could not be inferred.
void infer_ranges(const std::vector<Access>& accesses,
                  std::vector<std::optional<VarRange>>* ranges);

// The smallest and largest value (both inclusive) of `index` over `ranges` (all known; empty
// ranges are the caller's business: the bounds are then meaningless but still defined).
std::pair<SymInt, SymInt> index_bounds(const IndexForm& index,
                                       const std::vector<std::optional<VarRange>>& ranges);

}  // namespace ptb::tc
