// Alpha-beta network, no contention between transfers.
//
//   send:            T = latency(path) + ceil(8 * bytes / eff / B_path)      [ps]
//                    B_path = min capacity along the path
//   send_pipelined:  T = fixed_latency + ceil(8 * bytes_per_leg / eff / x)
//                    x = min(cap, min_r C_r / a_r) over the union of the legs' resources,
//                    a_r = legs on r, cap = leg_rate_cap_bps
//                    (the slowest leg; a chain that crosses a port m times gets 1/m of it)
// One event per transfer on the shared Simulation. Statistics count each transfer's wire bits
// as finished work on every resource it crosses (busy = bits / capacity).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "models/network/chain_cache.h"
#include "models/network/cluster.h"
#include "models/network/link_accounting.h"
#include "models/network/network.h"
#include "models/network/path_uses.h"
#include "sim/simulation.h"
#include "sim/slot_pool.h"

namespace ct::network {

class AnalyticalNetwork final : public Network, private sim::EventHandler {
 public:
  AnalyticalNetwork(sim::Simulation& sim, const Cluster& cluster, NetworkParams params = {});

  void send_flow(int src_gpu, int dst_gpu, uint64_t flow_id, sim::Bytes bytes, DeliveryHandler& handler,
                 uint64_t tag) override;
  void send_pipelined(std::span<const Leg> legs, sim::Bytes bytes_per_leg, sim::Duration fixed_latency,
                      double leg_rate_cap_bps, DeliveryHandler& handler, uint64_t tag) override;
  void send_chain(uint64_t chain_id, std::span<const Leg> legs, sim::Bytes bytes_per_leg,
                  sim::Duration fixed_latency, double leg_rate_cap_bps, DeliveryHandler& handler,
                  uint64_t tag) override;
  [[nodiscard]] sim::Duration path_latency(int src_gpu, int dst_gpu) const override;
  [[nodiscard]] sim::Bandwidth path_bandwidth(int src_gpu, int dst_gpu) const override;
  void set_resource_capacity(int32_t resource, sim::Bandwidth capacity) override;
  [[nodiscard]] LinkStats link_stats(int32_t resource) const override;
  [[nodiscard]] std::vector<LinkStats> top_links(size_t k) const override;
  [[nodiscard]] double max_link_utilization() const override;
  [[nodiscard]] const NetworkParams& params() const override { return params_; }
  [[nodiscard]] const Cluster& cluster() const override { return cluster_; }

 private:
  struct Pending {
    DeliveryHandler* handler;
    uint64_t tag;
  };
  void on_event(uint64_t slot) override;
  void finish(double wire_bits, sim::Duration delay, DeliveryHandler& handler, uint64_t tag);
  // What a chain's legs cross, remembered by the legs themselves while the routes stay as they
  // are (a step starts the same collectives again and again): the summed uses of its legs,
  // each on its connection's path (chain_leg_flow), and the bottleneck rate they give. A chain
  // with a multi-port NIC is not remembered (`fixed` false): its legs' 1/ports shares are
  // added in leg order at every call.
  struct Chain {
    std::vector<Leg> legs;  // unnamed chains: what chain() compares
    bool fixed = false;
    std::shared_ptr<const ChainUses> uses;  // set when fixed
    double fixed_min = 0.0;                 // the least C / a over `uses` at fixed_min_version
    uint64_t fixed_min_version = ~uint64_t{0};
  };
  Chain& chain(std::span<const Leg> legs);
  // The chain a caller named (send_chain): found by its id, without hashing the legs.
  Chain& named_chain(uint64_t id, std::span<const Leg> legs);
  Chain build_chain(std::span<const Leg> legs);
  void forget_chains_if_stale();
  [[nodiscard]] ChainCache* shared_chains() const;
  double bottleneck(Chain& c);
  // min over `uses` of capacity / coefficient at the current capacities (+inf when empty).
  [[nodiscard]] double min_rate(std::span<const PathUses::Use> uses) const;
  void send_over(Chain& c, std::span<const Leg> legs, sim::Bytes bytes_per_leg, sim::Duration fixed_latency,
                 double leg_rate_cap_bps, DeliveryHandler& handler, uint64_t tag);

  sim::Simulation& sim_;
  const Cluster& cluster_;
  NetworkParams params_;
  LinkAccounting stats_;
  PathUses uses_;
  mutable std::vector<int32_t> path_;
  mutable PathUses bandwidth_uses_;  // path_bandwidth's scratch
  sim::SlotPool<Pending> pending_;
  std::unordered_map<uint64_t, Chain> chains_;
  std::unordered_map<uint64_t, Chain> named_chains_;
  uint64_t chains_epoch_ = 0;
  PathUses chain_scratch_;
  uint64_t capacity_version_ = 0;  // set_resource_capacity calls so far
  // send_flow's latency and bottleneck rate by (pair, flow id), while no link statistics are
  // kept (they need the path itself): a pipeline sends between the same two GPUs on the same
  // connection at every micro-batch. Valid for the routes and capacities they were found with.
  struct FlowRoute {
    int src = -1, dst = -1;
    uint64_t flow = 0, epoch = 0, version = 0;
    sim::Duration latency;
    double rate = 0.0;
  };
  // Direct-mapped by the connection's hash (kFlowRouteSlots, allocated at the first send): a
  // slot holding another connection, or older routes or capacities, is routed again.
  static constexpr size_t kFlowRouteSlots = size_t{1} << 12;
  std::vector<FlowRoute> flow_routes_;
  // Routes one connection into uses_ and returns its latency and bottleneck rate, stamped with
  // the routes and capacities of now.
  FlowRoute route_flow(int src_gpu, int dst_gpu, uint64_t flow_id);
};

// Validates params (std::invalid_argument naming network.protocol_efficiency).
void validate(const NetworkParams& params);
// Capacities of every resource of the cluster, in bit/s.
std::vector<double> resource_capacities(const Cluster& cluster);

}  // namespace ct::network
