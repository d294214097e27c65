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
// GPU queues: one in-order queue per CUDA stream, streams side by side. Item i on stream s_i
// is issued when its launch call returns (issue_i, measured; a filled op: when its operator
// returns) and
//   ready_i = m(issue_i) + latency_i
//   start_i = max(0, ready_i, end_{p(i)} + gap_i, end_{w(i)})   (terms of absent p(i), w(i) dropped)
//   end_i   = start_i + seconds_i
// p(i) is the item before i on s_i, w(i) an earlier item of another stream that i waited for
// in the trace (cudaStreamWaitEvent; none: -1). latency_i (launch return -> start on an idle
// stream) and gap_i (stream-side gap between queued kernels) are measured per kernel in the
// trace where it shows them, else their medians. A sync waits for every item issued before it.
// The step ends at max(max_i end_i, m(t_end)), t_end the end of the step's last operator on
// the CPU. GPU idle is the time in the step no item covers: before an item that starts a busy
// period, up to its gap_i is the GPU's own gap (not for the first item), the rest waits for the
// CPU (launch-bound). With one stream this is the single in-order queue the executor runs.
#pragma once

#include <vector>

#include "models/trace/kineto_events.h"

namespace ct::trace {

struct LaunchItem {
  double issue_us = 0;     // measured CPU time the launch call (or the filled op) returned
  double seconds = 0;      // kernel duration
  double gap_s = 0;        // GPU-side gap after the previous kernel when queued
  double latency_s = 0;    // launch return -> start on an idle GPU
  int64_t stream = 0;      // CUDA stream
  int32_t waits_for = -1;  // an earlier item of another stream it waited for, or -1
};

struct CpuTimeline {
  double start_us = 0, end_us = 0;         // the step's first and last operator on the CPU
  std::vector<kineto::Interval> overhead;  // profiler work, removed (may overlap)
  std::vector<kineto::Interval> syncs;     // synchronizing calls
};

struct LaunchSchedule {
  std::vector<double> start_s;  // per item, from the step start
  double busy_end_s = 0;        // the latest end of any item
  double step_s = 0;
  double gpu_gap_idle_s = 0;         // idle the GPU's own inter-kernel gaps explain
  double launch_bound_idle_s = 0;    // idle waiting for the CPU (includes the time before the first launch)
  double before_first_launch_s = 0;  // start of the first item
  double after_last_kernel_s = 0;    // CPU time after the GPU finished (step_s - end_last)
  double overhead_removed_s = 0;     // profiler overhead inside the step, removed
  double sync_wait_s = 0;            // modelled CPU waits at synchronizing calls
};

// Items in issue order (non-decreasing issue_us expected; a later one issued earlier is
// treated as issued with its predecessor).
LaunchSchedule schedule_launches(const std::vector<LaunchItem>& items, const CpuTimeline& cpu);

}  // namespace ct::trace
