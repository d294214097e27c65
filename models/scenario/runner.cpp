#include "models/scenario/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

#include "models/collective/collective.h"
#include "models/collective/nccl_tuning.h"
#include "models/hardware/compute_model.h"
#include "models/replay/block_costs.h"
#include "models/replay/comm_adapter.h"
#include "models/replay/step_model.h"
#include "models/scenario/hang_report.h"
#include "models/scenario/loader.h"
#include "models/scenario/machine_memory.h"
#include "models/scenario/model_configs.h"
#include "models/scenario/power_report.h"
#include "models/scenario/reliability_report.h"
#include "models/scenario/traffic_run.h"
#include "models/trace/pytorch_et.h"
#include "models/trace/trace_import.h"
#include "models/workload/flops.h"
#include "models/workload/layer_ops.h"
#include "models/workload/layout.h"
#include "models/workload/memory.h"
#include "models/workload/parameters.h"
#include "sim/rng.h"
#include "sim/stats.h"
#include "sim/trace_writer.h"
#include "sim/units.h"

namespace ct::scenario {
namespace {

// RunOptions::tables["timeline"] from the executor's timeline, its vectors moved.
ColumnTable timeline_columns(replay::Timeline&& t) {
  return {{"gpu", std::move(t.gpu)},        {"stream", std::move(t.stream)},
          {"kind", std::move(t.kind)},      {"category", std::move(t.category)},
          {"step", std::move(t.step)},      {"start_s", std::move(t.start_s)},
          {"seconds", std::move(t.seconds)}};
}

// RunOptions::tables["fabric_links"] from the link table, its vectors moved.
ColumnTable link_columns(network::FabricLinkTable&& l) {
  return {{"link", std::move(l.link)},           {"src_tier", std::move(l.src_tier)},
          {"src_index", std::move(l.src_index)}, {"dst_tier", std::move(l.dst_tier)},
          {"dst_index", std::move(l.dst_index)}, {"plane", std::move(l.plane)},
          {"bytes", std::move(l.bytes)},         {"utilization", std::move(l.utilization)}};
}

constexpr int64_t kPacketStepGpus = 1024;  // packet-mode step replay: a slice of the cluster
constexpr uint64_t kVariabilityStream = 0x56415249ULL << 32;  // "VARI" << 32
constexpr uint64_t kPlacementStream = 0x504c4143ULL << 32;    // "PLAC" << 32

using nlohmann::json;

json stage_memory(const workload::MemoryBreakdown& m) {
  return {{"stage", m.stage},
          {"parameters", m.parameters},
          {"weights_bytes", m.weights},
          {"gradients_bytes", m.gradients},
          {"optimizer_bytes", m.optimizer},
          {"activations_bytes", m.activations},
          {"in_flight_microbatches", m.in_flight_microbatches},
          {"embedding_bytes", m.embedding_buffers},
          {"logits_loss_bytes", m.logits_buffers},
          {"temporary_bytes", m.temporary},
          {"allocated_bytes", m.allocated},
          {"reserved_bytes", m.reserved},
          {"cuda_context_bytes", m.cuda_context},
          {"nccl_bytes", m.nccl},
          {"total_bytes", m.total},
          {"margin_bytes", m.margin},
          {"allocator_at_capacity", m.allocator_at_capacity},
          {"peak_phase", m.peak_phase}};
}

// The report's memory section: the peak stage's items at the top level (as before), every
// stage under "stages", the peak stage named.
json memory_report(const std::vector<workload::MemoryBreakdown>& stages, const std::string& stack) {
  size_t peak = 0;
  for (size_t i = 1; i < stages.size(); ++i) {
    if (stages[i].total > stages[peak].total) peak = i;
  }
  const workload::MemoryBreakdown& m = stages[peak];
  json r = stage_memory(m);
  r["peak_bytes"] = m.total;
  r["capacity_bytes"] = m.capacity;
  r["fits"] = m.fits;
  r["peak_stage"] = m.stage;
  r["stack"] = stack;
  json all = json::array();
  for (const auto& s : stages) all.push_back(stage_memory(s));
  r["stages"] = std::move(all);
  return r;
}

// How far the published throughput of one unchanged mixture-of-experts layout moved between
// software releases (tests/validation/megatron-bridge-releases.json: Megatron-Bridge's
// performance archive, 54 layouts published in two or more 2026 containers; the figures are
// checked against that file by test_release_spread_backs_the_moe_assumption).
constexpr std::string_view kMoeReleaseSpread =
    "mixture of experts: the twin models one tuned software stack (of the host's time between the "
    "MoE kernels, only the dispatcher's host sync: training_job.runtime.moe_host_sync); "
    "Megatron-Bridge's published tokens/s of one unchanged MoE layout "
    "moved by up to 1.77x between its 2026 container releases (Qwen3-30B-A3B on 16 H100, FP8: "
    "5113 in 26.02, 9058 in 26.02.01; 10 of 40 MoE layouts by more than 1.2x), dense layouts by "
    "at most 1.10x (tests/validation/megatron-bridge-releases.json)";

// What the prediction rests on that no measurement of this configuration backs (issue: say
// when a prediction is extrapolated).
json assumptions(const Config& c, const workload::JobSpec& job) {
  json out = json::array();
  const hardware::GpuSpec g = gpu_spec(c);
  if (c.cluster.gpu_file.empty() && c.cluster.gpu != "H200-SXM") {
    out.push_back(
        "compute: the kernel model is fitted to H200 measurements; " + c.cluster.gpu +
        " is scaled from it by datasheet peaks and HBM bandwidth" +
        (g.gemm_eff_basis.empty() ? std::string(" (same die)")
                                  : ", GEMM efficiency x " + std::to_string(g.gemm_eff_scale).substr(0, 5) +
                                        " (" + g.gemm_eff_basis + ")") +
        (g.attention_basis.empty() ? std::string("; attention and element-wise efficiencies are H200's")
         : g.attention_fwd_scale == 1.0 && g.attention_bwd_scale == 1.0
             ? "; attention (" + g.attention_basis + ") and element-wise efficiencies are H200's"
             : "; attention forward x " + std::to_string(g.attention_fwd_scale).substr(0, 5) +
                   ", backward x " + std::to_string(g.attention_bwd_scale).substr(0, 5) + " (" +
                   g.attention_basis + "); element-wise efficiencies are H200's") +
        " (models/hardware/README.md)");
  }
  if (hardware::clock_factor(g) < 1.0) {
    char buf[600];
    std::snprintf(buf, sizeof buf,
                  "power limit %g W of a %g W part: GEMM and attention at %.3f of the rated clock ((limit / "
                  "rated)^%.3f, "
                  "the GH100 exponent from the H100 NVL and SXM datasheets); memory-bound kernels unchanged",
                  hardware::power_limit(g), g.tdp_watts, hardware::clock_factor(g),
                  hardware::kClockPowerExponent);
    out.push_back(std::string(buf));
  }
  if (job.precision == "nvfp4") {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "nvfp4: GEMMs at the dense FP4 peak (%.0f TFLOP/s) x %.3f x %.3f, the efficiency of an "
                  "MXFP8 GEMM of the same shape: EXTRAPOLATED, no FP4 GEMM is measured for any GPU; casts "
                  "as Transformer Engine's NVFP4BlockScaling (an amax pass, then row-wise and Hadamard-"
                  "transformed column-wise copies, 5.125 bytes per element); attention, norms and the "
                  "output layer in bf16; mfu is against the BF16 peak",
                  g.fp4_dense_flops / 1e12, g.fp8_gemm_ratio, hardware::kMxfp8KernelRatio);
    out.push_back(std::string(buf));
  } else if (workload::is_fp8(job)) {
    const std::string recipe =
        job.precision == "fp8"      ? "delayed scaling (casts read 2 and write 2 bytes per element)"
        : job.precision == "fp8-cs" ? "per-tensor current scaling (an amax pass before every cast)"
                                    : "MXFP8 block scaling (row- and column-wise quantization, block-scaled "
                                      "GEMMs at 0.95 of the FP8 kernel rate, TE benchmark on B300)";
    out.push_back(
        job.precision + ": GEMMs at the FP8 peak x " + std::to_string(g.fp8_gemm_ratio).substr(0, 5) +
        " of the BF16 efficiency" +
        (g.fp8_ratio_extrapolated ? std::string(" (carried over from a GPU of the same die)") : "") + "; " +
        recipe + "; mfu is against the BF16 peak");
  }
  if (job.attention == "flash") {
    const workload::AttentionKernelSpeed k = workload::attention_kernel_speed(job, g.sm_arch);
    if (k.name != "cudnn") {
      out.push_back("attention: the " + std::string(k.name) + " kernel at " +
                    std::to_string(k.forward).substr(0, 4) + " (forward) and " +
                    std::to_string(k.backward).substr(0, 4) +
                    " (backward) of the calibrated cuDNN kernel's throughput (models/workload/layer_ops.h)");
    }
    const int64_t d = workload::attention_head_width(job.model);
    if (d != 128 && k.curve != workload::HeadDimCurve::none) {
      out.push_back("attention: head dim " + std::to_string(d) + " at " +
                    std::to_string(k.forward_at(d) / k.forward).substr(0, 5) + " (forward) and " +
                    std::to_string(k.backward_at(d) / k.backward).substr(0, 5) +
                    " (backward) of head dim 128's speed (" +
                    (k.curve == workload::HeadDimCurve::fa3 ? "FlashAttention-3" : "FlashAttention-2") +
                    " on H100, FlashAttention-3 paper Figs. 5-6" +
                    (g.sm_arch >= 100 ? "; extrapolated to this GPU" : "") +
                    "; models/workload/layer_ops.h)");
    }
  }
  if (job.parallelism.zero_stage >= 3) {
    out.push_back("zero_stage 3: collectives per layer as stack " + job.stack +
                  " issues them (models/workload/sharding.h)");
  }
  if (collective::ring_cta_bound_measured(g.sm_arch) &&
      workload::gpus_used(job.parallelism) > c.cluster.gpus_per_node) {
    char buf[400];
    std::snprintf(
        buf, sizeof buf,
        "collectives: a Simple ring all-reduce across nodes moves at most %.1f GB/s of bus bandwidth "
        "per CTA (NCCL runs twice its search channels: 16 on 8 NICs), fitted on one nccl-tests log "
        "(4 H100 nodes, 324.5 GB/s; models/collective/nccl_tuning.h); all_gather and reduce_scatter "
        "are not bound",
        collective::kRingNetCtaBusBwHopper);
    out.push_back(std::string(buf));
  }
  if (workload::is_moe(job.model)) out.push_back(std::string(kMoeReleaseSpread));
  if (job.moe_host_sync) {
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "training_job.runtime.moe_host_sync: each MoE layer's forward (and each replay of its "
                  "expert block) waits %.1f ms for the host after the token dispatcher's device-to-host "
                  "sync, fitted on the megatron-bridge-moe-h100 validation set (16 H100 hosts); counted "
                  "in exposed_tp_comm_s",
                  replay::kMoeHostSyncS * 1e3);
    out.push_back(std::string(buf));
  }
  return out;
}

