// Scans (TVM's te.scan): a recurrence along the first axis. Output k at time t is init[k][t] for
// t below the init's extent, else the update's value, which reads the outputs at earlier times
// through the state placeholders.
//
// A scan is a compute whose axes are the update's and whose body is the update's body behind a
// test of t against the init's extent; its reads of the state placeholders are turned into reads
// of the scan itself when its stage's bodies are formed (resolve_scan_state), which an immutable
// node cannot hold (it would own itself). Lowering then runs the time loop, outermost and serial,
// around the element updates, and a schedule of the update (s[update]) is the scan's stage.
#pragma once

#include <string>
#include <vector>

#include "te/operation.h"

namespace ptb {

struct ScanOpNode : ComputeOpNode {
  ScanOpNode(std::string name, std::vector<IterVar> axis, std::vector<Expr> body,
             std::vector<Expr> shape, Expr init_extent, std::vector<Tensor> state,
             std::vector<Operation> update_ops)
      : ComputeOpNode(std::move(name), std::move(axis), {}, std::move(body), std::move(shape)),
        init_extent(std::move(init_extent)),
        state_placeholder(std::move(state)),
        update_ops(std::move(update_ops)) {}
  // The body's reads, without the state placeholders (they stand for the scan itself).
  std::vector<Tensor> input_tensors() const override;
  const IterVar& scan_axis() const { return axis.front(); }

  const Expr init_extent;                       // times [0, init_extent) come from the inits
  const std::vector<Tensor> state_placeholder;  // one per output
  const std::vector<Operation> update_ops;      // the updates' operations (scheduled as the scan)
};

// The scan `op` is, or nullptr.
const ScanOpNode* as_scan(const Operation& op);

// Builds a scan. Each update is an output of a compute (without reduction) shaped like its state
// placeholder; each init is shaped like it except along the first axis. ValueError/TypeError
// naming the argument otherwise.
Operation make_scan(const std::string& name, const std::vector<Tensor>& init,
                    const std::vector<Tensor>& update, const std::vector<Tensor>& state);

// A copy of `scan` computing `body` instead (same axes, init, states and updates): cache_read
// redirects a scan's reads through it, and the stage's loops stay valid.
Operation scan_with_body(const ScanOpNode& scan, std::vector<Expr> body);

// `body` with the reads of `scan`'s state placeholders turned into reads of `self` (the scan).
Expr resolve_scan_state(const ScanOpNode& scan, const Operation& self, const Expr& body);

}  // namespace ptb
