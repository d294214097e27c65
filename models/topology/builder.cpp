// Assembles a Topology from the vertices and cables a generator adds: the CSR adjacency (per
// vertex, directions towards switches first), per-direction latency (link latency plus the
// latency of the switch entered), the Boost graph, the name index, inferred switch tiers and
// the routing tables.
//
// Tier inference (explicit fabrics): a switch with a NIC attached is tier 1; any other switch
// is 1 + its hop distance to the nearest tier-1 switch (Boost multi-source BFS), capped at 3;
// a switch no NIC can reach is counted as tier 3.
#include "models/topology/builder.h"

#include <algorithm>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/pending/queue.hpp>
#include <stdexcept>
#include <utility>

#include "models/topology/graph.h"

namespace ct::topology {

TopologyBuilder::TopologyBuilder(int nodes, int nics_per_node, int planes) {
  t_.nodes_ = nodes;
  t_.nics_per_node_ = nics_per_node;
  t_.nic_count_ = nodes * nics_per_node;
  t_.planes_ = planes;
  t_.vertices_.reserve(static_cast<size_t>(t_.nic_count_));
  for (int n = 0; n < nodes; ++n) {
    for (int r = 0; r < nics_per_node; ++r) {
      Vertex v;
      v.name = "node" + std::to_string(n) + ".nic" + std::to_string(r);
      v.kind = VertexKind::nic;
      v.index = n * nics_per_node + r;
      t_.vertices_.push_back(std::move(v));
    }
  }
  switch_latency_.assign(static_cast<size_t>(t_.nic_count_), sim::Duration::zero());
}

VertexId TopologyBuilder::add_switch(std::string name, int tier, int plane, int pod, int index,
                                     sim::Duration switch_latency) {
  Vertex v;
  v.name = std::move(name);
  v.kind = VertexKind::switch_;
  v.tier = tier;
  v.plane = plane;
  v.pod = pod;
  v.index = index;
  t_.vertices_.push_back(std::move(v));
  switch_latency_.push_back(switch_latency);
  return static_cast<VertexId>(t_.vertices_.size() - 1);
}

void TopologyBuilder::reserve_links(size_t cables) {
  t_.src_.reserve(2 * cables);
  t_.dst_.reserve(2 * cables);
  t_.nominal_bps_.reserve(2 * cables);
  link_latency_.reserve(cables);
}

LinkDir TopologyBuilder::add_link(VertexId a, VertexId b, sim::Bandwidth rate, sim::Duration latency) {
  const auto d = static_cast<LinkDir>(t_.src_.size());
  t_.src_.push_back(a);
  t_.dst_.push_back(b);
  t_.src_.push_back(b);
  t_.dst_.push_back(a);
  t_.nominal_bps_.push_back(rate.bps());
  t_.nominal_bps_.push_back(rate.bps());
  link_latency_.push_back(latency);
  return d;
}

namespace {

struct TierRecorder : boost::default_bfs_visitor {
  std::vector<int>* hops;
  template <class Edge, class G>
  void tree_edge(Edge e, const G& g) const {
    (*hops)[boost::target(e, g)] = (*hops)[boost::source(e, g)] + 1;
  }
};

}  // namespace

Topology TopologyBuilder::finish() {
  Topology& t = t_;
  const int n = t.vertex_count();
  const int dirs = t.link_dir_count();

  // CSR, towards-switch directions first.
  t.out_begin_.assign(static_cast<size_t>(n) + 1, 0);
  t.switch_end_.assign(static_cast<size_t>(n), 0);
  std::vector<int32_t> to_switch(static_cast<size_t>(n), 0);
  for (LinkDir d = 0; d < dirs; ++d) {
    ++t.out_begin_[static_cast<size_t>(t.src_[d]) + 1];
    if (t.is_switch(t.dst_[d])) ++to_switch[t.src_[d]];
  }
  for (int v = 0; v < n; ++v) t.out_begin_[v + 1] += t.out_begin_[v];
  std::vector<int32_t> fill_sw(static_cast<size_t>(n));
  std::vector<int32_t> fill_nic(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) {
    fill_sw[v] = t.out_begin_[v];
    t.switch_end_[v] = t.out_begin_[v] + to_switch[v];
    fill_nic[v] = t.switch_end_[v];
  }
  t.out_links_.assign(static_cast<size_t>(dirs), 0);
  for (LinkDir d = 0; d < dirs; ++d) {
    const VertexId s = t.src_[d];
    t.out_links_[t.is_switch(t.dst_[d]) ? fill_sw[s]++ : fill_nic[s]++] = d;
  }
  t.out_targets_.resize(static_cast<size_t>(dirs));
  for (int32_t i = 0; i < dirs; ++i) t.out_targets_[i] = t.dst_[t.out_links_[i]];

  t.latency_.resize(static_cast<size_t>(dirs));
  for (LinkDir d = 0; d < dirs; ++d) {
    t.latency_[d] = link_latency_[d / 2] + switch_latency_[t.dst_[d]];
  }
  t.factor_.assign(static_cast<size_t>(dirs), 1.0);
  t.link_up_.assign(static_cast<size_t>(dirs), 1);
  t.usable_.assign(static_cast<size_t>(dirs), 1);
  t.vertex_down_.assign(static_cast<size_t>(n), 0);

  t.graph_ = std::make_unique<BoostGraph>();
  Graph& g = t.graph_->g;
  g = Graph(static_cast<size_t>(n));
  for (LinkDir d = 0; d < dirs; d += 2) {
    boost::add_edge(static_cast<size_t>(t.src_[d]), static_cast<size_t>(t.dst_[d]), CableProperty{d / 2}, g);
  }

  // Destination slots: switches with a NIC attached.
  const int switches = t.switch_count();
  t.slot_of_switch_.assign(static_cast<size_t>(switches), -1);
  std::vector<size_t> leaves;
  int slots = 0;
  t.dmodk_dest_.assign(static_cast<size_t>(dirs), -1);
  int32_t attached = 0;  // NICs numbered leaf by leaf (d-mod-k's destination index)
  for (VertexId v = t.nic_count_; v < n; ++v) {
    if (t.switch_end_[v] != t.out_begin_[v + 1]) {
      t.slot_of_switch_[v - t.nic_count_] = slots++;
      leaves.push_back(static_cast<size_t>(v));
      for (int32_t i = t.switch_end_[v]; i < t.out_begin_[v + 1]; ++i)
        t.dmodk_dest_[t.out_links_[i]] = attached++;
    }
  }

  // Tiers of switches the generator left at 0.
  const bool infer = std::any_of(t.vertices_.begin() + t.nic_count_, t.vertices_.end(),
                                 [](const Vertex& v) { return v.tier == 0; });
  if (infer) {
    std::vector<int> hops(static_cast<size_t>(n), -1);
    for (size_t v : leaves) hops[v] = 0;
    std::vector<boost::default_color_type> color(static_cast<size_t>(n), boost::white_color);
    boost::queue<size_t> queue;
    TierRecorder recorder;
    recorder.hops = &hops;
    boost::breadth_first_visit(
        g, leaves.begin(), leaves.end(), queue, recorder,
        boost::make_iterator_property_map(color.begin(), boost::get(boost::vertex_index, g)));
    for (VertexId v = t.nic_count_; v < n; ++v) {
      Vertex& vx = t.vertices_[v];
      if (vx.tier == 0) vx.tier = hops[v] < 0 ? 3 : std::min(3, 1 + hops[v]);
    }
  }
  t.tier_counts_ = {};
  for (VertexId v = t.nic_count_; v < n; ++v) ++t.tier_counts_[t.vertices_[v].tier];

  t.name_index_.reserve(static_cast<size_t>(n));
  for (VertexId v = 0; v < n; ++v) {
    if (!t.name_index_.emplace(t.vertices_[v].name, v).second) {
      throw std::invalid_argument("topology: duplicate vertex name '" + t.vertices_[v].name + "'");
    }
  }

  t.compute_routes();
  return std::move(t_);
}

}  // namespace ct::topology
