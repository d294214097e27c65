#include "models/collective/nccl_tuning.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <span>

namespace ct::collective {
namespace {

// Architecture rows: 0 Ampere (and older), 1 Hopper, 2 Blackwell.
int arch_row(int sm_arch) { return sm_arch >= 100 ? 2 : sm_arch >= 90 ? 1 : 0; }
// Node-count columns of the per-channel caps: one node, two, more.
int node_col(int nodes) { return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2; }

// tuning.cc (2.30.7): per-channel bandwidth caps, GB/s.
constexpr double kPerChMaxTreeBw[3][3] = {{24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
// Ampere's tree LL128 row is not in the 2.30 table we read: its tree row is used.
constexpr double kPerChMaxTreeLL128Bw[3][3] = {{24.0, 23.6, 17.8}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
constexpr double kPerChMaxRingLL128Bw[3] = {20.0, 36.7, 40.0};
constexpr double kPerChMaxNvlsTreeBw[3][3] = {{0.0, 0.0, 0.0}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
constexpr double kNvlsEfficiency[3] = {0.0, 0.85, 0.74};
constexpr double kLlMaxBwOneNode[3] = {87.7, 141.0, 282.0};
constexpr double kLlMaxBwTwoNodes = 39.0;   // Intel host
constexpr double kLlMaxBwMoreNodes = 20.4;  // Intel host
constexpr double kNetOverheadUs = 1.0;      // per step across nodes, Intel host (x3 for Simple)

// Latencies, us: [LL, LL128, Simple].
constexpr double kBaseLatRing[3] = {6.6, 14.0, 8.4};
constexpr double kBaseLatTree[3] = {6.8, 14.0, 8.4};
constexpr double kNvlinkLatRing[3] = {0.6, 1.9, 3.4};
constexpr double kNvlinkLatTree[3] = {0.6, 1.25, 4.0};
constexpr double kNetLatRing[3] = {2.7, 4.0, 14.0};
constexpr double kNetLatTree[3] = {5.0, 8.5, 14.0};
constexpr double kNvlsLat = 25.0;
constexpr double kNvlsTreeNetLat = 20.9;

// search.cc speed ladders, GB/s.
constexpr std::array kIntraSm90 = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
constexpr std::array kIntraSm100 = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
constexpr std::array kIntraSm80 = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
constexpr std::array kInterSm90 = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                   15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr std::array kInterSm100 = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                    20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr std::array kInterSm80 = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                   7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr int kMaxSearchChannels = 16;

std::span<const double> intra_ladder(int sm_arch) {
  if (sm_arch >= 100) return kIntraSm100;
  return sm_arch >= 90 ? std::span<const double>(kIntraSm90) : std::span<const double>(kIntraSm80);
}

std::span<const double> inter_ladder(int sm_arch) {
  if (sm_arch >= 100) return kInterSm100;
  return sm_arch >= 90 ? std::span<const double>(kInterSm90) : std::span<const double>(kInterSm80);
}

double ladder(std::span<const double> speeds, double bw) {
  for (const double s : speeds) {
    if (s <= bw) return s;
  }
  return speeds.back();
}

int log2i(int n) {
  int l = 0;
  while (n > 1) {
    n >>= 1;
    ++l;
  }
  return l;
}

}  // namespace

std::string_view protocol_name(Protocol p) {
  switch (p) {
    case Protocol::ll:
      return "LL";
    case Protocol::ll128:
      return "LL128";
    case Protocol::simple:
      return "Simple";
  }
  return "?";
}

double ladder_inter(double bw, int sm_arch) { return ladder(inter_ladder(sm_arch), bw); }

double ladder_intra(double bw, int sm_arch) { return ladder(intra_ladder(sm_arch), bw); }

// NCCL's per-link NVLink rates (topo.h): SM80 20, SM90 20.6, SM100 40.1 GB/s against the
// datasheet's 25 / 25 / 50 per link and direction: 0.8, 0.824, 0.802 -> 0.82.
double nccl_nvlink_total(double nvlink_bytes_per_s) { return 0.82 * nvlink_bytes_per_s / 1e9; }

// Single-domain ring: the most bandwidth the ring search finds, channels x ladder speed within
// the GPU's NVLink total (H100: 12 x 30 = 360 of 370.8).
double ring_intra_busbw(double nvlink, int sm_arch) {
  double best = 0.0;
  for (const double s : intra_ladder(sm_arch)) {
    const int c = std::min(kMaxSearchChannels, static_cast<int>(std::floor(nvlink / s + 1e-9)));
    best = std::max(best, c * s);
  }
  return best;
}

TuningInput node_tuning_input(const hardware::NodeSpec& node, bool all_reduce, int ranks, int nodes,
                              int ppn) {
  TuningInput in;
  in.all_reduce = all_reduce;
  in.ranks = ranks;
  in.nodes = nodes;
  in.ppn = std::max(1, ppn);
  const double nics_per_gpu = static_cast<double>(node.nics_per_node) / node.gpus_per_node;
  in.channels = std::clamp(static_cast<int>(std::lround(in.ppn * nics_per_gpu)), 1, 16);
  in.sm_arch = node.gpu.sm_arch;
  in.bw_inter = ladder_inter(
      std::min(node.nic_rate.bytes_per_second(), node.pcie_rate.bytes_per_second()) / 1e9, in.sm_arch);
  in.nvlink = nccl_nvlink_total(node.nvlink_rate.bytes_per_second());
  return in;
}

int ring_intra_ctas(double nvlink, int sm_arch) {
  const double best = ring_intra_busbw(nvlink, sm_arch);
  int fewest = kMaxSearchChannels;
  for (const double s : intra_ladder(sm_arch)) {
    const int c = std::min(kMaxSearchChannels, static_cast<int>(std::floor(nvlink / s + 1e-9)));
    if (c >= 1 && c * s >= best - 1e-9) fewest = std::min(fewest, c);
  }
  return 2 * fewest;
}

AlgoCost nccl_cost(const TuningInput& in, NcclAlgo algo, Protocol proto, double bytes) {
  AlgoCost out;
  const int a = arch_row(in.sm_arch);
  const int col = node_col(in.nodes);
  const int p = static_cast<int>(proto);
  const double n = std::max(1, in.ranks);
  const double c = std::max(1, in.channels);
  const bool multi = in.nodes > 1;
  const double nsteps = in.all_reduce ? 2.0 * (n - 1) : n - 1;
  if (in.ranks < 2) return out;
  const double ll_max = !multi ? kLlMaxBwOneNode[a] : in.nodes == 2 ? kLlMaxBwTwoNodes : kLlMaxBwMoreNodes;
  switch (algo) {
    case NcclAlgo::ring: {
      double bus = multi ? c * in.bw_inter : ring_intra_busbw(in.nvlink, in.sm_arch);
      if (proto == Protocol::ll) bus = std::min(ll_max, 0.5 * bus);
      if (proto == Protocol::ll128) bus = std::min(0.92 * bus, c * kPerChMaxRingLL128Bw[a]);
      const double inter = multi ? (in.all_reduce ? 2.0 : 1.0) * (in.nodes - 1) : 0.0;
      double intra = kNvlinkLatRing[p];
      if (multi) intra = std::max(intra, kNetOverheadUs * (proto == Protocol::simple ? 3.0 : 1.0));
      double lat = kBaseLatRing[p] + (nsteps - inter) * intra + inter * kNetLatRing[p];
      // Ring plateau: Simple across nodes once every channel and rank has >= 64 B (runtime
      // channels = 2 x search channels).
      if (multi && proto == Protocol::simple && bytes / (2.0 * c * n) >= 64.0) lat *= 1.4;
      out.enabled = true;
      out.latency_us = lat;
      out.algbw = bus * n / nsteps;
      break;
    }
    case NcclAlgo::tree: {
      if (!in.all_reduce || !multi) return out;
      double bus = c * in.bw_inter;
      bus = std::min(0.92 * bus, c * kPerChMaxTreeBw[a][col]);
      if (proto == Protocol::ll) bus = std::min(bus / 3.8, ll_max);
      if (proto == Protocol::ll128) bus = std::min(bus * 120.0 / 128.0, c * kPerChMaxTreeLL128Bw[a][col]);
      out.enabled = true;
      out.latency_us =
          kBaseLatTree[p] + 2.0 * ((in.ppn - 1) * kNvlinkLatTree[p] + log2i(in.nodes) * kNetLatTree[p]);
      out.algbw = 0.5 * bus;
      break;
    }
    case NcclAlgo::nvls:
    case NcclAlgo::nvls_tree: {
      const bool tree = algo == NcclAlgo::nvls_tree;
      if (!in.all_reduce || a == 0 || proto != Protocol::simple || in.ppn < 2 || c < 2) return out;
      if (tree != multi) return out;  // NVLS: one domain (no SHARP); NVLS tree: several
      const double bw_intra = ladder_intra(in.nvlink / 9.0, in.sm_arch);
      const double intra = bw_intra * kNvlsEfficiency[a] * (c - 1) / c * 2.0;
      double bw = intra;
      if (tree) bw = std::min({bw, in.bw_inter * (in.nodes <= 2 ? 2.0 : 1.0), kPerChMaxNvlsTreeBw[a][col]});
      out.enabled = true;
      out.latency_us = kNvlsLat + (tree ? 2.0 * log2i(in.nodes) * kNvlsTreeNetLat : 0.0);
      out.algbw = c * bw * n / nsteps;
      break;
    }
  }
  out.busbw = out.algbw * nsteps / n;
  return out;
}

double nvls_tree_chunk_bytes(const TuningInput& in, double bytes) {
  const bool blackwell = in.sm_arch >= 100;
  const double nvls_channels = blackwell ? 32.0 : 16.0;  // NVLS_NCHANNELS_SM90 / _SM100
  double tree_max = in.nodes >= 4 ? 65536.0 : 131072.0;
  if (blackwell) tree_max = in.bw_inter >= 96.0 ? 262144.0 : 131072.0;
  double chunk = std::min(blackwell && in.bw_inter >= 96.0 ? 262144.0 : 131072.0, tree_max);
  const double ops = nvls_channels * std::max(1, in.channels);
  if (bytes < 32.0 * ops * chunk && chunk > 262144.0) chunk = 262144.0;
  if (bytes < 16.0 * ops * chunk && chunk > 131072.0) chunk = 131072.0;
  if (bytes < 4.0 * ops * chunk && chunk > 65536.0) chunk = 65536.0;
  if (bytes < 1.0 * ops * chunk && chunk > 32768.0) chunk = 32768.0;
  return chunk;
}

double tree_chunk_bytes(const TuningInput& in, double bytes, Protocol proto) {
  if (proto == Protocol::ll) return 32768.0;       // DEFAULT_LL_BUFFSIZE / NCCL_STEPS / 2
  if (proto == Protocol::simple) return 524288.0;  // DEFAULT_BUFFSIZE (4 MiB) / NCCL_STEPS
  // DEFAULT_LL128_BUFFSIZE / NCCL_STEPS = 120 x 640 x 8 B = 614,400; data 15 of 16 elements.
  double chunk = 614400.0 / 16.0 * 15.0;
  const double ppn = std::max(1, in.ppn);
  const double steps = 1.0 + log2i(in.nodes) + 0.1 * ppn;
  const double per_chunk = bytes / (2.0 * std::max(1, in.channels));
  while (std::floor(per_chunk / chunk) < steps * 64.0 / ppn && chunk > 131072.0)
    chunk = std::floor(chunk / 2.0);
  while (std::floor(per_chunk / chunk) < steps * 16.0 / ppn && chunk > 32768.0)
    chunk = std::floor(chunk / 2.0);
  return chunk;
}

int ring_runtime_ctas(const TuningInput& in, int search_channels) {
  constexpr int kMaxChannels = 32;
  int ctas = std::min(kMaxChannels, 2 * std::max(1, search_channels));
  if (in.sm_arch >= 90 && in.nodes > 1 && ctas < 16) ctas = std::min(kMaxChannels, 2 * ctas);
  return ctas;
}

bool ring_cta_bound_measured(int sm_arch) { return arch_row(sm_arch) == 1; }

double ring_net_cta_cap(const TuningInput& in, int ctas) {
  if (!in.all_reduce || in.nodes <= 1 || !ring_cta_bound_measured(in.sm_arch) || ctas < 1)
    return std::numeric_limits<double>::infinity();
  return kRingNetCtaBusBwHopper * ctas;
}

Choice nccl_choose(const TuningInput& in, double bytes, const NcclAlgo* only) {
  Choice best;
  best.time_us = std::numeric_limits<double>::infinity();
  for (const NcclAlgo algo : {NcclAlgo::ring, NcclAlgo::tree, NcclAlgo::nvls, NcclAlgo::nvls_tree}) {
    if (only != nullptr && algo != *only) continue;
    for (const Protocol proto : {Protocol::ll, Protocol::ll128, Protocol::simple}) {
      const AlgoCost cost = nccl_cost(in, algo, proto, bytes);
      if (!cost.enabled || cost.algbw <= 0.0) continue;
      const double t = cost.latency_us + bytes / (1000.0 * cost.algbw);
      if (t < best.time_us) best = Choice{algo, proto, t};
    }
  }
  if (!std::isfinite(best.time_us)) {
    if (only != nullptr && *only != NcclAlgo::ring) {
      const NcclAlgo ring = NcclAlgo::ring;
      return nccl_choose(in, bytes, &ring);
    }
    best.time_us = 0.0;  // one rank: nothing to move
  }
  return best;
}

}  // namespace ct::collective
