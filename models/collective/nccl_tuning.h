// NCCL's cost model: how NCCL picks the algorithm and protocol of a collective, and the bus
// bandwidth it expects of each, re-derived from NCCL's tuner (NVIDIA/nccl src/graph/tuning.cc,
// 2.30.7 @ 5067397c; the Hopper and Ampere constants have not changed since 2.18). The engine
// (collective.h) uses it twice: to choose the algorithm as NCCL does (the smallest
// latency + bytes / bandwidth over every enabled algorithm and protocol), and as the ceiling of
// the executed collective's bandwidth (the Simple protocol's bandwidth of that algorithm): the
// wire model alone lets a tree or an intra-node ring run at link speed, which NCCL never
// reaches (per-channel SM and protocol limits; docs/collectives.md compares both with logs).
//
// Inputs are what NCCL's topology search would find, from the cluster:
//   nodes     NVLink domains the group spans (NCCL's nNodes), ppn = largest ranks per domain;
//   channels  search channels: one per NIC of a domain (8 on an HGX with 8 NICs);
//   bw_inter  per channel, GB/s: the NIC's raw rate, capped by the GPU-NIC PCIe path, snapped
//             down to NCCL's inter-node speed ladder (400 Gb/s NIC -> 48);
//   nvlink    NCCL's NVLink total per GPU: links x per-link rate, 0.82 of the datasheet
//             (H100 18 x 20.6 = 370.8 of 450 GB/s, B200 18 x 40.1 of 900, A100 12 x 20 of 300).
// Per algorithm (AllReduce; nsteps = 2 (n - 1)):
//   ring      single domain: busBw = best channels x ladder speed <= nvlink (H100 12 x 30 = 360);
//             several: busBw = channels x bw_inter; algBw = busBw n / nsteps.
//             latency = base + (nsteps - inter) max(intra, 3 x netOverhead) + inter x NET,
//             inter = 2 (nodes - 1); x 1.4 for Simple across domains with >= 64 B per channel
//             and rank (NCCL's ring plateau penalty).
//   tree      nodes > 1: busBw = min(0.92 channels x bw, channels x perChMaxTreeBw[arch][nodes]),
//             algBw = busBw / 2; latency = base + 2 ((ppn - 1) intra + floor(log2 nodes) NET).
//   nvls      one domain, sm_arch >= 90: per channel min(bwIntra x nvlsEff x (c-1)/c x 2, inf),
//             bwIntra = ladder speed <= nvlink / 9; algBw = busBw n / nsteps; latency 25 us.
//   nvls_tree nodes > 1, sm_arch >= 90: per channel min(the same intra, bw_inter x (2 if
//             nodes <= 2), perChMaxNVLSTreeBw[arch][nodes]); latency 25 + 2 floor(log2 nodes) 20.9.
//   Protocols: LL busBw = min(llMaxBw, busBw / 2) (tree: / 3.8); LL128 x 0.92 capped per channel
//   (tree: x 120/128); NVLS and NVLS tree are Simple only.
// AllGather / ReduceScatter / Broadcast: ring (nsteps = n - 1).
#pragma once

#include <cstdint>
#include <string_view>

#include "models/hardware/node.h"

