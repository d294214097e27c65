#include "models/scenario/model_configs.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "models/reliability/campaign.h"
#include "models/scenario/loader.h"
#include "models/scenario/reliability_report.h"
#include "models/topology/topology.h"
#include "models/trace/gpu_file.h"
#include "models/trace/trace_import.h"
#include "models/workload/layer_ops.h"
#include "models/workload/layout.h"
#include "models/workload/memory.h"
#include "models/workload/schedule.h"

namespace ct::scenario {
namespace {

std::string format_watts(double w) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g W", w);
  return buf;
}

}  // namespace

hardware::GpuSpec gpu_spec(const Config& c) {
  hardware::GpuSpec g = hardware::gpu(c.cluster.gpu);
  const GpuOverrides& o = c.cluster.gpu_spec;
  if (o.bf16_tflops > 0) g.bf16_dense_flops = o.bf16_tflops * 1e12;
  if (o.fp8_tflops > 0) g.fp8_dense_flops = o.fp8_tflops * 1e12;
  if (o.fp4_tflops > 0) g.fp4_dense_flops = o.fp4_tflops * 1e12;
  if (o.hbm.n > 0) g.hbm_bytes = o.hbm.as_double();
  if (o.hbm_bandwidth.bps() > 0) g.hbm_bytes_per_s = o.hbm_bandwidth.bytes_per_second();
  if (o.tdp.watts > 0) g.tdp_watts = o.tdp.watts;
  if (o.power_limit.watts > 0) g.power_limit_watts = o.power_limit.watts;
  if (o.host_link.bps() > 0) g.host_link_bytes_per_s = o.host_link.bytes_per_second();
  if (c.cluster.nvlink.bps() > 0) g.nvlink_bytes_per_s = c.cluster.nvlink.bytes_per_second();
  return g;
}

hardware::NodeSpec node_spec(const Config& c) {
  hardware::NodeSpec n;
  n.gpu = gpu_spec(c);
  n.gpus_per_node = c.cluster.gpus_per_node;
  n.nics_per_node = c.cluster.nics_per_node;
  n.nic_rate = c.cluster.nic;
  n.nvlink_rate = sim::Bandwidth::bytes_per_s(n.gpu.nvlink_bytes_per_s);
  n.nvlink_latency = c.cluster.nvlink_latency;
  // cluster.pcie 0: the GPU's own PCIe generation (the catalog's, gpu_catalog.cpp).
  n.pcie_rate =
      c.cluster.pcie.bps() > 0 ? c.cluster.pcie : sim::Bandwidth::bytes_per_s(n.gpu.pcie_bytes_per_s);
  // cluster.nvlink_domain 0: the catalog system's domain (NVL72) when whole nodes tile it, else
  // the node. An explicit value that is not a multiple of gpus_per_node is an error (validate).
  n.nvlink_domain =
      n.gpus_per_node > 0 && c.cluster.nvlink_domain % n.gpus_per_node == 0 ? c.cluster.nvlink_domain : 0;
  if (c.cluster.nvlink_domain == 0 && n.gpu.nvlink_domain > 0 && n.gpus_per_node > 0 &&
      n.gpu.nvlink_domain % n.gpus_per_node == 0) {
    n.nvlink_domain = n.gpu.nvlink_domain;
  }
  if (!c.cluster.gpu_file.empty()) {
    trace::GpuFile file;
    try {
      file = trace::read_gpu_file(c.cluster.gpu_file);
    } catch (const trace::TraceError& e) {
      throw ScenarioError({e.what()});
    }
    if (file.base_gpu != c.cluster.gpu) {
      throw ScenarioError({"cluster.gpu_file: " + c.cluster.gpu_file + ": fitted on " + file.base_gpu +
                           " but cluster.gpu is " + c.cluster.gpu + "; set cluster.gpu to " + file.base_gpu});
    }
    n.compute_calibration = file.calibration;
    // A fit to a trace already holds that run's steady clock: no second steady-state derating.
    n.gpu.sustained_gemm = n.gpu.sustained_attention = n.gpu.memory_power = 0.0;
    n.gpu.sustained_basis.clear();
  }
  return n;
}

