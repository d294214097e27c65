#include "models/scenario/cost_estimate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "models/replay/step_program.h"
#include "models/scenario/model_configs.h"
#include "models/scenario/runner.h"
#include "models/scenario/traffic_flows.h"
#include "models/workload/layout.h"
#include "models/workload/memory.h"

namespace ct::scenario {
namespace {

// Fitted on measured runs of this build (docs/estimates.md, tools/estimate_check.py), 2 cores.
constexpr double kBaseSeconds = 0.25;            // process start, imports, report
constexpr double kSetupSecondsPerNode = 3.4e-4;  // topology, routing, cluster tables, campaign
constexpr double kBaseBytes = 150e6;             // interpreter, module, tables
constexpr double kFoldedEventsPerInstr = 0.75;   // analytical: events per folded instruction
constexpr double kAnalyticalEventsPerSecond = 2e5;
constexpr double kFlowEventsPerInstr = 1.1;  // flow: compute + transfer + solver events
// The flow executor's rate falls with the ranks in flight (its max-min solver's affected sets
// grow with them; issue 23). Measured 2026-12-06 (after the executor and share-sort changes,
// docs/performance.md; whole process, setup subtracted): 2.9e6 events/s at 1,024 GPUs, 5.9e5
// at 10,240, 1.67e5 at 102,400, so rate = 5.93e5 x (ranks / 10,240)^-0.55 (the two larger
// exactly; 1,024 GPUs then estimated 1.3x slow), at most 3e6. Runs vary by 20-40% on this
// machine, and machines of this kind by up to 2x between sessions.
constexpr double kFlowEventsPerSecondAt10K = 5.93e5;
constexpr double kFlowRateExponent = 0.55;
constexpr double kFlowEventsPerSecondMax = 3e6;
double flow_events_per_s(double ranks) {
  return std::min(kFlowEventsPerSecondMax,
                  kFlowEventsPerSecondAt10K * std::pow(std::max(1.0, ranks) / 10240.0, -kFlowRateExponent));
}
// A traffic study's flows (no step program): the rate measured for them on 2026-12-02.
constexpr double kTrafficFlowEventsPerSecond = 5.56e5;
// The packet engine's rate falls with the GPUs sending at once (more ports, flows and packets
// in flight): measured 7.5e6 events/s on a 64-GPU training slice, 2.0e6 and 1.25e6 on
// permutations of 64 and 512 GPUs (every GPU sending at once), so rate = r0 / (1 + gpus / R)
// with R = 683 and r0 per kind. At 10,240 GPUs a 64 MiB permutation (1.3e9 events) is
// estimated at about 3 hours (issue 20 measured the same run at about 31 hours: an
// under-estimate, but far above the one-hour refusal).
constexpr double kPacketEventsPerSecond = 8.2e6;         // training steps
constexpr double kPacketTrafficEventsPerSecond = 2.2e6;  // traffic studies
constexpr double kPacketGpusHalfRate = 683.0;
constexpr double kPacketEvents = 8.0;           // per packet: hops, ACK, pacing, CNP (measured 7.4-9.3)
constexpr double kTrafficFlowEvents = 6.0;      // flow mode: start, reschedule, finish, ...
constexpr double kTraceBytesPerSecond = 14e6;   // JSON import (Kineto + execution trace)
constexpr double kTraceBytesPerEvent = 4500.0;  // replayed events per byte of profiler JSON
constexpr double kGzipRatio = 14.0;             // inflated / compressed, profiler JSON
constexpr double kTraceMemoryPerByte = 6.0;     // tools/trace_import_rss.py: 5.9x

double file_bytes(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  double total = 0;
  if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec)) {
      std::error_code e2;
      if (e.is_regular_file(e2)) {
        const double b = static_cast<double>(e.file_size(e2));
        total += e.path().extension() == ".gz" ? b * kGzipRatio : b;
      }
    }
  } else if (fs::is_regular_file(path, ec)) {
    const double b = static_cast<double>(fs::file_size(path, ec));
    total = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0 ? b * kGzipRatio : b;
  }
  return total;
}