namespace ct::collective {

enum class Protocol { ll, ll128, simple };
std::string_view protocol_name(Protocol p);

// Algorithms NCCL runs (the engine's Algorithm minus `automatic`).
enum class NcclAlgo { ring, tree, nvls, nvls_tree };

struct TuningInput {
  bool all_reduce = true;  // false: all_gather / reduce_scatter / broadcast (ring only)
  int ranks = 1;
  int nodes = 1;  // NVLink domains spanned
  int ppn = 1;    // largest number of ranks in one domain
  int channels = 8;
  double bw_inter = 48.0;  // GB/s per channel, already on the ladder
  double nvlink = 370.8;   // GB/s, NCCL's NVLink total per GPU
  int sm_arch = 90;
};

struct AlgoCost {
  bool enabled = false;
  double latency_us = 0.0;
  double algbw = 0.0;  // GB/s of user buffer (NCCL's algorithm bandwidth)
  double busbw = 0.0;  // nccl-tests' bus bandwidth at that algBw
};

// What NCCL's topology search finds for a group of `ranks` over `nodes` NVLink domains with at
// most `ppn` ranks in one: one search channel per NIC those ranks reach (their own rails), the
// NIC's rate (capped by its PCIe path) on the inter-node ladder, the GPU's NVLink total.
TuningInput node_tuning_input(const hardware::NodeSpec& node, bool all_reduce, int ranks, int nodes, int ppn);

// The cost of one (algorithm, protocol); enabled = false when NCCL would not run it here.
AlgoCost nccl_cost(const TuningInput& in, NcclAlgo algo, Protocol proto, double bytes);

struct Choice {
  NcclAlgo algo = NcclAlgo::ring;
  Protocol proto = Protocol::simple;
  double time_us = 0.0;
};
// NCCL's choice: the smallest latency + bytes / (1000 algBw) over the enabled pairs, restricted
// to `only` when forced (NCCL_ALGO); falls back to ring when the forced algorithm cannot run.
Choice nccl_choose(const TuningInput& in, double bytes, const NcclAlgo* only = nullptr);

// The chunk NCCL's NVLS tree moves per pipeline step (bytes) for an all-reduce of `bytes`:
// enqueue.cc calcCollChunking with nvls.cc's defaults. Hopper: 16 NVLS channels, chunk 128 KiB
// (64 KiB from 4 nodes on), halved to 64 KiB below 4 x ops x 128 KiB and to 32 KiB below
// ops x 64 KiB, ops = NVLS channels x NVLS heads (one head per NIC of a node: 16 x 8 = 128,
// so 64 KiB below 64 MiB and 32 KiB below 8 MiB). Blackwell: 32 channels across nodes,
// chunk 128 KiB, tree cap 256 KiB with >= 96 GB/s per NIC, else 128 KiB.
double nvls_tree_chunk_bytes(const TuningInput& in, double bytes);

// The chunk of NCCL's tree with LL or LL128 (bytes; calcCollChunking): LL moves half its
// 64 KiB step (32 KiB), Simple its 512 KiB step; LL128 starts at 15/16 of its 600 KiB step (576,000 B) and
// halves while bytes / (channels x chunk) < steps x 64 / ppn (down to 128 KiB), then while < steps x 16 / ppn
// (down to 32 KiB), steps = 1 + log2(nodes) + ppn / 10, channels = twice the search channels (NCCL duplicates
// them at run time).
double tree_chunk_bytes(const TuningInput& in, double bytes, Protocol proto);

// What one CTA of NCCL's ring all-reduce moves across nodes with the Simple protocol, GB/s of
// bus bandwidth: each runtime channel is one CTA that receives a chunk from the network proxy,
// reduces it with its own data and hands it on, NCCL_STEPS slots at a time, and that pipeline,
// not the NIC, bounds a channel. NCCL's tuner does not model it (it prices the ring at the NICs'
// rate), so it never changes NCCL's choice; it caps what the chosen ring then runs at. On H100
// nodes with 8 x 400G, NCCL runs 16 CTAs (twice its 8 search channels) and all_reduce_perf's
// large-buffer busbw sits at 320-331 GB/s on 4 and 8 nodes (nccl-tests #309: 324.5 at 4 nodes,
// 320.7 at 8; Voltage Park, NCCL 2.24.3: 330.9 at 4), below the NICs' 384, while more CTAs reach
// the NICs (on the same cluster as the #309 runs, NCCL_MIN_CTAS=24 on 2 nodes with the ring
// forced: 392.7; network.ctas sets the count). FITTED on one log
// (nccl-tests #309, 4 nodes, 324.52 GB/s at 8 GiB: 324.52 / 0.984 executed-to-ceiling / 16 CTAs =
// 20.6), the others held out (tests/validation/nccl-tests-h100.json; docs/accuracy.md).
// Measured on Hopper all_reduce only: all_gather / reduce_scatter (a copy, not a reduction, per
// chunk) and other generations are not capped.
inline constexpr double kRingNetCtaBusBwHopper = 20.6;
// The CTAs NCCL runs a ring with, from its search channels (graph/connect.cc ncclTopoPostset,
// 2.24 to 2.30.7 alike): twice them, at most 32 (MAXCHANNELS), and twice again on Hopper and
// later across nodes while under 16 ("4 compute channels per search channel to reach peak BW on
// <8 PPN"; the ring's intra-node speed on NVLink passes its 45 GB/s test). 8 NICs: 16; 4: 16.
int ring_runtime_ctas(const TuningInput& in, int search_channels);
// Whether the bound is measured for this GPU generation (Hopper only).
bool ring_cta_bound_measured(int sm_arch);
// The bus bandwidth cap of a Simple ring all-reduce across NVLink domains with `ctas` runtime
// CTAs (infinite where not measured: another generation, one domain, another op).
double ring_net_cta_cap(const TuningInput& in, int ctas);

// NCCL's speed ladders (search.cc): the largest entry <= bw.
double ladder_inter(double bw, int sm_arch);
double ladder_intra(double bw, int sm_arch);
// NCCL's NVLink total of a GPU from its datasheet per-direction bandwidth (bytes/s) -> GB/s.
double nccl_nvlink_total(double nvlink_bytes_per_s);
// The bus bandwidth (GB/s) of NCCL's ring inside one NVLink domain: the best channels x ladder
// speed within the NVLink total (H100: 12 x 30 = 360).
double ring_intra_busbw(double nvlink_total, int sm_arch);
// The CTAs (SMs) that ring runs on: twice its search channels (NCCL duplicates them at run
// time), the fewest channels that reach ring_intra_busbw (H100 and A100: 6, so 12 SMs).
int ring_intra_ctas(double nvlink_total, int sm_arch);

}  // namespace ct::collective
