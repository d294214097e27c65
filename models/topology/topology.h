// The fabric as a graph of named ports, and ECMP routing over it.
//
// Vertices are NICs (fabric endpoints) and switches. NIC vertices come first: the vertex id
// of NIC `nic_id = node * nics_per_node + rail` is `nic_id` itself; switches follow. GPUs and
// NVLink are not in this graph (the network layer handles intra-node traffic).
//
// Every cable is full duplex: cable e has two directions, LinkDir 2e (a->b, as added) and
// 2e+1 (b->a), so reverse(d) == d ^ 1. Each direction is a separate resource with its own
// capacity, latency and state (up / down / degraded by a factor in (0, 1]).
//
// Routing (see routing.cpp for the rules): shortest paths over usable links, one equal-cost
// next hop chosen at each switch by a fixed hash of (src NIC, dst NIC, flow id, switch id).
//
// The Boost.Graph adjacency_list is kept behind an opaque pointer so that this header stays
// cheap to include; hot lookups read the dense arrays below.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "models/topology/fabric_config.h"
#include "sim/units.h"

namespace ct::topology {

using VertexId = int32_t;
using LinkDir = int32_t;
// Link directions from the source NIC to the destination NIC, in order.
using Path = std::vector<LinkDir>;

enum class VertexKind : uint8_t { nic, switch_ };
enum class LinkState : uint8_t { up, down, degraded };
// How a switch picks among equal-cost next hops (cluster.fabric.routing).
//  ecmp:  a fixed hash of (src NIC, dst NIC, flow id, switch): Ethernet/RoCE ECMP; different
//         flows of a pair spread, and unrelated flows collide as on real switches.
//  dmodk: destination-mod-k, the static routing InfiniBand subnet managers program into
//         fat trees (OpenSM's ftree engine; Zahavi, "D-Mod-K Routing Providing Non-Blocking
//         Traffic for Shift Permutations on Real Life Fat Trees", CCIT TR 776, 2010): a switch
//         going up picks its uplink from the destination's index alone, so every flow to a NIC
//         takes one path and the NICs of a leaf are reached through distinct uplinks. Shift
//         permutations (a ring's neighbour exchange) then share no link on a full fat tree.
enum class Routing : uint8_t { ecmp, dmodk };

struct Vertex {
  std::string name;  // "node12.nic3", "leaf5", "spine2.pod1", "core7" (+ ".plane1")
  VertexKind kind = VertexKind::nic;
  int tier = 0;  // 0 for NICs; 1 leaf, 2 spine, 3 core
  int plane = 0;
  int pod = -1;   // 3-tier Clos only
  int index = 0;  // NIC: nic_id; switch: index within its tier (and plane)
};

// Thrown by route() when no usable path joins two NICs.
class NoRouteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class TopologyBuilder;
struct BoostGraph;

class Topology {
 public:
  Topology(const Topology& other);
  Topology(Topology&&) noexcept;
  Topology& operator=(const Topology& other);
  Topology& operator=(Topology&&) noexcept;
  ~Topology();

  // Sizes.
  [[nodiscard]] int vertex_count() const { return static_cast<int>(vertices_.size()); }
  [[nodiscard]] int link_count() const { return static_cast<int>(src_.size() / 2); }
  [[nodiscard]] int link_dir_count() const { return static_cast<int>(src_.size()); }
  [[nodiscard]] int nic_count() const { return nic_count_; }
  [[nodiscard]] int nodes() const { return nodes_; }
  [[nodiscard]] int nics_per_node() const { return nics_per_node_; }
  [[nodiscard]] int planes() const { return planes_; }
  [[nodiscard]] int switch_count() const { return vertex_count() - nic_count_; }
  // Switches of tier 1 (leaf), 2 (spine) or 3 (core), all planes together.
  [[nodiscard]] int switch_count(int tier) const;