topology::FabricConfig fabric_config(const Config& c) {
  topology::FabricConfig f;
  f.topology = c.cluster.fabric.topology;
  f.tiers = c.cluster.fabric.tiers;
  f.switch_radix = c.cluster.fabric.switch_radix;
  f.oversubscription = c.cluster.fabric.oversubscription;
  f.planes = c.cluster.fabric.planes;
  f.routing = c.cluster.fabric.routing;
  // Dual-homed NICs (cluster.fabric.nic_uplinks > 1): one port per plane of a multi-plane
  // fabric; validate() refuses the combinations this does not cover.
  if (c.cluster.fabric.nic_uplinks > 1 && f.topology == "rail_optimized") {
    f.topology = "multi_plane";
    f.planes = c.cluster.fabric.nic_uplinks;
  }
  f.link_rate = c.cluster.nic;
  f.link_latency = c.cluster.fabric.link_latency;
  f.switch_latency = c.cluster.fabric.switch_latency;
  f.nodes = c.cluster.nodes;
  f.nics_per_node = c.cluster.nics_per_node;
  return f;
}

network::ClusterSpec cluster_spec(const Config& c) {
  network::ClusterSpec spec;
  spec.node = node_spec(c);
  spec.nodes = c.cluster.nodes;
  spec.fabric = fabric_config(c);
  return spec;
}

network::NetworkParams network_params(const Config& c) {
  network::NetworkParams p;
  p.protocol_efficiency = c.network.protocol_efficiency;
  p.solve_quantum = c.network.solve_quantum;
  p.qps_per_connection = c.network.qps_per_connection;
  return p;
}

collective::CollectiveParams collective_params(const Config& c) {
  collective::CollectiveParams p;
  p.channels = c.network.channels;
  p.ctas = c.network.ctas;
  p.step_latency = c.network.collective_step_latency;
  const std::string& a = c.network.collective_algorithm;
  p.algorithm = a == "ring"        ? collective::Algorithm::ring
                : a == "tree"      ? collective::Algorithm::tree
                : a == "nvls"      ? collective::Algorithm::nvls
                : a == "nvls_tree" ? collective::Algorithm::nvls_tree
                                   : collective::Algorithm::automatic;
  return p;
}

network::PacketParams packet_params(const Config& c) {
  network::PacketParams p;
  p.mtu_bytes = c.network.mtu.n;
  p.switch_buffer_bytes = c.cluster.fabric.switch_buffer.n;
  p.pfc.enabled = c.network.pfc.enabled;
  p.pfc.xoff_bytes = c.network.pfc.xoff.n;
  p.pfc.xon_bytes = c.network.pfc.xon.n;
  p.pfc.dynamic_alpha = c.network.pfc.alpha;
  p.pfc.cable_m = c.cluster.fabric.cable_length_m;
  p.pfc.watchdog = c.network.pfc.watchdog;
  p.ecn.kmin_bytes = c.network.ecn.kmin.n;
  p.ecn.kmax_bytes = c.network.ecn.kmax.n;
  p.ecn.pmax = c.network.ecn.pmax;
  p.ecn.mark_on_dequeue = c.network.ecn.mark_on == "dequeue";
  const DcqcnSection& d = c.network.dcqcn;
  p.dcqcn = network::dcqcn_profile(d.profile.empty() ? "connectx" : d.profile, c.cluster.nic.bps());
  if (d.g > 0.0) p.dcqcn.g = d.g;
  if (d.initial_alpha > 0.0) p.dcqcn.initial_alpha = d.initial_alpha;
  if (d.alpha_period > sim::Duration::zero()) p.dcqcn.alpha_period = d.alpha_period;
  if (d.rate_reduce_period > sim::Duration::zero()) p.dcqcn.rate_reduce_period = d.rate_reduce_period;
  if (d.min_dec_factor > 0.0) p.dcqcn.min_dec_factor = d.min_dec_factor;
  if (d.min_rate.bps() > 0.0) p.dcqcn.min_rate_bps = d.min_rate.bps();
  if (d.clamp_target == "yes") p.dcqcn.clamp_target = true;
  if (d.clamp_target == "no") p.dcqcn.clamp_target = false;
  if (d.increase_period > sim::Duration::zero()) p.dcqcn.increase_period = d.increase_period;
  if (d.byte_counter.n > 0) p.dcqcn.byte_counter = d.byte_counter.n;
  if (d.fast_recovery_steps > 0) p.dcqcn.fast_recovery_steps = d.fast_recovery_steps;
  if (d.rai.bps() > 0.0) p.dcqcn.rai_bps = d.rai.bps();
  if (d.rhai.bps() > 0.0) p.dcqcn.rhai_bps = d.rhai.bps();
  if (d.cnp_interval > sim::Duration::zero()) p.dcqcn.cnp_interval = d.cnp_interval;
  p.congestion_control = c.network.congestion_control == "none" ? network::CongestionControl::none
                                                                : network::CongestionControl::dcqcn;
  return p;
}

