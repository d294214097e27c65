// The network interface every fidelity implements (analytical, flow, later packet).
//
// A backend shares the caller's sim::Simulation (one clock, one queue) and reports each
// delivery through a typed handler with the caller's tag. Bytes on the wire: every payload is
// divided by NetworkParams::protocol_efficiency (headers, acks, RDMA/NCCL protocol overhead),
// so an uncontended transfer takes  latency + (bytes / efficiency) / bottleneck.
//
// ECMP: the tag is the flow id handed to topology::route, so transfers with the same
// (src, dst, tag) take the same fabric path, like one RDMA queue pair.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "models/topology/hash.h"
#include "sim/units.h"

namespace ct::sim {
class Simulation;
}

namespace ct::network {

class Cluster;

// A transfer with no surviving path between its NICs (link_down / switch_down faults): the RDMA
// queue pair errors out and NCCL aborts the communicator, failing the job at time_s.
class NoPathError : public std::runtime_error {
 public:
  NoPathError(const std::string& what, double at_s, int src, int dst)
      : std::runtime_error(what), time_s(at_s), src_gpu(src), dst_gpu(dst) {}
  double time_s;
  int src_gpu, dst_gpu;
};

class DeliveryHandler {
 public:
  virtual void on_delivered(uint64_t tag) = 0;

 protected:
  ~DeliveryHandler() = default;
};

struct Leg {
  int src_gpu;
  int dst_gpu;
};

// A (source, destination) GPU pair as one key.
inline uint64_t pair_key(int src_gpu, int dst_gpu) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(src_gpu)) << 32) | static_cast<uint32_t>(dst_gpu);
}

// A hash of one connection, a pair (pair_key) and a flow id: the key the networks' remembered
// routes are kept under (AnalyticalNetwork and FlowNetwork send_flow, PathUses' per-flow paths).
inline uint64_t connection_key(uint64_t pair, uint64_t flow_id) {
  return topology::detail::splitmix64(pair ^ topology::detail::splitmix64(flow_id));
}

// A hash of a list of ranks (a collective's group), in order, under `seed`. Four independent
// lanes: a group of thousands of ranks is hashed at every collective call (plan caches), and
// one multiply chain over it waited on each multiply in turn.
template <typename T, typename Word>
uint64_t lanes_hash(std::span<const T> items, uint64_t seed, Word word) {
  constexpr uint64_t kPrime = 0x100000001B3ULL;
  uint64_t h0 = seed, h1 = seed ^ 0x9E3779B97F4A7C15ULL, h2 = seed ^ 0xC2B2AE3D27D4EB4FULL,
           h3 = seed ^ 0x165667B19E3779F9ULL;
  const size_t n = items.size();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    h0 = (h0 ^ word(items[i])) * kPrime;
    h1 = (h1 ^ word(items[i + 1])) * kPrime;
    h2 = (h2 ^ word(items[i + 2])) * kPrime;
    h3 = (h3 ^ word(items[i + 3])) * kPrime;
  }
  for (; i < n; ++i) h0 = (h0 ^ word(items[i])) * kPrime;
  uint64_t h = h0 ^ std::rotl(h1, 16) ^ std::rotl(h2, 32) ^ std::rotl(h3, 48) ^ n;
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ULL;  // splitmix64's finaliser
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBULL;
  return h ^ (h >> 31);
}
inline uint64_t ranks_hash(std::span<const int> ranks, uint64_t seed) {
  return lanes_hash(ranks, seed, [](int r) { return static_cast<uint64_t>(static_cast<uint32_t>(r)); });
}

// A hash of a chain's legs, in order, and their equality: what remembers a chain by its legs
// (AnalyticalNetwork::chain, chain_cache.h) keys and compares.
inline uint64_t legs_hash(std::span<const Leg> legs) {
  return lanes_hash(legs, 0x9E3779B97F4A7C15ULL, [](const Leg& l) { return pair_key(l.src_gpu, l.dst_gpu); });
}
inline bool same_legs(std::span<const Leg> a, std::span<const Leg> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Leg& x, const Leg& y) {
    return x.src_gpu == y.src_gpu && x.dst_gpu == y.dst_gpu;
  });
}

