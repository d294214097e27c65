#include "models/replay/step_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "models/collective/nccl_tuning.h"
#include "models/replay/block_costs.h"
#include "models/replay/comm_adapter.h"
#include "models/workload/flops.h"
#include "models/workload/layout.h"
#include "sim/simulation.h"

namespace ct::replay {

StepProgram build_program(const StepInput& in) {
  const auto& node = in.cluster.node;
  const hardware::ComputeModel compute = step_compute_model(in.job, node);
  CostParams cost_params;
  cost_params.protocol_efficiency = in.network.protocol_efficiency;
  cost_params.step_latency_s = in.collectives.step_latency.seconds();
  cost_params.nic_bytes_per_s = node.nic_rate.bytes_per_second() * node.nics_per_node / node.gpus_per_node;
  cost_params.tp_comm_overlap = in.tp_comm_overlap;
  const std::vector<StageCosts> costs = block_costs(in.job, compute, node, cost_params);
  StepProgram program = build_step_program(in.job, costs, in.program);
  program.steady_ratio = compute.steady();
  return program;
}

namespace {

// E[max of n standard normals] by Blom's approximation; the inverse normal CDF by bisection on
// erfc (monotone, 60 halvings). 0 below two.
double expected_max_normal(double n) {
  if (n < 2.0) return 0.0;
  const double p = (n - 0.375) / (n + 0.25);
  double lo = -10.0, hi = 10.0;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

double straggler_delay(double compute_s, double gpus, int tensor_parallel, double microbatches,
                       double microbatch_noise_cv, double worker_offset_cv, double sync_workers) {
  const double workers = std::floor(gpus / std::max(1, tensor_parallel));
  if (workers < 2 || compute_s <= 0.0) return 0.0;
  const double m = std::max(1.0, microbatches);
  const double step_sigma =
      std::sqrt(worker_offset_cv * worker_offset_cv + microbatch_noise_cv * microbatch_noise_cv / m);
  double z_sigma = step_sigma * expected_max_normal(workers);
  if (sync_workers >= 2.0) {
    const double per_microbatch =
        std::sqrt(worker_offset_cv * worker_offset_cv + microbatch_noise_cv * microbatch_noise_cv);
    z_sigma = std::max(z_sigma, per_microbatch * expected_max_normal(std::min(sync_workers, workers)));
  }
  return compute_s * z_sigma;
}

AmaxSync amax_sync(const StepInput& in) {
  AmaxSync out;
  if (in.job.precision != "fp8") return out;
  const workload::ParallelSpec& p = in.job.parallelism;
  const bool tp_only = in.fp8_amax_reduction == "tp-cp";
  const int dp = tp_only ? 1 : p.data_parallel;
  const int64_t ranks = int64_t{p.tensor_parallel} * p.context_parallel * dp;
  if (ranks < 2) return out;
  // The NVLink domains the group of stage 0 spans, and its most members in one.
  const int domain = std::max(1, in.cluster.node.nvlink_domain_gpus());
  std::unordered_map<int64_t, int> members;
  Placement at;
  for (at.dp = 0; at.dp < dp; ++at.dp) {
    for (at.cp = 0; at.cp < p.context_parallel; ++at.cp) {
      for (at.tp = 0; at.tp < p.tensor_parallel; ++at.tp) {
        const int rank = global_rank(p, at, in.program.placement);
        const int gpu =
            in.program.gpu_of_rank.empty() ? rank : in.program.gpu_of_rank[static_cast<size_t>(rank)];
        ++members[gpu / domain];
      }
    }
  }
  int ppn = 1;
  for (const auto& [d, n] : members) ppn = std::max(ppn, n);
  const collective::TuningInput tuning = collective::node_tuning_input(
      in.cluster.node, true, static_cast<int>(ranks), static_cast<int>(members.size()), ppn);
  // One fp32 amax per FP8 tensor of the chunk's linear layers: input and weight of the four
  // GEMMs of a layer forward, their output gradients backward (TE's global amax buffers).
  const double layers = static_cast<double>(workload::layers_per_chunk(in.job));
  const double forward_us = collective::nccl_choose(tuning, 4.0 * 8.0 * layers).time_us;
  const double backward_us = collective::nccl_choose(tuning, 4.0 * 4.0 * layers).time_us;
  const double chunks =
      static_cast<double>(p.virtual_pipeline) * static_cast<double>(workload::microbatches(in.job));
  out.workers = static_cast<double>(ranks / p.tensor_parallel);
  out.syncs = 2.0 * chunks;
  out.latency_s = chunks * (forward_us + backward_us) * 1e-6;
  return out;
}

namespace {

// Power over the last step window [end_prev, end_last); GPUs outside the job (spares) idle.
void step_power(const StepInput& in, const network::Cluster& cluster, const ExecutionResult& run,
                double end_prev, double end_last, StepResult& out) {
  const auto& node = in.cluster.node;
  const double cluster_gpus = static_cast<double>(cluster.gpu_count());
  const double switches = cluster.topology().switch_count();
  out.power_bucket_s = run.busy_bucket_s;
  // busy_gpus starts at bucket busy_first_bucket, no later than the last step's window
  // (executor_options: busy_from_step).
  const size_t base = run.busy_first_bucket;
  const auto first = std::max(base, static_cast<size_t>(end_prev / run.busy_bucket_s));
  const auto last_bucket =
      std::min(base + run.busy_gpus.size(), static_cast<size_t>(end_last / run.busy_bucket_s));
  double sum = 0;
  out.power_peak_w = 0;
  out.power_min_w = 1e300;
  for (size_t k = first; k < last_bucket; ++k) {
    const double w =
        hardware::cluster_power_w(node.gpu, in.power, cluster_gpus, run.busy_gpus[k - base], switches);
    out.power_series_w.push_back(w);
    sum += w;
    out.power_peak_w = std::max(out.power_peak_w, w);
    out.power_min_w = std::min(out.power_min_w, w);
  }
  if (out.power_series_w.empty()) out.power_min_w = 0;
  out.power_mean_w = out.power_series_w.empty() ? 0 : sum / static_cast<double>(out.power_series_w.size());
}

// A link fault must start inside the simulated steps, or it would silently change nothing.
void check_faults_in_window(const StepInput& in, const ExecutionResult& run) {
  double end = 0.0;
  for (const RankResult& r : run.ranks) {
    if (!r.step_end_s.empty()) end = std::max(end, r.step_end_s.back());
  }
  for (const network::LinkFaultSpec& f : in.link_faults) {
    if (f.at.seconds() >= end) {
      throw std::invalid_argument(f.key + ".at: got " + std::to_string(f.at.seconds()) +
                                  " s, expected before the end of the simulated " +
                                  std::to_string(in.program.steps) + " step(s) at " + std::to_string(end) +
                                  " s");
    }
  }
}

// node_kill / hang faults as executor stops of every rank on the node.
std::vector<RankStop> rank_stops(const StepInput& in, const StepProgram& program) {
  std::vector<RankStop> out;
  if (!in.node_stops.empty() && program.folded)
    throw std::logic_error("simulate_step: node stops need an unfolded program (StepInput::program.fold)");
  const int per_node = in.cluster.node.gpus_per_node;
  for (const NodeStop& ns : in.node_stops) {
    const size_t before = out.size();
    for (size_t r = 0; r < program.ranks.size(); ++r) {
      if (program.ranks[r].gpu / per_node == ns.node)
        out.push_back(
            {static_cast<int32_t>(r), ns.at_s, ns.crash, static_cast<int32_t>(&ns - in.node_stops.data())});
    }
    if (out.size() == before) {
      throw std::invalid_argument(ns.key + ".node: got " + std::to_string(ns.node) +
                                  ", expected a node that runs ranks of the job (the job uses " +
                                  std::to_string(workload::gpus_used(in.job.parallelism)) + " GPUs, " +
                                  std::to_string(per_node) + " per node)");
    }
  }
  return out;
}

// How the job notices that it stopped: a crash by the heartbeat (at + detection), anything
// that leaves a collective or receive waiting by the watchdog (entry + collective timeout);
// the first to fire. With no rank left waiting, the survivors reach the next step's first
// collective once their work is done, and the watchdog counts from there.
JobFailure job_failure(const StepInput& in, const std::vector<RankStop>& stops, Stall stall) {
  JobFailure f;
  std::vector<bool> acted(in.node_stops.size(), false);
  for (size_t s = 0; s < stops.size(); ++s) {
    if (stall.stop_acted[s]) acted[static_cast<size_t>(stops[s].node_stop)] = true;
  }
  for (size_t k = 0; k < in.node_stops.size(); ++k) {
    const NodeStop& ns = in.node_stops[k];
    if (!acted[k]) {
      throw std::invalid_argument(ns.key + ".at: got " + std::to_string(ns.at_s) +
                                  " s, expected before node " + std::to_string(ns.node) +
                                  " finished its work of the simulated " + std::to_string(in.program.steps) +
                                  " step(s)");
    }
  }
  f.first_wait_s = std::isfinite(stall.first_wait_s) ? stall.first_wait_s : stall.last_progress_s;
  const double watchdog = f.first_wait_s + in.collective_timeout_s;
  double heartbeat = std::numeric_limits<double>::infinity();
  for (const NodeStop& ns : in.node_stops) {
    if (ns.crash) heartbeat = std::min(heartbeat, ns.at_s + in.detection_s);
  }
  f.detected_by =
      heartbeat <= watchdog ? JobFailure::DetectedBy::heartbeat : JobFailure::DetectedBy::collective_timeout;
  f.failed_at_s = std::min(heartbeat, watchdog);
  f.stall = std::move(stall);
  return f;
}

// What the network saw over the run: link loads, the busiest links, packet-mode statistics
// and (when asked) every link direction.
// A rail-folded run (rail_share not empty) loads a shared link with the simulated legs and their
// siblings (every rail's bytes); links of the other rails alone (share 0) carried nothing and
// stand for no figure: left out.
void network_figures(const StepInput& in, const network::Cluster& cluster, const network::Network& net,
                     const std::vector<double>& rail_share, StepResult& out) {
  if (in.network_mode == "packet")
    out.packet = static_cast<const network::PacketNetwork&>(net).packet_stats();
  if (!in.network.link_statistics) return;  // nothing was counted (a layout sweep reads none)
  out.max_link_utilization = net.max_link_utilization();
  for (const auto& l : net.top_links(10)) {
    const double share = rail_share.empty() ? 1.0 : rail_share[static_cast<size_t>(l.resource)];
    if (share > 0) out.top_links.push_back({l.name, l.utilization, l.bytes});
  }
  if (in.fabric_links) {
    out.fabric_links = network::fabric_link_table(cluster, net);
    if (!rail_share.empty()) {  // the simulated rails' links and the shared ones (above)
      network::FabricLinkTable kept;
      const network::FabricLinkTable& t = out.fabric_links;
      for (size_t i = 0; i < t.size(); ++i) {
        const double share = rail_share[static_cast<size_t>(t.link[i])];
        if (share <= 0) continue;
        kept.link.push_back(t.link[i]);
        kept.src_tier.push_back(t.src_tier[i]);
        kept.src_index.push_back(t.src_index[i]);
        kept.dst_tier.push_back(t.dst_tier[i]);
        kept.dst_index.push_back(t.dst_index[i]);
        kept.plane.push_back(t.plane[i]);
        kept.bytes.push_back(t.bytes[i]);
        kept.utilization.push_back(t.utilization[i]);
      }
      out.fabric_links = std::move(kept);
    }
  }
}

// The executor's options for this step: SM share of communication, per-rank speeds
// (gpu_throttle, variability), jitter, folding weights and the trace outputs.
ExecutorOptions executor_options(const StepInput& in, const StepProgram& program, int channels) {
  ExecutorOptions exec;
  const auto& node = in.cluster.node;
  exec.comm_slowdown = std::min(0.5, static_cast<double>(channels) / std::max(1, node.gpu.sm_count));
  exec.rank_speed.assign(program.ranks.size(), 1.0);
  if (!in.gpu_speed.empty()) {
    std::unordered_map<int, double> speed_of_gpu;  // the last entry for a GPU wins
    for (const auto& [gpu, factor] : in.gpu_speed) speed_of_gpu[gpu] = factor;
    for (size_t r = 0; r < program.ranks.size(); ++r) {
      const auto it = speed_of_gpu.find(program.ranks[r].gpu);
      if (it != speed_of_gpu.end()) exec.rank_speed[r] = it->second;
    }
  }
  exec.kernel_jitter_cv = in.kernel_jitter_cv;
  exec.jitter_seed = in.seed;
  // A folded rank stands for every GPU of its equivalence class.
  const double gpus_used = static_cast<double>(workload::gpus_used(in.job.parallelism));
  exec.rank_weight.assign(program.ranks.size(), gpus_used / static_cast<double>(program.ranks.size()));
  exec.trace = in.trace;
  exec.timeline = in.timeline;
  // The step's power reads the last step's window; a trace's power track reads the whole run.
  exec.busy_from_step = in.trace != nullptr ? 0 : program.steps - 1;
  exec.track_busy = in.power_series || in.trace != nullptr;
  // Traced ranks matter only to a trace or a timeline; without either every rank is untraced.
  if (in.trace != nullptr || in.timeline != nullptr) exec.traced = traced_ranks(in, program);
  return exec;
}

// Counter tracks of the traced GPUs' NIC load (flow and packet mode, where a link's load is
// resolved in time): every `interval`, the bits each NIC's uplinks and downlinks carried since
// the previous sample, in Gb/s. It only reads link statistics, so the run is the same with or
// without it; it stops when nothing else is pending, and its own events are not counted.
class NicSampler final : public sim::EventHandler {
 public:
  NicSampler(sim::Simulation& sim, const network::Network& net, const network::Cluster& cluster,
             sim::TraceWriter& trace, const std::vector<int>& gpus, double interval_s)
      : sim_(sim), net_(net), trace_(trace), interval_(sim::Duration::from_seconds(interval_s)) {
    const auto& topo = cluster.topology();
    for (const int gpu : gpus) {
      Nic n;
      n.gpu = gpu;
      for (const topology::LinkDir d : topo.out_links(cluster.nic_of(gpu))) {
        n.up.push_back(d);
        n.down.push_back(d ^ 1);
      }
      nics_.push_back(std::move(n));
    }
    sim_.schedule_in(sim::Duration::zero(), *this);
  }

  void on_event(uint64_t /*tag*/) override {
    ++fired_;
    const double dt = (sim_.now() - last_).seconds();
    for (Nic& n : nics_) {
      const double up = bytes(n.up), down = bytes(n.down);
      if (dt > 0) {
        trace_.counter(n.gpu, "NIC Gb/s", sim_.now(),
                       {{"tx", 8e-9 * (up - n.up_bytes) / dt}, {"rx", 8e-9 * (down - n.down_bytes) / dt}});
      }
      n.up_bytes = up;
      n.down_bytes = down;
    }
    last_ = sim_.now();
    if (sim_.pending() > 0) sim_.schedule_in(interval_, *this);
  }

  [[nodiscard]] uint64_t fired() const { return fired_; }

 private:
  struct Nic {
    int gpu = 0;
    std::vector<int32_t> up, down;
    double up_bytes = 0, down_bytes = 0;
  };
  double bytes(const std::vector<int32_t>& links) const {
    double b = 0;
    for (const int32_t r : links) b += net_.link_stats(r).bytes;
    return b;
  }
  sim::Simulation& sim_;
  const network::Network& net_;
  sim::TraceWriter& trace_;
  sim::Duration interval_;
  sim::Time last_ = sim::Time::zero();
  std::vector<Nic> nics_;
  uint64_t fired_ = 0;
};

// The cluster's IT power as a counter track of its own ("cluster", pid = the GPU count, which
// no GPU has), in trace_counter_s buckets over the whole run.
void trace_power(const StepInput& in, const network::Cluster& cluster, const ExecutionResult& run) {
  const int pid = cluster.gpu_count();
  in.trace->process_name(pid, "cluster");
  const double cluster_gpus = static_cast<double>(cluster.gpu_count());
  const double switches = cluster.topology().switch_count();
  const auto per = static_cast<size_t>(std::max(1.0, std::round(in.trace_counter_s / run.busy_bucket_s)));
  for (size_t k = 0; k < run.busy_gpus.size(); k += per) {
    const size_t end = std::min(run.busy_gpus.size(), k + per);
    double busy = 0;
    for (size_t j = k; j < end; ++j) busy += run.busy_gpus[j];
    busy /= static_cast<double>(end - k);
    const double w = hardware::cluster_power_w(in.cluster.node.gpu, in.power, cluster_gpus, busy, switches);
    in.trace->counter(
        pid, "IT power MW",
        sim::Time::zero() + sim::Duration::from_seconds(run.busy_bucket_s * static_cast<double>(k)),
        1e-6 * w);
  }
}

}  // namespace

std::vector<uint8_t> traced_gpus(const StepProgram& program, const std::vector<int>& gpus) {
  std::vector<uint8_t> traced(program.ranks.size(), 0);
  std::unordered_map<int, size_t> rank_of_gpu;
  for (size_t r = 0; r < program.ranks.size(); ++r) rank_of_gpu[program.ranks[r].gpu] = r;
  std::string missing;
  for (const int gpu : gpus) {
    const auto it = rank_of_gpu.find(gpu);
    if (it != rank_of_gpu.end()) {
      traced[it->second] = 1;
    } else {
      missing += (missing.empty() ? "" : ", ") + std::to_string(gpu);
    }
  }
  if (!missing.empty()) {
    std::string have;
    for (size_t r = 0; r < program.ranks.size() && r < 12; ++r)
      have += (r ? ", " : "") + std::to_string(program.ranks[r].gpu);
    if (program.ranks.size() > 12) have += ", ...";
    throw std::invalid_argument(
        "trace_gpus: got GPU " + missing + ", expected GPUs the run simulates (" + have + ")" +
        (program.rail_fold > 1 ? "; network.fold_rails auto runs the first GPU of every tensor-parallel "
                                 "group only: set it to no to trace any GPU of the job"
         : program.folded      ? "; network.mode analytical folds identical ranks into one per stage: use "
                                 "network.mode flow to trace any GPU of the job"
                               : ""));
  }
  return traced;
}

std::vector<uint8_t> traced_ranks(const StepInput& in, const StepProgram& program) {
  if (!in.trace_gpus.empty()) return traced_gpus(program, in.trace_gpus);
  std::vector<uint8_t> traced(program.ranks.size(), 0);
  const auto& par = in.job.parallelism;
  std::unordered_map<int, int> rank_of_phys;
  const auto& phys = in.program.gpu_of_rank;
  for (size_t k = 0; k < phys.size(); ++k) rank_of_phys[phys[k]] = static_cast<int>(k);
  for (size_t r = 0; r < program.ranks.size(); ++r) {
    const int gpu = program.ranks[r].gpu;
    const auto it = rank_of_phys.find(gpu);
    const int rank = phys.empty() || it == rank_of_phys.end() ? gpu : it->second;
    const Placement at = placement_of(par, rank, in.program.placement);
    traced[r] = at.dp == 0 && at.cp == 0 && (at.tp == 0 || at.pp == 0) ? 1 : 0;
  }
  return traced;
}

namespace {
// The parameters without the caches of a layout sweep's shared cluster unless this run uses
// that cluster (one with link faults builds its own).
network::NetworkParams shared_only(network::NetworkParams p, bool shared) {
  if (!shared) {
    p.shared_chains = nullptr;
    p.shared_capacities = nullptr;
  }
  return p;
}
collective::CollectiveParams shared_only(collective::CollectiveParams p, bool shared) {
  if (!shared) p.shared_plans = nullptr;
  return p;
}

// Rail fold (ProgramOptions::fold_rails): which rails the simulated ranks use and the shared
// links their legs load with their siblings' routes (net_params), returned as rail_shares'
// shares; empty, with `program` rebuilt with every rank, when the fabric gives no rails to go by
// (or the program is not rail-folded).
std::vector<double> fold_rails(const StepInput& in, const network::Cluster& cluster, StepProgram& program,
                               network::NetworkParams& net_params) {
  std::vector<double> rail_share;
  if (program.rail_fold <= 1) return rail_share;
  std::vector<bool> simulated(static_cast<size_t>(cluster.nics_per_node()), false);
  for (const RankProgram& r : program.ranks) simulated[static_cast<size_t>(cluster.rail_of(r.gpu))] = true;
  if (!network::rail_shares(cluster, simulated, rail_share)) {
    StepInput whole = in;
    whole.program.fold_rails = false;
    program = build_program(whole);
    return {};
  }
  auto shared_links = std::make_shared<std::vector<uint8_t>>(rail_share.size(), 0);
  for (size_t k = 0; k < rail_share.size(); ++k) (*shared_links)[k] = rail_share[k] > 0 && rail_share[k] < 1;
  net_params.rail_fold = program.rail_fold;
  net_params.rail_shared_links = std::move(shared_links);
  net_params.shared_chains = nullptr;  // routed with siblings
  return rail_share;
}

}  // namespace

StepResult simulate_step(const StepInput& in) {
  const auto& node = in.cluster.node;
  StepProgram program = build_program(in);
  sim::Simulation sim(in.seed);
  // Link faults change the topology during the run: they always get a cluster of their own.
  std::optional<network::Cluster> own;
  if (in.shared_cluster == nullptr || !in.link_faults.empty()) own.emplace(in.cluster);
  const network::Cluster& cluster = own ? *own : *in.shared_cluster;
  // What other runs over the shared cluster routed and planned is only theirs to share.
  const bool shared = !own;
  network::NetworkParams net_params = shared_only(in.network, shared);
  std::vector<double> rail_share = fold_rails(in, cluster, program, net_params);
  std::unique_ptr<network::Network> net =
      network::make_network(in.network_mode, sim, cluster, net_params, in.packet);
  std::unique_ptr<network::CapacityFaults> faults;
  if (!in.link_faults.empty()) {
    faults =
        std::make_unique<network::CapacityFaults>(sim, *net, *own, network::resolve(*own, in.link_faults));
  }
  // A rail-folded run's plans carry its legs' siblings: its own.
  collective::CollectiveEngine engine(sim, *net, cluster,
                                      shared_only(in.collectives, shared && rail_share.empty()));
  CommAdapter comm(*net, engine);

  ExecutorOptions exec = executor_options(in, program, engine.channels());
  exec.stop_when_done = faults != nullptr;
  exec.stops = rank_stops(in, program);
  std::unique_ptr<NicSampler> sampler;
  if (in.trace != nullptr && in.network_mode != "analytical") {
    std::vector<int> gpus;
    for (size_t r = 0; r < program.ranks.size(); ++r)
      if (exec.traced[r] != 0) gpus.push_back(program.ranks[r].gpu);
    sampler = std::make_unique<NicSampler>(sim, *net, cluster, *in.trace, gpus, in.trace_counter_s);
  }
  ExecutionResult run = execute(program, sim, comm, exec);
  if (in.trace != nullptr) trace_power(in, cluster, run);

  StepResult out;
  out.events = run.events - (sampler ? sampler->fired() : 0);
  out.simulated_ranks = program.ranks.size();
  out.folded = program.folded;
  out.rail_fold = program.rail_fold;
  out.steady_ratio = program.steady_ratio;
  out.gpus = static_cast<int>(workload::gpus_used(in.job.parallelism));
  if (!run.stall && !in.node_stops.empty()) {  // every stop came after the work
    run.stall = Stall{};
    run.stall->stop_acted.assign(exec.stops.size(), false);
  }
  if (run.comm_error) {  // a NIC lost every path: the communicator aborted the job
    JobFailure f;
    // A transfer that starts on a NIC without a path retransmits into the void for one
    // retransmission timeout before its queue pair errors out.
    f.failed_at_s = run.comm_error->time_s + (run.comm_error->at_start && !in.link_faults.empty()
                                                  ? in.link_faults.front().retransmit_timeout.seconds()
                                                  : 0.0);
    f.detected_by = JobFailure::DetectedBy::communicator_error;
    f.first_wait_s = f.failed_at_s;
    f.comm_error = run.comm_error;
    f.stall = run.stall ? std::move(*run.stall) : Stall{};
    out.failure = std::move(f);
  } else if (run.stall) {
    if (in.node_stops.empty()) throw std::runtime_error(stall_message(*run.stall));
    out.failure = job_failure(in, exec.stops, std::move(*run.stall));
  }
  if (faults != nullptr) out.transfers = net->transfer_counters();
  if (out.failure) {
    for (const auto& r : run.ranks) out.rank_gpu.push_back(r.gpu);
    network_figures(in, cluster, *net, rail_share, out);
    return out;
  }
  if (faults != nullptr) check_faults_in_window(in, run);
  const size_t last = static_cast<size_t>(program.steps - 1);
  double end_last = 0, end_prev = 0;
  for (const auto& r : run.ranks) {
    end_last = std::max(end_last, r.step_end_s[last]);
    if (last > 0) end_prev = std::max(end_prev, r.step_end_s[last - 1]);
  }
  out.step_time_s = end_last - end_prev;
  out.last_step_start_s = end_prev;
  for (const auto& r : run.ranks) {
    out.breakdown += r.last_step;
    out.rank_gpu.push_back(r.gpu);
    out.rank_step_s.push_back(r.step_end_s[last] - (last > 0 ? r.step_end_s[last - 1] : 0.0));
    out.rank_compute_s.push_back(r.last_step_compute_s);
  }
  const double n = static_cast<double>(run.ranks.size());
  TimeBreakdown& b = out.breakdown;
  for (double* v : {&b.compute_s, &b.exposed_tp_comm_s, &b.exposed_pp_comm_s, &b.exposed_dp_comm_s,
                    &b.bubble_s, &b.optimizer_s, &b.other_s}) {
    *v /= n;
  }
  // Ranks that finish before the slowest wait for it at the next step's first collective or
  // receive; that wait is already inside their window. What is left is the window mismatch.
  b.other_s += std::max(0.0, out.step_time_s - b.total());
  double critical_compute = 0.0;
  for (const double c : out.rank_compute_s) critical_compute = std::max(critical_compute, c);
  const AmaxSync sync = amax_sync(in);
  b.straggler_s =
      straggler_delay(critical_compute, static_cast<double>(workload::gpus_used(in.job.parallelism)),
                      in.job.parallelism.tensor_parallel, static_cast<double>(workload::microbatches(in.job)),
                      in.microbatch_noise_cv, in.worker_offset_cv, sync.workers);
  // The amax all-reduces sit on each chunk's compute stream: added like the waits, exposed.
  b.exposed_dp_comm_s += sync.latency_s;
  out.step_time_s += b.straggler_s + sync.latency_s;
  out.collectives = run.collectives;

  const double peak = node.gpu.bf16_dense_flops;
  const double gpus = out.gpus;
  const double model_flops = workload::model_flops_per_iteration(in.job);
  const double hardware_flops = workload::hardware_flops_per_iteration(in.job);
  out.mfu = model_flops / (out.step_time_s * gpus * peak);
  out.hfu = hardware_flops / (out.step_time_s * gpus * peak);
  out.tflops_per_gpu = model_flops / (out.step_time_s * gpus) / 1e12;
  out.tokens_per_s =
      static_cast<double>(in.job.global_batch_size * in.job.model.seq_length) / out.step_time_s;
  out.tokens_per_s_per_gpu = out.tokens_per_s / gpus;
  step_power(in, cluster, run, end_prev, end_last, out);
  network_figures(in, cluster, *net, rail_share, out);
  return out;
}

}  // namespace ct::replay
