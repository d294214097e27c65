// Topology value semantics and lookups by name or id.
#include "models/topology/topology.h"

#include <string>

#include "models/topology/graph.h"

namespace ct::topology {

Topology::Topology() = default;
Topology::~Topology() = default;
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;

Topology::Topology(const Topology& other)
    : nodes_(other.nodes_),
      nics_per_node_(other.nics_per_node_),
      nic_count_(other.nic_count_),
      planes_(other.planes_),
      tier_counts_(other.tier_counts_),
      vertices_(other.vertices_),
      vertex_down_(other.vertex_down_),
      name_index_(other.name_index_),
      src_(other.src_),
      dst_(other.dst_),
      nominal_bps_(other.nominal_bps_),
      factor_(other.factor_),
      latency_(other.latency_),
      link_up_(other.link_up_),
      usable_(other.usable_),
      out_begin_(other.out_begin_),
      switch_end_(other.switch_end_),
      out_links_(other.out_links_),
      out_targets_(other.out_targets_),
      slot_of_switch_(other.slot_of_switch_),
      dist_(other.dist_),
      graph_(other.graph_ ? std::make_unique<BoostGraph>(*other.graph_) : nullptr) {}

Topology& Topology::operator=(const Topology& other) {
  if (this != &other) *this = Topology(other);
  return *this;
}

int Topology::switch_count(int tier) const {
  if (tier < 1 || tier > 3) return 0;
  return tier_counts_[static_cast<size_t>(tier)];
}

std::optional<VertexId> Topology::find_vertex(std::string_view name) const {
  const auto it = name_index_.find(std::string(name));
  if (it == name_index_.end()) return std::nullopt;
  return it->second;
}

VertexId Topology::vertex_id(std::string_view name) const {
  if (auto v = find_vertex(name)) return *v;
  throw std::invalid_argument("topology: no vertex named '" + std::string(name) + "'");
}

VertexId Topology::leaf_of(int nic) const {
  check_nic(nic, "leaf_of");
  const auto links = out_links(nic);
  return links.empty() ? -1 : dst_[links.front()];
}

std::vector<VertexId> Topology::leaves_of(int nic) const {
  check_nic(nic, "leaves_of");
  std::vector<VertexId> out;
  for (LinkDir d : out_links(nic)) out.push_back(dst_[d]);
  return out;
}

std::string Topology::name(LinkDir d) const {
  check_link(d, "name");
  return vertices_[src_[d]].name + "->" + vertices_[dst_[d]].name;
}

std::optional<LinkDir> Topology::find_link(std::string_view name_a, std::string_view name_b) const {
  if (name_b.empty()) {
    const auto arrow = name_a.find("->");
    if (arrow == std::string_view::npos) return std::nullopt;
    name_b = name_a.substr(arrow + 2);
    name_a = name_a.substr(0, arrow);
  }
  const auto a = find_vertex(name_a);
  const auto b = find_vertex(name_b);
  if (!a || !b) return std::nullopt;
  for (LinkDir d : out_links(*a)) {
    if (dst_[d] == *b) return d;
  }
  return std::nullopt;
}

void Topology::check_link(LinkDir d, const char* what) const {
  if (d < 0 || d >= link_dir_count()) {
    throw std::out_of_range(std::string("topology::") + what + ": link direction " + std::to_string(d) +
                            " out of range [0, " + std::to_string(link_dir_count()) + ")");
  }
}

void Topology::check_nic(int nic, const char* what) const {
  if (nic < 0 || nic >= nic_count_) {
    throw std::out_of_range(std::string("topology::") + what + ": NIC " + std::to_string(nic) +
                            " out of range [0, " + std::to_string(nic_count_) + ")");
  }
}

}  // namespace ct::topology
