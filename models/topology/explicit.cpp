// Generator of `explicit` fabrics: the scenario lists cables by vertex name.
//
// Rules: "node<N>.nic<R>" (decimal, N < nodes, R < nics_per_node) names NIC N * R_total + R;
// any other name not starting with "node" is a switch, created at first mention, its tier
// inferred from the graph (builder.cpp). Rejected: NIC-to-NIC cables, self loops, malformed or
// out-of-range NIC names, an empty list. Unset per-link rate/latency take the fabric's.
#include <charconv>
#include <string>
#include <string_view>
#include <unordered_map>

#include "models/topology/builder.h"
#include "models/topology/clos_shape.h"

namespace ct::topology::detail {

namespace {

bool parse_int(std::string_view text, int& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

Topology build_explicit(const FabricConfig& c) {
  if (c.links.empty()) bad_value("cluster.fabric.links", "0 links", "at least one link");
  TopologyBuilder b(c.nodes, c.nics_per_node, 1);
  const int nics = c.nodes * c.nics_per_node;
  std::unordered_map<std::string, VertexId> switches;
  int next_index = 0;

  auto resolve = [&](const std::string& name, const std::string& key) -> VertexId {
    const std::string_view v = name;
    if (v.starts_with("node")) {
      const auto dot = v.find(".nic");
      int n = -1;
      int r = -1;
      if (dot == std::string_view::npos || !parse_int(v.substr(4, dot - 4), n) ||
          !parse_int(v.substr(dot + 4), r)) {
        bad_value(key, "'" + name + "'", "a NIC name node<N>.nic<R> or a switch name");
      }
      if (n < 0 || n >= c.nodes || r < 0 || r >= c.nics_per_node) {
        bad_value(key, "'" + name + "'",
                  "a NIC with node < " + std::to_string(c.nodes) + " (cluster.nodes) and nic < " +
                      std::to_string(c.nics_per_node) + " (cluster.nics_per_node)");
      }
      return n * c.nics_per_node + r;
    }
    if (name.empty()) bad_value(key, "an empty name", "a vertex name");
    auto it = switches.find(name);
    if (it != switches.end()) return it->second;
    const VertexId id = b.add_switch(name, 0, 0, -1, next_index++, c.switch_latency);
    switches.emplace(name, id);
    return id;
  };

  b.reserve_links(c.links.size());
  for (size_t i = 0; i < c.links.size(); ++i) {
    const ExplicitLink& l = c.links[i];
    const std::string key = "cluster.fabric.links[" + std::to_string(i) + "]";
    const VertexId a = resolve(l.a, key + ".a");
    const VertexId z = resolve(l.b, key + ".b");
    if (a == z) bad_value(key, "'" + l.a + "' to itself", "two different vertices");
    if (a < nics && z < nics) {
      bad_value(key, "'" + l.a + "' to '" + l.b + "'", "a link with at least one switch end");
    }
    const sim::Bandwidth rate = l.rate.value_or(c.link_rate);
    if (!(rate.bps() > 0.0)) {
      bad_value(key + ".rate", std::to_string(rate.bps()) + " bps", "a positive rate");
    }
    const sim::Duration lat = l.latency.value_or(c.link_latency);
    if (lat < sim::Duration::zero()) {
      bad_value(key + ".latency", std::to_string(lat.count_ps()) + " ps", "a duration >= 0");
    }
    b.add_link(a, z, rate, lat);
  }
  return b.finish();
}

}  // namespace ct::topology::detail
