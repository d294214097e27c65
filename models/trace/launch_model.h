// The CPU that launches a rank's GPU work and the GPU queue it feeds, from a profiled step.
//
// CPU clock. The CPU runs its measured timeline from the step's first operator (t0, measured
// microseconds) with two corrections: (1) time the profiler itself spent (Kineto "overhead"
// events, and its cost at each recorded operator, op_overhead.h) is removed; (2) a
// synchronizing call (cuda*Synchronize) returns when the modelled GPU has finished everything
// issued before it, instead of after its measured duration:
//   c(t)  = | [t0, t] \ overhead |                              (measured CPU work up to t)
//   m(t)  = c(t) + sum over syncs j ending by t of (w_j - (c(e_j) - c(b_j)))
//   w_j   = max(0, G_j - (c(b_j) + shift before j)),  G_j = end of the GPU work issued before b_j
//
// GPU queue (one in-order engine, as the executor runs a rank): item i is issued when its
// launch call returns (issue_i, measured; a filled op: when its operator returns) and
//   ready_i = m(issue_i) + latency_i
//   start_i = max(end_{i-1} + gap_i, ready_i),  start_0 = ready_0,  end_i = start_i + seconds_i
// latency_i (launch return -> start on an idle GPU) and gap_i (GPU-side gap between queued
// kernels) are measured per kernel in the trace where it shows them, else their medians.
// The step ends at max(end_last, m(t_end)), t_end the end of the step's last operator on the
// CPU. Idle before item i is start_i - end_{i-1}: up to gap_i of it is the GPU's own gap, the
// rest waits for the CPU (launch-bound).
#pragma once

#include <vector>

#include "models/trace/kineto_events.h"

namespace ct::trace {

struct LaunchItem {
  double issue_us = 0;   // measured CPU time the launch call (or the filled op) returned
  double seconds = 0;    // kernel duration
  double gap_s = 0;      // GPU-side gap after the previous kernel when queued
  double latency_s = 0;  // launch return -> start on an idle GPU
};

struct CpuTimeline {
  double start_us = 0, end_us = 0;              // the step's first and last operator on the CPU
  std::vector<kineto::Interval> overhead;       // profiler work, removed (may overlap)
  std::vector<kineto::Interval> syncs;          // synchronizing calls
};

struct LaunchSchedule {
  std::vector<double> start_s;      // per item, from the step start
  double step_s = 0;
  double gpu_gap_idle_s = 0;        // idle the GPU's own inter-kernel gaps explain
  double launch_bound_idle_s = 0;   // idle waiting for the CPU (includes the time before the first launch)
  double before_first_launch_s = 0; // start of the first item
  double after_last_kernel_s = 0;   // CPU time after the GPU finished (step_s - end_last)
  double overhead_removed_s = 0;    // profiler overhead inside the step, removed
  double sync_wait_s = 0;           // modelled CPU waits at synchronizing calls
};

// Items in issue order (non-decreasing issue_us expected; a later one issued earlier is
// treated as issued with its predecessor).
LaunchSchedule schedule_launches(const std::vector<LaunchItem>& items, const CpuTimeline& cpu);

}  // namespace ct::trace