// The ECMP flow id of leg `leg` of a chain (send_pipelined, send_chain): its connection, which
// keeps one fabric path for the communicator's life. NCCL connects its channels' queue pairs
// when a communicator first runs a collective and reuses them for every later one; RoCE
// switches hash a QP's UDP source port, fixed for the QP (which is why NCCL_IB_QPS_PER_CONNECTION
// exists: "multi-level fabrics ... need multiple queue pairs to have good routing entropy",
// NCCL's environment variable documentation), and InfiniBand routes by destination LID. So
// the same legs of successive collectives take the same paths, and two channels between the
// same GPUs (distinct legs) may take different ones. The call's tag only names the delivery.
constexpr uint64_t chain_leg_flow(size_t leg) { return 0x43484149ULL + leg; }

class ChainCache;

struct NetworkParams {
  // Payload bytes / wire bytes, in (0, 1].
  double protocol_efficiency = 0.95;
  // RDMA queue pairs per connection (NCCL_IB_QPS_PER_CONNECTION, NCCL's default 1): each
  // carries an equal share of a leg on its own ECMP path (path_uses.h set_queue_pairs; the
  // packet backend runs them as separate flows).
  int qps_per_connection = 1;
  // Flow backend: changes within one quantum share one max-min solve (0 = exact).
  sim::Duration solve_quantum = sim::Duration::zero();
  // Per-link statistics (bytes, busy time, utilization: link_stats, top_links). A caller that
  // reads none of them (a batch of layouts: scenario::evaluate_layouts) turns them off; the
  // readings are then not kept (meaningless). Timing is the same either way.
  bool link_statistics = true;
  // Chains' fabric uses shared with other runs over the same cluster (chain_cache.h; not
  // owned; analytical backend). nullptr: each network routes its chains itself.
  ChainCache* shared_chains = nullptr;
  // The cluster's resource capacities (resource_capacities: one entry per resource, bit/s) as a
  // sweep over one unchanging cluster computed them once; a network and its collective engine
  // then share them instead of building their own (a network copies them on its first
  // capacity change). nullptr: each builds its own from the cluster.
  std::shared_ptr<const std::vector<double>> shared_capacities = nullptr;
  // Flow backend, rail fold (path_uses.h set_rail_fold): each leg between simulated GPUs also
  // loads, on the links flagged here (one flag per resource: shared by several rails), the
  // paths of its rail_fold - 1 siblings on the other rails. 1: off.
  int rail_fold = 1;
  std::shared_ptr<const std::vector<uint8_t>> rail_shared_links = nullptr;
};

// The cluster's resource capacities: params.shared_capacities when given (checked to have one
// entry per resource, std::logic_error otherwise), else resource_capacities(cluster).
std::shared_ptr<const std::vector<double>> capacities_for(const Cluster& cluster,
                                                          const NetworkParams& params);

// One resource (link direction, NVLink or PCIe port) over the run so far.
struct LinkStats {
  int32_t resource = -1;
  std::string name;
  double bytes = 0.0;        // wire bytes carried
  double busy_s = 0.0;       // time with a non-zero load
  double utilization = 0.0;  // time-averaged load / capacity since time zero
};

// What became of the transfers (flow backend): every bit started is delivered once, and the
// transfers a link failure cut are counted (stalled for a retransmission, then resumed on a
// surviving path with the bits they had left; nothing is resent or dropped in the flow model).
struct TransferCounters {
  int64_t started = 0, delivered = 0, cut = 0, resumed = 0;
  double started_bytes = 0, delivered_bytes = 0, cut_bytes_left = 0;
};

class Network {
 public:
  virtual ~Network() = default;

