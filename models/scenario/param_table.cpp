#include "models/scenario/param_table.h"

#include <stdexcept>

#include "models/scenario/model_presets.h"
#include "models/workload/memory.h"

namespace ct::scenario {
namespace {

void put(int& dst, const Value& v) {
  if (v.i > std::numeric_limits<int>::max() || v.i < std::numeric_limits<int>::min()) {
    throw std::out_of_range("does not fit a 32-bit integer");
  }
  dst = static_cast<int>(v.i);
}
void put(int64_t& dst, const Value& v) { dst = v.i; }
void put(double& dst, const Value& v) { dst = v.d; }
void put(bool& dst, const Value& v) { dst = v.b; }
void put(std::string& dst, const Value& v) { dst = v.s; }
void put(Duration& dst, const Value& v) { dst = v.duration; }
void put(Bytes& dst, const Value& v) { dst = v.bytes; }
void put(Bandwidth& dst, const Value& v) { dst = v.rate; }
void put(Power& dst, const Value& v) { dst = v.power; }

// P(cluster.nodes, count, "1280", "doc") declares the key "cluster.nodes" and assigns
// Config::cluster.nodes: the path is written once.
template <typename Target>
ParamSpec<Target> make(std::string path, Kind kind, std::string fallback, std::string doc,
                       void (*assign)(Target&, const Value&)) {
  ParamSpec<Target> p;
  p.path = std::move(path);
  p.kind = kind;
  p.fallback = std::move(fallback);
  p.doc = std::move(doc);
  p.assign = assign;
  return p;
}

#define P(path, kind, fallback, doc) \
  make<Config>(#path, Kind::kind, fallback, doc, [](Config& c, const Value& v) { put(c.path, v); })
#define F(field, kind, fallback, doc)                            \
  make<FaultSpec>("faults[]." #field, Kind::kind, fallback, doc, \
                  [](FaultSpec& f, const Value& v) { put(f.field, v); })

// The RDMA fabric: topology, switches, links.
void fabric_params(std::vector<Param>& t) {
  t.push_back(P(cluster.fabric.topology, text, "\"rail_optimized\"", "Fabric construction.")
                  .one_of({"rail_optimized", "fat_tree", "multi_plane", "explicit"}));
  t.push_back(
      P(cluster.fabric.tiers, count, "3", "Switch tiers of the Clos (2 or 3).").at_least(2).at_most(3));
  t.push_back(P(cluster.fabric.switch_radix, count, "128", "Ports per switch.").at_least(4).at_most(1024));
  t.push_back(P(cluster.fabric.oversubscription, real, "1.0", "Leaf downlink:uplink ratio (1.2 means 1.2:1).")
                  .at_least(1)
                  .at_most(16));
  t.push_back(P(cluster.fabric.planes, count, "1", "Independent fabric planes (multi_plane).")
                  .at_least(1)
                  .at_most(8));
  t.push_back(
      P(cluster.fabric.nic_uplinks, count, "1",
        "Ports of every NIC, each cabled to a leaf of its own plane, at nic / nic_uplinks each: 2 = "
        "dual-homed NICs (Alibaba HPN's dual-ToR, dual-plane design, SIGCOMM'24), so a failed NIC "
        "uplink leaves the NIC its other ports instead of cutting it off. With rail_optimized it builds "
        "that many planes (multi_plane); with multi_plane it must equal cluster.fabric.planes.")
          .at_least(1)
          .at_most(8));
  t.push_back(P(cluster.fabric.routing, text, "\"ecmp\"",
                "How switches pick among equal-cost next hops. ecmp: a hash of the flow (Ethernet/RoCE "
                "ECMP; flows of different pairs may collide on an uplink). dmodk: destination-mod-k, the "
                "static routing InfiniBand subnet managers program into fat trees (OpenSM ftree): every "
                "flow to a NIC takes one path, the NICs under a leaf are reached through distinct "
                "uplinks, and a ring's neighbour exchange shares no link on a full fat tree.")
                  .one_of({"ecmp", "dmodk"}));
  t.push_back(
      P(cluster.fabric.link_latency, duration, "\"500ns\"", "Propagation delay of each fabric link."));
  t.push_back(P(cluster.fabric.switch_latency, duration, "\"600ns\"", "Forwarding latency of each switch."));
  t.push_back(P(cluster.fabric.switch_buffer, bytes, "\"64MiB\"", "Shared packet buffer per switch."));
  t.push_back(P(cluster.fabric.cable_length_m, real, "5", "Cable length in metres (PFC headroom).")
                  .at_least(0)
                  .at_most(10000));
}

// Cluster: GPUs, nodes, fabric, storage, variability, power.
void cluster_params(std::vector<Param>& t) {
  t.push_back(P(cluster.gpu, text, "\"H100-SXM\"",
                "GPU model from the catalog (A100-40GB, A100-80GB, H100-SXM, H800, H200-SXM, B200, B300, "
                "GB200, GB300)."));
  t.push_back(P(cluster.gpu_file, text, "\"\"",
                "GPU file written by 'clustertwin calibrate': its fitted compute-model parameters replace "
                "the built-in calibration (its base GPU must be cluster.gpu)."));
  t.push_back(P(cluster.gpu_spec.bf16_tflops, real, "0",
                "Overrides the catalog's dense BF16 peak, TFLOP/s (0 = catalog).")
                  .at_least(0));
  t.push_back(P(cluster.gpu_spec.fp8_tflops, real, "0",
                "Overrides the catalog's dense FP8 peak, TFLOP/s (0 = catalog).")
                  .at_least(0));
  t.push_back(P(cluster.gpu_spec.fp4_tflops, real, "0",
                "Overrides the catalog's dense FP4 peak, TFLOP/s (0 = catalog: B200 9,000, GB200 10,000, "
                "B300 13,125, GB300 15,000; none before Blackwell), the rate training_job.runtime.precision "
                "nvfp4 runs its GEMMs at.")
                  .at_least(0));
  t.push_back(
      P(cluster.gpu_spec.hbm, bytes, "\"0B\"", "Overrides the catalog's HBM capacity (0 = catalog)."));
  t.push_back(P(cluster.gpu_spec.hbm_bandwidth, rate, "\"0B/s\"",
                "Overrides the catalog's HBM bandwidth (0 = catalog)."));
  t.push_back(P(cluster.gpu_spec.tdp, power, "\"0W\"",
                "Overrides the catalog's rated board power, the power at which the datasheet peaks hold (0 = "
                "catalog)."));
  t.push_back(
      P(cluster.gpu_spec.host_link, rate, "\"0B/s\"",
        "GPU to host-memory bandwidth per direction, what activation offloading "
        "(training_job.runtime.offload_activation_layers) moves over: 0 = the catalog's (GB200/GB300: "
        "225 GB/s, their share of the superchip's 900 GB/s bidirectional NVLink-C2C; HGX B300: 64 GB/s, its "
        "host CPU's PCIe Gen5 x16 behind the ConnectX-8's Gen6 switch), else the GPU's PCIe path "
        "(cluster.pcie: "
        "HGX parts reach the host over it)."));
  t.push_back(P(cluster.gpu_spec.power_limit, power, "\"0W\"",
                "Board power limit the GPUs run at (nvidia-smi -pl; 0 = the rated board power). Below it, "
                "the tensor-core clock falls as (limit / rated)^0.303 (GH100 at 400 and 700 W: H100 NVL vs "
                "SXM datasheets), slowing GEMMs and attention but not memory-bound kernels, and each busy "
                "GPU draws the limit in the power report; e.g. torchtitan's Grand Teton H100s run at 500 W. "
                "At most the rated power."));
  t.push_back(P(cluster.nodes, count, "", "Number of GPU nodes.").at_least(1).at_most(1e6));
  t.push_back(P(cluster.gpus_per_node, count, "8", "GPUs per node, all in one NVSwitch domain.")
                  .at_least(1)
                  .at_most(72));
  t.push_back(P(cluster.nvlink, rate, "\"0B/s\"",
                "NVLink bandwidth per GPU and direction (0 = the catalog value of cluster.gpu: A100 300, "
                "H100/H200 450, H800 200, B200/B300/GB200/GB300 900 GB/s)."));
  t.push_back(P(cluster.nvlink_domain, count, "0",
                "GPUs in one NVLink switch domain, consecutive ranks across nodes (NVL72 racks: 72); "
                "TP/EP/CP groups and collectives inside it use NVLink. A multiple of cluster.gpus_per_node; "
                "0 = the catalog system's (GB200/GB300: 72), else the node.")
                  .at_most(1e5));
  t.push_back(P(cluster.nvlink_latency, duration, "\"1us\"", "NVLink/NVSwitch one-way latency."));
  t.push_back(
      P(cluster.nics_per_node, count, "8", "RDMA NICs per node, one per rail.").at_least(1).at_most(64));
  t.push_back(P(cluster.nic, rate, "\"400Gbps\"", "Line rate of each NIC (and of its leaf port)."));
  t.push_back(
      P(cluster.pcie, rate, "\"0B/s\"",
        "PCIe bandwidth between a GPU and its NIC, per direction (0 = the catalog value of cluster.gpu, its "
        "PCIe generation at x16: A100 32 (Gen4), H100/H200/H800/B200/GB200 64 (Gen5), B300/GB300 128 GB/s "
        "(Gen6, to ConnectX-8))."));
  fabric_params(t);
  t.push_back(P(cluster.storage.read, rate, "\"2TB/s\"", "Aggregate read bandwidth of the storage system."));
  t.push_back(
      P(cluster.storage.write, rate, "\"1TB/s\"", "Aggregate write bandwidth of the storage system."));
  t.push_back(P(cluster.storage.metadata_latency, duration, "\"1ms\"",
                "Metadata operation latency of the storage system."));
  t.push_back(
      P(cluster.storage.per_node_read, rate, "\"0B/s\"",
        "Read bandwidth one node reaches (its storage NICs or client); 0 = only the aggregate limits."));
  t.push_back(P(cluster.storage.per_node_write, rate, "\"0B/s\"",
                "Write bandwidth one node reaches; 0 = only the aggregate limits."));
  t.push_back(P(cluster.storage.capacity, bytes, "\"0B\"",
                "Storage capacity for checkpoints (keep_last_n of them must fit); 0 = unlimited."));
  t.push_back(P(cluster.storage.network, text, "\"frontend\"",
                "Network that carries storage traffic: a separate frontend, or the compute fabric "
                "(asynchronous checkpoint flushes then slow the training traffic).")
                  .one_of({"frontend", "compute"}));
  t.push_back(P(cluster.variability.gpu_speed_cv, fraction, "0",
                "Spread of sustained GPU speed across the cluster (coefficient of variation of a log-normal "
                "of mean 1, drawn per GPU from the seed)."));
  t.push_back(P(cluster.variability.throttled_fraction, fraction, "0",
                "Share of GPUs thermally throttled (chosen per GPU from the seed)."));
  t.push_back(P(cluster.variability.throttle_factor, fraction, "0.85", "Clock factor of a throttled GPU.")
                  .at_least(0.01));
  t.push_back(
      P(cluster.variability.microbatch_noise_cv, fraction, "0.02",
        "Stragglers: compute-time noise of each worker (TP group) per micro-batch, independent across "
        "workers; the step waits for the slowest (expected maximum over GPUs / TP workers; training_job "
        "runs, a trace replay keeps the traced ranks' timing). ByteDance production traces: 1.1-1.9% per "
        "forward or backward; 2% reproduces MLPerf GPT-3 step jitter (docs/stragglers.md)."));
  t.push_back(P(cluster.variability.worker_offset_cv, fraction, "0.004",
                "Stragglers: persistent speed spread of workers (TP groups) of a screened fleet; ByteDance "
                "traces: 0.27-0.37% (docs/stragglers.md)."));
  t.push_back(
      P(cluster.variability.kernel_jitter_cv, fraction, "0",
        "Run-to-run noise of every compute kernel (coefficient of variation of a log-normal of mean 1)."));
  t.push_back(P(cluster.power.idle_fraction, fraction, "0.15",
                "GPU power when not computing, as a share of its TDP."));
  t.push_back(P(cluster.power.host_per_gpu, fraction, "0.5",
                "Host power (CPUs, memory, NICs, fans) per GPU, as a share of the GPU TDP (DGX H100: 10.2 kW "
                "for 8 x 700 W)."));
  t.push_back(P(cluster.power.switch_power, power, "\"1500W\"",
                "Power of one fabric switch (51.2 Tb/s, 128 x 400G: about 1.5 kW)."));
  t.push_back(P(cluster.power.pue, real, "1.2", "Power usage effectiveness: facility watts per IT watt.")
                  .at_least(1)
                  .at_most(5));
  t.push_back(P(cluster.power.nodes_per_rack, count, "4", "Nodes per rack.").at_least(1).at_most(1024));
  t.push_back(
      P(cluster.power.rack_limit, power, "\"40kW\"", "Power a rack may draw (its feed and cooling)."));
}

// Network, flow mode: solver pacing, rail folding, link-failure retransmission.
void flow_mode_params(std::vector<Param>& t) {
  t.push_back(P(network.solve_quantum, duration, "\"10us\"",
                "Flow mode: max-min solves at least this far apart (a change within it of the last solve "
                "waits for the next, so it lands up to this late; 0 = exact). 10 us: training steps stay "
                "within 0.5% of the exact solver (tools/quantum_error.py, docs/performance.md); 50 us is "
                "1.5x faster on the default step at the same error there, but stretches back-to-back "
                "small collectives (nccl-tests at 64 KiB: -42% busbw)."));
  t.push_back(P(network.fold_rails, text, "\"auto\"",
                "Flow mode: auto runs only the first GPU of every tensor-parallel group, each standing for "
                "its group, whose GPUs run the same program on rails of their own (no per-GPU "
                "perturbation: gpu_throttle, variability; no link or node fault; a topology-aware "
                "placement; nics_per_node = gpus_per_node; no collective group mixing tensor-parallel "
                "ranks, as MoE expert groups folded below TP do; no trace asked for). Each transfer "
                "also loads, on fabric links that several rails share (above a rail's own leaf: a 3-tier "
                "rail-optimized "
                "fabric's spine-core links, a fat tree's leaf uplinks), the routes its siblings on the "
                "other rails take: every rank's load there, at one rate per group. A rail's own links "
                "are exact; the shared ones hold within 0.01-2% of every rank's step on the fabrics "
                "measured (docs/performance.md), 8-16x faster. Otherwise, or with no, every rank runs; "
                "the report's ranks.fold says which (tables.ranks lists every GPU either way; "
                "tables.fabric_links leaves out the links only other rails use). Analytical mode folds "
                "replicas anyway; packet mode does not fold.")
                  .one_of({"no", "auto"}));
  t.push_back(P(network.rdma_retransmit_timeout, duration, "\"4.294967s\"",
                "Flow mode, link_down faults: how long a transfer whose packets died on the failed link "
                "stalls before its RDMA queue pair retransmits on a surviving path: 4.096 us x "
                "2^NCCL_IB_TIMEOUT, NCCL's default 20 (src/transport/net_ib.cc)."));
}

// Network: fidelity, ECN/PFC, DCQCN, collectives.
void network_params(std::vector<Param>& t) {
  t.push_back(
      P(network.mode, text, "\"flow\"", "Network fidelity.").one_of({"analytical", "flow", "packet"}));
  t.push_back(P(network.mtu, bytes, "\"4KiB\"", "RoCE MTU."));
  t.push_back(P(network.ecn.kmin, bytes, "\"0B\"",
                "ECN marking starts at this egress queue depth (0 = scaled with each port's speed, 4 KB per "
                "Gb/s: 400 KB at 100 Gb/s, HPCC's map; docs/dcqcn.md)."));
  t.push_back(P(network.ecn.kmax, bytes, "\"0B\"",
                "ECN marking probability reaches pmax at this depth, and every packet is marked beyond it (0 "
                "= 16 KB per Gb/s of the port: 1600 KB at 100 Gb/s)."));
  t.push_back(P(network.ecn.pmax, fraction, "0.2", "Marking probability at kmax."));
  t.push_back(P(network.ecn.mark_on, text, "\"enqueue\"",
                "Packet mode: where a switch marks CE: on admission to the egress queue (its depth then, RED "
                "as RFC 3168 describes), or when the packet leaves it (the bytes queued behind it, as the "
                "ns-3 RDMA model of HPCC and switches with dequeue marking do).")
                  .one_of({"enqueue", "dequeue"}));
  t.push_back(P(network.pfc.enabled, boolean, "true", "Lossless priority with PFC."));
  t.push_back(P(network.pfc.xoff, bytes, "\"0B\"",
                "Static PFC XOFF threshold per switch ingress port and priority (0 = the shared buffer's "
                "dynamic threshold, network.pfc.alpha)."));
  t.push_back(P(network.pfc.xon, bytes, "\"0B\"", "Static PFC XON threshold (0 = XOFF minus one frame)."));
  t.push_back(P(network.pfc.alpha, fraction, "0.125",
                "Dynamic PFC threshold: an ingress port pauses its sender when its buffered bytes reach "
                "alpha x the free shared buffer (for ports at the NIC rate; doubled per speed doubling, at "
                "most 1). 1/8 is the HPCC ns-3 RDMA model's (pfc_a_shift 3).")
                  .at_least(0.001));
  t.push_back(
      P(network.sample_interval, duration, "\"10us\"",
        "Packet mode: how often the queue and pause time series (report tables.queues) are sampled."));
  t.push_back(P(network.pfc.watchdog, duration, "\"200ms\"",
                "PFC watchdog: a queue paused this long is declared stormed."));
  t.push_back(
      P(network.congestion_control, text, "\"dcqcn\"",
        "NIC congestion control in packet mode (the flow and analytical modes share bandwidth max-min "
        "fairly, which is what a converged congestion control reaches). HPCC and TIMELY are not modelled.")
          .one_of({"dcqcn", "none"}));
  t.push_back(
      P(network.dcqcn.profile, text, "\"hpcc-ns3-paper\"",
        "DCQCN parameter set (models/network/packet_dcqcn.h, docs/dcqcn.md), all validated side by side "
        "against HPCC's ns-3 RDMA simulator: hpcc-ns3-paper (default) = HPCC's run.py dcqcn_paper (alpha and "
        "cut every 50 us, increase timer 55 us, g 1/256, F 1, AI/HAI 5/50 Mb/s per 25 Gb/s, minimum rate 1 "
        "Gb/s, a CNP per marked packet), the set under which an 8:1 incast keeps its bottleneck 90% busy in "
        "both simulators; hpcc-ns3 = run.py dcqcn, its production-like timers (alpha 1 us, cut 4 us, "
        "increase 300 us); connectx = NVIDIA ConnectX firmware defaults (g 5/1024, 2 MiB byte counter, AI 5 "
        "Mb/s, HAI 50 Mb/s, minimum rate 1 Mb/s, a CNP at most every 4 us per flow), which starve short "
        "incasts in both simulators; sigcomm15 = the DCQCN paper's. The keys below override single values.")
          .one_of({"hpcc-ns3-paper", "hpcc-ns3", "connectx", "sigcomm15"}));
  t.push_back(
      P(network.dcqcn.g, fraction, "0", "Alpha gain g (firmware dce_tcp_g / 1024 complement; 0 = profile).")
          .at_most(1));
  t.push_back(P(network.dcqcn.initial_alpha, fraction, "0",
                "Alpha at a flow's first CNP (initial_alpha_value; 0 = profile).")
                  .at_most(1));
  t.push_back(
      P(network.dcqcn.alpha_period, duration, "\"0us\"", "Alpha update period (dce_tcp_rtt; 0 = profile)."));
  t.push_back(P(network.dcqcn.rate_reduce_period, duration, "\"0us\"",
                "At most one rate cut per this period (rate_reduce_monitor_period; 0 = profile)."));
  t.push_back(P(network.dcqcn.min_dec_factor, fraction, "0",
                "A cut keeps at least this share of the rate (rpg_min_dec_fac; 0 = profile, connectx 0.5).")
                  .at_most(0.99));
  t.push_back(
      P(network.dcqcn.min_rate, rate, "\"0bps\"", "Lowest rate of a flow (rpg_min_rate; 0 = profile)."));
  t.push_back(P(network.dcqcn.clamp_target, text, "\"profile\"",
                "At every cut the target rate becomes the current rate (clamp_tgt_rate = yes); no = only "
                "after an increase event (firmware default).")
                  .one_of({"profile", "yes", "no"}));
  t.push_back(P(network.dcqcn.increase_period, duration, "\"0us\"",
                "Rate-increase timer (rpg_time_reset; 0 = profile)."));
  t.push_back(P(network.dcqcn.byte_counter, bytes, "\"0B\"",
                "Rate-increase byte counter (rpg_byte_reset x 64 B; 0 = profile; hpcc-ns3 has none; a size "
                "larger than any flow, e.g. 1000TB, turns it off)."));
  t.push_back(P(network.dcqcn.fast_recovery_steps, count, "0",
                "Increase events of fast recovery before additive increase, F (rpg_threshold; 0 = profile).")
                  .at_most(31));
  t.push_back(
      P(network.dcqcn.rai, rate, "\"0bps\"", "Additive increase step R_AI (rpg_ai_rate; 0 = profile)."));
  t.push_back(
      P(network.dcqcn.rhai, rate, "\"0bps\"", "Hyper increase step R_HAI (rpg_hai_rate; 0 = profile)."));
  t.push_back(P(network.dcqcn.cnp_interval, duration, "\"0us\"",
                "Notification point: at most one CNP per flow per this interval (min_time_between_cnps; 0 = "
                "profile; hpcc-ns3 sends one per marked packet)."));
  t.push_back(P(network.collective_algorithm, text, "\"auto\"",
                "Collective algorithm, as NCCL_ALGO: auto = NCCL's cost-model choice by size, group shape "
                "and GPU (ring, tree, nvls = NVLink SHARP in one NVLink domain, nvls_tree = NVLS in each "
                "domain + tree across; models/collective/nccl_tuning.h). A forced algorithm that cannot run "
                "on a group (a tree in one node, NVLS before Hopper) runs as ring.")
                  .one_of({"auto", "ring", "tree", "nvls", "nvls_tree"}));
  t.push_back(
      P(network.channels, count, "0",
        "Collective channels per group (0 = one per NIC, as NCCL's search finds them): each its own ring "
        "or tree chain; NCCL runs twice as many CTAs (again twice under 16 on Hopper across nodes) unless "
        "network.ctas says how many.")
          .at_most(64));
  t.push_back(
      P(network.ctas, count, "0",
        "The CTAs NCCL runs a ring collective with, as NCCL_MIN_CTAS = NCCL_MAX_CTAS (NCCL_MIN_NCHANNELS and "
        "NCCL_MAX_NCHANNELS set the same runtime count); 0 = NCCL's own: twice its search channels, twice "
        "again under 16 on Hopper across nodes (16 on 8 or 4 NICs). A ring all-reduce across Hopper nodes "
        "moves at most 20.6 GB/s per CTA (fitted on one nccl-tests log; models/collective/nccl_tuning.h): 16 "
        "CTAs 329.6 GB/s, 24 or more the NICs' rate.")
          .at_most(64));
  t.push_back(P(network.qps_per_connection, count, "1",
                "RDMA queue pairs per connection between two GPUs, as NCCL_IB_QPS_PER_CONNECTION (NCCL's "
                "default 1). Each carries an equal share of the connection's data on its own ECMP path "
                "(switches hash a QP's UDP source port), so more give a RoCE fabric the routing entropy "
                "to spread its flows: Meta's Llama 3 clusters run 16 per GPU pair with enhanced ECMP "
                "(Llama 3 paper, Sec. 3.3.4). No effect where routes do not depend on the flow "
                "(cluster.fabric.routing dmodk, inside an NVLink domain, a rail's own leaf).")
                  .at_least(1)
                  .at_most(128));
  t.push_back(P(network.collective_step_latency, duration, "\"3us\"",
                "Fixed cost of one collective step (launch, sync, proxy)."));
  flow_mode_params(t);
  t.push_back(P(network.protocol_efficiency, fraction, "0.95",
                "Payload share of the wire rate (RoCE headers, NCCL Simple protocol).")
                  .at_least(0.01));
}

// Training job: mixture of experts and multi-head latent attention.
void moe_and_mla_params(std::vector<Param>& t) {
  t.push_back(P(training_job.model.moe.experts, count, "0", "Routed experts per MoE layer (0 = dense).")
                  .at_most(1e5));
  t.push_back(P(training_job.model.moe.top_k, count, "1", "Experts per token.").at_least(1).at_most(1e4));
  t.push_back(
      P(training_job.model.moe.expert_ffn_hidden, count, "0", "Width of each expert MLP (0 = ffn_hidden).")
          .at_most(1e7));
  t.push_back(
      P(training_job.model.moe.shared_experts, count, "0", "Always-active shared experts.").at_most(1e4));
  t.push_back(P(training_job.model.mla.kv_lora_rank, count, "0",
                "Multi-head latent attention (DeepSeek-V2/V3): K/V latent width (0 = no MLA).")
                  .at_most(1e6));
  t.push_back(
      P(training_job.model.mla.q_lora_rank, count, "0", "MLA: Q latent width (0 = Q projected directly).")
          .at_most(1e6));
  t.push_back(
      P(training_job.model.mla.qk_nope_head_dim, count, "0", "MLA: per-head Q/K width without rotary.")
          .at_most(1e5));
  t.push_back(P(training_job.model.mla.qk_rope_head_dim, count, "0",
                "MLA: per-head rotary Q/K width (the rotary key is shared by every head).")
                  .at_most(1e5));
  t.push_back(P(training_job.model.mla.v_head_dim, count, "0", "MLA: per-head V width.").at_most(1e5));
  t.push_back(P(training_job.model.moe.dense_layers, count, "0",
                "Leading dense layers of an MoE model (MLP of ffn_hidden; DeepSeek's first_k_dense_replace).")
                  .at_most(1e5));
  t.push_back(P(training_job.model.moe.capacity_factor, real, "1.0",
                "Expert capacity factor: GEMMs padded to this x balanced load.")
                  .at_least(1)
                  .at_most(16));
  t.push_back(
      P(training_job.global_batch_size, count, "", "Sequences per optimizer step.").at_least(1).at_most(1e9));
  t.push_back(
      P(training_job.micro_batch_size, count, "1", "Sequences per micro-batch.").at_least(1).at_most(1e6));
  t.push_back(P(training_job.steps, count, "3",
                "Training steps simulated (the report gives the last). Analytical runs without perturbation "
                "simulate at most two: every later step repeats the second.")
                  .at_least(1)
                  .at_most(100));
}

// Training job: the model, the batch and the parallel layout.
void job_params(std::vector<Param>& t) {
  {
    std::string names;
    std::vector<std::string> choices{"none"};
    for (const ModelPreset& m : model_presets()) {
      names += (names.empty() ? "" : ", ") + m.name;
      choices.push_back(m.name);
    }
    t.push_back(
        P(training_job.model.preset, text, "\"none\"",
          "A published architecture whose keys (layers, hidden, heads, kv_heads, head_dim, ffn_hidden, "
          "activation, "
          "vocab, seq_length, tied_embeddings, moe) are filled in; keys given beside it win. Presets: " +
              names + " (sources: models/scenario/model_presets.cpp, docs/presets.md).")
            .one_of(choices));
  }
  t.push_back(P(training_job.model.layers, count, "", "Transformer layers.").at_least(1).at_most(1e5));
  t.push_back(P(training_job.model.hidden, count, "", "Hidden size h.").at_least(1).at_most(1e6));
  t.push_back(P(training_job.model.heads, count, "", "Attention heads a.").at_least(1).at_most(1e5));
  t.push_back(
      P(training_job.model.kv_heads, count, "0", "Key/value heads for GQA/MQA (0 = heads).").at_most(1e5));
  t.push_back(P(training_job.model.head_dim, count, "0",
                "Width of one attention head (0 = hidden / heads). Qwen3 and Gemma set it wider: Q is "
                "heads x head_dim, K and V kv_heads x head_dim, the output projection maps heads x head_dim "
                "back to hidden (their config.json head_dim).")
                  .at_most(1e5));
  t.push_back(
      P(training_job.model.ffn_hidden, count, "0", "MLP width (0 = 4h for gelu, 8h/3 rounded for swiglu).")
          .at_most(1e7));
  t.push_back(P(training_job.model.activation, text, "\"gelu\"",
                "MLP activation; selects GPT (gelu) or Llama (swiglu) layers.")
                  .one_of({"gelu", "swiglu"}));
  t.push_back(P(training_job.model.dropout, text, "\"auto\"",
                "Dropout layers, whose masks are kept for backward (memory, and the mask traffic of the "
                "residual adds): auto = with gelu (GPT), without swiglu (Llama).")
                  .one_of({"auto", "yes", "no"}));
  t.push_back(P(training_job.model.position_embedding, text, "\"auto\"",
                "Position encoding: learned (absolute embeddings, seq_length x hidden parameters: GPT), rope "
                "(rotary: no parameters, a kernel of its own in eager PyTorch stacks, fused in Megatron / "
                "NeMo / torch.compile), none (also ALiBi, whose bias rides in the attention kernel). auto = "
                "learned with gelu, rope with swiglu.")
                  .one_of({"auto", "learned", "rope", "none"}));
  t.push_back(P(training_job.model.seq_length, count, "", "Sequence length s.").at_least(1).at_most(1e7));
  t.push_back(
      P(training_job.model.sliding_window, count, "0",
        "Sliding-window attention: each query attends to at most this many tokens (itself included) "
        "instead of every earlier one; 0 = none. The flash kernels compute only the band (w s - w (w - "
        "1) / 2 query-key pairs); the unfused attention still materialises and masks the whole square "
        "(HF config sliding_window: Mistral 7B v0.1 4096, Gemma 2/3 4096/1024, GPT-OSS 128).")
          .at_most(1e7));
  t.push_back(P(training_job.model.full_attention_every, count, "0",
                "With a sliding window, every k-th layer (k, 2k, ... counting from 1) attends to the whole "
                "sequence and the others through the window; 0 = every layer uses the window. GPT-OSS 2 "
                "(layer_types alternate sliding, full), Gemma 3 6 (sliding_window_pattern).")
                  .at_most(1e6));
  t.push_back(P(training_job.model.vocab, count, "", "Vocabulary size V.").at_least(1).at_most(1e8));
  t.push_back(P(training_job.model.tied_embeddings, boolean, "true",
                "Input embedding and output layer share weights."));
  moe_and_mla_params(t);
  t.push_back(P(training_job.parallelism.tensor_parallel, count, "1", "Tensor-parallel size t.")
                  .at_least(1)
                  .at_most(1024));
  t.push_back(P(training_job.parallelism.pipeline_parallel, count, "1", "Pipeline-parallel size p.")
                  .at_least(1)
                  .at_most(1024));
  t.push_back(P(training_job.parallelism.data_parallel, count, "0",
                "Data-parallel size d (0 = every GPU left after hot spares).")
                  .at_most(1e6));
  t.push_back(P(training_job.parallelism.virtual_pipeline, count, "1",
                "Virtual stages per pipeline rank (interleaved 1F1B when > 1).")
                  .at_least(1)
                  .at_most(1024));
  t.push_back(P(training_job.parallelism.microbatch_group, count, "0",
                "Interleaved 1F1B: micro-batches run back to back on one model chunk before the next "
                "(Megatron-Core's --microbatch-group-size-per-virtual-pipeline-stage; Llama 3's N, the "
                "paper's Sec. 3.3.2). 0 = pipeline_parallel, Megatron's default. Larger: (v - 1) x (n - p) "
                "more model chunks in flight on every stage (memory) and more forwards ahead of each "
                "backward. As Megatron-Core: needs virtual_pipeline > 1, pipeline_parallel <= n <= the "
                "micro-batches per step, and a last group (micro-batches mod n) of 0 or at least "
                "pipeline_parallel; then the micro-batches need not be a multiple of pipeline_parallel.")
                  .at_most(1e6));
  t.push_back(P(training_job.parallelism.sequence_parallel, boolean, "true",
                "Megatron sequence parallelism with TP."));
  t.push_back(
      P(training_job.parallelism.context_parallel, count, "1", "Context-parallel size (ring attention).")
          .at_least(1)
          .at_most(1024));
  t.push_back(P(training_job.parallelism.expert_parallel, count, "1", "Expert-parallel size.")
                  .at_least(1)
                  .at_most(1e5));
  t.push_back(P(training_job.parallelism.expert_tensor_parallel, count, "0",
                "Tensor parallelism of the routed experts (Megatron --expert-tensor-parallel-size; 0 = "
                "tensor_parallel). Below tensor_parallel it folds (MoE parallel folding): the experts run "
                "unsplit on the tokens of their own ranks, and expert groups of expert_parallel x "
                "expert_tensor_parallel ranks are formed over tensor x context x data parallelism.")
                  .at_most(1024));
  t.push_back(P(training_job.parallelism.zero_stage, count, "1",
                "0 DP all-reduce, 1 distributed optimizer, 2 + gradients, 3 + parameters sharded.")
                  .at_most(3));
  t.push_back(
      P(training_job.parallelism.shard_size, count, "0",
        "ZeRO/FSDP sharding group: consecutive data-parallel ranks that shard the state (hybrid sharding, "
        "HSDP: replicated across groups, gradients all-reduced between them); 0 = all of them.")
          .at_most(1e6));
}

// Training job: torch.compile and the loss kernel.
void compile_and_loss_params(std::vector<Param>& t) {
  t.push_back(P(training_job.runtime.torch_compile, boolean, "false",
                "torch.compile on a PyTorch-native stack (torchtitan, pytorch, composer): fuses the Llama "
                "block's element-wise ops (RMSNorm, rotary embeddings, SwiGLU), which eager PyTorch runs as "
                "composite fp32 kernels (36 instead of 4 bytes per element for a norm). torchtitan's rotary "
                "embedding stays at eager's 20 bytes per element: it multiplies complex fp32 tensors, which "
                "Inductor runs as eager fallback kernels. An error with the megatron-core, nemo and "
                "deepspeed stacks, whose kernels are fused already."));
  t.push_back(
      P(training_job.runtime.compile_loss, text, "\"auto\"",
        "Whether the cross-entropy loss is compiled with torch_compile: compiled (one fused kernel each way; "
        "4 instead of 12-14 bytes per logit at the peak), eager, or auto = compiled on the torchtitan stack "
        "when torch_compile is on (its components/loss.py since April 2025; torchtitan of 2024 left it "
        "eager, train.py), eager otherwise. compiled needs torch_compile on the torchtitan or pytorch stack.")
          .one_of({"auto", "compiled", "eager"}));
  t.push_back(
      P(training_job.runtime.cross_entropy_fusion, text, "\"auto\"",
        "The loss kernel of the megatron-core and nemo stacks (Megatron --cross-entropy-fusion-impl): native "
        "(Megatron's vocab-parallel cross entropy: the bf16 logits and an fp32 copy, 6 bytes per logit at "
        "the peak, about 10 bytes moved per logit each way), te (Transformer Engine 2.2-2.17's fused Triton "
        "kernel: the gradient written in place into the bf16 logits, 2 bytes per logit, 4 moved each way; "
        "Megatron-Bridge's performance recipes since November 2025), te-2.18 (the same kernel keeping the "
        "gradient in fp32 since TE 2.18: 6 bytes per logit, 6 moved each way), or auto = native. te and "
        "te-2.18 need the megatron-core or nemo stack.")
          .one_of({"auto", "native", "te", "te-2.18"}));
}

// Training job: the gradient buffer and what overlaps what.
void gradient_and_overlap_params(std::vector<Param>& t) {
  t.push_back(
      P(training_job.runtime.grad_reduce_in_fp32, text, "\"auto\"",
        "Megatron's gradient buffer precision (--accumulate-allreduce-grads-in-fp32, Megatron-Bridge "
        "ddp.grad_reduce_in_fp32): yes = fp32, 4 bytes per parameter in memory and in the data-parallel "
        "reduction; no = the 16-bit training type, 2 (Megatron-LM's default with --fp16, and with bf16 "
        "before April 2021). auto: the stack's (megatron-core fp32, nemo 16-bit). megatron-core and nemo "
        "only.")
          .one_of({"auto", "yes", "no"}));
  t.push_back(P(
      training_job.runtime.gradient_accumulation_fusion, boolean, "true",
      "Megatron's --gradient-accumulation-fusion (the default since Megatron-LM 83b1e42, Feb 2022): the "
      "weight-gradient GEMM accumulates into the gradient buffer. false (--no-gradient-accumulation-fusion, "
      "or Megatron-LM before it): every micro-batch's 16-bit weight gradients are added into the buffer "
      "by a kernel of their own, 2 + 2 x (buffer bytes) per parameter of the chunk after each backward. "
      "megatron-core and nemo only."));
  t.push_back(
      P(training_job.runtime.tp_comm_overlap, boolean, "false",
        "Overlap TP collectives (sequence parallel) with the GEMMs that need them, as the stack does: "
        "Transformer Engine's userbuffers (megatron-core, nemo: forward and backward, with the SMs they "
        "take); PyTorch's async TP on torchtitan / pytorch (torch.compile's micro-pipelined fused "
        "all-gather and reduce-scatter matmuls, torchtitan's enable_async_tensor_parallel: the forward's "
        "collectives, the backward's stay plain)."));
  t.push_back(P(training_job.runtime.overlap_grad_reduce, boolean, "true",
                "Overlap the DP gradient reduce with backward (bucketed)."));
  t.push_back(P(training_job.runtime.overlap_param_gather, boolean, "true",
                "Overlap the ZeRO parameter all-gather with forward."));
  t.push_back(
      P(training_job.runtime.overlap_p2p, boolean, "true",
        "Pipeline sends on their own stream (Megatron's --overlap-p2p-communication); false: batched "
        "blocking send/recv that hold the compute stream until delivered (Megatron-LM before 2023, SC'21)."));
  t.push_back(P(
      training_job.runtime.bucket_size, bytes, "\"0B\"",
      "DP gradient bucket in bytes of the gradient buffer (fp32 4 or 16-bit 2 per parameter; 0 = Megatron's "
      "max(40M, 1M x DP) parameters)."));
  t.push_back(P(training_job.runtime.placement, text, "\"tp-cp-dp-pp\"", "Rank order, innermost first.")
                  .one_of({"tp-cp-dp-pp", "tp-cp-pp-dp"}));
}

// Training job: the runtime's mixture-of-experts and recompute-module keys (Megatron's).
void moe_runtime_params(std::vector<Param>& t) {
  t.push_back(P(training_job.runtime.moe_a2a_overlap, boolean, "false",
                "Megatron's combined 1F1B schedule for MoE (--overlap-moe-expert-parallel-comm, "
                "Megatron-Bridge moe_a2a_overlap): the expert all-to-all of one micro-batch's forward runs "
                "under another's backward compute and vice versa, taking NCCL's SMs from it. Needs EP > 1, "
                "PP 1 or an interleaved pipeline, and no full recompute."));
  t.push_back(P(training_job.runtime.recompute_modules, text, "\"\"",
                "Megatron's --recompute-modules under recompute_granularity selective, comma-separated: "
                "core_attn (the attention core; the default when empty), moe_act (the experts' activation), "
                "layernorm (the two pre-norms), mla_up_proj (latent attention's up-projections and rotary "
                "part), mlp (a dense MLP), shared_experts, moe (the whole expert block, its all-to-all "
                "included). Each replayed module's forward runs again before backward and its outputs are "
                "not kept. megatron-core and nemo only."));
  t.push_back(
      P(training_job.runtime.moe_dispatcher, text, "\"alltoall\"",
        "How expert-parallel tokens move (Megatron --moe-token-dispatcher-type, "
        "--moe-flex-dispatcher-backend): alltoall (NCCL all-to-all of the permuted tokens: a token "
        "goes once per chosen expert, top_k copies), deepep or hybridep (the flex dispatcher's "
        "token-based kernels: a token goes once to each GPU that holds one of its experts, and across "
        "NVLink domains once to each domain, then on over NVLink). Needs an MoE model with "
        "expert_parallel > 1.")
          .one_of({"alltoall", "deepep", "hybridep"}));
  t.push_back(P(training_job.runtime.moe_host_sync, text, "\"auto\"",
                "Whether each MoE layer's forward waits for the host (megatron-core and nemo): Megatron's "
                "token dispatchers need the per-expert token counts on the host before the experts run "
                "(alltoall: d2h_event.synchronize(); HybridEP's blocking dispatch and DeepEP's normal one "
                "likewise), so the GPU drains and then waits for the host to issue the rest of the layer: "
                "1.5 ms per MoE layer forward (and per replay of the expert block), fitted on the "
                "megatron-bridge-moe-h100 validation set. auto: yes on megatron-core and nemo with an MoE "
                "model, not modelled elsewhere; no: Megatron's sync-free path (full-iteration CUDA graphs "
                "with the fused grouped MLP or paged stash, --cuda-graph-impl full_iteration), also right "
                "for drop-and-pad routing (--moe-pad-expert-input-to-capacity), which needs no counts on "
                "the host; yes and no need an MoE model on megatron-core or nemo.")
                  .one_of({"auto", "yes", "no"}));
}

// Training job: the runtime (kernels, precision, overlap).
void runtime_params(std::vector<Param>& t) {
  t.push_back(P(training_job.runtime.collective_timeout, duration, "\"1800s\"",
                "NCCL watchdog: a rank left waiting this long in a collective or receive fails the job (hang "
                "faults; node_kill when before recovery.detection; the campaign's hangs). Default 30 min, "
                "torch.distributed's default process-group timeout; Megatron-LM sets 10 min "
                "(--distributed-timeout-minutes), torchtitan 100 s (comm.train_timeout_seconds)."));
  t.push_back(
      P(training_job.runtime.recompute_granularity, text, "\"selective\"", "Activation recomputation.")
          .one_of({"none", "selective", "full"}));
  t.push_back(P(training_job.runtime.recompute_layers, count, "0",
                "With full recompute: layers of each model chunk that recompute (the first ones, Megatron's "
                "--recompute-method block); the others keep their activations. 0 = every layer.")
                  .at_most(1e5));
  t.push_back(P(training_job.runtime.attention, text, "\"flash\"",
                "Attention kernels: flash (fused) or unfused (scores materialised, pre-2022 stacks).")
                  .one_of({"flash", "unfused"}));
  compile_and_loss_params(t);
  t.push_back(
      P(training_job.runtime.offload_activation_layers, count, "0",
        "Layers whose activations are offloaded to host memory during forward and brought back for "
        "backward (Megatron --cpu-offloading-num-layers with Transformer Engine's CPU offload; "
        "Megatron-Bridge's GB200/GB300 Llama 3 70B recipes offload 20-40): their activations leave GPU "
        "memory but for one layer in transit, and each offloaded layer's copy that outlasts the next "
        "layer's compute is exposed (over cluster.gpu_spec.host_link). Megatron's rules: fewer than the "
        "model's layers, no pipeline parallelism, recompute_granularity none, a Transformer Engine stack "
        "(megatron-core, nemo).")
          .at_most(1e5));
  t.push_back(
      P(training_job.runtime.fp8_params, text, "\"auto\"",
        "FP8 primary weights (Megatron --fp8-param-gather, NeMo fp8_params): the linear layers' weights are "
        "kept as FP8 tensors (1 byte, plus the cached 1-byte transpose) in place of the bf16 copy and a "
        "separate FP8 cache, and the distributed optimizer's parameter all-gather moves them in FP8 (with "
        "precision nvfp4: NVFP4 tensors, 0.5625 bytes per copy, Megatron-Bridge's fp4_param_gather). "
        "auto = yes on the nemo stack with an FP8 precision or nvfp4 (NeMo 2 recipes/precision/"
        "mixed_precision.py bf16_with_fp8_mixed and every Megatron-Bridge FP8 recipe, training/"
        "mixed_precision.py, set it; bf16_with_nvfp4_mixed sets fp4_param_gather), no otherwise "
        "(Megatron-LM's default). yes needs an FP8 precision or nvfp4 on the megatron-core or nemo stack.")
          .one_of({"auto", "yes", "no"}));
  t.push_back(
      P(training_job.runtime.master_weights, text, "\"fp32\"",
        "How the optimizer keeps the fp32 master copy of the bf16 weights: fp32 (4 bytes per parameter, "
        "Megatron-LM's distributed optimizer, DeepSpeed, NeMo 2, Megatron-Bridge), or remainder (only the "
        "low 16 bits, 2 bytes, beside the bf16 weight whose bits complete it: Apex DistributedFusedAdam's "
        "store_param_remainders, which NeMo 1.x's distributed_fused_adam turns on for bf16 models without "
        "fp8_params, nemo/collections/nlp/models/language_modeling/megatron_base_model.py at v2.0.0; TE "
        "FusedAdam's with Megatron's --use-precision-aware-optimizer). remainder: optimizer state 10 "
        "instead of 12 bytes per parameter (sharded as before) and 2 fewer bytes per parameter in the "
        "optimizer step; it needs bf16 weights (megatron-core, nemo, deepspeed stacks, no FP8 primary "
        "weights).")
          .one_of({"fp32", "remainder"}));
  t.push_back(P(training_job.runtime.attention_kernel, text, "\"auto\"",
                "The flash-attention kernel, by its measured throughput relative to the calibrated one "
                "(PyTorch 2.11 SDPA's cuDNN kernel on H200, at FlashAttention-3's published speed; "
                "FlashAttention-3 paper Figs. 5-6, H100): cudnn, fa3 (1.0 / 1.0; Hopper and later), fa2 "
                "(0.555 fwd / 0.574 bwd on Hopper and later, 1.0 on Ampere; PyTorch SDPA's FLASH backend, "
                "flash-attn 2), cudnn-8.9 (cuDNN before 9.0, NGC containers to 24.01: FA2's speed, an "
                "estimate from cuDNN 9.0's release notes), triton (LLM Foundry's 2022 Triton kernel, "
                "FlashAttention-1 class: 0.305 / 0.258 on Hopper, 0.55 / 0.45 on Ampere, estimated). auto = "
                "the stack's: cudnn for megatron-core, nemo, pytorch; fa2 for torchtitan, deepspeed; triton "
                "for composer (models/workload/layer_ops.h).")
                  .one_of({"auto", "cudnn", "cudnn-8.9", "fa3", "fa2", "triton"}));
  t.push_back(P(training_job.runtime.stack, text, "\"megatron-core\"",
                "Training software stack: how it lays out memory (state precision, gradient buffers, loss, "
                "buckets; models/workload/memory.h) and, with zero_stage 3, how it gathers parameters.")
                  .one_of(workload::stack_names()));
  t.push_back(
      P(training_job.runtime.precision, text, "\"bf16\"",
        "Training precision: bf16, or the transformer's linear layers in FP8 at the GPU's measured "
        "FP8 rate with casts before them, FP8 weight copies and FP8 saved GEMM inputs in memory: fp8 "
        "(Transformer Engine delayed scaling), fp8-cs (per-tensor current scaling: an amax pass "
        "before every cast; TE Float8CurrentScaling, torchao float8 tensorwise), mxfp8 (Blackwell "
        "1x32 block scaling: row- and column-wise quantization, block-scaled GEMMs), nvfp4 (Blackwell "
        "FP4 GEMMs, Transformer Engine's NVFP4BlockScaling on the megatron-core or nemo stack: 1x16 "
        "E4M3-scaled E2M1 inputs with a random Hadamard transform before the wgrad GEMM, 2-D scaled "
        "weights, 0.5625 bytes per saved or gathered element; the GEMMs at the GPU's dense FP4 peak "
        "times the MXFP8 efficiency, extrapolated: no FP4 GEMM is measured).")
          .one_of({"bf16", "fp8", "fp8-cs", "mxfp8", "nvfp4"}));
  moe_runtime_params(t);
  t.push_back(
      P(training_job.runtime.tp_async_backward, text, "\"auto\"",
        "Megatron's asynchronous TP collectives in backward (on by default since Megatron-LM 3f65246, Sep "
        "2021; --no-async-tensor-model-parallel-allreduce): each column-parallel linear (QKV, MLP in) "
        "all-reduces its input gradient under its weight-gradient GEMM, or with sequence parallelism "
        "all-gathers its input under the input-gradient GEMM and reduce-scatters under the weight-gradient "
        "GEMM; the GEMM loses the SMs NCCL takes. auto: on for megatron-core and nemo, off for the others "
        "(PyTorch DTensor TP, DeepSpeed). No effect with tp_comm_overlap (userbuffers) or TP 1.")
          .one_of({"auto", "on", "off"}));
  t.push_back(
      P(training_job.runtime.fp8_amax_reduction, text, "\"tp-dp-cp\"",
        "With precision fp8 (delayed scaling): the group whose amax all-reduce ends every forward and "
        "backward of a model chunk (Transformer Engine fp8_autocast, synchronous): tp-dp-cp, "
        "Megatron-core's default (every replica of the stage waits for the slowest, each micro-batch), or "
        "tp-cp (--tp-only-amax-red). Other precisions have no amax history to reduce.")
          .one_of({"tp-dp-cp", "tp-cp"}));
  gradient_and_overlap_params(t);
}

// Training job: checkpoints and scheduling.
void checkpoint_params(std::vector<Param>& t) {
  t.push_back(
      P(training_job.checkpoint.interval_steps, count, "0", "Steps between checkpoints (0 = use interval).")
          .at_most(1e9));
  t.push_back(P(training_job.checkpoint.interval, duration, "\"0s\"",
                "Time between checkpoints (replaces interval_steps)."));
  t.push_back(P(training_job.checkpoint.async_save, boolean, "true",
                "Snapshot to host memory, flush in the background."));
  t.push_back(P(training_job.checkpoint.keep_last_n, count, "5", "Checkpoints kept on storage.")
                  .at_least(1)
                  .at_most(1e6));
  t.push_back(P(training_job.scheduling.topology_aware, boolean, "true",
                "true: ranks in layout order on consecutive nodes (TP inside a node, PP/DP neighbours under "
                "the same leaves, on rails); false: the job's nodes in a seeded random order, as a scheduler "
                "blind to the fabric places them (flow and packet modes)."));
}

// Traffic studies and trace replays.
void study_params(std::vector<Param>& t) {
  // traffic
  t.push_back(
      P(traffic.pattern, text, "",
        "Traffic pattern: incast, permutation, all_to_all, collective; websearch / hadoop = Poisson arrivals "
        "with a published flow-size distribution (DCTCP paper's web search, Facebook Hadoop; "
        "models/scenario/traffic_flows.h); file = the flows of traffic.flows_file.")
          .one_of({"incast", "permutation", "all_to_all", "collective", "websearch", "hadoop", "file"}));
  t.push_back(P(traffic.load, fraction, "0.3",
                "websearch / hadoop: load each GPU offers, as a share of its NIC bandwidth.")
                  .at_least(0.001));
  t.push_back(
      P(traffic.duration, duration, "\"1ms\"",
        "websearch / hadoop: flows arrive during this window (the run lasts until the last completes)."));
  t.push_back(P(traffic.background, text, "\"none\"",
                "websearch / hadoop: incast = also fan_in long flows of traffic.size into GPU 0 from time 0 "
                "(the report's long-flow figures are theirs).")
                  .one_of({"none", "incast"}));
  t.push_back(P(traffic.flows_file, text, "\"\"",
                "file: CSV with a header line, then src_gpu,dst_gpu,bytes,start_s per flow."));
  t.push_back(P(traffic.fan_in, count, "8", "Senders per receiver (incast).").at_least(1).at_most(1e6));
  t.push_back(P(traffic.size, bytes, "\"1MiB\"", "Bytes per flow, or per rank for collectives."));
  t.push_back(P(traffic.op, text, "\"all_reduce\"", "Collective operation (pattern collective).")
                  .one_of({"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"}));
  t.push_back(P(traffic.nodes, count, "0", "Nodes taking part (0 = all).").at_most(1e6));

  // trace
  t.push_back(P(trace.format, text, "", "Trace format.").one_of({"chakra", "kineto"}));
  t.push_back(
      P(trace.path, text, "",
        "Directory of .et files (chakra); a trace file, or a directory of one trace per rank (kineto)."));
  t.push_back(P(trace.recorded_gpu, text, "\"\"",
                "GPU the Kineto + execution trace was recorded on, when cluster.gpu differs: a what-if "
                "replay on cluster.gpu (\"\" = the same GPU)."));
  t.push_back(P(trace.batch_scale, real, "1.0",
                "What-if: the recorded micro-batch times this (Kineto + execution trace; kernels rescaled by "
                "the compute model).")
                  .at_least(0.001)
                  .at_most(1024));
  t.push_back(P(trace.profiler_overhead, text, "\"auto\"",
                "Profiler CPU cost per recorded operator removed from the launch timeline (Kineto + "
                "execution trace): auto (estimated from the trace), none, or a duration such as 5us."));
  t.push_back(P(trace.execution_trace, text, "\"\"", "PyTorch execution trace paired with a Kineto trace."));
  t.push_back(
      P(trace.step, integer, "-1",
        "ProfilerStep#N of a Kineto trace (one file or one per rank) to replay; -1 = the last one that "
        "launched GPU work. The report's trace.kineto says which step ran and its measured period.")
          .at_least(-1));
}

// Reliability: failure rates, recovery, campaign.
void reliability_params(std::vector<Param>& t) {
  t.push_back(P(failures.profile, text, "\"custom\"",
                "Failure rates: custom (the *_rate_per_day keys) or llama3 (Llama 3 405B's 54-day table, see "
                "models/reliability/failure_model.h).")
                  .one_of({"custom", "llama3"}));
  t.push_back(P(failures.rate_scale, real, "1.0", "Multiplies every failure rate (profile what-ifs).")
                  .at_least(0)
                  .at_most(1e6));
  t.push_back(P(failures.node_failure_rate_per_day, real, "0",
                "Host failures per node per day (CPU, memory, PSU, SSD, board, host maintenance).")
                  .at_least(0));
  t.push_back(P(failures.gpu_failure_rate_per_day, real, "0",
                "GPU failures per GPU per day (the node goes to repair).")
                  .at_least(0));
  t.push_back(P(failures.hbm_failure_rate_per_day, real, "0",
                "HBM failures per GPU per day (the node goes to repair).")
                  .at_least(0));
  t.push_back(P(failures.nic_failure_rate_per_day, real, "0",
                "NIC failures per NIC per day (the node goes to repair).")
                  .at_least(0));
  t.push_back(P(failures.link_failure_rate_per_day, real, "0",
                "Link (cable, optics, port) failures per link per day; the job restarts on the same nodes.")
                  .at_least(0));
  t.push_back(P(failures.switch_failure_rate_per_day, real, "0",
                "Switch failures per switch per day; the job restarts on the same nodes.")
                  .at_least(0));
  t.push_back(P(failures.software_failure_rate_per_day, real, "0",
                "Software crashes per node per day (detected by the heartbeat).")
                  .at_least(0));
  t.push_back(P(failures.hang_failure_rate_per_day, real, "0",
                "Hangs per node per day (detected only by training_job.runtime.collective_timeout).")
                  .at_least(0));
  t.push_back(P(failures.distribution, text, "\"exponential\"", "Node lifetimes.")
                  .one_of({"exponential", "weibull"}));
  t.push_back(
      P(failures.weibull_shape, real, "1.0", "Weibull shape k (k < 1: infant mortality).").at_least(0.05));
  t.push_back(P(failures.latent_defect_fraction, fraction, "0",
                "Share of nodes joining the job (start, spares, back from repair) with a latent defect."));
  t.push_back(
      P(failures.latent_defect_mean, duration, "\"2h\"", "Mean time for a latent defect to fail its node."));
  t.push_back(P(recovery.detection, duration, "\"60s\"",
                "Time to detect a crash (heartbeat timeout: missed beats x interval)."));
  t.push_back(P(recovery.restart, duration, "\"600s\"",
                "Time to restart the job (reschedule, start processes, NCCL init); the checkpoint load comes "
                "from storage."));
  t.push_back(P(recovery.hot_spares, fraction, "0.02", "Share of nodes kept as hot spares."));
  t.push_back(P(recovery.repair, duration, "\"24h\"", "Time to repair a failed node."));
  t.push_back(P(recovery.health_check, duration, "\"0s\"",
                "Health check of the nodes joining the job, before it (re)starts (0 = none)."));
  t.push_back(P(recovery.health_check_coverage, fraction, "0.9",
                "Share of latent defects the health check catches."));
  t.push_back(P(campaign.duration, long_duration, "\"72h\"",
                "Length of a simulated training campaign (at most 100 years, 3.15576e9 s).")
                  .at_most(3.15576e9));
  t.push_back(P(campaign.repeats, count, "10", "Independent campaign replicas.").at_least(1).at_most(1e6));
  t.push_back(P(campaign.threads, count, "0",
                "Threads running the replicas (0 = all cores); the result does not depend on it.")
                  .at_most(4096));
  t.push_back(
      P(campaign.train_tokens, real, "0", "Tokens to train, for the time to train (0 = not reported).")
          .at_least(0)
          .at_most(1e18));
}

std::vector<Param> build_table() {
  std::vector<Param> t;
  t.push_back(P(name, text, "\"unnamed\"", "Scenario name, copied into the report."));
  t.push_back(
      P(seed, integer, "1", "Seed of every random stream (ECMP salts, failures, jitter).").at_least(0));

  cluster_params(t);
  network_params(t);
  job_params(t);
  runtime_params(t);
  checkpoint_params(t);
  study_params(t);
  reliability_params(t);
  return t;
}

std::vector<FaultParam> build_fault_table() {
  std::vector<FaultParam> t;
  t.push_back(
      F(kind, text, "",
        "Fault kind: gpu_throttle (a GPU at `factor` of its speed, the whole run), link_degrade (a "
        "link at `factor` of its rate from `at` for `duration`; training steps, flow or packet), "
        "slow_receiver (the links into a NIC at `factor`; likewise), link_down (a link fails from "
        "`at` for `duration`: new transfers take surviving ECMP paths, transfers in flight stall for "
        "network.rdma_retransmit_timeout and resume on one; training steps, flow mode), switch_down "
        "(every link of the named `switch` fails, likewise), pause_storm (a NIC sends PFC pauses "
        "from `at`; packet traffic studies), node_kill (every rank of `node` crashes at `at`: what it "
        "runs or sends dies with it, peers block until recovery.detection's heartbeat or the "
        "collective timeout fails the job), hang (the ranks of `node` stop issuing work at `at` but "
        "live: only training_job.runtime.collective_timeout notices). node_kill and hang act in "
        "training steps in every network mode.")
          .one_of({"gpu_throttle", "link_degrade", "link_down", "pause_storm", "node_kill", "hang",
                   "slow_receiver", "switch_down"}));
  t.push_back(F(rank, integer, "-1", "Global rank affected (gpu_throttle).").at_least(-1));
  t.push_back(F(node, integer, "-1", "Node affected.").at_least(-1));
  t.push_back(F(nic, integer, "-1", "NIC index within the node (slow_receiver: -1 = every NIC of the node).")
                  .at_least(-1));
  t.push_back(F(link, text, "\"\"",
                "Link name as the topology names it: 'leaf0->spine3.pod0' (one direction) or "
                "'leaf0-spine3.pod0' (both); NICs are 'node17.nic3' (link_degrade)."));
  t.push_back(
      make<FaultSpec>("faults[].switch", Kind::text, "\"\"",
                      "Switch name as the topology names it, e.g. 'spine3.pod0' or 'leaf12' (switch_down).",
                      [](FaultSpec& f, const Value& v) { put(f.switch_name, v); }));
  t.push_back(F(factor, fraction, "1.0", "Remaining speed or capacity (0.85 = 15% slower)."));
  t.push_back(F(at, duration, "\"0s\"", "When the fault starts."));
  t.push_back(F(duration, duration, "\"0s\"", "How long it lasts (0 = to the end)."));
  return t;
}

#undef P
#undef F

}  // namespace

std::string_view kind_name(Kind kind) {
  switch (kind) {
    case Kind::count:
      return "count";
    case Kind::integer:
      return "integer";
    case Kind::real:
      return "number";
    case Kind::fraction:
      return "fraction";
    case Kind::boolean:
      return "boolean";
    case Kind::text:
      return "string";
    case Kind::duration:
    case Kind::long_duration:
      return "duration";
    case Kind::bytes:
      return "bytes";
    case Kind::rate:
      return "rate";
    case Kind::power:
      return "power";
  }
  return "?";
}

const std::vector<Param>& param_table() {
  static const std::vector<Param> table = build_table();
  return table;
}

const std::vector<FaultParam>& fault_param_table() {
  static const std::vector<FaultParam> table = build_fault_table();
  return table;
}

const std::vector<std::string>& section_names() {
  static const std::vector<std::string> names{"cluster", "network",  "training_job", "traffic", "trace",
                                              "faults",  "failures", "recovery",     "campaign"};
  return names;
}

const std::vector<std::string>& workload_sections() {
  static const std::vector<std::string> names{"training_job", "traffic", "trace"};
  return names;
}

}  // namespace ct::scenario
