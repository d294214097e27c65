// Typed scenario configuration. Member names are exactly the scenario keys: the parameter
// table (param_table.cpp) names each field once, by its path, and that path is both the
// key in the file and the member access here.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "models/workload/model_spec.h"
#include "sim/units.h"

namespace ct::scenario {

using sim::Bandwidth;
using sim::Bytes;
using sim::Duration;
using sim::Power;

struct GpuOverrides {  // 0 = take the catalog value of cluster.gpu
  double bf16_tflops = 0.0;
  double fp8_tflops = 0.0;
  double fp4_tflops = 0.0;
  Bytes hbm{0};
  Bandwidth hbm_bandwidth;
  Power tdp;
  Power power_limit;
  Bandwidth host_link;
};

struct FabricSection {
  std::string topology;
  int tiers = 0;
  int switch_radix = 0;
  double oversubscription = 1.0;
  int planes = 1;
  int nic_uplinks = 1;
  std::string routing;
  Duration link_latency;
  Duration switch_latency;
  Bytes switch_buffer{0};
  double cable_length_m = 0.0;
};

struct StorageSection {
  Bandwidth read;
  Bandwidth write;
  Duration metadata_latency;
  Bandwidth per_node_read;
  Bandwidth per_node_write;
  Bytes capacity{0};
  std::string network;
};

struct PowerSection {
  double idle_fraction = 0.0;
  double host_per_gpu = 0.0;
  Power switch_power;
  double pue = 1.0;
  int nodes_per_rack = 0;
  Power rack_limit;
};

struct VariabilitySection {
  double gpu_speed_cv = 0.0;
  double throttled_fraction = 0.0;
  double throttle_factor = 1.0;
  double kernel_jitter_cv = 0.0;
  double microbatch_noise_cv = 0.0;
  double worker_offset_cv = 0.0;
};

struct ClusterSection {
  std::string gpu;
  std::string gpu_file;
  GpuOverrides gpu_spec;
  int nodes = 0;
  int gpus_per_node = 0;
  Bandwidth nvlink;
  int nvlink_domain = 0;
  Duration nvlink_latency;
  int nics_per_node = 0;
  Bandwidth nic;
  Bandwidth pcie;
  FabricSection fabric;
  StorageSection storage;
  PowerSection power;
  VariabilitySection variability;
};

struct EcnSection {
  Bytes kmin{0};
  Bytes kmax{0};
  double pmax = 0.0;
  std::string mark_on;  // enqueue | dequeue
};

// DCQCN at the NICs; zero (or "profile") = the value of the profile.
struct DcqcnSection {
  std::string profile;  // connectx | sigcomm15 | hpcc-ns3
  double g = 0.0;
  double initial_alpha = 0.0;
  Duration alpha_period;
  Duration rate_reduce_period;
  double min_dec_factor = 0.0;
  Bandwidth min_rate;
  std::string clamp_target;  // profile | yes | no
  Duration increase_period;
  Bytes byte_counter{0};
  int fast_recovery_steps = 0;
  Bandwidth rai;
  Bandwidth rhai;
  Duration cnp_interval;
};

struct PfcSection {
  bool enabled = true;
  Bytes xoff{0};  // 0 = from the mlx5 headroom formula
  Bytes xon{0};
  double alpha = 0.125;
  Duration watchdog;
};

struct NetworkSection {
  std::string mode;
  Bytes mtu{0};
  EcnSection ecn;
  PfcSection pfc;
  std::string congestion_control;
  DcqcnSection dcqcn;
  std::string collective_algorithm;
  int channels = 0;
  int ctas = 0;
  int qps_per_connection = 1;
  Duration collective_step_latency;
  double protocol_efficiency = 1.0;
  Duration solve_quantum;
  std::string fold_rails;
  Duration sample_interval;
  Duration rdma_retransmit_timeout;
};

struct RuntimeSection {
  Duration collective_timeout;
  std::string recompute_granularity;
  int recompute_layers = 0;
  std::string attention;
  std::string attention_kernel;
  bool torch_compile = false;
  std::string compile_loss;
  std::string cross_entropy_fusion;
  std::string fp8_params;
  std::string master_weights;
  int offload_activation_layers = 0;
  std::string stack;
  std::string precision;
  std::string fp8_amax_reduction;
  std::string tp_async_backward;
  std::string grad_reduce_in_fp32;
  bool gradient_accumulation_fusion = true;
  bool tp_comm_overlap = false;
  bool moe_a2a_overlap = false;
  std::string moe_dispatcher;
  std::string moe_host_sync;
  std::string recompute_modules;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  bool overlap_p2p = true;
  Bytes bucket_size{0};
  std::string placement;
};

struct CheckpointSection {
  int interval_steps = 0;
  Duration interval;
  bool async_save = true;
  int keep_last_n = 0;
};

struct SchedulingSection {
  bool topology_aware = true;
};

struct TrainingJobSection {
  workload::ModelSpec model;
  workload::ParallelSpec parallelism;
  int64_t global_batch_size = 0;
  int64_t micro_batch_size = 1;
  int steps = 0;
  RuntimeSection runtime;
  CheckpointSection checkpoint;
  SchedulingSection scheduling;
};

struct TrafficSection {
  std::string pattern;
  int fan_in = 0;
  Bytes size{0};
  std::string op;
  int nodes = 0;
  double load = 0.0;
  Duration duration;
  std::string background;  // none | incast
  std::string flows_file;
};

struct TraceSection {
  std::string format;
  std::string path;
  std::string execution_trace;
  std::string recorded_gpu;
  double batch_scale = 1.0;
  std::string profiler_overhead = "auto";
  int step = -1;  // ProfilerStep#N of a Kineto trace; -1 = the last one with GPU work
};

struct FailuresSection {
  std::string profile;
  double rate_scale = 1.0;
  double node_failure_rate_per_day = 0.0;
  double gpu_failure_rate_per_day = 0.0;
  double hbm_failure_rate_per_day = 0.0;
  double nic_failure_rate_per_day = 0.0;
  double link_failure_rate_per_day = 0.0;
  double switch_failure_rate_per_day = 0.0;
  double software_failure_rate_per_day = 0.0;
  double hang_failure_rate_per_day = 0.0;
  std::string distribution;
  double weibull_shape = 1.0;
  double latent_defect_fraction = 0.0;
  Duration latent_defect_mean;
};

struct RecoverySection {
  Duration detection;
  Duration restart;
  double hot_spares = 0.0;
  Duration repair;
  Duration health_check;
  double health_check_coverage = 0.0;
};

struct CampaignSection {
  double duration = 0.0;  // seconds (Kind::long_duration)
  int repeats = 0;
  int threads = 0;
  double train_tokens = 0.0;
};

struct FaultSpec {
  std::string kind;
  int rank = -1;
  int node = -1;
  int nic = -1;
  std::string link;
  std::string switch_name;  // key "switch"
  double factor = 1.0;
  Duration at;
  Duration duration;
};

struct Config {
  std::string name;
  int64_t seed = 1;
  ClusterSection cluster;
  NetworkSection network;
  TrainingJobSection training_job;
  TrafficSection traffic;
  TraceSection trace;
  std::vector<FaultSpec> faults;
  FailuresSection failures;
  RecoverySection recovery;
  CampaignSection campaign;
  std::set<std::string> sections;  // top-level sections present in the file

  [[nodiscard]] bool has(const std::string& section) const { return sections.count(section) > 0; }
  [[nodiscard]] int64_t cluster_gpus() const {
    return static_cast<int64_t>(cluster.nodes) * cluster.gpus_per_node;
  }
};

}  // namespace ct::scenario