  // Point-to-point: `bytes` from src to dst; handler.on_delivered(tag) when the last byte
  // arrives. src == dst is delivered after a zero delay. The tag is also the flow id: each
  // send may take another of the fabric's equal-cost paths (a traffic study's flows).
  void send(int src_gpu, int dst_gpu, sim::Bytes bytes, DeliveryHandler& handler, uint64_t tag) {
    send_flow(src_gpu, dst_gpu, tag, bytes, handler, tag);
  }
  // The same on a connection: flow_id picks the path (a connection keeps one: a pipeline's
  // sends between two ranks, chain_leg_flow's reasoning), the tag only names the delivery.
  virtual void send_flow(int src_gpu, int dst_gpu, uint64_t flow_id, sim::Bytes bytes,
                         DeliveryHandler& handler, uint64_t tag) = 0;
  // A pipelined chain (an NCCL ring or tree): leg i on the path of flow chain_leg_flow(i) (the
  // tag is not a flow id here); every leg moves `bytes_per_leg`, all legs at ONE
  // common rate (a synchronous pipeline goes at the pace of its slowest leg); a resource
  // crossed by m legs carries m times the rate. Delivered after the bytes plus
  // `fixed_latency`; the legs' own path latencies are NOT added (the caller folds hop latency
  // into fixed_latency, e.g. steps x (step latency + max hop latency)). The common per-leg
  // wire rate never exceeds leg_rate_cap_bps (infinity: links only), the ceiling an
  // algorithm's kernels put on it (collective.h).
  virtual void send_pipelined(std::span<const Leg> legs, sim::Bytes bytes_per_leg,
                              sim::Duration fixed_latency, double leg_rate_cap_bps, DeliveryHandler& handler,
                              uint64_t tag) = 0;
  // The same chain, named by the caller with an id it gives no other legs (0: unnamed), so
  // that a network may remember what it derived from these legs under that id instead of
  // recognising the legs again at every call. The result is send_pipelined's.
  virtual void send_chain(uint64_t chain_id, std::span<const Leg> legs, sim::Bytes bytes_per_leg,
                          sim::Duration fixed_latency, double leg_rate_cap_bps, DeliveryHandler& handler,
                          uint64_t tag) {
    (void)chain_id;
    send_pipelined(legs, bytes_per_leg, fixed_latency, leg_rate_cap_bps, handler, tag);
  }

  [[nodiscard]] virtual sim::Duration path_latency(int src_gpu, int dst_gpu) const = 0;
  // Uncontended bottleneck capacity of the path (raw link rate; goodput is this times
  // params().protocol_efficiency). Infinite for src == dst.
  [[nodiscard]] virtual sim::Bandwidth path_bandwidth(int src_gpu, int dst_gpu) const = 0;

  // Capacity change of one resource (Cluster numbering; link degrade / failure = 0).
  // Transfers in flight keep their paths; the flow backend re-shares their rates.
  virtual void set_resource_capacity(int32_t resource, sim::Bandwidth capacity) = 0;
  // After fabric links went down (the cluster's topology already rerouted new transfers):
  // transfers in flight over a dead link lost packets; they stall until their RDMA queue pair
  // retransmits after `retransmit_timeout` and continue on a surviving path (flow backend;
  // the others throw std::invalid_argument).
  virtual void reroute_after_failure(sim::Duration retransmit_timeout);

  // Statistics.
  [[nodiscard]] virtual LinkStats link_stats(int32_t resource) const = 0;
  // The k most utilized resources, most utilized first (ties by resource id).
  [[nodiscard]] virtual std::vector<LinkStats> top_links(size_t k) const = 0;
  [[nodiscard]] virtual double max_link_utilization() const = 0;
  // Empty for backends that do not count (analytical, packet).
  [[nodiscard]] virtual std::optional<TransferCounters> transfer_counters() const { return std::nullopt; }

  [[nodiscard]] virtual const NetworkParams& params() const = 0;
  [[nodiscard]] virtual const Cluster& cluster() const = 0;
};

// mode: "analytical" | "flow" | "packet" (with default PacketParams; build a PacketNetwork
// directly to choose them). Anything else throws std::invalid_argument naming `network.mode`.
std::unique_ptr<Network> make_network(std::string_view mode, sim::Simulation& sim, const Cluster& cluster,
                                      NetworkParams params = {});

}  // namespace ct::network
