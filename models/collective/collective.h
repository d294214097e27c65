// NCCL-like collectives over a network::Network, on the caller's Simulation.
//
// The algorithm is NCCL's choice (nccl_tuning.h: its cost model over ring, tree, NVLS and NVLS
// tree and the LL / LL128 / Simple protocols) unless CollectiveParams::algorithm forces one,
// and the executed bandwidth never exceeds what that model gives the algorithm.
// It runs with the protocol NCCL picks at that size (Plan::protocol): LL / LL128 at NCCL's
// latency and bandwidth of that protocol, Simple as the step-structured chains below.
// Every collective becomes ONE network transfer:
//   ring all_reduce / all_gather / reduce_scatter / broadcast -> one pipelined chain (ring.h)
//   tree all_reduce                                          -> one pipelined chain (tree.h)
//   all_to_all                                               -> one pipelined chain of all pairs
//   send_recv                                                -> one send
// `bytes` follows nccl-tests: the buffer size per rank (all_gather: the gathered output,
// reduce_scatter: the input, all_to_all: the send buffer). Broadcast's root is group[0];
// send_recv sends group[0] -> group[1].
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "models/collective/layout.h"
#include "models/collective/nccl_tuning.h"
#include "models/collective/plan_cache.h"
#include "models/network/cluster.h"
#include "models/network/network.h"
#include "models/network/path_uses.h"
#include "sim/simulation.h"
#include "sim/slot_pool.h"
#include "sim/units.h"

namespace ct::collective {

enum class Op { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };
// nvls: NVLink SHARP inside one NVLink domain (Hopper and later); nvls_tree: NVLS inside each
// domain and a double binary tree across them. automatic = NCCL's choice (nccl_tuning.h).
enum class Algorithm { automatic, ring, tree, nvls, nvls_tree };

// "all_reduce", ...; parse_op throws std::invalid_argument listing the names.
std::string_view op_name(Op op);
Op parse_op(std::string_view name);
std::string_view algorithm_name(Algorithm a);

// nccl-tests bus bandwidth factor: busbw = algbw x factor(n).
double bus_factor(Op op, int ranks);

struct CollectiveParams {
  int channels = 0;  // 0 = nics_per_node (NCCL uses one ring per NIC)
  // The CTAs NCCL runs a ring with (NCCL_MIN_CTAS = NCCL_MAX_CTAS, or NCCL_MIN_NCHANNELS /
  // NCCL_MAX_NCHANNELS at runtime); 0 = NCCL's own count from its search channels
  // (nccl_tuning.h ring_runtime_ctas). Bounds a ring all-reduce across Hopper nodes.
  int ctas = 0;
  sim::Duration step_latency = sim::Duration::us(3);  // per algorithm step: launch/sync/proxy
  Algorithm algorithm = Algorithm::automatic;
  sim::Bytes tree_chunk{128 << 10};  // tree pipeline chunk: fill = steps x chunk time
  // false = NCCL_PROTO=Simple: every collective runs the Simple protocol's step-structured chain.
  bool low_latency_protocols = true;
  // Plans shared with other runs over the same cluster and network parameters (plan_cache.h;
  // not owned). nullptr: the engine builds every plan itself.
  PlanCache* shared_plans = nullptr;
};

class CompletionHandler {
 public:
  virtual void on_complete(uint64_t tag) = 0;

 protected:
  ~CompletionHandler() = default;
};

// What one collective becomes on the network.
struct Plan {
  Algorithm algorithm = Algorithm::ring;
  bool point_to_point = false;  // send_recv: legs[0] as a plain send
  std::vector<network::Leg> legs;
  sim::Bytes bytes_per_leg;
  sim::Duration fixed_latency;  // pipelined chains only
  // Ceiling of the chain's per-leg wire rate, bit/s: the algorithm's bandwidth in NCCL's cost
  // model (Simple protocol), which its kernels do not exceed however fast the links are.
  double leg_rate_cap_bps = std::numeric_limits<double>::infinity();
  // NCCL's protocol at this size (nccl_tuning.h). LL and LL128 replace the chain's step
  // latencies by NCCL's latency of that protocol and cap its rate at the protocol's bandwidth.
  Protocol protocol = Protocol::simple;
  // Names the legs to the network (Network::send_chain): unique per cached plan, 0 otherwise.
  uint64_t chain_id = 0;
};

// A hash of a collective's group (its ranks in order), never 0: what start() keys its plans by.
uint64_t group_hash(std::span<const int> group);

class CollectiveEngine final : private network::DeliveryHandler, private sim::EventHandler {
 public:
  CollectiveEngine(sim::Simulation& sim, network::Network& net, const network::Cluster& cluster,
                   CollectiveParams params = {});

