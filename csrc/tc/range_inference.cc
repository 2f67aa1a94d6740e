#include "tc/range_inference.h"

#include "support/error.h"

namespace ptb::tc {

void IndexForm::add_term(int var, int64_t coef) {
  for (auto it = terms.begin(); it != terms.end(); ++it) {
    if (it->first == var) {
      it->second = checked_add(it->second, coef);
      if (it->second == 0) terms.erase(it);
      return;
    }
  }
  if (coef != 0) terms.push_back({var, coef});
}

int64_t IndexForm::coefficient(int var) const {
  for (const auto& [v, c] : terms) {
    if (v == var) return c;
  }
  return 0;
}

namespace {

// Bounds (inclusive) of `index` without the term of `skip` (-1: keep all terms).
std::pair<SymInt, SymInt> bounds_without(const IndexForm& index, int skip,
                                         const std::vector<std::optional<VarRange>>& ranges) {
  SymInt lo = index.offset, hi = index.offset;
  for (const auto& [v, c] : index.terms) {
    if (v == skip) continue;
    const VarRange& r = *ranges[v];
    SymInt first = r.lo * c;
    SymInt last = (r.hi - 1) * c;
    if (c > 0) {
      lo = lo + first;
      hi = hi + last;
    } else {
      lo = lo + last;
      hi = hi + first;
    }
  }
  return {lo, hi};
}

}  // namespace

std::pair<SymInt, SymInt> index_bounds(const IndexForm& index,
                                       const std::vector<std::optional<VarRange>>& ranges) {
  return bounds_without(index, -1, ranges);
}

void infer_ranges(const std::vector<Access>& accesses,
                  std::vector<std::optional<VarRange>>* ranges) {
  std::vector<std::optional<VarRange>>& r = *ranges;
  for (;;) {
    std::vector<std::optional<VarRange>> found(r.size());
    bool progress = false;
    for (const Access& a : accesses) {
      PTB_ICHECK(a.shape.size() == a.indices.size(), "access rank mismatch");
      for (size_t d = 0; d < a.indices.size(); ++d) {
        const IndexForm& f = a.indices[d];
        int unknown = -1, count = 0;
        for (const auto& [v, c] : f.terms) {
          if (!r[v]) {
            unknown = v;
            ++count;
          }
        }
        if (count != 1) continue;
        int64_t c = f.coefficient(unknown);
        auto [rmin, rmax] = bounds_without(f, unknown, r);
        const SymInt& size = a.shape[d];
        // 0 <= c*v + rest <= size - 1 for every rest in [rmin, rmax].
        VarRange cand;
        if (c > 0) {
          cand.lo = (-rmin).ceildiv(c);
          cand.hi = (size - 1 - rmax).floordiv(c) + 1;
        } else {
          int64_t m = checked_neg(c);
          cand.lo = (rmax - (size - 1)).ceildiv(m);
          cand.hi = rmin.floordiv(m) + 1;
        }
        std::optional<VarRange>& slot = found[unknown];
        if (!slot) {
          slot = cand;
        } else {
          slot->lo = SymInt::max(slot->lo, cand.lo);
          slot->hi = SymInt::min(slot->hi, cand.hi);
        }
        progress = true;
      }
    }
    if (!progress) return;
    for (size_t v = 0; v < r.size(); ++v) {
      if (found[v]) r[v] = found[v];
    }
  }
}

}  // namespace ptb::tc
