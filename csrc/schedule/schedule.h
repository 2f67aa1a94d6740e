// Schedules: how each operation's loops are ordered, split, fused, annotated and placed.
//
// A Stage holds one operation's loop structure as TVM does: the root iteration variables (the
// operation's axes and reduce axes), the relations that derive new variables from them
// (split, fuse), the leaf variables in loop order, and per-leaf annotations. Lowering walks the
// relations to express each root variable in terms of the leaves.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/expr.h"
#include "ir/stmt.h"
#include "te/operation.h"

namespace ptb {

struct IterVarRelation {
  enum class Kind { kSplit, kFuse, kSingleton };
  Kind kind;
  // split: parent -> (outer, inner), with factor (inner extent) or nparts (outer extent).
  // fuse: (outer, inner) -> fused.
  // singleton (TVM's fuse() of no axis): a new loop of extent 1, `fused`, from no variable.
  IterVar parent, outer, inner, fused;
  Expr factor, nparts;
};

enum class AttachType { kRoot, kInline, kScope };

struct StageNode;
using Stage = std::shared_ptr<StageNode>;
struct ScheduleNode;

struct StageNode {
  // What the stage computes. cache_read, cache_write and rfactor replace it with a rewritten
  // operation; origin_op stays the operation users' tensors (and other stages' reads) refer to, so
  // it is the identity of the stage's storage and the key of its arguments' buffers.
  Operation op;
  Operation origin_op;
  std::string scope = "global";  // recorded for cache stages; all memory is ordinary CPU memory
  std::vector<IterVar> root_iter_vars;  // op axes then reduce axes
  std::vector<IterVar> all_iter_vars;   // root and derived
  std::vector<IterVar> leaf_iter_vars;  // in loop order, outermost first
  std::vector<IterVarRelation> relations;
  std::unordered_map<const IterVarNode*, ForKind> iter_kind;  // absent: serial
  AttachType attach_type = AttachType::kRoot;
  Stage attach_stage;   // kScope: the consumer stage
  IterVar attach_ivar;  // kScope: the consumer's loop this stage is computed inside
  bool is_output = false;
  // prefetch() requests: on each iteration of `axis`, the region of `tensor` that iteration +
  // `offset` reads is fetched ahead into cache level `cache_level` (1 or 2;
  // lower/prefetch_streams.h).
  struct Prefetch {
    Tensor tensor;
    IterVar axis;
    int64_t offset;
    int cache_level = 2;
  };
  std::vector<Prefetch> prefetches;
  // The schedule holding this stage (compute_at checks the data flow through it).
  std::weak_ptr<ScheduleNode> schedule;

  bool is_placeholder() const { return op->kind == OpKind::kPlaceholder; }
  std::string describe() const;  // "stage 'C'"
  // Throws ValueError naming this stage when iv is not one of its iteration variables.
  void check_owns(const IterVar& iv, const char* primitive) const;
  size_t leaf_position(const IterVar& iv, const char* primitive) const;
  ForKind kind_of(const IterVar& iv) const;
};

struct ScheduleNode : std::enable_shared_from_this<ScheduleNode> {
  std::vector<Operation> outputs;
  std::vector<Stage> stages;  // every operation reachable from the outputs, producers first
  std::unordered_map<const OperationNode*, Stage> stage_of_op;

  // The stage computing `op`; ValueError when op is not part of this schedule.
  Stage stage(const Operation& op) const;
  // Stages that read an output of `stage`'s op.
  std::vector<Stage> consumers(const Stage& stage) const;
  // Adds a stage (whose op is new) at `position` in `stages`, keeping producers first.
  void insert_stage(size_t position, const Stage& stage);
  // Makes `op` what `stage` computes (cache_read, cache_write, rfactor), dropping the replaced
  // op's entry unless it is the stage's origin: a freed op's address may be reused by a new one.
  void replace_op(const Stage& stage, const Operation& op);
  size_t position(const Stage& stage) const;
};
using Schedule = std::shared_ptr<ScheduleNode>;

// A stage computing `op` at root with its default loops (axes, then reduce axes).
Stage make_stage(const Operation& op);

// The default schedule: every stage at root, loops in axis order (reduce axes innermost).
Schedule create_schedule(const std::vector<Operation>& outputs);

// All operations reachable from `outputs`, each once, producers before consumers.
std::vector<Operation> topological_order(const std::vector<Operation>& outputs);

}  // namespace ptb