  // Starts one collective; h.on_complete(tag) when every rank is done. Throws
  // std::invalid_argument naming the rank for an empty group, a duplicate or out-of-range
  // rank, and for a send_recv group that is not two ranks. A one-rank group (or zero bytes)
  // completes after a zero delay. group_hash: group_hash(group) when the caller keeps it (a
  // step program's groups), 0 = computed here; it only finds the group's plan faster.
  void start(Op op, std::span<const int> group, sim::Bytes bytes, CompletionHandler& h, uint64_t tag,
             uint64_t group_hash = 0);

  // The algorithm start() would use (automatic resolved as NCCL resolves it; a forced algorithm
  // that cannot run on this group, e.g. a tree inside one node, falls back to ring).
  [[nodiscard]] Algorithm choose(Op op, std::span<const int> group, sim::Bytes bytes);
  // Uncontended alpha-beta estimate: fixed latency + wire bytes per leg / the chain's
  // bottleneck (min over resources of capacity / legs crossing it).
  [[nodiscard]] sim::Duration estimate(Op op, std::span<const int> group, sim::Bytes bytes,
                                       Algorithm algorithm);
  // The plan start() would hand to the network.
  [[nodiscard]] Plan plan(Op op, std::span<const int> group, sim::Bytes bytes, Algorithm algorithm);

  [[nodiscard]] int channels() const { return channels_; }
  [[nodiscard]] const CollectiveParams& params() const { return params_; }

 private:
  struct Pending {
    CompletionHandler* handler;
    uint64_t tag;
  };
  void on_delivered(uint64_t slot) override;
  void on_event(uint64_t slot) override;
  uint32_t new_slot(CompletionHandler& h, uint64_t tag);
  void build(Op op, std::span<const int> group, sim::Bytes bytes, Algorithm algorithm, Plan& out);
  // NCCL's view of a group (nccl_tuning.h inputs).
  TuningInput tuning_input(Op op, const Layout& layout) const;
  // Sets out.leg_rate_cap_bps from NCCL's bandwidth of out.algorithm with the protocol NCCL runs
  // it with at this size; LL / LL128 also set the fixed latency to that protocol's, at least
  // `wire_latency` (the chain's hop latencies over its steps, without the per-step overhead).
  void cap(const TuningInput& in, double bytes, Plan& out, sim::Duration wire_latency) const;
  sim::Duration estimate_plan(const Plan& plan);
  // A pipeline's fill: `steps` chunks of `chunk` bytes (at most a leg's bytes) at the chain's
  // uncontended per-leg rate, at most rate_cap_bps.
  sim::Duration pipeline_fill(const Plan& plan, double chunk, int steps, double rate_cap_bps);

  sim::Simulation& sim_;
  network::Network& net_;
  const network::Cluster& cluster_;
  CollectiveParams params_;
  int channels_;
  network::PathUses uses_;
  std::shared_ptr<const std::vector<double>> capacity_;  // the network's at the start
  sim::SlotPool<Pending> pending_;
  Plan scratch_;
  std::vector<uint8_t> seen_;
  uint64_t serial_ = 0;
  // start()'s plans by (op, bytes, group), valid while the topology's routes stay as they were
  // (a plan depends on routes through path latencies, not on capacities): a step repeats the
  // same collectives of the same groups, and building a ring of 1,000 ranks routes each leg.
  struct CachedPlan {
    Op op;
    int64_t bytes;
    std::vector<int> group;
    std::shared_ptr<const Plan> plan;
  };
  uint64_t params_fingerprint_ = 0;  // what PlanCache keys this engine's plans by
  // Ring legs by group (sorted ranks), for this engine's channels: the plans of one group's
  // different byte counts (a stage's gradient buckets) share them; from shared_plans if given.
  struct CachedRing {
    std::vector<int> ranks;
    std::shared_ptr<const PlanCache::Ring> ring;
  };
  const PlanCache::Ring& ring(const Layout& layout);
  std::unordered_map<uint64_t, std::vector<CachedRing>> rings_;
  uint64_t rings_epoch_ = 0;
  const Plan& cached_plan(Op op, std::span<const int> group, sim::Bytes bytes, uint64_t group_hash);
  std::unordered_map<uint64_t, std::vector<CachedPlan>> plans_;
  size_t cached_plans_ = 0;
  uint64_t plans_epoch_ = 0;
};

}  // namespace ct::collective