hardware::PowerModel power_model(const Config& c) {
  hardware::PowerModel m;
  m.idle_fraction = c.cluster.power.idle_fraction;
  m.host_per_gpu_fraction = c.cluster.power.host_per_gpu;
  m.switch_watts = c.cluster.power.switch_power.watts;
  return m;
}

namespace {
// The stacks that run Megatron-core with Transformer Engine.
bool megatron_stack(const std::string& stack) { return stack == "megatron-core" || stack == "nemo"; }

// Megatron-core's selective-recompute modules (TransformerConfig.recompute_modules) the twin
// replays (workload::recompute_module).
constexpr std::array<std::pair<std::string_view, uint32_t>, 7> kRecomputeModules{{
    {"core_attn", workload::recompute_module::core_attn},
    {"moe_act", workload::recompute_module::moe_act},
    {"layernorm", workload::recompute_module::layernorm},
    {"mla_up_proj", workload::recompute_module::mla_up_proj},
    {"mlp", workload::recompute_module::mlp},
    {"moe", workload::recompute_module::moe},
    {"shared_experts", workload::recompute_module::shared_experts},
}};

// The comma-separated names of training_job.runtime.recompute_modules, trimmed, empty ones
// dropped.
std::vector<std::string> recompute_module_names(const std::string& list) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(list);
  while (std::getline(in, item, ',')) {
    const size_t a = item.find_first_not_of(" \t"), b = item.find_last_not_of(" \t");
    if (a != std::string::npos) out.push_back(item.substr(a, b - a + 1));
  }
  return out;
}

// Their recompute_module bits (unknown names count for none; recompute_module_problems reports
// them).
uint32_t recompute_module_mask(const std::string& list) {
  uint32_t mask = 0;
  for (const std::string& name : recompute_module_names(list)) {
    for (const auto& [known, bit] : kRecomputeModules) {
      if (name == known) mask |= bit;
    }
  }
  return mask;
}

std::string shown_fraction(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// data_parallel 0 = every GPU left after the hot spares: resolves it in place and returns how
// it was derived (appended to the layout errors it causes), or "" when it was given.
std::string resolve_data_parallel(Config& c) {
  auto& par = c.training_job.parallelism;
  if (par.data_parallel != 0) return "";
  const int nodes = usable_nodes(c);
  const int64_t gpus = static_cast<int64_t>(nodes) * c.cluster.gpus_per_node;
  const int64_t per_replica =
      static_cast<int64_t>(par.tensor_parallel) * par.pipeline_parallel * par.context_parallel;
  par.data_parallel = static_cast<int>(std::max<int64_t>(1, gpus / per_replica));
  return " (data_parallel " + std::to_string(par.data_parallel) + " was derived: " + std::to_string(nodes) +
         " of " + std::to_string(c.cluster.nodes) +
         " nodes after recovery.hot_spares = " + shown_fraction(c.recovery.hot_spares) + " keeps " +
         std::to_string(c.cluster.nodes - nodes) + " as hot spares, x " +
         std::to_string(c.cluster.gpus_per_node) + " GPUs / (TP x PP x CP = " + std::to_string(per_replica) +
         "); give training_job.parallelism.data_parallel, or recovery.hot_spares: 0)";
}
}  // namespace

int usable_nodes(const Config& c) {
  const auto spares = static_cast<int>(std::ceil(c.recovery.hot_spares * c.cluster.nodes - 1e-9));
  return std::max(1, c.cluster.nodes - spares);
}

