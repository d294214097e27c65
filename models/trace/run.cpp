// Runs an imported trace program: one Simulation, the chosen network backend on the cluster,
// the NCCL-like collective engine and replay::CommAdapter, as replay::simulate_step does.
// Compute slowdown while communication runs: channels / SM count (at most 0.5), as there.
// Step time: the latest rank's end of the last step minus that of the step before (0 for a
// one-step program), as there.
#include <algorithm>
#include <memory>
#include <stdexcept>

#include "models/collective/collective.h"
#include "models/replay/comm_adapter.h"
#include "models/replay/step_model.h"
#include "models/trace/trace_import.h"
#include "sim/simulation.h"

namespace ct::trace {

TraceRunResult run_trace_program(const replay::StepProgram& program, const network::ClusterSpec& cluster_spec,
                                 const std::string& network_mode, const TraceRunOptions& options) {
  const network::Cluster cluster(cluster_spec);
  int needed = 0;
  for (const auto& r : program.ranks) needed = std::max(needed, r.gpu + 1);
  if (needed > cluster.gpu_count()) {
    throw TraceError("trace.path: the trace has " + std::to_string(needed) + " ranks but the cluster has " +
                     std::to_string(cluster.gpu_count()) + " GPUs");
  }
  sim::Simulation sim(options.seed);
  std::unique_ptr<network::Network> net =
      network::make_network(network_mode, sim, cluster, options.network, options.packet);
  collective::CollectiveEngine engine(sim, *net, cluster, options.collectives);
  replay::CommAdapter comm(*net, engine);
  replay::ExecutorOptions exec;
  exec.comm_slowdown =
      std::min(0.5, static_cast<double>(engine.channels()) / std::max(1, cluster.node().gpu.sm_count));
  exec.trace = options.trace;
  exec.timeline = options.timeline;
  if (!options.trace_gpus.empty()) {
    try {
      exec.traced = replay::traced_gpus(program, options.trace_gpus);
    } catch (const std::invalid_argument& e) {
      throw TraceError(e.what());
    }
  } else {
    exec.traced.assign(program.ranks.size(), 0);
    for (size_t r = 0; r < program.ranks.size() && static_cast<int>(r) < options.trace_ranks; ++r)
      exec.traced[r] = 1;
  }
  exec.busy_bucket_s = options.busy_bucket_s;
  TraceRunResult out;
  out.execution = replay::execute(program, sim, comm, exec);
  if (out.execution.stall && !options.report_stall)
    throw std::runtime_error(replay::stall_message(*out.execution.stall));
  if (options.fabric_links) out.fabric_links = network::fabric_link_table(cluster, *net);
  if (network_mode == "packet") out.packet = static_cast<const network::PacketNetwork&>(*net).packet_stats();
  if (out.execution.stall) return out;
  // The last step, as replay::simulate_step counts it (one step: from time zero).
  double end_last = 0, end_prev = 0;
  for (const auto& r : out.execution.ranks) {
    const size_t k = r.step_end_s.size();
    if (k >= 1) end_last = std::max(end_last, r.step_end_s[k - 1]);
    if (k >= 2) end_prev = std::max(end_prev, r.step_end_s[k - 2]);
  }
  out.step_time_s = end_last - end_prev;
  return out;
}

}  // namespace ct::trace