  // Vertices.
  [[nodiscard]] const Vertex& vertex(VertexId v) const { return vertices_[v]; }
  [[nodiscard]] bool is_switch(VertexId v) const { return v >= nic_count_; }
  [[nodiscard]] std::optional<VertexId> find_vertex(std::string_view name) const;
  // Throws std::invalid_argument naming the vertex when it does not exist.
  [[nodiscard]] VertexId vertex_id(std::string_view name) const;
  // The leaf the NIC's first port (plane 0) attaches to; -1 when the NIC has no link.
  [[nodiscard]] VertexId leaf_of(int nic) const;
  // Every leaf the NIC attaches to (one per plane in a multi-plane fabric).
  [[nodiscard]] std::vector<VertexId> leaves_of(int nic) const;
  // Outgoing link directions of a vertex.
  [[nodiscard]] std::span<const LinkDir> out_links(VertexId v) const {
    return {out_links_.data() + out_begin_[v], out_links_.data() + out_begin_[v + 1]};
  }

  // Link directions.
  [[nodiscard]] static LinkDir reverse(LinkDir d) { return d ^ 1; }
  [[nodiscard]] VertexId source(LinkDir d) const { return src_[d]; }
  [[nodiscard]] VertexId target(LinkDir d) const { return dst_[d]; }
  // Effective capacity: nominal x degradation factor, zero when down (or an end switch failed).
  [[nodiscard]] sim::Bandwidth capacity(LinkDir d) const {
    return sim::Bandwidth::bits_per_s(usable_[d] ? nominal_bps_[d] * factor_[d] : 0.0);
  }
  [[nodiscard]] sim::Bandwidth nominal_capacity(LinkDir d) const {
    return sim::Bandwidth::bits_per_s(nominal_bps_[d]);
  }
  // Link propagation latency plus the latency of the switch the direction enters.
  [[nodiscard]] sim::Duration latency(LinkDir d) const { return latency_[d]; }
  [[nodiscard]] LinkState state(LinkDir d) const;
  [[nodiscard]] double degradation(LinkDir d) const { return factor_[d]; }
  // False when the direction is down or touches a failed switch.
  [[nodiscard]] bool usable(LinkDir d) const { return usable_[d] != 0; }
  // "a->b".
  [[nodiscard]] std::string name(LinkDir d) const;
  // The first direction a->b between the named vertices, if they are linked. Also accepts
  // a link name "a->b" as `name_a` with an empty `name_b`.
  [[nodiscard]] std::optional<LinkDir> find_link(std::string_view name_a, std::string_view name_b = {}) const;

  // Routing. Empty path for src == dst; throws NoRouteError naming both NICs when no usable
  // path exists, std::out_of_range for a bad NIC id. Thread-safe (const, no caches).
  [[nodiscard]] Path route(int src_nic, int dst_nic, uint64_t flow_id) const;
  // Same, into a caller-owned buffer (no allocation once it has grown). port >= 0 restricts the
  // first hop to the source NIC's port-th link (a NIC with several ports: multi-plane or
  // dual-homed); NoRouteError when that port is down or leads to no usable path. `unique`, when
  // given, is set to whether the path is the same for every flow_id (no hop had a hashed choice).
  void route_into(int src_nic, int dst_nic, uint64_t flow_id, Path& out, int port = -1,
                  bool* unique = nullptr) const;
  // Bumped whenever the routing tables are recomputed (a link or switch failed or came back):
  // whatever was derived from routes before is stale when it changed.
  [[nodiscard]] uint64_t routing_epoch() const { return routing_epoch_; }
  // The next-hop policy (ecmp unless set); setting it bumps routing_epoch().
  void set_routing(Routing r);
  [[nodiscard]] Routing routing() const { return routing_; }
  // Shortest usable hop count between two NICs; -1 when unreachable.
  [[nodiscard]] int hop_count(int src_nic, int dst_nic) const;
  // Every switch on some shortest usable path between the NICs (what ECMP may use), sorted;
  // empty for src == dst or when unreachable. links: when given, also receives every
  // switch-to-switch direction on those paths, sorted.
  [[nodiscard]] std::vector<VertexId> switches_on_paths(int src_nic, int dst_nic,
                                                        std::vector<LinkDir>* links = nullptr) const;

