// One training step, end to end: block costs from the calibrated compute model, the step
// program from the layout, execution on the chosen network backend with NCCL-like
// collectives, and the figures the report is made of.
//
//   MFU = model FLOPs per iteration (PaLM: 6N + attention, no recompute) / (T x G x peak)
//   HFU = the same with recompute FLOPs counted;  T = steady-state step time, G = GPUs used.
// The steady state is the last of `steps` consecutive steps: T = end(last) - end(last - 1),
// the latest rank's end each time (the first step also pays the pipeline's cold start).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/collective/collective.h"
#include "models/hardware/node.h"
#include "models/hardware/power.h"
#include "models/network/capacity_faults.h"
#include "models/network/cluster.h"
#include "models/network/link_table.h"
#include "models/network/network.h"
#include "models/network/packet_network.h"
#include "models/replay/executor.h"
#include "models/replay/step_program.h"
#include "models/workload/model_spec.h"

namespace ct::replay {

// node_kill / hang faults: every rank of `node` stops at at_s (executor.h RankStop).
struct NodeStop {
  std::string key;  // the fault's key path, for errors ("faults[2]")
  int node = 0;
  double at_s = 0;
  bool crash = true;  // node_kill; false: hang
};

struct StepInput {
  workload::JobSpec job;
  network::ClusterSpec cluster;
  // A cluster already built from `cluster` (not owned), shared read-only by runs that differ
  // only in their job (a layout sweep: scenario/layouts.h); nullptr = build one. Ignored when
  // link_faults are given (they change the topology during the run).
  const network::Cluster* shared_cluster = nullptr;
  std::string network_mode = "flow";
  network::NetworkParams network;
  network::PacketParams packet;  // used when network_mode == "packet"
  collective::CollectiveParams collectives;
  ProgramOptions program;
  bool tp_comm_overlap = false;
  // FP8 delayed scaling's amax all-reduce group (amax_sync()): "tp-dp-cp" or "tp-cp".
  std::string fp8_amax_reduction = "tp-dp-cp";
  std::vector<std::pair<int, double>> gpu_speed;  // (gpu, factor): gpu_throttle faults, variability
  double kernel_jitter_cv = 0.0;                  // ExecutorOptions::kernel_jitter_cv
  // Stragglers of a healthy fleet (straggler_delay()): per-micro-batch compute noise of each
  // worker (a TP group) and its persistent speed offset, both as coefficients of variation.
  double microbatch_noise_cv = 0.0;
  double worker_offset_cv = 0.0;
  // Chrome trace and timeline: the ranks of trace_gpus (physical GPUs; each must have a
  // program, so a folded analytical run traces only the GPUs it simulates), or by default one
  // rank per pipeline stage (TP rank 0 of the first DP replica) and the whole first TP group
  // (traced_ranks()). The trace also gets counter tracks: the cluster's IT power, and in flow
  // and packet mode each traced GPU's NIC load (trace_counter_s apart).
  sim::TraceWriter* trace = nullptr;
  std::vector<int> trace_gpus;
  double trace_counter_s = 1e-3;
  uint64_t seed = 1;
  hardware::PowerModel power;
  // Count the GPUs busy per 100 us for the step's power (StepResult power_*). A layout sweep
  // reads none of it (scenario::evaluate_layouts) and turns it off: power_* then stay 0.
  bool power_series = true;
  bool fabric_links = false;     // fill StepResult::fabric_links (every link direction's load)
  Timeline* timeline = nullptr;  // filled with the traced ranks' instructions
  // link_degrade / slow_receiver (flow, packet), link_down / switch_down (flow) faults
  // (network/capacity_faults.h).
  std::vector<network::LinkFaultSpec> link_faults;
  // node_kill / hang faults (the program must not be folded), and how the job notices them: a
  // crash by the heartbeat after detection_s (recovery.detection), anything that stalls a
  // collective by the watchdog after collective_timeout_s (training_job.runtime.collective_timeout).
  std::vector<NodeStop> node_stops;
  double detection_s = 60.0;
  double collective_timeout_s = 600.0;
};

// A job that faults stopped: node_kill / hang (noticed by the heartbeat or the collective
// watchdog) or a NIC left without a path (link_down / switch_down: the communicator errors out
// when the transfer's retransmissions give up); when it failed, and where every rank waited.
struct JobFailure {
  enum class DetectedBy : uint8_t { heartbeat, collective_timeout, communicator_error };
  double failed_at_s = 0;
  DetectedBy detected_by = DetectedBy::collective_timeout;
  std::optional<CommError> comm_error;  // communicator_error: the transfer that found no path
  double first_wait_s = 0;              // the earliest wait the watchdog counts from
  Stall stall;
};

struct LinkSummary {
  std::string name;
  double utilization;
  double bytes;
};

struct StepResult {
  double step_time_s = 0;
  double last_step_start_s = 0;  // when the last simulated step began (the previous one's end)
  double mfu = 0, hfu = 0, tflops_per_gpu = 0, tokens_per_s = 0, tokens_per_s_per_gpu = 0;
  int gpus = 0;
  TimeBreakdown breakdown;  // mean over simulated ranks, last step
  std::vector<int> rank_gpu;
  std::vector<double> rank_step_s, rank_compute_s;
  std::vector<CollectiveRecord> collectives;
  double max_link_utilization = 0;
  std::vector<LinkSummary> top_links;
  network::FabricLinkTable fabric_links;       // when StepInput::fabric_links
  std::optional<network::PacketStats> packet;  // network_mode packet: ECN, PFC, drops
  // With link faults (flow mode): transfers started, delivered, cut by a failure and resumed.
  std::optional<network::TransferCounters> transfers;
  // IT power over the last step (hardware::PowerModel): mean, peak and trough of the
  // cluster's draw in busy_bucket_s buckets, and the series itself.
  double power_mean_w = 0, power_peak_w = 0, power_min_w = 0;
  std::vector<double> power_series_w;
  double power_bucket_s = 0;
  uint64_t events = 0;
  size_t simulated_ranks = 0;
  bool folded = false;
  int rail_fold = 1;        // GPUs each simulated rank stood for on other rails (1: no rail fold)
  double steady_ratio = 0;  // StepProgram::steady_ratio of the program that ran
  // Set when node_kill / hang faults stopped the job: the step figures above are not computed
  // (zero), only events, ranks, network and the failure are.
  std::optional<JobFailure> failure;
};

StepResult simulate_step(const StepInput& input);

// Which program ranks the trace and timeline show (see StepInput::trace_gpus): traced[r] != 0.
// Throws std::invalid_argument naming "trace_gpus" and the GPUs without a program.
std::vector<uint8_t> traced_ranks(const StepInput& input, const StepProgram& program);
// The program ranks of these physical GPUs: traced[r] != 0. Throws std::invalid_argument
// naming "trace_gpus", the GPUs without a program and some that have one.
std::vector<uint8_t> traced_gpus(const StepProgram& program, const std::vector<int>& gpus);

// Stragglers (issue 16: the step is the maximum over its workers). Every worker (a TP group:
// its ranks run each layer in lock-step) draws per micro-batch a compute-time noise of CV
// sigma_e and has a persistent offset of CV sigma_p; a step of m micro-batches per replica
// then varies by sigma = sqrt(sigma_p^2 + sigma_e^2 / m), and the gradient synchronisation
// waits for the slowest of N = GPUs / TP workers. Expected extra time (not simulated: added to
// the folded or explicit step):
//   delay = compute x sigma x z_N,  z_N = E[max of N standard normals] ~ Phi^-1((N - 0.375) /
//   (N + 0.25)) (Blom), 0 for one worker.
// With a synchronisation inside every micro-batch among `sync_workers` >= 2 workers (FP8
// delayed scaling's amax all-reduce, amax_sync()), each micro-batch waits for the slowest of
// them, so its noise is not averaged over the step:
//   delay = compute x max(sigma x z_N, sqrt(sigma_p^2 + sigma_e^2) x z_sync_workers).
// Sources for the defaults (cluster.variability): ByteDance's released production traces
// (StragglerAnalysis, OSDI'25 artifact): persistent per-worker SD 0.27-0.37%, per-micro-batch
// residual 1.1-1.9%; a Monte-Carlo with sigma_p 0.4% and sigma_e 2% reproduces the step jitter
// of NVIDIA's MLPerf GPT-3 logs at 512-10,752 GPUs (docs/stragglers.md).
double straggler_delay(double compute_s, double gpus, int tensor_parallel, double microbatches,
                       double microbatch_noise_cv, double worker_offset_cv, double sync_workers = 0.0);

// FP8 delayed scaling (precision fp8): Transformer Engine reduces the amaxes of every FP8
// tensor of an fp8_autocast region when the region's forward exits, and those of its backward
// when the backward of its first module ends (transformer_engine/pytorch/fp8.py,
// FP8GlobalStateManager.reduce_and_update_fp8_tensors: torch.distributed.all_reduce(MAX,
// async_op=False), which the compute stream waits on). Megatron-core opens one region per model
// chunk (TransformerBlock) with the group get_amax_reduction_group(with_context_parallel=True,
// tp_only_amax_red): TP x DP x CP ranks of the stage by default, TP x CP with
// --tp-only-amax-red. So every forward and backward of every chunk ends in a small all-reduce
// over that group: 2 v m per stage and step, each at NCCL's latency for the group (tree or
// ring, LL, nccl_tuning.h), and each a point where the group's workers wait for the slowest.
struct AmaxSync {
  double workers = 0.0;    // TP groups in the amax group (the waits' N); 0: no synchronisation
  double syncs = 0.0;      // all-reduces per stage and step: 2 x chunks x micro-batches
  double latency_s = 0.0;  // their summed NCCL time per step
};
AmaxSync amax_sync(const StepInput& in);

// The step program simulate_step replays: block costs from the calibrated compute model,
// then build_step_program with input.program (for exporting it, e.g. as Chakra traces).
StepProgram build_program(const StepInput& input);

}  // namespace ct::replay