// Network bytes one training step moves over the fabric, all ranks: data-parallel ring
// reduce-scatter + all-gather of each rank's gradients (bf16), and pipeline activations.
double step_fabric_bytes(const workload::JobSpec& job) {
  const auto& p = job.parallelism;
  const double dp = static_cast<double>(p.data_parallel) * p.context_parallel;
  const double replicas_of_stage = static_cast<double>(p.tensor_parallel) * dp;  // ranks holding one stage
  double dp_bytes = 0;
  for (int s = 0; s < p.pipeline_parallel; ++s) {
    const auto sp = workload::stage_parameters(job, s);  // one rank's share
    if (dp > 1)
      dp_bytes += 2.0 * (dp - 1) / dp * static_cast<double>(sp.dense + sp.expert) * 2.0 * replicas_of_stage;
  }
  const double ranks = static_cast<double>(workload::gpus_used(p));
  const double act = static_cast<double>(job.micro_batch_size) * static_cast<double>(job.model.seq_length) *
                     static_cast<double>(job.model.hidden) * 2.0 / p.tensor_parallel;
  const double pp_bytes = p.pipeline_parallel > 1 ? 2.0 * static_cast<double>(workload::microbatches(job)) *
                                                        p.virtual_pipeline * act * ranks
                                                  : 0.0;
  return dp_bytes + pp_bytes;
}

}  // namespace

CostEstimate estimate_cost(const Config& c) {
  CostEstimate e;
  const double nodes = c.cluster.nodes;
  double setup = kBaseSeconds + kSetupSecondsPerNode * nodes;
  e.memory_bytes = kBaseBytes;
  if (c.has("training_job")) {
    const replay::StepInput in = step_input(c);
    const double instrs = replay::estimate_program_instructions(in.job, in.program);
    if (in.program.fold) {
      e.events = kFoldedEventsPerInstr * instrs;
      e.wall_s = setup + e.events / kAnalyticalEventsPerSecond;
      e.basis = std::to_string(static_cast<int64_t>(instrs)) + " instructions (replicas folded)";
    } else {
      e.events = kFlowEventsPerInstr * instrs;
      const auto& par = in.job.parallelism;
      const bool rails = replay::folds_rails(par, in.program);
      const double ranks = static_cast<double>(workload::gpus_used(par)) / (rails ? par.tensor_parallel : 1);
      e.wall_s = setup + e.events / flow_events_per_s(ranks);
      e.basis =
          std::to_string(static_cast<int64_t>(instrs)) +
          (rails ? " instructions on one rank per tensor-parallel group" : " instructions on every rank");
      if (c.network.mode == "packet") {
        const double packets =
            step_fabric_bytes(in.job) * c.training_job.steps / static_cast<double>(c.network.mtu.n);
        const double events = packets * kPacketEvents;
        e.events += events;
        e.wall_s += events / (kPacketEventsPerSecond / (1.0 + ranks / kPacketGpusHalfRate));
        e.basis += ", " + std::to_string(static_cast<int64_t>(packets)) + " packets";
      }
    }
    e.memory_bytes += replay::estimate_program_bytes(in.job, in.program);
  } else if (c.has("traffic")) {
    const auto& t = c.traffic;
    const int gpn = c.cluster.gpus_per_node;
    const int n = (t.nodes > 0 ? t.nodes : c.cluster.nodes) * gpn;
    double flows = 0, bytes = 0;
    if (t.pattern == "collective") {
      flows = 2.0 * n * n;  // ring steps of every rank, bounded above
      bytes = 2.0 * static_cast<double>(t.size.n) * n;
    } else {
      const double share = c.cluster.nic.bps() * c.cluster.nics_per_node / std::max(1, gpn);
      for (const FlowSpec& f : generate_flows(c, n, share)) {
        flows += 1;
        bytes += static_cast<double>(f.bytes);
      }
    }
    if (c.network.mode == "packet") {
      const double packets = bytes / static_cast<double>(c.network.mtu.n);
      e.events = packets * kPacketEvents;
      e.wall_s = setup + e.events / (kPacketTrafficEventsPerSecond / (1.0 + n / kPacketGpusHalfRate));
      e.basis = std::to_string(static_cast<int64_t>(flows)) + " flows, " +
                std::to_string(static_cast<int64_t>(packets)) + " packets";
    } else {
      e.events = flows * kTrafficFlowEvents;
      e.wall_s = setup + e.events / kTrafficFlowEventsPerSecond;
      e.basis = std::to_string(static_cast<int64_t>(flows)) + " flows";
    }
    e.memory_bytes += flows * 200.0;
  } else if (c.has("trace")) {
    const double bytes = file_bytes(c.trace.path) +
                         (c.trace.execution_trace.empty() ? 0 : file_bytes(c.trace.execution_trace));
    e.events = bytes / kTraceBytesPerEvent;
    e.wall_s = setup + bytes / kTraceBytesPerSecond;
    e.memory_bytes += kTraceMemoryPerByte * bytes;
    e.basis = std::to_string(static_cast<int64_t>(bytes / 1e6)) + " MB of trace JSON";
  }
  return e;
}

nlohmann::json to_json(const CostEstimate& e) {
  return {{"events", e.events}, {"memory_bytes", e.memory_bytes}, {"wall_s", e.wall_s}, {"basis", e.basis}};
}

}  // namespace ct::scenario