// The step's steady state under the power limit (replay::step_compute_model), as the step ran
// it: the ratio every GEMM and attention kernel runs at against its burst speed, with the
// assumption it rests on; not_computed where the GPU has no steady-state measurement.
void steady_compute(const Config& c, const hardware::GpuSpec& gpu, double ratio, json& report,
                    json& not_computed) {
  if (ratio > 0.0) {
    report["compute"] = {{"steady_ratio", ratio}};
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "steady state: GEMM and attention at %.3f of their burst speed, the step's average power "
                  "held at the %g W limit (models/hardware/gpu_catalog.h sustained_ratio; ",
                  ratio, hardware::power_limit(gpu));
    report["assumptions"].push_back(std::string(buf) + gpu.sustained_basis + ")");
  } else {
    not_computed["compute.steady_ratio"] =
        c.cluster.gpu_file.empty() ? "no steady-state (power-limited) measurement of " + gpu.name +
                                         ": the calibration's per-kernel throttle term stands in"
                                   : "cluster.gpu_file: the fit to a trace already holds that run's clock";
  }
}

}  // namespace

workload::MemoryOptions memory_options(const Config& c) {
  workload::MemoryOptions options;
  options.capacity_bytes = static_cast<int64_t>(gpu_spec(c).hbm_bytes);
  return options;
}