  // Failures. Each call recomputes the routing tables (a few ms for 10K NICs).
  // `both_directions` applies the change to the whole cable (d and reverse(d)).
  void set_link_state(LinkDir d, LinkState s, bool both_directions = true);
  // Many links at once, with a single recomputation.
  void set_link_states(std::span<const LinkDir> dirs, LinkState s, bool both_directions = true);
  // factor in (0, 1]; the direction keeps its routes at factor x nominal capacity.
  void degrade_link(LinkDir d, double factor, bool both_directions = true);
  // All links of the switch become unusable until restore_switch().
  void fail_switch(VertexId sw);
  void restore_switch(VertexId sw);
  [[nodiscard]] bool switch_failed(VertexId sw) const { return vertex_down_[sw] != 0; }

 private:
  friend class TopologyBuilder;
  Topology();
  void refresh_usable(LinkDir d);
  void apply_link_state(LinkDir d, LinkState s, bool both_directions);
  void compute_routes();
  [[nodiscard]] int dist(int slot, VertexId v) const {
    return dist_[static_cast<size_t>(slot) * static_cast<size_t>(switch_count()) +
                 static_cast<size_t>(v - nic_count_)];
  }
  void check_link(LinkDir d, const char* what) const;
  void check_nic(int nic, const char* what) const;

  int nodes_ = 0;
  int nics_per_node_ = 0;
  int nic_count_ = 0;
  int planes_ = 1;
  std::array<int, 4> tier_counts_{};
  std::vector<Vertex> vertices_;
  std::vector<uint8_t> vertex_down_;
  std::unordered_map<std::string, VertexId> name_index_;

  // Per link direction.
  std::vector<VertexId> src_;
  std::vector<VertexId> dst_;
  std::vector<double> nominal_bps_;
  std::vector<double> factor_;
  std::vector<sim::Duration> latency_;
  std::vector<uint8_t> link_up_;
  std::vector<uint8_t> usable_;

  // CSR of outgoing directions; per vertex, directions to switches come first and end at
  // switch_end_[v].
  std::vector<int32_t> out_begin_;
  std::vector<int32_t> switch_end_;
  std::vector<LinkDir> out_links_;
  std::vector<VertexId> out_targets_;  // target of out_links_[i]

  // Routing tables: every switch with NICs attached is a destination slot; dist_ holds hop
  // counts over usable switch-to-switch directions, slot-major, kUnreachable when none.
  std::vector<int32_t> slot_of_switch_;  // by switch index (v - nic_count_), -1 if none
  std::vector<uint16_t> dist_;
  uint64_t routing_epoch_ = 0;
  Routing routing_ = Routing::ecmp;
  // d-mod-k: per leaf->NIC direction, the NIC's index when the NICs are numbered leaf by leaf
  // (slot order, then port order), -1 for other directions.
  std::vector<int32_t> dmodk_dest_;

  std::unique_ptr<BoostGraph> graph_;
};

// Generates the fabric described by `config`. Throws std::invalid_argument naming the
// scenario key path, the value and what was expected when the configuration is unsound.
Topology build_fabric(const FabricConfig& config);

// The checks of build_fabric without building (cheap at any size): throws the same
// std::invalid_argument naming the key path. An explicit graph is checked by building it.
void check_fabric(const FabricConfig& config);

// Switches of the fabric (all planes): leaves + spines + cores of a Clos, computed from its
// shape without building it; an explicit graph is built and its switches counted.
int switch_count(const FabricConfig& config);

}  // namespace ct::topology