workload::JobSpec job_spec(const Config& c) {
  workload::JobSpec j;
  j.model = c.training_job.model;
  j.parallelism = c.training_job.parallelism;
  j.global_batch_size = c.training_job.global_batch_size;
  j.micro_batch_size = c.training_job.micro_batch_size;
  j.recompute_granularity = c.training_job.runtime.recompute_granularity;
  j.recompute_layers = c.training_job.runtime.recompute_layers;
  j.attention = c.training_job.runtime.attention;
  j.attention_kernel = c.training_job.runtime.attention_kernel;
  j.torch_compile = c.training_job.runtime.torch_compile;
  const std::string& loss = c.training_job.runtime.compile_loss;
  j.compiled_loss = loss == "compiled" ||
                    (loss == "auto" && j.torch_compile && c.training_job.runtime.stack == "torchtitan");
  j.stack = c.training_job.runtime.stack;
  const std::string& ce = c.training_job.runtime.cross_entropy_fusion;
  j.te_cross_entropy = ce == "te"        ? workload::JobSpec::TeCrossEntropy::in_place
                       : ce == "te-2.18" ? workload::JobSpec::TeCrossEntropy::fp32_grad
                                         : workload::JobSpec::TeCrossEntropy::no;
  j.precision = c.training_job.runtime.precision;
  const std::string& fp8_params = c.training_job.runtime.fp8_params;
  j.fp8_params = workload::is_fp8(j) && (fp8_params == "yes" || (fp8_params == "auto" && j.stack == "nemo"));
  j.master_remainders = c.training_job.runtime.master_weights == "remainder";
  j.offload_activation_layers = c.training_job.runtime.offload_activation_layers;
  j.moe_a2a_overlap = c.training_job.runtime.moe_a2a_overlap;
  j.recompute_modules = recompute_module_mask(c.training_job.runtime.recompute_modules);
  const std::string& dispatcher = c.training_job.runtime.moe_dispatcher;
  j.moe_dispatcher = dispatcher == "deepep"     ? workload::JobSpec::MoeDispatcher::deepep
                     : dispatcher == "hybridep" ? workload::JobSpec::MoeDispatcher::hybridep
                                                : workload::JobSpec::MoeDispatcher::alltoall;
  const std::string& host_sync = c.training_job.runtime.moe_host_sync;
  j.moe_host_sync =
      host_sync == "yes" || (host_sync == "auto" && megatron_stack(j.stack) && workload::is_moe(j.model));
  const std::string& async = c.training_job.runtime.tp_async_backward;
  j.tp_async_backward = async == "on" || (async == "auto" && megatron_stack(j.stack));
  const std::string& fp32_grads = c.training_job.runtime.grad_reduce_in_fp32;
  j.grad_reduce_bytes = fp32_grads == "yes" ? 4 : fp32_grads == "no" ? 2 : 0;
  j.gradient_accumulation_fusion = c.training_job.runtime.gradient_accumulation_fusion;
  return j;
}