// Per-GPU speed factors: cluster.variability (a log-normal spread of mean 1 and a share of
// throttled GPUs, each GPU drawing from its own stream Rng(seed, kVariabilityStream + gpu),
// so a GPU's factor does not depend on the cluster size) times every gpu_throttle fault.
// Only GPUs whose factor differs from 1 are listed.
std::vector<std::pair<int, double>> gpu_speeds(const Config& c) {
  const VariabilitySection& v = c.cluster.variability;
  std::vector<double> speed;
  if (v.gpu_speed_cv > 0 || v.throttled_fraction > 0) {
    const double sigma = std::sqrt(std::log1p(v.gpu_speed_cv * v.gpu_speed_cv));
    speed.resize(static_cast<size_t>(c.cluster_gpus()), 1.0);
    for (size_t g = 0; g < speed.size(); ++g) {
      sim::Rng rng(static_cast<uint64_t>(c.seed), kVariabilityStream + g);
      const double spread = sigma > 0 ? std::exp(rng.normal(-0.5 * sigma * sigma, sigma)) : 1.0;
      const bool throttled = rng.uniform01() < v.throttled_fraction;
      speed[g] = spread * (throttled ? v.throttle_factor : 1.0);
    }
  }
  for (const auto& f : c.faults) {
    if (f.kind != "gpu_throttle") continue;
    if (speed.empty()) speed.resize(static_cast<size_t>(c.cluster_gpus()), 1.0);
    speed[static_cast<size_t>(f.rank)] *= f.factor;
  }
  std::vector<std::pair<int, double>> out;
  for (size_t g = 0; g < speed.size(); ++g) {
    if (speed[g] != 1.0) out.emplace_back(static_cast<int>(g), speed[g]);
  }
  return out;
}

// link_degrade, slow_receiver and link_down faults, as the network layer applies them
// (network/capacity_faults.h); validate() has already kept them out of the modes where they
// would not act.
bool is_link_fault(const std::string& kind) {
  return kind == "link_degrade" || kind == "slow_receiver" || kind == "link_down" || kind == "switch_down";
}

std::vector<network::LinkFaultSpec> link_fault_specs(const Config& c) {
  std::vector<network::LinkFaultSpec> out;
  for (size_t i = 0; i < c.faults.size(); ++i) {
    const FaultSpec& f = c.faults[i];
    if (!is_link_fault(f.kind)) continue;
    network::LinkFaultSpec s;
    s.key = "faults[" + std::to_string(i) + "]";
    if (f.kind == "link_degrade" || f.kind == "link_down") s.link = f.link;
    s.switch_name = f.switch_name;
    s.down = f.kind == "link_down" || f.kind == "switch_down";
    s.retransmit_timeout = c.network.rdma_retransmit_timeout;
    s.node = f.node;
    s.nic = f.nic;
    s.factor = f.factor;
    s.at = f.at;
    s.duration = f.duration;
    out.push_back(std::move(s));
  }
  return out;
}

replay::StepInput step_input(const Config& c) {
  replay::StepInput in;
  in.job = job_spec(c);
  in.cluster = cluster_spec(c);
  in.network_mode = c.network.mode;
  in.network = network_params(c);
  if (c.network.mode == "packet") in.packet = packet_params(c);
  in.collectives = collective_params(c);
  in.power = power_model(c);
  const auto& rt = c.training_job.runtime;
  in.program.steps = c.training_job.steps;
  in.program.overlap_grad_reduce = rt.overlap_grad_reduce;
  in.program.overlap_param_gather = rt.overlap_param_gather;
  in.program.overlap_p2p = rt.overlap_p2p;
  in.program.placement = rt.placement;
  // bucket_size counts bytes of the gradient buffer (fp32 4 or 16-bit 2 per parameter)
  in.program.bucket_params =
      static_cast<double>(rt.bucket_size.n) / workload::stack_memory(in.job).grad_bytes;
  in.tp_comm_overlap = rt.tp_comm_overlap;
  in.fp8_amax_reduction = rt.fp8_amax_reduction;
  in.seed = static_cast<uint64_t>(c.seed);
  in.gpu_speed = gpu_speeds(c);
  in.kernel_jitter_cv = c.cluster.variability.kernel_jitter_cv;
  in.microbatch_noise_cv = c.cluster.variability.microbatch_noise_cv;
  in.worker_offset_cv = c.cluster.variability.worker_offset_cv;
  in.link_faults = link_fault_specs(c);
  for (size_t i = 0; i < c.faults.size(); ++i) {
    const FaultSpec& f = c.faults[i];
    if (f.kind == "node_kill" || f.kind == "hang")
      in.node_stops.push_back(
          {"faults[" + std::to_string(i) + "]", f.node, f.at.seconds(), f.kind == "node_kill"});
  }
  in.detection_s = c.recovery.detection.seconds();
  in.collective_timeout_s = rt.collective_timeout.seconds();
  // training_job.scheduling.topology_aware: false places ranks as a scheduler that ignores the
  // fabric would: the job's nodes in a seeded random order (Fisher-Yates on its own stream), so
  // pipeline and data-parallel neighbours land under other leaves; TP stays inside a node.
  if (!c.training_job.scheduling.topology_aware) {
    const int per_node = c.cluster.gpus_per_node;
    const auto world = static_cast<int>(workload::gpus_used(in.job.parallelism));
    const int nodes = world / per_node;
    std::vector<int> order(static_cast<size_t>(nodes));
    std::iota(order.begin(), order.end(), 0);
    sim::Rng rng(static_cast<uint64_t>(c.seed), kPlacementStream);
    for (int i = nodes - 1; i > 0; --i) {
      std::swap(order[static_cast<size_t>(i)],
                order[static_cast<size_t>(rng.below(static_cast<uint64_t>(i) + 1))]);
    }
    in.program.gpu_of_rank.resize(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
      const int node = r / per_node;
      in.program.gpu_of_rank[static_cast<size_t>(r)] =
          node < nodes ? order[static_cast<size_t>(node)] * per_node + r % per_node : r;
    }
  }
  // Replicas are provably identical only without contention and without perturbation.
  const bool unperturbed = in.gpu_speed.empty() && in.kernel_jitter_cv == 0 &&
                           in.program.gpu_of_rank.empty() && in.node_stops.empty();
  in.program.fold = c.network.mode == "analytical" && unperturbed;
  // Rails (network.fold_rails auto, flow mode): the GPUs of a tensor-parallel group run one
  // program each on its own rail when nothing perturbs one of them, no fault changes the
  // fabric, and GPU i of a node uses NIC i.
  in.program.fold_rails = c.network.fold_rails == "auto" && c.network.mode == "flow" && unperturbed &&
                          in.link_faults.empty() && c.cluster.nics_per_node == c.cluster.gpus_per_node &&
                          in.job.parallelism.tensor_parallel > 1 &&
                          c.cluster.gpus_per_node % in.job.parallelism.tensor_parallel == 0;
  return in;
}

