// Internal: the resources a set of legs crosses, with multiplicity.
//
// For a chain of legs l with paths P_l, resource r gets coefficient a_r = #{l : r in P_l}:
// at common rate x the resource carries a_r * x. The chain's uncontended rate is
// min_r C_r / a_r (the slowest leg when no two legs share a resource).
//
// A leg that leaves a NIC with several fabric ports (multi-plane or dual-homed NICs) is spread
// evenly over the ports that have a usable path, one path each with coefficient 1 / ports:
// NCCL's channels and queue pairs use every port of a NIC, so a ring leg gets the NIC's whole
// rate, and a dead port leaves the leg the others.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "models/network/cluster.h"
#include "sim/maxmin.h"
#include "sim/units.h"

namespace ct::network {

class PathUses {
 public:
  using Use = sim::MaxMinSolver::Use;
  explicit PathUses(const Cluster& cluster);
  PathUses(const PathUses&) = default;
  PathUses& operator=(const PathUses&) = delete;
  ~PathUses();

  void clear();
  // Queue pairs per connection (network.qps_per_connection, NCCL_IB_QPS_PER_CONNECTION): a leg
  // whose route depends on its flow (an ECMP choice on the way) is carried by q queue pairs,
  // each hashed onto its own path and carrying 1/q of the leg (NCCL splits a connection's data
  // evenly over its QPs), so the leg adds each of the q paths with coefficient 1/q. QP 0 keeps
  // the connection's flow id: with q = 1 the paths are those of one QP. At least 1.
  void set_queue_pairs(int q);
  [[nodiscard]] int queue_pairs() const { return qps_; }
  // Rail fold (replay::ProgramOptions::fold_rails): a leg between two GPUs at tensor-parallel
  // index 0 stands for the `fold` legs of its group, GPU k of the group to GPU k of the other
  // (src + k -> dst + k, the same flow id); each sibling's path adds its coefficient to the
  // resources flagged in `shared_links` (fabric links the simulated rails share with the
  // others: cluster.h rail_shares) and nothing elsewhere (its own rail's links and ports, which
  // its program, the same as the leg's, loads alike). At equal rates of the group's legs this
  // is the load every rank's run puts on a shared link. fold 1: off.
  void set_rail_fold(int fold, std::shared_ptr<const std::vector<uint8_t>> shared_links);
  // clear(), then these uses (distinct resources) as if their legs had been added.
  void assign(std::span<const Use> uses);
  // Adds the path of one leg (spread over its NIC's ports); returns its latency.
  sim::Duration add(int src_gpu, int dst_gpu, uint64_t flow_id);
  // add() for a leg routed once (a chain's legs, built once per chain: AnalyticalNetwork::
  // build_chain): the same uses, without remembering the path for the next call.
  sim::Duration add_once(int src_gpu, int dst_gpu, uint64_t flow_id);
  // The rate one leg reaches alone: clear(), add(), bottleneck_bps().
  double leg_bps(int src_gpu, int dst_gpu, std::span<const double> capacity_bps);
  [[nodiscard]] std::span<const Use> uses() const { return uses_; }
  [[nodiscard]] sim::Duration max_latency() const { return max_latency_; }
  // min over uses of capacity / coefficient, with capacities from `capacity_bps`;
  // +infinity when there is no use.
  [[nodiscard]] double bottleneck_bps(std::span<const double> capacity_bps) const;

 private:
  const Cluster& cluster_;
  int qps_ = 1;
  int rail_fold_ = 1;
  std::shared_ptr<const std::vector<uint8_t>> rail_shared_;
  const uint8_t* filter_ = nullptr;  // while adding siblings: resources that take a use
  // add() of one connection's queue pairs (the body of add without the siblings).
  sim::Duration add_connection(int src_gpu, int dst_gpu, uint64_t flow_id);
  // add() for one queue pair of a flow-dependent (or not yet seen) pair, its paths at `share`.
  sim::Duration add_routed(int src_gpu, int dst_gpu, uint64_t key, uint64_t flow_id, double share);
  std::vector<int32_t> slot_;  // per resource: index in uses_, or -1
  std::vector<Use> uses_;
  void add_path(double coefficient);
  void ensure_slots();  // slot_ sized to the cluster's resources, all -1
  std::vector<int32_t> path_;
  std::vector<std::vector<int32_t>> port_paths_;  // add()'s scratch for a multi-port NIC
  sim::Duration max_latency_;
  // Paths that no flow id changes (inside a domain, or no ECMP choice on the way: a rail's
  // leaf), by (src, dst), while the topology's routes stay as they were: a step sends the same
  // legs again and again, and routing them was most of an analytical run. Flow-dependent
  // pairs are remembered as such and routed every time.
  struct Fixed {
    bool unique = false;
    uint32_t begin = 0, size = 0;
    sim::Duration latency;
  };
  std::unordered_map<uint64_t, Fixed> fixed_;
  // Adds a remembered unique path at `share`; returns its latency.
  sim::Duration add_fixed(const Fixed& f, double share);
  // Adds the path stored at store[begin, begin + size) at `share`; returns `latency`.
  sim::Duration add_stored(const std::vector<int32_t>& store, uint32_t begin, uint32_t size,
                           sim::Duration latency, double share);
  std::vector<int32_t> fixed_store_;
  // Paths of flow-dependent pairs by (pair, flow id): a connection (a chain's leg, a pipeline's
  // sends: network.h chain_leg_flow, send_flow) takes the same path at every call. At most
  // kMaxFlowPaths are remembered (a traffic study's many one-off flows route each time).
  struct FlowPath {
    uint64_t pair = 0, flow = 0;
    uint32_t begin = 0, size = 0;
    sim::Duration latency;
  };
  static constexpr size_t kMaxFlowPaths = size_t{1} << 18;
  std::unordered_map<uint64_t, FlowPath> flow_paths_;
  std::vector<int32_t> flow_store_;
  uint64_t fixed_epoch_ = 0;
};

// The flow id of queue pair k of a connection whose flow id is `flow_id` (k = 0: itself).
uint64_t queue_pair_flow(uint64_t flow_id, int k);

// ceil(bits / bps * 1e12) picoseconds; Duration::max() when bps is zero.
sim::Duration serialization(double bits, double bps);

}  // namespace ct::network
