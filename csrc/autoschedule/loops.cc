// Loop shaping shared by the rules: parallel outer loops.
#include <algorithm>

#include "autoschedule/analysis.h"
#include "autoschedule/rules.h"
#include "schedule/primitives.h"

namespace ptb::autoschedule {

namespace {

// Enough iterations for a balanced split among the threads of a typical machine.
constexpr int64_t kParallelIterations = 64;

}  // namespace

std::vector<IterVar> parallelize(Context& ctx, const Stage& st, const std::vector<IterVar>& outer,
                                 std::optional<int64_t> work, const Stage& knob_owner,
                                 int64_t max_depth) {
  if (outer.empty()) return outer;
  int64_t n = static_cast<int64_t>(outer.size());
  int64_t fallback = 0;
  auto iterations = const_product(outer);
  bool worth = (!work || *work >= kMinParallelWork) && (!iterations || *iterations >= 2);
  if (worth) {
    fallback = n;
    int64_t product = 1;
    for (int64_t d = 0; d < n; ++d) {
      auto e = const_extent(outer[d]);
      if (!e) break;  // a symbolic extent: fuse through it
      product *= *e;
      if (product >= kParallelIterations) {
        fallback = d + 1;
        break;
      }
    }
    if (fallback == n) {
      // Fusing loops of extent one adds nothing; stop at the last loop that iterates.
      while (fallback > 1 && const_extent(outer[fallback - 1]) == 1) --fallback;
    }
  }
  if (max_depth >= 1) fallback = std::min(fallback, max_depth);
  std::vector<int64_t> candidates;
  for (int64_t d = 0; d <= n; ++d) candidates.push_back(d);
  int64_t depth = ctx.knob(knob_owner ? knob_owner : st, "parallel_depth", fallback, candidates);
  if (depth == 0) return outer;
  std::vector<IterVar> head(outer.begin(), outer.begin() + depth);
  IterVar fused = head.size() == 1 ? head[0] : fuse(st, head);
  parallel(st, fused);
  std::vector<IterVar> result = {fused};
  result.insert(result.end(), outer.begin() + depth, outer.end());
  return result;
}

}  // namespace ptb::autoschedule
