// Flow-level network: every transfer is one variable of an incremental max-min fair solver.
//
// Resources: every fabric link direction (topology capacity), every GPU's NVLink tx/rx and
// PCIe tx/rx port (Cluster numbering). A send is a variable over its path (coefficient 1); a
// pipelined chain is ONE variable over the union of its legs' resources, coefficient = number
// of legs crossing the resource, so all legs advance at the common rate x (sim/maxmin.h).
//
// Fluid dynamics. A transfer keeps its remaining wire bits R and the time t0 of its last rate
// change; between changes R(t) = R(t0) - x (t - t0). Its completion timer stands at
// t + ceil(R / x) (ps); when it fires the variable leaves and the timer is reused for the
// delivery at + latency (path latency for a send, fixed_latency for a chain).
// Any arrival, departure or capacity change marks the solver dirty and schedules ONE solve at
// the current time with a low priority, so all changes of an instant are solved together.
// With NetworkParams::solve_quantum q > 0 a change at least q after the last solve is solved
// at once, one within q of it (but not at its very instant) waits for last + q, so changes
// within one quantum share a solve and a rate takes effect up to q late (an error of at most
// q x rate bytes per change; q = 0 is exact). An isolated transfer (nothing solved in the last
// q) starts on time. With the default 10 us the 10,240-GPU default step is within 0.5% of the
// exact solver (tools/quantum_error.py).
// The solver re-solves only what a change can move (the changed variables and what the
// resources the last allocation saturated pass on, sim/maxmin.h) and reports the variables
// whose rate changed; only those are re-dated (R and t0 updated, timer moved) and only their
// resources' statistics are touched.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <span>
#include <unordered_map>
#include <vector>

#include "models/network/cluster.h"
#include "models/network/link_accounting.h"
#include "models/network/network.h"
#include "models/network/path_uses.h"
#include "sim/maxmin.h"
#include "sim/simulation.h"

namespace ct::network {

class FlowNetwork final : public Network, private sim::EventHandler {
 public:
  FlowNetwork(sim::Simulation& sim, const Cluster& cluster, NetworkParams params = {});

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
  void reroute_after_failure(sim::Duration retransmit_timeout) override;
  [[nodiscard]] LinkStats link_stats(int32_t resource) const override;
  [[nodiscard]] std::vector<LinkStats> top_links(size_t k) const override;
  [[nodiscard]] std::optional<TransferCounters> transfer_counters() const override { return counters_; }
  [[nodiscard]] double max_link_utilization() const override;
  [[nodiscard]] const NetworkParams& params() const override { return params_; }
  [[nodiscard]] const Cluster& cluster() const override { return cluster_; }

  // Transfers still moving bytes (not counting those waiting out their latency).
  [[nodiscard]] size_t active_flows() const { return solver_.active_variables(); }
  [[nodiscard]] uint64_t solves() const { return solves_; }
  // Runs a pending solve now (benchmarks and tests; normally the scheduled event does it).
  void solve_now();

 private:
  using Use = sim::MaxMinSolver::Use;
  struct Transfer {
    Transfer(sim::EventHandler* owner, uint64_t slot) : timer(owner, slot) {}
    sim::Timer timer;
    DeliveryHandler* handler = nullptr;
    uint64_t tag = 0;
    int32_t variable = -1;  // -1 once the bytes are through
    double remaining_bits = 0.0;
    double rate = 0.0;  // bit/s of wire
    int64_t last_ps = 0;
    sim::Duration latency;
    std::vector<Use> uses;
    std::vector<Leg> legs;  // to route again after a link failure
    bool chain = false;     // legs of a chain (flows chain_leg_flow(i)), else one send (flow_id)
    uint64_t flow_id = 0;
    double rate_cap_bps = std::numeric_limits<double>::infinity();
    bool stalled = false;          // lost packets on a dead link: waiting for the retransmission
    double bits = 0.0;             // at start (wire bits, protocol overhead included)
    double attributed_bits = 0.0;  // moved bits already added to its links' statistics
  };
  static constexpr uint64_t kSolveTag = ~uint64_t{0};
  static constexpr uint8_t kSolvePriority = 250;  // after default-priority events of the instant

  void on_event(uint64_t tag) override;
  void start(double bits, sim::Duration latency, DeliveryHandler& handler, uint64_t tag,
             std::span<const Leg> legs, std::span<const Use> uses, bool chain, uint64_t flow_id,
             double rate_cap_bps = std::numeric_limits<double>::infinity());
  // Routes every leg of a chain (flows chain_leg_flow(i)) into uses_.
  void route_chain(std::span<const Leg> legs);
  void add_variable(Transfer& t, uint32_t slot);
  sim::Duration route(int src_gpu, int dst_gpu, uint64_t tag);
  void resume(Transfer& t, uint32_t slot);
  void request_solve();
  void bytes_done(Transfer& t);
  void set_rate(Transfer& t, double rate);
  // Adds the bits t moved since its last attribution to every link it uses (LinkAccounting).
  void attribute(Transfer& t);
  // Bits t moved by now that its links' statistics do not hold yet.
  [[nodiscard]] double unattributed_bits(const Transfer& t) const;
  [[nodiscard]] std::vector<double> in_flight_bits() const;  // per resource

  sim::Simulation& sim_;
  const Cluster& cluster_;
  NetworkParams params_;
  LinkAccounting stats_;
  PathUses uses_;
  sim::MaxMinSolver solver_;
  std::deque<Transfer> transfers_;  // stable addresses: the timers live here
  std::vector<uint32_t> free_;
  std::vector<int32_t> transfer_of_variable_;
  std::vector<int32_t> changed_;
  TransferCounters counters_;
  mutable std::vector<int32_t> path_;
  mutable PathUses bandwidth_uses_;  // path_bandwidth's scratch
  // What a named chain's legs cross (send_chain), by its id, while the routes stay as they were
  // (routing epoch): a step starts the same collectives again and again, and routing each of
  // a ring's legs at every start was a tenth of the default 10,240-GPU step. The uses are what
  // routing the legs gives, in the same order, so the solver gets the same variable. Bounded
  // like the analytical network's chains.
  std::unordered_map<uint64_t, std::vector<Use>> chain_uses_;
  // A point-to-point connection's route (send_flow: pipeline sends, traffic flows), direct-mapped
  // by the connection's hash while the routes stay as they were: the same uses and latency
  // routing it again gives. A slot holding another connection or older routes is routed again.
  // Allocated at the first send, 4 slots per GPU (a rank's pipeline sends go to its two stage
  // neighbours), between kSendRouteSlots and 2^18. At 16,384 GPUs in flow mode the route memo's
  // hash-map lookups were 5% of the step.
  struct SendRoute {
    int src = -1, dst = -1;
    uint64_t flow = 0, epoch = 0;
    sim::Duration latency;
    std::vector<Use> uses;
  };
  static constexpr size_t kSendRouteSlots = size_t{1} << 12;
  std::vector<SendRoute> send_routes_;
  uint64_t chain_uses_epoch_ = ~uint64_t{0};
  bool solve_pending_ = false;
  int64_t last_solve_ps_ = -1;  // time of the last solve (-1: none yet)
  uint64_t solves_ = 0;
};

}  // namespace ct::network
