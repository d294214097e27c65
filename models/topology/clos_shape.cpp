// Configuration checks and Clos dimensions.
//
// Leaf split: down = round(radix * o / (1 + o)), up = radix - down (o = oversubscription);
// radix 128 gives 64/64 at 1:1 and 70/58 at 1.2:1.
// Leaves: rail-aligned, ceil(nodes / down) rail groups x nics_per_node; otherwise
// ceil(NICs / down).
// 2 tiers: spines = ceil(leaves * up / radix); every leaf reaches every spine when
//   leaves <= radix, the limit (max NICs = radix * down, rail-aligned:
//   floor(radix / R) * R * down).
// 3 tiers: pods of radix/2 leaves and `up` spines (one cable from each leaf to each spine of
//   its pod, so a spine has radix/2 down and radix/2 up ports); spine s of every pod joins
//   core group s of ceil(pods * radix/2 / radix) cores. Pods <= radix, so leaves <=
//   radix * radix/2 (max NICs = radix^2/2 * down, rail-aligned floor(radix^2/2 / R) * R * down).
#include "models/topology/clos_shape.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace ct::topology::detail {

void bad_value(const std::string& key, const std::string& got, const std::string& expected) {
  throw std::invalid_argument(key + ": got " + got + ", expected " + expected);
}

namespace {

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

}  // namespace

void check_common(const FabricConfig& c) {
  if (c.nodes < 1) bad_value("cluster.nodes", std::to_string(c.nodes), "an integer >= 1");
  if (c.nics_per_node < 1) {
    bad_value("cluster.nics_per_node", std::to_string(c.nics_per_node), "an integer >= 1 (one NIC per rail)");
  }
  if (!(c.link_rate.bps() > 0.0) || !std::isfinite(c.link_rate.bps())) {
    bad_value("cluster.nic", num(c.link_rate.gbps_value()) + " Gbps", "a positive rate");
  }
  if (c.link_latency < sim::Duration::zero()) {
    bad_value("cluster.fabric.link_latency", std::to_string(c.link_latency.count_ps()) + " ps",
              "a duration >= 0");
  }
  if (c.switch_latency < sim::Duration::zero()) {
    bad_value("cluster.fabric.switch_latency", std::to_string(c.switch_latency.count_ps()) + " ps",
              "a duration >= 0");
  }
  if (static_cast<long long>(c.nodes) * c.nics_per_node > 100'000'000LL) {
    bad_value("cluster.nodes", std::to_string(c.nodes), "at most 1e8 NICs in all (nodes x nics_per_node)");
  }
}

ClosShape clos_shape(const FabricConfig& c) {
  ClosShape s;
  const bool multi = c.topology == "multi_plane";
  s.rail_aligned = c.topology != "fat_tree";
  if (c.tiers != 2 && c.tiers != 3) {
    bad_value("cluster.fabric.tiers", std::to_string(c.tiers), "2 or 3");
  }
  if (c.switch_radix < 2 || c.switch_radix % 2 != 0) {
    bad_value("cluster.fabric.switch_radix", std::to_string(c.switch_radix), "an even integer >= 2");
  }
  if (!(c.oversubscription >= 1.0) || !std::isfinite(c.oversubscription)) {
    bad_value("cluster.fabric.oversubscription", num(c.oversubscription),
              "a ratio >= 1 (downlinks : uplinks, e.g. 1.2)");
  }
  if (multi ? c.planes < 1 : c.planes != 1) {
    bad_value("cluster.fabric.planes", std::to_string(c.planes),
              multi ? "an integer >= 1" : "1 (use topology multi_plane for several planes)");
  }
  s.tiers = c.tiers;
  s.radix = c.switch_radix;
  s.planes = c.planes;
  const double o = c.oversubscription;
  s.down = static_cast<int>(std::lround(c.switch_radix * o / (1.0 + o)));
  s.up = c.switch_radix - s.down;
  if (s.up < 1) {
    bad_value("cluster.fabric.oversubscription", num(o),
              "a ratio that leaves a radix-" + std::to_string(c.switch_radix) + " leaf at least one uplink");
  }

  const long long nics = static_cast<long long>(c.nodes) * c.nics_per_node;
  const long long rails = c.nics_per_node;
  const long long max_leaves =
      c.tiers == 2 ? c.switch_radix : static_cast<long long>(c.switch_radix) * (c.switch_radix / 2);
  s.max_nics = s.rail_aligned ? (max_leaves / rails) * rails * s.down : max_leaves * s.down;
  const long long leaves = s.rail_aligned ? ceil_div(c.nodes, s.down) * rails : ceil_div(nics, s.down);
  if (leaves > max_leaves) {
    std::ostringstream m;
    m << "cluster.fabric.tiers: " << c.tiers << " tiers of radix " << c.switch_radix << " switches at "
      << num(o) << ":1 connect at most " << s.max_nics << " NICs (" << max_leaves << " leaves x " << s.down
      << " NIC ports" << (s.rail_aligned ? ", whole rail groups of " + std::to_string(rails) + " leaves" : "")
      << "); the cluster asks for " << nics << " NICs (" << c.nodes << " nodes x " << c.nics_per_node << ")"
      << (c.tiers == 2 ? "; use 3 tiers or a larger switch_radix" : "; use a larger switch_radix");
    throw std::invalid_argument(m.str());
  }
  s.leaves = static_cast<int>(leaves);
  if (c.tiers == 2) {
    s.spines = static_cast<int>(ceil_div(leaves * s.up, c.switch_radix));
  } else {
    s.leaves_per_pod = c.switch_radix / 2;
    s.pods = static_cast<int>(ceil_div(leaves, s.leaves_per_pod));
    s.spines = s.up;
    s.spine_up = c.switch_radix - s.leaves_per_pod;
    s.cores_per_group =
        static_cast<int>(ceil_div(static_cast<long long>(s.pods) * s.spine_up, c.switch_radix));
  }
  return s;
}

}  // namespace ct::topology::detail
