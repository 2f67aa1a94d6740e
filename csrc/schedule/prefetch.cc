// The prefetch primitive: records the request; schedule_ops places it at the top of the loop's
// body and lower/prefetch_streams.cc turns it into prefetches of single cache lines.
#include <algorithm>

#include "schedule/primitives.h"
#include "support/error.h"

namespace ptb {

namespace {

// Whether `reader` is `stage` or is computed, directly or through other stages, at a loop of it;
// an inlined reader reads where its consumers do (a residual added by an elementwise stage that
// is inlined into a convolution's epilogue is read in the epilogue's loops).
bool inside(const Schedule& sch, const Stage& reader, const Stage& stage, int depth = 0) {
  for (Stage s = reader; s; s = s->attach_type == AttachType::kScope ? s->attach_stage : nullptr) {
    if (s == stage) return true;
  }
  if (reader->attach_type != AttachType::kInline || depth > 64) return false;
  std::vector<Stage> consumers = sch->consumers(reader);
  return std::any_of(consumers.begin(), consumers.end(),
                     [&](const Stage& c) { return inside(sch, c, stage, depth + 1); });
}

}  // namespace

bool computed_around(const Stage& producer, const Stage& stage, const IterVar& axis) {
  if (producer->attach_type != AttachType::kScope) return false;
  Stage s = stage;
  IterVar at = axis;
  for (int depth = 0; s && depth < 64; ++depth) {
    if (s == producer->attach_stage) {
      size_t outer = s->leaf_position(producer->attach_ivar, "prefetch");
      size_t inner = s->leaf_position(at, "prefetch");
      // On the request's own stage the producer's loop must be strictly outside: computed at
      // `axis` itself, it is recomputed in every iteration, after the request. A stage
      // attached at the producer's loop runs after the producer, inside its scope.
      return depth == 0 ? outer < inner : outer <= inner;
    }
    if (s->attach_type != AttachType::kScope) return false;
    at = s->attach_ivar;
    s = s->attach_stage;
  }
  return false;
}

void prefetch(const Stage& stage, const Tensor& tensor, const IterVar& axis, int64_t offset,
              int cache_level) {
  stage->leaf_position(axis, "prefetch");
  if (offset < 1) {
    value_error("prefetch on ", stage->describe(), ": offset must be a positive number of ",
                "iterations ahead, got ", offset);
  }
  if (cache_level != 1 && cache_level != 2) {
    value_error("prefetch on ", stage->describe(), ": cache_level must be 1 (L1) or 2 (L2), got ",
                cache_level);
  }
  auto sch = stage->schedule.lock();
  PTB_ICHECK(sch, "stage without a schedule");
  Stage producer = sch->stage(tensor.op());
  if (producer->attach_type == AttachType::kInline) {
    value_error("prefetch on ", stage->describe(), ": tensor '", tensor.name(),
                "' is inlined into its readers (compute_inline), so it has no memory to fetch "
                "ahead; prefetch the tensors it reads instead");
  }
  if (producer->attach_type != AttachType::kRoot && !computed_around(producer, stage, axis)) {
    value_error("prefetch on ", stage->describe(), ": tensor '", tensor.name(),
                "' is computed inside another stage's loops, not around this loop; only an "
                "input, a tensor computed at root or one computed at a loop around this one has "
                "a region to fetch ahead");
  }
  std::vector<Stage> readers = sch->consumers(producer);
  bool read = std::any_of(readers.begin(), readers.end(),
                          [&](const Stage& r) { return inside(sch, r, stage); });
  if (!read) {
    value_error("prefetch on ", stage->describe(), ": tensor '", tensor.name(),
                "' is not read by this stage or a stage computed inside its loops");
  }
  stage->prefetches.push_back({tensor, axis, offset, cache_level});
}

}  // namespace ptb
