#include "codegen/transposed_groups.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_set>

#include "ir/op.h"
#include "ir/simplify.h"
#include "schedule/interval.h"

namespace ptb {

namespace {

// Columns from several rows of one buffer: loads whose strides are equal and whose starts
// differ by constants from the first one's.
struct Bucket {
  Buffer buffer;
  Expr stride;
  Expr first_base;
  int lanes;
  std::map<int64_t, std::vector<const Load*>> by_offset;  // start - first_base -> loads
};

// a - b when it is a constant: affine forms (widening casts of index arithmetic expanded, as it
// does not overflow: int64(16 jo + 1) - int64(16 jo) is 1).
std::optional<int64_t> constant_difference(const Expr& a, const Expr& b) {
  if (a.dtype() != b.dtype()) return std::nullopt;
  LinearForm d = LinearForm::of(a) - LinearForm::of(b);
  if (!d.is_constant()) return std::nullopt;
  return d.constant();
}

bool is_candidate_lanes(int lanes) { return lanes == 4 || lanes == 8 || lanes == 16; }

}  // namespace

std::vector<TransposedGroup> find_transposed_groups(const std::vector<const Store*>& stores) {
  std::unordered_set<const ExprNode*> written;
  for (const Store* s : stores) written.insert(s->buffer->data.get());

  std::vector<Bucket> buckets;
  for (const Store* s : stores) {
    const auto* load = s->value.as<Load>();
    if (s->predicate.defined() || !load || load->predicate.defined()) continue;
    const auto* ramp = load->index.as<Ramp>();
    int lanes = load->dtype.lanes();
    if (!ramp || !is_candidate_lanes(lanes) || written.count(load->buffer->data.get())) continue;
    if (auto c = as_const_int(ramp->stride); c && *c >= -4 && *c <= 4) continue;
    bool placed = false;
    for (Bucket& b : buckets) {
      if (b.buffer.get() != load->buffer.get() || b.lanes != lanes) continue;
      auto same_stride = constant_difference(ramp->stride, b.stride);
      if (!same_stride || *same_stride != 0) continue;
      auto offset = constant_difference(ramp->base, b.first_base);
      if (!offset) continue;
      b.by_offset[*offset].push_back(load);
      placed = true;
      break;
    }
    if (!placed) {
      Bucket b{load->buffer, ramp->stride, ramp->base, lanes, {}};
      b.by_offset[0].push_back(load);
      buckets.push_back(std::move(b));
    }
  }

  std::vector<TransposedGroup> groups;
  for (const Bucket& b : buckets) {
    // Runs of L consecutive offsets, the lowest first; an offset left over stays a gather.
    auto it = b.by_offset.begin();
    while (it != b.by_offset.end()) {
      int64_t start = it->first;
      auto next = it;
      int k = 0;
      while (k < b.lanes && next != b.by_offset.end() && next->first == start + k) {
        ++k;
        ++next;
      }
      if (k < b.lanes) {
        ++it;
        continue;
      }
      TransposedGroup g;
      g.buffer = b.buffer;
      g.base = simplify(idx_add(b.first_base, make_const(b.first_base.dtype(), start)));
      g.stride = b.stride;
      g.lanes = b.lanes;
      for (auto col = it; col != next; ++col) {
        for (const Load* load : col->second) {
          g.taps.emplace_back(load, static_cast<int>(col->first - start));
        }
      }
      groups.push_back(std::move(g));
      it = next;
    }
  }
  return groups;
}

}  // namespace ptb
