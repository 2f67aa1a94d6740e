// The stages of a scan's recurrence (TVM's scan group): computes between a scan's state
// placeholders and its update, such as `h2h(t, i) = sum(state(t - 1, k) * W(i, k))` read by the
// update. They read earlier time steps of the scan, so they run inside its time loop: once per
// time step, after the steps they read and from the first step the update computes.
#pragma once

#include "schedule/schedule.h"
#include "te/scan.h"

namespace ptb {

// Attaches each stage of every scan's group (a stage reading a state placeholder, or reading
// such a stage) at the outermost loop of its single consumer, so the chain ends at the scan's
// time loop. Called by create_schedule; compute_at/compute_inline/compute_root override it.
void attach_scan_groups(const Schedule& sch);

// The scan stage whose time loop `stage` is computed in (through its attach chain), or nullptr.
Stage enclosing_scan(const Stage& stage);

// Whether `body` reads one of `scan`'s state placeholders.
bool reads_scan_state(const ScanOpNode& scan, const Expr& body);

}  // namespace ptb
