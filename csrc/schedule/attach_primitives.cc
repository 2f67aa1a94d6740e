// compute_at, compute_inline, compute_root (primitives.h).
#include <algorithm>

#include "schedule/primitives.h"
#include "schedule/stage_bodies.h"
#include "support/error.h"
#include "te/scan.h"

namespace ptb {

namespace {

const std::string& iv_name(const IterVar& iv) { return iv->var.as<Var>()->name; }

Schedule schedule_of(const Stage& stage, const char* primitive) {
  Schedule sch = stage->schedule.lock();
  if (!sch) value_error(primitive, " on ", stage->describe(), ": its schedule no longer exists");
  return sch;
}

void check_compute(const Stage& stage, const char* primitive) {
  if (stage->is_placeholder()) {
    value_error(primitive, " on ", stage->describe(),
                ": a placeholder is an input, it is not computed");
  }
}

// Scans and extern calls have no per-element body to substitute into their readers.
void check_inlinable(const Stage& stage) {
  if (stage->op->kind == OpKind::kExtern || as_scan(stage->op)) {
    value_error("compute_inline on ", stage->describe(),
                ": scans and extern stages have no expression to inline; compute them at root ",
                "or at a loop of their consumer (compute_at)");
  }
}

// Whether a stage that reads `stage` is computed (directly or through stages computed inside
// one another) at `leaf` of `target` or at a loop inside it: `stage` may then be computed at
// that loop even where `target` itself does not read it (a packed panel shared by the tiles
// computed inside the panel loop).
bool consumer_inside(const Schedule& sch, const Stage& target, const IterVar& leaf,
                     const Stage& stage) {
  size_t pos = target->leaf_position(leaf, "compute_at");
  for (const Stage& s : sch->stages) {
    if (s == stage || !reads_through_inline(sch, s, stage)) continue;
    for (Stage c = s; c && c->attach_type == AttachType::kScope; c = c->attach_stage) {
      if (c == stage) break;
      if (c->attach_stage == target) {
        if (target->leaf_position(c->attach_ivar, "compute_at") >= pos) return true;
        break;
      }
    }
  }
  return false;
}

}  // namespace

// A scan or extern stage computed at a loop runs whole in each iteration of it (as in TVM: its
// bounds are not narrowed to what the consumer reads, see bound.cc).
void compute_at(const Stage& stage, const Stage& target, const IterVar& axis) {
  check_compute(stage, "compute_at");
  if (!target) value_error("compute_at on ", stage->describe(), ": the target stage is None");
  if (!axis) value_error("compute_at on ", stage->describe(), ": the axis is None");
  auto where = [&]() {
    return str_cat("compute_at of ", stage->describe(), " at axis '", iv_name(axis), "' of ",
                   target->describe());
  };
  Schedule sch = schedule_of(stage, "compute_at");
  if (target->schedule.lock() != sch)
    value_error(where(), ": the stages belong to different schedules");
  if (target == stage) value_error(where(), ": a stage cannot be computed inside itself");
  const auto& all = target->all_iter_vars;
  if (std::find(all.begin(), all.end(), axis) == all.end()) {
    value_error(where(), ": the axis is not an axis of ", target->describe(),
                " (pass an axis of the stage it is computed at)");
  }
  // As in TVM, an axis already split or fused stands for the loop it became.
  const IterVar leaf = attach_axis_after_rewrites(*target, axis);
  const auto& leaves = target->leaf_iter_vars;
  if (std::find(leaves.begin(), leaves.end(), leaf) == leaves.end()) {
    value_error(where(), ": the axis was fused as the outer operand of a fuse, so no loop stands ",
                "for it (TVM refuses this too); compute at the fused axis instead");
  }
  if (stage->is_output) {
    value_error(where(), ": ", stage->describe(), " is an output; outputs are computed at root");
  }
  if (target->attach_type == AttachType::kInline) {
    value_error(where(), ": ", target->describe(), " is inlined and has no loops");
  }
  if (!reads_through_inline(sch, target, stage) && !consumer_inside(sch, target, leaf, stage)) {
    value_error(where(), ": ", target->describe(), " does not read ", stage->describe(),
                " (compute_at needs a consumer of the stage, or a loop a consumer is computed in)");
  }
  for (Stage s = target; s && s->attach_type == AttachType::kScope; s = s->attach_stage) {
    if (s->attach_stage == stage) {
      value_error(where(), ": ", target->describe(), " is itself computed inside ",
                  stage->describe());
    }
  }
  stage->attach_type = AttachType::kScope;
  stage->attach_stage = target;
  stage->attach_ivar = leaf;
}

IterVar attach_axis_after_rewrites(const StageNode& target, IterVar axis) {
  for (bool moved = true; moved;) {
    moved = false;
    for (const IterVarRelation& rel : target.relations) {
      if (rel.kind == IterVarRelation::Kind::kSplit && rel.parent == axis) {
        axis = rel.inner;
        moved = true;
      } else if (rel.kind == IterVarRelation::Kind::kFuse && rel.inner == axis) {
        axis = rel.fused;
        moved = true;
      }
    }
  }
  return axis;
}

void move_attachments_to_leaves(const Stage& target) {
  Schedule sch = target->schedule.lock();
  if (!sch) return;
  for (const Stage& st : sch->stages) {
    if (st->attach_type == AttachType::kScope && st->attach_stage == target) {
      st->attach_ivar = attach_axis_after_rewrites(*target, st->attach_ivar);
    }
  }
}

void compute_inline(const Stage& stage) {
  check_compute(stage, "compute_inline");
  check_inlinable(stage);
  if (stage->is_output) {
    value_error("compute_inline on ", stage->describe(),
                ": it is an output, so it must be stored; only intermediate stages can be inlined");
  }
  const auto* compute = static_cast<const ComputeOpNode*>(stage->op.get());
  if (compute->is_reduction()) {
    value_error("compute_inline on ", stage->describe(),
                ": it is a reduction, which needs its own loop over the reduce axes; compute "
                "it at root or with compute_at instead");
  }
  if (auto sch = stage->schedule.lock()) {
    for (const Stage& other : sch->stages) {
      for (const auto& p : other->prefetches) {
        if (p.tensor.op() == stage->op) {
          value_error("compute_inline on ", stage->describe(), ": ", other->describe(),
                      " prefetches its output '", p.tensor.name(),
                      "', which an inlined stage would not store; prefetch the tensors it reads "
                      "instead");
        }
      }
    }
  }
  stage->attach_type = AttachType::kInline;
  stage->attach_stage = nullptr;
  stage->attach_ivar = nullptr;
}

void compute_root(const Stage& stage) {
  check_compute(stage, "compute_root");
  stage->attach_type = AttachType::kRoot;
  stage->attach_stage = nullptr;
  stage->attach_ivar = nullptr;
}

}  // namespace ptb
