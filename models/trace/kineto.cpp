// PyTorch profiler (Kineto) Chrome-trace JSON, gzipped or not -> one-rank replay::StepProgram.
// This is the Kineto-only path (no execution trace); with an execution trace of the same step
// the scenario runner uses import_pytorch_et (pytorch_et.h), which builds the step graph from
// the operators and models the CPU launch timeline instead of replaying measured gaps.
//
// Rules:
//   * GPU events are the complete ("X") events of category kernel, gpu_memset and gpu_memcpy
//     on one device (args.device; KinetoOptions::device, or the only one present).
//   * The step: when the trace has ProfilerStep#N annotations (CPU), the GPU events launched
//     (cuda_runtime/cuda_driver event with the same args.correlation) inside ProfilerStep#
//     KinetoOptions::step, or else inside the last one that launched GPU work (a trailing empty
//     one is skipped); otherwise every GPU event of the trace (a profile of one step). The
//     step's period starts no earlier than the previous step's last GPU end: a copy launched
//     early that ran beside the previous step's compute is replayed only from there
//     (KinetoStats::before_step_s), so the replay is the step's period, not the time since that
//     copy.
//   * Order and duration: events sorted by start time, each one compute instruction on the
//     compute stream (the executor runs them in order) of the part of its measured interval
//     beyond the union of the intervals before it: seconds = max(0, end - max(start, frontier)),
//     frontier = the latest end so far. Events of one stream run for their measured duration;
//     an event that ran beside another stream's keeps that measured overlap (its concurrency
//     with the other streams is replayed as measured, not re-simulated), so the replayed busy
//     time is the union of the measured intervals. The overlap is KinetoStats::overlap_s.
//   * Idle: with keep_idle_gaps, each interval in which no GPU event ran between the first
//     start and the last end becomes an idle instruction (trace_import.h) of that length, so
//     the replayed step equals the trace's GPU span; without, the replay is the GPU-busy time.
//   * Category: optimizer for events that start inside a GPU annotation named
//     "Optimizer.step*"; backward for events launched from the autograd thread (the CPU
//     thread that runs autograd::engine::evaluate_function ops); forward otherwise.
//   * NCCL kernels (name contains "nccl", any case) keep their measured duration and count as
//     exposed communication (tp_seconds = seconds): a one-rank program has no peers to run the
//     collective with.
//   * KinetoOptions::execution_trace is only checked here (readable JSON with "nodes").
#include <algorithm>
#include <cctype>
#include <set>

#include "models/trace/et_graph.h"
#include "models/trace/kineto_events.h"
#include "models/trace/program_build.h"
#include "models/trace/trace_import.h"

namespace ct::trace {
namespace {

using replay::Category;
using replay::Instr;
using replay::InstrKind;
using replay::Stream;

constexpr const char* kKey = "trace.path";

}  // namespace

replay::StepProgram import_kineto(const std::string& trace_path, const KinetoOptions& options,
                                  KinetoStats* stats) {
  const kineto::KinetoTrace trace = kineto::read_kineto(trace_path, kKey);
  const kineto::StepWindow window =
      kineto::step_window(trace, options.device, options.step, trace_path, kKey);
  const std::vector<kineto::GpuEvent>& gpu = window.events;
  const kineto::PhaseOf phase_of(trace);

  KinetoStats st;
  st.profiler_step = window.profiler_step;
  st.profiler_steps = window.profiler_steps;
  st.empty_steps = window.empty_steps;
  replay::RankProgram rank;
  rank.gpu = 0;
  std::set<int64_t> streams;
  double last_end = gpu.front().ts;
  for (const kineto::GpuEvent& g : gpu) last_end = std::max(last_end, g.ts + g.dur);
  // The period starts at the first event, or at the previous step's last GPU end when this
  // step's first events ran beside it (never after this step's own last end).
  const double t0 = std::min(std::max(gpu.front().ts, window.previous_end), last_end);
  double frontier = t0;  // latest end so far
  for (const kineto::GpuEvent& g : gpu) {
    const double end = g.ts + g.dur;
    if (g.ts < t0) st.before_step_s += (std::min(end, t0) - g.ts) * 1e-6;
    if (g.ts > frontier) {
      const double gap = (g.ts - frontier) * 1e-6;
      st.idle_s += gap;
      if (options.keep_idle_gaps) {
        rank.instrs.push_back(compute_instr(gap, Category::step_end));
      }
    } else if (g.ts >= t0) {
      st.overlap_s += (std::min(frontier, end) - g.ts) * 1e-6;
    }
    const double beyond = std::max(0.0, end - std::max(frontier, g.ts));
    frontier = std::max(frontier, end);
    streams.insert(g.stream);
    const kineto::Phase phase = phase_of(g);
    Instr in = compute_instr(beyond * 1e-6, phase_category(phase));
    (phase == kineto::Phase::optimizer  ? st.optimizer
     : phase == kineto::Phase::backward ? st.backward
                                        : st.forward) += 1;
    if (kineto::is_nccl(g.name)) {
      in.tp_seconds = in.seconds;
      ++st.nccl_kernels;
    }
    (g.cat == "kernel" ? st.kernels : g.cat == "gpu_memset" ? st.memsets : st.memcpys) += 1;
    st.gpu_busy_s += g.dur * 1e-6;
    rank.instrs.push_back(in);
  }
  st.span_s = (frontier - t0) * 1e-6;
  if (st.span_s > kMaxStepSeconds) {
    throw TraceError(std::string(kKey) + ": " + trace_path + ": the GPU events span " +
                     std::to_string(st.span_s) + " s, more than the hour a replayed step may");
  }
  st.streams = static_cast<int>(streams.size());
  rank.instrs.push_back(compute_instr(0, Category::step_end));

  if (!options.execution_trace.empty())
    st.et_nodes = static_cast<int>(read_execution_trace(options.execution_trace).nodes.size());

  replay::StepProgram program;
  program.ranks.push_back(std::move(rank));
  program.steps = 1;
  if (stats != nullptr) *stats = st;
  return program;
}

}  // namespace ct::trace