namespace {

// faults[i]: its kind acts where it is accepted (issue 19), its keys are in range and used.
void fault_problems(const Config& c, size_t i, std::vector<std::string>& problems) {
  const FaultSpec& f = c.faults[i];
  const std::string at = "faults[" + std::to_string(i) + "]";
  if (f.rank >= c.cluster_gpus()) {
    problems.push_back(at + ".rank: got " + std::to_string(f.rank) + ", expected below " +
                       std::to_string(c.cluster_gpus()) + " GPUs");
  }
  if (f.node >= c.cluster.nodes) {
    problems.push_back(at + ".node: got " + std::to_string(f.node) +
                       ", expected below cluster.nodes = " + std::to_string(c.cluster.nodes));
  }
  if (f.nic >= c.cluster.nics_per_node) {
    problems.push_back(at + ".nic: got " + std::to_string(f.nic) +
                       ", expected below cluster.nics_per_node = " + std::to_string(c.cluster.nics_per_node));
  }
  const bool needs_rank = f.kind == "gpu_throttle";
  const bool stops_node = f.kind == "node_kill" || f.kind == "hang";
  const bool needs_node = stops_node || f.kind == "pause_storm" || f.kind == "slow_receiver";
  const bool needs_link = f.kind == "link_degrade" || f.kind == "link_down";
  // Every fault kind acts where it is accepted (issue 19); elsewhere it is an error, never
  // silently ignored. Keys a kind does not use are errors too.
  const bool training = c.has("training_job"), traffic = !training && c.has("traffic");
  if (stops_node && !training) {
    problems.push_back(at + ".kind: " + f.kind + " acts in training steps (ranks that stop); got " +
                       (traffic ? "a traffic study" : "a trace replay"));
  }
  if ((f.kind == "link_down" || f.kind == "switch_down") && !(training && c.network.mode == "flow")) {
    problems.push_back(at + ".kind: " + f.kind +
                       " acts in training steps with network.mode flow (rerouting of transfers in "
                       "flight); got " +
                       (training ? "network.mode " + c.network.mode
                                 : std::string(traffic ? "a traffic study" : "a trace replay")));
  }
  if (f.kind == "switch_down" && f.switch_name.empty()) {
    problems.push_back(at + ".switch: missing; switch_down needs a switch name, e.g. 'spine0.pod0'");
  }
  if ((f.kind == "link_degrade" || f.kind == "slow_receiver") &&
      !(training && c.network.mode != "analytical")) {
    problems.push_back(at + ".kind: " + f.kind +
                       " acts in training steps with network.mode flow or packet; got " +
                       (training ? "network.mode analytical (closed-form collectives have no per-link state)"
                                 : std::string(traffic ? "a traffic study" : "a trace replay")));
  }
  if (f.kind == "pause_storm" && !(traffic && c.network.mode == "packet")) {
    problems.push_back(at + ".kind: pause_storm acts in traffic studies with network.mode packet only");
  }
  const auto unused = [&](bool given, const char* key) {
    if (given) problems.push_back(at + "." + key + ": not used by kind " + f.kind);
  };
  const bool timed = f.kind == "link_degrade" || f.kind == "slow_receiver" || f.kind == "pause_storm" ||
                     f.kind == "link_down" || f.kind == "switch_down" || stops_node;
  unused(f.rank >= 0 && f.kind != "gpu_throttle", "rank");
  unused(f.node >= 0 && !needs_node, "node");
  unused(f.nic >= 0 && f.kind != "slow_receiver" && f.kind != "pause_storm", "nic");
  unused(!f.link.empty() && f.kind != "link_degrade" && f.kind != "link_down", "link");
  unused(!f.switch_name.empty() && f.kind != "switch_down", "switch");
  unused(f.factor != 1.0 && (f.kind == "pause_storm" || f.kind == "link_down" || f.kind == "switch_down"),
         "factor");
  unused(f.at > Duration::zero() && !timed, "at (gpu_throttle lasts the whole run)");
  unused(f.duration > Duration::zero() && !(f.kind == "link_degrade" || f.kind == "slow_receiver" ||
                                            f.kind == "link_down" || f.kind == "switch_down"),
         f.kind == "pause_storm" ? "duration (a storm lasts until the PFC watchdog ends it)"
         : stops_node            ? "duration (a stopped node stays stopped until the job fails)"
                                 : "duration (gpu_throttle lasts the whole run)");
  if (needs_rank && f.rank < 0)
    problems.push_back(at + ".rank: missing; " + f.kind + " needs the rank it slows");
  if (needs_node && f.node < 0) problems.push_back(at + ".node: missing; " + f.kind + " needs a node");
  if (needs_link && f.link.empty())
    problems.push_back(at + ".link: missing; " + f.kind + " needs a link name");
}

// training_job.runtime: keys that only hold together on some stacks and layouts.
// master_weights remainder completes fp32 masters from bf16 weights: the stacks whose working
// weights are 2 bytes (memory.cpp stack_memory), without FP8 primary weights (job_spec's fp8_params).
void master_weight_problems(const Config& c, std::vector<std::string>& problems) {
  if (c.training_job.runtime.master_weights != "remainder") return;
  const std::string& stack = c.training_job.runtime.stack;
  const workload::JobSpec job = job_spec(c);
  const bool bf16_weights = workload::stack_memory(workload::parse_stack(stack)).weight_bytes == 2;
  const bool fp8_weights = job.fp8_params;
  if (!bf16_weights || fp8_weights) {
    problems.push_back("training_job.runtime.master_weights: got \"remainder\" on stack \"" + stack + "\"" +
                       (fp8_weights ? " with FP8 primary weights (fp8_params)" : "") +
                       "; expected bf16 model weights whose 16 bits complete the fp32 master (stacks "
                       "megatron-core, nemo, deepspeed, deepspeed-2021, without fp8_params), or fp32");
  }
}

// training_job.runtime.recompute_modules: known names, under Megatron's selective recompute, and
// each module present in the model (a module the model lacks would be accepted and ignored).
void recompute_module_problems(const Config& c, std::vector<std::string>& problems) {
  const std::string& list = c.training_job.runtime.recompute_modules;
  const std::vector<std::string> names = recompute_module_names(list);
  if (names.empty()) return;
  const std::string key = "training_job.runtime.recompute_modules: got \"" + list + "\"";
  const auto& rt = c.training_job.runtime;
  if (rt.recompute_granularity != "selective") {
    problems.push_back(key + " with recompute_granularity \"" + rt.recompute_granularity +
                       "\"; expected recompute_granularity selective (the modules are Megatron's selective "
                       "recompute) or no modules");
  }
  if (!megatron_stack(rt.stack)) {
    problems.push_back(key + " on stack \"" + rt.stack + "\"; expected the megatron-core or nemo stack");
  }
  const auto& m = c.training_job.model;
  const bool moe = m.moe.experts > 0, dense_mlp = !moe || m.moe.dense_layers > 0;
  for (const std::string& name : names) {
    const bool known = std::any_of(kRecomputeModules.begin(), kRecomputeModules.end(),
                                   [&](const auto& k) { return k.first == name; });
    const std::string why =
        !known ? "a comma-separated list of core_attn, moe_act, layernorm, mla_up_proj, mlp, "
                 "shared_experts, moe"
        : (name == "moe_act" || name == "moe") && !moe ? "an MoE model for " + name
        : name == "shared_experts" && m.moe.shared_experts == 0
            ? "a model with shared experts for shared_experts"
        : name == "mla_up_proj" && m.mla.kv_lora_rank == 0 ? "latent attention (model.mla) for mla_up_proj"
        : name == "mlp" && !dense_mlp ? "a dense MLP (a dense model or moe.dense_layers) for mlp"
                                      : "";
    if (!why.empty()) problems.push_back(key + ": \"" + name + "\" needs " + why);
  }
}

void runtime_problems(const Config& c, std::vector<std::string>& problems) {
  recompute_module_problems(c, problems);
  const std::string& precision = c.training_job.runtime.precision;
  const std::string& stack = c.training_job.runtime.stack;
  if (c.training_job.runtime.torch_compile && stack != "torchtitan" && stack != "pytorch" &&
      stack != "composer") {
    problems.push_back(
        "training_job.runtime.torch_compile: true with training_job.runtime.stack \"" + stack +
        "\", whose kernels are fused already; expected a PyTorch-native stack (torchtitan, pytorch, "
        "composer) or false");
  }
  if (c.training_job.runtime.compile_loss == "compiled" &&
      (!c.training_job.runtime.torch_compile || (stack != "torchtitan" && stack != "pytorch"))) {
    problems.push_back(
        "training_job.runtime.compile_loss: got \"compiled\" with torch_compile " +
        std::string(c.training_job.runtime.torch_compile ? "true" : "false") + " on stack \"" + stack +
        "\"; expected torch_compile: true on the torchtitan or pytorch stack (composer's loss is a fused "
        "kernel already), or auto / eager");
  }
  if (const std::string& ce = c.training_job.runtime.cross_entropy_fusion;
      (ce == "te" || ce == "te-2.18") && !megatron_stack(stack)) {
    problems.push_back(
        "training_job.runtime.cross_entropy_fusion: got \"" + ce + "\" on stack \"" + stack +
        "\"; expected the megatron-core or nemo stack (Megatron's --cross-entropy-fusion-impl), "
        "or auto / native");
  }
  if (const int off = c.training_job.runtime.offload_activation_layers; off > 0) {
    const std::string why =
        off >= c.training_job.model.layers
            ? "fewer than training_job.model.layers (" + std::to_string(c.training_job.model.layers) + ")"
        : c.training_job.parallelism.pipeline_parallel > 1
            ? "pipeline_parallel 1 (Megatron has no CPU offloading with PP)"
        : c.training_job.runtime.recompute_granularity != "none"
            ? "recompute_granularity none (Megatron refuses CPU offloading with recomputation)"
        : !megatron_stack(stack) ? "a Transformer Engine stack (megatron-core, nemo)"
                                 : "";
    if (!why.empty()) {
      problems.push_back("training_job.runtime.offload_activation_layers: got " + std::to_string(off) +
                         ", expected 0 or " + why);
    }
  }
  if (c.training_job.runtime.moe_a2a_overlap) {
    const auto& par = c.training_job.parallelism;
    const std::string why =
        !(c.training_job.model.moe.experts > 0 && par.expert_parallel > 1)
            ? "an MoE model with expert_parallel > 1"
        : par.pipeline_parallel > 1 && par.virtual_pipeline <= 1
            ? "pipeline_parallel 1 or virtual_pipeline > 1 (Megatron's combined 1F1B schedule exists for "
              "no pipelining and for the interleaved one)"
        : c.training_job.runtime.recompute_granularity == "full" ? "recompute_granularity none or selective"
        : !megatron_stack(stack)                                 ? "the megatron-core or nemo stack"
                                                                 : "";
    if (!why.empty()) {
      problems.push_back("training_job.runtime.moe_a2a_overlap: got true, expected false or " + why);
    }
  }
  if (c.training_job.runtime.moe_dispatcher != "alltoall" &&
      !(c.training_job.model.moe.experts > 0 && c.training_job.parallelism.expert_parallel > 1)) {
    problems.push_back("training_job.runtime.moe_dispatcher: got \"" + c.training_job.runtime.moe_dispatcher +
                       "\", expected alltoall or an MoE model with expert_parallel > 1");
  }
  if (const std::string& sync = c.training_job.runtime.moe_host_sync;
      sync != "auto" && !(c.training_job.model.moe.experts > 0 && megatron_stack(stack))) {
    problems.push_back("training_job.runtime.moe_host_sync: got \"" + sync + "\" on stack \"" + stack +
                       "\"; expected auto or an MoE model on the megatron-core or nemo stack (Megatron's "
                       "token dispatchers)");
  }
  const bool megatron = megatron_stack(stack);
  if (c.training_job.runtime.grad_reduce_in_fp32 != "auto" && !megatron) {
    problems.push_back(
        "training_job.runtime.grad_reduce_in_fp32: got \"" + c.training_job.runtime.grad_reduce_in_fp32 +
        "\" on stack \"" + stack +
        "\"; expected auto (the stack's own gradient precision) or the megatron-core or nemo stack");
  }
  if (!c.training_job.runtime.gradient_accumulation_fusion && !megatron) {
    problems.push_back("training_job.runtime.gradient_accumulation_fusion: got false on stack \"" + stack +
                       "\"; expected true or the megatron-core or nemo stack (Megatron's "
                       "--no-gradient-accumulation-fusion)");
  }
  master_weight_problems(c, problems);
  if (c.training_job.runtime.fp8_params == "yes" && (precision == "bf16" || !megatron_stack(stack))) {
    problems.push_back(
        "training_job.runtime.fp8_params: got \"yes\" with precision \"" + precision + "\" on stack \"" +
        stack +
        "\"; expected an FP8 precision (fp8, fp8-cs, mxfp8) or nvfp4 on the megatron-core or nemo stack "
        "(Transformer Engine's FP8 / NVFP4 parameters), or auto / no");
  }
}

// training_job.runtime.precision other than bf16: the GPU's tensor cores and, for NVFP4, the stack
// (Transformer Engine's recipe). Throws ScenarioError naming the key.
void check_precision(const Config& c) {
  const std::string& precision = c.training_job.runtime.precision;
  const hardware::GpuSpec g = gpu_spec(c);
  if (!(g.fp8_gemm_ratio > 0.0)) {
    throw ScenarioError({"training_job.runtime.precision: got \"" + precision + "\", but cluster.gpu " +
                         c.cluster.gpu + " has no FP8 tensor cores; expected bf16"});
  }
  if (precision == "mxfp8" && g.sm_arch < 100) {
    throw ScenarioError({"training_job.runtime.precision: got \"mxfp8\", but cluster.gpu " + c.cluster.gpu +
                         " has no block-scaled FP8 (Blackwell and later); expected bf16, fp8 or fp8-cs"});
  }
  if (precision == "nvfp4" && !(g.fp4_dense_flops > 0.0)) {
    throw ScenarioError({"training_job.runtime.precision: got \"nvfp4\", but cluster.gpu " + c.cluster.gpu +
                         " has no FP4 tensor cores (B200, B300, GB200, GB300, or a dense peak in "
                         "cluster.gpu_spec.fp4_tflops); expected bf16 or an FP8 precision"});
  }
  if (precision == "nvfp4" && !megatron_stack(c.training_job.runtime.stack)) {
    throw ScenarioError({"training_job.runtime.precision: got \"nvfp4\" on stack \"" +
                         c.training_job.runtime.stack +
                         "\"; NVFP4 training is Transformer Engine's recipe (NVFP4BlockScaling): "
                         "expected the megatron-core or nemo stack"});
  }
}

}  // namespace

