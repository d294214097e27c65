// Link faults during a run: faults[].kind link_degrade (a link, or both directions of it, at a
// fraction of its rate), slow_receiver (the links into a NIC, so the NIC drains at a fraction
// of line rate; in packet mode its switch port queues and PFC pauses spread upstream) and
// link_down (flow mode). Each starts at `at` and lasts `duration` (zero: to the end of the
// run). Degraded links: transfers in flight keep their paths and the backend re-shares (flow)
// or re-serializes (packet) at the new rate; factors on the same link multiply.
// A link that goes down: the topology recomputes its ECMP tables at once (new transfers take
// surviving equal-cost paths; routing convergence is taken as faster than the retransmission
// below), and transfers in flight over it lost packets: they stall until their RDMA queue
// pair's retransmission timer fires (retransmit_timeout: NCCL sets the verbs timeout to
// 4.096 us x 2^NCCL_IB_TIMEOUT, default 20 in src/transport/net_ib.cc, = 4.29 s) and then
// continue on a surviving path. With none left the run fails (NCCL aborts the job).
// switch_down fails every link of a switch the same way.
//
// Link names are the topology's: "leaf0->spine3.pod0" is one direction, "leaf0-spine3.pod0"
// both; a NIC is "node17.nic3".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/simulation.h"
#include "sim/units.h"

namespace ct::network {

class Cluster;
class Network;

// A fault as the scenario states it: `link` names a link (link_degrade, link_down), `switch_name`
// a switch (switch_down), or node/nic a NIC whose incoming links slow down (slow_receiver).
struct LinkFaultSpec {
  std::string key;  // "faults[2]", for messages
  std::string link;
  std::string switch_name;
  int node = -1;
  int nic = -1;
  double factor = 1.0;  // remaining share of the rate, in (0, 1]
  bool down = false;    // link_down / switch_down: the directions fail instead
  sim::Duration at = sim::Duration::zero();
  sim::Duration duration = sim::Duration::zero();            // zero: to the end
  sim::Duration retransmit_timeout = sim::Duration::zero();  // link_down / switch_down
};

// A fault resolved against the topology.
struct CapacityFault {
  LinkFaultSpec spec;
  std::vector<int32_t> resources;  // the link directions it acts on
  int32_t switch_vertex = -1;      // switch_down: the failed switch
};

// Resolves names against the cluster's topology; throws std::invalid_argument naming the key.
std::vector<CapacityFault> resolve(const Cluster& cluster, const std::vector<LinkFaultSpec>& specs);

// Fabric link directions named by `link` ("a->b" or "a-b"); throws std::invalid_argument
// naming `key` when no link matches.
std::vector<int32_t> find_links(const Cluster& cluster, const std::string& link, const std::string& key);
// The link directions into NIC `nic` of `node` (every NIC of the node when nic < 0).
std::vector<int32_t> links_into_nic(const Cluster& cluster, int node, int nic, const std::string& key);

// Schedules the faults on `sim`; keep it alive until the run ends.
class CapacityFaults final : private sim::EventHandler {
 public:
  CapacityFaults(sim::Simulation& sim, Network& net, Cluster& cluster, std::vector<CapacityFault> faults);
  CapacityFaults(const CapacityFaults&) = delete;
  CapacityFaults& operator=(const CapacityFaults&) = delete;
  ~CapacityFaults() = default;

 private:
  void on_event(uint64_t tag) override;
  void apply(int32_t resource);

  Network& net_;
  Cluster& cluster_;
  std::vector<CapacityFault> faults_;
  std::vector<char> active_;  // per fault
};

}  // namespace ct::network