namespace {

const char* kind_name(replay::CollectiveKind k) {
  switch (k) {
    case replay::CollectiveKind::all_reduce:
      return "all_reduce";
    case replay::CollectiveKind::reduce_scatter:
      return "reduce_scatter";
    case replay::CollectiveKind::all_gather:
      return "all_gather";
    case replay::CollectiveKind::all_to_all:
      return "all_to_all";
  }
  return "?";
}

// The replay's memory estimate against this machine's available memory ("" when it fits).

// Collectives of the last step, grouped by (op, group size, bytes): count, mean time, bus
// bandwidth. A rail-folded run's groups each stand for `rail_fold` groups (one per rail).
json step_collectives(const std::vector<replay::CollectiveRecord>& records, int rail_fold) {
  std::map<std::tuple<int, int, int64_t>, std::pair<int, double>> groups;
  for (const auto& rec : records) {
    auto& g = groups[{static_cast<int>(rec.kind), rec.group_size, rec.bytes}];
    g.first += 1;
    g.second += rec.end_s - rec.start_s;
  }
  json collectives = json::array();
  for (const auto& [key, value] : groups) {
    const auto kind = static_cast<replay::CollectiveKind>(std::get<0>(key));
    const int n = std::get<1>(key);
    const double bytes = static_cast<double>(std::get<2>(key));
    const double time = value.second / value.first;
    const collective::Op op = replay::collective_op(kind);
    collectives.push_back(
        {{"op", kind_name(kind)},
         {"group_size", n},
         {"bytes", std::get<2>(key)},
         {"count", value.first * std::max(1, rail_fold)},
         {"time_s", time},
         {"busbw_gbps", time > 0 ? bytes / time * collective::bus_factor(op, n) * 8e-9 : 0.0}});
  }
  return collectives;
}

// Keep the slow GPUs or swap in spares: the step with the slow GPUs' nodes replaced by
// nominal ones (every other perturbation kept), and how many steps the swap (a restart:
// detection is moot, the node is drained) takes to pay for itself:
//   break-even steps = restart cost / (step with slow GPUs - step without).
json keep_vs_swap(const Config& c, const replay::StepInput& in, const replay::StepResult& r,
                  const std::set<int>& slow_gpus) {
  replay::StepInput healthy = in;
  healthy.gpu_speed.clear();
  for (const auto& entry : in.gpu_speed) {
    if (!slow_gpus.count(entry.first)) healthy.gpu_speed.push_back(entry);
  }
  healthy.program.fold =
      healthy.network_mode == "analytical" && healthy.gpu_speed.empty() && healthy.kernel_jitter_cv == 0;
  healthy.program.fold_rails = false;  // compared with the step that ran every rank
  healthy.trace = nullptr;
  healthy.timeline = nullptr;
  healthy.trace_gpus.clear();
  const double without = replay::simulate_step(healthy).step_time_s;
  const double swap_cost = c.recovery.restart.seconds();
  const double saved = r.step_time_s - without;
  return {{"step_time_with_slow_s", r.step_time_s},
          {"step_time_without_slow_s", without},
          {"swapped_gpus", slow_gpus.size()},
          {"swap_cost_s", swap_cost},
          {"break_even_steps", saved > 0 ? json(swap_cost / saved) : json(nullptr)}};
}

// report["network"] of a training step: link loads, and ECN/PFC/drops in packet mode.
json network_section(const replay::StepResult& r, json& not_computed) {
  json top = json::array();
  for (const auto& l : r.top_links)
    top.push_back({{"link", l.name}, {"utilization", l.utilization}, {"bytes", l.bytes}});
  json network = {{"max_link_utilization", r.max_link_utilization}, {"top_links", top}};
  if (r.transfers) {  // link faults: nothing lost or counted twice, and what they cut
    const network::TransferCounters& t = *r.transfers;
    network["transfers"] = {{"started", t.started},
                            {"delivered", t.delivered},
                            {"in_flight_at_end", t.started - t.delivered},
                            {"started_bytes", t.started_bytes},
                            {"delivered_bytes", t.delivered_bytes},
                            {"cut_by_failures", t.cut},
                            {"resumed_after_retransmission", t.resumed},
                            {"cut_bytes_left", t.cut_bytes_left}};
  }
  if (r.packet) {
    network.update(packet_report(*r.packet));
  } else {
    not_computed["network.ecn_marked_fraction"] = "ECN, PFC and drops come from network.mode=packet";
  }
  return network;
}

// Writes the step's sections of the report; returns what later stages need, typed, with the
// events simulated.
std::pair<std::optional<StepFigures>, uint64_t> step_report(const Config& c, const RunOptions& options,
                                                            json& report, json& not_computed) {
  replay::StepInput in = step_input(c);
  if (auto problem = step_memory_problem(in); !problem.empty()) throw ScenarioError({problem});
  std::ofstream trace_file;
  std::unique_ptr<sim::TraceWriter> trace;
  if (!options.trace_path.empty()) {
    trace_file.open(options.trace_path);
    trace = std::make_unique<sim::TraceWriter>(trace_file);
    in.trace = trace.get();
  }
  in.trace_gpus = options.trace_gpus;
  // A trace shows GPUs one by one: every rank runs.
  if (!options.trace_path.empty() || !options.trace_gpus.empty()) in.program.fold_rails = false;
  in.fabric_links = options.tables != nullptr;
  replay::Timeline timeline;
  if (options.tables != nullptr) {
    in.timeline = &timeline;
  }
  replay::StepResult r = replay::simulate_step(in);
  steady_compute(c, in.cluster.node.gpu, r.steady_ratio, report, not_computed);
  if (trace) trace->finish();
  if (options.tables != nullptr) {
    (*options.tables)["fabric_links"] = link_columns(std::move(r.fabric_links));
    (*options.tables)["timeline"] = timeline_columns(std::move(timeline));
  }
  if (r.failure) {  // node_kill / hang faults stopped the job: where it waits, not a step
    failure_report(in, *r.failure, report, not_computed);
    report["network"] = network_section(r, not_computed);
    return {std::nullopt, r.events};
  }

  report["step_time_s"] = r.step_time_s;
  report["mfu"] = r.mfu;
  report["hfu"] = r.hfu;
  report["tflops_per_gpu"] = r.tflops_per_gpu;
  report["tokens_per_s"] = r.tokens_per_s;
  report["tokens_per_s_per_gpu"] = r.tokens_per_s_per_gpu;
  report["breakdown"] = breakdown_json(r.breakdown);
  report["collectives"] = step_collectives(r.collectives, r.rail_fold);
  json link_rows = json::array();
  for (const auto& l : r.top_links) {
    link_rows.push_back({{"link", l.name}, {"utilization", l.utilization}, {"bytes", l.bytes}});
  }
  report["network"] = network_section(r, not_computed);
  const double median = sim::nearest_rank_quantile(r.rank_compute_s, 0.5);
  json slow = json::array();
  json rank_rows = json::array();
  std::set<int> slow_gpus;
  for (size_t i = 0; i < r.rank_gpu.size(); ++i) {
    const bool is_slow = median > 0 && r.rank_compute_s[i] >= 1.1 * median;
    if (is_slow) slow_gpus.insert(r.rank_gpu[i]);
    if (is_slow && slow.size() < 100) slow.push_back(r.rank_gpu[i]);
    // A rail-folded rank's tensor-parallel siblings (GPUs gpu + 1 ..) ran the same: listed too.
    for (int k = 0; k < std::max(1, r.rail_fold); ++k) {
      rank_rows.push_back({{"gpu", r.rank_gpu[i] + k},
                           {"step_time_s", r.rank_step_s[i]},
                           {"compute_s", r.rank_compute_s[i]},
                           {"slow", is_slow}});
    }
  }
  report["ranks"] = {{"step_time_p50_s", sim::nearest_rank_quantile(r.rank_step_s, 0.5)},
                     {"step_time_max_s", sim::nearest_rank_quantile(r.rank_step_s, 1.0)},
                     {"compute_time_p50_s", median},
                     {"slow_ranks", slow},
                     {"slow_rank_count", slow_gpus.size()},
                     {"simulated", r.simulated_ranks},
                     {"folded", r.folded},
                     {"fold", !r.folded         ? "none"
                              : r.rail_fold > 1 ? "rails"
                                                : "replicas"}};
  if (r.rail_fold > 1) {
    report["assumptions"].push_back(
        "network.fold_rails: the first GPU of every tensor-parallel group ran for its " +
        std::to_string(r.rail_fold) +
        " GPUs (each on a rail of its own, the same program); on fabric links that several rails share, "
        "each transfer also carried its siblings' routes at its own rate (docs/performance.md: the "
        "error against every rank)");
  }
  if (const int ran = replay::simulated_steps(in.program); ran < in.program.steps) {
    report["assumptions"].push_back(
        "training_job.steps: " + std::to_string(ran) + " of the " + std::to_string(in.program.steps) +
        " steps simulated: without contention or perturbation every step after the second repeats "
        "it (docs/performance.md), so the second is the last step's figures");
  }
  if (!slow_gpus.empty()) report["ranks"]["keep_vs_swap"] = keep_vs_swap(c, in, r, slow_gpus);
  // Power: the last step's series, thinned to at most 2,000 points for the table.
  json power_rows = json::array();
  const size_t stride = std::max<size_t>(1, r.power_series_w.size() / 2000);
  for (size_t k = 0; k < r.power_series_w.size(); k += stride) {
    power_rows.push_back(
        {{"t_s", static_cast<double>(k) * r.power_bucket_s}, {"cluster_w", r.power_series_w[k]}});
  }
  report["power"] = power_report(c, r);
  report["tables"] = {{"ranks", rank_rows}, {"links", link_rows}, {"power", power_rows}};
  StepFigures figures;
  figures.step_time_s = r.step_time_s;
  figures.exposed_dp_comm_s = r.breakdown.exposed_dp_comm_s;
  figures.exposed_pp_comm_s = r.breakdown.exposed_pp_comm_s;
  figures.tokens_per_s = r.tokens_per_s;
  figures.power = step_power(c, r);
  return {figures, r.events};
}

// `trace`: a recorded step (Chakra ET per rank, or a Kineto profile) replayed on the
// scenario's cluster and network: step time, per-rank ends and the collectives.
// A catalog GPU named by trace.recorded_gpu.
hardware::GpuSpec keyed_gpu(const std::string& name) {
  try {
    return hardware::gpu(name);
  } catch (const std::exception& e) {
    throw ScenarioError({std::string("trace.recorded_gpu: ") + e.what()});
  }
}

// trace.profiler_overhead in microseconds per operator: -1 = estimate (auto), 0 = none.
double profiler_op_overhead_us(const Config& c) {
  const std::string& text = c.trace.profiler_overhead;
  if (text == "auto") return -1;
  if (text == "none") return 0;
  const std::string expected = "', expected auto, none or a duration per operator from 0s to 1ms such as 5us";
  double seconds = -1;
  try {
    seconds = sim::parse_duration_seconds(text);
  } catch (const std::exception&) {
    throw ScenarioError({"trace.profiler_overhead: got '" + text + expected});
  }
  if (!(seconds >= 0 && seconds <= 1e-3))
    throw ScenarioError({"trace.profiler_overhead: got '" + text + expected});
  return seconds * 1e6;
}

// The trace keys that only some trace kinds use, and their values.
std::vector<std::string> trace_key_problems(const Config& c) {
  std::vector<std::string> problems;
  std::error_code is_dir_error;
  const bool kineto_ranks =
      c.trace.format == "kineto" && std::filesystem::is_directory(c.trace.path, is_dir_error);
  if (kineto_ranks && !c.trace.execution_trace.empty()) {
    problems.push_back(
        "trace.execution_trace: got '" + c.trace.execution_trace + "', expected \"\" (trace.path " +
        c.trace.path +
        " is a directory of per-rank Kineto traces; the execution-trace step graph is one rank's)");
  }
  if (c.trace.step != -1 && (c.trace.format == "chakra" || !c.trace.execution_trace.empty())) {
    problems.push_back("trace.step: got " + std::to_string(c.trace.step) +
                       ", expected -1 (a ProfilerStep is chosen in Kineto traces replayed without "
                       "trace.execution_trace; " +
                       (c.trace.format == "chakra" ? std::string("a Chakra trace is its steps")
                                                   : std::string("the execution trace is one step")) +
                       ")");
  }
  if (c.trace.format == "chakra" || c.trace.execution_trace.empty()) {
    if (c.trace.batch_scale != 1.0)
      problems.push_back("trace.batch_scale: got " + std::to_string(c.trace.batch_scale) +
                         ", expected 1 (what-if replays need a Kineto trace with trace.execution_trace)");
    if (!c.trace.recorded_gpu.empty())
      problems.push_back("trace.recorded_gpu: got '" + c.trace.recorded_gpu +
                         "', expected \"\" (what-if replays need a Kineto trace with trace.execution_trace)");
    if (c.trace.profiler_overhead != "auto")
      problems.push_back("trace.profiler_overhead: got '" + c.trace.profiler_overhead +
                         "', expected auto (the CPU launch timeline is modelled only for a Kineto trace with "
                         "trace.execution_trace)");
  } else {
    if (!c.trace.recorded_gpu.empty()) {
      try {
        keyed_gpu(c.trace.recorded_gpu);
      } catch (const ScenarioError& e) {
        problems.insert(problems.end(), e.problems().begin(), e.problems().end());
      }
    }
    try {
      profiler_op_overhead_us(c);
    } catch (const ScenarioError& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
  }
  return problems;
}

// A trace imported into a step program, with what its importer measured.
struct ImportedTrace {
  replay::StepProgram program;
  json graph;                  // Kineto + execution trace: the step graph's statistics
  double recorded_step_s = 0;  // what-if: the same step on the recorded GPU
  bool kineto_ranks = false;   // a directory of per-rank Kineto files
  trace::KinetoRanksStats ranks_stats;
  trace::ChakraStats chakra_stats;
  trace::KinetoStats kineto_stats;  // one Kineto file without an execution trace
};

// Kineto + PyTorch execution trace, on the cluster's GPU; with trace.recorded_gpu or
// trace.batch_scale also as recorded, for the what-if comparison.
void import_et_step(const Config& c, ImportedTrace& out) {
  const hardware::NodeSpec node = node_spec(c);
  trace::EtImportOptions et;
  et.gpu = node.gpu;
  et.calibration = node.compute_calibration;
  et.profiler_op_overhead_us = profiler_op_overhead_us(c);
  const bool other_gpu = !c.trace.recorded_gpu.empty() && c.trace.recorded_gpu != c.cluster.gpu;
  if (other_gpu || c.trace.batch_scale != 1.0) {
    // The trace's GPU with the built-in calibration; the cluster's GPU is the target.
    if (other_gpu) {
      et.what_if = true;
      et.target_gpu = node.gpu;
      et.target_calibration = node.compute_calibration;
      et.gpu = keyed_gpu(c.trace.recorded_gpu);
      et.calibration = hardware::Calibration::h200();
    }
    et.batch_scale = c.trace.batch_scale;
    trace::EtImportOptions as_recorded = et;
    as_recorded.what_if = false;
    as_recorded.batch_scale = 1.0;
    trace::EtImportStats recorded_stats;
    trace::import_pytorch_et(c.trace.path, c.trace.execution_trace, as_recorded, &recorded_stats);
    out.recorded_step_s = recorded_stats.step_s;
  }
  trace::EtImportStats stats;
  out.program = trace::import_pytorch_et(c.trace.path, c.trace.execution_trace, et, &stats);
  out.graph = trace::to_json(stats);
  out.graph["compute_model"] = c.cluster.gpu_file.empty() ? "built-in calibration" : c.cluster.gpu_file;
}

ImportedTrace import_trace(const Config& c) {
  ImportedTrace out;
  std::error_code is_dir_error;
  out.kineto_ranks = c.trace.format == "kineto" && std::filesystem::is_directory(c.trace.path, is_dir_error);
  if (auto key_problems = trace_key_problems(c); !key_problems.empty())
    throw ScenarioError(std::move(key_problems));
  try {
    if (c.trace.format == "chakra") {
      trace::ChakraOptions chakra;
      chakra.memory_bytes_per_s = node_spec(c).pcie_rate.bps() / 8;
      out.program = trace::import_chakra(c.trace.path, &out.chakra_stats, chakra);
    } else if (!c.trace.execution_trace.empty()) {
      import_et_step(c, out);
    } else if (out.kineto_ranks) {
      out.program = trace::import_kineto_ranks(c.trace.path, &out.ranks_stats, c.trace.step);
    } else {
      trace::KinetoOptions kineto;
      kineto.step = c.trace.step;
      out.program = trace::import_kineto(c.trace.path, kineto, &out.kineto_stats);
    }
  } catch (const ScenarioError&) {
    throw;
  } catch (const std::exception& e) {
    throw ScenarioError({e.what()});
  }
  return out;
}

// The program on the cluster, with the run's tables and Chrome trace when asked for.
trace::TraceRunResult run_imported(const Config& c, const RunOptions& options,
                                   const replay::StepProgram& program) {
  trace::TraceRunOptions run_options;
  run_options.network = network_params(c);
  if (c.network.mode == "packet") run_options.packet = packet_params(c);
  run_options.collectives = collective_params(c);
  run_options.seed = static_cast<uint64_t>(c.seed);
  run_options.fabric_links = options.tables != nullptr;
  run_options.report_stall = true;  // a trace whose ranks cannot finish gets a hang diagnosis
  replay::Timeline timeline;
  if (options.tables != nullptr) {
    run_options.timeline = &timeline;
  }
  run_options.trace_ranks = options.trace_ranks;
  run_options.trace_gpus = options.trace_gpus;
  std::ofstream trace_file;
  std::unique_ptr<sim::TraceWriter> writer;
  if (!options.trace_path.empty()) {
    trace_file.open(options.trace_path);
    writer = std::make_unique<sim::TraceWriter>(trace_file);
    run_options.trace = writer.get();
  }
  trace::TraceRunResult r;
  try {
    r = trace::run_trace_program(program, cluster_spec(c), c.network.mode, run_options);
  } catch (const trace::TraceError& e) {
    throw ScenarioError({e.what()});
  } catch (const std::runtime_error& e) {  // a program whose dependencies cannot all be met
    throw ScenarioError({"trace.path: " + c.trace.path + ": " + e.what()});
  }
  if (writer) writer->finish();
  if (options.tables != nullptr) {
    (*options.tables)["fabric_links"] = link_columns(std::move(r.fabric_links));
    (*options.tables)["timeline"] = timeline_columns(std::move(timeline));
  }
  return r;
}

// report["trace"]["kineto"]: which step of a Kineto trace was replayed, its measured period and
// how busy the GPU was in it (a mostly idle step is the host's time, replayed as measured idle).
json kineto_section(const trace::KinetoStats& s) {
  const double busy = s.span_s > 0 ? (s.span_s - s.idle_s) / s.span_s : 0.0;
  json out = {{"profiler_step", s.profiler_step < 0 ? json(nullptr) : json(s.profiler_step)},
              {"profiler_steps", s.profiler_steps},
              {"profiler_steps_without_gpu_work", s.empty_steps},
              {"measured_step_s", s.span_s},
              {"gpu_busy_fraction", busy},
              {"idle_kept_s", s.idle_s},
              {"stream_overlap_s", s.overlap_s},
              {"before_step_s", s.before_step_s},
              {"kernels", s.kernels},
              {"memcpys", s.memcpys},
              {"memsets", s.memsets},
              {"nccl_kernels_kept_measured", s.nccl_kernels},
              {"streams", s.streams}};
  json warnings = json::array();
  if (busy < 0.5) {
    char buf[320];
    std::snprintf(
        buf, sizeof buf,
        "the GPU was busy %.1f%% of the replayed step (%.6g s): the rest is host time (data loading, "
        "synchronisation, CPU-bound launches) replayed as measured idle, so what-ifs on the GPU or "
        "fabric change little of it",
        100 * busy, s.span_s);
    warnings.push_back(buf);
  }
  if (s.nccl_kernels > 0) {
    warnings.push_back(std::to_string(s.nccl_kernels) +
                       " NCCL kernels of a one-rank trace kept at their measured time (no peers to simulate "
                       "them with; replay every rank's trace from one directory)");
  }
  out["warnings"] = warnings;
  return out;
}

// What a per-rank Kineto replay did not simulate: compute kernels always replay at their
// measured time (no shapes without an execution trace); NCCL kernels only when matched.
json kineto_ranks_warnings(const trace::KinetoRanksStats& s) {
  json w = json::array();
  w.push_back(
      "compute kernels replay at their measured time (a Kineto trace has no shapes to re-time them): "
      "cluster.gpu changes only the simulated communication");
  if (s.collectives == 0 && s.point_to_point == 0) {
    w.push_back(
        "nothing of the step was simulated: no NCCL kernel could be matched to a collective or a "
        "transfer, so every one replays at its measured time and the step is the measured one "
        "whatever the cluster and fabric are");
  }
  if (s.nccl_measured > 0) {
    w.push_back(std::to_string(s.nccl_measured) +
                " NCCL kernels (all ranks) kept at their measured time: broadcasts, batched send/recv, or "
                "record_param_comms without a collective name and a single-tensor size (PyTorch <= 2.1 with "
                "TensorList inputs)");
  }
  return w;
}

// report["trace"]: what was imported, and per importer what it measured.
json trace_section(const Config& c, const ImportedTrace& in, const trace::TraceRunResult& r) {
  json out = {{"format", c.trace.format},
              {"ranks", in.program.ranks.size()},
              {"instructions", in.program.instruction_count()}};
  if (!in.graph.is_null()) out["execution_trace"] = in.graph;
  if (c.trace.format == "chakra") {
    const trace::ChakraStats& s = in.chakra_stats;
    out["chakra"] = {{"nodes", s.nodes},
                     {"compute_nodes", s.computes},
                     {"memory_nodes", s.memory},
                     {"collectives", s.collectives},
                     {"point_to_point", s.point_to_point},
                     {"steps", s.steps},
                     {"dropped_ctrl_deps", s.dropped_ctrl_deps},
                     {"measured_broadcasts", s.measured_broadcasts}};
  }
  if (c.trace.format == "kineto" && !in.kineto_ranks && c.trace.execution_trace.empty())
    out["kineto"] = kineto_section(in.kineto_stats);
  if (in.kineto_ranks) {
    const trace::KinetoRanksStats& s = in.ranks_stats;
    double simulated = 0;
    for (const auto& rec : r.execution.collectives) simulated += (rec.end_s - rec.start_s) * rec.group_size;
    const double n = std::max(1, s.ranks);
    out["kineto_ranks"] = {{"collectives", s.collectives},
                           {"nccl_kernels", s.nccl_kernels},
                           {"nccl_kept_measured", s.nccl_measured},
                           {"point_to_point", s.point_to_point},
                           {"measured_p2p_s_per_rank", s.measured_p2p_s / n},
                           {"kernels", s.kernels},
                           {"compute_waits_on_collectives", s.waits},
                           {"measured_step_s", s.measured_step_s},
                           {"measured_nccl_s_per_rank", s.measured_nccl_s / n},
                           {"simulated_collective_s_per_rank", simulated / n},
                           {"idle_kept_s_per_rank", s.idle_s / n},
                           {"stream_overlap_s", s.overlap_s},
                           {"warnings", kineto_ranks_warnings(s)}};
  }
  if (in.recorded_step_s > 0 && !r.execution.stall) {
    out["what_if"] = {{"recorded_gpu", c.trace.recorded_gpu.empty() ? c.cluster.gpu : c.trace.recorded_gpu},
                      {"replay_gpu", c.cluster.gpu},
                      {"batch_scale", c.trace.batch_scale},
                      {"step_time_recorded_gpu_s", in.recorded_step_s},
                      {"step_time_replay_gpu_s", r.step_time_s},
                      {"speedup", in.recorded_step_s / r.step_time_s}};
  }
  return out;
}

uint64_t trace_report(const Config& c, const RunOptions& options, json& report, json& not_computed) {
  const ImportedTrace in = import_trace(c);
  const trace::TraceRunResult r = run_imported(c, options, in.program);
  if (r.execution.stall) {  // ranks that wait for what never comes: where, instead of an error
    report["hang_diagnosis"] = hang_diagnosis(*r.execution.stall);
    report["trace"] = trace_section(c, in, r);
    not_computed["step_time_s"] = replay::stall_message(*r.execution.stall);
    return r.execution.events;
  }
  report["step_time_s"] = r.step_time_s;
  std::vector<double> ends;
  json rank_rows = json::array();
  for (const auto& rank : r.execution.ranks) {
    // The last step (a ClusterTwin export carries several): its end minus the previous one's.
    const size_t k = rank.step_end_s.size();
    const double step = rank.step_end_s[k - 1] - (k >= 2 ? rank.step_end_s[k - 2] : 0.0);
    ends.push_back(step);
    rank_rows.push_back({{"gpu", rank.gpu}, {"step_time_s", step}});
  }
  report["ranks"] = {{"step_time_p50_s", sim::nearest_rank_quantile(ends, 0.5)},
                     {"step_time_max_s", sim::nearest_rank_quantile(ends, 1.0)},
                     {"simulated", ends.size()}};
  json collectives = json::array();
  for (const auto& rec : r.execution.collectives) {
    collectives.push_back({{"op", kind_name(rec.kind)},
                           {"group_size", rec.group_size},
                           {"bytes", rec.bytes},
                           {"time_s", rec.end_s - rec.start_s}});
  }
  report["collectives"] = collectives;
  if (r.packet) report["network"] = packet_report(*r.packet);
  report["trace"] = trace_section(c, in, r);
  report["tables"] = {{"ranks", rank_rows}};
  return r.execution.events;
}

}  // namespace

std::string step_memory_problem(const replay::StepInput& in) {
  return step_memory_problem(in, available_memory_bytes());
}

std::string step_memory_problem(const replay::StepInput& in, double have) {
  const double need = replay::estimate_program_bytes(in.job, in.program);
  if (have > 0 && need > 0.8 * have) {
    return "training_job: replaying every rank needs about " + std::to_string(need / 1073741824.0) +
           " GiB; this machine has " + std::to_string(have / 1073741824.0) +
           " GiB available. Use network.mode=analytical (folds identical replicas) or fewer "
           "training_job.steps";
  }
  return "";
}

json breakdown_json(const replay::TimeBreakdown& b) {
  return {{"compute_s", b.compute_s},
          {"exposed_tp_comm_s", b.exposed_tp_comm_s},
          {"exposed_pp_comm_s", b.exposed_pp_comm_s},
          {"exposed_dp_comm_s", b.exposed_dp_comm_s},
          {"bubble_s", b.bubble_s},
          {"optimizer_s", b.optimizer_s},
          {"other_s", b.other_s},
          {"straggler_s", b.straggler_s}};
}

std::vector<std::string> pre_run_problems(const Config& c) {
  std::vector<std::string> problems;
  if (c.has("trace")) {
    problems = trace_key_problems(c);
  } else if (c.has("training_job")) {
    try {
      if (auto problem = step_memory_problem(step_input(c)); !problem.empty()) problems.push_back(problem);
    } catch (const ScenarioError& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
  }
  return problems;
}

std::string step_not_computed(const Config& c) {
  const int64_t gpus = workload::gpus_used(job_spec(c).parallelism);
  if (c.network.mode == "packet" && gpus > kPacketStepGpus) {
    return "network.mode=packet replays training steps of slices up to " + std::to_string(kPacketStepGpus) +
           " GPUs; use flow or analytical for " + std::to_string(gpus);
  }
  return "";
}

replay::StepResult simulate_training_step(const Config& c) {
  if (std::string why = step_not_computed(c); !why.empty()) throw ScenarioError({why});
  const replay::StepInput in = step_input(c);
  if (auto problem = step_memory_problem(in); !problem.empty()) throw ScenarioError({problem});
  return replay::simulate_step(in);
}

json run(const Config& c, const RunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  json report;
  report["name"] = c.name;
  report["seed"] = c.seed;
  report["cluster"] = {{"gpus", c.cluster_gpus()}, {"nodes", c.cluster.nodes}, {"gpu", c.cluster.gpu}};
  json not_computed = json::object();
  uint64_t events = 0;
  if (c.has("training_job")) {
    const workload::JobSpec job = job_spec(c);
    const auto params = workload::count_parameters(job.model);
    report["model"] = {{"parameters", params.total},
                       {"active_parameters", params.active},
                       {"model_flops_per_iteration", workload::model_flops_per_iteration(job)},
                       {"hardware_flops_per_iteration", workload::hardware_flops_per_iteration(job)}};
    report["memory"] = memory_report(workload::memory_per_stage(job, memory_options(c)), job.stack);
    report["assumptions"] = assumptions(c, job);
    if (std::string why = step_not_computed(c); !why.empty()) {
      not_computed["step_time_s"] = std::move(why);
    } else {
      const auto [figures, step_events] = step_report(c, options, report, not_computed);
      events = step_events;
      if (figures) reliability_report(c, *figures, report);
    }
  } else if (c.has("traffic")) {
    network::FabricLinkTable links;
    events = run_traffic(c, report, options.tables != nullptr ? &links : nullptr);
    if (options.tables != nullptr) (*options.tables)["fabric_links"] = link_columns(std::move(links));
  } else {
    events = trace_report(c, options, report, not_computed);
    not_computed["mfu"] = "a trace carries kernel times, not model FLOPs";
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report["sim"] = {{"events", events},
                   {"wall_s", wall},
                   {"events_per_s", wall > 0 ? static_cast<double>(events) / wall : 0.0}};
  if (!not_computed.empty()) report["not_computed"] = not_computed;
  return report;
}

}  // namespace ct::scenario