void check_config(Config& c) {
  std::vector<std::string> problems;
  auto guard = [&](const char* key, auto&& fn) {
    try {
      fn();
    } catch (const ScenarioError& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    } catch (const std::exception& e) {
      const std::string what = e.what();
      problems.push_back(what.find(key) == std::string::npos && std::string(key) != ""
                             ? std::string(key) + ": " + what
                             : what);
    }
  };
  guard("cluster.gpu", [&] { hardware::gpu(c.cluster.gpu); });
  bool power_limit_ok = true;
  if (c.cluster.gpu_spec.power_limit.watts > 0 && hardware::find_gpu(c.cluster.gpu) != nullptr) {
    const hardware::GpuSpec g = gpu_spec(c);
    const double idle = c.cluster.power.idle_fraction * g.tdp_watts;
    if (g.power_limit_watts > g.tdp_watts || g.power_limit_watts <= idle) {
      problems.push_back("cluster.gpu_spec.power_limit: got " + format_watts(g.power_limit_watts) +
                         ", expected above the idle power " + format_watts(idle) +
                         " and at most the rated board power " + format_watts(g.tdp_watts) + " of " +
                         c.cluster.gpu + " (cluster.gpu_spec.tdp)");
      power_limit_ok = false;
    }
  }
  if (power_limit_ok) guard("cluster", [&] { node_spec(c).validate(); });
  if (c.cluster.nvlink_domain > 0 && c.cluster.gpus_per_node > 0 &&
      c.cluster.nvlink_domain % c.cluster.gpus_per_node != 0) {
    problems.push_back(
        "cluster.nvlink_domain: got " + std::to_string(c.cluster.nvlink_domain) +
        ", expected 0 or a multiple of cluster.gpus_per_node = " + std::to_string(c.cluster.gpus_per_node));
  }
  const auto& fabric = c.cluster.fabric;
  if (fabric.nic_uplinks > 1 && fabric.topology != "rail_optimized" &&
      !(fabric.topology == "multi_plane" && fabric.planes == fabric.nic_uplinks)) {
    problems.push_back("cluster.fabric.nic_uplinks: got " + std::to_string(fabric.nic_uplinks) +
                       ", expected 1 with " +
                       (fabric.topology == "multi_plane"
                            ? "cluster.fabric.planes = " + std::to_string(fabric.planes) + " (or equal to it)"
                            : "topology " + fabric.topology +
                                  " (dual-homed NICs are built for rail_optimized and "
                                  "multi_plane)"));
  }
  guard("cluster.fabric", [&] { topology::check_fabric(fabric_config(c)); });
  if (c.network.mode == "packet") guard("network", [&] { network::validate(packet_params(c)); });
  guard("failures", [&] { failure_model(c); });
  if (!(c.campaign.duration > 0 && c.campaign.duration <= reliability::kMaxCampaignSeconds)) {
    problems.push_back(
        "campaign.duration: got " + std::to_string(c.campaign.duration) +
        " s, expected more than 0 and at most 100 years (3.156e9 s), the campaign clock's range");
  }

  if (c.has("training_job")) {
    auto& par = c.training_job.parallelism;
    const std::string derived_dp = resolve_data_parallel(c);
    const size_t before = problems.size();
    guard("training_job", [&] { workload::validate(job_spec(c), c.cluster_gpus()); });
    if (!derived_dp.empty()) {
      for (size_t i = before; i < problems.size(); ++i) {
        if (problems[i].find("data_parallel") != std::string::npos) problems[i] += derived_dp;
      }
    }
    runtime_problems(c, problems);
    const std::string& precision = c.training_job.runtime.precision;
    if (precision != "bf16") {
      guard("training_job.runtime.precision", [&] { check_precision(c); });
    }
    if (c.training_job.runtime.attention_kernel == "fa3") {  // needs Hopper: layer_ops.cpp says so
      guard("training_job.runtime.attention_kernel",
            [&] { (void)workload::attention_kernel_speed(job_spec(c), gpu_spec(c).sm_arch); });
    }
    if (par.microbatch_group > 0 && par.virtual_pipeline <= 1) {
      problems.push_back(
          "training_job.parallelism.microbatch_group: got " + std::to_string(par.microbatch_group) +
          ", but it groups the micro-batches of an interleaved schedule; expected 0 (unset) with "
          "virtual_pipeline 1, or virtual_pipeline > 1");
    }
    if (problems.empty() && par.virtual_pipeline > 1) {
      guard("training_job", [&] {
        workload::check_interleaving(par.pipeline_parallel, par.virtual_pipeline,
                                     workload::microbatches(job_spec(c)), par.microbatch_group);
      });
    }
    const auto& ck = c.training_job.checkpoint;
    if (ck.interval_steps > 0 && ck.interval > Duration::zero()) {
      problems.push_back("training_job.checkpoint: give interval_steps or interval, not both");
    }
  }
  if (c.has("traffic")) {
    if (c.traffic.nodes > c.cluster.nodes) {
      problems.push_back("traffic.nodes: got " + std::to_string(c.traffic.nodes) +
                         ", expected at most cluster.nodes = " + std::to_string(c.cluster.nodes));
    }
  }
  std::error_code no_throw;
  if (c.has("trace") && !std::filesystem::exists(c.trace.path, no_throw)) {
    problems.push_back("trace.path: '" + c.trace.path + "' does not exist");
  }
  if (!c.training_job.scheduling.topology_aware && c.has("training_job") && c.network.mode == "analytical") {
    problems.push_back(
        "training_job.scheduling.topology_aware: false acts in network.mode flow or packet (where links "
        "are shared); analytical collectives see no link contention, so the placement would change nothing");
  }
  for (size_t i = 0; i < c.faults.size(); ++i) fault_problems(c, i, problems);
  if (!problems.empty()) throw ScenarioError(std::move(problems));
}

}  // namespace ct::scenario
